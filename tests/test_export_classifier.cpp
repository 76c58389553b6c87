// The TorchScript twins of the sentence classifiers (infer/export_classifier.h), average of
// embeddings and RNN (every cell, pooling, depth and direction), classification and
// regression: equal to the eager model on padded batches, snapshots, saved with their extra
// files, exported by the classification task, and run by Debian's python3-torch (README's own
// lines included). (`nlpzoo export` of a trained run: tests/test_evaluate_cli.cpp.)
#include <gtest/gtest.h>

#include <torch/script.h>

#include <filesystem>
#include <sstream>

#include "core/io.h"
#include "infer/export_classifier.h"
#include "tests/test_util.h"
#include "tests/twin_util.h"
#include "core/config.h"
#include "train/tasks/classification_task.h"
#include "train/tasks/registry.h"

namespace fs = std::filesystem;
using namespace nlpzoo;
using test::shell_quote;

namespace {

constexpr int64_t kVocab = 30, kClasses = 3;

AverageEmbeddingClassifier trained_classifier(int64_t outputs = kClasses) {
  torch::manual_seed(7);
  AverageEmbeddingClassifier model(ClassifierOptions(kVocab, outputs).embed_dim(8).dropout(0.3));
  model->eval();
  return model;
}

// [5, 7] int64: rows of lengths 7, 1, 4, 3 padded with pad 0, and a row of padding only.
torch::Tensor padded_batch() {
  auto tokens = torch::randint(1, kVocab, {5, 7}, torch::kLong);
  tokens.index_put_({1, torch::indexing::Slice(1)}, 0);
  tokens.index_put_({2, torch::indexing::Slice(4)}, 0);
  tokens.index_put_({3, torch::indexing::Slice(3)}, 0);
  tokens[4].fill_(0);
  return tokens;
}

const std::vector<std::string> kLabels = {"neg", "neutral", "pos"};

// ---- RNN variants ---------------------------------------------------------------------------

struct RnnVariant {
  CellType cell;
  Pooling pooling;
  int64_t num_layers;
  bool bidirectional;
};

std::ostream& operator<<(std::ostream& os, const RnnVariant& v) {
  return os << to_string(v.cell) << "_" << to_string(v.pooling) << "_L" << v.num_layers
            << (v.bidirectional ? "_bi" : "_uni");
}

// Every cell with every pooling, as a 2-layer bidirectional stack and a 1-layer unidirectional
// one, and a 3-layer unidirectional LSTM.
std::vector<RnnVariant> rnn_variants() {
  std::vector<RnnVariant> out;
  for (CellType cell : {CellType::kRnn, CellType::kGru, CellType::kLstm})
    for (Pooling pooling : {Pooling::kLast, Pooling::kMax, Pooling::kMean}) {
      out.push_back({cell, pooling, 2, true});
      out.push_back({cell, pooling, 1, false});
    }
  out.push_back({CellType::kLstm, Pooling::kLast, 3, false});
  return out;
}

// A random RNN classifier in eval mode (dropout 0.3 everywhere it applies, so eval matters).
RnnClassifier rnn_classifier(const RnnVariant& v, int64_t outputs = kClasses) {
  torch::manual_seed(11);
  RnnClassifier model(ClassifierOptions(kVocab, outputs)
                          .embed_dim(6)
                          .hidden_size(5)
                          .dropout(0.3)
                          .cell(v.cell)
                          .pooling(v.pooling)
                          .num_layers(v.num_layers)
                          .bidirectional(v.bidirectional));
  model->eval();
  return model;
}

}  // namespace

// ---- average of embeddings ----------------------------------------------------------------------

TEST(ExportClassifier, TwinMatchesEagerOnPaddedBatches) {
  auto model = trained_classifier();
  auto twin = script_average_embedding_classifier(*model, kLabels);
  torch::NoGradGuard no_grad;
  const auto tokens = padded_batch();
  const auto eager = model->forward(tokens);  // [5, 3]
  const auto logits = twin.forward({tokens}).toTensor();
  EXPECT_LE(test::max_diff(logits, eager), 1e-5);
  const auto probabilities = twin.get_method("predict")({tokens}).toTensor();
  EXPECT_LE(test::max_diff(probabilities, torch::softmax(eager, -1)), 1e-5);
  // A row padded further is the same sentence.
  const auto longer = torch::cat({tokens, torch::zeros({5, 3}, torch::kLong)}, 1);
  EXPECT_LE(test::max_diff(twin.forward({longer}).toTensor(), eager), 1e-5);
  EXPECT_EQ(twin.attr("num_classes").toInt(), kClasses);
  EXPECT_EQ(twin.attr("labels").toListRef().at(2).toStringRef(), "pos");
  EXPECT_FALSE(twin.attr("regression").toBool());
  test::expect_twin_holds_parameters(*model, twin);
  EXPECT_THROW(script_average_embedding_classifier(*model, {"a", "b"}), std::invalid_argument);
  EXPECT_THROW(script_average_embedding_classifier(*model, {}), std::invalid_argument);  // 3 outputs: no regression
}

TEST(ExportClassifier, TwinIsASnapshot) {
  auto model = trained_classifier();
  auto twin = script_average_embedding_classifier(*model, kLabels);
  torch::NoGradGuard no_grad;
  const auto tokens = padded_batch();
  const auto before = model->forward(tokens);
  model->output->bias.add_(1.0);
  EXPECT_LE(test::max_diff(twin.forward({tokens}).toTensor(), before), 1e-6);
}

TEST(ExportClassifier, SavedFileLoadsWithItsExtraFiles) {
  const auto dir = test::fresh_temp_dir("export_classifier");
  const auto path = (dir / "c.pt").string();
  auto model = trained_classifier();
  export_text_classifier(path, *model, kLabels, {{"config.ini", "task = classification\n"}});
  torch::jit::ExtraFilesMap files{{"config.ini", ""}, {"README.txt", ""}};
  auto loaded = torch::jit::load(path, torch::kCPU, files);
  EXPECT_EQ(files["config.ini"], "task = classification\n");
  EXPECT_EQ(files["README.txt"], text_classifier_export_readme(*model, kLabels));
  for (const char* s : {"average of embeddings", "predict(tokens[B,T] int64) -> probabilities[B,C]",
                        "labels (class id i is labels[i]): neg neutral pos", "sp.encode(text)", "m.labels["})
    EXPECT_NE(files["README.txt"].find(s), std::string::npos) << s << "\n" << files["README.txt"];
  torch::NoGradGuard no_grad;
  const auto tokens = padded_batch();
  EXPECT_LE(test::max_diff(loaded.forward({tokens}).toTensor(), model->forward(tokens)), 1e-5);
  EXPECT_THROW(export_text_classifier((dir / "no/such/dir/c.pt").string(), *model, kLabels, {}), UserError);
  EXPECT_THROW(export_text_classifier(path, *model, kLabels, {{"README.txt", ""}}), std::invalid_argument);
  fs::remove_all(dir);
}

// ---- RNN classifiers ------------------------------------------------------------------------

class ExportRnnClassifier : public ::testing::TestWithParam<RnnVariant> {};

TEST_P(ExportRnnClassifier, TwinMatchesEagerOnPaddedBatches) {
  auto model = rnn_classifier(GetParam());
  auto twin = script_rnn_classifier(*model, kLabels);
  test::expect_twin_holds_parameters(*model, twin);
  torch::NoGradGuard no_grad;
  for (int trial = 0; trial < 3; ++trial) {
    const auto tokens = padded_batch();
    const auto eager = model->forward(tokens);  // [5, 3]
    const auto logits = twin.forward({tokens}).toTensor();
    ASSERT_EQ(logits.sizes(), eager.sizes());
    EXPECT_LE(test::max_diff(logits, eager), 1e-5);
    EXPECT_LE(test::max_diff(twin.get_method("predict")({tokens}).toTensor(), torch::softmax(eager, -1)), 1e-5);
    // Padded further, and each row alone at its own length: the same sentences.
    const auto longer = torch::cat({tokens, torch::zeros({5, 2}, torch::kLong)}, 1);
    EXPECT_LE(test::max_diff(twin.forward({longer}).toTensor(), eager), 1e-5);
    const int64_t lengths[] = {7, 1, 4, 3};
    for (int64_t b = 0; b < 4; ++b) {
      const auto row = tokens.slice(0, b, b + 1).slice(1, 0, lengths[b]);
      EXPECT_LE(test::max_diff(twin.forward({row}).toTensor(), eager.slice(0, b, b + 1)), 1e-5) << "row " << b;
    }
  }
  EXPECT_EQ(twin.attr("cell").toStringRef(), to_string(GetParam().cell));
  EXPECT_EQ(twin.attr("pooling").toStringRef(), to_string(GetParam().pooling));
  EXPECT_EQ(twin.attr("num_layers").toInt(), GetParam().num_layers);
  EXPECT_EQ(twin.attr("bidirectional").toBool(), GetParam().bidirectional);
  EXPECT_EQ(twin.attr("labels").toListRef().at(0).toStringRef(), "neg");
}

TEST_P(ExportRnnClassifier, RegressionTwinPredictsTheScore) {
  auto model = rnn_classifier(GetParam(), /*outputs=*/1);
  auto twin = script_rnn_classifier(*model, {});
  EXPECT_TRUE(twin.attr("regression").toBool());
  EXPECT_EQ(twin.attr("labels").toListRef().size(), 0u);
  torch::NoGradGuard no_grad;
  const auto tokens = padded_batch();
  const auto eager = model->forward(tokens);  // [5, 1]
  EXPECT_LE(test::max_diff(twin.forward({tokens}).toTensor(), eager), 1e-5);
  const auto scores = twin.get_method("predict")({tokens}).toTensor();
  EXPECT_EQ(scores.sizes(), (std::vector<int64_t>{5}));
  EXPECT_LE(test::max_diff(scores, eager.select(1, 0)), 1e-5);
  EXPECT_THROW(script_rnn_classifier(*model, {"a", "b"}), std::invalid_argument);
}

INSTANTIATE_TEST_SUITE_P(Variants, ExportRnnClassifier, ::testing::ValuesIn(rnn_variants()),
                         [](const auto& info) {
                           std::ostringstream s;
                           s << info.param;
                           return s.str();
                         });

TEST(ExportClassifier, RegressionAverageOfEmbeddingsPredictsTheScore) {
  auto model = trained_classifier(/*outputs=*/1);
  auto twin = script_text_classifier(*model, {});
  EXPECT_TRUE(twin.attr("regression").toBool());
  torch::NoGradGuard no_grad;
  const auto tokens = padded_batch();
  const auto scores = twin.get_method("predict")({tokens}).toTensor();
  EXPECT_EQ(scores.sizes(), (std::vector<int64_t>{5}));
  EXPECT_LE(test::max_diff(scores, model->forward(tokens).select(1, 0)), 1e-5);
  const auto readme = text_classifier_export_readme(*model, {});
  for (const char* s : {"Regression", "predict(tokens[B,T] int64) -> scores[B]", "print(float(m.predict(tokens)[0]))"})
    EXPECT_NE(readme.find(s), std::string::npos) << s << "\n" << readme;
  EXPECT_EQ(readme.find("m.labels["), std::string::npos) << readme;
}

// ---- the classification task's export ------------------------------------------------------------

namespace {

const char* kSentiment =
    "a charming , often affecting journey .\t1\n"
    "it 's a charming and often affecting journey .\t1\n"
    "a gorgeous , witty , seductive movie .\t1\n"
    "the movie is dull and lifeless .\t0\n"
    "unfunny and tedious .\t0\n"
    "a dull , lifeless , tedious film .\t0\n";

const char* kScores =
    "a charming , often affecting journey .\t4.5\n"
    "it 's a charming and often affecting journey .\t4.0\n"
    "a gorgeous , witty , seductive movie .\t3.5\n"
    "the movie is dull and lifeless .\t1.0\n"
    "unfunny and tedious .\t0.5\n"
    "a dull , lifeless , tedious film .\t0.0\n";

// A ClassificationTask set up (not trained: its random model is what is exported) in `dir`.
std::unique_ptr<ClassificationTask> classification_task(const fs::path& dir, const std::string& data,
                                                        std::vector<std::string> flags) {
  fs::create_directories(dir / "data");
  atomic_write_text((dir / "data/train.tsv").string(), data);
  atomic_write_text((dir / "data/dev.tsv").string(), data);
  std::vector<std::string> all = {"--task", "classification", "--vocab_size", "40", "--spm_model_type", "word",
                                  "--embed_dim", "8", "--hidden_size", "8", "--dropout", "0.2", "--device", "cpu"};
  all.insert(all.end(), flags.begin(), flags.end());
  auto config = Config::resolve(task_schema("classification"), "", all);
  auto task = std::make_unique<ClassificationTask>();
  task->setup(config, {(dir / "data").string(), (dir / "run").string(), {Split::kTrain, Split::kValid},
                       /*resume=*/false});
  return task;
}

const std::vector<std::string> kSentences = {"It's a charming, often affecting journey.", "Unfunny and tedious.",
                                             "A gorgeous movie"};

// The twin's predict on the task's encoding of kSentences (padded to one batch).
torch::Tensor twin_predict(torch::jit::Module& twin, const ClassificationTask& task) {
  std::vector<std::vector<int64_t>> rows;
  size_t T = 0;
  for (const auto& s : kSentences) {
    rows.push_back(task.encode(s));
    T = std::max(T, rows.back().size());
  }
  auto tokens = torch::zeros({static_cast<int64_t>(rows.size()), static_cast<int64_t>(T)}, torch::kLong);
  for (size_t i = 0; i < rows.size(); ++i)
    for (size_t t = 0; t < rows[i].size(); ++t) tokens[i][t] = rows[i][t];
  if (task.bert_arch()) return twin.get_method("predict")({tokens, pair_segments(tokens)}).toTensor();
  return twin.get_method("predict")({tokens}).toTensor();
}

}  // namespace

// `nlpzoo export` asks the task: arch = rnn, arch = bert and regression runs export too, and the file's
// predict is the task's own predict (classify) on the same sentences.
TEST(ExportClassifierTask, RnnAndRegressionRunsExportTheirTwin) {
  const auto root = test::fresh_temp_dir("export_classifier_task");
  struct Case {
    std::string name, data;
    std::vector<std::string> flags;
    bool regression;
  };
  const std::vector<Case> cases = {
      {"bilstm", kSentiment, {"--arch", "rnn", "--cell", "lstm", "--num_layers", "2", "--pooling", "max"}, false},
      {"gru_regression", kScores, {"--arch", "rnn", "--cell", "gru", "--objective", "regression"}, true},
      {"avg_regression", kScores, {"--arch", "avg_emb", "--objective", "regression"}, true},
      {"bert", kSentiment, {"--arch", "bert", "--d_model", "16", "--num_heads", "2", "--num_layers", "2", "--ffn_dim",
                            "32", "--max_positions", "32"}, false},
      {"bert_regression", kScores, {"--arch", "bert", "--d_model", "16", "--num_heads", "2", "--num_layers", "1",
                                    "--ffn_dim", "32", "--max_positions", "32", "--objective", "regression"}, true},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    torch::manual_seed(2);
    auto task = classification_task(root / c.name, c.data, c.flags);
    const auto path = (root / (c.name + ".pt")).string();
    EXPECT_EQ(task->export_torchscript(path, "[model]\ntask = classification\n"),
              (std::vector<std::string>{"config.ini", "labels.txt", "spm.model"}));
    torch::jit::ExtraFilesMap files{{"config.ini", ""}, {"spm.model", ""}, {"labels.txt", ""}, {"README.txt", ""}};
    auto twin = torch::jit::load(path, torch::kCPU, files);
    EXPECT_EQ(files["config.ini"], "[model]\ntask = classification\n");
    EXPECT_EQ(files["spm.model"], task->tokenizer().serialized());
    EXPECT_EQ(files["labels.txt"], c.regression ? "" : "0\n1\n");
    EXPECT_EQ(twin.attr("regression").toBool(), c.regression);
    torch::NoGradGuard no_grad;
    const auto got = twin_predict(twin, *task);
    const auto expected = task->predict(kSentences, torch::kCPU, 2);
    ASSERT_EQ(got.size(0), 3);
    for (int64_t i = 0; i < 3; ++i) {
      if (c.regression) {
        EXPECT_EQ(got.dim(), 1);
        EXPECT_NEAR(got[i].item<double>(), expected[i].score, 1e-5) << i;
      } else {
        for (int64_t k = 0; k < 2; ++k) EXPECT_NEAR(got[i][k].item<float>(), expected[i].probabilities[k], 1e-5) << i;
      }
    }
  }
  fs::remove_all(root);
}

// ---- python3-torch ---------------------------------------------------------------------------------

TEST(RegressionExportClassifierPython, PythonTorchRunsTheExportedClassifier) {
  NLPZOO_REQUIRE_PYTHON_MODULE("torch", "python3-torch");
  const auto dir = test::fresh_temp_dir("export_classifier_py");
  auto average = trained_classifier();
  auto bilstm = rnn_classifier({CellType::kLstm, Pooling::kMean, 2, true});
  auto gru = rnn_classifier({CellType::kGru, Pooling::kLast, 1, false}, /*outputs=*/1);
  const std::vector<std::string> paths = {(dir / "avg.pt").string(), (dir / "bilstm.pt").string(),
                                          (dir / "gru.pt").string()};
  export_text_classifier(paths[0], *average, kLabels, {});
  export_text_classifier(paths[1], *bilstm, kLabels, {});
  export_text_classifier(paths[2], *gru, {}, {});
  const auto py = test::run_python(R"PY(
import sys, torch
torch.set_num_threads(1)
tokens = torch.tensor([[5, 6, 7, 8, 0], [9, 0, 0, 0, 0], [4, 12, 3, 0, 0]])
for i, path in enumerate(sys.argv[1:]):
    m = torch.jit.load(path)
    with torch.no_grad():
        p = m.predict(tokens)
    print('attrs', i, m.regression, len(m.labels), ','.join(m.labels), tuple(p.shape))
    print('predict', i, 0, ' '.join('%.9g' % x for x in p.flatten().tolist()))
print('done')
)PY", paths);
  ASSERT_EQ(py.status, 0) << py.out << py.err;
  torch::NoGradGuard no_grad;
  const auto tokens = torch::tensor({5, 6, 7, 8, 0, 9, 0, 0, 0, 0, 4, 12, 3, 0, 0}, torch::kLong).view({3, 5});
  test::expect_python_report(py.out,
                             {{"predict 0 0", torch::softmax(average->forward(tokens), -1)},
                              {"predict 1 0", torch::softmax(bilstm->forward(tokens), -1)},
                              {"predict 2 0", gru->forward(tokens).select(1, 0)}},
                             {{"attrs 0", "False 3 neg,neutral,pos (3, 3)"},
                              {"attrs 1", "False 3 neg,neutral,pos (3, 3)"},
                              {"attrs 2", "True 0  (3,)"}});
  fs::remove_all(dir);
}

// The README's Python lines, run as they stand on a task's export: they classify their example
// sentence as `nlpzoo classify` does.
TEST(RegressionExportClassifierPython, ReadmeLinesClassifyASentence) {
  NLPZOO_REQUIRE_PYTHON_MODULE("torch", "python3-torch");
  NLPZOO_REQUIRE_PYTHON_MODULE("sentencepiece", "python3-sentencepiece");
  const auto root = test::fresh_temp_dir("export_classifier_readme");
  for (bool regression : {false, true}) {
    SCOPED_TRACE(regression ? "regression" : "classification");
    torch::manual_seed(4);
    std::vector<std::string> flags = {"--arch", "rnn", "--cell", "gru"};
    if (regression) flags.insert(flags.end(), {"--objective", "regression"});
    const std::string name = regression ? "scores" : "labels";
    auto task = classification_task(root / name, regression ? kScores : kSentiment, flags);
    const auto path = (root / (name + ".pt")).string();
    task->export_torchscript(path, "");
    torch::jit::ExtraFilesMap files{{"README.txt", ""}};
    torch::jit::load(path, torch::kCPU, files);
    const auto py = test::run_python(test::readme_python(files["README.txt"], path));
    ASSERT_EQ(py.status, 0) << files["README.txt"] << py.out << py.err;
    // The README's sentence, "it 's a charming , often affecting journey .", is kSentences[0] normalized.
    const auto expected = task->predict({kSentences[0]}, torch::kCPU, 1)[0];
    std::istringstream out(py.out);
    if (regression) {
      double score = 0;
      out >> score;
      EXPECT_NEAR(score, expected.score, 1e-5) << py.out;
    } else {
      std::string label;
      double p = 0;
      out >> label >> p;
      EXPECT_EQ(label, task->labels().at(expected.label_id)) << py.out;
      EXPECT_NEAR(p, expected.probabilities.at(expected.label_id), 1e-5) << py.out;
    }
  }
  fs::remove_all(root);
}
