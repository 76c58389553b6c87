#include "models/linear.h"

#include <ATen/core/dispatch/Dispatcher.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>

#include "core/io.h"

namespace nlpzoo {

namespace {

// The packed int8 weights, by the weight tensor (its TensorImpl). Each entry keeps its weight
// alive, so no other tensor can take its address while the pack is in use. `g_any_packs` lets
// every linear() call of a process that packed nothing skip the lock.
struct PackedWeight {
  torch::Tensor weight;
  c10::IValue packed;  // the engine's LinearPackedParamsBase
};
std::mutex g_packs_mutex;
std::map<const void*, PackedWeight> g_packs;
std::atomic<bool> g_any_packs{false};

const PackedWeight* packed_for(const torch::Tensor& weight) {
  if (!g_any_packs.load(std::memory_order_acquire)) return nullptr;
  std::lock_guard<std::mutex> lock(g_packs_mutex);
  const auto it = g_packs.find(weight.unsafeGetTensorImpl());
  return it == g_packs.end() ? nullptr : &it->second;
}

bool has_engine(at::QEngine engine) {
  const auto& engines = at::globalContext().supportedQEngines();
  return std::find(engines.begin(), engines.end(), engine) != engines.end();
}

torch::Tensor linear_int8(const torch::Tensor& x, const PackedWeight& w, const torch::Tensor& bias) {
  TORCH_CHECK(x.size(-1) == w.weight.size(1), "linear: x [..., ", x.size(-1), "] does not match weight ", w.weight.sizes());
  static const auto linear_dynamic = c10::Dispatcher::singleton().findSchemaOrThrow("quantized::linear_dynamic", "");
  torch::jit::Stack stack{x.reshape({-1, x.size(-1)}).contiguous(), w.packed, /*reduce_range=*/false};
  linear_dynamic.callBoxed(&stack);
  auto out = stack.at(0).toTensor();
  if (bias.defined()) out.add_(bias);
  auto sizes = x.sizes().vec();
  sizes.back() = w.weight.size(0);
  return out.view(sizes);
}

}  // namespace

bool linear_uses_gemv(const torch::Tensor& x, const torch::Tensor& weight) {
  if (torch::GradMode::is_enabled() || x.dim() == 0 || !x.device().is_cpu()) return false;
  if (x.scalar_type() != torch::kFloat || weight.scalar_type() != torch::kFloat) return false;
  const int64_t rows = x.size(-1) == 0 ? 0 : x.numel() / x.size(-1);
  return rows >= 1 && rows <= kGemvMaxRows && weight.numel() >= kGemvMinWeight;
}

torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) {
  if (!torch::GradMode::is_enabled() && x.scalar_type() == torch::kFloat && x.device().is_cpu())
    if (const auto* packed = packed_for(weight)) return linear_int8(x, *packed, bias);
  if (!linear_uses_gemv(x, weight)) return torch::nn::functional::linear(x, weight, bias);
  TORCH_CHECK(weight.dim() == 2 && x.size(-1) == weight.size(1), "linear: x [..., ", x.size(-1),
              "] does not match weight ", weight.sizes());
  auto rows = x.reshape({-1, x.size(-1)});
  auto out = torch::empty({rows.size(0), weight.size(0)}, x.options());
  for (int64_t i = 0; i < rows.size(0); ++i) {
    auto y = out[i];
    if (bias.defined()) {
      torch::addmv_out(y, bias, weight, rows[i]);
    } else {
      torch::mv_out(y, weight, rows[i]);
    }
  }
  auto sizes = x.sizes().vec();
  sizes.back() = weight.size(0);
  return out.view(sizes);
}

torch::Tensor linear(const torch::Tensor& x, const torch::nn::Linear& layer) {
  return linear(x, layer->weight, layer->bias);
}

bool int8_supported() { return has_engine(at::QEngine::ONEDNN) || has_engine(at::QEngine::FBGEMM); }

torch::Tensor quantize_weight_int8(const torch::Tensor& weight) {
  TORCH_CHECK(weight.dim() == 2 && weight.scalar_type() == torch::kFloat, "quantize_weight_int8: a 2-D float32 weight");
  const auto w = weight.detach().cpu().contiguous();
  auto scales = (w.abs().amax(1) / 127.0).to(torch::kDouble);
  scales.masked_fill_(scales == 0, 1.0);  // an all-zero row: any scale represents it exactly
  return torch::quantize_per_channel(w, scales, torch::zeros({w.size(0)}, torch::kLong), 0, torch::kQInt8);
}

void use_int8_weights(const torch::nn::Module& model) {
  if (!int8_supported())
    throw UserError("--quantize int8: this LibTorch has no CPU engine for int8 linear layers (oneDNN or FBGEMM)");
  // Packs are made for the engine set now: oneDNN when there is one (Debian's LibTorch has no
  // FBGEMM), else FBGEMM.
  at::globalContext().setQEngine(has_engine(at::QEngine::ONEDNN) ? at::QEngine::ONEDNN : at::QEngine::FBGEMM);
  static const auto prepack = c10::Dispatcher::singleton().findSchemaOrThrow("quantized::linear_prepack", "");
  torch::NoGradGuard no_grad;
  std::map<const void*, PackedWeight> packs;
  for (const auto& p : model.named_parameters()) {
    const auto& w = p.value();
    if (w.dim() != 2 || w.scalar_type() != torch::kFloat) continue;
    if (!w.device().is_cpu()) throw UserError("--quantize int8: runs on the CPU; parameter '" + p.key() + "' is not");
    torch::jit::Stack stack{quantize_weight_int8(w), c10::optional<torch::Tensor>()};
    prepack.callBoxed(&stack);
    packs[w.unsafeGetTensorImpl()] = {w, stack.at(0)};
  }
  std::lock_guard<std::mutex> lock(g_packs_mutex);
  for (auto& [key, pack] : packs) g_packs[key] = std::move(pack);
  g_any_packs.store(!g_packs.empty(), std::memory_order_release);
}

}  // namespace nlpzoo
