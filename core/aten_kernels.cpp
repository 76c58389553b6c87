#include "core/aten_kernels.h"

#include <ATen/Version.h>

#include <cstdlib>
#include <regex>

namespace nlpzoo {

std::string decide_aten_kernels(const CpuFeatures& cpu, const char* aten_cpu_capability) {
  if (aten_cpu_capability != nullptr) return "";
  return cpu.avx512() && cpu.avx512dq && cpu.fma ? "avx512" : "";
}

bool choose_aten_kernels() {
  const std::string value = decide_aten_kernels(cpu_features(), std::getenv("ATEN_CPU_CAPABILITY"));
  if (value.empty()) return false;
  setenv("ATEN_CPU_CAPABILITY", value.c_str(), 1);
  // ATen reads the variable at its first operator call; had one run already, this says so.
  return aten_kernels() != "AVX512";
}

std::string aten_kernels() {
  // get_cpu_capability() is not exported by LibTorch 1.13; show_config() reports it.
  static const std::regex usage("CPU capability usage: (\\w+)");
  std::smatch m;
  const std::string config = at::show_config();
  return std::regex_search(config, m, usage) ? m[1].str() : "unknown";
}

}  // namespace nlpzoo
