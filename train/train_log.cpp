#include "train/train_log.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/io.h"

namespace nlpzoo {

namespace fs = std::filesystem;

namespace {

void append_record(const std::string& path, const nlohmann::json& record) {
  std::ofstream out(path, std::ios::app);
  out << record.dump() << "\n";
}

double perplexity(double loss) { return std::exp(std::min(loss, 100.0)); }

// A run that never validated a finite value (none yet, or a diverged loss) has nothing to call its best.
bool has_best(double value) { return std::abs(value) < 1e300; }
std::string best_or_none(double value) { return has_best(value) ? std::to_string(value) : std::string("none"); }

void add_to(torch::Tensor& sum, const torch::Tensor& x) {
  auto value = x.detach().to(torch::kDouble);
  sum = sum.defined() ? sum + value : value;
}

}  // namespace

TrainLog::TrainLog(std::string metrics_path, Task::TrainingProfile profile, bool gradients, int64_t log_interval,
                   double log_seconds)
    : path_(std::move(metrics_path)), profile_(std::move(profile)), gradients_(gradients),
      log_interval_(std::max<int64_t>(1, log_interval)), log_seconds_(log_seconds),
      progress_(Progress::stdout_is_terminal()) {}

void TrainLog::start(bool resume, int64_t step) {
  first_update_ = true;
  report_start_ = printed_ = std::chrono::steady_clock::now();
  if (path_.empty() || !fs::exists(path_)) return;
  if (!resume) {
    fs::remove(path_);
    return;
  }
  std::string kept;
  for (const auto& line : read_lines(path_)) {
    try {
      if (nlohmann::json::parse(line).value("step", int64_t{0}) <= step) kept += line + "\n";
    } catch (const nlohmann::json::exception&) {
      // a line cut by a crash: drop it
    }
  }
  atomic_write_text(path_, kept);
}

void TrainLog::update(const Update& u) {
  if (path_.empty()) return;
  add_to(loss_sum_, u.loss_sum);
  if (gradients_ && u.grad_norm.defined()) add_to(grad_sum_, u.grad_norm);
  units_ += u.units;
  ++updates_;
  const auto now = std::chrono::steady_clock::now();
  const double units_per_s = units_ / std::max(1e-9, std::chrono::duration<double>(now - report_start_).count());
  const bool report = u.step % log_interval_ == 0;
  // Printed but not recorded: metrics.jsonl stays a function of log_interval alone, so a
  // resumed run's file equals an uninterrupted one's whatever the machine's speed.
  const bool print = report || first_update_ ||
                     (log_seconds_ > 0 && std::chrono::duration<double>(now - printed_).count() >= log_seconds_);
  first_update_ = false;
  if (print) {
    printed_ = now;
    // The one read-back of the interval (or of its part so far).
    auto sums = (grad_sum_.defined() ? torch::stack({loss_sum_, grad_sum_.to(loss_sum_.device())}) : loss_sum_.view({1}))
                    .to(torch::kCPU);
    loss_ = sums[0].item<double>() / std::max<int64_t>(1, units_);
    if (grad_sum_.defined()) grad_norm_ = sums[1].item<double>() / updates_;
  }
  progress_.update({u.step, u.epoch, loss_, profile_.perplexity, u.lr, units_per_s, profile_.unit, grad_norm_, u.eta_s},
                   print);
  if (!report) return;
  nlohmann::json record{{"step", u.step}, {"epoch", u.epoch + 1}, {"loss", *loss_}, {"lr", u.lr},
                        {profile_.unit + "_per_s", units_per_s}, {"elapsed_s", u.elapsed_s}};
  if (profile_.perplexity) record["ppl"] = perplexity(*loss_);
  if (grad_norm_) record["grad_norm"] = *grad_norm_;
  append_record(path_, record);
  loss_sum_ = grad_sum_ = torch::Tensor();
  units_ = updates_ = 0;
  report_start_ = now;
}

void TrainLog::validation(int64_t step, int64_t epoch, double elapsed_s, double loss,
                          const std::map<std::string, double>& metrics, bool best, const std::string& best_metric) {
  if (path_.empty()) return;
  nlohmann::json record{
      {"step", step}, {"epoch", epoch + 1}, {"elapsed_s", elapsed_s}, {"valid_loss", loss}, {"best", best}};
  // Named only when it is not the loss, so a loss-chosen run logs what it always did.
  if (best_metric != "loss") record["best_metric"] = best_metric;
  std::ostringstream msg;
  msg.precision(4);
  msg << std::fixed << "valid | step " << step << " | loss " << loss;
  if (profile_.perplexity) {
    record["valid_ppl"] = perplexity(loss);
    msg << " | ppl " << perplexity(loss);
  }
  for (const auto& [name, value] : metrics) {
    record["valid_" + name] = value;
    msg << " | " << name << " " << value;
  }
  append_record(path_, record);
  progress_.message(msg.str() + (best ? " | new best" + (best_metric == "loss" ? "" : " " + best_metric) : ""));
}

void TrainLog::done(int64_t step, double best_loss, const std::string& best_metric, double best_value,
                    const std::string& run_dir) {
  if (path_.empty()) return;
  const std::string chosen = best_metric == "loss" ? ""
                                                   : ", best valid " + best_metric + " " + best_or_none(best_value) +
                                                         " (best_metric: it chose checkpoint_best.pt)";
  progress_.message("done: " + std::to_string(step) + " updates" + chosen + ", best valid loss " +
                    best_or_none(best_loss) +
                    (profile_.perplexity && has_best(best_loss) ? " (ppl " + std::to_string(perplexity(best_loss)) + ")"
                                                                : "") +
                    ", checkpoints in " + run_dir);
}

}  // namespace nlpzoo
