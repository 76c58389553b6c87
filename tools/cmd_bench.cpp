// nlpzoo bench matmul: the machine's dense matrix-multiply rate through LibTorch, the yardstick
// bench/ divides training FLOP/s by (model FLOP utilisation).
#include <torch/torch.h>

#include <chrono>
#include <iomanip>
#include <iostream>

#include "datasets/io.h"
#include "tools/command.h"
#include "tools/options.h"
#include "train/trainer.h"

namespace nlpzoo::cli {
namespace {

int run_bench_matmul(const std::vector<std::string>& args) {
  po::options_description desc("Options");
  desc.add_options()
      ("size", po::value<int64_t>()->default_value(2048), "n: multiplies two n x n float32 matrices")
      ("repeat", po::value<int64_t>()->default_value(10), "timed products (after one warm-up product)")
      ("device", po::value<std::string>()->default_value("cpu"), "cpu | cuda | cuda:N");
  auto vm = parse_args(args, desc, "bench matmul [--size N] [--repeat R] [--device D]");
  if (!vm) return 0;
  const int64_t n = (*vm)["size"].as<int64_t>(), repeat = (*vm)["repeat"].as<int64_t>();
  if (n < 1 || repeat < 1) throw UserError("--size and --repeat must be positive");
  const auto device = parse_device((*vm)["device"].as<std::string>());
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

}  // namespace

NLPZOO_REGISTER_COMMAND(bench_matmul, "bench matmul", "measure the dense matrix-multiply rate (GFLOP/s)",
                        run_bench_matmul);

}  // namespace nlpzoo::cli
