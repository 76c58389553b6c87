#include "train/tasks/word_vector_task.h"

#include "infer/export_word_vectors.h"
#include "train/evaluation.h"

namespace nlpzoo {

Metrics WordVectorTask::evaluate(Split split, const EvaluationOptions& options) {
  auto m = loss_metrics(*this, split, options.device);
  m.details =
      "This is the training objective on held-out data (how well the model predicts what it did not train on),\n"
      "not how good the vectors are. For that: nlpzoo embed eval --run-dir RUN --analogy FILE (or --similarity FILE).\n";
  return m;
}

std::vector<std::string> WordVectorTask::export_torchscript(const std::string& path, const std::string& config_ini) {
  export_word_vectors(path, word_vectors(), {{"config.ini", config_ini}});
  return {"config.ini"};
}

}  // namespace nlpzoo
