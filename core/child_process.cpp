#include "core/child_process.h"

#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>

#include "core/io.h"

extern char** environ;

namespace nlpzoo {

ChildResult run_child(const std::string& program, const std::vector<std::string>& args,
                      const std::vector<std::string>& env, bool capture_stdout) {
  std::vector<std::string> environment;
  for (char** e = environ; *e != nullptr; ++e) environment.emplace_back(*e);
  for (const auto& change : env) {
    const auto name = change.substr(0, change.find('='));
    std::vector<std::string> kept;
    for (auto& var : environment)
      if (var.compare(0, name.size() + 1, name + "=") != 0) kept.push_back(std::move(var));
    environment = std::move(kept);
    if (change.find('=') != std::string::npos) environment.push_back(change);
  }
  std::vector<std::string> argv = {program};
  argv.insert(argv.end(), args.begin(), args.end());
  auto pointers = [](std::vector<std::string>& v) {
    std::vector<char*> p;
    for (auto& s : v) p.push_back(s.data());
    p.push_back(nullptr);
    return p;
  };
  auto argv_p = pointers(argv), env_p = pointers(environment);
  int fd[2] = {-1, -1};
  if (capture_stdout && pipe(fd) != 0) throw UserError(program + ": cannot create a pipe");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (capture_stdout) {
    posix_spawn_file_actions_adddup2(&actions, fd[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&actions, fd[0]);
  }
  const auto start = std::chrono::steady_clock::now();
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, program.c_str(), &actions, nullptr, argv_p.data(), env_p.data());
  posix_spawn_file_actions_destroy(&actions);
  ChildResult result;
  if (capture_stdout) {
    close(fd[1]);
    char buffer[4096];
    for (ssize_t n; spawned == 0 && (n = read(fd[0], buffer, sizeof buffer)) > 0;) result.out.append(buffer, n);
    close(fd[0]);
  }
  if (spawned != 0) throw UserError(program + ": cannot be started");
  int status = 0;
  struct rusage usage {};
  if (wait4(pid, &status, 0, &usage) < 0) throw UserError(program + ": lost its child process");
  result.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.peak_rss_kb = usage.ru_maxrss;
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

ChildResult run_self(const std::vector<std::string>& args, const std::vector<std::string>& env, bool capture_stdout) {
  return run_child("/proc/self/exe", args, env, capture_stdout);
}

}  // namespace nlpzoo
