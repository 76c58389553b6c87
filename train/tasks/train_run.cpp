#include "train/tasks/train_run.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>

#include "core/io.h"
#include "train/data_parallel.h"
#include "train/run_lock.h"
#include "train/tasks/registry.h"
#include "train/trainer.h"

namespace fs = std::filesystem;

namespace nlpzoo {

namespace {

// zlib's CRC-32, fed piece by piece: a cheap digest to tell two ranks' inputs apart (not
// against an adversary).
class Digest {
 public:
  void add(const void* data, size_t n) {
    const auto* p = static_cast<const Bytef*>(data);
    for (size_t done = 0; done < n;) {  // crc32 takes a uInt length
      const auto chunk = static_cast<uInt>(std::min<size_t>(n - done, 1u << 30));
      crc_ = crc32(crc_, p + done, chunk);
      done += chunk;
    }
  }
  void add(const std::string& s) { add(s.data(), s.size() + 1); }  // with its terminator: "ab","c" != "a","bc"
  std::string hex() const {
    std::ostringstream out;
    out << std::hex << std::setw(8) << std::setfill('0') << crc_;
    return out.str();
  }

 private:
  uLong crc_ = crc32(0L, Z_NULL, 0);
};

// What the ranks of a data-parallel run compare before the first collective on parameters
// (DataParallelGroup::agree), as "section.key" -> value:
//  - config: every key of the config as this invocation resolved it (the file and the command
//    line, budgets included), and --resume. Two keys may differ between ranks in form but not in
//    meaning: data_dir (machines may keep the corpus at different paths; its content is compared
//    under data) and the device's index (a rank may be given its own GPU; its type is compared);
//  - data: per split, the number of batches of epoch 0 and a digest of its first batch, as the
//    task made them from its corpus: a different corpus changes one or the other whatever files
//    the task reads, and batches are pure functions of their index, so making one changes nothing;
//  - code: a digest of this executable, so that a rank running another build (other code,
//    another LibTorch) is refused rather than computing something else.
// The config is taken before the task's setup, which completes it from what it reads.
void add_config_fingerprint(std::map<std::string, std::string>& fingerprint, const PreparedRun& run) {
  for (const auto& [key, value] : run.config.values())
    if (key != "data_dir") fingerprint["config." + key] = value;
  fingerprint["config.device"] = c10::DeviceTypeName(run.device.type(), /*lower_case=*/true);
  fingerprint["config.resume"] = run.resume ? "true" : "false";
}

void add_data_and_code_fingerprint(std::map<std::string, std::string>& fingerprint, Task& task) {
  for (const Split split : {Split::kTrain, Split::kValid}) {
    const std::string name = "data." + to_string(split);
    const int64_t batches = task.num_batches(split, 0);
    fingerprint[name + ".batches"] = std::to_string(batches);
    if (batches == 0) continue;
    const Batch batch = task.make_batch(split, 0, 0);
    Digest digest;
    for (const auto& [key, tensor] : batch.tensors) {
      const auto t = tensor.cpu().contiguous();
      digest.add(key);
      digest.add(std::string(c10::toString(t.scalar_type())));
      for (const int64_t size : t.sizes()) digest.add(&size, sizeof size);
      digest.add(t.data_ptr(), t.numel() * t.element_size());
    }
    fingerprint[name + ".first_batch"] = std::to_string(batch.num_examples) + " examples, " +
                                         std::to_string(batch.num_tokens) + " units, digest " + digest.hex();
  }
  Digest digest;
  const std::string executable = read_file("/proc/self/exe");
  digest.add(executable.data(), executable.size());
  fingerprint["code.executable"] = "digest " + digest.hex() + " of " + std::to_string(executable.size()) + " bytes";
}

}  // namespace

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
    std::map<std::string, std::string> fingerprint;
    if (group) add_config_fingerprint(fingerprint, run);
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
    if (group) {
      add_data_and_code_fingerprint(fingerprint, *task);
      group->agree(fingerprint);
    }
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
