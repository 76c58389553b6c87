#include "train/checkpoint.h"

#include <map>

#include "datasets/io.h"

namespace nlpzoo {

namespace {

constexpr const char* kFormat = "nlpzoo-checkpoint-v1";

torch::Tensor bytes_tensor(const std::string& s) {
  auto t = torch::empty({static_cast<int64_t>(s.size())}, torch::kUInt8);
  if (!s.empty()) std::memcpy(t.data_ptr(), s.data(), s.size());
  return t;
}

std::string tensor_bytes(const torch::Tensor& t) {
  auto c = t.contiguous();
  return std::string(static_cast<const char*>(c.data_ptr()), c.numel());
}

torch::Tensor doubles_tensor(const std::vector<double>& v) {
  return torch::tensor(v.empty() ? std::vector<double>{0.0} : v, torch::kFloat64).slice(0, 0, v.size());
}

std::vector<double> tensor_doubles(const torch::Tensor& t) {
  auto c = t.contiguous().to(torch::kFloat64);
  return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

torch::serialize::InputArchive open_archive(const std::string& path) {
  require_file(path, "checkpoint");
  torch::serialize::InputArchive archive;
  try {
    archive.load_from(path);
  } catch (const c10::Error& e) {
    throw UserError(path + ": not a readable checkpoint (corrupt or truncated?)");
  }
  torch::Tensor format;
  if (!archive.try_read("format", format) || tensor_bytes(format) != kFormat)
    throw UserError(path + ": not an nlpzoo checkpoint (no '" + std::string(kFormat) + "' marker)");
  return archive;
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

}  // namespace

void save_checkpoint(const std::string& path, torch::nn::Module& model, torch::optim::Optimizer* optimizer,
                     const CheckpointContents& c) {
  torch::serialize::OutputArchive archive;
  archive.write("format", bytes_tensor(kFormat));
  archive.write("task", bytes_tensor(c.task));
  archive.write("config", bytes_tensor(c.config));
  std::string names;
  for (const auto& [name, blob] : c.artifacts) {
    archive.write("artifact." + name, bytes_tensor(blob));
    names += name + "\n";
  }
  archive.write("artifact_names", bytes_tensor(names));
  const auto& s = c.state;
  archive.write("state.counters", torch::tensor({s.step, s.epoch, s.batch_index, s.bad_validations}, torch::kInt64));
  archive.write("state.values", doubles_tensor({s.lr, s.best_valid_loss, s.elapsed_s}));
  archive.write("state.schedule", doubles_tensor(s.schedule_state));
  for (auto& [key, gen] : generators()) {
    std::lock_guard<std::mutex> lock(gen.mutex());
    archive.write(key, gen.get_state());
  }
  torch::serialize::OutputArchive model_archive;
  model.save(model_archive);
  archive.write("model", model_archive);
  if (optimizer != nullptr) {
    torch::serialize::OutputArchive opt_archive;
    optimizer->save(opt_archive);
    archive.write("optimizer", opt_archive);
  }
  atomic_write(path, [&](const std::string& tmp) {
    try {
      archive.save_to(tmp);
    } catch (const c10::Error& e) {
      throw UserError(path + ": could not write checkpoint: " + e.what_without_backtrace());
    }
  });
}

CheckpointContents read_checkpoint_header(const std::string& path) {
  auto archive = open_archive(path);
  CheckpointContents c;
  // InputArchive::read into a defined tensor keeps that tensor's dtype and reinterprets the
  // bytes, so every entry is read into a fresh tensor.
  auto read = [&](const std::string& key) {
    torch::Tensor t;
    archive.read(key, t);
    return t;
  };
  try {
    c.task = tensor_bytes(read("task"));
    c.config = tensor_bytes(read("config"));
    std::string names = tensor_bytes(read("artifact_names"));
    for (size_t start = 0, end; (end = names.find('\n', start)) != std::string::npos; start = end + 1) {
      std::string name = names.substr(start, end - start);
      c.artifacts[name] = tensor_bytes(read("artifact." + name));
    }
    auto counters = read("state.counters").contiguous();
    c.state.step = counters[0].item<int64_t>();
    c.state.epoch = counters[1].item<int64_t>();
    c.state.batch_index = counters[2].item<int64_t>();
    c.state.bad_validations = counters[3].item<int64_t>();
    auto values = tensor_doubles(read("state.values"));
    c.state.lr = values.at(0);
    c.state.best_valid_loss = values.at(1);
    c.state.elapsed_s = values.at(2);
    c.state.schedule_state = tensor_doubles(read("state.schedule"));
  } catch (const c10::Error& e) {
    throw UserError(path + ": incomplete nlpzoo checkpoint: " + e.what_without_backtrace());
  }
  return c;
}

void load_checkpoint_weights(const std::string& path, torch::nn::Module& model, torch::optim::Optimizer* optimizer,
                             bool restore_rng) {
  auto archive = open_archive(path);
  // Module::load resizes a parameter to whatever the file holds (it calls Tensor::set_), so
  // a checkpoint of another size would load "successfully": compare shapes ourselves.
  std::map<std::string, std::vector<int64_t>> expected;
  for (const auto& p : model.named_parameters()) expected[p.key()] = p.value().sizes().vec();
  for (const auto& b : model.named_buffers()) expected[b.key()] = b.value().sizes().vec();
  try {
    torch::serialize::InputArchive model_archive;
    archive.read("model", model_archive);
    model.load(model_archive);
  } catch (const c10::Error& e) {
    throw UserError(path + ": parameters do not match the model built from its config (" +
                    std::string(e.what_without_backtrace()).substr(0, 200) + ")");
  }
  auto mismatch = [&](const std::string& name, const torch::Tensor& t) {
    if (t.sizes().vec() == expected.at(name)) return;
    throw UserError(path + ": parameter '" + name + "' has shape " + c10::str(t.sizes()) + " but the model built from " +
                    "its config expects " + c10::str(c10::IntArrayRef(expected.at(name))) +
                    " (a checkpoint of another model or config)");
  };
  for (const auto& p : model.named_parameters()) mismatch(p.key(), p.value());
  for (const auto& b : model.named_buffers()) mismatch(b.key(), b.value());
  if (optimizer != nullptr) {
    torch::serialize::InputArchive opt_archive;
    if (!archive.try_read("optimizer", opt_archive)) throw UserError(path + ": has no optimizer state to resume from");
    optimizer->load(opt_archive);
  }
  if (restore_rng) {
    // Handles on the global generators. A CUDA state the file lacks (a CPU run resumed on a GPU)
    // is left as seeded; a file's CUDA states without CUDA here are not needed.
    for (auto& [key, gen] : generators()) {
      torch::Tensor rng;
      if (!archive.try_read(key, rng)) {
        if (key == "rng.cpu") throw UserError(path + ": has no RNG state to resume from");
        continue;
      }
      std::lock_guard<std::mutex> lock(gen.mutex());
      gen.set_state(rng);
    }
  }
}

}  // namespace nlpzoo
