#include "models/linear.h"

namespace nlpzoo {

bool linear_uses_gemv(const torch::Tensor& x, const torch::Tensor& weight) {
  if (torch::GradMode::is_enabled() || x.dim() == 0 || !x.device().is_cpu()) return false;
  if (x.scalar_type() != torch::kFloat || weight.scalar_type() != torch::kFloat) return false;
  const int64_t rows = x.size(-1) == 0 ? 0 : x.numel() / x.size(-1);
  return rows >= 1 && rows <= kGemvMaxRows && weight.numel() >= kGemvMinWeight;
}

torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) {
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

}  // namespace nlpzoo
