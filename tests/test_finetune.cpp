// Fine-tuning BERT: the classification task with arch = bert and init_from = a
// pre-trained masked_lm run (train/tasks/classification_task.h). A tiny masked_lm run, trained
// here for a few updates on the topic corpus, is the pre-trained source: init_from loads exactly
// its encoder (bert.embeddings, bert.encoder) and tokenizer and leaves the head and the
// untrained pooler fresh; inputs are [CLS] A [SEP] B [SEP] with segment ids 0/1, the longer side
// cut first; a tiny fine-tune overfits a few labelled pairs, a regression fine-tune lowers its
// squared error; and the bad init_from inputs give errors that name the folder or the key.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "core/io.h"
#include "datasets/special_ids.h"
#include "models/bert/bert.h"
#include "tests/test_util.h"
#include "train/checkpoint.h"
#include "core/config.h"
#include "train/tasks/classification_task.h"
#include "train/tasks/masked_lm_task.h"
#include "train/tasks/registry.h"
#include "train/trainer.h"

using namespace nlpzoo;
using test::user_error_of;
namespace fs = std::filesystem;

namespace {

// Pairs of the topic corpus's words: "same" when both sentences are of one topic.
const char* kPairs =
    "sentence1\tsentence2\tlabel\n"
    "one two six\tten nine four\tsame\n"
    "the cat dog\tcow pig hen\tsame\n"
    "one two six\tcow pig hen\tdifferent\n"
    "the cat dog\tten nine four\tdifferent\n"
    "six ten a\tfox hen the\tdifferent\n"
    "cow fox the\tpig dog cat\tsame\n";

// Scored pairs (STS-B-like): the share of shared topic, 0..5.
const char* kScores =
    "sentence1\tsentence2\tscore\n"
    "one two six\tten nine four\t5.0\n"
    "the cat dog\tcow pig hen\t4.5\n"
    "one two six\tcow pig hen\t0.5\n"
    "the cat dog\tten nine four\t0.0\n"
    "six ten a\tfox hen the\t1.0\n"
    "cow fox the\tpig dog cat\t4.0\n";

std::vector<std::string> pair_flags() {
  return {"--text_column", "sentence1", "--text_b_column", "sentence2", "--label_column", "label", "--tsv_columns", "3"};
}

class FineTune : public ::testing::Test {
 protected:
  // One pre-trained masked_lm run for the whole suite: 4 updates of a 1-layer, 16-wide BERT.
  static void SetUpTestSuite() {
    root_ = new fs::path(test::fresh_temp_dir("finetune"));
    test::write_topic_corpus(*root_ / "corpus" / "english.txt", 400);
    auto config = Config::resolve(
        task_schema("masked_lm"), "",
        {"--task", "masked_lm", "--vocab_size", "40", "--d_model", "16", "--num_heads", "2", "--num_layers", "1",
         "--ffn_dim", "32", "--max_positions", "24", "--batch_size", "8", "--valid_every", "20",
         "--spm_normalization", "identity", "--optimizer", "adamw", "--lr", "0.001", "--max_steps", "4",
         "--valid_interval", "100", "--log_interval", "100", "--device", "cpu"});
    // As nlpzoo train does: seeded before the model is built, so the suite's encoder does not
    // depend on which tests ran before it.
    torch::manual_seed(static_cast<uint64_t>(bind_options<TrainerOptions>(config).seed));
    MaskedLmTask task;
    const auto run = (*root_ / "bert").string();
    task.setup(config, {(*root_ / "corpus").string(), run, {Split::kTrain, Split::kValid}});
    ASSERT_EQ(Trainer(task, config, "masked_lm", run).train(false), 0);
  }
  static void TearDownTestSuite() {
    fs::remove_all(*root_);
    delete root_;
  }
  void SetUp() override {
    dir_ = test::fresh_temp_dir(std::string("finetune_") +
                                ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_ / "data");
  }
  void TearDown() override { fs::remove_all(dir_); }

  static std::string bert_run() { return (*root_ / "bert").string(); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  void write_data(const std::string& train, const std::string& dev) {
    atomic_write_text(path("data/train.tsv"), train);
    atomic_write_text(path("data/dev.tsv"), dev);
  }
  // The fine-tuning config: arch = bert from the pre-trained run, no dropout, AdamW.
  Config config(std::vector<std::string> overrides, bool init = true) {
    std::vector<std::string> all = {"--task", "classification", "--arch", "bert", "--init_from",
                                    init ? bert_run() : "none", "--dropout", "0", "--attention_dropout", "0",
                                    "--optimizer", "adamw", "--lr", "0.003", "--clip_norm", "1.0",
                                    "--valid_interval", "1000", "--log_interval", "1000", "--device", "cpu"};
    all.insert(all.end(), overrides.begin(), overrides.end());
    auto c = Config::resolve(task_schema("classification"), "", all);
    if (!init) c.set("init_from", "");  // the ablation: a random encoder
    return c;
  }
  std::unique_ptr<ClassificationTask> make(Config& config, const std::string& run = "run") {
    auto task = std::make_unique<ClassificationTask>();
    task->setup(config, {path("data"), path(run), {Split::kTrain, Split::kValid}, /*resume=*/false});
    return task;
  }
  // The pre-trained run's parameters, read back with the checkpoint loader.
  static std::map<std::string, torch::Tensor> pretrained() {
    auto run = load_run(bert_run() + "/checkpoint_last.pt", torch::kCPU);
    std::map<std::string, torch::Tensor> out;
    for (const auto& p : run.task->model()->named_parameters()) out[p.key()] = p.value().detach().clone();
    return out;
  }

  static fs::path* root_;
  fs::path dir_;
};
fs::path* FineTune::root_ = nullptr;

}  // namespace

// init_from copies every encoder tensor (equal to the pre-trained run's), takes its tokenizer
// and sizes, and leaves the head and the pooler (never trained without NSP) as initialised.
TEST_F(FineTune, InitFromLoadsExactlyTheEncoderAndLeavesTheHeadFresh) {
  write_data(kPairs, kPairs);
  auto c = config(pair_flags());
  testing::internal::CaptureStdout();
  auto task = make(c);
  const std::string out = testing::internal::GetCapturedStdout();
  ASSERT_TRUE(task->bert_arch());
  const auto source = pretrained();
  int64_t equal = 0;
  for (const auto& p : task->bert_classifier().named_parameters()) {
    const auto& name = p.key();
    if (name.rfind("head.", 0) == 0) continue;
    ASSERT_TRUE(source.count(name)) << name;
    if (name.rfind("bert.pooler.", 0) == 0) {
      // Both start with a zero bias; the weight is the fine-tuning run's own draw.
      if (name == "bert.pooler.dense.weight") {
        EXPECT_FALSE(torch::equal(p.value(), source.at(name))) << name << " was loaded";
      }
    } else {
      EXPECT_TRUE(torch::equal(p.value(), source.at(name))) << name << " differs from the pre-trained run's";
      ++equal;
    }
  }
  // Every tensor of the pre-trained bert.embeddings and bert.encoder, nothing of its MLM head.
  int64_t encoder = 0;
  for (const auto& [name, t] : source)
    if (name.rfind("bert.", 0) == 0 && name.rfind("bert.pooler.", 0) != 0) ++encoder;
  EXPECT_EQ(equal, encoder);
  EXPECT_GT(encoder, 10);
  // The head starts as BERT initialises it: bias 0, weights N(0, 0.02).
  const auto& head = task->bert_classifier().head->output;
  EXPECT_EQ(head->weight.size(0), 2);
  EXPECT_EQ(head->bias.abs().sum().item<float>(), 0.0f);
  EXPECT_LT(head->weight.std().item<float>(), 0.05f);
  // The run's tokenizer and sizes.
  const auto header = read_checkpoint_header(bert_run() + "/checkpoint_last.pt");
  EXPECT_EQ(task->tokenizer().serialized(), header.artifacts.at("spm.model"));
  EXPECT_EQ(read_file(path("run/spm.model")), header.artifacts.at("spm.model"));
  EXPECT_EQ(c.get("d_model"), "16");
  EXPECT_EQ(c.get("num_layers"), "1");
  EXPECT_EQ(c.get("max_positions"), "24");
  EXPECT_EQ(c.get("vocab_size"), std::to_string(task->tokenizer().vocab_size()));
  // One line says what was loaded and what is fresh.
  EXPECT_NE(out.find("init_from " + bert_run() + "/checkpoint_last.pt (masked_lm, step 4): loaded " +
                     std::to_string(equal) + " tensors"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("fresh"), std::string::npos) << out;
  EXPECT_NE(out.find("bert.pooler (masked_lm without nsp never trains it)"), std::string::npos) << out;

  // init_from empty: the ablation, a random encoder and a tokenizer of its own with [CLS] [SEP].
  write_data(kPairs, kPairs);
  auto r = config([] {
    auto f = pair_flags();
    f.insert(f.end(), {"--spm_model_type", "word", "--vocab_size", "60"});
    return f;
  }(), /*init=*/false);
  auto random = make(r, "random");
  EXPECT_FALSE(torch::equal(random->bert_classifier().bert->embeddings->token->weight.slice(1, 0, 1).flatten(),
                            source.at("bert.embeddings.token.weight").slice(1, 0, 1).flatten()));
  EXPECT_EQ(random->tokenizer().id_to_piece(kClsId), "[CLS]");
  EXPECT_EQ(random->tokenizer().id_to_piece(kSepId), "[SEP]");
}

// [CLS] A [SEP] B [SEP], segment 0 through the first [SEP] and 1 after; too long a pair loses
// pieces off its longer side first (B on a tie), and setup says how many inputs were cut.
TEST_F(FineTune, PairLayoutSegmentIdsAndTheLongerSideCutFirst) {
  write_data(kPairs, kPairs);
  auto c = config(pair_flags());
  auto task = make(c);
  const auto& tok = task->tokenizer();
  const auto a = tok.encode("one two six"), b = tok.encode("cow pig hen");
  std::vector<int64_t> expected = {kClsId};
  expected.insert(expected.end(), a.begin(), a.end());
  expected.push_back(kSepId);
  expected.insert(expected.end(), b.begin(), b.end());
  expected.push_back(kSepId);
  const std::string sb = "cow pig hen";
  bool cut = true;
  EXPECT_EQ(task->encode("one two six", &sb, &cut), expected);
  EXPECT_FALSE(cut);
  // A [SEP] typed in the text cannot split the layout: it reads as <unk>.
  const std::string typed = "[SEP]";
  const auto with_sep = task->encode("one", &typed);
  EXPECT_EQ(std::count(with_sep.begin(), with_sep.end(), kSepId), 2);

  auto batch = task->make_batch(Split::kTrain, 0, 0);
  const auto& tokens = batch.tensors.at("tokens");
  const auto& segments = batch.tensors.at("segments");
  ASSERT_EQ(segments.sizes(), tokens.sizes());
  for (int64_t r = 0; r < tokens.size(0); ++r) {
    int64_t seps = 0;
    for (int64_t t = 0; t < tokens.size(1); ++t) {
      const int64_t id = tokens[r][t].item<int64_t>(), s = segments[r][t].item<int64_t>();
      if (t == 0) {
        EXPECT_EQ(id, kClsId);
      }
      EXPECT_EQ(s, id == kPadId || seps == 0 ? 0 : 1) << "row " << r << " t " << t;  // seps: [SEP]s before t
      if (id == kSepId) ++seps;
    }
    EXPECT_EQ(seps, 2) << "row " << r;
  }
  EXPECT_TRUE(torch::equal(pair_segments(torch::tensor({{4, 9, 5, 10, 11, 5, 0}}, torch::kLong)),
                           torch::tensor({{0, 0, 0, 1, 1, 1, 0}}, torch::kLong)));

  // max_positions 9 leaves 6 pieces for A and B: the 3 + 3 pairs fit, the added 6 + 3 one is cut
  // (6, 3) -> (5, 3) -> (4, 3) -> (3, 3); a random encoder with its own (word) tokenizer.
  write_data(std::string(kPairs) + "one two six ten nine four\tthe cat dog\tsame\n", kPairs);
  auto short_config = config([] {
    auto f = pair_flags();
    f.insert(f.end(), {"--max_positions", "9", "--spm_model_type", "word", "--vocab_size", "60"});
    return f;
  }(), /*init=*/false);
  testing::internal::CaptureStderr();
  auto short_task = make(short_config, "short");
  const std::string err = testing::internal::GetCapturedStderr();
  const std::string sb2 = "the cat dog";  // words of the A sentences, which the new tokenizer learnt from
  const auto& stok = short_task->tokenizer();
  const auto sa = stok.encode("one two six ten nine four"), sbb = stok.encode("the cat dog");
  ASSERT_EQ(sa.size(), 6u);
  ASSERT_EQ(sbb.size(), 3u);
  cut = false;
  const auto ids = short_task->encode("one two six ten nine four", &sb2, &cut);
  EXPECT_TRUE(cut);
  EXPECT_EQ(ids, (std::vector<int64_t>{kClsId, sa[0], sa[1], sa[2], kSepId, sbb[0], sbb[1], sbb[2], kSepId}));
  EXPECT_NE(err.find("train.tsv: 1 input(s) longer than max_positions (9 pieces, [CLS] A [SEP] B [SEP]) were cut, "
                     "the longer side first; the first at line 8"),
            std::string::npos)
      << err;
  // A single sentence: [CLS] A [SEP], segments all 0.
  write_data("sentence\tlabel\none two six\ta\ncow pig hen\tb\n", "sentence\tlabel\none two six\ta\n");
  auto single_config = config({"--spm_model_type", "word", "--vocab_size", "60"}, /*init=*/false);
  auto single = make(single_config, "single");
  const auto one = single->tokenizer().encode("one two six");
  EXPECT_EQ(single->encode("one two six"), (std::vector<int64_t>{kClsId, one[0], one[1], one[2], kSepId}));
  EXPECT_EQ(single->make_batch(Split::kTrain, 0, 0).tensors.at("segments").abs().sum().item<int64_t>(), 0);
}

// A few labelled pairs are learnt exactly: dev (= train) accuracy 1.0 within 60 updates.
TEST_F(FineTune, TinyFineTuneOverfitsLabelledPairs) {
  write_data(kPairs, kPairs);
  torch::manual_seed(3);
  auto c = config([] {
    auto f = pair_flags();
    f.insert(f.end(), {"--max_steps", "60", "--lr", "0.01", "--lr_schedule", "constant"});
    return f;
  }());
  auto task = make(c);
  const auto before = task->evaluate(Split::kValid, {});
  ASSERT_EQ(Trainer(*task, c, "classification", path("run")).train(false), 0);
  task->model()->eval();
  const auto after = task->evaluate(Split::kValid, {});
  EXPECT_EQ(after.at("accuracy").value, 1.0) << "loss " << before.at("loss").value << " -> " << after.at("loss").value;
  EXPECT_LT(after.at("loss").value, before.at("loss").value);
  // classify takes "A<TAB>B" and gives the learnt labels.
  const auto p = task->predict({"one two six\tten nine four", "one two six\tcow pig hen"}, torch::kCPU, 8);
  EXPECT_EQ(task->labels()[p[0].label_id], "same");
  EXPECT_EQ(task->labels()[p[1].label_id], "different");
}

// A random-init pair task learns its SentencePiece model from both sides of its pairs: the
// words only B sentences hold (RTE's hypotheses, STS-B's second sentences) are no <unk>.
TEST_F(FineTune, RandomInitTokenizerLearnsBothSidesOfAPair) {
  std::string tsv = "sentence1\tsentence2\tlabel\n";
  for (int i = 0; i < 30; ++i)
    tsv += std::string(i % 2 ? "one two six" : "the cat dog") + "\tzebra quagga okapi\t" + (i % 2 ? "same\n" : "different\n");
  write_data(tsv, tsv);
  auto flags = pair_flags();
  flags.insert(flags.end(), {"--vocab_size", "40", "--spm_normalization", "identity"});
  auto c = config(flags, /*init=*/false);
  auto task = make(c);
  for (const std::string word : {"zebra", "quagga", "okapi", "cat"}) {
    const auto ids = task->tokenizer().encode(word);
    ASSERT_FALSE(ids.empty());
    EXPECT_EQ(std::count(ids.begin(), ids.end(), kUnkId), 0) << word;
  }
}

// objective = regression: one output, squared error, which fine-tuning lowers.
TEST_F(FineTune, RegressionFineTuneReducesTheSquaredError) {
  write_data(kScores, kScores);
  torch::manual_seed(4);
  auto c = config({"--objective", "regression", "--text_column", "sentence1", "--text_b_column", "sentence2",
                   "--label_column", "score", "--tsv_columns", "3", "--max_steps", "150", "--lr", "0.003",
                   "--lr_schedule", "constant"});
  auto task = make(c);
  EXPECT_EQ(task->bert_classifier().head->output->weight.size(0), 1);
  const double before = task->evaluate(Split::kValid, {}).at("loss").value;
  ASSERT_EQ(Trainer(*task, c, "classification", path("run")).train(false), 0);
  task->model()->eval();
  const auto after = task->evaluate(Split::kValid, {});
  EXPECT_LT(after.at("loss").value, before / 4) << before << " -> " << after.at("loss").value;
  EXPECT_GT(after.at("pearson").value, 0.8);
  const auto p = task->predict({"one two six\tten nine four"}, torch::kCPU, 8);
  EXPECT_TRUE(p[0].probabilities.empty());
  EXPECT_GT(p[0].score, 2.5);
}

// The pre-training corpus had no punctuation (masked_lm's normalize_words): by default the
// fine-tune reads its text the same way, and its config keeps the resolved value for resume,
// evaluate and classify. A random encoder (its own tokenizer) reads the text as it is.
TEST_F(FineTune, InitFromReadsTextAsThePreTrainingCorpusWasWritten) {
  write_data(kPairs, kPairs);
  auto c = config(pair_flags());
  const auto task = make(c);
  EXPECT_EQ(c.get("normalize_words"), "true");
  EXPECT_EQ(task->encode("The cat, the DOG!"), task->encode("the cat the dog"));
  auto flags = pair_flags();
  flags.insert(flags.end(), {"--normalize_words", "false"});
  auto kept = config(flags);
  const auto punctuated = make(kept, "kept");
  EXPECT_EQ(kept.get("normalize_words"), "false");
  EXPECT_NE(punctuated->encode("The cat, the DOG!"), punctuated->encode("the cat the dog"));
  auto ablation = config(pair_flags(), /*init=*/false);
  make(ablation, "random");
  EXPECT_EQ(ablation.get("normalize_words"), "false");
}

// --resume of a fine-tuned run continues from its own checkpoint: it never reads init_from
// again (here the pre-trained folder is gone), nor does loading the run.
TEST_F(FineTune, ResumeDoesNotReloadInitFrom) {
  write_data(kPairs, kPairs);
  const auto source = path("pretrained");
  fs::copy(bert_run(), source, fs::copy_options::recursive);
  auto flags = pair_flags();
  flags.insert(flags.end(), {"--init_from", source, "--max_steps", "2"});
  auto c = config(flags);
  {
    auto task = make(c);
    ASSERT_EQ(Trainer(*task, c, "classification", path("run")).train(false), 0);
  }
  const auto trained = load_run(path("run/checkpoint_last.pt"), torch::kCPU);
  fs::remove_all(source);
  auto resumed_config = Config::from_ini_text(task_schema("classification"), read_file(path("run/config.ini")), "run");
  resumed_config.set("max_steps", "3");
  ClassificationTask resumed;
  resumed.setup(resumed_config, {path("data"), path("run"), {Split::kTrain, Split::kValid}, /*resume=*/true});
  ASSERT_EQ(Trainer(resumed, resumed_config, "classification", path("run")).train(true), 0);
  EXPECT_EQ(read_checkpoint_header(path("run/checkpoint_last.pt")).state.step, 3);
  const auto reloaded = load_run(path("run/checkpoint_last.pt"), torch::kCPU);
  EXPECT_EQ(reloaded.config.get("d_model"), "16");
  (void)trained;
}

// Bad init_from: each error names the folder (or the checkpoint, or the key and both values).
TEST_F(FineTune, BadInitFromGivesErrorsNamingIt) {
  write_data(kPairs, kPairs);
  const auto try_with = [&](std::vector<std::string> extra, const std::string& run) {
    auto flags = pair_flags();
    flags.insert(flags.end(), extra.begin(), extra.end());
    return user_error_of([&] {
      auto c = config(flags);
      make(c, run);
    });
  };
  // Missing, a file, a folder without a checkpoint.
  auto e = try_with({"--init_from", path("nowhere")}, "r1");
  EXPECT_NE(e.find("config key 'init_from': " + path("nowhere") + " does not exist"), std::string::npos) << e;
  atomic_write_text(path("file"), "x");
  e = try_with({"--init_from", path("file")}, "r2");
  EXPECT_NE(e.find(path("file") + " is not a folder"), std::string::npos) << e;
  fs::create_directories(path("empty"));
  e = try_with({"--init_from", path("empty")}, "r3");
  EXPECT_NE(e.find(path("empty") + " is not a run folder: it has no checkpoint_last.pt"), std::string::npos) << e;

  // A run of another kind: a classifier (avg_emb) trained for one update.
  {
    auto other = Config::resolve(task_schema("classification"), "",
                                 {"--task", "classification", "--arch", "avg_emb", "--embed_dim", "8", "--vocab_size",
                                  "40", "--max_steps", "1", "--device", "cpu", "--text_column", "sentence1",
                                  "--text_b_column", "sentence2", "--label_column", "label", "--tsv_columns", "3"});
    auto task = make(other, "classifier");
    ASSERT_EQ(Trainer(*task, other, "classification", path("classifier")).train(false), 0);
  }
  e = try_with({"--init_from", path("classifier")}, "r4");
  EXPECT_NE(e.find(path("classifier") + " is a run of task 'classification', not of masked_lm"), std::string::npos) << e;

  // A size that contradicts the pre-trained run's.
  e = try_with({"--d_model", "32", "--num_heads", "2"}, "r5");
  EXPECT_NE(e.find("config key 'd_model': is 32 but the init_from run " + bert_run() + " was pre-trained with d_model = 16"),
            std::string::npos)
      << e;
  e = try_with({"--num_layers", "3"}, "r6");
  EXPECT_NE(e.find("config key 'num_layers': is 3"), std::string::npos) << e;

  // A checkpoint whose tensors do not fit its own config (another size saved under its header).
  const auto broken = path("broken");
  fs::copy(bert_run(), broken, fs::copy_options::recursive);
  {
    const auto header = read_checkpoint_header(broken + "/checkpoint_last.pt");
    BertForPreTraining wider(BertOptions().vocab_size(40).d_model(8).num_heads(2).num_layers(1).ffn_dim(16).max_positions(24));
    save_checkpoint(broken + "/checkpoint_last.pt", *wider, nullptr, header);
  }
  e = try_with({"--init_from", broken}, "r7");
  EXPECT_NE(e.find(broken + "/checkpoint_last.pt"), std::string::npos) << e;

  // init_from belongs to arch = bert.
  e = try_with({"--arch", "rnn"}, "r8");
  EXPECT_NE(e.find("config key 'init_from': only arch = bert"), std::string::npos) << e;
  for (const char* run : {"r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8"}) EXPECT_FALSE(fs::exists(path(std::string(run) + "/spm.model"))) << run;
}
