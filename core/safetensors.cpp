#include "core/safetensors.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <tuple>
#include <nlohmann/json.hpp>

#include "core/io.h"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "safetensors stores little-endian bytes");

namespace nlpzoo {

namespace {

const std::vector<std::pair<std::string, torch::ScalarType>>& dtypes() {
  static const std::vector<std::pair<std::string, torch::ScalarType>> d = {
      {"F64", torch::kFloat64}, {"F32", torch::kFloat32}, {"F16", torch::kFloat16}, {"BF16", torch::kBFloat16},
      {"I64", torch::kInt64},   {"I32", torch::kInt32},   {"I16", torch::kInt16},   {"I8", torch::kInt8},
      {"U8", torch::kUInt8},    {"BOOL", torch::kBool}};
  return d;
}

std::string dtype_name(torch::ScalarType t, const std::string& path, const std::string& tensor) {
  for (const auto& [name, type] : dtypes())
    if (type == t) return name;
  throw UserError(path + ": tensor '" + tensor + "' has dtype " + std::string(c10::toString(t)) +
                  ", which the safetensors layout lacks");
}

// The header never needs more: a checkpoint's names and shapes take kilobytes.
constexpr uint64_t kMaxHeader = 100u << 20;
// The top-level object (depth 0), a tensor's entry (1), its shape and offsets (2), their numbers (3).
constexpr int kMaxHeaderDepth = 3;
// No tensor has more dimensions (PyTorch allows 64).
constexpr int64_t kMaxHeaderArray = 64;

}  // namespace

torch::Tensor bytes_tensor(const std::string& s) {
  auto t = torch::empty({static_cast<int64_t>(s.size())}, torch::kUInt8);
  if (!s.empty()) std::memcpy(t.data_ptr(), s.data(), s.size());
  return t;
}

std::string tensor_bytes(const torch::Tensor& t) {
  auto c = t.contiguous();
  return std::string(static_cast<const char*>(c.data_ptr()), c.numel());
}

void write_safetensors(const std::string& path, const SafetensorsFile& file) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!file.metadata.empty()) header["__metadata__"] = file.metadata;
  std::vector<torch::Tensor> data;
  uint64_t offset = 0;
  for (const auto& [name, tensor] : file.tensors) {
    if (name == "__metadata__" || header.contains(name)) throw UserError(path + ": tensor name '" + name + "' given twice");
    auto t = tensor.detach().to(torch::kCPU).contiguous();
    const uint64_t bytes = t.numel() * t.element_size();
    header[name] = {{"dtype", dtype_name(t.scalar_type(), path, name)}, {"shape", t.sizes().vec()},
                    {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
    data.push_back(std::move(t));
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // as safetensors does: the data starts 8-byte aligned
  std::ofstream out(path, std::ios::binary);
  if (!out) throw UserError(path + ": cannot open for writing");
  const uint64_t n = text.size();
  out.write(reinterpret_cast<const char*>(&n), 8);
  out.write(text.data(), text.size());
  for (const auto& t : data) out.write(static_cast<const char*>(t.data_ptr()), t.numel() * t.element_size());
  out.flush();
  if (!out) throw UserError(path + ": write failed (disk full?)");
}

SafetensorsFile read_safetensors(const std::string& path, const std::function<bool(const std::string&)>& wanted) {
  require_file(path, "checkpoint");
  auto bad = [&](const std::string& what) { return UserError(path + ": not a valid checkpoint file (" + what + ")"); };
  // Read piecewise, straight into each tensor: a checkpoint may be gigabytes.
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw UserError(path + ": cannot open for reading");
  const uint64_t file_size = static_cast<uint64_t>(in.tellg());
  in.seekg(0);
  uint64_t n = 0;
  if (file_size < 8 || !in.read(reinterpret_cast<char*>(&n), 8)) throw bad("shorter than its 8-byte header length");
  if (n > kMaxHeader || n > file_size - 8)
    throw bad("header length " + std::to_string(n) + " beyond the file's " + std::to_string(file_size) + " bytes");
  std::string text(n, '\0');
  if (!in.read(text.data(), n)) throw UserError(path + ": read error");
  // A header is an object of objects whose arrays hold numbers: {"name": {"shape": [2, 3]}}.
  // Anything nested deeper, or an array longer than any shape, is refused while it is parsed,
  // so that a hostile header (megabytes of '[') costs no more memory than its text.
  int64_t array_length = 0;
  const auto shape_only = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json&) {
    using Event = nlohmann::json::parse_event_t;
    if ((event == Event::object_start || event == Event::array_start) && depth >= kMaxHeaderDepth)
      throw bad("header nested deeper than " + std::to_string(kMaxHeaderDepth) + " levels");
    if (event == Event::array_start && depth == 0) throw bad("header is not a JSON object");
    if (event == Event::array_start) array_length = 0;
    if (event == Event::value && depth == kMaxHeaderDepth && ++array_length > kMaxHeaderArray)
      throw bad("header array longer than " + std::to_string(kMaxHeaderArray) + " entries");
    return true;
  };
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(text, shape_only);
  } catch (const nlohmann::json::exception& e) {
    throw bad(std::string("header is not JSON: ") + e.what());
  }
  if (!header.is_object()) throw bad("header is not a JSON object");
  const uint64_t data_size = file_size - 8 - n;
  SafetensorsFile file;
  struct Entry {
    uint64_t begin, end;
    std::string name;
    torch::ScalarType dtype;
    std::vector<int64_t> shape;
  };
  std::vector<Entry> entries;
  for (const auto& [name, value] : header.items()) {
    try {
      if (name == "__metadata__") {
        file.metadata = value.get<std::map<std::string, std::string>>();
        continue;
      }
      Entry e{value.at("data_offsets").at(0).get<uint64_t>(), value.at("data_offsets").at(1).get<uint64_t>(), name,
              torch::kUInt8, {}};
      const auto dtype = value.at("dtype").get<std::string>();
      const auto known = std::find_if(dtypes().begin(), dtypes().end(), [&](const auto& d) { return d.first == dtype; });
      if (known == dtypes().end()) throw bad("tensor '" + name + "' has unknown dtype " + dtype);
      e.dtype = known->second;
      uint64_t size = c10::elementSize(e.dtype);
      for (const auto& dim : value.at("shape")) {
        const auto d = dim.get<uint64_t>();
        if (d != 0 && size > data_size / d) throw bad("tensor '" + name + "' is larger than the file");
        size *= d;
        e.shape.push_back(static_cast<int64_t>(d));
      }
      if (e.begin > e.end || e.end > data_size || e.end - e.begin != size)
        throw bad("tensor '" + name + "' has data_offsets that do not fit its shape and dtype, or the file");
      entries.push_back(std::move(e));
    } catch (const nlohmann::json::exception& e) {
      throw bad("header entry '" + name + "': " + e.what());
    }
  }
  // By (begin, end): an empty tensor shares its begin with the next one.
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return std::tie(a.begin, a.end) < std::tie(b.begin, b.end); });
  uint64_t expected = 0, at = 0;  // where the next tensor must begin; where the stream is
  for (const auto& e : entries) {
    if (e.begin != expected) throw bad("tensor '" + e.name + "' overlaps another or leaves a gap before it");
    expected = e.end;
    if (wanted && !wanted(e.name)) {
      file.skipped.push_back(e.name);
      continue;
    }
    auto t = torch::empty(e.shape, e.dtype);
    if (at != e.begin) in.seekg(static_cast<std::streamoff>(8 + n + e.begin));
    at = e.end;
    if (e.end > e.begin && !in.read(static_cast<char*>(t.data_ptr()), static_cast<std::streamsize>(e.end - e.begin)))
      throw UserError(path + ": read error");
    file.tensors.emplace_back(e.name, std::move(t));
  }
  if (expected != data_size) throw bad("bytes after the last tensor");
  return file;
}

}  // namespace nlpzoo
