#pragma once
// The tasks the CLI can train, by the config's `task` key, and the way back from a run folder
// or checkpoint to a ready model (evaluate, translate, export all start there).
#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

#include "train/checkpoint.h"
#include "core/config.h"
#include "train/task.h"

namespace nlpzoo {

/// Names of the registered tasks ("translation", ...).
std::vector<std::string> task_names();

/// Every key a run of `task_name` reads: the trainer's plus the task's. Throws UserError
/// listing the known tasks when `task_name` is unknown.
ConfigSchema task_schema(const std::string& task_name);

/// The task's own keys, without the trainer's (what `train --help` lists under the task).
/// Throws UserError listing the known tasks when `task_name` is unknown.
ConfigSchema task_own_schema(const std::string& task_name);

/// A fresh, not yet set-up task. Throws UserError for an unknown name.
std::unique_ptr<Task> make_task(const std::string& task_name);

/// A task rebuilt from a checkpoint alone: config and tokenizer models from the file, the
/// model built from that config, parameters loaded, moved to `device`, in eval mode.
/// The task also reads `splits` (for evaluation) of `data_dir`, or of the run's own data_dir
/// when `data_dir` is empty; a given `data_dir` replaces the config's.
struct LoadedRun {
  std::unique_ptr<Task> task;
  Config config;
  CheckpointContents header;
};
/// Throws UserError naming `checkpoint_path` if it is missing, corrupt, of an unknown task
/// or does not match the model its config describes.
/// The checkpoint_last.pt of the run folder `dir` that config key `key` names (init_from), for
/// a new run to start from. Throws UserError naming the key and `dir` (then `expected`, what the
/// key should name) when it is missing, not a folder or holds no checkpoint, and naming the file
/// for a version-1 checkpoint (read through TorchScript, which can run code).
std::string run_to_start_from(const std::string& dir, const std::string& key, const std::string& expected);

LoadedRun load_run(const std::string& checkpoint_path, const torch::Device& device, const std::string& data_dir = "",
                   const std::set<Split>& splits = {});

}  // namespace nlpzoo
