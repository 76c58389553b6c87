#pragma once
// The one training loop. It knows the Task interface and nothing about any model: it owns
// the device, optimizer, learning-rate schedule, gradient accumulation and clipping,
// logging, validation, early stopping, budgets, checkpoints and resume. A task that updates
// its parameters in place (Task::updates_in_place, e.g. word2vec's SGD kernel) gets the
// schedule's rate instead of a backward pass and an optimizer step.
#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

#include "train/config.h"
#include "train/lr_schedule.h"
#include "train/task.h"

namespace nlpzoo {

/// The trainer's config keys (optimizer, clipping, budgets, validation, device, seed).
ConfigSchema trainer_schema();

/// "auto" | "cpu" | "cuda" | "cuda:N". auto picks CUDA when available. Throws UserError
/// for an unknown name or CUDA on a machine without it.
torch::Device parse_device(const std::string& name);

/// Per-token loss over a whole split, model in eval mode, no gradients.
struct SplitLoss {
  double loss = 0;  // nats per token
  int64_t tokens = 0;
  double perplexity() const;
};
SplitLoss evaluate_loss(Task& task, Split split, const torch::Device& device);

/// Scales the gradients of `params` in place so that their global L2 norm
///   ||g|| = sqrt(sum over parameters p and elements i of g_{p,i}^2)
/// is at most `max_norm` (Pascanu et al. 2013): g <- g * max_norm / (||g|| + 1e-6) when
/// ||g|| > max_norm, as torch.nn.utils.clip_grad_norm_. Parameters without a gradient are
/// skipped; max_norm <= 0 scales nothing. Returns ||g|| before clipping (0 with no gradients).
double clip_gradients(const std::vector<torch::Tensor>& params, double max_norm);

class Trainer {
 public:
  /// `task` must be set up. Writes into `run_dir` (created if needed).
  Trainer(Task& task, Config config, std::string task_name, std::string run_dir);

  /// Trains until a budget (max_steps, max_epochs, max_time), early stopping or Ctrl-C.
  /// With `resume`, continues exactly from run_dir/checkpoint_last.pt. Returns 0, or 130
  /// when interrupted (after saving a resumable checkpoint).
  int train(bool resume);

 private:
  void save(const std::string& name);
  std::string saved_config() const;
  // ", config keys changed since the checkpoint: k (old -> new), ..." or "".
  std::string changed_keys(const std::string& checkpoint_ini) const;
  double validate();
  bool budget_reached(double run_elapsed_s) const;

  Task& task_;
  Config config_;
  std::string task_name_, run_dir_;
  torch::Device device_;
  std::shared_ptr<torch::nn::Module> model_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  std::unique_ptr<LrSchedule> schedule_;
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace nlpzoo
