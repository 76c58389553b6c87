#include "train/precision.h"

#include <ATen/autocast_mode.h>

#include "datasets/io.h"

namespace nlpzoo {

ConfigSchema precision_schema() {
  ConfigSchema s;
  s.add("precision", "fp32",
        "forward-pass precision: fp32, bf16 (autocast: bfloat16 matrix products, float32 weights, optimizer "
        "state and loss; needs a CPU with AVX512_BF16 or AMX, or a GPU), or auto (bf16 on a CPU with bf16 "
        "arithmetic, fp32 elsewhere)",
        {"fp32", "bf16", "auto"});
  return s;
}

Precision parse_precision(const std::string& name, const torch::Device& device, const CpuFeatures& cpu) {
  if (name == "fp32") return Precision::kFp32;
  // auto stays fp32 on CUDA: whether a GPU computes bf16 natively (Ampere and later) is not
  // checked here, and no GPU was available to measure it.
  if (name == "auto") return device.is_cpu() && cpu.bf16() ? Precision::kBf16 : Precision::kFp32;
  if (name != "bf16") throw UserError("precision '" + name + "': expected fp32, bf16 or auto");
  if (device.is_cpu() && !cpu.bf16())
    throw UserError("precision bf16: this CPU has no bf16 arithmetic (AVX512_BF16 or AMX-BF16; it has " +
                    cpu.to_string() + "), so bf16 would be emulated and slower than fp32; use precision fp32");
  return Precision::kBf16;
}

std::string to_string(Precision precision) { return precision == Precision::kBf16 ? "bf16" : "fp32"; }

AutocastGuard::AutocastGuard(Precision precision, const torch::Device& device) {
  if (precision == Precision::kFp32) return;
  active_ = true;
  cuda_ = device.is_cuda();
  // The same steps as torch.autocast.__enter__.
  if (cuda_) {
    was_enabled_ = at::autocast::is_enabled();
    previous_dtype_ = at::autocast::get_autocast_gpu_dtype();
    at::autocast::set_autocast_gpu_dtype(at::kBFloat16);
    at::autocast::set_enabled(true);
  } else {
    was_enabled_ = at::autocast::is_cpu_enabled();
    previous_dtype_ = at::autocast::get_autocast_cpu_dtype();
    at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
    at::autocast::set_cpu_enabled(true);
  }
  at::autocast::increment_nesting();
}

AutocastGuard::~AutocastGuard() {
  if (!active_) return;
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  if (cuda_) {
    at::autocast::set_enabled(was_enabled_);
    at::autocast::set_autocast_gpu_dtype(previous_dtype_);
  } else {
    at::autocast::set_cpu_enabled(was_enabled_);
    at::autocast::set_autocast_cpu_dtype(previous_dtype_);
  }
}

}  // namespace nlpzoo
