// nlpzoo: one binary, one subcommand per tools/cmd_*.cpp.
#include <torch/torch.h>
#include <unistd.h>

#include <boost/program_options.hpp>
#include <cstdlib>
#include <iostream>
#include <map>
#include <thread>

#include "core/io.h"
#include "tools/command.h"
#include "core/aten_kernels.h"
#include "core/blas_core.h"

namespace nlpzoo::cli {

namespace {
std::vector<Command>& registry() {
  static std::vector<Command> r;
  return r;
}

// libgomp reads OMP_WAIT_POLICY once, when it is loaded, i.e. before main runs. With it
// unset, OpenMP workers spin while OpenBLAS's threads run the matrix products and each
// side slows the other (2.5-2.8x on 2 cores), so we set it and re-execute ourselves once.
// OpenBLAS likewise reads OPENBLAS_CORETYPE when it is loaded: a better core for this CPU
// (core/blas_core.h) is set in the same re-execution. ATen's kernels (core/aten_kernels.h)
// are chosen first, before anything below runs an operator, so that they take effect without
// one. Returns false after printing an error.
bool prepare_environment(char** argv) {
  bool reexecute = nlpzoo::choose_aten_kernels();
  if (std::getenv("OMP_WAIT_POLICY") == nullptr) {
    setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
    reexecute = true;
  }
  try {
    // In the re-executed process the variable is set, so the choice is checked instead.
    if (nlpzoo::choose_blas_core())
      reexecute = true;
    else
      reexecute |= nlpzoo::confirm_blas_core();
  } catch (const nlpzoo::UserError& e) {
    std::cerr << "nlpzoo: error: " << e.what() << "\n";
    return false;
  }
  if (reexecute) execv("/proc/self/exe", argv);  // only returns on failure: carry on as we are
  return true;
}

// Intra-op threads: NLPZOO_THREADS, else every core, shared out among the data-parallel
// workers of this machine (LOCAL_WORLD_SIZE, set by torchrun and --nproc). OpenBLAS keeps a
// pool of its own that torch's setting does not reach, so it gets the same count explicitly.
void configure_threads() {
  int n = static_cast<int>(std::thread::hardware_concurrency());
  if (const char* local = std::getenv("LOCAL_WORLD_SIZE")) n /= std::max(1, std::atoi(local));
  if (const char* env = std::getenv("NLPZOO_THREADS")) n = std::atoi(env);
  n = std::max(1, n);
  torch::set_num_threads(n);
  nlpzoo::set_blas_threads(n);
}

void print_usage() {
  std::cout << "Usage: nlpzoo COMMAND [OPTIONS]   (nlpzoo COMMAND --help for its options)\n\n"
               "Commands:\n";
  std::map<std::string, std::string> sorted;
  for (const auto& c : registry()) sorted[c.name] = c.summary;
  for (const auto& [name, summary] : sorted) {
    std::string pad(name.size() < 18 ? 18 - name.size() : 1, ' ');
    std::cout << "  " << name << pad << summary << "\n";
  }
  std::cout << "\nEnvironment: NLPZOO_THREADS (torch threads, default: all cores / LOCAL_WORLD_SIZE), NLPZOO_BLAS_CORE\n"
               "(auto: OpenBLAS kernels for this CPU unless OPENBLAS_CORETYPE is set | keep | a core name),\n"
               "ATEN_CPU_CAPABILITY (LibTorch's kernels: avx2 | avx512 | default; unset: avx512 if the CPU has it).\n";
}
}  // namespace

bool register_command(Command command) {
  registry().push_back(std::move(command));
  return true;
}
const std::vector<Command>& commands() { return registry(); }

}  // namespace nlpzoo::cli

int main(int argc, char** argv) {
  using namespace nlpzoo::cli;
  if (!prepare_environment(argv)) return 1;
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    print_usage();
    return args.empty() ? 1 : 0;
  }
  // The longest registered name that prefixes the arguments wins ("tokenize train").
  const Command* chosen = nullptr;
  size_t words = 0;
  for (const auto& c : commands()) {
    std::vector<std::string> parts;
    for (size_t s = 0, e; s <= c.name.size(); s = e + 1) {
      e = c.name.find(' ', s);
      if (e == std::string::npos) e = c.name.size();
      parts.push_back(c.name.substr(s, e - s));
    }
    if (parts.size() > args.size() || parts.size() <= words) continue;
    if (std::equal(parts.begin(), parts.end(), args.begin())) {
      chosen = &c;
      words = parts.size();
    }
  }
  if (chosen == nullptr) {
    // "nlpzoo tokenize" alone: name the commands that start with the word.
    std::string family;
    for (const auto& c : commands())
      if (c.name.rfind(args[0] + " ", 0) == 0) family += "\n  nlpzoo " + c.name + "   " + c.summary;
    if (!family.empty()) {
      // "nlpzoo embed --help" asks for exactly this list, so it is an answer, not an error.
      if (args.size() > 1 && (args[1] == "-h" || args[1] == "--help")) {
        std::cout << "nlpzoo " << args[0] << " subcommands (nlpzoo " << args[0] << " SUBCOMMAND --help for options):"
                  << family << "\n";
        return 0;
      }
      std::cerr << "nlpzoo: error: '" << args[0] << "' needs a subcommand:" << family << "\n";
      return 1;
    }
    std::cerr << "nlpzoo: error: unknown command '" << args[0] << "' (see nlpzoo --help)\n";
    return 1;
  }
  configure_threads();
  try {
    return chosen->run(std::vector<std::string>(args.begin() + words, args.end()));
  } catch (const boost::program_options::error& e) {
    std::cerr << "nlpzoo " << chosen->name << ": error: " << e.what() << " (see nlpzoo "
              << chosen->name << " --help)\n";
  } catch (const nlpzoo::UserError& e) {
    std::cerr << "nlpzoo " << chosen->name << ": error: " << e.what() << "\n";
  } catch (const c10::Error& e) {
    std::cerr << "nlpzoo " << chosen->name << ": error: " << e.what_without_backtrace() << "\n";
  } catch (const std::exception& e) {
    std::cerr << "nlpzoo " << chosen->name << ": error: " << e.what() << "\n";
  }
  return 1;
}
