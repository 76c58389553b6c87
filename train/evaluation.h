#pragma once
// The loss-based scores every task's evaluate() starts with (Task::evaluate).
#include <torch/torch.h>

#include <string>

#include "train/metrics.h"
#include "train/task.h"

namespace nlpzoo {

struct SplitLoss;  // train/trainer.h

/// The per-unit loss of `split` (evaluate_loss: the summed loss over the batches' num_tokens,
/// model in eval mode, no gradients) as metrics, in the units the task declares
/// (Task::training_profile): "loss" (lower is better, printed with its loss_unit, e.g.
/// "nats/token"), "perplexity" = exp(loss) where the profile says it is one, and the count of
/// units, named `count_name` or else the profile's unit (e.g. "words").
/// `split_loss`, when given, receives the evaluate_loss result (its metric_sums means, e.g. a
/// masked LM's accuracy), so a task adds them without a second pass over the split.
/// Throws UserError if the split is empty or was not read.
Metrics loss_metrics(Task& task, Split split, const torch::Device& device, const std::string& count_name = "",
                     SplitLoss* split_loss = nullptr);

}  // namespace nlpzoo
