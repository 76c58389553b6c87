#pragma once
// The safetensors layout (github.com/huggingface/safetensors, "Format"): an 8-byte little-endian
// header length N, N bytes of JSON {"<name>": {"dtype": "F32", "shape": [2, 3], "data_offsets":
// [begin, end]}, ..., "__metadata__": {"<key>": "<string>"}}, then the tensors' raw
// little-endian bytes back to back (offsets count from the end of the header). Reading parses
// JSON and copies bytes: nothing in the file is run. Python's `safetensors` reads these files.
#include <torch/torch.h>

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace nlpzoo {

struct SafetensorsFile {
  std::vector<std::pair<std::string, torch::Tensor>> tensors;  // in the order of their bytes
  std::map<std::string, std::string> metadata;
  std::vector<std::string> skipped;  // tensors in the header that a reader's `wanted` left unread
};

/// Bytes (a file's, a string's) as a 1-D U8 tensor, and back (`t` any U8 tensor).
torch::Tensor bytes_tensor(const std::string& bytes);
std::string tensor_bytes(const torch::Tensor& t);

/// Writes `file` to `path` (not atomically: callers pass atomic_write's temporary path).
/// Tensors may live on any device and be non-contiguous; dtypes F64 F32 F16 BF16 I64 I32 I16
/// I8 U8 BOOL. Throws UserError naming `path` on an I/O error, a duplicate name or another dtype.
void write_safetensors(const std::string& path, const SafetensorsFile& file);

/// Reads a file `write_safetensors` (or Python's safetensors) wrote: CPU tensors in the order
/// of their bytes; with `wanted`, only the tensors it accepts (by name), the others' bytes are
/// skipped and their names listed in `skipped` (an inference run need not read the optimizer
/// state that makes up two thirds of a training checkpoint). Throws UserError naming `path` when
/// the header length, JSON, a dtype, shape or offsets are wrong, or the bytes do not exactly
/// cover the tensors (checked for every tensor, read or not).
SafetensorsFile read_safetensors(const std::string& path,
                                 const std::function<bool(const std::string&)>& wanted = nullptr);

}  // namespace nlpzoo
