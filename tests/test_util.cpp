#include "tests/test_util.h"

#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include "datasets/io.h"

namespace nlpzoo::test {

std::string user_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  return "(no UserError thrown)";
}

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::filesystem::path fresh_temp_dir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("nlpzoo_" + name + "_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

CommandResult run_command(const std::string& command_line, const std::string& stdin_text) {
  const auto dir = fresh_temp_dir("command_io");
  const auto in = (dir / "stdin").string(), out = (dir / "stdout").string(), err = (dir / "stderr").string();
  std::ofstream(in) << stdin_text;
  const std::string cmd = "( " + command_line + " ) <" + shell_quote(in) + " >" + shell_quote(out) + " 2>" +
                          shell_quote(err);
  const int raw = std::system(cmd.c_str());
  CommandResult r{WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, read_file(out), read_file(err)};
  std::filesystem::remove_all(dir);
  return r;
}

CommandResult run_cli(const std::string& args, const std::string& stdin_text) {
  return run_command("NLPZOO_THREADS=1 " + shell_quote(NLPZOO_CLI) + " " + args, stdin_text);
}

}  // namespace nlpzoo::test
