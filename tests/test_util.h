#pragma once
// Helpers shared by the test files: catching a UserError's message, running commands and the
// nlpzoo binary, scratch folders.
#include <torch/torch.h>

#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "models/incremental_decoder.h"
#include "train/task.h"

/// At the top of a test that runs Python with `module` (a string, e.g. "torch") from Debian's
/// `package`: skips the test when /usr/bin/python3 cannot import it, or fails it under CI
/// (test::under_ci). Returns from the test in both cases.
#define NLPZOO_REQUIRE_PYTHON_MODULE(module, package)                                             \
  if (const std::string nlpzoo_missing_ = ::nlpzoo::test::missing_python_module(module, package); \
      !nlpzoo_missing_.empty()) {                                                                  \
    if (::nlpzoo::test::under_ci()) FAIL() << nlpzoo_missing_ << "; CI=true requires it";        \
    GTEST_SKIP() << nlpzoo_missing_;                                                              \
  }

/// At the top of a test that reads files of the shared evaluation data (test::shared_data), each
/// argument a path: skips the test when one is absent, or fails it under CI (test::under_ci), so
/// that CI cannot pass without the data. Returns from the test in both cases.
#define NLPZOO_REQUIRE_SHARED_FILES(...)                                                          \
  if (const std::string nlpzoo_missing_ = ::nlpzoo::test::missing_shared_files({__VA_ARGS__});    \
      !nlpzoo_missing_.empty()) {                                                                  \
    if (::nlpzoo::test::under_ci()) FAIL() << nlpzoo_missing_ << "; CI=true requires it";        \
    GTEST_SKIP() << nlpzoo_missing_;                                                              \
  }

namespace nlpzoo::test {

/// The message of the UserError `f` throws, or "(no UserError thrown)".
std::string user_error_of(const std::function<void()>& f);

struct CommandResult {
  int status = -1;  // exit status; -1 if killed by a signal
  std::string out, err;
};

/// Runs a shell command line with `stdin_text` on standard input, capturing standard output
/// and standard error separately.
CommandResult run_command(const std::string& command_line, const std::string& stdin_text = "");

/// Runs the nlpzoo binary under test with `args` (shell syntax) and one torch thread.
CommandResult run_cli(const std::string& args, const std::string& stdin_text = "");

/// True in a CI run (environment CI=true, as GitHub Actions and GitLab CI set it). There a
/// missing optional test dependency fails its tests instead of skipping them, so that the
/// requirement cannot lapse silently.
bool under_ci();

/// The file `relative` (e.g. "glue/CoLA/dev.tsv") of the shared evaluation data: under the
/// environment's NLPZOO_SHARED_DATA when set, else the build's (-DNLPZOO_SHARED_DIR, /data).
std::string shared_data(const std::string& relative);

/// "" when every path exists, else which do not: "shared evaluation data absent: <path>, <path>
/// (NLPZOO_SHARED_DATA=<folder>)".
std::string missing_shared_files(const std::vector<std::string>& paths);

/// "" when /usr/bin/python3 imports `module`, else why not: "/usr/bin/python3 cannot import
/// <module> (install <package>)".
std::string missing_python_module(const std::string& module, const std::string& package);

/// Runs the Python source `script` with /usr/bin/python3 (one thread) and `args`, each quoted.
CommandResult run_python(const std::string& script, const std::vector<std::string>& args = {});

/// `s` quoted for the shell.
std::string shell_quote(const std::string& s);

/// An empty folder temp/nlpzoo_<name>_<pid> (emptied if it exists).
std::filesystem::path fresh_temp_dir(const std::string& name);

/// Writes `lines` lines of two topics that never share a line, for word-vector tests: even
/// lines hold 6 words drawn from {one two six ten nine four} then "a", odd lines 6 from
/// {cat dog cow pig hen fox} then "the" (fixed seed). Creates the file's folder.
void write_topic_corpus(const std::filesystem::path& file, int lines);

/// Writes a small Spanish-English corpus, the same for the train, valid and test splits:
/// <dir>/{train,valid,test}.{es,en}, 100 aligned lines "el uno y el dos" / "the one and the two"
/// over every pair of ten numbers and colours. Creates the folder.
void write_numbers_corpus(const std::filesystem::path& dir);

/// One folder every registered task can train on: the numbers corpus (write_numbers_corpus;
/// translation, and its English side for language models), the English sentences labelled "is
/// the first word a colour?" in {train,dev,test}.tsv (classification, 2 columns, no header), and
/// english.txt (write_topic_corpus, 400 lines; word vectors). Creates the folder.
void write_task_corpora(const std::filesystem::path& dir);

/// [B, S] int64 source batch: random lengths (row 0 full, row 1 only EOS), real tokens in
/// [1, vocab_size) (PAD is never a real token), EOS at each row's end, PAD after it.
torch::Tensor random_source_batch(int64_t B, int64_t S, int64_t vocab_size);

/// A copy-task batch of the sequences data[rows[i]]: "src" and "out" each sequence then EOS,
/// "in" BOS (2) then the sequence, all [B, T] int64 padded with 0; num_tokens counts "out".
Batch copy_task_batch(const std::vector<std::vector<int64_t>>& data, const std::vector<int64_t>& rows);

/// max |a - b| in float; a gtest failure (and 1e9) if shapes or dtypes differ; 0 when empty.
float max_diff(const torch::Tensor& a, const torch::Tensor& b);

/// Greedy decoding through the IncrementalDecoder seam, as the exported twins' translate_greedy
/// defines it: src [B, S] int64 -> [B, T] int64, tokens up to EOS then PAD, stopping when every
/// row has ended or after max_len steps.
torch::Tensor eager_greedy(IncrementalDecoder& model, const torch::Tensor& src, int64_t max_len);

/// `steps` updates of `optimizer` on the task's train batches in order (epoch after epoch), each
/// on the mean loss per unit (loss_sum / num_tokens), as the Trainer computes it.
void run_updates(Task& task, torch::optim::Optimizer& optimizer, int64_t steps);

/// Checks the report a Python script printed about an exported file: lines
/// "<kind> <id> <rest>" for kind params|attrs|greedy compared as text with texts["<kind> <id>"],
/// other lines "<kind> <id> <t> v1 v2 ..." compared within 1e-5 with values["<kind> <id> <t>"],
/// and a final "done". Every expectation must be met exactly once.
void expect_python_report(const std::string& output, const std::map<std::string, torch::Tensor>& values,
                          const std::map<std::string, std::string>& texts);

}  // namespace nlpzoo::test
