#pragma once
// Child processes: this executable again (the CLI's bench matmul --compare, zoo train/check)
// or a system tool (sha256sum), with their standard output, exit status, wall time and peak RSS.
#include <cstdint>
#include <string>
#include <vector>

namespace nlpzoo {

struct ChildResult {
  int status = -1;          // exit status; -1 if killed by a signal
  std::string out;          // standard output, when captured
  double wall_s = 0;        // wall time, seconds
  int64_t peak_rss_kb = 0;  // the child's peak resident set (getrusage's ru_maxrss), KiB
};

/// Runs `program` (a path, or a name looked up in PATH) with `args` (argv[1...]). The
/// environment is this process's with `env` applied in order: "NAME=VALUE" sets or replaces
/// NAME, a bare "NAME" removes it. Standard output is captured when `capture_stdout`, else
/// shared with this process, as standard error and input always are. Waits for the child.
/// Throws UserError naming `program` when it cannot be started.
ChildResult run_child(const std::string& program, const std::vector<std::string>& args,
                      const std::vector<std::string>& env = {}, bool capture_stdout = true);

/// run_child of this executable (/proc/self/exe).
ChildResult run_self(const std::vector<std::string>& args, const std::vector<std::string>& env = {},
                     bool capture_stdout = true);

}  // namespace nlpzoo
