// LanguageModelTask's offers to the CLI: evaluate (loss, perplexity) and the TorchScript twin;
// the TextGenerator capability is in the header.
#include "infer/export_lm.h"
#include "train/evaluation.h"
#include "train/tasks/language_model_task.h"

namespace nlpzoo {

Metrics LanguageModelTask::evaluate(Split split, const EvaluationOptions& options) {
  return loss_metrics(*this, split, options.device);
}

std::vector<std::string> LanguageModelTask::export_torchscript(const std::string& path, const std::string& config_ini) {
  export_language_model(path, *model_, {{"config.ini", config_ini}, {"spm.model", tokenizer().serialized()}});
  return {"config.ini", "spm.model"};
}

}  // namespace nlpzoo
