#pragma once
// Floating-point precision of the forward pass: the `precision` config key and the autocast
// region that applies it. bf16 follows PyTorch's automatic mixed precision (Micikevicius et al.
// 2018; torch.autocast): inside the region matrix products and convolutions run in bfloat16,
// while parameters ("master weights"), gradients, optimizer state and the ops autocast keeps
// in float32 (cross-entropy among them, so the loss) stay float32. bf16 keeps float32's
// exponent range, so no loss scaling is needed (fp16 would need a gradient scaler).
#include <torch/torch.h>

#include <string>

#include "core/config.h"
#include "core/options.h"
#include "core/cpu_features.h"

namespace nlpzoo {

enum class Precision { kFp32, kBf16 };

/// The `precision` key: fp32 | bf16 | auto (training, validation and the CLI's inference commands).
/// Kept as its name: which precision "auto" means depends on the device (parse_precision).
struct PrecisionOptions {
  std::string precision = "fp32";
  void bind(OptionBinder& b);
};
ConfigSchema precision_schema();

/// Parses fp32 | bf16 | auto for a run on `device`. auto is bf16 on a CPU with bf16 arithmetic
/// (AVX512_BF16 or AMX-BF16 in `cpu`) and fp32 otherwise (on CUDA too). Throws UserError for
/// another name, and for bf16 on a CPU without bf16 arithmetic: there oneDNN would emulate it,
/// slower than fp32.
Precision parse_precision(const std::string& name, const torch::Device& device,
                          const CpuFeatures& cpu = cpu_features());

/// "fp32" or "bf16".
std::string to_string(Precision precision);

/// An autocast region on this thread (autocast state is thread-local): bf16 turns on CPU or
/// CUDA autocast with dtype bfloat16 for the guard's lifetime; fp32 changes nothing. The
/// previous state is restored on exit, and the cache of bf16 weight copies is cleared when the
/// outermost region ends (the optimizer changes the weights between steps).
class AutocastGuard {
 public:
  AutocastGuard(Precision precision, const torch::Device& device);
  /// Parses `precision` as parse_precision (same errors).
  AutocastGuard(const std::string& precision, const torch::Device& device)
      : AutocastGuard(parse_precision(precision, device), device) {}
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  bool active_ = false, was_enabled_ = false;
  at::DeviceType device_type_ = at::kCPU;
  at::ScalarType previous_dtype_ = at::kBFloat16;
};

/// The precision of the autocast region this thread is in on `device`'s type: kBf16 inside an
/// AutocastGuard(kBf16, ...) (or any bfloat16 autocast region), else kFp32.
Precision active_precision(const torch::Device& device);

/// Readies a trained `model` for inference in `precision`, in place. bf16 converts its
/// floating-point parameters and buffers to bfloat16 once (as Hugging Face's
/// `torch_dtype=torch.bfloat16` and CTranslate2's `compute_type="bfloat16"`); the caller still
/// opens an AutocastGuard, for the tensors the forward pass makes in float32 (states, masks).
/// Under autocast alone, with float32 weights, beam search spent more of its time converting
/// tensors to bf16 than multiplying them and ran slower than fp32 (README, Precision). fp32
/// changes nothing. Inference only: training keeps float32 master weights.
void cast_for_inference(torch::nn::Module& model, Precision precision);

}  // namespace nlpzoo
