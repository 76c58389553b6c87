#include "train/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "core/io.h"

namespace nlpzoo {

void LrScheduleOptions::bind(OptionBinder& b) {
  b.field("lr", lr, "peak learning rate (for noam: a multiplier of d_model^-0.5)", finite_at_least(0));
  b.field("lr_schedule", kind, "learning-rate schedule", kLrScheduleNames);
  b.field("warmup_steps", warmup_steps, "updates of linear warmup from 0 to lr", at_least(0));
  b.field("warmup_fraction", warmup_fraction,
          "warm-up as a fraction of the budget (replaces warmup_steps when > 0): of max_steps or max_epochs' updates, "
          "else of max_time (then in training time; not with noam or inverse_sqrt). Written into the run's config as "
          "warmup_steps or warmup_time",
          rate());
  b.field("warmup_time", warmup_time, "minutes of training time of linear warmup (derived from warmup_fraction; 0 = none)",
          finite_at_least(0));
  b.field("plateau_factor", plateau_factor, "plateau: multiply lr by this when valid loss stops improving",
          NumberCheck{[](double x) -> std::string { return x > 0 && x <= 1 ? "" : "must be in (0, 1]"; }});
  b.field("plateau_patience", plateau_patience, "plateau: validations without improvement before decaying", at_least(0));
  b.field("min_lr", min_lr, "plateau, linear_decay: lower bound of the learning rate; cosine: the rate it decays to",
          finite_at_least(0));
  b.field("decay_steps", decay_steps,
          "linear_decay: updates over which lr falls linearly to 0 (floored at min_lr); cosine: updates at which it "
          "reaches min_lr; 0 = the whole run, derived from max_steps or max_epochs",
          at_least(0));
  b.field("decay_time", decay_time,
          "linear_decay, cosine: minutes of training time over which lr falls instead of decay_steps (derived "
          "from max_time for a run that only max_time bounds, as 24h-BERT; 0 = none)",
          finite_at_least(0));
}

ConfigSchema lr_schedule_schema() { return schema_of<LrScheduleOptions>(); }

void check_lr_schedule(const LrScheduleOptions& o) {
  if (o.warmup_fraction != 0)
    throw std::logic_error("LrSchedule: warmup_fraction must be resolved first (resolve_warmup_fraction)");
  if (o.kind == LrScheduleKind::kNoam && o.d_model <= 0)
    throw UserError("config key 'lr_schedule': noam scales the rate by the model width d_model^-0.5, and this model "
                    "has no d_model (it is not a Transformer); use inverse_sqrt, the same shape with lr as its peak");
  if (o.kind == LrScheduleKind::kNoam && o.warmup_steps <= 0)
    throw UserError("config key 'warmup_steps': the noam schedule needs warmup_steps > 0");
  if ((o.kind == LrScheduleKind::kLinearDecay || o.kind == LrScheduleKind::kCosine) && o.decay_steps <= 0 &&
      o.decay_time <= 0)
    throw UserError("config key 'decay_steps': the " + enum_name(o.kind, kLrScheduleNames) + " schedule needs decay_steps > 0 (0 is the run's "
                    "number of updates only when max_steps or max_epochs bounds it; set one of them, decay_steps, "
                    "or max_time / decay_time for a time-based decay)");
}

LrScheduleOptions lr_schedule_options(const Config& c, int64_t d_model) {
  auto o = bind_options<LrScheduleOptions>(c);
  o.d_model = d_model;
  check_lr_schedule(o);
  return o;
}

void resolve_warmup_fraction(LrScheduleOptions& o, int64_t planned_updates, double max_time) {
  const double f = o.warmup_fraction;
  if (f == 0) return;
  if (!(f > 0 && f < 1)) throw UserError("config key 'warmup_fraction': must be in [0, 1), got " + format_number(f));
  if (o.kind == LrScheduleKind::kConstant)
    throw UserError("config key 'warmup_fraction': lr_schedule constant has no warm-up; use linear_warmup");
  if (planned_updates > 0) {
    o.warmup_steps = std::max<int64_t>(1, std::llround(f * planned_updates));
  } else if (max_time > 0) {
    if (o.kind == LrScheduleKind::kNoam || o.kind == LrScheduleKind::kInverseSqrt)
      throw UserError("config key 'warmup_fraction': a time-based warm-up (budget max_time only) needs lr_schedule "
                      "linear_warmup, plateau or linear_decay; " + enum_name(o.kind, kLrScheduleNames) +
                      " decays from warmup_steps, so set warmup_steps (or max_steps)");
    // To the microminute (6 decimals), the precision the run's config has always kept it in.
    o.warmup_time = std::stod(std::to_string(f * max_time));
  } else {
    throw UserError("config key 'warmup_fraction': a fraction of the budget needs a budget (max_steps, max_epochs or "
                    "max_time)");
  }
  o.warmup_fraction = 0;
}

std::string warmup_budget_warning(int64_t warmup_steps, int64_t step_now, int64_t updates, double elapsed_s,
                                  double max_time_s) {
  if (warmup_steps <= step_now || updates <= 0 || elapsed_s <= 0 || max_time_s <= 0) return "";
  const double rate = updates / elapsed_s;
  const int64_t reachable = step_now + std::llround(rate * std::max(0.0, max_time_s - elapsed_s));
  if (warmup_steps <= reachable) return "";
  char rate_text[32];
  std::snprintf(rate_text, sizeof rate_text, "%.3g", rate);
  return "warning: warm-up lasts warmup_steps = " + std::to_string(warmup_steps) + " updates, but at " + rate_text +
         " updates/s max_time allows about " + std::to_string(reachable) +
         ": the learning rate will still be rising when the budget ends. Lower warmup_steps, or give the warm-up as "
         "a fraction of the budget (warmup_fraction, e.g. 0.1)";
}

int64_t LrSchedule::warmup_steps() const {
  return options_.kind == LrScheduleKind::kConstant || options_.warmup_time > 0 ? 0 : options_.warmup_steps;
}

double LrSchedule::lr_at(int64_t step, double elapsed_s) const {
  const auto& o = options_;
  const double s = static_cast<double>(std::max<int64_t>(step, 1));
  const double warmup_s = o.warmup_time * 60, decay_s = o.decay_time * 60;
  const double w = warmup_s > 0         ? std::min(1.0, elapsed_s / warmup_s)
                   : o.warmup_steps > 0 ? std::min(1.0, s / o.warmup_steps)
                                        : 1.0;
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
      lr = o.lr * w *
           std::max(0.0, 1.0 - (decay_s > 0 ? elapsed_s / decay_s
                                                   : (s - 1) / static_cast<double>(std::max<int64_t>(o.decay_steps, 1))));
      return std::max(lr * scale_, o.min_lr);
    case LrScheduleKind::kCosine: {
      if (w < 1) return o.lr * w;
      const double span = static_cast<double>(std::max<int64_t>(o.decay_steps - o.warmup_steps, 1));
      const double r = std::clamp(decay_s > 0 ? elapsed_s / decay_s : (s - o.warmup_steps) / span, 0.0, 1.0);
      return o.min_lr + (o.lr - o.min_lr) * 0.5 * (1 + std::cos(M_PI * r));
    }
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
