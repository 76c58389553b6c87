#include "train/task.h"

#include <algorithm>
#include <stdexcept>

#include "core/io.h"

namespace nlpzoo {

std::string to_string(Split split) {
  switch (split) {
    case Split::kTrain: return "train";
    case Split::kValid: return "valid";
    case Split::kTest: return "test";
  }
  return "?";
}

Split parse_split(const std::string& name) {
  if (name == "train") return Split::kTrain;
  if (name == "valid" || name == "dev") return Split::kValid;
  if (name == "test") return Split::kTest;
  throw UserError("unknown split '" + name + "' (expected train, valid or test)");
}

void throw_split_not_loaded(Split split) {
  throw UserError("the " + to_string(split) + " split was not loaded (no --data-dir?)");
}

std::vector<std::string> Task::export_torchscript(const std::string& path, const std::string& /*config_ini*/) {
  throw UserError("cannot write " + path + ": this task has no TorchScript export (scripted twin)");
}

std::map<std::string, double> Task::validation_metrics(const std::map<std::string, torch::Tensor>& sums,
                                                       int64_t examples) const {
  std::map<std::string, double> out;
  for (const auto& [name, sum] : sums) {
    if (sum.numel() != 1)
      throw std::logic_error("Task::validation_metrics: the metric sum '" + name +
                             "' is not a scalar; the task must override validation_metrics");
    out[name] = sum.item<double>() / static_cast<double>(std::max<int64_t>(1, examples));
  }
  return out;
}

Batch Batch::to(const torch::Device& device) const {
  Batch out = *this;
  for (auto& [name, t] : out.tensors) t = t.to(device, /*non_blocking=*/true);
  return out;
}

}  // namespace nlpzoo
