// A run folder under stress, through the nlpzoo binary: SIGTERM, a crash mid-write, a folder
// holding only a best checkpoint.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "datasets/io.h"
#include "tests/test_util.h"
#include "train/checkpoint.h"

namespace fs = std::filesystem;
using namespace nlpzoo;

namespace {

using test::run_cli;
using test::shell_quote;

class RegressionCheckpointCli : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = test::fresh_temp_dir("checkpoint_cli");
    test::write_numbers_corpus(root_ / "data");
  }
  void TearDown() override { fs::remove_all(root_); }
  // Arguments of a tiny translation run into root_/run.
  std::string train(const std::string& extra) const {
    return "train --config " + shell_quote(std::string(NLPZOO_SOURCE_DIR) + "/configs/seq2seq-bahdanau-es-en.ini") +
           " --data-dir " + shell_quote((root_ / "data").string()) + " --run-dir " + run_q() +
           " --src_vocab_size 60 --tgt_vocab_size 60 --embed_dim 16 --hidden_size 32 --attention_dim 16 --dropout 0"
           " --lr 0.01 --max_tokens 400 --log_interval 1 --device cpu " + extra;
  }
  fs::path run() const { return root_ / "run"; }
  std::string run_q() const { return shell_quote(run().string()); }
  std::string last() const { return (run() / "checkpoint_last.pt").string(); }
  fs::path root_;
};

// The pid of a process that has ended.
std::string dead_pid() {
  const auto r = test::run_command("sh -c 'echo $$'");
  return r.out.substr(0, r.out.find('\n'));
}

void touch(const fs::path& path) { std::ofstream(path) << "partial"; }

// SIGTERM (timeout, Slurm, Kubernetes) saves a resumable checkpoint like Ctrl-C and exits 143.
TEST_F(RegressionCheckpointCli, SigtermSavesAResumableCheckpointAndExits143) {
  const auto metrics = shell_quote((run() / "metrics.jsonl").string());
  const auto log = shell_quote((root_ / "log.txt").string());  // outside the run folder, made before it
  const std::string script = std::string("NLPZOO_THREADS=1 ") + shell_quote(NLPZOO_CLI) + " " +
                             train("--max-steps 100000 --valid_interval 100000") + " >" + log + " & pid=$!; "
                             "for i in $(seq 1 600); do [ -s " + metrics + " ] && break; sleep 0.1; done; "
                             "kill -TERM $pid; wait $pid; echo status=$?";
  auto r = test::run_command(script);
  EXPECT_NE(r.out.find("status=143"), std::string::npos) << r.out << r.err;
  // Not killed by the signal: the run said why it stopped and saved before its first validation.
  EXPECT_NE(read_file((root_ / "log.txt").string()).find("interrupted (SIGTERM): saved"), std::string::npos);
  ASSERT_TRUE(fs::exists(last())) << r.err;
  const int64_t saved = read_checkpoint_header(last()).state.step;
  ASSERT_GE(saved, 1);
  r = run_cli("train --run-dir " + run_q() + " --resume --max-steps " + std::to_string(saved + 2) + " --device cpu");
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("at step " + std::to_string(saved) + ","), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("done: " + std::to_string(saved + 2) + " updates"), std::string::npos) << r.out;
}

// A process killed while writing a checkpoint leaves checkpoint_*.pt.tmp.<pid>: the next start
// and the next --resume remove those of ended processes (and only those), saying so.
TEST_F(RegressionCheckpointCli, StaleTemporaryFilesAreRemovedOnStartAndResume) {
  fs::create_directories(run());
  const auto stale = run() / ("checkpoint_last.pt.tmp." + dead_pid());
  const auto live = run() / ("checkpoint_best.pt.tmp." + std::to_string(getpid()));  // this test runs
  touch(stale);
  touch(live);
  auto r = run_cli(train("--max-steps 2 --valid_interval 2"));
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(live));
  EXPECT_NE(r.out.find("removed " + stale.string()), std::string::npos) << r.out;
  const auto stale_again = run() / ("config.ini.tmp." + dead_pid());
  touch(stale_again);
  r = run_cli("train --run-dir " + run_q() + " --resume --max-steps 3 --device cpu");
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_FALSE(fs::exists(stale_again));
  EXPECT_NE(r.out.find("removed " + stale_again.string()), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(live));
}

// A folder holding a best checkpoint but no last one is a run too: a fresh train refuses it.
TEST_F(RegressionCheckpointCli, FreshTrainRefusesAFolderWithOnlyABestCheckpoint) {
  ASSERT_EQ(run_cli(train("--max-steps 2 --valid_interval 2")).status, 0);
  fs::remove(last());
  const auto best = read_file((run() / "checkpoint_best.pt").string());
  const auto r = run_cli(train("--max-steps 2 --valid_interval 2"));
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("checkpoint_best.pt"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--resume"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("another --run-dir"), std::string::npos) << r.err;
  EXPECT_EQ(read_file((run() / "checkpoint_best.pt").string()), best);
}

}  // namespace
