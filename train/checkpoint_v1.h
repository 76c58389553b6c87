#pragma once
// Version-1 checkpoints: a torch::serialize archive, which is TorchScript's zip container and
// is read by torch::jit::load. Loading such a file can run TorchScript code it carries (a
// module's __setstate__), so it is read only after checking that its code defines no method
// (nlpzoo's own archives define none), and only to be rewritten as version 2.
#include <torch/torch.h>

#include <string>

#include "train/checkpoint.h"

namespace nlpzoo {

/// True when `path` starts as a zip file does (a version-1 checkpoint); false for anything else.
bool is_checkpoint_v1(const std::string& path);

/// What a version-1 file holds, named as version 2 names it.
struct CheckpointV1 {
  CheckpointContents contents;
  // "model.<name>", "optimizer.<i>.<field>" (i counts the optimizer's parameters in
  // param_groups order; fields as LibTorch's ParamStates name them, step as an int64 scalar),
  // "rng.<generator>"
  std::vector<std::pair<std::string, torch::Tensor>> tensors;
  int64_t optimizer_params = -1;  // the optimizer's parameter count; -1: no optimizer state
};

/// Reads a version-1 file without running code from it. Throws UserError naming `path` if a
/// record does not match its CRC-32 (naming the record), its
/// TorchScript code defines a method (which loading would run), or it is not a readable
/// nlpzoo version-1 checkpoint.
CheckpointV1 read_checkpoint_v1(const std::string& path);

/// Writes a version-1 file as nlpzoo did before version 2: only for tests of the version-1
/// path (reading, `checkpoint upgrade`). Throws UserError if it cannot be written.
void save_checkpoint_v1(const std::string& path, torch::nn::Module& model, torch::optim::Optimizer* optimizer,
                        const CheckpointContents& contents);

}  // namespace nlpzoo
