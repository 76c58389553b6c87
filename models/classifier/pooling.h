#pragma once
// Pooling a sequence of states into one sentence vector, over the valid (non-padding)
// positions only, so a sentence gets the same vector alone or padded in a batch.
#include <torch/torch.h>

#include "core/enum_names.h"

#include <string>

namespace nlpzoo {

/// last: the final recurrent state (see top_layer_final_state); max: element-wise maximum
/// over positions (Collobert et al. 2011; Conneau et al. 2017's InferSent); mean: average.
enum class Pooling { kLast, kMax, kMean };
/// The names configs use (core/enum_names.h).
inline constexpr EnumNames<Pooling, 3> kPoolingNames = {{{Pooling::kLast, "last"}, {Pooling::kMax, "max"}, {Pooling::kMean, "mean"}}};

/// Parses "last" | "max" | "mean". Throws std::invalid_argument naming the bad value.
Pooling parse_pooling(const std::string& name);
std::string to_string(Pooling pooling);

/// Valid positions of a right-padded batch: lengths [B] int64 -> mask [B, T] bool
/// (mask[b][t] = t < lengths[b]), on lengths' device.
torch::Tensor length_mask(const torch::Tensor& lengths, int64_t T);

/// x: [B, T, F] float, mask: [B, T] bool -> [B, F]: sum of the valid x over their count.
/// A row without a valid position gives zeros.
torch::Tensor masked_mean(const torch::Tensor& x, const torch::Tensor& mask);

/// x: [B, T, F] float, mask: [B, T] bool -> [B, F]: maximum over the valid positions
/// (-inf for a row without one).
torch::Tensor masked_max(const torch::Tensor& x, const torch::Tensor& mask);

/// The top layer's final state from LibTorch's h_n ([num_layers * dirs, B, H], layers
/// outermost): [B, dirs * H], the forward direction's state after each row's last real token,
/// then (bidirectional) the backward direction's state after reading back to the first token.
torch::Tensor top_layer_final_state(const torch::Tensor& h_n, int64_t num_layers, int64_t num_directions);

}  // namespace nlpzoo
