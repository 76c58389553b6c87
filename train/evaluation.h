#pragma once
// The loss-based scores every task's evaluate() starts with (Task::evaluate).
#include <torch/torch.h>

#include <string>

#include "train/metrics.h"
#include "train/task.h"

namespace nlpzoo {

/// The per-unit loss of `split` (evaluate_loss: the summed loss over the batches' num_tokens,
/// model in eval mode, no gradients) as metrics: "loss" (lower is better, printed with
/// `loss_unit`, e.g. "nats/token"), "perplexity" = exp(loss) when `with_perplexity` (for a
/// per-token cross-entropy only), and the count `count_name` (e.g. "target_tokens").
/// Throws UserError if the split is empty or was not read.
Metrics loss_metrics(Task& task, Split split, const torch::Device& device, const std::string& loss_unit,
                     const std::string& count_name, bool with_perplexity);

}  // namespace nlpzoo
