#include "train/checkpoint_v1.h"

#include <caffe2/serialize/inline_container.h>
#include <unzip.h>

#include <fstream>
#include <cstring>
#include <map>
#include <regex>

#include "core/io.h"
#include "core/safetensors.h"

namespace nlpzoo {

namespace {

constexpr const char* kFormat = "nlpzoo-checkpoint-v1";

torch::Tensor doubles_tensor(const std::vector<double>& v) {
  return torch::tensor(v.empty() ? std::vector<double>{0.0} : v, torch::kFloat64).slice(0, 0, v.size());
}

std::vector<double> tensor_doubles(const torch::Tensor& t) {
  auto c = t.contiguous().to(torch::kFloat64);
  return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

// LibTorch's zip reader does not compare a record with the CRC-32 its directory entry holds, so
// a flipped byte in a weight would load, and `checkpoint upgrade` would bless it with fresh
// CRCs. minizip's reader checks it when a record has been read to its end.
void check_record_crcs(const std::string& path) {
  unzFile zip = unzOpen64(path.c_str());
  if (zip == nullptr) throw UserError(path + ": not a readable checkpoint (its zip directory is corrupt or truncated)");
  std::vector<char> buffer(1 << 16);
  std::string failure;
  for (int at = unzGoToFirstFile(zip); at == UNZ_OK && failure.empty(); at = unzGoToNextFile(zip)) {
    char name[1024] = {};
    unz_file_info64 info{};
    unzGetCurrentFileInfo64(zip, &info, name, sizeof name - 1, nullptr, 0, nullptr, 0);
    if (unzOpenCurrentFile(zip) != UNZ_OK) {
      failure = std::string("cannot open record ") + name;
      break;
    }
    int read = 0;
    while ((read = unzReadCurrentFile(zip, buffer.data(), static_cast<unsigned>(buffer.size()))) > 0) {
    }
    const int closed = unzCloseCurrentFile(zip);
    if (read < 0) failure = std::string("record ") + name + " cannot be read";
    else if (closed == UNZ_CRCERROR) failure = std::string("record ") + name + " does not match its CRC-32";
  }
  unzClose(zip);
  if (!failure.empty())
    throw UserError(path + ": corrupt version-1 checkpoint (" + failure + "); it cannot be loaded or upgraded");
}

// torch::jit::load runs a class's __setstate__ while it unpickles; every method a file can
// carry is TorchScript source under code/, which nlpzoo's archives (attributes only) lack.
void refuse_code(const std::string& path) {
  try {
    caffe2::serialize::PyTorchStreamReader reader(path);
    static const std::regex method(R"(\bdef\b\W*(\w*))");  // any "def", however spelt out
    for (const auto& record : reader.getAllRecords()) {
      if (record.find("code/") == std::string::npos) continue;
      auto [data, size] = reader.getRecord(record);
      const std::string source(static_cast<const char*>(data.get()), size);
      std::smatch m;
      if (std::regex_search(source, m, method))
        throw UserError(path + ": this version-1 checkpoint carries TorchScript code (method '" + m[1].str() + "' in " +
                        record + ") that loading would run; nlpzoo's checkpoints carry none, so it is refused");
    }
  } catch (const c10::Error& e) {
    throw UserError(path + ": not a readable checkpoint (corrupt or truncated?)");
  }
}

// Module::save nests one archive per submodule; names join with '.' as named_parameters' do.
void read_module(torch::serialize::InputArchive& archive, const std::string& prefix,
                 std::vector<std::pair<std::string, torch::Tensor>>& out) {
  for (const auto& key : archive.keys()) {
    c10::IValue value;
    if (!archive.try_read(key, value)) continue;
    if (value.isTensor()) {
      out.emplace_back(prefix + key, value.toTensor().detach());
    } else if (value.isObject()) {
      torch::serialize::InputArchive child;
      archive.read(key, child);
      read_module(child, prefix + key + ".", out);
    }
  }
}

// LibTorch's optimizer archive keys each parameter's state by its TensorImpl address at save
// time; param_groups lists those keys in order, which gives each its index.
int64_t read_optimizer(torch::serialize::InputArchive& archive, std::vector<std::pair<std::string, torch::Tensor>>& out) {
  torch::serialize::InputArchive groups, states;
  archive.read("param_groups", groups);
  archive.read("state", states);
  torch::Tensor num_groups;
  groups.read("param_groups/size", num_groups);
  std::map<std::string, int64_t> index;
  for (int64_t g = 0; g < num_groups.item<int64_t>(); ++g) {
    torch::serialize::InputArchive group;
    groups.read("param_groups/" + std::to_string(g), group);
    torch::Tensor size;
    group.read("params/size", size);
    for (int64_t i = 0; i < size.item<int64_t>(); ++i) {
      c10::IValue key;
      group.read("params/" + std::to_string(i), key);
      index.emplace(key.toStringRef(), static_cast<int64_t>(index.size()));
    }
  }
  for (const auto& key : states.keys()) {
    torch::serialize::InputArchive state;
    if (!states.try_read(key, state)) continue;
    const auto at = index.find(key);
    if (at == index.end()) throw c10::Error({__func__, __FILE__, __LINE__}, "optimizer state of an unlisted parameter");
    for (const auto& field : state.keys()) {
      c10::IValue value;
      if (!state.try_read(field, value)) continue;
      const std::string name = "optimizer." + std::to_string(at->second) + "." + field;
      if (value.isTensor()) out.emplace_back(name, value.toTensor().detach());
      else if (value.isInt()) out.emplace_back(name, torch::tensor(value.toInt(), torch::kInt64));
    }
  }
  return static_cast<int64_t>(index.size());
}

}  // namespace

bool is_checkpoint_v1(const std::string& path) {
  char magic[4] = {};
  std::ifstream(path, std::ios::binary).read(magic, 4);
  return std::memcmp(magic, "PK\x03\x04", 4) == 0;
}

CheckpointV1 read_checkpoint_v1(const std::string& path) {
  require_file(path, "checkpoint");
  check_record_crcs(path);
  refuse_code(path);
  CheckpointV1 out;
  try {
    torch::serialize::InputArchive archive;
    archive.load_from(path);
    // InputArchive::read into a defined tensor keeps that tensor's dtype and reinterprets the
    // bytes, so every entry is read into a fresh tensor.
    auto read = [&](const std::string& key) {
      torch::Tensor t;
      archive.read(key, t);
      return t.detach();
    };
    torch::Tensor format;
    if (!archive.try_read("format", format) || tensor_bytes(format) != kFormat)
      throw UserError(path + ": not an nlpzoo checkpoint (no '" + std::string(kFormat) + "' marker)");
    auto& c = out.contents;
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
    c.state.best_valid_loss = c.state.best_value = values.at(1);  // version 1 always chose by the loss
    c.state.elapsed_s = values.at(2);
    c.state.schedule_state = tensor_doubles(read("state.schedule"));
    for (const auto& key : archive.keys())
      if (key.rfind("rng.", 0) == 0) out.tensors.emplace_back(key, read(key));
    torch::serialize::InputArchive model;
    archive.read("model", model);
    read_module(model, "model.", out.tensors);
    torch::serialize::InputArchive optimizer;
    if (archive.try_read("optimizer", optimizer)) out.optimizer_params = read_optimizer(optimizer, out.tensors);
  } catch (const c10::Error& e) {
    throw UserError(path + ": incomplete nlpzoo checkpoint: " + e.what_without_backtrace());
  } catch (const std::out_of_range& e) {
    throw UserError(path + ": incomplete nlpzoo checkpoint (training state too short)");
  }
  return out;
}

void save_checkpoint_v1(const std::string& path, torch::nn::Module& model, torch::optim::Optimizer* optimizer,
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
  archive.write("rng.cpu", at::detail::getDefaultCPUGenerator().get_state());
  torch::serialize::OutputArchive model_archive;
  model.save(model_archive);
  archive.write("model", model_archive);
  if (optimizer != nullptr) {
    torch::serialize::OutputArchive opt_archive;
    optimizer->save(opt_archive);
    archive.write("optimizer", opt_archive);
  }
  atomic_write(path, [&](const std::string& tmp) { archive.save_to(tmp); });
}

}  // namespace nlpzoo
