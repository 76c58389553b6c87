// ClassificationTask's offers to the CLI: evaluate (loss, accuracy, macro-F1, MCC; Pearson and Spearman for
// regression) and the
// TorchScript twin; the SentenceClassifier capability (predict, labels) is in
// classification_task.cpp.
#include "core/io.h"
#include "infer/classification_metrics.h"
#include "core/statistics.h"
#include "train/evaluation.h"
#include "train/tasks/classification_task.h"

namespace nlpzoo {

Metrics ClassificationTask::evaluate(Split split, const EvaluationOptions& options) {
  auto m = loss_metrics(*this, split, options.device);
  // The split's inputs as setup encoded them (pairs joined, cut to max_positions).
  const auto predictions = predict_ids(loaded_split(tokens_, split), options.device, options.batch_size);
  if (regression_) {
    std::vector<double> scores;
    for (const auto& p : predictions) scores.push_back(p.score);
    const auto& gold = loaded_split(targets_, split);
    const std::vector<double> targets(gold.begin(), gold.end());
    if (scores.size() < 2) throw UserError("the " + to_string(split) + " split has fewer than 2 examples: no correlation");
    m.add({"pearson", pearson_r(scores, targets), Better::kHigher, 4, ""});
    m.add({"spearman", spearman_rho(scores, targets), Better::kHigher, 4, ""});
    return m;
  }
  std::vector<int64_t> predicted;
  for (const auto& p : predictions) predicted.push_back(p.label_id);
  const auto scores = classification_scores(gold(split), predicted, labels());
  m.add({"accuracy", scores.accuracy, Better::kHigher, 4, ""});
  m.add({"macro_f1", scores.macro_f1, Better::kHigher, 4, ""});
  m.add({"mcc", scores.mcc, Better::kHigher, 4, ""});
  m.details = scores.report();
  return m;
}

std::vector<std::string> ClassificationTask::export_torchscript(const std::string& path,
                                                                const std::string& config_ini) {
  auto extra = artifacts();
  extra["config.ini"] = config_ini;
  model_->export_twin(path, labels(), extra);
  return {"config.ini", "labels.txt", "spm.model"};
}

}  // namespace nlpzoo
