#include "tools/local_workers.h"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <thread>

#include "core/io.h"

extern char** environ;

namespace nlpzoo::cli {

namespace {

// The variables a worker gets from us, whatever this process's environment holds.
constexpr const char* kLaunchVariables[] = {"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR",
                                            "MASTER_PORT", "TORCHELASTIC_USE_AGENT_STORE",
                                            "TORCHELASTIC_RESTART_COUNT"};

std::atomic<int> g_signal{0};
extern "C" void remember_signal(int signal) { g_signal = signal; }

// SIGINT and SIGTERM are remembered (and passed on by the wait loop) while it lives.
class SignalRelay {
 public:
  SignalRelay() {
    struct sigaction action {};
    action.sa_handler = remember_signal;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, &previous_int_);
    sigaction(SIGTERM, &action, &previous_term_);
  }
  ~SignalRelay() {
    sigaction(SIGINT, &previous_int_, nullptr);
    sigaction(SIGTERM, &previous_term_, nullptr);
  }
  SignalRelay(const SignalRelay&) = delete;
  SignalRelay& operator=(const SignalRelay&) = delete;

 private:
  struct sigaction previous_int_ {}, previous_term_ {};
};

int exit_code(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status); }

std::string describe(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  return "was killed by signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

int run_local_workers(int nproc, const std::vector<std::string>& args, double timeout_s) {
  // The store torchrun's agent would serve; port 0: any free one.
  c10d::TCPStoreOptions options;
  options.port = 0;
  options.isServer = true;
  options.waitWorkers = false;
  options.timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
  std::unique_ptr<c10d::TCPStore> store;
  try {
    store = std::make_unique<c10d::TCPStore>("127.0.0.1", options);
  } catch (const std::exception& e) {
    throw UserError(std::string("--nproc: cannot serve the workers' TCP store on 127.0.0.1: ") + e.what());
  }
  const std::string port = std::to_string(store->getPort());

  std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  std::vector<std::string> argv = {self};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<std::string> inherited;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('='));
    bool ours = false;
    for (const char* v : kLaunchVariables) ours |= name == v;
    if (!ours) inherited.push_back(entry);
  }

  SignalRelay relay;
  g_signal = 0;
  std::map<pid_t, int> running;  // pid -> rank
  const auto kill_all = [&](int signal) {
    for (const auto& [pid, rank] : running) kill(pid, signal);
  };
  for (int rank = 0; rank < nproc; ++rank) {
    std::vector<std::string> env = inherited;
    for (const auto& [name, value] : std::vector<std::pair<std::string, std::string>>{
             {"RANK", std::to_string(rank)}, {"LOCAL_RANK", std::to_string(rank)},
             {"WORLD_SIZE", std::to_string(nproc)}, {"LOCAL_WORLD_SIZE", std::to_string(nproc)},
             {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", port}, {"TORCHELASTIC_USE_AGENT_STORE", "True"},
             {"TORCHELASTIC_RESTART_COUNT", "0"}})
      env.push_back(name + "=" + value);
    auto argv_p = pointers(argv), env_p = pointers(env);
    pid_t pid = 0;
    const int error = posix_spawn(&pid, self.c_str(), nullptr, nullptr, argv_p.data(), env_p.data());
    if (error != 0) {
      kill_all(SIGKILL);
      for (const auto& entry : running) waitpid(entry.first, nullptr, 0);
      throw UserError("--nproc: cannot start worker " + std::to_string(rank) + " (" + self + "): " + strerror(error));
    }
    running[pid] = rank;
  }

  // Wait for every worker; after the first failure the others have the group's timeout (in
  // which they notice it themselves) and a few seconds more.
  int result = 0;
  bool relayed = false;
  bool failed = false;
  std::chrono::steady_clock::time_point deadline;
  while (!running.empty()) {
    if (const int signal = g_signal.exchange(0); signal != 0) {
      kill_all(signal);  // Ctrl-C in a terminal reached them already; a second one is harmless
      relayed = true;
    }
    int status = 0;
    const pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid > 0 && running.count(pid)) {
      const int rank = running[pid];
      running.erase(pid);
      if (status != 0 && result == 0) {
        result = exit_code(status);
        if (!relayed)
          std::cerr << "nlpzoo train: rank " << rank << " (pid " << pid << ") " << describe(status) << std::endl;
        failed = true;
        deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000)) +
                   std::chrono::seconds(10);
      }
      continue;
    }
    if (pid < 0 && errno != EINTR) break;  // no children left
    if (failed && std::chrono::steady_clock::now() > deadline) {
      for (const auto& [worker, rank] : running)
        std::cerr << "nlpzoo train: killing rank " << rank << " (pid " << worker
                  << "): still running after the --dist-timeout that followed the first failure" << std::endl;
      kill_all(SIGKILL);
      failed = false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return result;
}

}  // namespace nlpzoo::cli
