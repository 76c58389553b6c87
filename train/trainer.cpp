#include "train/trainer.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "datasets/io.h"
#include "train/checkpoint.h"
#include "train/precision.h"
#include "train/prefetcher.h"
#include "train/progress.h"

namespace nlpzoo {

namespace fs = std::filesystem;

ConfigSchema trainer_schema() {
  ConfigSchema s;
  s.add("task", "translation", "which Task trains (fixes the model family and its config keys)")
      .add("optimizer", "adam", "optimizer", {"adam", "adamw", "sgd", "adagrad"})
      .add("adam_beta1", "0.9", "Adam/AdamW beta1")
      .add("adam_beta2", "0.999", "Adam/AdamW beta2")
      .add("adam_eps", "1e-8", "Adam/AdamW epsilon")
      .add("weight_decay", "0", "L2 penalty (decoupled for adamw)")
      .add("momentum", "0", "SGD momentum")
      .add("adagrad_initial_accumulator", "0", "AdaGrad's starting sum of squared gradients (glove.c: 1)")
      .add("clip_norm", "1.0", "clip gradients to this global L2 norm (0 = no clipping)")
      .add("update_freq", "1", "batches whose gradients are accumulated per update")
      .add("seed", "1234", "seed of parameter init, dropout and batch order")
      .add("max_epochs", "0", "stop after this many epochs (0 = no limit)")
      .add("max_steps", "0", "stop after this many updates in total (0 = no limit)")
      .add("max_time", "0", "stop after this many minutes of this invocation (0 = no limit)")
      .add("valid_interval", "500", "validate and save every N updates (0 = once per epoch)")
      .add("log_interval", "50", "print and log metrics every N updates")
      .add("patience", "0", "stop after N validations without improvement (0 = never)")
      .add("device", "auto", "auto | cpu | cuda | cuda:N")
      .add("data_dir", "data/bible", "corpus folder (the task says which files it reads there)");
  s.merge(lr_schedule_schema());
  s.merge(precision_schema());
  return s;
}

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

double clip_gradients(const std::vector<torch::Tensor>& params, double max_norm) {
  // Sparse gradients (embeddings with sparse(true)) may list a row several times; the norm is
  // that of the summed rows, so they are coalesced first (in place: the optimizer then adds
  // each row once). LibTorch's clip_grad_norm_ is not used because of them.
  std::vector<torch::Tensor> grads;
  for (const auto& p : params) {
    if (!p.grad().defined()) continue;
    if (p.grad().is_sparse() && !p.grad().is_coalesced()) p.mutable_grad() = p.grad().coalesce();
    grads.push_back(p.grad());
  }
  if (grads.empty()) return 0.0;
  std::vector<torch::Tensor> squares;
  for (const auto& g : grads) squares.push_back((g.is_sparse() ? g._values() : g).pow(2).sum().to(torch::kDouble));
  const double norm = std::sqrt(torch::stack(squares).sum().item<double>());
  // As torch.nn.utils.clip_grad_norm_: scale by min(1, max_norm / (norm + 1e-6)).
  const double scale = max_norm / (norm + 1e-6);
  if (max_norm > 0 && scale < 1.0)
    for (auto& g : grads) (g.is_sparse() ? g._values() : g).mul_(scale);
  return norm;
}

double SplitLoss::perplexity() const { return std::exp(std::min(loss, 100.0)); }

SplitLoss evaluate_loss(Task& task, Split split, const torch::Device& device) {
  auto model = task.model();
  const bool was_training = model->is_training();
  model->eval();
  torch::NoGradGuard no_grad;
  double sum = 0;
  int64_t tokens = 0;
  const int64_t n = task.num_batches(split, 0);
  int64_t i = 0;
  Prefetcher<Batch> batches([&]() -> std::optional<Batch> {
    if (i >= n) return std::nullopt;
    return task.make_batch(split, 0, i++);
  }, 4);
  while (auto batch = batches.next()) {
    auto out = task.loss(batch->to(device));
    sum += out.loss_sum.item<double>();
    tokens += out.num_tokens;
  }
  model->train(was_training);
  if (tokens == 0) throw UserError("the " + to_string(split) + " split is empty");
  return {sum / tokens, tokens};
}

namespace {

std::atomic<bool> g_interrupted{false};
extern "C" void on_sigint(int) { g_interrupted = true; }

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const Config& c, std::vector<torch::Tensor> params) {
  const auto& name = c.get("optimizer");
  const double lr = c.get_double("lr");
  if (name == "sgd")
    return std::make_unique<torch::optim::SGD>(
        params, torch::optim::SGDOptions(lr).momentum(c.get_double("momentum")).weight_decay(c.get_double("weight_decay")));
  if (name == "adagrad")
    return std::make_unique<torch::optim::Adagrad>(
        params, torch::optim::AdagradOptions(lr).initial_accumulator_value(c.get_double("adagrad_initial_accumulator"))
                    .weight_decay(c.get_double("weight_decay")));
  auto betas = std::make_tuple(c.get_double("adam_beta1"), c.get_double("adam_beta2"));
  if (name == "adamw")
    return std::make_unique<torch::optim::AdamW>(params, torch::optim::AdamWOptions(lr).betas(betas).eps(
                                                             c.get_double("adam_eps")).weight_decay(c.get_double("weight_decay")));
  return std::make_unique<torch::optim::Adam>(params, torch::optim::AdamOptions(lr).betas(betas).eps(
                                                          c.get_double("adam_eps")).weight_decay(c.get_double("weight_decay")));
}

void set_lr(torch::optim::Optimizer& opt, double lr) {
  for (auto& group : opt.param_groups()) group.options().set_lr(lr);
}

void append_metrics(const std::string& path, const nlohmann::json& record) {
  std::ofstream out(path, std::ios::app);
  out << record.dump() << "\n";
}

// On resume, drop metric lines logged after the checkpoint, which the resumed run repeats.
void truncate_metrics(const std::string& path, int64_t step) {
  if (!fs::exists(path)) return;
  std::string kept;
  for (const auto& line : read_lines(path)) {
    try {
      if (nlohmann::json::parse(line).value("step", int64_t{0}) <= step) kept += line + "\n";
    } catch (const nlohmann::json::exception&) {
      // a line cut by a crash: drop it
    }
  }
  atomic_write_text(path, kept);
}

}  // namespace

struct Trainer::State {
  TrainingState training;
};

Trainer::Trainer(Task& task, Config config, std::string task_name, std::string run_dir)
    : task_(task), config_(std::move(config)), task_name_(std::move(task_name)), run_dir_(std::move(run_dir)),
      device_(parse_device(config_.get("device"))), state_(std::make_shared<State>()) {
  fs::create_directories(run_dir_);
  model_ = task_.model();
  model_->to(device_);
  optimizer_ = make_optimizer(config_, model_->parameters());
  schedule_ = std::make_unique<LrSchedule>(lr_schedule_options(config_));
}

std::string Trainer::saved_config() const {
  // max_time budgets one invocation: a later --resume should not inherit it.
  Config saved = config_;
  saved.set("max_time", "0");
  return saved.to_ini();
}

void Trainer::save(const std::string& name) {
  auto& t = state_->training;
  t.schedule_state = schedule_->state();
  save_checkpoint(run_dir_ + "/" + name, *model_, optimizer_.get(),
                  {task_name_, saved_config(), task_.artifacts(), t});
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
  for (const auto& [key, value] : config_.values()) {
    auto it = before.find(key);
    if (it == before.end() || it->second == value || key == "max_time" || key == "max_steps") continue;
    changed += (changed.empty() ? "" : ", ") + key + " (" + it->second + " -> " + value + ")";
  }
  return changed.empty() ? "" : "; config keys changed since the checkpoint: " + changed +
                                    " (a model's shape cannot change on --resume)";
}

double Trainer::validate() {
  const AutocastGuard autocast(config_.get("precision"), device_);
  return evaluate_loss(task_, Split::kValid, device_).loss;
}

bool Trainer::budget_reached(double run_elapsed_s) const {
  const auto& t = state_->training;
  const int64_t max_steps = config_.get_int("max_steps");
  const int64_t max_epochs = config_.get_int("max_epochs");
  const double max_time = config_.get_double("max_time");
  return (max_steps > 0 && t.step >= max_steps) || (max_epochs > 0 && t.epoch >= max_epochs) ||
         (max_time > 0 && run_elapsed_s >= max_time * 60);
}

int Trainer::train(bool resume) {
  auto& t = state_->training;
  const std::string last = run_dir_ + "/checkpoint_last.pt";
  const std::string metrics = run_dir_ + "/metrics.jsonl";
  Progress progress(Progress::stdout_is_terminal());
  if (resume) {
    auto header = read_checkpoint_header(last);
    if (header.task != task_name_) throw UserError(last + ": checkpoint of task '" + header.task + "', not '" + task_name_ + "'");
    try {
      load_checkpoint_weights(last, *model_, optimizer_.get(), /*restore_rng=*/true);
    } catch (const UserError& e) {
      throw UserError(std::string(e.what()) + changed_keys(header.config));
    }
    // What the task carries from batch to batch (a language model's TBPTT state) continues too.
    task_.restore_artifacts(header.artifacts);
    t = header.state;
    schedule_->load_state(t.schedule_state);
    truncate_metrics(metrics, t.step);
    progress.message("resumed from " + last + " at step " + std::to_string(t.step) + ", epoch " +
                     std::to_string(t.epoch + 1));
  } else {
    torch::manual_seed(static_cast<uint64_t>(config_.get_int("seed")));
    if (fs::exists(metrics)) fs::remove(metrics);
  }
  if (resume && budget_reached(0)) {
    progress.message("nothing to train: the run is at step " + std::to_string(t.step) + ", epoch " +
                     std::to_string(t.epoch) + ", and a budget is reached (max_steps " + config_.get("max_steps") +
                     ", max_epochs " + config_.get("max_epochs") + "); raise it, e.g. --max-steps N");
    return 0;
  }
  atomic_write_text(run_dir_ + "/config.ini", saved_config());

  const int64_t update_freq = std::max<int64_t>(1, config_.get_int("update_freq"));
  const double clip_norm = config_.get_double("clip_norm");
  const int64_t log_interval = std::max<int64_t>(1, config_.get_int("log_interval"));
  const int64_t valid_interval = config_.get_int("valid_interval");
  const int64_t patience = config_.get_int("patience");
  const int64_t max_steps = config_.get_int("max_steps");
  const double max_time_s = config_.get_double("max_time") * 60;

  // The prefetch thread walks (epoch, index) from the saved position onwards.
  int64_t next_epoch = t.epoch, next_index = t.batch_index, epoch_size = -1;
  struct Item {
    int64_t epoch, index, epoch_size;
    Batch batch;
  };
  Prefetcher<Item> loader([&]() -> std::optional<Item> {
    for (int guard = 0; guard < 2; ++guard) {
      if (epoch_size < 0) epoch_size = task_.num_batches(Split::kTrain, next_epoch);
      if (epoch_size == 0) throw UserError("the train split produced no batches (empty corpus?)");
      if (next_index < epoch_size) {
        Item item{next_epoch, next_index, epoch_size, task_.make_batch(Split::kTrain, next_epoch, next_index)};
        ++next_index;
        return item;
      }
      ++next_epoch;
      next_index = 0;
      epoch_size = -1;
    }
    return std::nullopt;
  }, 8);

  g_interrupted = false;
  auto previous_handler = std::signal(SIGINT, on_sigint);
  model_->train();
  const auto run_start = std::chrono::steady_clock::now();
  auto since = [](auto start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  const double elapsed_before = t.elapsed_s;
  const int64_t first_step = t.step;
  double report_loss = 0, report_grad = 0;
  int64_t report_tokens = 0, report_steps = 0;
  auto report_start = std::chrono::steady_clock::now();
  bool stop_early = false;
  int status = 0;

  auto do_validation = [&]() {
    const double valid = validate();
    schedule_->on_validation(valid);
    const bool best = valid < t.best_valid_loss;
    if (best) {
      t.best_valid_loss = valid;
      t.bad_validations = 0;
    } else {
      ++t.bad_validations;
    }
    append_metrics(metrics, {{"step", t.step}, {"epoch", t.epoch + 1}, {"valid_loss", valid},
                             {"valid_ppl", std::exp(std::min(valid, 100.0))}, {"best", best}});
    std::ostringstream msg;
    msg.precision(4);
    msg << std::fixed << "valid | step " << t.step << " | loss " << valid << " | ppl " << std::exp(std::min(valid, 100.0))
        << (best ? " | new best" : "");
    progress.message(msg.str());
    t.elapsed_s = elapsed_before + since(run_start);
    if (best) save("checkpoint_best.pt");
    save("checkpoint_last.pt");
    if (patience > 0 && t.bad_validations >= patience) {
      progress.message("early stopping: no improvement in " + std::to_string(patience) + " validations");
      stop_early = true;
    }
  };

  while (!budget_reached(since(run_start)) && !stop_early) {
    if (g_interrupted) {
      t.elapsed_s = elapsed_before + since(run_start);
      save("checkpoint_last.pt");
      progress.message("interrupted: saved " + last + "; continue with --resume");
      status = 130;
      break;
    }
    // One update: accumulate `update_freq` batches, then normalise by all their tokens.
    // Sparse gradients are dropped rather than zeroed: backward then keeps its own sparse
    // gradient instead of appending every row to an emptied one (a copy per update).
    for (auto& p : model_->parameters())
      if (p.grad().defined() && p.grad().is_sparse()) p.mutable_grad() = torch::Tensor();
    optimizer_->zero_grad();
    double loss_sum = 0;
    int64_t tokens = 0;
    const int64_t epoch_before = t.epoch;  // an epoch ended during this update if it changes
    // The rate of the update these batches make; a task that updates in place applies it itself.
    const bool in_place = task_.updates_in_place();
    const double lr = schedule_->lr_at(t.step + 1);
    for (int64_t k = 0; k < update_freq; ++k) {
      auto item = loader.next();
      if (!item) break;
      // The position is that of the next unread batch, so an epoch that is used up counts
      // as done (max_epochs) and a resume starts exactly where this run stopped reading.
      const bool last_of_epoch = item->index + 1 == item->epoch_size;
      t.epoch = last_of_epoch ? item->epoch + 1 : item->epoch;
      t.batch_index = last_of_epoch ? 0 : item->index + 1;
      LossOutput out;
      if (in_place) {
        torch::NoGradGuard no_grad;
        out = task_.train_in_place(item->batch.to(device_), lr);
      } else {
        {  // the forward pass and loss in the run's precision; backward outside, as torch.autocast
          const AutocastGuard autocast(config_.get("precision"), device_);
          out = task_.loss(item->batch.to(device_));
        }
        out.loss_sum.backward();
      }
      loss_sum += out.loss_sum.item<double>();
      tokens += out.num_tokens;
    }
    if (tokens == 0) break;
    double grad_norm = 0;  // reported as 0 for in-place updates (no gradient is formed)
    if (!in_place) {
      if (task_.gradient_reduction() == Task::GradientReduction::kMean)
        for (auto& p : model_->parameters())
          if (p.grad().defined()) p.grad().div_(static_cast<double>(tokens));
      grad_norm = clip_gradients(model_->parameters(), clip_norm);
    }
    ++t.step;
    t.lr = lr;
    if (!in_place) {
      set_lr(*optimizer_, t.lr);
      optimizer_->step();
    }

    report_loss += loss_sum;
    report_tokens += tokens;
    report_grad += grad_norm;
    ++report_steps;
    const double run_elapsed = since(run_start);
    const double tokens_per_s = report_tokens / std::max(1e-9, since(report_start));
    double eta = -1;
    if (max_time_s > 0) eta = max_time_s - run_elapsed;
    if (max_steps > 0) {
      const double per_step = run_elapsed / std::max<int64_t>(1, t.step - first_step);
      const double steps_eta = (max_steps - t.step) * per_step;
      eta = eta < 0 ? steps_eta : std::min(eta, steps_eta);
    }
    const bool report = t.step % log_interval == 0;
    progress.update({t.step, t.epoch, report_loss / report_tokens, t.lr, tokens_per_s, report_grad / report_steps, eta},
                    report);
    if (report) {
      append_metrics(metrics, {{"step", t.step}, {"epoch", t.epoch + 1}, {"loss", report_loss / report_tokens},
                               {"ppl", std::exp(std::min(report_loss / report_tokens, 100.0))}, {"lr", t.lr},
                               {"tokens_per_s", tokens_per_s}, {"grad_norm", report_grad / report_steps},
                               {"elapsed_s", elapsed_before + run_elapsed}});
      report_loss = report_grad = 0;
      report_tokens = report_steps = 0;
      report_start = std::chrono::steady_clock::now();
    }
    const bool epoch_ended = t.epoch > epoch_before && valid_interval == 0;
    if ((valid_interval > 0 && t.step % valid_interval == 0) || epoch_ended) do_validation();
  }
  if (status == 0) {
    // Final validation unless the last update was just validated.
    if (!(valid_interval > 0 && t.step % valid_interval == 0) || t.step == 0) do_validation();
    progress.message("done: " + std::to_string(t.step) + " updates, best valid loss " +
                     std::to_string(t.best_valid_loss) + " (ppl " +
                     std::to_string(std::exp(std::min(t.best_valid_loss, 100.0))) + "), checkpoints in " + run_dir_);
  }
  std::signal(SIGINT, previous_handler);
  return status;
}

}  // namespace nlpzoo
