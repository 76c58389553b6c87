#include "train/evaluation.h"

#include "train/trainer.h"

namespace nlpzoo {

Metrics loss_metrics(Task& task, Split split, const torch::Device& device, const std::string& loss_unit,
                     const std::string& count_name, bool with_perplexity) {
  const auto loss = evaluate_loss(task, split, device);
  Metrics m;
  m.add({"loss", loss.loss, Better::kLower, 4, loss_unit});
  if (with_perplexity) m.add({"perplexity", loss.perplexity(), Better::kLower, 2, ""});
  m.add({count_name, static_cast<double>(loss.tokens), Better::kNeither, 0, ""});
  return m;
}

// A task that declares nothing else is scored by its loss per Batch::num_tokens unit.
Metrics Task::evaluate(Split split, const EvaluationOptions& options) {
  return loss_metrics(*this, split, options.device, "nats/token", "tokens", /*with_perplexity=*/false);
}

}  // namespace nlpzoo
