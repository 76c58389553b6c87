// Model selection by a task-declared validation score (config key best_metric): which step
// checkpoint_best.pt holds, patience, exact resume, old checkpoints and the error for a
// metric the task does not report.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/io.h"
#include "tests/test_util.h"
#include "train/checkpoint.h"
#include "train/trainer.h"

using namespace nlpzoo;
namespace fs = std::filesystem;

namespace {

// One scalar parameter w (starting at 0). A training batch's loss is w per example, so SGD at
// lr 1 with the per-unit mean makes w = -step exactly. A validation reads the step from w and
// reports scripted scores, so that the loss and the accuracy disagree about the best step:
//   step      1     2     3     4     5     6
//   loss      1.0   0.8   0.9   0.7   1.2   1.3   (best: step 4)
//   accuracy  0.50  0.60  0.90  0.70  0.95  0.40  (best: step 5)
class ScriptedTask : public Task {
 public:
  static constexpr double kLoss[] = {9.0, 1.0, 0.8, 0.9, 0.7, 1.2, 1.3};
  static constexpr double kAccuracy[] = {0.0, 0.50, 0.60, 0.90, 0.70, 0.95, 0.40};
  static constexpr int64_t kRows = 4;

  void setup(Config&, const TaskContext&) override {
    model_ = std::make_shared<torch::nn::Module>();
    w_ = model_->register_parameter("w", torch::zeros({}));
  }
  std::shared_ptr<torch::nn::Module> model() override { return model_; }
  int64_t num_batches(Split split, int64_t) override { return split == Split::kTrain ? 3 : 1; }
  Batch make_batch(Split split, int64_t, int64_t index) override {
    Batch b;
    b.split = split;
    b.index = index;
    b.num_examples = b.num_tokens = kRows;
    b.tensors = {{"x", torch::ones({kRows})}};
    return b;
  }
  LossOutput loss(const Batch& b) override {
    if (b.split == Split::kTrain) return {w_ * b.tensors.at("x").sum(), b.num_tokens};
    const auto step = static_cast<int64_t>(std::lround(-w_.item<double>()));
    const auto n = static_cast<double>(kRows);
    return {torch::tensor(kLoss[step] * n, torch::kDouble), b.num_tokens,
            {{"accuracy", torch::tensor(kAccuracy[step] * n, torch::kDouble)}}};
  }
  TrainingProfile training_profile() const override {
    TrainingProfile p;
    p.unit = "sentences";
    p.perplexity = false;
    p.selection_metrics = {{"accuracy", Better::kHigher}};
    p.best_metric = "accuracy";
    return p;
  }

 private:
  std::shared_ptr<torch::nn::Module> model_;
  torch::Tensor w_;
};

Config scripted_config(int64_t max_steps, const std::string& best_metric, int64_t patience = 0) {
  return Config::resolve(trainer_schema(), "",
                         {"--optimizer", "sgd", "--lr", "1", "--clip_norm", "0", "--device", "cpu", "--log_interval",
                          "1000", "--valid_interval", "1", "--max_steps", std::to_string(max_steps), "--best_metric",
                          best_metric, "--patience", std::to_string(patience)});
}

int64_t train_scripted(const std::string& dir, int64_t max_steps, const std::string& best_metric, bool resume = false,
                       int64_t patience = 0) {
  Config c = scripted_config(max_steps, best_metric, patience);
  ScriptedTask task;
  task.setup(c, {});
  return Trainer(task, c, "scripted", dir).train(resume);
}

TrainingState state_of(const std::string& path) { return read_checkpoint_header(path).state; }

}  // namespace

// The accuracy-best step (5) is kept, not the loss-best (4); "auto" takes the task's choice.
TEST(BestMetric, AccuracyChoosesAnotherStepThanLoss) {
  for (const std::string metric : {"accuracy", "auto"}) {
    const auto dir = test::fresh_temp_dir("best_accuracy").string();
    ASSERT_EQ(train_scripted(dir, 6, metric), 0);
    const auto best = state_of(dir + "/checkpoint_best.pt");
    EXPECT_EQ(best.step, 5) << metric;
    EXPECT_EQ(best.best_metric, "accuracy");
    EXPECT_NEAR(best.best_value, 0.95, 1e-12);
    const auto last = state_of(dir + "/checkpoint_last.pt");
    EXPECT_EQ(last.step, 6);
    EXPECT_EQ(last.bad_validations, 1);
    EXPECT_NEAR(last.best_value, 0.95, 1e-12);
    EXPECT_NEAR(last.best_valid_loss, 0.7, 1e-12);  // the lowest loss is still known
    // metrics.jsonl names the metric and marks steps 1, 2, 3, 5 as new bests.
    std::vector<int64_t> best_steps;
    for (const auto& line : read_lines(dir + "/metrics.jsonl")) {
      const auto record = nlohmann::json::parse(line);
      if (!record.contains("valid_loss")) continue;
      EXPECT_EQ(record["best_metric"], "accuracy");
      if (record["best"].get<bool>()) best_steps.push_back(record["step"]);
    }
    EXPECT_EQ(best_steps, (std::vector<int64_t>{1, 2, 3, 5}));
    fs::remove_all(dir);
  }
  // By the loss the best is step 4, and the checkpoint keeps the bytes of before best_metric.
  const auto dir = test::fresh_temp_dir("best_loss").string();
  ASSERT_EQ(train_scripted(dir, 6, "loss"), 0);
  const auto best = state_of(dir + "/checkpoint_best.pt");
  EXPECT_EQ(best.step, 4);
  EXPECT_EQ(best.best_metric, "loss");
  EXPECT_NEAR(best.best_value, 0.7, 1e-12);
  EXPECT_EQ(state_of(dir + "/checkpoint_last.pt").bad_validations, 2);
  fs::remove_all(dir);
}

// Patience counts validations without a better accuracy: 0.90 at step 3, then 0.70 at step 4
// and patience 1 stops there, although the loss improved at step 4.
TEST(BestMetric, PatienceCountsTheChosenMetric) {
  const auto dir = test::fresh_temp_dir("best_patience").string();
  ASSERT_EQ(train_scripted(dir, 6, "accuracy", false, /*patience=*/1), 0);
  const auto last = state_of(dir + "/checkpoint_last.pt");
  EXPECT_EQ(last.step, 4);
  EXPECT_EQ(last.bad_validations, 1);
  EXPECT_EQ(state_of(dir + "/checkpoint_best.pt").step, 3);
  fs::remove_all(dir);
}

// Stopped after step 5 (the best) and resumed to 6: the same state as one run, the best value
// read back exactly from the checkpoint.
TEST(BestMetric, ResumeKeepsTheBestValue) {
  const auto once = test::fresh_temp_dir("best_once").string(), twice = test::fresh_temp_dir("best_twice").string();
  ASSERT_EQ(train_scripted(once, 6, "accuracy"), 0);
  ASSERT_EQ(train_scripted(twice, 5, "accuracy"), 0);
  const auto stopped = state_of(twice + "/checkpoint_last.pt");
  EXPECT_EQ(stopped.best_metric, "accuracy");
  EXPECT_EQ(stopped.best_value, state_of(once + "/checkpoint_best.pt").best_value);
  ASSERT_EQ(train_scripted(twice, 6, "accuracy", /*resume=*/true), 0);
  const auto a = state_of(once + "/checkpoint_last.pt"), b = state_of(twice + "/checkpoint_last.pt");
  EXPECT_EQ(b.step, 6);
  EXPECT_EQ(a.best_value, b.best_value);  // exactly
  EXPECT_EQ(a.best_valid_loss, b.best_valid_loss);
  EXPECT_EQ(a.bad_validations, b.bad_validations);
  EXPECT_EQ(state_of(twice + "/checkpoint_best.pt").step, 5);  // step 6 (0.40) did not replace it
  fs::remove_all(once);
  fs::remove_all(twice);
}

// A run whose checkpoint chose by the loss (as every checkpoint before best_metric did),
// resumed with best_metric = accuracy: the best starts over, chosen among steps 4-6 by accuracy.
TEST(BestMetric, ResumeWithAnotherMetricStartsTheBestOver) {
  const auto dir = test::fresh_temp_dir("best_switch").string();
  ASSERT_EQ(train_scripted(dir, 3, "loss"), 0);
  EXPECT_EQ(state_of(dir + "/checkpoint_best.pt").step, 2);
  ASSERT_EQ(train_scripted(dir, 6, "accuracy", /*resume=*/true), 0);
  const auto best = state_of(dir + "/checkpoint_best.pt");
  EXPECT_EQ(best.step, 5);
  EXPECT_EQ(best.best_metric, "accuracy");
  EXPECT_NEAR(best.best_value, 0.95, 1e-12);
  fs::remove_all(dir);
}

// An unknown best_metric fails before training, naming the key and the metrics there are.
TEST(BestMetric, UnknownMetricNamesTheKeyAndTheTasksMetrics) {
  const auto dir = test::fresh_temp_dir("best_unknown").string();
  const auto message = test::user_error_of([&] { train_scripted(dir, 6, "bleu"); });
  EXPECT_NE(message.find("config key 'best_metric'"), std::string::npos) << message;
  EXPECT_NE(message.find("'bleu'"), std::string::npos) << message;
  EXPECT_NE(message.find("loss, accuracy"), std::string::npos) << message;
  EXPECT_FALSE(fs::exists(dir + "/checkpoint_last.pt"));
  fs::remove_all(dir);
}

// The state's best_metric and best_value round trip; a loss-chosen state writes neither, so
// its JSON is the one checkpoints had before best_metric (the golden files pin those bytes).
TEST(BestMetric, CheckpointStateRoundTrip) {
  const auto dir = test::fresh_temp_dir("best_state").string();
  auto model = torch::nn::Linear(2, 1);
  for (const std::string metric : {"loss", "mcc"}) {
    CheckpointContents contents;
    contents.task = "scripted";
    contents.state.best_valid_loss = 0.25;
    contents.state.best_metric = metric;
    contents.state.best_value = metric == "loss" ? 0.25 : -0.125;
    save_checkpoint(dir + "/c.pt", *model, nullptr, contents);
    const auto s = state_of(dir + "/c.pt");
    EXPECT_EQ(s.best_metric, metric);
    EXPECT_EQ(s.best_value, contents.state.best_value);
    EXPECT_EQ(s.best_valid_loss, 0.25);
  }
  fs::remove_all(dir);
}
