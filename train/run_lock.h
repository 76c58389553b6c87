#pragma once
// One process at a time on a run folder: `nlpzoo train` (fresh or --resume) and `nlpzoo
// checkpoint upgrade` hold an advisory lock (flock) on RUN_DIR/run.lock for as long as they
// write there, so that a second one refuses, naming the holder's pid, instead of replacing the
// first one's checkpoints and interleaving its metrics.jsonl. The kernel releases a flock when its
// holder dies, so a lock file left by a killed process does not block the next run.
//
// Data-parallel training: only rank 0 writes the run folder, and only rank 0 locks it (the other
// ranks, possibly on other machines, never touch it).
#include <string>

namespace nlpzoo {

/// The lock file's name inside a run folder.
inline constexpr const char* kRunLockFile = "run.lock";

class RunLock {
 public:
  /// Creates `run_dir` (and its parents) when missing and locks RUN_DIR/run.lock, writing this
  /// process's pid into it. Throws UserError "<run_dir> is in use by process <pid> (<lock file>):
  /// ..." when another process (or another RunLock of this one) holds it, and UserError naming
  /// the file when it cannot be created or locked.
  explicit RunLock(const std::string& run_dir);
  /// Removes the lock file and releases the lock; removes `run_dir` too when this lock created
  /// it and it is empty (the run failed before writing anything).
  ~RunLock();
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
  bool created_ = false;
};

}  // namespace nlpzoo
