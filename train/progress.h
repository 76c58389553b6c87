#pragma once
// Training progress: one live line on a terminal (rewritten in place), plain log lines
// when stdout is a file or a pipe (CI logs, nohup).
#include <cstdint>
#include <optional>
#include <string>

namespace nlpzoo {

struct ProgressInfo {
  int64_t step = 0;
  int64_t epoch = 0;
  std::optional<double> loss;  // per unit, over the last report's updates (none before the first)
  bool perplexity = true;      // also show exp(loss)
  double lr = 0;
  double units_per_s = 0;
  std::string unit = "tokens";      // what units_per_s counts (Task::TrainingProfile::unit)
  std::optional<double> grad_norm;  // before clipping, over the last report's updates (none: no gradient is formed)
  double eta_s = -1;                // seconds to the nearest budget, -1 if unbounded
};

class Progress {
 public:
  /// `live`: rewrite one line in place (default: stdout is a terminal).
  explicit Progress(bool live);
  static bool stdout_is_terminal();
  /// Called every update; prints when live, or every `log_interval` steps otherwise.
  void update(const ProgressInfo& info, bool report);
  /// A line that must stay on screen (validation results, checkpoints).
  void message(const std::string& line);

 private:
  bool live_;
  bool line_open_ = false;
};

std::string format_duration(double seconds);

}  // namespace nlpzoo
