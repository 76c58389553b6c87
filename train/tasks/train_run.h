#pragma once
// One training run as `nlpzoo train` makes it: the resume rules, the guard against overwriting a
// run, the config resolved from the INI file and the command line, and the process's part in it
// (a single process, or a rank of a data-parallel group), holding the run folder's lock
// (train/run_lock.h) while it writes.
#include <torch/torch.h>

#include <optional>
#include <string>
#include <vector>

#include "core/config.h"
#include "train/distributed.h"
#include "train/trainer.h"

namespace nlpzoo {

/// What `nlpzoo train` was asked for.
struct TrainRequest {
  std::string run_dir;      // required
  bool resume = false;      // continue from RUN_DIR/checkpoint_last.pt
  std::string config_path;  // the INI file; with resume, "" means RUN_DIR/config.ini
  std::string task;         // "" or the task the config must train (--task)
  std::vector<std::string> overrides;  // --KEY VALUE pairs over the INI file's keys
};

/// A request resolved into the run it makes.
struct PreparedRun {
  std::string run_dir, config_path, task_name;
  bool resume = false;
  Config config;  // the INI file under the overrides: this invocation's keys
  TrainerOptions trainer;  // config's Trainer keys, checked
  torch::Device device = torch::kCPU;
};

/// Applies the resume rules (resume needs RUN_DIR/checkpoint_last.pt and defaults the config to
/// RUN_DIR/config.ini; a fresh run needs --config and never overwrites a run folder holding a
/// checkpoint), reads the task from the config, resolves and checks the config (a bad Trainer
/// key fails here, before any slow work). Writes nothing. Throws UserError naming the file, key
/// or flag.
PreparedRun prepare_train_run(const TrainRequest& request);

/// Throws UserError unless a fresh run may write into `run_dir` (no checkpoint there yet); for
/// resume, unless RUN_DIR/checkpoint_last.pt exists.
void check_run_dir(const std::string& run_dir, bool resume);

/// Trains `run` in this process (the task's setup may complete its config): alone when `launch` is nullopt, else as rank launch->rank of a
/// data-parallel group it joins (`options`; ranks other than 0 print nothing on standard
/// output). The writing process (rank 0) holds the run folder's lock from before the tokenizers
/// are trained to the end, and checks the run folder again under it. After the task's setup and
/// before the first collective on parameters, the ranks compare their config, data and
/// executable, and all throw UserError naming the difference if one differs. Returns
/// Trainer::train's status. Throws UserError (another process holds the run folder: naming its pid) and the
/// Trainer's errors; a rank's error is reported to the group first.
int train_in_process(PreparedRun run, const std::optional<LaunchEnvironment>& launch,
                     const DistributedOptions& options);

}  // namespace nlpzoo
