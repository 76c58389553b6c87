#include "train/tasks/train_run.h"

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <memory>

#include "core/io.h"
#include "train/data_parallel.h"
#include "train/run_lock.h"
#include "train/tasks/registry.h"
#include "train/trainer.h"

namespace fs = std::filesystem;

namespace nlpzoo {

void check_run_dir(const std::string& run_dir, bool resume) {
  const std::string last = run_dir + "/checkpoint_last.pt";
  if (resume) {
    require_file(last, "checkpoint to resume; train without --resume first");
    return;
  }
  // Never overwrite a run by accident: its checkpoints are hours of work.
  for (const auto& held : {last, run_dir + "/checkpoint_best.pt"})
    if (fs::exists(held))
      throw UserError(run_dir + " already holds a run (" + held + "); add --resume to continue it or choose another --run-dir");
}

PreparedRun prepare_train_run(const TrainRequest& request) {
  PreparedRun run;
  run.run_dir = request.run_dir;
  run.resume = request.resume;
  run.config_path = request.config_path;
  if (run.resume) {
    check_run_dir(run.run_dir, true);
    if (run.config_path.empty()) run.config_path = run.run_dir + "/config.ini";
  } else {
    if (run.config_path.empty()) throw UserError("--config is required (e.g. --config configs/seq2seq-bahdanau-es-en.ini)");
    check_run_dir(run.run_dir, false);
  }
  run.task_name = read_task_name(run.config_path);
  if (!request.task.empty() && request.task != run.task_name)
    throw UserError("--task " + request.task + ": " + run.config_path + " trains task '" + run.task_name +
                    "'; the config file's task key chooses the task");
  run.config = Config::resolve(task_schema(run.task_name), run.config_path, request.overrides);
  // A bad value of the Trainer's keys (lr, device, precision, ...) fails now, not after the
  // tokenizer is trained and the corpus read (and, with --nproc, once rather than per worker).
  run.trainer = check_trainer_config(run.config);
  run.device = parse_device(run.trainer.device);
  return run;
}

int train_in_process(PreparedRun run, const std::optional<LaunchEnvironment>& launch,
                     const DistributedOptions& options) {
  std::unique_ptr<DataParallelGroup> group;
  if (launch) {
    // Rank 0 prints the run's progress; the others' output would repeat it (errors still show).
    if (launch->rank != 0) {
      std::cout.flush();
      const int null = open("/dev/null", O_WRONLY);
      if (null >= 0) dup2(null, STDOUT_FILENO);
    }
    group = DataParallelGroup::join(*launch, options, run.device);
  }
  try {
    // Only the process that writes the run folder locks it (rank 0 of a group); under the lock,
    // the run folder is checked again: another run may have written it since prepare_train_run.
    std::unique_ptr<RunLock> lock;
    if (!group || group->rank() == 0) {
      lock = std::make_unique<RunLock>(run.run_dir);
      check_run_dir(run.run_dir, run.resume);
    }
    // Seed before the model is built, so parameter initialisation is reproducible too.
    torch::manual_seed(static_cast<uint64_t>(run.trainer.seed));
    auto task = make_task(run.task_name);
    // Rank 0 trains the tokenizers into the run folder; the other ranks then read them.
    const auto setup = [&](bool reuse) {
      task->setup(run.config, {run.trainer.data_dir, run.run_dir, {Split::kTrain, Split::kValid}, reuse});
    };
    if (group)
      group->rank0_first([&] { setup(run.resume || group->rank() != 0); });
    else
      setup(run.resume);
    std::unique_ptr<Trainer> trainer =
        group ? std::make_unique<DataParallelTrainer>(*task, run.config, run.task_name, run.run_dir, *group)
              : std::make_unique<Trainer>(*task, run.config, run.task_name, run.run_dir);
    // The run keeps the config file's budgets; the command line's bound this invocation.
    trainer->keep_budgets(Config::resolve(task_schema(run.task_name), run.config_path, {}));
    return trainer->train(run.resume);
  } catch (const c10::Error& e) {
    // The other ranks name this one and its error in theirs.
    if (group) group->report_failure(e.what_without_backtrace());
    throw;
  } catch (const std::exception& e) {
    if (group) group->report_failure(e.what());
    throw;
  }
}

}  // namespace nlpzoo
