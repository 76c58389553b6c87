#include "train/checkpoint.h"

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string_view>
#include <type_traits>
#include <utility>

#include "core/io.h"
#include "train/checkpoint_v1.h"
#include "core/safetensors.h"

namespace nlpzoo {

namespace {

constexpr const char* kFormat = "nlpzoo-checkpoint-v2";
using Tensors = std::vector<std::pair<std::string, torch::Tensor>>;

// JSON has no infinities or NaN (nlohmann writes null): those are written as strings.
nlohmann::json json_double(double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(std::to_string(x)); }
double double_json(const nlohmann::json& j) { return j.is_string() ? std::stod(j.get<std::string>()) : j.get<double>(); }

std::string state_json(const TrainingState& s) {
  nlohmann::json schedule = nlohmann::json::array();
  for (double x : s.schedule_state) schedule.push_back(json_double(x));
  nlohmann::json state{{"step", s.step}, {"epoch", s.epoch}, {"batch_index", s.batch_index},
                       {"bad_validations", s.bad_validations}, {"lr", json_double(s.lr)},
                       {"best_valid_loss", json_double(s.best_valid_loss)}, {"elapsed_s", json_double(s.elapsed_s)},
                       {"schedule_state", schedule}};
  // Only data-parallel runs record it, so that a single-process checkpoint keeps the bytes it
  // had before data-parallel training existed (the golden checkpoints pin them).
  if (s.world_size != 1) state["world_size"] = s.world_size;
  // Likewise only a run that chooses its best by another score than the loss records it.
  if (s.best_metric != "loss") {
    state["best_metric"] = s.best_metric;
    state["best_value"] = json_double(s.best_value);
  }
  return state.dump();
}

TrainingState parse_state(const std::string& text) {
  const auto j = nlohmann::json::parse(text);
  TrainingState s;
  s.step = j.at("step").get<int64_t>();
  s.epoch = j.at("epoch").get<int64_t>();
  s.batch_index = j.at("batch_index").get<int64_t>();
  s.bad_validations = j.at("bad_validations").get<int64_t>();
  s.lr = double_json(j.at("lr"));
  s.best_valid_loss = double_json(j.at("best_valid_loss"));
  s.elapsed_s = double_json(j.at("elapsed_s"));
  for (const auto& x : j.at("schedule_state")) s.schedule_state.push_back(double_json(x));
  s.world_size = j.value("world_size", int64_t{1});  // absent before data-parallel training
  // Absent in runs that choose by the loss, and before best_metric existed.
  s.best_metric = j.value("best_metric", std::string("loss"));
  s.best_value = j.contains("best_value") ? double_json(j.at("best_value")) : s.best_valid_loss;
  // A hand-edited state would otherwise resume at a negative step or index past the data.
  const auto at_least = [](const char* field, int64_t value, int64_t minimum) {
    if (value < minimum)
      throw std::domain_error("field '" + std::string(field) + "' is " + std::to_string(value) + ", must be >= " +
                              std::to_string(minimum));
  };
  at_least("step", s.step, 0);
  at_least("epoch", s.epoch, 0);
  at_least("batch_index", s.batch_index, 0);
  at_least("bad_validations", s.bad_validations, 0);
  at_least("world_size", s.world_size, 1);
  if (!(std::isfinite(s.lr) && s.lr >= 0)) throw std::domain_error("field 'lr' must be a finite number >= 0");
  if (!(std::isfinite(s.elapsed_s) && s.elapsed_s >= 0))
    throw std::domain_error("field 'elapsed_s' must be a finite number >= 0");
  return s;
}

std::string crc32_hex(const void* data, size_t size) {
  uLong crc = crc32(0L, Z_NULL, 0);
  for (size_t done = 0; done < size;) {  // zlib takes at most 4 GiB at a time
    const auto chunk = static_cast<uInt>(std::min<size_t>(size - done, 1u << 30));
    crc = crc32(crc, static_cast<const Bytef*>(data) + done, chunk);
    done += chunk;
  }
  char hex[9];
  std::snprintf(hex, sizeof hex, "%08lx", crc);
  return hex;
}

std::string tensor_crc(const torch::Tensor& t) {
  const auto c = t.detach().to(torch::kCPU).contiguous();
  return crc32_hex(c.data_ptr(), c.numel() * c.element_size());
}

// The metadata other than the checksums, in one canonical text.
std::string metadata_crc(const std::map<std::string, std::string>& metadata) {
  std::string all;
  for (const auto& [key, value] : metadata)
    if (key != "checksums") all += key + '\0' + value + '\0';
  return crc32_hex(all.data(), all.size());
}

// The generators a resumed run must continue: the CPU's, and each CUDA device's when CUDA is in
// use (dropout masks drawn on the GPU). Context::defaultGenerator exists in LibTorch 1.13 and 2.x.
std::vector<std::pair<std::string, at::Generator>> generators() {
  std::vector<std::pair<std::string, at::Generator>> out{{"rng.cpu", at::detail::getDefaultCPUGenerator()}};
  if (torch::cuda::is_available())
    for (int64_t i = 0; i < static_cast<int64_t>(torch::cuda::device_count()); ++i)
      out.emplace_back("rng.cuda." + std::to_string(i),
                       at::globalContext().defaultGenerator(c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(i))));
  return out;
}

// An optimizer's per-parameter state as named tensors and back, for the optimizers the Trainer
// makes. Adam's and AdamW's states have the same fields.
template <typename State>
Tensors adam_fields(const State& s) {
  return {{"step", torch::tensor(s.step(), torch::kInt64)}, {"exp_avg", s.exp_avg()}, {"exp_avg_sq", s.exp_avg_sq()},
          {"max_exp_avg_sq", s.max_exp_avg_sq()}};
}

Tensors state_fields(const torch::optim::OptimizerParamState& s) {
  using namespace torch::optim;
  if (auto* a = dynamic_cast<const AdamParamState*>(&s)) return adam_fields(*a);
  if (auto* a = dynamic_cast<const AdamWParamState*>(&s)) return adam_fields(*a);
  if (auto* a = dynamic_cast<const SGDParamState*>(&s)) return {{"momentum_buffer", a->momentum_buffer()}};
  if (auto* a = dynamic_cast<const AdagradParamState*>(&s))
    return {{"step", torch::tensor(a->step(), torch::kInt64)}, {"sum", a->sum()}};
  throw std::logic_error("save_checkpoint: an optimizer state of unknown type");
}

// `fields` (name -> tensor on the parameter's device) into the state `optimizer` keeps.
std::unique_ptr<torch::optim::OptimizerParamState> make_state(torch::optim::Optimizer& optimizer,
                                                              std::map<std::string, torch::Tensor>& fields) {
  using namespace torch::optim;
  auto take = [&](const char* name) {
    auto it = fields.find(name);
    if (it == fields.end()) return torch::Tensor();
    auto t = it->second;
    fields.erase(it);
    return t;
  };
  auto step = [&]() {
    auto t = take("step");
    return t.defined() ? t.item<int64_t>() : 0;
  };
  std::unique_ptr<OptimizerParamState> out;
  auto adam = [&](auto state) {
    state->step(step()).exp_avg(take("exp_avg")).exp_avg_sq(take("exp_avg_sq")).max_exp_avg_sq(take("max_exp_avg_sq"));
    if (!state->exp_avg().defined() || !state->exp_avg_sq().defined()) throw std::invalid_argument("exp_avg");
    out = std::move(state);
  };
  if (dynamic_cast<AdamW*>(&optimizer)) adam(std::make_unique<AdamWParamState>());
  else if (dynamic_cast<Adam*>(&optimizer)) adam(std::make_unique<AdamParamState>());
  else if (dynamic_cast<SGD*>(&optimizer)) out = std::make_unique<SGDParamState>(SGDParamState().momentum_buffer(take("momentum_buffer")));
  else if (dynamic_cast<Adagrad*>(&optimizer)) out = std::make_unique<AdagradParamState>(AdagradParamState().step(step()).sum(take("sum")));
  else throw std::logic_error("load_checkpoint_weights: an optimizer of unknown type");
  if (!fields.empty()) throw std::invalid_argument(fields.begin()->first);
  return out;
}

std::vector<torch::Tensor> optimizer_params(const torch::optim::Optimizer& optimizer) {
  std::vector<torch::Tensor> params;
  for (const auto& group : optimizer.param_groups())
    for (const auto& p : group.params()) params.push_back(p);
  return params;
}

// A parameter's key in the optimizer's state: its TensorImpl's address, printed to a string in
// LibTorch 1.x, the pointer itself in 2.x (whose c10::guts has no to_string).
using OptimizerStateKey = std::decay_t<decltype(std::declval<torch::optim::Optimizer&>().state())>::key_type;

template <typename Key>
Key impl_key(void* impl) {
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream out;
    out << impl;
    return out.str();
  } else {
    return impl;
  }
}

OptimizerStateKey state_key(const torch::Tensor& p) { return impl_key<OptimizerStateKey>(p.unsafeGetTensorImpl()); }

// The file's form of a checkpoint, whichever version it came from.
SafetensorsFile to_file(const CheckpointContents& c, Tensors tensors, int64_t num_optimizer_params) {
  SafetensorsFile file;
  file.metadata = {{"format", kFormat}, {"task", c.task}, {"config", c.config}, {"state", state_json(c.state)}};
  if (num_optimizer_params >= 0) file.metadata["optimizer_params"] = std::to_string(num_optimizer_params);
  file.tensors = std::move(tensors);
  for (auto& entry : file.tensors) entry.second = entry.second.detach().to(torch::kCPU).contiguous();  // once, for both uses
  for (const auto& [name, blob] : c.artifacts) file.tensors.emplace_back("artifact." + name, bytes_tensor(blob));
  nlohmann::json checksums = nlohmann::json::object();
  for (const auto& [name, t] : file.tensors) checksums[name] = tensor_crc(t);
  checksums["__metadata__"] = metadata_crc(file.metadata);
  file.metadata["checksums"] = checksums.dump();
  return file;
}

// A corrupted file fails here, naming the first tensor (in file order) whose bytes changed.
// Tensors the reader skipped are not checked, only required to be in the file.
void verify_checksums(const std::string& path, const SafetensorsFile& file) {
  nlohmann::json checksums;
  try {
    checksums = nlohmann::json::parse(file.metadata.at("checksums"));
  } catch (const std::exception&) {
    throw UserError(path + ": checkpoint has no readable checksums (corrupt?)");
  }
  std::set<std::string> unchecked;
  for (const auto& [name, crc] : checksums.items()) unchecked.insert(name);
  for (const auto& [name, t] : file.tensors) {
    if (!checksums.contains(name) || checksums[name] != tensor_crc(t))
      throw UserError(path + ": tensor '" + name + "' is corrupt (its CRC-32 does not match the one saved with it)");
    unchecked.erase(name);
  }
  for (const auto& name : file.skipped) unchecked.erase(name);
  if (!checksums.contains("__metadata__") || checksums["__metadata__"] != metadata_crc(file.metadata))
    throw UserError(path + ": the checkpoint's metadata (task, config, training state) is corrupt (CRC-32 mismatch)");
  unchecked.erase("__metadata__");
  if (!unchecked.empty()) throw UserError(path + ": tensor '" + *unchecked.begin() + "' is missing (truncated or edited?)");
}

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// `wanted` chooses the tensors to read (all when null); a version-1 file is read whole.
SafetensorsFile read_any(const std::string& path, const std::function<bool(const std::string&)>& wanted = nullptr) {
  require_file(path, "checkpoint");
  if (is_checkpoint_v1(path)) {
    static std::mutex mutex;
    static std::set<std::string> warned;
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (warned.insert(path).second)
        std::cerr << "nlpzoo: warning: " << path << " is a version-1 checkpoint, read through TorchScript: load it only "
                  << "if you trust its source, and rewrite it with `nlpzoo checkpoint upgrade RUN_DIR`\n";
    }
    auto v1 = read_checkpoint_v1(path);
    return to_file(v1.contents, std::move(v1.tensors), v1.optimizer_params);
  }
  auto file = read_safetensors(path, wanted);
  const auto format = file.metadata.find("format");
  if (format == file.metadata.end() || format->second != kFormat)
    throw UserError(path + ": not an nlpzoo checkpoint (no '" + std::string(kFormat) + "' marker)");
  verify_checksums(path, file);
  return file;
}

}  // namespace

void save_checkpoint(const std::string& path, torch::nn::Module& model, torch::optim::Optimizer* optimizer,
                     const CheckpointContents& c) {
  Tensors tensors;
  for (const auto& p : model.named_parameters()) tensors.emplace_back("model." + p.key(), p.value());
  for (const auto& b : model.named_buffers())
    if (b.value().defined()) tensors.emplace_back("model." + b.key(), b.value());
  int64_t num_optimizer_params = -1;
  if (optimizer != nullptr) {
    const auto params = optimizer_params(*optimizer);
    num_optimizer_params = static_cast<int64_t>(params.size());
    for (size_t i = 0; i < params.size(); ++i) {
      const auto state = optimizer->state().find(state_key(params[i]));
      if (state == optimizer->state().end()) continue;
      for (auto& [field, t] : state_fields(*state->second))
        if (t.defined()) tensors.emplace_back("optimizer." + std::to_string(i) + "." + field, t.is_sparse() ? t.to_dense() : t);
    }
  }
  for (auto& [key, gen] : generators()) {
    std::lock_guard<std::mutex> lock(gen.mutex());
    tensors.emplace_back(key, gen.get_state());
  }
  write_checkpoint_tensors(path, c, std::move(tensors), num_optimizer_params);
}

void write_checkpoint_tensors(const std::string& path, const CheckpointContents& c,
                              std::vector<std::pair<std::string, torch::Tensor>> tensors, int64_t num_optimizer_params) {
  const auto file = to_file(c, std::move(tensors), num_optimizer_params);
  atomic_write(path, [&](const std::string& tmp) { write_safetensors(tmp, file); });
}

namespace {

// The task, config, training state and (those read) artifacts of `file`, read from `path`.
CheckpointContents contents_of(const std::string& path, const SafetensorsFile& file) {
  CheckpointContents c;
  try {
    c.task = file.metadata.at("task");
    c.config = file.metadata.at("config");
    c.state = parse_state(file.metadata.at("state"));
  } catch (const std::domain_error& e) {
    throw UserError(path + ": invalid training state: " + e.what());
  } catch (const std::exception& e) {
    throw UserError(path + ": incomplete nlpzoo checkpoint (task, config or training state: " + e.what() + ")");
  }
  for (const auto& [name, t] : file.tensors)
    if (starts_with(name, "artifact.")) c.artifacts[name.substr(9)] = tensor_bytes(t);
  return c;
}

}  // namespace

CheckpointContents read_checkpoint_header(const std::string& path) {
  return contents_of(path, read_any(path, [](const std::string& name) { return starts_with(name, "artifact."); }));
}

void load_checkpoint_weights(const std::string& path, torch::nn::Module& model, torch::optim::Optimizer* optimizer,
                             bool restore_rng) {
  // Evaluation and decoding read the parameters alone: a third of a checkpoint saved with Adam.
  const auto file = read_any(path, [&](const std::string& name) {
    return starts_with(name, "model.") || (optimizer != nullptr && starts_with(name, "optimizer.")) ||
           (restore_rng && starts_with(name, "rng."));
  });
  std::map<std::string, torch::Tensor> saved(file.tensors.begin(), file.tensors.end());
  // The model's tensors, each found in the file with its shape and dtype, before any is changed.
  std::vector<std::pair<torch::Tensor, torch::Tensor>> copies;
  auto match = [&](const std::string& name, const torch::Tensor& target) {
    const auto it = saved.find("model." + name);
    if (it == saved.end())
      throw UserError(path + ": has no parameter '" + name + "', which the model built from its config has (a checkpoint "
                      "of another model or config)");
    const auto& t = it->second;
    if (t.sizes() != target.sizes())
      throw UserError(path + ": parameter '" + name + "' has shape " + c10::str(t.sizes()) + " but the model built from " +
                      "its config expects " + c10::str(target.sizes()) + " (a checkpoint of another model or config)");
    if (t.scalar_type() != target.scalar_type())
      throw UserError(path + ": parameter '" + name + "' has dtype " + std::string(c10::toString(t.scalar_type())) +
                      " but the model built from its config has " + std::string(c10::toString(target.scalar_type())));
    copies.emplace_back(target, t);
    saved.erase(it);
  };
  for (const auto& p : model.named_parameters()) match(p.key(), p.value());
  for (const auto& b : model.named_buffers())
    if (b.value().defined()) match(b.key(), b.value());
  for (const auto& [name, t] : saved)
    if (starts_with(name, "model."))
      throw UserError(path + ": holds parameter '" + name.substr(6) + "', which the model built from its config lacks (a "
                      "checkpoint of another model or config)");
  if (optimizer != nullptr) {
    const auto params = optimizer_params(*optimizer);
    const auto count = file.metadata.find("optimizer_params");
    if (count == file.metadata.end()) throw UserError(path + ": has no optimizer state to resume from");
    if (count->second != std::to_string(params.size()))
      throw UserError(path + ": optimizer state of " + count->second + " parameters, but the optimizer has " +
                      std::to_string(params.size()));
  }
  {
    torch::NoGradGuard no_grad;
    for (auto& [target, t] : copies) target.copy_(t);
  }
  if (optimizer != nullptr) {
    const auto params = optimizer_params(*optimizer);
    std::vector<std::map<std::string, torch::Tensor>> fields(params.size());
    for (const auto& [name, t] : saved) {
      if (!starts_with(name, "optimizer.")) continue;
      const auto dot = name.find('.', 10);
      const auto index = name.substr(10, dot == std::string::npos ? 0 : dot - 10);
      const bool numeric = !index.empty() && index.size() < 10 && index.find_first_not_of("0123456789") == std::string::npos;
      const size_t i = numeric ? std::stoul(index) : params.size();
      if (i >= params.size()) throw UserError(path + ": optimizer state '" + name + "' of no parameter");
      fields[i][name.substr(dot + 1)] = t.to(params[i].device());
    }
    auto& state = optimizer->state();
    for (size_t i = 0; i < params.size(); ++i) {
      if (fields[i].empty()) continue;  // not stepped yet: a fresh optimizer's state is right
      try {
        state[state_key(params[i])] = make_state(*optimizer, fields[i]);
      } catch (const std::invalid_argument& e) {
        throw UserError(path + ": optimizer state of parameter " + std::to_string(i) + " has or lacks field '" +
                        e.what() + "' for this optimizer (config key 'optimizer' changed since the checkpoint?)");
      }
    }
  }
  if (restore_rng) {
    // Handles on the global generators. A CUDA state the file lacks (a CPU run resumed on a GPU)
    // is left as seeded; a file's CUDA states without CUDA here are not needed.
    for (auto& [key, gen] : generators()) {
      const auto it = saved.find(key);
      if (it == saved.end()) {
        if (key == "rng.cpu") throw UserError(path + ": has no RNG state to resume from");
        continue;
      }
      // LibTorch's own message ("RNG state must be a torch.ByteTensor") names no file.
      if (it->second.scalar_type() != torch::kUInt8 || it->second.dim() != 1)
        throw UserError(path + ": RNG state '" + key + "' must be a 1-D uint8 tensor, got " +
                        std::string(c10::toString(it->second.scalar_type())) + " of shape " + c10::str(it->second.sizes()));
      std::lock_guard<std::mutex> lock(gen.mutex());
      try {
        gen.set_state(it->second);
      } catch (const c10::Error& e) {
        throw UserError(path + ": RNG state '" + key + "' is not one this generator wrote (" +
                        e.what_without_backtrace() + ")");
      }
    }
  }
}

bool upgrade_checkpoint(const std::string& path) {
  const bool v1 = is_checkpoint_v1(path);
  const auto file = read_any(path);
  if (!v1) return false;
  atomic_write(path, [&](const std::string& tmp) { write_safetensors(tmp, file); });
  return true;
}

std::vector<std::pair<int64_t, std::string>> periodic_checkpoints(const std::string& run_dir) {
  constexpr std::string_view kPrefix = "checkpoint_", kSuffix = ".pt";
  std::vector<std::pair<int64_t, std::string>> found;
  std::error_code missing;
  for (const auto& entry : std::filesystem::directory_iterator(run_dir, missing)) {
    const auto name = entry.path().filename().string();
    if (name.size() <= kPrefix.size() + kSuffix.size() || !starts_with(name, kPrefix.data()) ||
        name.compare(name.size() - kSuffix.size(), kSuffix.size(), kSuffix) != 0)
      continue;
    const auto digits = name.substr(kPrefix.size(), name.size() - kPrefix.size() - kSuffix.size());
    if (digits.size() > 18 || digits.find_first_not_of("0123456789") != std::string::npos) continue;  // fits int64
    found.emplace_back(std::stoll(digits), entry.path().string());
  }
  std::sort(found.begin(), found.end());
  return found;
}

void average_checkpoints(const std::vector<std::string>& paths, const std::string& out) {
  if (paths.empty()) throw std::invalid_argument("average_checkpoints: no checkpoints");
  const auto model_tensors = [](const std::string& name) { return starts_with(name, "model."); };
  // The last file is read once for its header, artifacts and weights; the others for their weights.
  const std::string& last = paths.back();
  const auto last_file =
      read_any(last, [&](const std::string& name) { return model_tensors(name) || starts_with(name, "artifact."); });
  const auto contents = contents_of(last, last_file);
  // The sums, in float64 for floating-point tensors; the last file's own tensor otherwise.
  std::vector<std::pair<std::string, torch::Tensor>> last_tensors;
  std::map<std::string, torch::Tensor> sums, kept;
  for (const auto& [name, t] : last_file.tensors) {
    if (!model_tensors(name)) continue;
    last_tensors.emplace_back(name, t);
    if (t.is_floating_point()) sums[name] = t.to(torch::kDouble);
    else kept[name] = t;
  }
  for (size_t i = 0; i + 1 < paths.size(); ++i) {
    const auto& path = paths[i];
    const auto file = read_any(path, model_tensors);
    if (const auto task = contents_of(path, file).task; task != contents.task)
      throw UserError(path + ": a " + task + " checkpoint, but " + last + " is a " + contents.task +
                      " one; average checkpoints of one run");
    size_t seen = 0;
    for (const auto& [name, t] : file.tensors) {
      const auto sum = sums.find(name);
      const auto other = sum != sums.end() ? sum->second : kept.count(name) ? kept.at(name) : torch::Tensor();
      if (!other.defined())
        throw UserError(path + ": tensor '" + name + "' is not in " + last + " (a checkpoint of another model)");
      if (t.sizes() != other.sizes() || t.is_floating_point() != other.is_floating_point())
        throw UserError(path + ": tensor '" + name + "' has shape " + c10::str(t.sizes()) + " and dtype " +
                        std::string(c10::toString(t.scalar_type())) + ", unlike " + last +
                        "'s (a checkpoint of another model or config)");
      if (sum != sums.end()) sum->second.add_(t.to(torch::kDouble));
      ++seen;
    }
    if (seen != sums.size() + kept.size())
      throw UserError(path + ": has " + std::to_string(seen) + " model tensors but " + last + " has " +
                      std::to_string(sums.size() + kept.size()) + " (a checkpoint of another model)");
  }
  // In the last file's order, each floating-point tensor back in its own dtype.
  for (auto& [name, t] : last_tensors)
    if (t.is_floating_point()) t = sums.at(name).div(static_cast<double>(paths.size())).to(t.scalar_type());
  write_checkpoint_tensors(out, contents, std::move(last_tensors));
}

PartialLoadReport load_parameters_with_prefix(torch::nn::Module& model, const std::map<std::string, torch::Tensor>& source,
                                              const std::string& prefix, const std::string& origin,
                                              const std::string& target, const std::string& reason,
                                              const std::function<bool(const std::string&)>& hold_back) {
  // Checked in full first, so that a mismatch leaves the model as it was.
  std::vector<std::pair<torch::Tensor, torch::Tensor>> copies;  // (parameter, source tensor)
  PartialLoadReport report;
  for (auto& p : model.named_parameters()) {
    const auto& name = p.key();
    if (name.rfind(prefix, 0) != 0 || (hold_back && hold_back(name))) {
      report.fresh.push_back(name);
      report.fresh_values += p.value().numel();
      continue;
    }
    const auto it = source.find(name);
    if (it == source.end())
      throw UserError(origin + ": has no tensor '" + name + "' for " + target + " (" + reason + ")");
    if (it->second.sizes() != p.value().sizes())
      throw UserError(origin + ": tensor '" + name + "' has shape " + c10::str(it->second.sizes()) + " but " + target +
                      "'s is " + c10::str(p.value().sizes()) + " (" + reason + ")");
    copies.emplace_back(p.value(), it->second);
    report.loaded.push_back(name);
    report.loaded_values += p.value().numel();
  }
  torch::NoGradGuard no_grad;
  for (auto& [parameter, tensor] : copies) parameter.copy_(tensor);
  return report;
}

}  // namespace nlpzoo
