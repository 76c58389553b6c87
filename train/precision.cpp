#include "train/precision.h"

#include <ATen/autocast_mode.h>

#include "datasets/io.h"

namespace nlpzoo {

ConfigSchema precision_schema() {
  ConfigSchema s;
  s.add("precision", "fp32",
        "forward-pass precision: fp32, or bf16 (autocast: bfloat16 matrix products, float32 weights, optimizer "
        "state and loss; needs a CPU with AVX512_BF16 or AMX, or a GPU)",
        {"fp32", "bf16"});
  return s;
}

Precision parse_precision(const std::string& name, const torch::Device& device, const CpuFeatures& cpu) {
  if (name == "fp32") return Precision::kFp32;
  if (name != "bf16") throw UserError("precision '" + name + "': expected fp32 or bf16");
  if (device.is_cpu() && !cpu.bf16())
    throw UserError("precision bf16: this CPU has no bf16 arithmetic (AVX512_BF16 or AMX-BF16; it has " +
                    cpu.to_string() + "), so bf16 would be emulated and slower than fp32; use precision fp32");
  return Precision::kBf16;
}

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
