#pragma once
// What a training run reports, in its task's units (Task::TrainingProfile): a live progress
// line every update on a terminal, a plain line and a metrics.jsonl record every log_interval
// updates (printed also every log_seconds and at an invocation's first update, so a slow run
// shows it is alive), and each validation's results. Values on the device are read back once per report,
// never per update (a sync per step on CUDA).
//
// metrics.jsonl, one JSON object per line:
//   report:     step, epoch (1-based), loss (per unit), ppl (perplexity tasks only), lr,
//               <unit>_per_s (e.g. tokens_per_s, sentences_per_s), grad_norm (mean before
//               clipping; not for in-place updates), elapsed_s (over all runs)
//   validation: step, epoch, valid_loss, valid_ppl (perplexity tasks only), valid_<metric> for
//               each of the task's validation metrics (e.g. valid_accuracy), best (whether
//               best_metric improved: checkpoint_best.pt was written), best_metric (its name)
#include <torch/torch.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>

#include "train/progress.h"
#include "train/task.h"

namespace nlpzoo {

class TrainLog {
 public:
  /// `gradients`: the updates form gradients whose norm is worth reporting (not in place).
  /// Records (metrics.jsonl) and prints every `log_interval` updates; also prints after
  /// `log_seconds` without a printed line (0: never by time) and the first update after start().
  /// An empty `metrics_path` records and prints nothing (data-parallel ranks other than 0).
  TrainLog(std::string metrics_path, Task::TrainingProfile profile, bool gradients, int64_t log_interval,
           double log_seconds = 0);

  /// A fresh run removes metrics.jsonl; a run resumed at `step` drops the records logged after
  /// it (the resumed run logs those steps again), so the file has no duplicates and no gaps.
  void start(bool resume, int64_t step);

  struct Update {
    int64_t step = 0, epoch = 0;
    double lr = 0;
    torch::Tensor loss_sum;   // scalar, summed over `units` (any device)
    int64_t units = 0;
    torch::Tensor grad_norm;  // scalar, before clipping; undefined without gradients
    double elapsed_s = 0;     // training time over all runs
    double eta_s = -1;
  };
  /// Records one update; prints and logs at every log_interval-th step; prints also after
  /// log_seconds without a line and at the first update after start().
  void update(const Update& u);

  /// One validation: the training time at its end (seconds, as the updates' elapsed_s, so a
  /// curve can be read by time), per-unit loss, the task's named metrics, whether it is the best
  /// so far by `best_metric` ("loss" or one of `metrics`).
  void validation(int64_t step, int64_t epoch, double elapsed_s, double loss, const std::map<std::string, double>& metrics, bool best,
                  const std::string& best_metric = "loss");

  /// The last line of a finished run: the lowest valid loss and, when another score chose the
  /// best checkpoint, that score's best value.
  void done(int64_t step, double best_loss, const std::string& best_metric, double best_value,
            const std::string& run_dir);
  void message(const std::string& line) {
    if (!path_.empty()) progress_.message(line);
  }

 private:
  std::string path_;
  Task::TrainingProfile profile_;
  bool gradients_;
  int64_t log_interval_;
  double log_seconds_;
  bool first_update_ = true;  // of this invocation: reported, so a slow run shows it is alive
  Progress progress_;
  // Since the last report: sums on the device, read back at the report.
  torch::Tensor loss_sum_, grad_sum_;
  int64_t units_ = 0, updates_ = 0;
  std::chrono::steady_clock::time_point report_start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point printed_ = report_start_;  // the last printed line
  // The last report's values, shown on the live line until the next one.
  std::optional<double> loss_, grad_norm_;
};

}  // namespace nlpzoo
