#include "train/evaluation.h"

#include "train/trainer.h"

namespace nlpzoo {

Metrics loss_metrics(Task& task, Split split, const torch::Device& device, const std::string& count_name,
                     SplitLoss* split_loss) {
  const auto profile = task.training_profile();
  const auto loss = evaluate_loss(task, split, device);
  if (split_loss != nullptr) *split_loss = loss;
  Metrics m;
  m.add({"loss", loss.loss, Better::kLower, 4, profile.loss_unit});
  if (profile.perplexity) m.add({"perplexity", loss.perplexity(), Better::kLower, 2, ""});
  m.add({count_name.empty() ? profile.unit : count_name, static_cast<double>(loss.tokens), Better::kNeither, 0, ""});
  return m;
}

// A task that declares nothing else is scored by its loss per Batch::num_tokens unit.
Metrics Task::evaluate(Split split, const EvaluationOptions& options) {
  return loss_metrics(*this, split, options.device);
}

}  // namespace nlpzoo
