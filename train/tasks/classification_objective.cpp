#include "train/tasks/classification_objective.h"

#include <cmath>

#include "core/io.h"
#include "core/statistics.h"
#include "datasets/labeled_text.h"
#include "infer/classification_metrics.h"

namespace nlpzoo {

namespace {

class CrossEntropyObjective : public ClassificationObjective {
 public:
  bool classes() const override { return true; }
  void set_labels(const std::vector<std::string>& labels) override {
    labels_ = labels;
    for (size_t i = 0; i < labels_.size(); ++i) ids_[labels_[i]] = static_cast<int64_t>(i);
  }
  int64_t outputs() const override { return static_cast<int64_t>(labels_.size()); }

  void add_gold(Split split, const std::string& label, const std::string& where) override {
    const auto id = ids_.find(label);
    if (id == ids_.end())
      throw UserError(where + ": unknown label '" + label.substr(0, 80) + "' (the train split's labels: " +
                      label_list(labels_) + ")");
    gold_[split].push_back(id->second);
  }

  void add_targets(Batch& batch, const std::vector<int64_t>& rows) const override {
    const auto& gold = gold_.at(batch.split);
    std::vector<int64_t> labels;
    for (int64_t i : rows) labels.push_back(gold[i]);
    batch.tensors["labels"] = torch::tensor(labels, torch::kInt64);
  }

  LossOutput loss(const torch::Tensor& logits, const Batch& batch, int64_t /*split_size*/,
                  bool statistics) const override {
    const auto& labels = batch.tensors.at("labels");
    auto loss = torch::nn::functional::cross_entropy(
        logits, labels, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum));
    LossOutput out{loss, batch.num_tokens};
    if (statistics) {
      const int64_t C = logits.size(-1);
      out.metric_sums["confusion"] =
          torch::bincount(labels * C + logits.detach().argmax(/*dim=*/-1), /*weights=*/{}, C * C).view({C, C});
    }
    return out;
  }

  std::map<std::string, double> validation_metrics(const std::map<std::string, torch::Tensor>& sums) const override {
    const auto confusion = sums.at("confusion").to(torch::kDouble);
    const int64_t C = confusion.size(0);
    std::vector<std::vector<int64_t>> counts(C, std::vector<int64_t>(C));
    for (int64_t g = 0; g < C; ++g)
      for (int64_t p = 0; p < C; ++p) counts[g][p] = std::llround(confusion[g][p].item<double>());
    const auto scores = scores_from_confusion(counts, labels_);
    std::map<std::string, double> m = {{"accuracy", scores.accuracy}, {"macro_f1", scores.macro_f1}, {"mcc", scores.mcc}};
    if (scores.positive >= 0) m["f1"] = scores.positive_f1();
    return m;
  }

  void describe(Task::TrainingProfile& p) const override {
    p.loss_unit = "nats/sentence";
    p.selection_metrics = {{"accuracy", Better::kHigher}, {"macro_f1", Better::kHigher}, {"mcc", Better::kHigher}};
    if (positive_class(labels_) >= 0) p.selection_metrics.push_back({"f1", Better::kHigher});
    p.best_metric = "accuracy";
  }

  void predict(const torch::Tensor& logits, const std::vector<int64_t>& rows,
               std::vector<ClassPrediction>& out) const override {
    auto probs = torch::softmax(logits, /*dim=*/-1).to(torch::kCPU, torch::kFloat32).contiguous();  // [B, C]
    auto best = probs.argmax(/*dim=*/-1).contiguous();                                            // [B]
    const int64_t C = probs.size(1);
    const float* p = probs.data_ptr<float>();
    const int64_t* b = best.data_ptr<int64_t>();
    for (size_t r = 0; r < rows.size(); ++r) {
      out[rows[r]].probabilities.assign(p + r * C, p + (r + 1) * C);
      out[rows[r]].label_id = b[r];
    }
  }

  void add_metrics(Metrics& m, Split split, const std::vector<ClassPrediction>& predictions) const override {
    std::vector<int64_t> predicted;
    for (const auto& p : predictions) predicted.push_back(p.label_id);
    const auto scores = classification_scores(class_ids(split), predicted, labels_);
    m.add({"accuracy", scores.accuracy, Better::kHigher, 4, ""});
    m.add({"macro_f1", scores.macro_f1, Better::kHigher, 4, ""});
    m.add({"mcc", scores.mcc, Better::kHigher, 4, ""});
    if (scores.positive >= 0) m.add({"f1", scores.positive_f1(), Better::kHigher, 4, ""});
    m.details = scores.report();
  }

  const std::vector<int64_t>& class_ids(Split split) const override { return loaded_split(gold_, split); }

 private:
  std::vector<std::string> labels_;
  std::map<std::string, int64_t> ids_;
  std::map<Split, std::vector<int64_t>> gold_;
};

// A regression label as a number. Throws UserError naming `where` (file:line) otherwise.
double numeric_label(const std::string& label, const std::string& where) {
  double value = 0;
  size_t used = 0;
  try {
    value = std::stod(label, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != label.size() || used == 0 || !std::isfinite(value))
    throw UserError(where + ": label '" + label.substr(0, 80) +
                    "' is not a finite number (objective = regression; label_column)");
  return value;
}

class SquaredErrorObjective : public ClassificationObjective {
 public:
  bool classes() const override { return false; }
  void set_labels(const std::vector<std::string>& /*labels*/) override {}
  int64_t outputs() const override { return 1; }

  void add_gold(Split split, const std::string& label, const std::string& where) override {
    targets_[split].push_back(static_cast<float>(numeric_label(label, where)));
  }

  void add_targets(Batch& batch, const std::vector<int64_t>& rows) const override {
    const auto& gold = targets_.at(batch.split);
    std::vector<float> targets;
    for (int64_t i : rows) targets.push_back(gold[i]);
    batch.tensors["targets"] = torch::tensor(targets, torch::kFloat32);
  }

  LossOutput loss(const torch::Tensor& logits, const Batch& batch, int64_t split_size, bool statistics) const override {
    const auto prediction = logits.squeeze(-1);  // [B]
    const auto& targets = batch.tensors.at("targets");
    auto loss = (prediction - targets.to(prediction.dtype())).pow(2).sum();
    LossOutput out{loss, batch.num_tokens};
    if (statistics) {
      const auto& rows = batch.tensors.at("rows");
      const auto options = torch::TensorOptions(torch::kDouble).device(logits.device());
      out.metric_sums["prediction"] =
          torch::zeros({split_size}, options).index_add(0, rows, prediction.detach().to(torch::kDouble));
      out.metric_sums["target"] = torch::zeros({split_size}, options).index_add(0, rows, targets.to(torch::kDouble));
    }
    return out;
  }

  std::map<std::string, double> validation_metrics(const std::map<std::string, torch::Tensor>& sums) const override {
    const auto values = [&](const char* name) {
      const auto t = sums.at(name).to(torch::kDouble).contiguous();
      return std::vector<double>(t.data_ptr<double>(), t.data_ptr<double>() + t.numel());
    };
    const auto prediction = values("prediction"), target = values("target");
    if (prediction.size() < 2) return {};
    return {{"pearson", pearson_r(prediction, target)}, {"spearman", spearman_rho(prediction, target)}};
  }

  void describe(Task::TrainingProfile& p) const override {
    p.loss_unit = "squared error/sentence";
    p.selection_metrics = {{"pearson", Better::kHigher}, {"spearman", Better::kHigher}};
    p.best_metric = "pearson";
  }

  void predict(const torch::Tensor& logits, const std::vector<int64_t>& rows,
               std::vector<ClassPrediction>& out) const override {
    const auto scores = logits.squeeze(-1).to(torch::kCPU, torch::kDouble).contiguous();  // [B]
    for (size_t r = 0; r < rows.size(); ++r) out[rows[r]].score = scores.data_ptr<double>()[r];
  }

  void add_metrics(Metrics& m, Split split, const std::vector<ClassPrediction>& predictions) const override {
    std::vector<double> scores;
    for (const auto& p : predictions) scores.push_back(p.score);
    const auto& gold = loaded_split(targets_, split);
    const std::vector<double> targets(gold.begin(), gold.end());
    if (scores.size() < 2) throw UserError("the " + to_string(split) + " split has fewer than 2 examples: no correlation");
    m.add({"pearson", pearson_r(scores, targets), Better::kHigher, 4, ""});
    m.add({"spearman", spearman_rho(scores, targets), Better::kHigher, 4, ""});
  }

  const std::vector<int64_t>& class_ids(Split /*split*/) const override {
    throw UserError("objective = regression: the gold values are numbers, not class ids");
  }

 private:
  std::map<Split, std::vector<float>> targets_;
};

}  // namespace

std::vector<std::string> objective_names() { return {"classification", "regression"}; }

std::unique_ptr<ClassificationObjective> make_objective(const std::string& name) {
  if (name == "classification") return std::make_unique<CrossEntropyObjective>();
  if (name == "regression") return std::make_unique<SquaredErrorObjective>();
  throw UserError("unknown objective '" + name + "' (known: classification, regression)");
}

}  // namespace nlpzoo
