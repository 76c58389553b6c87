#pragma once
// Training progress: one live line on a terminal (rewritten in place), plain log lines
// when stdout is a file or a pipe (CI logs, nohup).
#include <cstdint>
#include <string>

namespace nlpzoo {

struct ProgressInfo {
  int64_t step = 0;
  int64_t epoch = 0;
  double loss = 0;         // per token, averaged since the last report
  double lr = 0;
  double tokens_per_s = 0;
  double grad_norm = 0;    // before clipping
  double eta_s = -1;       // seconds to the nearest budget, -1 if unbounded
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
