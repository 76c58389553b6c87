#include "train/lr_schedule.h"

#include <algorithm>
#include <cmath>

#include "datasets/io.h"

namespace nlpzoo {

ConfigSchema lr_schedule_schema() {
  ConfigSchema s;
  s.add("lr", "0.001", "peak learning rate (for noam: a multiplier of d_model^-0.5)")
      .add("lr_schedule", "constant", "learning-rate schedule",
           {"constant", "linear_warmup", "inverse_sqrt", "noam", "plateau", "linear_decay"})
      .add("warmup_steps", "0", "updates of linear warmup from 0 to lr")
      .add("plateau_factor", "0.5", "plateau: multiply lr by this when valid loss stops improving")
      .add("plateau_patience", "1", "plateau: validations without improvement before decaying")
      .add("min_lr", "1e-6", "plateau, linear_decay: lower bound of the learning rate")
      .add("decay_steps", "0", "linear_decay: updates over which lr falls linearly to 0 (floored at min_lr); "
                               "0 = the whole run, derived from max_steps or max_epochs");
  return s;
}

LrScheduleOptions lr_schedule_options(const Config& c, int64_t d_model) {
  LrScheduleOptions o;
  const auto& kind = c.get("lr_schedule");
  o.kind = kind == "linear_warmup" ? LrScheduleKind::kLinearWarmup
           : kind == "inverse_sqrt" ? LrScheduleKind::kInverseSqrt
           : kind == "noam"         ? LrScheduleKind::kNoam
           : kind == "plateau"      ? LrScheduleKind::kPlateau
           : kind == "linear_decay" ? LrScheduleKind::kLinearDecay
                                    : LrScheduleKind::kConstant;
  o.lr = c.get_double("lr");
  o.warmup_steps = c.get_int("warmup_steps");
  o.d_model = d_model;
  o.plateau_factor = c.get_double("plateau_factor");
  o.plateau_patience = c.get_int("plateau_patience");
  o.min_lr = c.get_double("min_lr");
  o.decay_steps = c.get_int("decay_steps");
  if (o.kind == LrScheduleKind::kNoam && o.d_model <= 0)
    throw UserError("config key 'lr_schedule': noam scales the rate by the model width d_model^-0.5, and this model "
                    "has no d_model (it is not a Transformer); use inverse_sqrt, the same shape with lr as its peak");
  if (o.kind == LrScheduleKind::kNoam && o.warmup_steps <= 0)
    throw UserError("config key 'warmup_steps': the noam schedule needs warmup_steps > 0");
  if (o.kind == LrScheduleKind::kLinearDecay && o.decay_steps <= 0)
    throw UserError("config key 'decay_steps': the linear_decay schedule needs decay_steps > 0 (0 is the run's "
                    "number of updates only when max_steps or max_epochs bounds it; set one of them or decay_steps)");
  return o;
}

double LrSchedule::lr_at(int64_t step) const {
  const auto& o = options_;
  const double s = static_cast<double>(std::max<int64_t>(step, 1));
  const double w = o.warmup_steps > 0 ? std::min(1.0, s / o.warmup_steps) : 1.0;
  double lr = o.lr;
  switch (o.kind) {
    case LrScheduleKind::kConstant: break;
    case LrScheduleKind::kLinearWarmup:
    case LrScheduleKind::kPlateau: lr = o.lr * w; break;
    case LrScheduleKind::kInverseSqrt: {
      const double warm = std::max<int64_t>(o.warmup_steps, 1);
      lr = o.lr * w * std::sqrt(warm / std::max(s, warm));
      break;
    }
    case LrScheduleKind::kNoam:
      lr = o.lr * std::pow(static_cast<double>(o.d_model), -0.5) *
           std::min(std::pow(s, -0.5), s * std::pow(static_cast<double>(o.warmup_steps), -1.5));
      break;
    case LrScheduleKind::kLinearDecay:
      lr = o.lr * w * std::max(0.0, 1.0 - (s - 1) / static_cast<double>(std::max<int64_t>(o.decay_steps, 1)));
      return std::max(lr * scale_, o.min_lr);
  }
  return std::max(lr * scale_, o.kind == LrScheduleKind::kPlateau ? std::min(o.min_lr, lr) : 0.0);
}

void LrSchedule::on_validation(double valid_loss) {
  if (valid_loss < best_) {
    best_ = valid_loss;
    bad_ = 0;
    return;
  }
  if (options_.kind != LrScheduleKind::kPlateau) return;
  if (++bad_ >= options_.plateau_patience) {
    scale_ *= options_.plateau_factor;
    bad_ = 0;
  }
}

void LrSchedule::load_state(const std::vector<double>& s) {
  if (s.size() != 3) throw UserError("checkpoint: learning-rate schedule state has the wrong size");
  best_ = s[0];
  bad_ = static_cast<int64_t>(s[1]);
  scale_ = s[2];
}

}  // namespace nlpzoo
