// GLUE tasks with the classification task: the TSV layouts of RTE, STS-B and CoLA as they
// ship, sentence pairs (A <eos> B, the longer side cut first), regression (STS-B) with Pearson
// and Spearman, Matthews correlation (CoLA), and validation scores that equal evaluate's.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/io.h"
#include "datasets/labeled_text.h"
#include "datasets/special_ids.h"
#include "infer/classification_metrics.h"
#include "core/statistics.h"
#include "tests/test_util.h"
#include "core/config.h"
#include "train/tasks/classification_task.h"
#include "train/tasks/registry.h"
#include "train/trainer.h"

namespace fs = std::filesystem;
using namespace nlpzoo;
using test::user_error_of;

namespace {

std::string glue(const std::string& file) { return test::shared_data("glue/" + file); }

TsvLayout layout_of(std::vector<std::string> flags) {
  return tsv_layout(Config::resolve(tsv_layout_schema(), "", flags));
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Metrics on known values

// Binary: Matthews' (TP TN - FP FN) / sqrt((TP+FP)(TP+FN)(TN+FP)(TN+FN)).
TEST(GlueMetrics, MatthewsCorrelationOnKnownConfusionMatrices) {
  // rows gold, columns predicted: TN 5, FP 2 / FN 1, TP 4.
  auto s = scores_from_confusion({{5, 2}, {1, 4}}, {"0", "1"});
  EXPECT_NEAR(s.mcc, (4.0 * 5 - 2 * 1) / std::sqrt(6.0 * 5 * 7 * 6), 1e-12);  // 0.507093
  EXPECT_NEAR(s.mcc, 0.5070925528371099, 1e-12);
  // Three classes, R_K: c = 6, s = 10, t = (4, 3, 3), p = (5, 2, 3):
  // (6*10 - 35) / sqrt((100 - 38)(100 - 34)) = 25 / sqrt(4092).
  s = classification_scores({0, 0, 0, 0, 1, 1, 1, 2, 2, 2}, {0, 0, 0, 1, 0, 1, 2, 0, 2, 2}, {"a", "b", "c"});
  EXPECT_NEAR(s.mcc, 25 / std::sqrt(4092.0), 1e-12);
  EXPECT_NE(s.report().find("| MCC 0.3908"), std::string::npos) << s.report();
  // Perfect, inverted, and one class always predicted (undefined: 0, as scikit-learn).
  EXPECT_NEAR(scores_from_confusion({{3, 0}, {0, 2}}, {"0", "1"}).mcc, 1.0, 1e-12);
  EXPECT_NEAR(scores_from_confusion({{0, 3}, {2, 0}}, {"0", "1"}).mcc, -1.0, 1e-12);
  EXPECT_EQ(scores_from_confusion({{3, 0}, {2, 0}}, {"0", "1"}).mcc, 0.0);
  EXPECT_THROW(scores_from_confusion({{1, 0}}, {"0", "1"}), std::invalid_argument);
  EXPECT_THROW(scores_from_confusion({{0, 0}, {0, 0}}, {"0", "1"}), std::invalid_argument);
}

// The regression task's scores are core/statistics.h's pearson_r and spearman_rho (tested
// there too); here on STS-B-like values with ties.
TEST(GlueMetrics, PearsonAndSpearmanWithTies) {
  const std::vector<double> x = {1, 2, 3, 4, 5}, y = {2, 4, 5, 4, 5};
  // Centred: dx = (-2 -1 0 1 2), dy = (-2 0 1 0 1): r = 6 / sqrt(10 * 6).
  EXPECT_NEAR(pearson_r(x, y), 6 / std::sqrt(60.0), 1e-12);
  // Average ranks of y: 2 -> 1, the 4s -> 2.5, the 5s -> 4.5; rho = r of the ranks:
  // d = (-2 -1 0 1 2) and (-2 -0.5 1.5 -0.5 1.5): 7 / sqrt(10 * 9) (scipy.stats.spearmanr: 0.7378647873726218).
  EXPECT_EQ(average_ranks(y), (std::vector<double>{1, 2.5, 4.5, 2.5, 4.5}));
  EXPECT_NEAR(spearman_rho(x, y), 7 / std::sqrt(90.0), 1e-12);
  // Monotone but not linear: rho 1, r below 1.
  const std::vector<double> cube = {1, 8, 27, 64, 125};
  EXPECT_NEAR(spearman_rho(x, cube), 1.0, 1e-12);
  EXPECT_LT(pearson_r(x, cube), 0.99);
}

// ---------------------------------------------------------------------------------------------
// GLUE's files as they ship (../shared/data/glue/README.md)

TEST(GlueFiles, RteAndStsbByHeaderNames) {
  const auto rte = glue("RTE/dev.tsv"), stsb = glue("STSB/dev.tsv");
  NLPZOO_REQUIRE_SHARED_FILES(rte, stsb);
  const auto r = read_labeled_text(rte, layout_of({"--tsv_columns", "4", "--text_column", "sentence1", "--text_b_column",
                                                   "sentence2", "--label_column", "label"}));
  ASSERT_EQ(r.sentences.size(), 277u);
  ASSERT_EQ(r.sentences_b.size(), 277u);
  EXPECT_EQ(r.sentences_b.front(), "Christopher Reeve had an accident.");
  EXPECT_EQ(r.labels.front(), "not_entailment");
  EXPECT_EQ(std::count(r.labels.begin(), r.labels.end(), "entailment"), 146);
  EXPECT_EQ(r.lines.front(), 2);
  // Fields that begin with a quote are read as they are (quoting off).
  const auto s = read_labeled_text(stsb, layout_of({"--tsv_columns", "10", "--text_column", "sentence1",
                                                    "--text_b_column", "sentence2", "--label_column", "score"}));
  ASSERT_EQ(s.sentences.size(), 1500u);
  EXPECT_EQ(s.sentences.front(), "A man with a hard hat is dancing.");
  EXPECT_EQ(s.sentences_b.front(), "A man wearing a hard hat is dancing.");
  EXPECT_EQ(s.labels.front(), "5.000");
  // By index the same columns read the same (the header is then skipped by tsv_header = true).
  const auto by_index = read_labeled_text(stsb, layout_of({"--tsv_columns", "10", "--text_column", "7",
                                                           "--text_b_column", "8", "--label_column", "9",
                                                           "--tsv_header", "true"}));
  EXPECT_EQ(by_index.sentences_b, s.sentences_b);
  EXPECT_EQ(by_index.labels, s.labels);
}

// A layout that does not fit the file: the error names the file, the line and the keys.
TEST(GlueFiles, MismatchedLayoutsNameFileLineAndKeys) {
  const auto rte = glue("RTE/dev.tsv"), stsb = glue("STSB/dev.tsv"), cola = glue("CoLA/dev.tsv");
  NLPZOO_REQUIRE_SHARED_FILES(rte, stsb, cola);
  const auto rte_layout = layout_of({"--tsv_columns", "4", "--text_column", "sentence1", "--text_b_column", "sentence2",
                                     "--label_column", "label"});
  auto e = user_error_of([&] { read_labeled_text(stsb, rte_layout); });
  EXPECT_NE(e.find(stsb + ":1: 10 tab-separated field(s), but the layout has 4"), std::string::npos) << e;
  for (const char* key : {"tsv_columns", "text_column", "text_b_column", "label_column"})
    EXPECT_NE(e.find(key), std::string::npos) << key << ": " << e;
  // CoLA has no header: a named column finds none on line 1, and says what line 1 holds.
  e = user_error_of([&] { read_labeled_text(cola, rte_layout); });
  EXPECT_NE(e.find(cola + ":1: the header line has no column 'sentence1' (config key text_column)"),
            std::string::npos) << e;
  // The known bug: tsv_columns alone used to train on field 0 (CoLA's source code, "gj04").
  e = user_error_of([&] { layout_of({"--tsv_columns", "4"}); });
  EXPECT_NE(e.find("config key 'text_column'"), std::string::npos) << e;
  e = user_error_of([&] { layout_of({"--tsv_columns", "4", "--text_column", "3"}); });
  EXPECT_NE(e.find("config key 'label_column'"), std::string::npos) << e;
  e = user_error_of([&] { layout_of({"--text_column", "sentence", "--tsv_header", "false"}); });
  EXPECT_NE(e.find("config key 'text_column'"), std::string::npos) << e;
  e = user_error_of([&] { layout_of({"--text_b_column", "1"}); });
  EXPECT_NE(e.find("config key 'text_b_column'"), std::string::npos) << e;
  // CoLA read as it is: no header, no final newline, every one of its 1,043 rows.
  const auto c = read_labeled_text(cola, layout_of({"--tsv_columns", "4", "--text_column", "3", "--label_column", "1",
                                                    "--tsv_header", "false"}));
  EXPECT_EQ(c.sentences.size(), 1043u);
  EXPECT_TRUE(c.sentences_b.empty());
}

// ---------------------------------------------------------------------------------------------
// The task: pairs and regression

namespace {

class GlueTask : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::fresh_temp_dir(::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_ / "data");
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  void write_data(const std::string& train, const std::string& dev) {
    atomic_write_text(path("data/train.tsv"), train);
    atomic_write_text(path("data/dev.tsv"), dev);
  }
  std::unique_ptr<ClassificationTask> make(std::vector<std::string> overrides, const std::string& run = "run") {
    std::vector<std::string> all = {"--task", "classification", "--vocab_size", "60", "--spm_model_type", "word",
                                    "--embed_dim", "8", "--hidden_size", "8", "--dropout", "0", "--device", "cpu"};
    all.insert(all.end(), overrides.begin(), overrides.end());
    config_ = Config::resolve(task_schema("classification"), "", all);
    auto task = std::make_unique<ClassificationTask>();
    task->setup(config_, {path("data"), path(run), {Split::kTrain, Split::kValid}, /*resume=*/false});
    return task;
  }
  std::vector<nlohmann::json> validations(const std::string& run) {
    std::vector<nlohmann::json> out;
    for (const auto& line : read_lines(path(run + "/metrics.jsonl"))) {
      auto record = nlohmann::json::parse(line);
      if (record.contains("valid_loss")) out.push_back(record);
    }
    return out;
  }
  fs::path dir_;
  Config config_;
};

// RTE-like: index, sentence1, sentence2, label.
const char* kPairs =
    "index\tsentence1\tsentence2\tlabel\n"
    "0\tthe cat sat on the mat\ta cat sat\tentailment\n"
    "1\tthe dog ran in the park\ta cat sat\tnot_entailment\n"
    "2\ta bird sang\ta bird sang loudly today\tnot_entailment\n"
    "3\tthe dog ran\tthe dog ran\tentailment\n";

// STS-B-like: pairs with a similarity score.
const char* kScores =
    "sentence1\tsentence2\tscore\n"
    "a man is dancing\ta man is dancing\t5.000\n"
    "a man is dancing\ta woman is dancing\t3.500\n"
    "a cat sat\ta dog ran\t0.400\n"
    "the dog ran\ta dog ran\t4.200\n"
    "a bird sang\tthe cat sat\t0.000\n"
    "a woman is singing\ta woman sang\t3.800\n";

std::vector<std::string> pair_flags() {
  return {"--tsv_columns", "4", "--text_column", "sentence1", "--text_b_column", "sentence2", "--label_column", "label"};
}

}  // namespace

// A pair is A <eos> B; with too few positions the longer side loses pieces first (B on a tie).
TEST_F(GlueTask, PairInputIsAEosBAndTheLongerSideIsCutFirst) {
  write_data(kPairs, kPairs);
  auto task = make(pair_flags());
  EXPECT_TRUE(task->pair_input());
  const auto& tok = task->tokenizer();
  const auto a = tok.encode("the cat sat on the mat"), b = tok.encode("a cat sat");
  ASSERT_EQ(a.size(), 6u);
  ASSERT_EQ(b.size(), 3u);
  std::vector<int64_t> joined = a;
  joined.push_back(kEosId);
  joined.insert(joined.end(), b.begin(), b.end());
  const std::string sb = "a cat sat";
  EXPECT_EQ(task->encode("the cat sat on the mat", &sb), joined);
  auto batch = task->make_batch(Split::kTrain, 0, 0);
  EXPECT_EQ(batch.tensors.at("tokens").size(0), 4);
  EXPECT_EQ(batch.tensors.at("rows").numel(), 4);

  // max_positions 7 leaves 6 pieces beside <eos>: A loses pieces (6, 3) -> (5, 3) -> (4, 3) -> (3, 3).
  auto short_task = make([] {
    auto f = pair_flags();
    f.insert(f.end(), {"--max_positions", "7"});
    return f;
  }(), "run7");
  bool was_cut = false;
  auto ids = short_task->encode("the cat sat on the mat", &sb, &was_cut);
  EXPECT_TRUE(was_cut);
  std::vector<int64_t> expected(a.begin(), a.begin() + 3);
  expected.push_back(kEosId);
  expected.insert(expected.end(), b.begin(), b.end());
  EXPECT_EQ(ids, expected);
  // A tie (3 and 3 with room for 4) cuts B, then A: (3, 3) -> (3, 2) -> (2, 2).
  auto tiny = make([] {
    auto f = pair_flags();
    f.insert(f.end(), {"--max_positions", "5"});
    return f;
  }(), "run5");
  const std::string same = "the dog ran";
  ids = tiny->encode("a bird sang", &same, &was_cut);
  const auto x = tok.encode("a bird sang"), y = tok.encode("the dog ran");
  EXPECT_EQ(ids, (std::vector<int64_t>{x[0], x[1], kEosId, y[0], y[1]}));
  EXPECT_EQ(ids.size(), 5u);
  // predict takes "A<TAB>B"; a line without the tab is an error naming the input.
  const auto p = task->predict({"the cat sat on the mat\ta cat sat"}, torch::kCPU, 4);
  EXPECT_EQ(p.size(), 1u);
  const auto e = user_error_of([&] { task->predict({"one sentence only"}, torch::kCPU, 4); });
  EXPECT_NE(e.find("input 1"), std::string::npos) << e;
  EXPECT_NE(e.find("tab"), std::string::npos) << e;
}

// Validation's accuracy, macro-F1 and MCC (from summed confusion matrices) equal evaluate's
// (from predict), and best_metric = auto chooses by accuracy.
TEST_F(GlueTask, ClassificationValidationScoresEqualEvaluate) {
  write_data(kPairs, kPairs);
  torch::manual_seed(5);
  auto flags = pair_flags();
  flags.insert(flags.end(), {"--arch", "avg_emb", "--lr", "0.05", "--max_steps", "4", "--valid_interval", "2",
                             "--log_interval", "100", "--max_sentences", "2"});
  auto task = make(flags);
  ASSERT_EQ(Trainer(*task, config_, "classification", path("run")).train(false), 0);
  const auto records = validations("run");
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records.back()["best_metric"], "accuracy");
  const auto m = task->evaluate(Split::kValid, {});
  EXPECT_NEAR(records.back()["valid_accuracy"].get<double>(), m.at("accuracy").value, 1e-12);
  EXPECT_NEAR(records.back()["valid_macro_f1"].get<double>(), m.at("macro_f1").value, 1e-12);
  EXPECT_NEAR(records.back()["valid_mcc"].get<double>(), m.at("mcc").value, 1e-12);
  EXPECT_NEAR(records.back()["valid_loss"].get<double>(), m.at("loss").value, 1e-6);
}

// STS-B-like regression: one output, squared error; it fits six pairs, and validation's
// Pearson and Spearman (from predictions scattered by row) equal evaluate's.
TEST_F(GlueTask, RegressionFitsScoresAndReportsCorrelations) {
  write_data(kScores, kScores);
  torch::manual_seed(6);
  auto task = make({"--objective", "regression", "--text_column", "sentence1", "--text_b_column", "sentence2",
                    "--tsv_columns", "3", "--label_column", "score", "--arch", "rnn", "--optimizer", "adam",
                    "--lr", "0.03", "--max_steps", "150", "--valid_interval", "50", "--log_interval", "1000",
                    "--clip_norm", "0"});
  EXPECT_TRUE(task->labels().empty());
  EXPECT_FALSE(fs::exists(path("run/labels.txt")));
  const auto batch = task->make_batch(Split::kTrain, 0, 0);
  EXPECT_EQ(batch.tensors.at("targets").scalar_type(), torch::kFloat32);
  ASSERT_EQ(Trainer(*task, config_, "classification", path("run")).train(false), 0);
  const auto records = validations("run");
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records.back()["best_metric"], "pearson");
  const auto m = task->evaluate(Split::kValid, {});
  EXPECT_LT(m.at("loss").value, 0.05) << m.line();  // squared error per pair
  EXPECT_GT(m.at("pearson").value, 0.99) << m.line();
  EXPECT_NEAR(records.back()["valid_pearson"].get<double>(), m.at("pearson").value, 1e-9);
  EXPECT_NEAR(records.back()["valid_spearman"].get<double>(), m.at("spearman").value, 1e-9);
  // predict gives the scores; they are the evaluation's.
  const auto p = task->predict({"a man is dancing\ta man is dancing", "a bird sang\tthe cat sat"}, torch::kCPU, 2);
  EXPECT_NEAR(p[0].score, 5.0, 0.5);
  EXPECT_NEAR(p[1].score, 0.0, 0.5);
  EXPECT_TRUE(p[0].probabilities.empty());
}

TEST_F(GlueTask, BadRegressionLabelAndUnknownBestMetric) {
  write_data(kScores, std::string(kScores) + "a\tb\tvery similar\n");
  auto e = user_error_of([&] {
    make({"--objective", "regression", "--text_column", "sentence1", "--text_b_column", "sentence2", "--tsv_columns",
          "3", "--label_column", "score"});
  });
  EXPECT_NE(e.find(path("data/dev.tsv") + ":8: label 'very similar' is not a finite number"), std::string::npos) << e;
  write_data(kPairs, kPairs);
  auto task = make(pair_flags());
  Config c = config_;
  c.set("best_metric", "pearson");
  e = user_error_of([&] { Trainer(*task, c, "classification", path("run")); });
  EXPECT_NE(e.find("config key 'best_metric'"), std::string::npos) << e;
  EXPECT_NE(e.find("loss, accuracy, macro_f1, mcc"), std::string::npos) << e;
}
