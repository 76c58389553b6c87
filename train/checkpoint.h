#pragma once
// Self-describing checkpoints (as nanoGPT's and fastText's): parameters, optimizer state,
// training position, RNG (CPU, and CUDA when in use), the resolved config and the task's artifacts (tokenizer models),
// so that `--resume` continues exactly and the file alone rebuilds its model. LibTorch's
// optimizer archive does not keep the learning rate reliably, so the rate and the schedule
// state are stored here too. Written atomically.
//
// Version 2 (written since 2026-12) is the safetensors layout (core/safetensors.h), so that
// loading runs nothing from the file: tensors "model.<parameter or buffer>",
// "optimizer.<i>.<field>" (i: the parameter's index in the optimizer's param_groups order;
// fields as LibTorch's ParamStates name them: step, exp_avg, exp_avg_sq, max_exp_avg_sq,
// momentum_buffer, sum), "rng.cpu", "rng.cuda.<n>" (generator states, U8) and
// "artifact.<name>" (U8 bytes); string metadata "format" (nlpzoo-checkpoint-v2), "task",
// "config" (INI text), "state" (TrainingState as JSON), "optimizer_params" (when saved with an
// optimizer) and "checksums" (JSON: each tensor's CRC-32 as 8 hex digits, and "__metadata__"'s
// over the other metadata), each verified when it is read. Optimizer options (lr, betas, ...) come from
// the config. Version 1 (a torch::serialize archive, read through TorchScript) still loads,
// with a warning on stderr; see train/checkpoint_v1.h.
#include <torch/torch.h>

#include <functional>
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
  double best_valid_loss = 1e300;  // the lowest validation loss so far (whatever best_metric is)
  // The validation score that chooses checkpoint_best.pt and counts patience (config key
  // best_metric), and its best value so far (equal to best_valid_loss when it is "loss").
  // Checkpoints written before best_metric existed hold neither: they read as "loss".
  std::string best_metric = "loss";
  double best_value = 1e300;
  int64_t bad_validations = 0;  // validations since the best (early stopping)
  double elapsed_s = 0.0;       // training wall time over all runs
  int64_t world_size = 1;       // data-parallel ranks that made the updates (train/data_parallel.h)
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

/// Writes `path` atomically from named tensors ("model.<name>", "optimizer.<i>.<field>",
/// "rng.<generator>"), as save_checkpoint lays them out, with their checksums: for what rewrites
/// checkpoints without a live model (averaging, imports). num_optimizer_params < 0: no optimizer
/// state. Throws UserError if the file cannot be written.
void write_checkpoint_tensors(const std::string& path, const CheckpointContents& contents,
                              std::vector<std::pair<std::string, torch::Tensor>> tensors,
                              int64_t num_optimizer_params = -1);

/// Reads task, config, artifacts and training state, without touching a model; the other
/// tensors' bytes are skipped (they are checked by whoever loads them).
/// Throws UserError naming the path if it is missing, corrupt (the metadata, or naming the first
/// artifact whose checksum fails; a layout that does not cover the file) or not an nlpzoo checkpoint.
CheckpointContents read_checkpoint_header(const std::string& path);

/// Loads parameters (and the optimizer state if `optimizer` is given) into an already built
/// model, and the RNG states if `restore_rng`; it reads and checks only those tensors, so
/// inference skips the optimizer state (two thirds of a checkpoint saved with Adam) (the CPU generator's and, when CUDA is available,
/// each CUDA device's that the file holds; a file without the CPU state is a UserError). Throws UserError naming the path if the
/// parameters do not match the model (another model or another size: a missing, extra or
/// differently shaped or typed tensor), the optimizer state does not fit `optimizer`, or the
/// file is corrupt (as read_checkpoint_header).
void load_checkpoint_weights(const std::string& path, torch::nn::Module& model, torch::optim::Optimizer* optimizer,
                             bool restore_rng);

/// Rewrites a version-1 checkpoint as version 2, atomically and exactly (every tensor, state
/// and artifact as it was). Returns false, changing nothing, when `path` already is version 2.
/// Throws UserError naming `path` as the loaders do.
bool upgrade_checkpoint(const std::string& path);

/// What load_parameters_with_prefix did, by parameter name.
struct PartialLoadReport {
  std::vector<std::string> loaded;  // copied from the source
  int64_t loaded_values = 0;
  std::vector<std::string> fresh;   // left as they were (outside the prefix, or held back)
  int64_t fresh_values = 0;
};

/// Starts part of a model from another run (fine-tuning a pre-trained encoder): every parameter
/// of `model` whose name starts with `prefix`, unless `hold_back` says so, gets a copy of the
/// tensor of the same name in `source` (e.g. another model's named_parameters()); every other
/// parameter stays as it is. Throws UserError, before anything is copied, when `source` lacks
/// one of them ("<origin>: has no tensor 'N' for <target> (<reason>)") or its shape differs
/// ("<origin>: tensor 'N' has shape [..] but <target>'s is [..] (<reason>)").
PartialLoadReport load_parameters_with_prefix(torch::nn::Module& model, const std::map<std::string, torch::Tensor>& source,
                                              const std::string& prefix, const std::string& origin,
                                              const std::string& target, const std::string& reason,
                                              const std::function<bool(const std::string&)>& hold_back = {});

/// The periodic checkpoints of `run_dir` (checkpoint_<step>.pt, which the Trainer keeps with
/// keep_last): their steps and paths, oldest first. Other files are ignored.
std::vector<std::pair<int64_t, std::string>> periodic_checkpoints(const std::string& run_dir);

/// Checkpoint averaging (fairseq's average_checkpoints.py; Vaswani et al. 2017 average the last
/// 5-20): writes `out` atomically with the element-wise mean of the model tensors of `paths`
/// (computed in float64, stored in each tensor's dtype; tensors that are not floating point,
/// such as counters, are taken from the last path) and the last path's task, config, artifacts
/// and training state. It holds no optimizer or RNG state: it evaluates, translates and exports
/// like any checkpoint, but a run does not resume from it. Throws UserError naming the file and
/// tensor when the files are not of one model (another task, a tensor missing, extra or of
/// another shape or dtype), and as the loaders do for a corrupt file.
void average_checkpoints(const std::vector<std::string>& paths, const std::string& out);

}  // namespace nlpzoo
