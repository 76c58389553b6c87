#include "train/run_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/io.h"

namespace fs = std::filesystem;

namespace nlpzoo {
namespace {

// The pid the holder wrote, or "" when the file is empty (the holder has not written it yet).
std::string holder_pid(int fd) {
  char text[32] = {};
  const ssize_t n = pread(fd, text, sizeof text - 1, 0);
  std::string pid(text, n > 0 ? n : 0);
  while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
  return pid;
}

}  // namespace

RunLock::RunLock(const std::string& run_dir) : path_((fs::path(run_dir) / kRunLockFile).string()) {
  std::error_code error;
  created_ = !fs::exists(run_dir);
  fs::create_directories(run_dir, error);
  if (error) throw UserError(run_dir + ": cannot create the run folder (" + error.message() + ")");
  // A holder that releases removes the file: a lock taken on a file no longer at `path_` is
  // taken again on the one that is (or a new one).
  for (int attempt = 0; attempt < 100; ++attempt) {
    const int fd = open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) throw UserError(path_ + ": cannot create the run folder's lock file (" + std::strerror(errno) + ")");
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int why = errno;
      const std::string pid = holder_pid(fd);
      close(fd);
      if (why != EWOULDBLOCK)
        throw UserError(path_ + ": cannot lock the run folder (" + std::strerror(why) + ")");
      throw UserError(run_dir + " is in use by process " + (pid.empty() ? std::string("(unknown pid)") : pid) + " (" +
                      path_ + "): one process at a time trains or upgrades a run folder; wait for it to end, or "
                      "choose another --run-dir");
    }
    struct stat held {}, named {};
    if (fstat(fd, &held) == 0 && stat(path_.c_str(), &named) == 0 && held.st_ino == named.st_ino &&
        held.st_dev == named.st_dev) {
      const std::string pid = std::to_string(getpid()) + "\n";
      if (ftruncate(fd, 0) != 0 || pwrite(fd, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
        close(fd);
        throw UserError(path_ + ": cannot write the run folder's lock file");
      }
      fd_ = fd;
      return;
    }
    close(fd);  // released and removed by its holder meanwhile
  }
  throw UserError(path_ + ": cannot lock the run folder (the lock file keeps changing)");
}

RunLock::~RunLock() {
  if (fd_ < 0) return;
  unlink(path_.c_str());  // while held: a process waiting on this file sees it is gone and retries
  close(fd_);
  // A folder made for a run that wrote nothing (it failed first) is not left behind.
  std::error_code ignored;
  if (created_ && fs::is_empty(fs::path(path_).parent_path(), ignored)) fs::remove(fs::path(path_).parent_path(), ignored);
}

}  // namespace nlpzoo
