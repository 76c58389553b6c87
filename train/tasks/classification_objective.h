#pragma once
// What a ClassificationTask learns to predict, as a strategy: its gold values, its loss and
// its metrics. The task (data, inputs, batching) and the architecture are the same for both.
//   classification: labels are the train split's classes; cross-entropy; accuracy, macro-F1, MCC
//   regression (STS-B): labels are numbers, one output; squared error; Pearson, Spearman
#include <torch/torch.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "train/evaluation.h"
#include "train/task.h"
#include "train/tasks/sentence_classifier.h"

namespace nlpzoo {

class ClassificationObjective {
 public:
  virtual ~ClassificationObjective() = default;
  /// Whether labels name classes (the train split's) rather than numbers.
  virtual bool classes() const = 0;
  /// The class names (classes() only), before any add_gold.
  virtual void set_labels(const std::vector<std::string>& labels) = 0;
  /// Model outputs: the classes, or 1 score.
  virtual int64_t outputs() const = 0;
  /// Appends one example's gold value to `split` from its raw label. Throws UserError naming
  /// `where` (file:line) for a label outside the classes or not a finite number.
  virtual void add_gold(Split split, const std::string& label, const std::string& where) = 0;
  /// The batch's gold tensor of examples `rows` of batch.split: "labels" [B] int64 (class ids)
  /// or "targets" [B] float.
  virtual void add_targets(Batch& batch, const std::vector<int64_t>& rows) const = 0;
  /// Summed loss of logits [B, C]; with `statistics`, metric_sums: "confusion" [C, C] (gold x
  /// predicted counts) or "prediction" and "target" [split_size] (each example's value at its
  /// row of the split, so that sums over batches and shards stay exact).
  virtual LossOutput loss(const torch::Tensor& logits, const Batch& batch, int64_t split_size, bool statistics) const = 0;
  virtual std::map<std::string, double> validation_metrics(const std::map<std::string, torch::Tensor>& sums) const = 0;
  /// loss_unit, selection metrics and the best one.
  virtual void describe(Task::TrainingProfile& profile) const = 0;
  /// Sets out[rows[r]] from row r of logits [B, C] (probabilities and class, or the score).
  virtual void predict(const torch::Tensor& logits, const std::vector<int64_t>& rows,
                       std::vector<ClassPrediction>& out) const = 0;
  /// evaluate's metrics of `predictions` of the whole of `split` (details included).
  virtual void add_metrics(Metrics& metrics, Split split, const std::vector<ClassPrediction>& predictions) const = 0;
  /// Gold class ids of a split. Throws UserError for regression or a split not read.
  virtual const std::vector<int64_t>& class_ids(Split split) const = 0;
};

/// "classification" or "regression" (the objective key's choices, in that order).
std::vector<std::string> objective_names();
/// Throws UserError for another name.
std::unique_ptr<ClassificationObjective> make_objective(const std::string& name);

}  // namespace nlpzoo
