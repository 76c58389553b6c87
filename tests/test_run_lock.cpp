// One process at a time on a run folder (train/run_lock.h), and the rules `nlpzoo train` applies
// to a run folder before it trains (train/tasks/train_run.h).
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>

#include "core/io.h"
#include "tests/test_util.h"
#include "train/run_lock.h"
#include "train/tasks/train_run.h"

namespace fs = std::filesystem;
using namespace nlpzoo;

namespace {

// The UserError `f` throws, or "" when it throws none.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

TEST(RunLock, ASecondLockRefusesNamingTheHolder) {
  const auto dir = test::fresh_temp_dir("run_lock");
  const auto run = (dir / "run").string();
  {
    RunLock held(run);
    EXPECT_TRUE(fs::exists(held.path()));
    EXPECT_EQ(read_file(held.path()), std::to_string(getpid()) + "\n");
    // flock locks belong to an open file description: a second open of the file conflicts, in
    // this process as in another.
    const auto error = error_of([&] { RunLock second(run); });
    EXPECT_NE(error.find(run + " is in use by process " + std::to_string(getpid()) + " (" + run + "/run.lock)"),
              std::string::npos)
        << error;
  }
  // Released: the file is gone, and the folder can be locked again.
  EXPECT_FALSE(fs::exists(run + "/run.lock"));
  EXPECT_EQ(error_of([&] { RunLock again(run); }), "");
  fs::remove_all(dir);
}

// A run that failed before writing anything leaves no folder behind; one it found stays.
TEST(RunLock, RemovesOnlyAnEmptyFolderItMade) {
  const auto dir = test::fresh_temp_dir("run_lock_folder");
  { RunLock made((dir / "new").string()); }
  EXPECT_FALSE(fs::exists(dir / "new"));
  {
    RunLock made((dir / "written").string());
    atomic_write_text((dir / "written" / "config.ini").string(), "task = x\n");
  }
  EXPECT_TRUE(fs::exists(dir / "written" / "config.ini"));
  fs::create_directories(dir / "found");
  { RunLock found((dir / "found").string()); }
  EXPECT_TRUE(fs::is_directory(dir / "found"));
  fs::remove_all(dir);
}

// Another process holds the lock: refused, naming its pid. Killed, it leaves its lock file (and
// pid) behind, which does not block: the kernel released its flock.
TEST(RunLock, AnotherProcessBlocksUntilItDies) {
  const auto dir = test::fresh_temp_dir("run_lock_process");
  const auto run = (dir / "run").string();
  fs::create_directories(run);
  const std::string lock_file = run + "/run.lock";
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Only async-signal-safe calls after fork in a threaded process.
    const int fd = open(lock_file.c_str(), O_RDWR | O_CREAT, 0644);
    if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) != 0) _exit(1);
    char pid[24];
    int n = 0;
    for (long p = getpid(); p > 0; p /= 10) pid[n++] = static_cast<char>('0' + p % 10);
    for (int i = 0; i < n / 2; ++i) std::swap(pid[i], pid[n - 1 - i]);
    pid[n++] = '\n';
    if (write(fd, pid, n) != n) _exit(1);
    if (write(ready[1], "x", 1) != 1) _exit(1);
    for (;;) pause();
  }
  close(ready[1]);
  char byte = 0;
  ASSERT_EQ(read(ready[0], &byte, 1), 1) << "the child could not take the lock";
  close(ready[0]);
  const auto error = error_of([&] { RunLock second(run); });
  EXPECT_NE(error.find(run + " is in use by process " + std::to_string(child)), std::string::npos) << error;
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_EQ(read_file(lock_file), std::to_string(child) + "\n");  // left behind by the dead holder
  EXPECT_EQ(error_of([&] { RunLock after(run); }), "");
  fs::remove_all(dir);
}

std::string config_file() { return std::string(NLPZOO_SOURCE_DIR) + "/configs/sst2-avgemb.ini"; }

// The resume rules and the overwrite guard, before anything is written.
TEST(TrainRun, ResumeRulesAndOverwriteGuard) {
  const auto dir = test::fresh_temp_dir("train_run");
  const auto run = (dir / "run").string();
  TrainRequest fresh;
  fresh.run_dir = run;
  EXPECT_NE(error_of([&] { prepare_train_run(fresh); }).find("--config is required"), std::string::npos);
  fresh.config_path = config_file();
  fresh.overrides = {"--device", "cpu", "--data_dir", (dir / "data").string()};
  const auto prepared = prepare_train_run(fresh);
  EXPECT_EQ(prepared.task_name, "classification");
  EXPECT_EQ(prepared.config.get("data_dir"), (dir / "data").string());
  EXPECT_EQ(prepared.device, torch::Device(torch::kCPU));
  EXPECT_FALSE(fs::exists(run)) << "preparing a run writes nothing";
  fresh.task = "translation";
  EXPECT_NE(error_of([&] { prepare_train_run(fresh); })
                .find("--task translation: " + config_file() + " trains task 'classification'"),
            std::string::npos);
  fresh.task = "";

  TrainRequest resume;
  resume.run_dir = run;
  resume.resume = true;
  EXPECT_NE(error_of([&] { prepare_train_run(resume); }).find(run + "/checkpoint_last.pt"), std::string::npos);

  // A run folder holding a checkpoint: a fresh run refuses it, a resume reads its config.ini.
  fs::create_directories(run);
  atomic_write_text(run + "/checkpoint_best.pt", "");
  EXPECT_NE(error_of([&] { prepare_train_run(fresh); })
                .find(run + " already holds a run (" + run + "/checkpoint_best.pt); add --resume"),
            std::string::npos);
  atomic_write_text(run + "/checkpoint_last.pt", "");
  fs::copy_file(config_file(), run + "/config.ini");
  const auto resumed = prepare_train_run(resume);
  EXPECT_EQ(resumed.config_path, run + "/config.ini");
  EXPECT_TRUE(resumed.resume);
  fs::remove_all(dir);
}

// A run folder another process holds: the training process refuses before it writes anything.
TEST(TrainRun, ALockedRunFolderIsRefused) {
  const auto dir = test::fresh_temp_dir("train_run_locked");
  const auto run = (dir / "run").string();
  TrainRequest request;
  request.run_dir = run;
  request.config_path = config_file();
  request.overrides = {"--device", "cpu", "--data_dir", (dir / "none").string()};
  const auto prepared = prepare_train_run(request);
  RunLock held(run);
  const auto error = error_of([&] { train_in_process(prepared, std::nullopt, {}); });
  EXPECT_NE(error.find(run + " is in use by process " + std::to_string(getpid())), std::string::npos) << error;
  EXPECT_EQ(std::distance(fs::directory_iterator(run), fs::directory_iterator()), 1) << "wrote into the run folder";
  fs::remove_all(dir);
}

// Through the CLI: train (fresh and --resume) and checkpoint upgrade refuse a run folder that
// another process holds, naming its pid.
TEST(RegressionRunLock, TrainAndUpgradeRefuseALockedRunFolder) {
  const auto dir = test::fresh_temp_dir("run_lock_cli");
  const auto run = (dir / "run").string(), other = (dir / "other").string();
  const std::string pid = std::to_string(getpid());
  RunLock held(run);
  auto r = test::run_cli("train --config " + test::shell_quote(config_file()) + " --run-dir " + test::shell_quote(run) +
                         " --data-dir " + test::shell_quote((dir / "none").string()) + " --device cpu");
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_NE(r.err.find(run + " is in use by process " + pid), std::string::npos) << r.err;
  atomic_write_text(run + "/checkpoint_last.pt", "not a checkpoint");
  fs::copy_file(config_file(), run + "/config.ini");
  r = test::run_cli("train --run-dir " + test::shell_quote(run) + " --resume --device cpu");
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_NE(r.err.find(run + " is in use by process " + pid), std::string::npos) << r.err;
  r = test::run_cli("checkpoint upgrade " + test::shell_quote(run));
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_NE(r.err.find(run + " is in use by process " + pid), std::string::npos) << r.err;
  r = test::run_cli("checkpoint upgrade " + test::shell_quote(run + "/checkpoint_last.pt"));
  EXPECT_NE(r.err.find(run + " is in use by process " + pid), std::string::npos) << r.err;
  EXPECT_EQ(read_file(run + "/checkpoint_last.pt"), "not a checkpoint");
  // Another folder is free.
  fs::create_directories(other);
  atomic_write_text(other + "/checkpoint_last.pt", "not a checkpoint");
  r = test::run_cli("checkpoint upgrade " + test::shell_quote(other));
  EXPECT_EQ(r.err.find("is in use"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(other + "/run.lock"));
  fs::remove_all(dir);
}

}  // namespace
