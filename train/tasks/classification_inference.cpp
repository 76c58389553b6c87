// ClassificationTask's offers to the CLI: evaluate (loss, accuracy, macro-F1, MCC; Pearson and Spearman for
// regression) and the
// TorchScript twin; the SentenceClassifier capability (predict, labels) is in
// classification_task.cpp.
#include "core/io.h"
#include "datasets/wordpiece_model.h"
#include "train/evaluation.h"
#include "train/tasks/classification_task.h"

namespace nlpzoo {

Metrics ClassificationTask::evaluate(Split split, const EvaluationOptions& options) {
  auto m = loss_metrics(*this, split, options.device);
  // The split's inputs as setup encoded them (pairs joined, cut to max_positions).
  const auto predictions = predict_ids(loaded_split(tokens_, split), options.device, options.batch_size);
  objective_->add_metrics(m, split, predictions);
  return m;
}

std::vector<std::string> ClassificationTask::export_torchscript(const std::string& path,
                                                                const std::string& config_ini) {
  auto extra = artifacts();
  for (const auto& [name, bytes] : tokenizer_export_files(*tokenizer_)) extra[name] = bytes;
  extra["config.ini"] = config_ini;
  model_->export_twin(path, labels(), extra);
  std::vector<std::string> names;
  for (const auto& [name, bytes] : extra) names.push_back(name);
  return names;
}

}  // namespace nlpzoo
