#include "models/classifier/pooling.h"

#include <limits>

#include "core/enum_names.h"

namespace nlpzoo {

Pooling parse_pooling(const std::string& name) { return parse_enum(name, kPoolingNames, "pooling"); }

std::string to_string(Pooling pooling) { return enum_name(pooling, kPoolingNames); }

torch::Tensor length_mask(const torch::Tensor& lengths, int64_t T) {
  auto positions = torch::arange(T, lengths.options().dtype(torch::kInt64));  // [T]
  return positions.unsqueeze(0) < lengths.unsqueeze(1);                        // [B, T]
}

torch::Tensor masked_mean(const torch::Tensor& x, const torch::Tensor& mask) {
  auto weights = mask.unsqueeze(-1).to(x.scalar_type());                       // [B, T, 1]
  return (x * weights).sum(/*dim=*/1) / weights.sum(/*dim=*/1).clamp_min(1.0);  // [B, F]
}

torch::Tensor masked_max(const torch::Tensor& x, const torch::Tensor& mask) {
  return x.masked_fill(mask.logical_not().unsqueeze(-1), -std::numeric_limits<float>::infinity())
      .amax(/*dim=*/1);  // [B, F]
}

torch::Tensor top_layer_final_state(const torch::Tensor& h_n, int64_t num_layers, int64_t num_directions) {
  const int64_t B = h_n.size(1), H = h_n.size(2);
  auto top = h_n.view({num_layers, num_directions, B, H}).select(0, num_layers - 1);  // [dirs, B, H]
  return top.transpose(0, 1).reshape({B, num_directions * H});                       // [B, dirs*H]
}

}  // namespace nlpzoo
