#pragma once
// Learning-rate schedules (LibTorch 1.13 ships only StepLR). The rate for update `step`
// (1-based) is computed from the formula, never accumulated, so a resumed run gets the same
// rate as an uninterrupted one; only the plateau state needs saving.
#include <cstdint>
#include <string>
#include <vector>

#include "train/config.h"

namespace nlpzoo {

enum class LrScheduleKind { kConstant, kLinearWarmup, kInverseSqrt, kNoam, kPlateau, kLinearDecay };

struct LrScheduleOptions {
  LrScheduleKind kind = LrScheduleKind::kConstant;
  double lr = 1e-3;             // peak rate
  int64_t warmup_steps = 0;     // linear warmup from 0 to lr over these updates (all kinds)
  int64_t d_model = 0;          // noam only: the model width (Task::TrainingProfile::d_model)
  double plateau_factor = 0.5;  // plateau: multiply the rate by this ...
  int64_t plateau_patience = 1; // ... after this many validations without improvement
  double min_lr = 1e-6;         // plateau and linear_decay never go below this
  int64_t decay_steps = 0;      // linear_decay: updates over which the rate falls from lr to 0
};

/// The schedule's keys (lr, lr_schedule, warmup_steps, ...) for the trainer's ConfigSchema.
ConfigSchema lr_schedule_schema();
/// The schedule from the config's keys; `d_model` is the model's width for noam (0: none).
/// Throws UserError naming the key for noam without warmup_steps or a model without d_model,
/// and for linear_decay without decay_steps.
LrScheduleOptions lr_schedule_options(const Config& config, int64_t d_model = 0);

class LrSchedule {
 public:
  explicit LrSchedule(const LrScheduleOptions& options) : options_(options) {}

  /// Rate for update `step` >= 1:
  ///   warmup factor      w(step) = min(1, step / warmup_steps)          (1 if warmup_steps = 0)
  ///   constant           lr
  ///   linear_warmup      lr * w(step)
  ///   inverse_sqrt       lr * w(step) * sqrt(max(warmup_steps,1) / max(step, warmup_steps)) (fairseq)
  ///   noam               lr * d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5) (Vaswani et al. 2017, eq. 3)
  ///   plateau            lr * w(step) * factor^k after k reductions
  ///   linear_decay       max(min_lr, lr * w(step) * (1 - (step - 1) / decay_steps)) (word2vec.c's
  ///                      alpha = starting_alpha * max(1e-4, 1 - words_done / words_total))
  double lr_at(int64_t step) const;

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
