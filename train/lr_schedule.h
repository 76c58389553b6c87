#pragma once
// Learning-rate schedules (LibTorch 1.13 ships only StepLR). The rate for update `step`
// (1-based) is computed from the formula, never accumulated, so a resumed run gets the same
// rate as an uninterrupted one; only the plateau state needs saving.
#include <cstdint>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/options.h"

namespace nlpzoo {

enum class LrScheduleKind { kConstant, kLinearWarmup, kInverseSqrt, kNoam, kPlateau, kLinearDecay, kCosine };
constexpr EnumNames<LrScheduleKind, 7> kLrScheduleNames{{{LrScheduleKind::kConstant, "constant"},
                                                         {LrScheduleKind::kLinearWarmup, "linear_warmup"},
                                                         {LrScheduleKind::kInverseSqrt, "inverse_sqrt"},
                                                         {LrScheduleKind::kNoam, "noam"},
                                                         {LrScheduleKind::kPlateau, "plateau"},
                                                         {LrScheduleKind::kLinearDecay, "linear_decay"},
                                                         {LrScheduleKind::kCosine, "cosine"}}};

/// The schedule's keys (lr, lr_schedule, warmup_steps, ...), in the config's units (times in
/// minutes of training time). The derived ones (warmup_steps or warmup_time from
/// warmup_fraction, decay_steps or decay_time for the whole run) are resolved here by the
/// Trainer and reach the run's config.ini through write_options.
struct LrScheduleOptions {
  LrScheduleKind kind = LrScheduleKind::kConstant;
  double lr = 1e-3;             // peak rate
  int64_t warmup_steps = 0;     // linear warmup from 0 to lr over these updates (all kinds)
  double warmup_fraction = 0;   // resolve_warmup_fraction turns it into warmup_steps or warmup_time
  double warmup_time = 0;       // > 0: the warm-up lasts this many minutes of training time instead
                                // (time-budgeted runs: warmup_fraction of max_time, as 24h-BERT)
  double plateau_factor = 0.5;  // plateau: multiply the rate by this ...
  int64_t plateau_patience = 1; // ... after this many validations without improvement
  double min_lr = 1e-6;         // plateau and linear_decay never go below this; cosine ends there
  int64_t decay_steps = 0;      // linear_decay: updates over which the rate falls from lr to 0; cosine: to min_lr
  double decay_time = 0;        // > 0: linear_decay falls to 0 over this many minutes of training time instead (24h-BERT)
  int64_t d_model = 0;          // noam only: the model width (Task::TrainingProfile::d_model); not a config key

  void bind(OptionBinder& b);
};

/// The schedule's keys for the trainer's ConfigSchema.
ConfigSchema lr_schedule_schema();
/// Throws UserError naming the key for noam without warmup_steps or a model without d_model,
/// and for linear_decay without decay_steps or decay_time; std::logic_error for a
/// warmup_fraction left unresolved (resolve_warmup_fraction).
void check_lr_schedule(const LrScheduleOptions& options);
/// The schedule read from the config's keys, `d_model` the model's width for noam (0: none),
/// checked as check_lr_schedule.
LrScheduleOptions lr_schedule_options(const Config& config, int64_t d_model = 0);

/// Turns warmup_fraction f > 0 into the warm-up a run keeps (so a resumed run continues the
/// same schedule): with a step budget (`planned_updates` > 0, from max_steps or max_epochs)
/// warmup_steps = max(1, round(f * planned_updates)); otherwise, with `max_time` T minutes,
/// warmup_time = f * T minutes of training time (24h-BERT's time-based schedule, Izsak et al.
/// 2021). warmup_fraction is then set to 0. Does nothing for f = 0.
/// Throws UserError naming warmup_fraction for f outside [0, 1), for a run without any budget,
/// for lr_schedule constant (no warm-up), and for a time-based warm-up with noam or inverse_sqrt, whose decay starts at warmup_steps.
void resolve_warmup_fraction(LrScheduleOptions& options, int64_t planned_updates, double max_time);

/// Whether a time budget leaves room for the warm-up: the run did `updates` updates (this
/// invocation) in `elapsed_s` seconds and ends after `max_time_s`; at that rate it reaches about
/// step_now + updates / elapsed_s * (max_time_s - elapsed_s). Returns a one-line warning naming
/// warmup_steps and that estimate when warmup_steps exceeds it, else "".
std::string warmup_budget_warning(int64_t warmup_steps, int64_t step_now, int64_t updates, double elapsed_s,
                                  double max_time_s);

class LrSchedule {
 public:
  explicit LrSchedule(const LrScheduleOptions& options) : options_(options) {}

  /// Rate for update `step` >= 1:
  ///   warmup factor      w(step) = min(1, step / warmup_steps)          (1 if warmup_steps = 0),
  ///                      or min(1, elapsed_s / (60 warmup_time)) with a time-based warm-up
  ///   constant           lr
  ///   linear_warmup      lr * w(step)
  ///   inverse_sqrt       lr * w(step) * sqrt(max(warmup_steps,1) / max(step, warmup_steps)) (fairseq)
  ///   noam               lr * d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5) (Vaswani et al. 2017, eq. 3)
  ///   plateau            lr * w(step) * factor^k after k reductions
  ///   linear_decay       max(min_lr, lr * w(step) * (1 - (step - 1) / decay_steps)) (word2vec.c's
  ///                      alpha = starting_alpha * max(1e-4, 1 - words_done / words_total)); with
///                      decay_time > 0, (step - 1) / decay_steps becomes elapsed_s / (60 decay_time)
  ///   cosine             lr * w(step) while step <= warmup_steps, then
  ///                      min_lr + (lr - min_lr) (1 + cos(π r)) / 2, r = min(1, (step - warmup_steps) /
  ///                      (decay_steps - warmup_steps)) (Loshchilov & Hutter 2017 without restarts, as
  ///                      nanoGPT's get_lr); with decay_time > 0, r = elapsed_s / (60 decay_time)
  /// `elapsed_s`: training time so far (all invocations), read only by a time-based warm-up.
  double lr_at(int64_t step, double elapsed_s = 0) const;
  /// Updates of step-based warm-up that the rate depends on (0: none or time-based).
  int64_t warmup_steps() const;

  /// Plateau decay (any kind): called with each validation loss.
  void on_validation(double valid_loss);

  std::vector<double> state() const { return {best_, static_cast<double>(bad_), scale_}; }
  void load_state(const std::vector<double>& s);

 private:
  LrScheduleOptions options_;
  double best_ = 1e300;
  int64_t bad_ = 0;
  double scale_ = 1.0;
};

}  // namespace nlpzoo
