#pragma once
// The one training loop. It knows the Task interface and nothing about any model: it owns
// the device, optimizer, learning-rate schedule, gradient accumulation and clipping,
// logging, validation, early stopping, budgets, checkpoints and resume. A task that updates
// its parameters in place (Task::updates_in_place, e.g. word2vec's SGD kernel) gets the
// schedule's rate instead of a backward pass and an optimizer step.
#include <torch/torch.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "train/checkpoint.h"
#include "core/config.h"
#include "core/options.h"
#include "core/precision.h"
#include "train/lr_schedule.h"
#include "train/task.h"

namespace nlpzoo {

/// The optimizer and its settings (make_optimizer). The learning rate is the schedule's.
struct OptimizerOptions {
  std::string optimizer = "adam";
  double adam_beta1 = 0.9, adam_beta2 = 0.999, adam_eps = 1e-8;
  double weight_decay = 0;
  double momentum = 0;
  double adagrad_initial_accumulator = 0;
  void bind(OptionBinder& b);
};

/// The budgets of one invocation (Trainer::keep_budgets); 0 = no limit.
struct BudgetOptions {
  int64_t max_epochs = 0;
  int64_t max_steps = 0;
  double max_time = 0;  // minutes
  void bind(OptionBinder& b);
};

/// The Trainer's keys (every task has them): the optimizer, clipping, budgets, validation,
/// device and seed, the learning-rate schedule and the forward pass's precision. Each value is
/// checked as it is read (bind_options); the Trainer resolves the schedule's derived keys in its copy.
struct TrainerOptions {
  std::string task = "translation";
  OptimizerOptions optimizer;
  double clip_norm = 1.0;
  int64_t update_freq = 1;
  int64_t seed = 1234;
  BudgetOptions budget;
  int64_t valid_interval = 500;
  int64_t log_interval = 50;
  double log_seconds = 30;
  int64_t patience = 0;
  int64_t keep_last = 0;
  std::string best_metric = "auto";
  std::string device = "auto";
  std::string data_dir = "data/bible";
  LrScheduleOptions schedule;
  PrecisionOptions precision;
  void bind(OptionBinder& b);
};

/// The trainer's config keys (TrainerOptions).
ConfigSchema trainer_schema();

/// Reads and checks the Trainer's own keys (trainer_schema(): optimizer settings, learning
/// rate and schedule, clipping, budgets, intervals, device, precision) without building anything,
/// so that a bad value fails before a task's slow setup (tokenizer training, corpus reading).
/// Throws UserError("config key 'k': ...") naming the first bad key: a NaN, infinite or
/// negative lr or clip_norm, update_freq < 1, valid_interval < 0, ...; and for a device or
/// precision this machine does not have.
TrainerOptions check_trainer_config(const Config& config);

/// "auto" | "cpu" | "cuda" | "cuda:N". auto picks CUDA when available. Throws UserError
/// for an unknown name or CUDA on a machine without it.
torch::Device parse_device(const std::string& name);

/// Per-unit loss over a whole split (units: Task::TrainingProfile::unit), model in eval mode,
/// no gradients; one read-back from the device at the end.
struct SplitLoss {
  double loss = 0;  // nats per unit
  int64_t tokens = 0;    // units
  int64_t examples = 0;
  std::map<std::string, double> metrics;  // Task::validation_metrics of the split's summed metric_sums (e.g. accuracy)
  double perplexity() const;
};
/// The part of a split that evaluate_loss reads, for validation sharded over data-parallel
/// ranks (train/data_parallel.h): the batches i with i % count == index. `reduce`, when set,
/// sums the shard's float64 sums [loss, units, examples, metric sums flattened in name order]
/// (a 1-D tensor on the device) over the shards in place before they are divided; every shard
/// must then read at least one batch, so that the sums have one layout.
struct EvaluationShard {
  int64_t index = 0, count = 1;
  std::function<void(torch::Tensor&)> reduce;
};
SplitLoss evaluate_loss(Task& task, Split split, const torch::Device& device, const EvaluationShard& shard = {});

/// The optimizer `options` names, at rate `lr`, over the parameters of `model`. With
/// weight_decay != 0 and `no_weight_decay` naming some of them
/// (Task::TrainingProfile::no_weight_decay), those form a second parameter group with
/// weight_decay 0; otherwise there is one group, as always.
std::unique_ptr<torch::optim::Optimizer> make_optimizer(const OptimizerOptions& options, double lr,
                                                        const torch::nn::Module& model,
                                                        const std::vector<std::string>& no_weight_decay = {});
/// The optimizer of a resolved config (its Trainer keys: optimizer, lr, betas, eps, momentum, weight_decay).
std::unique_ptr<torch::optim::Optimizer> make_optimizer(const Config& config, const torch::nn::Module& model,
                                                        const std::vector<std::string>& no_weight_decay = {});
/// The validation score that chooses checkpoint_best.pt and counts patience: "loss" (lower is
/// better) or one of the task's Task::TrainingProfile::selection_metrics, with its direction.
struct BestMetric {
  std::string name = "loss";
  bool higher = false;  // higher is better (accuracy, F1, MCC, correlations)
};
/// The metric `name` names ("auto": the profile's best_metric). Throws UserError naming the
/// key best_metric, the task and the metrics it has for a name the task does not report.
BestMetric best_metric_named(const std::string& name, const Task::TrainingProfile& profile,
                             const std::string& task_name);

/// Scales the gradients of `params` in place so that their global L2 norm
///   ||g|| = sqrt(sum over parameters p and elements i of g_{p,i}^2)
/// is at most `max_norm` (Pascanu et al. 2013): g <- g * max_norm / (||g|| + 1e-6) when
/// ||g|| > max_norm, as torch.nn.utils.clip_grad_norm_. Parameters without a gradient are
/// skipped; max_norm <= 0 scales nothing. Returns ||g|| before clipping (0 with no gradients)
/// as a float64 scalar tensor on the gradients' device, without reading it back (no sync).
torch::Tensor clip_grad_norm(const std::vector<torch::Tensor>& params, double max_norm);
/// clip_grad_norm with ||g|| read back.
double clip_gradients(const std::vector<torch::Tensor>& params, double max_norm);

class Trainer {
 public:
  /// `task` must be set up. Writes into `run_dir` (created if needed). Derives decay_steps for
  /// linear_decay = 0 from max_steps / max_epochs and the task's batches per epoch. Throws
  /// UserError for keys the task cannot train with (Task::TrainingProfile: optimizer, momentum,
  /// weight_decay; noam without a d_model; a best_metric the task does not report) and for
  /// linear_decay over an unbounded run.
  /// Each validation keeps checkpoint_best.pt when best_metric improves (strictly; NaN never
  /// does) and otherwise counts towards patience; the plateau schedule follows the validation
  /// loss whatever best_metric is. A run resumed with another best_metric than its checkpoint's
  /// starts its best (and patience count) over, saying so.
  Trainer(Task& task, Config config, std::string task_name, std::string run_dir);
  virtual ~Trainer();

  /// Trains until a budget (max_steps, max_epochs, max_time), early stopping, Ctrl-C or SIGTERM
  /// (the previous SIGINT and SIGTERM handlers are restored however train ends). With `resume`,
  /// continues exactly from run_dir/checkpoint_last.pt. First removes the run folder's stale
  /// temporary files (remove_stale_temporaries). Returns 0, or 128 + the signal (130 for SIGINT,
  /// 143 for SIGTERM) when a signal stopped it, after saving a resumable checkpoint.
  int train(bool resume);

  /// The budgets (max_steps, max_epochs, max_time) of this Trainer's config bound this
  /// invocation only; the run's config.ini and checkpoints keep `run_config`'s (the `nlpzoo
  /// train` CLI passes the INI file's, so budgets given on the command line apply once and a
  /// later --resume without them reads the run's own). Without a call, the config's are kept.
  void keep_budgets(const Config& run_config);

 protected:
  // The parts of train(), one job each. Data-parallel training (train/data_parallel.h)
  // overrides step() (all-reducing the gradients and the unit count between accumulate and
  // apply), stop_reason() and stop_signal() (all ranks stop together), validation_loss()
  // (sharded, its sums reduced) and on_begin() (rank 0's parameters to every rank).

  /// The part this Trainer plays in data-parallel training: rank `rank` of `world_size`
  /// processes, each reading the rank-th batch of every world_size consecutive batches of the
  /// one batch plan; only rank 0 writes (checkpoints, config.ini, metrics.jsonl) and prints.
  struct Shard {
    int64_t rank = 0, world_size = 1;
  };
  Trainer(Task& task, Config config, std::string task_name, std::string run_dir, Shard shard);
  const Shard& shard() const { return shard_; }
  bool writer() const { return shard_.rank == 0; }

  /// What one update did. loss_sum: float64 scalar on the device, summed over `units`, not read
  /// back (no device sync per update); grad_norm: the norm before clipping, undefined for
  /// in-place updates. units == 0: the training data ran out.
  struct StepOutput {
    torch::Tensor loss_sum;
    int64_t units = 0;
    int64_t examples = 0;
    torch::Tensor grad_norm;
  };
  /// One update at the schedule's rate: accumulate, then apply (or the task's in-place updates).
  virtual StepOutput step();
  /// Forward and backward over update_freq batches (or Task::train_in_place at `lr`), leaving
  /// the gradients summed; advances the data position.
  StepOutput accumulate(double lr);
  /// The update from summed gradients: the per-unit mean (Task::gradient_reduction), clipping,
  /// the optimizer step at `lr`. Returns the gradient norm before clipping.
  torch::Tensor apply(int64_t units, double lr);

  /// The rate of the next update after `training_time_s` seconds of training over all runs
  /// (training_time_s()), and the step counter's advance once it is made.
  double next_lr(double training_time_s) const;
  double training_time_s() const;
  void count_update(double lr);

  enum class Stop { kNo, kBudget, kEarlyStopping, kInterrupted };
  /// The stopping rule, asked before each update: stop_rule(this process's signal, its clock).
  virtual Stop stop_reason() const;
  /// Ctrl-C or SIGTERM (`interrupted`), then patience validations without improvement, then
  /// the budgets (max_time: `time_up`).
  Stop stop_rule(bool interrupted, bool time_up) const;
  /// Whether this invocation has run for max_time (false without one).
  bool time_up() const;
  /// The signal this process received (SIGINT, SIGTERM; 0: none), and the one that stops the run.
  static int received_signal();
  virtual int stop_signal() const { return received_signal(); }

  /// The validation split's loss and metrics (evaluate_loss), asked at each validation.
  virtual SplitLoss validation_loss();
  /// After the run is restored (`resumed`) or seeded, before its first update; and after the
  /// invocation's last update, however the loop stopped.
  virtual void on_begin(bool resumed) {}
  virtual void on_end() {}

  /// A line printed (and kept on screen) by the writer.
  void message(const std::string& line);
  Task& task() const { return task_; }
  torch::nn::Module& model() const { return *model_; }
  const torch::Device& device() const { return device_; }
  /// The Trainer's keys as this run uses them (the schedule's derived keys resolved).
  const TrainerOptions& options() const { return options_; }
  const TrainingState& training_state() const;

 private:
  bool begin(bool resume);  // restore or start; false when there is nothing to train
  int loop();
  void validate();          // validation, schedule, best/patience, checkpoints
  void save(const std::string& name);
  // checkpoint_last.pt; checkpoint_best.pt as a second name of it when `best`, and
  // checkpoint_<step>.pt with keep_last (the oldest beyond keep_last removed).
  void save_validated(bool best);
  void link_last_as(const std::string& name);  // a second name of checkpoint_last.pt
  // The config as the run uses it: the text given, the derived keys written in.
  Config resolved_config() const;
  std::string saved_config() const;  // resolved_config() with the kept budgets
  // "config keys changed since the checkpoint: k (old -> new), ..." (budgets left out) or "".
  // Throws UserError when the optimizer changed: its saved state would load into the other.
  std::string changed_keys(const std::string& checkpoint_ini) const;
  int64_t planned_updates();  // updates max_steps and max_epochs allow (0: unbounded)
  double eta_s() const;
  // "training <task>: N parameters on <device> | batches per epoch | budget | progress every ...".
  std::string start_line();
  // Once per invocation with max_time: warns when the warm-up will not end within the budget.
  void check_warmup_budget();

  Task& task_;
  Task::TrainingProfile profile_;
  Config config_;  // the text given: the task's keys, and the text of unchanged values in the saved config
  TrainerOptions options_;
  std::string task_name_, run_dir_;
  Shard shard_;
  torch::Device device_;
  Precision precision_ = Precision::kFp32;
  std::shared_ptr<torch::nn::Module> model_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  std::unique_ptr<LrSchedule> schedule_;
  BestMetric best_;
  struct State;
  std::shared_ptr<State> state_;
  std::optional<BudgetOptions> kept_budgets_;  // keep_budgets
};

}  // namespace nlpzoo
