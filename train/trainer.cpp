#include "train/trainer.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "core/io.h"
#include "train/checkpoint.h"
#include "core/precision.h"
#include "train/prefetcher.h"
#include "train/train_log.h"

namespace nlpzoo {

namespace fs = std::filesystem;

void OptimizerOptions::bind(OptionBinder& b) {
  b.field("optimizer", optimizer, "optimizer", {"adam", "adamw", "sgd", "adagrad"});
  b.field("adam_beta1", adam_beta1, "Adam/AdamW beta1", rate());
  b.field("adam_beta2", adam_beta2, "Adam/AdamW beta2", rate());
  b.field("adam_eps", adam_eps, "Adam/AdamW epsilon", positive());
  b.field("weight_decay", weight_decay, "L2 penalty (decoupled for adamw)", finite_at_least(0));
  b.field("momentum", momentum, "SGD momentum", finite_at_least(0));
  b.field("adagrad_initial_accumulator", adagrad_initial_accumulator,
          "AdaGrad's starting sum of squared gradients (glove.c: 1)", finite_at_least(0));
}

void BudgetOptions::bind(OptionBinder& b) {
  b.field("max_epochs", max_epochs, "stop after this many epochs (0 = no limit)", at_least(0));
  b.field("max_steps", max_steps, "stop after this many updates in total (0 = no limit)", at_least(0));
  b.field("max_time", max_time, "stop after this many minutes of each invocation (0 = no limit)", finite_at_least(0));
}

void TrainerOptions::bind(OptionBinder& b) {
  b.field("task", task, "which Task trains (fixes the model family and its config keys)");
  optimizer.bind(b);
  b.field("clip_norm", clip_norm, "clip gradients to this global L2 norm (0 = no clipping)", finite_at_least(0));
  b.field("update_freq", update_freq, "batches whose gradients are accumulated per update", at_least(1));
  b.field("seed", seed, "seed of parameter init, dropout and batch order");
  budget.bind(b);
  b.field("valid_interval", valid_interval, "validate and save every N updates (0 = once per epoch)", at_least(0));
  b.field("log_interval", log_interval, "print and log metrics every N updates", at_least(1));
  b.field("log_seconds", log_seconds, "also print and log after N seconds without a report (0 = only log_interval)",
          finite_at_least(0));
  b.field("keep_last", keep_last,
          "also keep the state of each of the last N validations as checkpoint_<step>.pt, for nlpzoo checkpoint "
          "average (fairseq's keep_interval_updates; 0 = keep none)", at_least(0));
  b.field("patience", patience, "stop after N validations without improvement of best_metric (0 = never)", at_least(0));
  b.field("best_metric", best_metric,
          "validation score that chooses checkpoint_best.pt and counts patience: auto (the task's: classification "
          "accuracy, regression pearson, others loss), loss, or one of the task's (classification: accuracy, "
          "macro_f1, mcc; regression: pearson, spearman); the plateau LR schedule follows the loss whatever it is");
  b.field("device", device, "auto | cpu | cuda | cuda:N");
  b.field("data_dir", data_dir, "corpus folder (the task says which files it reads there)");
  schedule.bind(b);
  precision.bind(b);
}

ConfigSchema trainer_schema() { return schema_of<TrainerOptions>(); }

torch::Device parse_device(const std::string& name) {
  if (name == "auto") return torch::cuda::is_available() ? torch::Device(torch::kCUDA) : torch::Device(torch::kCPU);
  if (name == "cpu") return torch::kCPU;
  if (name.rfind("cuda", 0) == 0) {
    if (!torch::cuda::is_available())
      throw UserError("--device " + name + ": CUDA is not available (this LibTorch is CPU-only or no GPU is visible); use --device cpu");
    try {
      return torch::Device(name);
    } catch (const c10::Error&) {
    }
  }
  throw UserError("--device " + name + ": expected auto, cpu, cuda or cuda:N");
}

TrainerOptions check_trainer_config(const Config& config) {
  auto options = bind_options<TrainerOptions>(config);
  parse_precision(options.precision.precision, parse_device(options.device));
  return options;
}

torch::Tensor clip_grad_norm(const std::vector<torch::Tensor>& params, double max_norm) {
  // Sparse gradients (embeddings with sparse(true)) may list a row several times; the norm is
  // that of the summed rows, so they are coalesced first (in place: the optimizer then adds
  // each row once). LibTorch's clip_grad_norm_ is not used because of them.
  std::vector<torch::Tensor> grads;
  for (const auto& p : params) {
    if (!p.grad().defined()) continue;
    if (p.grad().is_sparse() && !p.grad().is_coalesced()) p.mutable_grad() = p.grad().coalesce();
    grads.push_back(p.grad());
  }
  if (grads.empty()) return torch::zeros({}, torch::kDouble);
  std::vector<torch::Tensor> squares;
  for (const auto& g : grads) squares.push_back((g.is_sparse() ? g._values() : g).pow(2).sum().to(torch::kDouble));
  auto norm = torch::stack(squares).sum().sqrt();
  // As torch.nn.utils.clip_grad_norm_: scale by min(1, max_norm / (norm + 1e-6)), computed on
  // the device so that no step waits for the norm (a factor of exactly 1 leaves g unchanged).
  if (max_norm > 0) {
    const auto scale = (max_norm / (norm + 1e-6)).clamp_max(1.0);
    for (auto& g : grads) (g.is_sparse() ? g._values() : g).mul_(scale);
  }
  return norm;
}

double clip_gradients(const std::vector<torch::Tensor>& params, double max_norm) {
  return clip_grad_norm(params, max_norm).item<double>();
}

double SplitLoss::perplexity() const { return std::exp(std::min(loss, 100.0)); }

SplitLoss evaluate_loss(Task& task, Split split, const torch::Device& device, const EvaluationShard& shard) {
  auto model = task.model();
  const bool was_training = model->is_training();
  model->eval();
  torch::NoGradGuard no_grad;
  // Sums stay on the device until the end: one read-back per split.
  const auto on_device = torch::TensorOptions(torch::kDouble).device(device);
  torch::Tensor sum = torch::zeros({}, on_device);
  std::map<std::string, torch::Tensor> metric_sums;
  int64_t tokens = 0, examples = 0;
  const int64_t n = task.num_batches(split, 0);
  int64_t i = shard.index;
  Prefetcher<Batch> batches([&]() -> std::optional<Batch> {
    if (i >= n) return std::nullopt;
    const int64_t index = i;
    i += shard.count;
    return task.make_batch(split, 0, index);
  }, 4);
  while (auto batch = batches.next()) {
    auto loss = task.loss(batch->to(device));
    sum += loss.loss_sum.detach().to(torch::kDouble);
    for (const auto& [name, value] : loss.metric_sums) {
      auto& total = metric_sums[name];
      total = total.defined() ? total + value.detach().to(torch::kDouble) : value.detach().to(torch::kDouble);
    }
    tokens += loss.num_tokens;
    examples += batch->num_examples;
  }
  model->train(was_training);
  // [loss, units, examples, metric sums flattened in name order]: one reduction and one read-back.
  std::vector<torch::Tensor> parts = {sum.reshape({1}), torch::tensor({static_cast<double>(tokens)}, on_device),
                                      torch::tensor({static_cast<double>(examples)}, on_device)};
  for (const auto& [name, total] : metric_sums) parts.push_back(total.to(device).reshape({-1}));
  auto sums = torch::cat(parts);
  if (shard.reduce) shard.reduce(sums);
  sums = sums.cpu();
  const auto at = [&](int64_t k) { return sums[k].item<double>(); };
  SplitLoss out;
  out.tokens = static_cast<int64_t>(at(1));
  out.examples = static_cast<int64_t>(at(2));
  if (out.tokens == 0) throw UserError("the " + to_string(split) + " split is empty");
  out.loss = at(0) / out.tokens;
  std::map<std::string, torch::Tensor> totals;
  int64_t k = 3;
  for (const auto& [name, total] : metric_sums) {
    totals[name] = sums.narrow(0, k, total.numel()).view(total.sizes());
    k += total.numel();
  }
  out.metrics = task.validation_metrics(totals, std::max<int64_t>(1, out.examples));
  return out;
}

BestMetric best_metric_named(const std::string& name, const Task::TrainingProfile& profile,
                             const std::string& task_name) {
  if (name == "auto") return best_metric_named(profile.best_metric, profile, task_name);
  if (name == "loss") return {"loss", false};
  std::string names = "loss";
  for (const auto& [metric, better] : profile.selection_metrics) {
    if (metric == name) return {name, better == Better::kHigher};
    names += ", " + metric;
  }
  throw UserError("config key 'best_metric': the " + task_name + " task has no validation metric '" + name +
                  "'; it has " + names + " (or auto)");
}

namespace {

// The budgets of one invocation (Trainer::keep_budgets).
const std::vector<std::string>& budget_keys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> names;
    const auto schema = schema_of<BudgetOptions>();
    for (const auto& k : schema.keys()) names.push_back(k.key);
    return names;
  }();
  return keys;
}

// The signal that asked the run to stop (0: none).
std::atomic<int> g_interrupted{0};
extern "C" void on_stop_signal(int signal) { g_interrupted = signal; }

// Ctrl-C (SIGINT) and SIGTERM (what timeout, Slurm and Kubernetes send) set a flag that the
// loop reads between updates; the previous handlers come back however train() ends, an
// exception included.
class StopSignalGuard {
 public:
  StopSignalGuard()
      : previous_int_(std::signal(SIGINT, on_stop_signal)), previous_term_(std::signal(SIGTERM, on_stop_signal)) {
    g_interrupted = 0;
  }
  ~StopSignalGuard() {
    std::signal(SIGINT, previous_int_);
    std::signal(SIGTERM, previous_term_);
  }
  StopSignalGuard(const StopSignalGuard&) = delete;
  StopSignalGuard& operator=(const StopSignalGuard&) = delete;

 private:
  decltype(std::signal(SIGINT, SIG_DFL)) previous_int_, previous_term_;
};

}  // namespace

namespace {
// The optimizer over `decay` with `defaults`, plus a second group `exempt` with weight_decay 0.
template <class Optimizer, class Options>
std::unique_ptr<torch::optim::Optimizer> grouped(const Options& defaults, std::vector<torch::Tensor> decay,
                                                 std::vector<torch::Tensor> exempt) {
  if (exempt.empty()) return std::make_unique<Optimizer>(std::move(decay), defaults);
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(std::move(decay));
  auto no_decay = std::make_unique<Options>(defaults);
  no_decay->weight_decay(0);
  groups.emplace_back(std::move(exempt), std::move(no_decay));
  return std::make_unique<Optimizer>(std::move(groups), defaults);
}
}  // namespace

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const OptimizerOptions& o, double lr,
                                                        const torch::nn::Module& model,
                                                        const std::vector<std::string>& no_weight_decay) {
  std::vector<torch::Tensor> decay, exempt;
  const double weight_decay = o.weight_decay;
  for (const auto& p : model.named_parameters()) {
    const bool exempted = weight_decay != 0 &&
                          std::find(no_weight_decay.begin(), no_weight_decay.end(), p.key()) != no_weight_decay.end();
    (exempted ? exempt : decay).push_back(p.value());
  }
  const auto& name = o.optimizer;
  if (name == "sgd")
    return grouped<torch::optim::SGD>(torch::optim::SGDOptions(lr).momentum(o.momentum).weight_decay(weight_decay),
                                      decay, exempt);
  if (name == "adagrad")
    return grouped<torch::optim::Adagrad>(
        torch::optim::AdagradOptions(lr).initial_accumulator_value(o.adagrad_initial_accumulator)
            .weight_decay(weight_decay), decay, exempt);
  auto betas = std::make_tuple(o.adam_beta1, o.adam_beta2);
  if (name == "adamw")
    return grouped<torch::optim::AdamW>(
        torch::optim::AdamWOptions(lr).betas(betas).eps(o.adam_eps).weight_decay(weight_decay), decay, exempt);
  return grouped<torch::optim::Adam>(
      torch::optim::AdamOptions(lr).betas(betas).eps(o.adam_eps).weight_decay(weight_decay), decay, exempt);
}

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const Config& config, const torch::nn::Module& model,
                                                        const std::vector<std::string>& no_weight_decay) {
  const auto options = bind_options<TrainerOptions>(config);
  return make_optimizer(options.optimizer, options.schedule.lr, model, no_weight_decay);
}

namespace {

// The optimizers a task's updates work with (Task::TrainingProfile), without momentum or decay.
void check_optimizer(const OptimizerOptions& o, const Task::TrainingProfile& profile) {
  const auto& allowed = profile.optimizers;
  if (allowed.empty()) return;
  if (std::find(allowed.begin(), allowed.end(), o.optimizer) == allowed.end()) {
    std::string names;
    for (const auto& name : allowed) names += (names.empty() ? "" : " or ") + name;
    throw UserError("config key 'optimizer': " + profile.optimizers_reason + " need optimizer = " + names + ", got " +
                    o.optimizer);
  }
  for (const auto& [key, value] : {std::pair<const char*, double>{"momentum", o.momentum}, {"weight_decay", o.weight_decay}})
    if (value != 0)
      throw UserError(std::string("config key '") + key + "': " + profile.optimizers_reason + " need " + key +
                      " = 0, got " + format_number(value));
}

void set_lr(torch::optim::Optimizer& opt, double lr) {
  for (auto& group : opt.param_groups()) group.options().set_lr(lr);
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The training batches from a position onwards, made on a prefetch thread: (epoch, index) runs
// through each epoch's num_batches and on into the next epoch. Of every `world_size`
// consecutive batches (a group) this rank takes the rank-th (Trainer::Shard); the others are
// skipped unmade.
class TrainBatches {
 public:
  struct Item {
    int64_t epoch, index, epoch_size;
    Batch batch;
    int64_t next_epoch, next_index;  // the position after the item's group: where the plan goes on
  };
  TrainBatches(Task& task, int64_t epoch, int64_t index, int64_t rank, int64_t world_size)
      : task_(task), epoch_(epoch), index_(index), rank_(rank), world_size_(world_size),
        prefetcher_([this] { return produce(); }, 8) {}
  std::optional<Item> next() { return prefetcher_.next(); }
  Prefetcher<Item>& prefetcher() { return prefetcher_; }

 private:
  std::optional<Item> produce() {
    std::optional<Item> item;
    for (int64_t k = 0; k < world_size_; ++k) {
      // An index past the epoch's end (a resumed position) moves on to the next epoch.
      for (;; ++epoch_, index_ = 0, epoch_size_ = -1) {
        if (epoch_size_ < 0) epoch_size_ = task_.num_batches(Split::kTrain, epoch_);
        if (epoch_size_ == 0) throw UserError("the train split produced no batches (empty corpus?)");
        if (index_ < epoch_size_) break;
      }
      if (k == rank_) item = Item{epoch_, index_, epoch_size_, task_.make_batch(Split::kTrain, epoch_, index_), 0, 0};
      ++index_;
    }
    // A used-up epoch counts as done (max_epochs), and a resume starts at the next unread batch.
    const bool epoch_done = index_ == epoch_size_;
    item->next_epoch = epoch_done ? epoch_ + 1 : epoch_;
    item->next_index = epoch_done ? 0 : index_;
    return item;
  }

  Task& task_;
  int64_t epoch_, index_, epoch_size_ = -1;  // the worker's position
  const int64_t rank_, world_size_;
  Prefetcher<Item> prefetcher_;              // last: its worker starts once the rest exists
};

// Whether every training loss and gradient norm since step `since` was finite: a flag kept on the
// device and read back only at checks (each log_interval, before every save), not per update.
struct FiniteWatch {
  torch::Tensor all_finite;
  int64_t since = 0;

  void note(const torch::Tensor& value) {
    if (!value.defined()) return;
    const auto ok = torch::isfinite(value.detach()).all();
    all_finite = all_finite.defined() ? all_finite.logical_and(ok) : ok;
  }
  // Throws UserError when one was NaN or infinite (the run diverged): nothing is saved after it,
  // so checkpoint_last.pt keeps the last checked state.
  void require(int64_t step, double lr, double clip_norm) {
    if (all_finite.defined() && !all_finite.item<bool>()) {
      std::ostringstream lr_text;
      lr_text << lr;
      throw UserError("the run diverged: a training loss or gradient norm between steps " + std::to_string(since) +
                      " and " + std::to_string(step) + " is not finite (NaN or infinite), so nothing after step " +
                      std::to_string(since) + " was saved. Lower lr (" + lr_text.str() + " at step " +
                      std::to_string(step) + ")" + (clip_norm > 0 ? "" : " or set clip_norm (0: no clipping)") +
                      ", or raise warmup_steps; then --resume from checkpoint_last.pt or start again");
    }
    all_finite = torch::Tensor();
    since = step;
  }
};

}  // namespace

struct Trainer::State {
  State(const TrainerOptions& o, TrainLog log)
      : log(std::move(log)), update_freq(o.update_freq), valid_interval(o.valid_interval), patience(o.patience),
        max_steps(o.budget.max_steps), max_epochs(o.budget.max_epochs), clip_norm(o.clip_norm),
        max_time_s(o.budget.max_time * 60) {}

  TrainingState training;
  TrainLog log;
  std::unique_ptr<TrainBatches> batches;  // while train() runs
  int64_t update_freq, valid_interval, patience, max_steps, max_epochs;
  double clip_norm, max_time_s;
  // This invocation: its start, the training time before it, its first step.
  std::chrono::steady_clock::time_point run_start;
  double elapsed_before = 0;
  int64_t first_step = 0;
  int64_t epoch_size = 0;            // batches of the epoch being read (for the ETA)
  int64_t last_validated_step = -1;  // a run validates each step at most once
  bool warmup_checked = false;       // warmup_budget_warning is asked once per invocation
  FiniteWatch finite;
};

Trainer::Trainer(Task& task, Config config, std::string task_name, std::string run_dir)
    : Trainer(task, std::move(config), std::move(task_name), std::move(run_dir), Shard{}) {}

Trainer::Trainer(Task& task, Config config, std::string task_name, std::string run_dir, Shard shard)
    : task_(task), profile_(task.training_profile()), config_(std::move(config)),
      options_(check_trainer_config(config_)), task_name_(std::move(task_name)), run_dir_(std::move(run_dir)),
      shard_(shard), device_(parse_device(options_.device)) {
  // Parsed once: "auto" depends on the device, and the loop opens an autocast region per batch.
  precision_ = parse_precision(options_.precision.precision, device_);
  state_ = std::make_shared<State>(options_, TrainLog(writer() ? run_dir_ + "/metrics.jsonl" : "", profile_,
                                                      !task_.updates_in_place(), options_.log_interval,
                                                      options_.log_seconds));
  check_optimizer(options_.optimizer, profile_);
  best_ = best_metric_named(options_.best_metric, profile_, task_name_);
  auto& schedule = options_.schedule;
  schedule.d_model = profile_.d_model;
  // Derived once, from this invocation's budget, and written into the saved config.
  if (schedule.warmup_fraction != 0) resolve_warmup_fraction(schedule, planned_updates(), options_.budget.max_time);
  // linear_decay over "the whole run" (decay_steps = 0) needs the run's length in updates; it
  // is written into the saved config, so a resumed run keeps the same schedule.
  // A run that only max_time bounds decays over that training time instead (decay_time).
  const bool decays = schedule.kind == LrScheduleKind::kLinearDecay || schedule.kind == LrScheduleKind::kCosine;
  if (decays && schedule.decay_steps == 0 && schedule.decay_time == 0) {
    const int64_t updates = planned_updates();
    if (updates > 0)
      schedule.decay_steps = updates;
    else if (options_.budget.max_time > 0)
      schedule.decay_time = options_.budget.max_time;
    else
      throw UserError("config key 'decay_steps': " + enum_name(schedule.kind, kLrScheduleNames) + " over the whole run needs max_epochs, max_steps or "
                      "max_time (or set decay_steps)");
  }
  check_lr_schedule(schedule);
  schedule_ = std::make_unique<LrSchedule>(schedule);
  fs::create_directories(run_dir_);
  model_ = task_.model();
  model_->to(device_);
  optimizer_ = make_optimizer(options_.optimizer, schedule.lr, *model_, profile_.no_weight_decay);
}

Trainer::~Trainer() = default;

int64_t Trainer::planned_updates() {
  const auto& s = *state_;
  int64_t updates = std::max<int64_t>(0, s.max_steps);
  if (s.max_epochs > 0) {
    // An update may take batches from two epochs: the loader runs on across the boundary.
    int64_t batches = 0;
    for (int64_t e = 0; e < s.max_epochs; ++e) batches += task_.num_batches(Split::kTrain, e);
    const int64_t per_update = s.update_freq * shard_.world_size;
    const int64_t by_epochs = (batches + per_update - 1) / per_update;
    updates = updates > 0 ? std::min(updates, by_epochs) : by_epochs;
  }
  return updates;
}

void Trainer::keep_budgets(const Config& run_config) { kept_budgets_ = bind_options<BudgetOptions>(run_config); }

Config Trainer::resolved_config() const {
  Config resolved = config_;
  write_options(options_, resolved);
  return resolved;
}

std::string Trainer::saved_config() const {
  Config saved = resolved_config();
  if (kept_budgets_) write_options(*kept_budgets_, saved);
  return saved.to_ini();
}

void Trainer::save(const std::string& name) {
  if (!writer()) return;
  auto& t = state_->training;
  t.schedule_state = schedule_->state();
  save_checkpoint(run_dir_ + "/" + name, *model_, optimizer_.get(),
                  {task_name_, saved_config(), task_.artifacts(), t});
}

// The best and the periodic checkpoints are the last one at the moment they are made: a hard
// link instead of a second write of the same bytes (850 MB for the subword model). Made under a
// temporary name and renamed into place like every write, so a crash leaves the old one;
// the next checkpoint_last.pt is a new file renamed over its name, so it leaves this one as it
// is. A copy where the file system has no hard links.
void Trainer::link_last_as(const std::string& name) {
  const auto last = run_dir_ + "/checkpoint_last.pt";
  atomic_write(run_dir_ + "/" + name, [&](const std::string& tmp) {
    std::error_code no_link;
    fs::create_hard_link(last, tmp, no_link);
    if (no_link) fs::copy_file(last, tmp);
  });
}

void Trainer::save_validated(bool best) {
  save("checkpoint_last.pt");
  if (!writer()) return;
  if (best) link_last_as("checkpoint_best.pt");
  if (options_.keep_last == 0) return;
  link_last_as("checkpoint_" + std::to_string(state_->training.step) + ".pt");
  const auto kept = periodic_checkpoints(run_dir_);
  for (size_t i = 0; i + options_.keep_last < kept.size(); ++i) fs::remove(kept[i].second);
}

std::string Trainer::changed_keys(const std::string& checkpoint_ini) const {
  // The checkpoint's config as Config::to_ini wrote it: "key = value" lines.
  std::map<std::string, std::string> before;
  std::istringstream in(checkpoint_ini);
  for (std::string line; std::getline(in, line);) {
    const auto eq = line.find(" = ");
    if (eq != std::string::npos) before[line.substr(0, eq)] = line.substr(eq + 3);
  }
  std::string changed;
  const auto& budgets = budget_keys();
  const Config now = resolved_config();
  for (const auto& [key, value] : now.values()) {
    auto it = before.find(key);
    const bool budget = std::find(budgets.begin(), budgets.end(), key) != budgets.end();
    if (it == before.end() || it->second == value || budget) continue;
    // Adam and AdamW (and SGD with and without momentum) keep tensors of the same shapes, so
    // the saved state would load into the other one and silently continue a different run
    // (fairseq refuses likewise unless told --reset-optimizer).
    if (key == "optimizer")
      throw UserError("--resume: the checkpoint was trained with optimizer = " + it->second + ", this config says " +
                      value + "; its moments and step counts belong to " + it->second +
                      ": resume with optimizer = " + it->second + ", or start a new run");
    changed += (changed.empty() ? "" : ", ") + key + " (" + it->second + " -> " + value + ")";
  }
  return changed.empty() ? "" : "config keys changed since the checkpoint: " + changed;
}

bool Trainer::time_up() const {
  const auto& s = *state_;
  return s.max_time_s > 0 && seconds_since(s.run_start) >= s.max_time_s;
}

int Trainer::received_signal() { return g_interrupted; }

Trainer::Stop Trainer::stop_rule(bool interrupted, bool time_up) const {
  const auto& s = *state_;
  const auto& t = s.training;
  if (interrupted) return Stop::kInterrupted;
  if (s.patience > 0 && t.bad_validations >= s.patience) return Stop::kEarlyStopping;
  if ((s.max_steps > 0 && t.step >= s.max_steps) || (s.max_epochs > 0 && t.epoch >= s.max_epochs) || time_up)
    return Stop::kBudget;
  return Stop::kNo;
}

Trainer::Stop Trainer::stop_reason() const { return stop_rule(received_signal() != 0, time_up()); }

double Trainer::training_time_s() const { return state_->elapsed_before + seconds_since(state_->run_start); }

double Trainer::next_lr(double training_time_s) const {
  return schedule_->lr_at(state_->training.step + 1, training_time_s);
}

void Trainer::count_update(double lr) {
  ++state_->training.step;
  state_->training.lr = lr;
}

void Trainer::message(const std::string& line) { state_->log.message(line); }

const TrainingState& Trainer::training_state() const { return state_->training; }

double Trainer::eta_s() const {
  const auto& s = *state_;
  const auto& t = s.training;
  const double run = seconds_since(s.run_start);
  const double per_step = run / std::max<int64_t>(1, t.step - s.first_step);
  double eta = -1;
  auto nearest = [&](double x) { eta = eta < 0 ? x : std::min(eta, x); };
  if (s.max_time_s > 0) nearest(s.max_time_s - run);
  if (s.max_steps > 0) nearest((s.max_steps - t.step) * per_step);
  if (s.max_epochs > 0 && s.epoch_size > 0)
    nearest(static_cast<double>((s.max_epochs - t.epoch) * s.epoch_size - t.batch_index) /
            (s.update_freq * shard_.world_size) * per_step);
  return eta;
}

Trainer::StepOutput Trainer::accumulate(double lr) {
  auto& s = *state_;
  auto& t = s.training;
  const bool in_place = task_.updates_in_place();
  if (!in_place) {
    // Sparse gradients are dropped rather than zeroed: backward then keeps its own sparse
    // gradient instead of appending every row to an emptied one (a copy per update).
    for (auto& p : model_->parameters())
      if (p.grad().defined() && p.grad().is_sparse()) p.mutable_grad() = torch::Tensor();
    optimizer_->zero_grad();
  }
  StepOutput out;
  for (int64_t k = 0; k < s.update_freq; ++k) {
    auto item = s.batches->next();
    if (!item) break;
    t.epoch = item->next_epoch;
    t.batch_index = item->next_index;
    s.epoch_size = item->epoch_size;
    out.examples += item->batch.num_examples;
    LossOutput loss;
    if (in_place) {
      torch::NoGradGuard no_grad;
      loss = task_.train_in_place(item->batch.to(device_), lr);
    } else {
      {  // the forward pass and loss in the run's precision; backward outside, as torch.autocast
        const AutocastGuard autocast(precision_, device_);
        loss = task_.loss(item->batch.to(device_));
      }
      loss.loss_sum.backward();
    }
    const auto sum = loss.loss_sum.detach().to(torch::kDouble);
    out.loss_sum = out.loss_sum.defined() ? out.loss_sum + sum : sum;
    out.units += loss.num_tokens;
  }
  return out;
}

torch::Tensor Trainer::apply(int64_t units, double lr) {
  if (task_.gradient_reduction() == Task::GradientReduction::kMean)
    for (auto& p : model_->parameters())
      if (p.grad().defined()) p.grad().div_(static_cast<double>(units));
  auto norm = clip_grad_norm(model_->parameters(), state_->clip_norm);
  set_lr(*optimizer_, lr);
  optimizer_->step();
  return norm;
}

Trainer::StepOutput Trainer::step() {
  // The rate of the update these batches make; a task that updates in place applies it itself.
  const double lr = next_lr(training_time_s());
  auto out = accumulate(lr);
  if (out.units == 0) return out;
  if (!task_.updates_in_place()) out.grad_norm = apply(out.units, lr);
  count_update(lr);
  return out;
}

SplitLoss Trainer::validation_loss() { return evaluate_loss(task_, Split::kValid, device_); }

void Trainer::validate() {
  auto& s = *state_;
  auto& t = s.training;
  SplitLoss valid;
  {
    // Task promises make_batch runs on one thread at a time: the training prefetcher waits.
    std::optional<Prefetcher<TrainBatches::Item>::Pause> pause;
    if (s.batches) pause.emplace(s.batches->prefetcher());
    const AutocastGuard autocast(precision_, device_);
    valid = validation_loss();
  }
  s.finite.require(t.step, t.lr, s.clip_norm);
  if (!std::isfinite(valid.loss))
    throw UserError("the run diverged: the validation loss at step " + std::to_string(t.step) + " is not finite (" +
                    std::to_string(valid.loss) + "), so this state was not saved (checkpoint_last.pt and " +
                    "checkpoint_best.pt keep earlier ones). Lower lr or set clip_norm, then --resume or start again");
  schedule_->on_validation(valid.loss);  // plateau: by the loss, whatever best_metric is
  double value = valid.loss;
  if (best_.name != "loss") {
    const auto it = valid.metrics.find(best_.name);
    if (it == valid.metrics.end())
      throw std::logic_error("Trainer: the task declares the validation metric '" + best_.name +
                             "' but its validation did not report it");
    value = it->second;
  }
  const bool best = best_.higher ? value > t.best_value : value < t.best_value;
  t.best_valid_loss = std::min(t.best_valid_loss, valid.loss);
  if (best) {
    t.best_value = value;
    t.bad_validations = 0;
  } else {
    ++t.bad_validations;
  }
  s.last_validated_step = t.step;
  t.elapsed_s = s.elapsed_before + seconds_since(s.run_start);
  s.log.validation(t.step, t.epoch, t.elapsed_s, valid.loss, valid.metrics, best, best_.name);
  save_validated(best);
}

bool Trainer::begin(bool resume) {
  auto& s = *state_;
  auto& t = s.training;
  const std::string last = run_dir_ + "/checkpoint_last.pt";
  s.run_start = std::chrono::steady_clock::now();
  // A run killed while writing a checkpoint leaves its temporary file (up to a checkpoint's size).
  if (writer())
    for (const auto& stale : remove_stale_temporaries(run_dir_))
      s.log.message("removed " + stale + ", the temporary file of a process that no longer runs");
  if (resume) {
    auto header = read_checkpoint_header(last);
    if (header.task != task_name_) throw UserError(last + ": checkpoint of task '" + header.task + "', not '" + task_name_ + "'");
    const std::string changed = changed_keys(header.config);
    try {
      load_checkpoint_weights(last, *model_, optimizer_.get(), /*restore_rng=*/true);
    } catch (const UserError& e) {
      throw UserError(std::string(e.what()) +
                      (changed.empty() ? "" : "; " + changed + " (a model's shape cannot change on --resume)"));
    }
    if (!changed.empty()) s.log.message("resuming with " + changed);
    // What the task carries from batch to batch (a language model's TBPTT state) continues too.
    task_.restore_artifacts(header.artifacts);
    t = header.state;
    if (t.best_metric != best_.name) {
      s.log.message("best_metric is " + best_.name + " but " + last + " chose its best by " + t.best_metric +
                    ": the best (checkpoint_best.pt) and the patience count start over at the next validation");
      t.best_metric = best_.name;
      t.best_value = best_.higher ? -1e300 : 1e300;
      t.bad_validations = 0;
    }
    schedule_->load_state(t.schedule_state);
    s.log.start(/*resume=*/true, t.step);
    s.log.message("resumed from " + last + " at step " + std::to_string(t.step) + ", epoch " + std::to_string(t.epoch + 1));
    const Stop stop = stop_reason();
    if (stop == Stop::kBudget) {
      // Epochs counted from 1, as the "resumed" line and the progress lines count them.
      s.log.message("nothing to train: the run is at step " + std::to_string(t.step) + ", epoch " +
                    std::to_string(t.epoch + 1) + " (" + std::to_string(t.epoch) +
                    " done), and a budget is reached (max_steps " + std::to_string(s.max_steps) + ", max_epochs " +
                    std::to_string(s.max_epochs) + "); raise it for this invocation, e.g. --max-steps N");
      return false;
    }
    if (stop == Stop::kEarlyStopping) {
      s.log.message("nothing to train: early stopping ended this run (" + std::to_string(t.bad_validations) +
                    " validations without improvement, patience " + std::to_string(s.patience) +
                    "); raise patience to continue");
      return false;
    }
  } else {
    torch::manual_seed(static_cast<uint64_t>(options_.seed));
    t.best_metric = best_.name;
    t.best_value = best_.higher ? -1e300 : 1e300;
    s.log.start(/*resume=*/false, 0);
  }
  if (resume && t.world_size != shard_.world_size) {
    // The batch plan is global, so the run goes on from the same place; its global batch is the
    // ranks' batches together (the checkpoint's update_freq is not known: the config's may differ).
    const int64_t now = shard_.world_size * s.update_freq;
    s.log.message("warning: the checkpoint was written by " + std::to_string(t.world_size) +
                  " data-parallel rank(s) and this run has " + std::to_string(shard_.world_size) +
                  ": it goes on from the same place in the batch plan (epoch " + std::to_string(t.epoch + 1) +
                  ", batch " + std::to_string(t.batch_index) + "), each update now taking " + std::to_string(now) +
                  " batches (" + std::to_string(shard_.world_size) + " ranks x update_freq " +
                  std::to_string(s.update_freq) + "); a different global batch is a different run");
  }
  on_begin(resume);
  t.world_size = shard_.world_size;
  if (writer()) atomic_write_text(run_dir_ + "/config.ini", saved_config());
  s.elapsed_before = t.elapsed_s;
  s.first_step = t.step;
  s.last_validated_step = -1;
  return true;
}

std::string Trainer::start_line() {
  const auto& s = *state_;
  int64_t parameters = 0;
  for (const auto& p : model_->parameters()) parameters += p.numel();
  std::ostringstream line;
  const std::string& precision = options_.precision.precision;
  line << "training " << task_name_ << ": " << parameters << " parameters on " << device_ << " (" << precision
       << (precision == "auto" ? ": " + to_string(precision_) : "") << ") | "
       << task_.num_batches(Split::kTrain, s.training.epoch) << " batches per epoch, " << s.update_freq
       << " per update";
  if (shard_.world_size > 1) line << " on each of " << shard_.world_size << " ranks";
  line << " | budget:";
  if (s.max_steps > 0) line << " max_steps " << s.max_steps;
  if (s.max_epochs > 0) line << " max_epochs " << s.max_epochs;
  if (s.max_time_s > 0) line << " max_time " << s.max_time_s / 60 << " min";
  if (s.max_steps <= 0 && s.max_epochs <= 0 && s.max_time_s <= 0) line << " none (stop with Ctrl-C)";
  line << " | progress every " << options_.log_interval << " updates";
  if (const double seconds = options_.log_seconds; seconds > 0) line << " or " << seconds << " s";
  return line.str();
}

void Trainer::check_warmup_budget() {
  auto& s = *state_;
  const int64_t warmup = schedule_->warmup_steps();
  if (s.warmup_checked || s.max_time_s <= 0 || warmup <= s.training.step) return;
  // After a minute (or a tenth of a shorter budget) the measured rate is a fair estimate.
  const double run = seconds_since(s.run_start);
  if (run < std::min(60.0, s.max_time_s / 10)) return;
  s.warmup_checked = true;
  const auto warning = warmup_budget_warning(warmup, s.training.step, s.training.step - s.first_step, run, s.max_time_s);
  if (!warning.empty()) s.log.message(warning);
}

int Trainer::loop() {
  auto& s = *state_;
  auto& t = s.training;
  model_->train();
  Stop stop;
  while ((stop = stop_reason()) == Stop::kNo) {
    const int64_t epoch_before = t.epoch;
    const auto out = step();
    if (out.units == 0) break;
    s.finite.note(out.loss_sum);
    s.finite.note(out.grad_norm);
    if (t.step % options_.log_interval == 0) s.finite.require(t.step, t.lr, s.clip_norm);
    s.log.update({t.step, t.epoch, t.lr, out.loss_sum, out.units, out.grad_norm,
                  s.elapsed_before + seconds_since(s.run_start), eta_s()});
    if (t.step == s.first_step + 1)
      s.log.message("first update: " + std::to_string(out.units) + " " + profile_.unit + " in " +
                    std::to_string(out.examples) + " examples");
    check_warmup_budget();
    const bool epoch_ended = t.epoch > epoch_before;
    if (s.valid_interval > 0 ? t.step % s.valid_interval == 0 : epoch_ended) validate();
  }
  s.finite.require(t.step, t.lr, s.clip_norm);
  if (stop == Stop::kInterrupted) {
    const int signal = stop_signal();
    t.elapsed_s = s.elapsed_before + seconds_since(s.run_start);
    save("checkpoint_last.pt");
    s.log.message(std::string("interrupted (") + (signal == SIGTERM ? "SIGTERM" : "SIGINT") + "): saved " + run_dir_ +
                  "/checkpoint_last.pt; continue with --resume");
    return 128 + signal;  // the shell's status for a process the signal ended: 130, 143
  }
  if (stop == Stop::kEarlyStopping)
    s.log.message("early stopping: no improvement in " + std::to_string(s.patience) + " validations");
  // The final state is validated and saved unless the last update just was.
  if (s.last_validated_step != t.step) validate();
  s.log.done(t.step, t.best_valid_loss, best_.name, t.best_value, run_dir_);
  return 0;
}

int Trainer::train(bool resume) {
  StopSignalGuard stop_signals;
  if (!begin(resume)) return 0;
  state_->log.message(start_line());
  auto& batches = state_->batches;
  batches = std::make_unique<TrainBatches>(task_, state_->training.epoch, state_->training.batch_index, shard_.rank,
                                           shard_.world_size);
  // The prefetch thread stops however the loop ends.
  struct Stopper {
    std::unique_ptr<TrainBatches>& batches;
    ~Stopper() { batches.reset(); }
  } stopper{batches};
  const int status = loop();
  on_end();
  return status;
}

}  // namespace nlpzoo
