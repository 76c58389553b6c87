// nlpzoo bench matmul: the machine's dense matrix-multiply rate through LibTorch, the yardstick
// bench/ divides training FLOP/s by (model FLOP utilisation). --compare measures it once per
// OpenBLAS core (core/blas_core.h) in a child process each, as OpenBLAS reads
// OPENBLAS_CORETYPE only when it loads.
// nlpzoo bench optimizer: the time of one optimizer step over a trained run's parameters, with
// the Trainer's optimizer (make_optimizer: the run's optimizer, options and weight-decay
// groups), in the parameters' own tensors or in one flat tensor per group (bench/bert.sh).
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <iomanip>
#include <iostream>
#include <regex>

#include "core/io.h"
#include "core/child_process.h"
#include "tools/command.h"
#include "tools/options.h"
#include "tools/run_flags.h"
#include "core/aten_kernels.h"
#include "core/blas_core.h"
#include "train/flat_parameters.h"
#include "train/trainer.h"

namespace nlpzoo::cli {
namespace {

// Runs this executable with `args`, OPENBLAS_CORETYPE set to `core` (unset if empty) and
// NLPZOO_BLAS_CORE=keep; returns its standard output. Throws UserError if it fails.
std::string run_with_core(const std::vector<std::string>& args, const std::string& core) {
  const auto r = run_self(args, {"NLPZOO_BLAS_CORE=keep", core.empty() ? "OPENBLAS_CORETYPE" : "OPENBLAS_CORETYPE=" + core});
  if (r.status != 0) throw UserError("bench matmul --compare: the run with OPENBLAS_CORETYPE=" + core + " failed");
  return r.out;
}

// One child per candidate core; prints a table of the core OpenBLAS used and its rate.
int compare_cores(int64_t n, int64_t repeat) {
  const std::vector<std::string> args = {"bench", "matmul", "--size", std::to_string(n), "--repeat",
                                         std::to_string(repeat)};
  std::cout << "matmul " << n << "x" << n << " float32 on cpu, one process per OpenBLAS core ("
            << cpu_features().to_string() << "):\n"
            << std::left << std::setw(28) << "OPENBLAS_CORETYPE" << std::setw(16) << "core used" << "GFLOP/s\n";
  std::vector<std::string> cores = {""};
  for (const auto& c : blas_core_candidates(cpu_features())) cores.push_back(c);
  for (const auto& core : cores) {
    const std::string out = run_with_core(args, core);
    std::smatch used, rate;
    std::regex_search(out, used, std::regex(", core (\\w+) "));
    std::regex_search(out, rate, std::regex("([0-9.]+) GFLOP/s"));
    std::cout << std::setw(28) << (core.empty() ? "(unset: OpenBLAS's choice)" : core) << std::setw(16)
              << (used.empty() ? "?" : used[1].str()) << (rate.empty() ? "?" : rate[1].str()) << std::endl;
  }
  return 0;
}

int run_bench_matmul(const std::vector<std::string>& args) {
  po::options_description desc("Options");
  desc.add_options()
      ("size", po::value<int64_t>()->default_value(2048), "n: multiplies two n x n float32 matrices")
      ("repeat", po::value<int64_t>()->default_value(10), "timed products (after one warm-up product)")
      ("device", po::value<std::string>()->default_value("cpu"), "cpu | cuda | cuda:N")
      ("compare", po::bool_switch(), "on cpu: measure once per OpenBLAS core this CPU runs (child processes)");
  auto vm = parse_args(args, desc, "bench matmul [--size N] [--repeat R] [--device D] [--compare]");
  if (!vm) return 0;
  const int64_t n = (*vm)["size"].as<int64_t>(), repeat = (*vm)["repeat"].as<int64_t>();
  if (n < 1 || repeat < 1) throw UserError("--size and --repeat must be positive");
  const auto device = parse_device((*vm)["device"].as<std::string>());
  if ((*vm)["compare"].as<bool>()) {
    if (!device.is_cpu()) throw UserError("--compare compares OpenBLAS cores: it needs --device cpu");
    return compare_cores(n, repeat);
  }
  if (device.is_cpu())
    std::cout << "BLAS: " << blas_description() << "\nATen kernels: " << aten_kernels() << std::endl;
  torch::NoGradGuard no_grad;
  auto a = torch::randn({n, n}, torch::TensorOptions().device(device));
  auto b = torch::randn({n, n}, torch::TensorOptions().device(device));
  auto c = torch::mm(a, b);
  if (device.is_cuda()) torch::cuda::synchronize();
  const auto start = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < repeat; ++i) c = torch::mm(a, b);
  if (device.is_cuda()) torch::cuda::synchronize();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double gflops = 2.0 * n * n * n * repeat / seconds / 1e9;
  std::cout << "matmul " << n << "x" << n << " float32 on " << device << " with " << torch::get_num_threads()
            << " threads: " << std::fixed << std::setprecision(1) << gflops << " GFLOP/s" << std::endl;
  return 0;
}

int run_bench_optimizer(const std::vector<std::string>& args) {
  po::options_description desc("Options");
  add_run_flags(desc);
  desc.add_options()
      ("steps", po::value<int64_t>()->default_value(50), "timed steps (after 5 warm-up steps that create the state)")
      ("flat", po::bool_switch(), "one flat tensor per parameter group instead of the parameters' own tensors");
  auto vm = parse_args(args, desc, "bench optimizer --run-dir RUN [--steps N] [--flat] [--device D]");
  if (!vm) return 0;
  const int64_t steps = (*vm)["steps"].as<int64_t>();
  if (steps < 1) throw UserError("--steps must be positive, got " + std::to_string(steps));
  const bool flat = (*vm)["flat"].as<bool>();
  auto run = load_run_from_flags(*vm);
  auto model = run.task->model();
  const auto profile = run.task->training_profile();
  const auto trainer = bind_options<TrainerOptions>(run.config);
  auto optimizer = make_optimizer(trainer.optimizer, trainer.schedule.lr, *model, profile.no_weight_decay);
  // Every parameter gets a gradient of a training step's order of magnitude.
  int64_t numel = 0, tensors = 0;
  for (auto& p : model->parameters()) {
    p.mutable_grad() = torch::randn_like(p) * 1e-3;
    numel += p.numel();
    ++tensors;
  }
  if (flat) flatten_parameter_groups(*optimizer);
  const bool cuda = model->parameters().front().is_cuda();
  auto timed_step = [&] {
    if (cuda) torch::cuda::synchronize();
    const auto start = std::chrono::steady_clock::now();
    optimizer->step();
    if (cuda) torch::cuda::synchronize();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  };
  for (int i = 0; i < 5; ++i) timed_step();
  std::vector<double> ms;
  for (int64_t i = 0; i < steps; ++i) ms.push_back(timed_step());
  std::sort(ms.begin(), ms.end());
  std::cout << trainer.optimizer.optimizer << " step over " << numel << " parameters in " << tensors << " tensors, "
            << optimizer->param_groups().size() << " groups, " << (flat ? "flat (one tensor per group)" : "per tensor")
            << ", " << torch::get_num_threads() << " threads: " << std::fixed << std::setprecision(2)
            << ms[ms.size() / 2] << " ms/step (median of " << steps << "; min " << ms.front() << ")" << std::endl;
  return 0;
}

}  // namespace

NLPZOO_REGISTER_COMMAND(bench_optimizer, "bench optimizer",
                        "time one optimizer step over a run's parameters (per tensor or --flat)", run_bench_optimizer);
NLPZOO_REGISTER_COMMAND(bench_matmul, "bench matmul", "measure the dense matrix-multiply rate (GFLOP/s)",
                        run_bench_matmul);

}  // namespace nlpzoo::cli
