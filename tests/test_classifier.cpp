// Text classification: word2vec vector files, labeled TSV files, text normalization, the
// average-of-embeddings and (bi)RNN classifiers, the classification task, its metrics, and
// (Regression) SST-2 end to end through the CLI.
#include <gtest/gtest.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/io.h"
#include "datasets/labeled_text.h"
#include "datasets/special_ids.h"
#include "datasets/text_normalization.h"
#include "datasets/word_vectors.h"
#include "infer/classification_metrics.h"
#include "models/classifier/average_embedding.h"
#include "models/classifier/rnn_classifier.h"
#include "tests/test_util.h"
#include "train/tasks/architectures.h"
#include "train/tasks/classification_task.h"
#include "train/tasks/registry.h"
#include "train/trainer.h"

namespace fs = std::filesystem;
using namespace nlpzoo;
using test::max_diff;
using test::user_error_of;

namespace {

// A fixture folder per test, removed afterwards.
class TempDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::fresh_temp_dir(::testing::UnitTest::GetInstance()->current_test_info()->name());
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

// ---------------------------------------------------------------------------------------------
// Word vectors

WordVectors random_vectors() {
  torch::manual_seed(11);
  return WordVectors({"the", "caf\xC3\xA9", "good", "\xE2\x96\x81x", "</s>"}, torch::randn({5, 7}) * 100);
}

class WordVectorsFiles : public TempDir {};

TEST_F(WordVectorsFiles, TextAndBinaryRoundTripExactly) {
  const auto original = random_vectors();
  for (bool binary : {false, true}) {
    const auto file = path(binary ? "v.bin" : "v.txt");
    write_word_vectors(file, original, binary);
    EXPECT_EQ(read_file(file).rfind("5 7\n", 0), 0u) << "header";
    const auto back = read_word_vectors(file);
    EXPECT_EQ(back.words(), original.words()) << "binary=" << binary;
    EXPECT_EQ(max_diff(back.vectors(), original.vectors()), 0.f) << "binary=" << binary;
    EXPECT_EQ(back.find("good"), 2);
    EXPECT_EQ(back.find("Good"), -1);
    const auto header = read_word_vectors_header(file);
    EXPECT_EQ(header.count, 5);
    EXPECT_EQ(header.dim, 7);
  }
  // Binary: header, then per word "word " + 7 floats + '\n'.
  int64_t expected = 4;  // "5 7\n"
  for (const auto& w : original.words()) expected += w.size() + 1 + 7 * 4 + 1;
  EXPECT_EQ(static_cast<int64_t>(fs::file_size(path("v.bin"))), expected);
}

TEST_F(WordVectorsFiles, ReadsAHandWrittenTextFile) {
  // word2vec.c's trailing space, a CRLF line and an exponent.
  atomic_write_text(path("v.txt"), "3 2\nthe 0.5 -1 \ngood 1e-1 2\r\nbad -3 +4.25\n");
  const auto v = read_word_vectors(path("v.txt"));
  ASSERT_EQ(v.size(), 3);
  EXPECT_EQ(v.dim(), 2);
  EXPECT_EQ(v.words(), (std::vector<std::string>{"the", "good", "bad"}));
  EXPECT_EQ(max_diff(v.vectors(), torch::tensor({0.5f, -1.f, 0.1f, 2.f, -3.f, 4.25f}).view({3, 2})), 0.f);
}

TEST_F(WordVectorsFiles, MalformedFilesNameTheLine) {
  const auto f = path("v.txt");
  const auto error_for = [&](const std::string& text) {
    atomic_write_text(f, text);
    return user_error_of([&] { read_word_vectors(f); });
  };
  auto e = error_for("2 3\na 1 2 3\nb 1 2\n");
  EXPECT_NE(e.find(f + ":3: expected a word and 3 values"), std::string::npos) << e;
  EXPECT_NE(e.find("found 2 values"), std::string::npos) << e;
  e = error_for("2 2\na 1 x1\nb 1 2\n");
  EXPECT_NE(e.find(f + ":2: value 2 ('x1') is not a number"), std::string::npos) << e;
  e = error_for("3 2\na 1 2\nb 3 4\n");
  EXPECT_NE(e.find(f + ": the header (line 1) counts 3 vectors but the file holds 2"), std::string::npos) << e;
  e = error_for("1 2\na 1 2\nb 3 4\n");
  EXPECT_NE(e.find(f + ":3: more vectors than the header's count (1)"), std::string::npos) << e;
  e = error_for("hello world\n");
  EXPECT_NE(e.find(f + ":1: expected a header 'N D'"), std::string::npos) << e;
  e = error_for("");
  EXPECT_NE(e.find(f + ":1: empty file"), std::string::npos) << e;
  e = user_error_of([&] { read_word_vectors(path("missing.vec")); });
  EXPECT_NE(e.find(path("missing.vec")), std::string::npos) << e;

  // A header that claims more than the file holds is reported, not allocated ("vector::reserve").
  e = error_for("9223372036854775807 2\na 1 2\n");
  EXPECT_NE(e.find(f + ": the header (line 1) counts 9223372036854775807 vectors but the file holds 1"),
            std::string::npos) << e;
  e = error_for("1 9223372036854775807\na 1 2\n");
  EXPECT_NE(e.find(f + ":1: the header's dimension 9223372036854775807 is more than"), std::string::npos) << e;
  e = error_for("2 2\n");
  EXPECT_NE(e.find(f + ": the header (line 1) counts 2 vectors but the file holds 0"), std::string::npos) << e;

  // A binary file cut inside its last vector, and one cut before its last word.
  const auto b = path("v.bin");
  write_word_vectors(b, random_vectors(), /*binary=*/true);
  const auto bytes = read_file(b);
  atomic_write_text(b, bytes.substr(0, bytes.size() - 5));
  e = user_error_of([&] { read_word_vectors(b); });
  EXPECT_NE(e.find(b + ": word 5 of 5 ('</s>'): the file ends inside its vector"), std::string::npos) << e;
  atomic_write_text(b, bytes.substr(0, bytes.size() - (4 + 1 + 7 * 4 + 1)));
  e = user_error_of([&] { read_word_vectors(b); });
  EXPECT_NE(e.find(b + ": word 5 of 5: the file ends here"), std::string::npos) << e;

  // A word the format cannot hold is refused before anything is written.
  e = user_error_of([&] {
    write_word_vectors(path("w.txt"), WordVectors({"two words"}, torch::zeros({1, 2})), false);
  });
  EXPECT_NE(e.find("word 1 ('two words')"), std::string::npos) << e;
  EXPECT_FALSE(fs::exists(path("w.txt")));
}

// A word listed twice keeps its first vector, as gensim's loader does, so that queries never
// list it twice; the last line may lack its newline.
TEST_F(WordVectorsFiles, RepeatedWordsKeepTheFirstVector) {
  atomic_write_text(path("d.txt"), "4 2\nparis 1 0\nrome 0 1\nparis 5 5\nberlin 1 1");
  const auto text = read_word_vectors(path("d.txt"));
  EXPECT_EQ(text.words(), (std::vector<std::string>{"paris", "rome", "berlin"}));
  EXPECT_EQ(max_diff(text.vectors(), torch::tensor({1.f, 0.f, 0.f, 1.f, 1.f, 1.f}).view({3, 2})), 0.f);
  // The binary format: the same words and rows.
  const WordVectors with_repeat({"a", "b", "a"}, torch::tensor({1.f, 2.f, 3.f, 4.f, 5.f, 6.f}).view({3, 2}));
  write_word_vectors(path("d.bin"), with_repeat, /*binary=*/true);
  const auto binary = read_word_vectors(path("d.bin"));
  EXPECT_EQ(binary.words(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(max_diff(binary.vectors(), torch::tensor({1.f, 2.f, 3.f, 4.f}).view({2, 2})), 0.f);
}

TEST(WordVectors, CopyIntoEmbeddingRowsByPiece) {
  const WordVectors v({"good", "bad", "the", "\xE2\x96\x81x"},
                      torch::tensor({1.f, 1.f, 2.f, 2.f, 3.f, 3.f, 4.f, 4.f}).view({4, 2}));
  auto weight = torch::full({6, 2}, -7.f);
  // "" (a special id) is skipped; "▁good" is found stripped, "Bad" lowercased, "▁x" as is;
  // "▁zebra" is not in the file.
  const std::vector<std::string> names = {"", "\xE2\x96\x81good", "Bad", "\xE2\x96\x81zebra", "\xE2\x96\x81x"};
  EXPECT_EQ(copy_vectors_into_rows(v, names, weight), 3);
  const auto expected = torch::tensor({-7.f, -7.f, 1.f, 1.f, 2.f, 2.f, -7.f, -7.f, 4.f, 4.f, -7.f, -7.f}).view({6, 2});
  EXPECT_EQ(max_diff(weight, expected), 0.f);
  EXPECT_THROW(copy_vectors_into_rows(v, names, torch::zeros({6, 3})), std::invalid_argument);
}

// ---------------------------------------------------------------------------------------------
// Labeled text and normalization

class LabeledTextFiles : public TempDir {};

TEST_F(LabeledTextFiles, ReadsWithAndWithoutAHeader) {
  atomic_write_text(path("a.tsv"), "sentence\tlabel\nhide new secretions \t0\r\nloves its characters\t1\n");
  const auto a = read_labeled_text(path("a.tsv"));
  EXPECT_EQ(a.sentences, (std::vector<std::string>{"hide new secretions ", "loves its characters"}));
  EXPECT_EQ(a.labels, (std::vector<std::string>{"0", "1"}));
  EXPECT_EQ(a.lines, (std::vector<int64_t>{2, 3}));
  atomic_write_text(path("b.tsv"), "good\tpos\nbad\tneg\n");
  const auto b = read_labeled_text(path("b.tsv"));
  EXPECT_EQ(b.sentences, (std::vector<std::string>{"good", "bad"}));
  EXPECT_EQ(b.lines, (std::vector<int64_t>{1, 2}));
  // tsv_header = true skips line 1 whatever it says; false reads it as an example.
  TsvLayout layout;
  layout.header = TsvHeader::kYes;
  EXPECT_EQ(read_labeled_text(path("b.tsv"), layout).sentences, (std::vector<std::string>{"bad"}));
  layout.header = TsvHeader::kNo;
  EXPECT_EQ(read_labeled_text(path("a.tsv"), layout).labels, (std::vector<std::string>{"label", "0", "1"}));
}

// A third column used to be taken silently as the label, so a header "sentence<TAB>label<TAB>x"
// became a training example: every line must have the configured layout.
TEST_F(LabeledTextFiles, ExtraColumnsAreAnErrorUnlessTheLayoutSaysSo) {
  atomic_write_text(path("c.tsv"), "sentence\tlabel\tnote\ngood film\t1\tx\nbad film\t0\ty\n");
  const auto e = user_error_of([&] { read_labeled_text(path("c.tsv")); });
  EXPECT_NE(e.find(path("c.tsv") + ":1: 3 tab-separated field(s), but the layout has 2"), std::string::npos) << e;
  EXPECT_NE(e.find("tsv_columns"), std::string::npos) << e;
  TsvLayout three;
  three.num_columns = 3;
  three.header = TsvHeader::kYes;
  const auto c = read_labeled_text(path("c.tsv"), three);
  EXPECT_EQ(c.sentences, (std::vector<std::string>{"good film", "bad film"}));
  EXPECT_EQ(c.labels, (std::vector<std::string>{"1", "0"}));
}

// " 1" used to become a third class beside "0" and "1".
TEST_F(LabeledTextFiles, LabelsAreTrimmed) {
  atomic_write_text(path("t.tsv"), "good\t1\nbad\t 0\nfine\t1 \n");
  const auto t = read_labeled_text(path("t.tsv"));
  EXPECT_EQ(t.labels, (std::vector<std::string>{"1", "0", "1"}));
  EXPECT_EQ(sorted_label_set(t.labels).size(), 2u);
}

// GLUE's CoLA as it ships: no header, the label in field 1, the sentence in field 3, and no
// newline after the last line (../shared/data/glue/README.md).
TEST(LabeledText, ReadsGlueColaWithItsLayout) {
  const std::string dev = test::shared_data("glue/CoLA/dev.tsv");
  NLPZOO_REQUIRE_SHARED_FILES(dev);
  Config config = Config::resolve(tsv_layout_schema(), "",
                                  {"--tsv_columns", "4", "--text_column", "3", "--label_column", "1", "--tsv_header", "false"});
  const auto cola = read_labeled_text(dev, tsv_layout(config));
  ASSERT_EQ(cola.sentences.size(), 1043u);
  EXPECT_EQ(cola.sentences.front(), "The sailors rode the breeze clear of the rocks.");
  EXPECT_EQ(std::count(cola.labels.begin(), cola.labels.end(), "1"), 721);
  EXPECT_EQ(std::count(cola.labels.begin(), cola.labels.end(), "0"), 322);
  // The default layout (2 fields) refuses the file on its first line instead of misreading it.
  EXPECT_NE(user_error_of([&] { read_labeled_text(dev); }).find(dev + ":1: 4 tab-separated"), std::string::npos);
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"text_column", "4"}, {"label_column", "3"}, {"tsv_columns", "0"}}) {
    Config bad = config;
    bad.set(key, value);
    if (key == "label_column") bad.set("text_column", "3");
    EXPECT_NE(user_error_of([&] { tsv_layout(bad); }).find("config key '" + key + "'"), std::string::npos) << key;
  }
}

TEST_F(LabeledTextFiles, MalformedLinesNameTheLine) {
  const auto f = path("x.tsv");
  const auto error_for = [&](const std::string& text) {
    atomic_write_text(f, text);
    return user_error_of([&] { read_labeled_text(f); });
  };
  EXPECT_NE(error_for("sentence\tlabel\na\t1\nno tab here\n").find(f + ":3: 1 tab-separated field(s)"), std::string::npos);
  EXPECT_NE(error_for("a\t1\n  \t0\n").find(f + ":2: empty sentence"), std::string::npos);
  EXPECT_NE(error_for("a\t\n").find(f + ":1: empty label"), std::string::npos);
  EXPECT_NE(error_for("sentence\tlabel\n").find(f + ": no labeled sentence"), std::string::npos);
  EXPECT_NE(user_error_of([&] { read_labeled_text(path("none.tsv")); }).find(path("none.tsv")), std::string::npos);
}

TEST(LabeledText, LabelListsAreCapped) {
  EXPECT_EQ(label_list({"0", "1"}), "0, 1");
  std::vector<std::string> many;
  for (int i = 0; i < 50; ++i) many.push_back(std::to_string(i));
  EXPECT_EQ(label_list(many, 3), "0, 1, 2, ... (50 in all)");
}

TEST(LabeledText, LabelsSortNumericallyWhenAllAreIntegers) {
  EXPECT_EQ(sorted_label_set({"10", "2", "2", "-1"}), (std::vector<std::string>{"-1", "2", "10"}));
  EXPECT_EQ(sorted_label_set({"pos", "neg", "neutral", "neg"}), (std::vector<std::string>{"neg", "neutral", "pos"}));
  EXPECT_EQ(sorted_label_set({"2", "10", "b"}), (std::vector<std::string>{"10", "2", "b"}));
}

TEST(LabeledText, NormalizationMakesRawTextLookLikeSst2) {
  const TextNormalization sst;
  EXPECT_EQ(normalize_text("Completely lacking in good taste, good service, and good ambiance.", sst),
            "completely lacking in good taste , good service , and good ambiance .");
  EXPECT_EQ(normalize_text("It doesn't work... I'm SAD!! (really)", sst), "it does n't work ... i 'm sad !! ( really )");
  EXPECT_EQ(normalize_text("3.5 stars, 1,000 fans' \"love\"", sst), "3.5 stars , 1,000 fans' \" love \"");
  // SST-2's own text is a fixed point (its trailing space aside).
  const std::string line = "it 's a charming and often affecting journey . ";
  EXPECT_EQ(normalize_text(line, sst), "it 's a charming and often affecting journey .");
  EXPECT_EQ(normalize_text("does n't , ca n't", sst), "does n't , ca n't");
  EXPECT_EQ(normalize_text("Don't  stop.", {/*lowercase=*/false, /*split_punctuation=*/false}), "Don't stop.");
}

// corpus_words: SST-2's tokenization undone to the form of `nlpzoo data english`'s lines.
TEST(LabeledText, CorpusWordsRejoinCliticsAndDropPunctuation) {
  TextNormalization corpus;
  corpus.corpus_words = true;
  EXPECT_EQ(normalize_text("it 's a charming , often affecting journey . ", corpus),
            "it's a charming often affecting journey");
  EXPECT_EQ(normalize_text("does n't , ca n't -- wo n't", corpus), "doesn't can't won't");
  EXPECT_EQ(normalize_text("It doesn't work... I'm SAD!! (really) \"Café\"", corpus),
            "it doesn't work i'm sad really cafe");
  EXPECT_EQ(normalize_text("kings' 's", corpus), "kings s");
}

// ---------------------------------------------------------------------------------------------
// Models

ClassifierOptions tiny_options() {
  return ClassifierOptions(/*vocab_size=*/20, /*num_classes=*/3).embed_dim(6).hidden_size(5).dropout(0.0);
}

std::shared_ptr<TextClassifierImpl> make_model(const std::string& arch, const ClassifierOptions& o) {
  if (arch == "avg_emb") return AverageEmbeddingClassifier(o).ptr();
  return RnnClassifier(o).ptr();
}

struct Variant {
  std::string arch;
  CellType cell;
  bool bidirectional;
  int64_t num_layers;
  Pooling pooling;
};

class ClassifierPadding : public ::testing::TestWithParam<Variant> {};

// The same sentence alone and padded in a batch with a longer one: the same sentence vector,
// logits and loss.
TEST_P(ClassifierPadding, PaddingChangesNeitherPoolingNorLoss) {
  const auto v = GetParam();
  torch::manual_seed(5);
  auto model = make_model(v.arch, tiny_options().cell(v.cell).bidirectional(v.bidirectional)
                                      .num_layers(v.num_layers).pooling(v.pooling));
  model->eval();
  torch::NoGradGuard no_grad;
  auto alone = torch::tensor({7, 4, 9}, torch::kInt64).view({1, 3});
  auto batch = torch::tensor(std::vector<int64_t>{5, 6, 7, 8, 9, 7, 4, 9, kPadId, kPadId}).view({2, 5});
  EXPECT_LT(max_diff(model->encode(alone)[0], model->encode(batch)[1]), 1e-6);
  auto labels = torch::tensor({2, 1}, torch::kInt64);
  auto loss_alone = torch::nn::functional::cross_entropy(model->forward(alone), labels.slice(0, 1, 2));
  auto losses = torch::nn::functional::cross_entropy(
      model->forward(batch), labels, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kNone));
  EXPECT_LT(std::abs(loss_alone.item<float>() - losses[1].item<float>()), 1e-6);
  // The longer sentence is a different one: the comparison can fail.
  EXPECT_GT(max_diff(model->encode(batch)[0], model->encode(batch)[1]), 1e-4);
}

INSTANTIATE_TEST_SUITE_P(
    ClassifierVariants, ClassifierPadding,
    ::testing::Values(Variant{"avg_emb", CellType::kLstm, true, 1, Pooling::kLast},
                      Variant{"rnn", CellType::kLstm, true, 1, Pooling::kLast},
                      Variant{"rnn", CellType::kLstm, true, 2, Pooling::kMax},
                      Variant{"rnn", CellType::kGru, true, 1, Pooling::kMean},
                      Variant{"rnn", CellType::kGru, false, 2, Pooling::kLast},
                      Variant{"rnn", CellType::kRnn, false, 1, Pooling::kMax}),
    [](const auto& info) {
      const auto& v = info.param;
      return v.arch == "avg_emb" ? std::string("avg_emb")
                                 : to_string(v.cell) + (v.bidirectional ? "_bi" : "_uni") +
                                       std::to_string(v.num_layers) + "_" + to_string(v.pooling);
    });

TEST(Classifier, BackwardHalfSeesFutureTokensForwardHalfDoesNot) {
  torch::manual_seed(6);
  torch::NoGradGuard no_grad;
  auto a = torch::tensor({4, 5, 6, 7}, torch::kInt64).view({1, 4});
  auto b = torch::tensor({4, 5, 6, 12}, torch::kInt64).view({1, 4});  // only the last token differs
  for (int64_t layers : {1, 2}) {
    RnnClassifier bi(tiny_options().cell(CellType::kGru).bidirectional(true).num_layers(layers));
    bi->eval();
    const int64_t H = 5;
    auto [sa, fa] = bi->states(a);  // [1, 4, 2H]
    auto [sb, fb] = bi->states(b);
    // (Above the first layer the forward half reads the layer below's backward states too.)
    if (layers == 1) {
      EXPECT_LT(max_diff(sa[0][0].slice(0, 0, H), sb[0][0].slice(0, 0, H)), 1e-7) << "forward half";
    }
    EXPECT_GT(max_diff(sa[0][0].slice(0, H), sb[0][0].slice(0, H)), 1e-4) << "backward half, layers=" << layers;
    // `last` pooling is LibTorch's h_n of the top layer: forward at the last token, backward at the first.
    auto expected = torch::cat({sa[0][3].slice(0, 0, H), sa[0][0].slice(0, H)});
    EXPECT_LT(max_diff(bi->encode(a)[0], expected), 1e-6) << "layers=" << layers;

    RnnClassifier uni(tiny_options().cell(CellType::kLstm).bidirectional(false).num_layers(layers));
    uni->eval();
    auto ua = std::get<0>(uni->states(a)), ub = std::get<0>(uni->states(b));
    EXPECT_LT(max_diff(ua.slice(1, 0, 3), ub.slice(1, 0, 3)), 1e-7) << "layers=" << layers;
    EXPECT_GT(max_diff(ua[0][3], ub[0][3]), 1e-4) << "layers=" << layers;
  }
}

TEST(Classifier, AverageIsTheMeanOfTheRealTokensEmbeddings) {
  torch::manual_seed(7);
  AverageEmbeddingClassifier model(tiny_options());
  torch::NoGradGuard no_grad;
  auto tokens = torch::tensor(std::vector<int64_t>{3, 8, kPadId, kPadId}).view({1, 4});
  auto E = model->embedding->weight;
  EXPECT_LT(max_diff(model->encode(tokens)[0], (E[3] + E[8]) / 2), 1e-6);
  EXPECT_LT(max_diff(model->forward(tokens)[0], model->output->forward((E[3] + E[8]) / 2)), 1e-6);
}

TEST(Classifier, FrozenEmbeddingGetsNoGradient) {
  for (const std::string arch : {"avg_emb", "rnn"}) {
    for (bool freeze : {true, false}) {
      torch::manual_seed(8);
      auto model = make_model(arch, tiny_options().freeze_embeddings(freeze));
      auto tokens = torch::tensor(std::vector<int64_t>{4, 5, 6, 7, 8, kPadId}).view({2, 3});
      torch::nn::functional::cross_entropy(model->forward(tokens), torch::tensor({0, 2}, torch::kInt64)).backward();
      const auto& w = model->embedding->weight;
      EXPECT_EQ(w.requires_grad(), !freeze) << arch;
      EXPECT_EQ(w.grad().defined() && w.grad().abs().sum().item<float>() > 0, !freeze) << arch;
      EXPECT_GT(model->output->weight.grad().abs().sum().item<float>(), 0.f) << arch;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The task

const char* kTinyTrain =
    "sentence\tlabel\n"
    "A great and wonderful film.\t1\n"
    "i loved this charming movie\t1\n"
    "truly beautiful and moving\t1\n"
    "funny, warm and smart\t1\n"
    "a dull and boring film\t0\n"
    "I hated this awful movie!\t0\n"
    "truly ugly and tedious\t0\n"
    "stupid, cold and lazy\t0\n";

class ClassifierTask : public TempDir {
 protected:
  void SetUp() override {
    TempDir::SetUp();
    fs::create_directories(dir_ / "data");
    atomic_write_text(path("data/train.tsv"), kTinyTrain);
    atomic_write_text(path("data/dev.tsv"), kTinyTrain);
  }
  // A set-up task on data/ with `overrides` ("--key", "value", ...).
  std::unique_ptr<ClassificationTask> make(std::vector<std::string> overrides, const std::string& run = "run",
                                           std::set<Split> splits = {Split::kTrain, Split::kValid}) {
    std::vector<std::string> all = {"--task", "classification", "--vocab_size", "60", "--spm_model_type", "word",
                                    "--embed_dim", "8", "--hidden_size", "8", "--dropout", "0"};
    all.insert(all.end(), overrides.begin(), overrides.end());
    config_ = Config::resolve(task_schema("classification"), "", all);
    auto task = std::make_unique<ClassificationTask>();
    task->setup(config_, {path("data"), path(run), splits, /*resume=*/false});
    return task;
  }
  Config config_;
};

TEST_F(ClassifierTask, OverfitsAHandfulOfSentences) {
  const auto train = read_labeled_text(path("data/train.tsv"));
  for (const std::string arch : {"avg_emb", "rnn"}) {
    torch::manual_seed(9);
    auto task = make({"--arch", arch}, "run_" + arch);
    EXPECT_EQ(task->labels(), (std::vector<std::string>{"0", "1"}));
    EXPECT_EQ(read_file(path("run_" + arch + "/labels.txt")), "0\n1\n");
    EXPECT_TRUE(fs::exists(path("run_" + arch + "/spm.model")));
    ASSERT_EQ(task->num_batches(Split::kTrain, 0), 1);
    auto batch = task->make_batch(Split::kTrain, 0, 0);
    EXPECT_EQ(batch.num_tokens, 8);
    EXPECT_EQ(batch.tensors.at("labels").sum().item<int64_t>(), 4);
    torch::optim::Adam adam(task->model()->parameters(), torch::optim::AdamOptions(0.05));
    task->model()->train();
    double first = 0, last = 0;
    for (int step = 0; step < 60; ++step) {
      adam.zero_grad();
      auto out = task->loss(task->make_batch(Split::kTrain, step, 0));
      (out.loss_sum / out.num_tokens).backward();
      adam.step();
      (step == 0 ? first : last) = out.loss_sum.item<double>() / out.num_tokens;
    }
    EXPECT_NEAR(first, std::log(2.0), 0.3) << arch;  // near chance at the start
    EXPECT_LT(last, 0.05) << arch;
    const auto predictions = task->predict(train.sentences, torch::kCPU, /*batch_size=*/3);
    ASSERT_EQ(predictions.size(), 8u);
    for (size_t i = 0; i < predictions.size(); ++i) {
      EXPECT_EQ(task->labels()[predictions[i].label_id], train.labels[i]) << arch << ": " << train.sentences[i];
      EXPECT_GT(predictions[i].probabilities[predictions[i].label_id], 0.9f) << arch;
      EXPECT_NEAR(predictions[i].probabilities[0] + predictions[i].probabilities[1], 1.0f, 1e-5);
    }
  }
}

// A classifier run speaks in sentences: loss, accuracy on validation (that of predict() on the
// dev split), sentences/s; no perplexity, no tokens/s.
TEST_F(ClassifierTask, TrainerReportsAccuracyAndSentences) {
  torch::manual_seed(4);
  auto task = make({"--arch", "avg_emb", "--optimizer", "adam", "--lr", "0.05", "--max_steps", "6",
                    "--log_interval", "3", "--valid_interval", "3", "--device", "cpu"});
  ASSERT_EQ(Trainer(*task, config_, "classification", path("run")).train(false), 0);
  const auto dev = read_labeled_text(path("data/dev.tsv"));
  const auto predictions = task->predict(dev.sentences, torch::kCPU, /*batch_size=*/4);
  double correct = 0;
  for (size_t i = 0; i < predictions.size(); ++i) correct += task->labels()[predictions[i].label_id] == dev.labels[i];
  std::vector<double> accuracies;
  for (const auto& line : read_lines(path("run/metrics.jsonl"))) {
    const auto m = nlohmann::json::parse(line);
    EXPECT_FALSE(m.contains("ppl") || m.contains("valid_ppl") || m.contains("tokens_per_s")) << line;
    if (m.contains("valid_loss")) accuracies.push_back(m["valid_accuracy"].get<double>());
    else EXPECT_GT(m["sentences_per_s"].get<double>(), 0) << line;
  }
  ASSERT_EQ(accuracies.size(), 2u);
  EXPECT_NEAR(accuracies.back(), correct / dev.sentences.size(), 1e-12);
}

TEST_F(ClassifierTask, UnknownDevLabelNamesTheLine) {
  atomic_write_text(path("data/dev.tsv"), "sentence\tlabel\na fine film\t1\nan odd one\t2\n");
  const auto e = user_error_of([&] { make({}); });
  EXPECT_NE(e.find(path("data/dev.tsv") + ":3: unknown label '2' (the train split's labels: 0, 1)"), std::string::npos)
      << e;
}

TEST_F(ClassifierTask, LabelsSortNumericallyAndOneLabelIsAnError) {
  atomic_write_text(path("data/train.tsv"), "good\t10\nbad\t2\nfine\t10\n");
  atomic_write_text(path("data/dev.tsv"), "good\t10\n");
  EXPECT_EQ(make({})->labels(), (std::vector<std::string>{"2", "10"}));
  atomic_write_text(path("data/train.tsv"), "good\t1\nbad\t1\n");
  EXPECT_NE(user_error_of([&] { make({}, "run2"); }).find("at least two labels"), std::string::npos);
}

TEST_F(ClassifierTask, PretrainedVectorsInitialiseTheRowsOfTheirPieces) {
  atomic_write_text(path("vectors.txt"),
                    "3 8\n"
                    "loved 1 2 3 4 5 6 7 8\n"
                    "boring -1 -2 -3 -4 -5 -6 -7 -8\n"
                    "zebra 9 9 9 9 9 9 9 9\n");
  ::testing::internal::CaptureStdout();
  auto task = make({"--arch", "avg_emb", "--pretrained_vectors", path("vectors.txt"), "--freeze_embeddings", "true"});
  const std::string out = ::testing::internal::GetCapturedStdout();
  const auto V = task->tokenizer().vocab_size();
  EXPECT_NE(out.find("initialised 2 of " + std::to_string(V) + " embedding rows from " + path("vectors.txt")),
            std::string::npos) << out;
  const auto& E = task->classifier().embedding->weight;
  const auto loved = task->tokenizer().piece_to_id("\xE2\x96\x81loved");
  ASSERT_NE(loved, kUnkId);
  EXPECT_EQ(max_diff(E[loved], torch::arange(1, 9, torch::kFloat32)), 0.f);
  EXPECT_EQ(max_diff(E[task->tokenizer().piece_to_id("\xE2\x96\x81" "boring")], -torch::arange(1, 9, torch::kFloat32)), 0.f);
  EXPECT_EQ(E[kPadId].abs().sum().item<float>(), 0.f);
  EXPECT_FALSE(E.requires_grad());

  const auto e = user_error_of([&] { make({"--pretrained_vectors", path("vectors.txt"), "--embed_dim", "4"}, "run2"); });
  EXPECT_NE(e.find("config key 'embed_dim'"), std::string::npos) << e;
  EXPECT_NE(e.find("dimension 8"), std::string::npos) << e;
  EXPECT_FALSE(fs::exists(path("run2/spm.model"))) << "the bad value is reported before any slow work";
}

TEST_F(ClassifierTask, CheckpointArtifactsRebuildTheTokenizerAndLabels) {
  auto task = make({"--arch", "rnn"});
  const auto blobs = task->artifacts();
  EXPECT_EQ(blobs.at("labels.txt"), "0\n1\n");
  ClassificationTask loaded;
  loaded.restore_artifacts(blobs);
  Config config = config_;
  loaded.setup(config, {path("data"), "", {Split::kValid}, /*resume=*/true});
  EXPECT_EQ(loaded.labels(), task->labels());
  EXPECT_EQ(loaded.encode("I loved this, truly!"), task->encode("I loved this, truly!"));
  EXPECT_EQ(loaded.gold(Split::kValid), (std::vector<int64_t>{1, 1, 1, 1, 0, 0, 0, 0}));
}

// ---------------------------------------------------------------------------------------------
// Metrics

TEST(ClassificationMetrics, HandComputedConfusionMatrix) {
  // confusion (rows gold, columns predicted): neg [3 1 0], neu [1 1 1], pos [1 0 2]
  const std::vector<int64_t> gold = {0, 0, 0, 0, 1, 1, 1, 2, 2, 2};
  const std::vector<int64_t> pred = {0, 0, 0, 1, 0, 1, 2, 0, 2, 2};
  const auto s = classification_scores(gold, pred, {"neg", "neu", "pos"});
  EXPECT_EQ(s.confusion, (std::vector<std::vector<int64_t>>{{3, 1, 0}, {1, 1, 1}, {1, 0, 2}}));
  EXPECT_DOUBLE_EQ(s.accuracy, 0.6);
  // neg: P = 3/5, R = 3/4, F1 = 2/3; neu: P = 1/2, R = 1/3, F1 = 2/5; pos: P = R = F1 = 2/3.
  EXPECT_NEAR(s.precision[0], 0.6, 1e-12);
  EXPECT_NEAR(s.recall[0], 0.75, 1e-12);
  EXPECT_NEAR(s.f1[0], 2.0 / 3, 1e-12);
  EXPECT_NEAR(s.precision[1], 0.5, 1e-12);
  EXPECT_NEAR(s.recall[1], 1.0 / 3, 1e-12);
  EXPECT_NEAR(s.f1[1], 0.4, 1e-12);
  EXPECT_NEAR(s.f1[2], 2.0 / 3, 1e-12);
  EXPECT_EQ(s.support, (std::vector<int64_t>{4, 3, 3}));
  EXPECT_NEAR(s.macro_f1, (2.0 / 3 + 0.4 + 2.0 / 3) / 3, 1e-12);
  const auto report = s.report();
  EXPECT_NE(report.find("accuracy 0.6000 (6 of 10) | macro-F1 0.5778"), std::string::npos) << report;
  const std::string neu_row = "neu" + std::string(8, ' ') + "0.5000    0.3333    0.4000" + std::string(9, ' ') + "3\n";
  EXPECT_NE(report.find(neu_row), std::string::npos) << report;
  const std::string pos_confusion = "pos" + std::string(9, ' ') + "1     0     2\n";
  EXPECT_NE(report.find(pos_confusion), std::string::npos) << report;
}

TEST(ClassificationMetrics, NeverPredictedClassScoresZeroAndBadInputThrows) {
  const auto s = classification_scores({0, 1, 1}, {1, 1, 1}, {"a", "b"});
  EXPECT_EQ(s.precision[0], 0.0);
  EXPECT_EQ(s.f1[0], 0.0);
  EXPECT_NEAR(s.precision[1], 2.0 / 3, 1e-12);
  EXPECT_NEAR(s.f1[1], 0.8, 1e-12);
  EXPECT_NEAR(s.macro_f1, 0.4, 1e-12);
  EXPECT_THROW(classification_scores({0, 1}, {0}, {"a", "b"}), std::invalid_argument);
  EXPECT_THROW(classification_scores({0, 2}, {0, 1}, {"a", "b"}), std::invalid_argument);
  EXPECT_THROW(classification_scores({}, {}, {"a", "b"}), std::invalid_argument);
}

// GLUE's F1 for MRPC and QQP is the positive class's (label "1"), not the macro average.
TEST(ClassificationMetrics, PositiveClassF1IsLabelOnesAsGlueScoresIt) {
  // Labels in the train split's order, "1" first. Gold 1 1 1 0 0 0, predicted 1 1 0 1 0 0:
  // for "1" TP 2, FP 1, FN 1, F1 = 2/3; for "0" TP 2, FP 1, FN 1, F1 = 2/3 too; so skew it:
  // predicted 1 1 1 1 0 0 gives "1": P 3/4, R 1, F1 6/7 and "0": P 1, R 2/3, F1 4/5.
  const auto s = classification_scores({0, 0, 0, 1, 1, 1}, {0, 0, 0, 0, 1, 1}, {"1", "0"});
  EXPECT_EQ(s.positive, 0);
  EXPECT_NEAR(s.positive_f1(), 6.0 / 7, 1e-12);
  EXPECT_NEAR(s.macro_f1, (6.0 / 7 + 0.8) / 2, 1e-12);
  EXPECT_NE(s.report().find("F1 of label 1 0.8571"), std::string::npos) << s.report();
  EXPECT_EQ(positive_class({"0", "1"}), 1);
  EXPECT_EQ(positive_class({"neg", "pos"}), -1);      // no label "1": no positive class
  EXPECT_EQ(positive_class({"0", "1", "2"}), -1);     // and none for three classes
  EXPECT_EQ(classification_scores({0, 1}, {0, 1}, {"neg", "pos"}).positive_f1(), 0.0);
}

}  // namespace

namespace {

// SST-2 (GLUE) end to end through the CLI: a short run of the baseline config, then evaluate
// and classify. A few hundred updates of the average-of-embeddings model already beat the
// majority class (50.9% of dev) by far.
TEST(RegressionClassifier, Sst2AverageEmbeddingTrainEvaluateClassify) {
  const std::string data = test::shared_data("sst2");
  const auto root = test::fresh_temp_dir("sst2");
  const auto run = test::shell_quote((root / "run").string());
  auto r = test::run_cli("train --config " + test::shell_quote(std::string(NLPZOO_SOURCE_DIR) + "/configs/sst2-avgemb.ini") +
                         " --data-dir " + test::shell_quote(data) + " --run-dir " + run +
                         " --max-steps 300 --valid_interval 300 --device cpu");
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_EQ(read_file((root / "run" / "labels.txt").string()), "0\n1\n");
  EXPECT_NE(r.out.find("train: 67349 sentences"), std::string::npos) << r.out;

  r = test::run_cli("evaluate --run-dir " + run + " --split dev --device cpu");
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  const auto at = r.out.find("accuracy ");
  ASSERT_NE(at, std::string::npos) << r.out;
  const double accuracy = std::stod(r.out.substr(at + 9));
  EXPECT_GT(accuracy, 0.70) << r.out;
  EXPECT_LE(accuracy, 1.0);
  EXPECT_NE(r.out.find("of 872) | macro-F1 0."), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("confusion matrix (rows gold, columns predicted)"), std::string::npos) << r.out;

  // Raw, capitalised input with attached punctuation; an empty line stays empty.
  r = test::run_cli("classify --run-dir " + run + " --device cpu",
                    "A wonderful, moving and beautiful film.\n\nThe worst movie: dull, stupid and boring.\n");
  ASSERT_EQ(r.status, 0) << r.err;
  std::istringstream out(r.out);
  std::vector<std::string> lines;
  for (std::string l; std::getline(out, l);) lines.push_back(l);
  ASSERT_EQ(lines.size(), 3u) << r.out;
  EXPECT_EQ(lines[0].substr(0, 2), "1\t") << r.out;
  EXPECT_EQ(lines[1], "");
  EXPECT_EQ(lines[2].substr(0, 2), "0\t") << r.out;
  EXPECT_GT(std::stod(lines[0].substr(2)), 0.5);

  // SST-2 has no test.tsv: evaluating the default split names the missing file.
  r = test::run_cli("evaluate --run-dir " + run + " --device cpu");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find(data + "/test.tsv"), std::string::npos) << r.err;
  fs::remove_all(root);
}

}  // namespace

// Every registered architecture exports its scripted twin: a registration whose module has no
// twin (a classifier twin is chosen by the module's type) fails here rather than in a user's
// `nlpzoo export`.
TEST(Architectures, EveryRegisteredArchitectureExportsItsTwin) {
  const auto dir = test::fresh_temp_dir("arch_export");
  const std::vector<std::string> tiny = {"--embed_dim", "8",   "--hidden_size", "8",  "--d_model",       "8",
                                         "--num_heads", "2",   "--num_layers",  "1",  "--ffn_dim",       "16",
                                         "--max_positions", "16", "--attention_dim", "8", "--dropout", "0"};
  // The tiny sizes that the task's schema has, and the architecture.
  const auto sized = [&](const std::string& task, const std::string& arch) {
    const auto schema = task_schema(task);
    std::vector<std::string> flags = {"--arch", arch};
    for (size_t i = 0; i < tiny.size(); i += 2)
      if (schema.find(tiny[i].substr(2))) flags.insert(flags.end(), {tiny[i], tiny[i + 1]});
    return flags;
  };
  for (const auto& arch : classifier_architectures()) {
    SCOPED_TRACE(arch.name);
    const Config config = Config::resolve(task_schema("classification"), "", sized("classification", arch.name));
    auto model = arch.build(config, {40, 3, false});
    const auto file = (dir / (arch.name + ".pt")).string();
    ASSERT_NO_THROW(model->export_twin(file, {"a", "b", "c"}, {{"config.ini", "x"}}));
    EXPECT_NO_THROW(torch::jit::load(file));
  }
  for (const auto& arch : seq2seq_architectures()) {
    SCOPED_TRACE(arch.name);
    const Config config = Config::resolve(task_schema("translation"), "", sized("translation", arch.name));
    Seq2SeqSizes sizes;
    sizes.src_vocab_size = sizes.tgt_vocab_size = 40;
    sizes.max_positions = 16;
    auto model = arch.build(config, sizes);
    const auto file = (dir / (arch.name + ".pt")).string();
    ASSERT_NO_THROW(model->export_twin(file, {{"config.ini", "x"}}));
    EXPECT_NO_THROW(torch::jit::load(file));
  }
  fs::remove_all(dir);
}
