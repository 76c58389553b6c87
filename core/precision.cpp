#include "core/precision.h"

#include <ATen/autocast_mode.h>
#include <torch/version.h>

#include "core/io.h"

namespace nlpzoo {

void PrecisionOptions::bind(OptionBinder& b) {
  b.field("precision", precision,
          "forward-pass precision: fp32, bf16 (autocast: bfloat16 matrix products, float32 weights, optimizer "
          "state and loss; needs a CPU with AVX512_BF16 or AMX, or a GPU), or auto (bf16 on a CPU with bf16 "
          "arithmetic, fp32 elsewhere)",
          {"fp32", "bf16", "auto"});
}

ConfigSchema precision_schema() { return schema_of<PrecisionOptions>(); }

Precision parse_precision(const std::string& name, const torch::Device& device, const CpuFeatures& cpu) {
  if (name == "fp32") return Precision::kFp32;
  // auto stays fp32 on CUDA: on an H200 the zoo's Transformer (d_model 256) trained no faster
  // in bf16 (62-72k against 72-77k target tokens/s); at these sizes a GPU waits on launches,
  // not on arithmetic. Larger models can ask for bf16 by name.
  if (name == "auto") return device.is_cpu() && cpu.bf16() ? Precision::kBf16 : Precision::kFp32;
  if (name != "bf16") throw UserError("precision '" + name + "': expected fp32, bf16 or auto");
  if (device.is_cpu() && !cpu.bf16())
    throw UserError("precision bf16: this CPU has no bf16 arithmetic (AVX512_BF16 or AMX-BF16; it has " +
                    cpu.to_string() + "), so bf16 would be emulated and slower than fp32; use precision fp32");
  return Precision::kBf16;
}

std::string to_string(Precision precision) { return precision == Precision::kBf16 ? "bf16" : "fp32"; }

namespace {

// LibTorch 2.4 replaced the per-device autocast functions (is_enabled for CUDA, is_cpu_enabled,
// ...) with ones that take the device type, and deprecated the old ones with a runtime warning.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
bool autocast_enabled(at::DeviceType type) { return at::autocast::is_autocast_enabled(type); }
void set_autocast_enabled(at::DeviceType type, bool on) { at::autocast::set_autocast_enabled(type, on); }
at::ScalarType autocast_dtype(at::DeviceType type) { return at::autocast::get_autocast_dtype(type); }
void set_autocast_dtype(at::DeviceType type, at::ScalarType dtype) { at::autocast::set_autocast_dtype(type, dtype); }
#else
bool autocast_enabled(at::DeviceType type) {
  return type == at::kCUDA ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled();
}
void set_autocast_enabled(at::DeviceType type, bool on) {
  type == at::kCUDA ? at::autocast::set_enabled(on) : at::autocast::set_cpu_enabled(on);
}
at::ScalarType autocast_dtype(at::DeviceType type) {
  return type == at::kCUDA ? at::autocast::get_autocast_gpu_dtype() : at::autocast::get_autocast_cpu_dtype();
}
void set_autocast_dtype(at::DeviceType type, at::ScalarType dtype) {
  type == at::kCUDA ? at::autocast::set_autocast_gpu_dtype(dtype) : at::autocast::set_autocast_cpu_dtype(dtype);
}
#endif

}  // namespace

AutocastGuard::AutocastGuard(Precision precision, const torch::Device& device) {
  if (precision == Precision::kFp32) return;
  active_ = true;
  device_type_ = device.is_cuda() ? at::kCUDA : at::kCPU;
  // The same steps as torch.autocast.__enter__.
  was_enabled_ = autocast_enabled(device_type_);
  previous_dtype_ = autocast_dtype(device_type_);
  set_autocast_dtype(device_type_, at::kBFloat16);
  set_autocast_enabled(device_type_, true);
  at::autocast::increment_nesting();
}

AutocastGuard::~AutocastGuard() {
  if (!active_) return;
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  set_autocast_enabled(device_type_, was_enabled_);
  set_autocast_dtype(device_type_, previous_dtype_);
}

Precision active_precision(const torch::Device& device) {
  const auto type = device.is_cuda() ? at::kCUDA : at::kCPU;
  return autocast_enabled(type) && autocast_dtype(type) == at::kBFloat16 ? Precision::kBf16 : Precision::kFp32;
}

void cast_for_inference(torch::nn::Module& model, Precision precision) {
  if (precision == Precision::kBf16) model.to(torch::kBFloat16);
}

}  // namespace nlpzoo
