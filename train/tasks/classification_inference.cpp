// ClassificationTask's offers to the CLI: evaluate (loss, accuracy, macro-F1) and the
// TorchScript twin; the SentenceClassifier capability (predict, labels) is in
// classification_task.cpp.
#include "datasets/io.h"
#include "infer/classification_metrics.h"
#include "infer/export_classifier.h"
#include "train/evaluation.h"
#include "train/tasks/classification_task.h"

namespace nlpzoo {

Metrics ClassificationTask::evaluate(Split split, const EvaluationOptions& options) {
  auto m = loss_metrics(*this, split, options.device);
  std::vector<int64_t> predicted;
  for (const auto& p : predict(raw_split(split).sentences, options.device, options.batch_size))
    predicted.push_back(p.label_id);
  const auto scores = classification_scores(gold(split), predicted, labels());
  m.add({"accuracy", scores.accuracy, Better::kHigher, 4, ""});
  m.add({"macro_f1", scores.macro_f1, Better::kHigher, 4, ""});
  m.details = scores.report();
  return m;
}

std::vector<std::string> ClassificationTask::export_torchscript(const std::string& path,
                                                                const std::string& config_ini) {
  auto* average = dynamic_cast<AverageEmbeddingClassifierImpl*>(model_.get());
  if (average == nullptr)
    throw UserError("cannot write " + path +
                    ": the RNN classifiers (arch = rnn) have no TorchScript export yet; arch = avg_emb has one");
  auto extra = artifacts();
  extra["config.ini"] = config_ini;
  export_average_embedding_classifier(path, *average, labels(), extra);
  return {"config.ini", "labels.txt", "spm.model"};
}

}  // namespace nlpzoo
