#pragma once
// Self-describing checkpoints (as nanoGPT's and fastText's): parameters, optimizer state,
// training position, RNG (CPU, and CUDA when in use), the resolved config and the task's artifacts (tokenizer models),
// so that `--resume` continues exactly and the file alone rebuilds its model. LibTorch's
// optimizer archive does not keep the learning rate reliably, so the rate and the schedule
// state are stored here too. Written atomically.
#include <torch/torch.h>

#include <map>
#include <string>
#include <vector>

namespace nlpzoo {

/// Where training stands; everything the loop needs to continue exactly.
struct TrainingState {
  int64_t step = 0;         // updates done
  int64_t epoch = 0;        // current epoch (0-based)
  int64_t batch_index = 0;  // next batch of `epoch` to read
  double lr = 0.0;          // rate of the last update
  double best_valid_loss = 1e300;
  int64_t bad_validations = 0;  // validations since the best (early stopping)
  double elapsed_s = 0.0;       // training wall time over all runs
  std::vector<double> schedule_state;
};

struct CheckpointContents {
  std::string task;    // e.g. "translation"
  std::string config;  // resolved config as INI text
  std::map<std::string, std::string> artifacts;
  TrainingState state;
};

/// Writes `path` atomically. `optimizer` may be null (export-only checkpoints).
/// Throws UserError if the file cannot be written.
void save_checkpoint(const std::string& path, torch::nn::Module& model, torch::optim::Optimizer* optimizer,
                     const CheckpointContents& contents);

/// Reads task, config, artifacts and training state, without touching a model.
/// Throws UserError naming the path if it is missing, corrupt or not an nlpzoo checkpoint.
CheckpointContents read_checkpoint_header(const std::string& path);

/// Loads parameters (and the optimizer state if `optimizer` is given) into an already built
/// model, and the RNG states if `restore_rng` (the CPU generator's and, when CUDA is available,
/// each CUDA device's that the file holds; a file without the CPU state is a UserError). Throws UserError naming the path if the
/// parameters do not match the model (another model or another size).
void load_checkpoint_weights(const std::string& path, torch::nn::Module& model, torch::optim::Optimizer* optimizer,
                             bool restore_rng);

}  // namespace nlpzoo
