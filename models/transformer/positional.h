#pragma once
// Positional information for the Transformer, which has no recurrence to tell positions apart:
//   sinusoidal (Vaswani et al. 2017, sec. 3.5):
//     PE(pos, 2i) = sin(pos / 10000^{2i/d_model}),  PE(pos, 2i+1) = cos(pos / 10000^{2i/d_model})
//   learned absolute positions (Gehring et al. 2017; compared in Vaswani et al. table 3 row E)
//   relative (Shaw et al. 2018): learned a^K, a^V by clipped distance inside self-attention;
//     see models/transformer/attention.h (MultiHeadAttentionOptions::relative_k).
// The absolute encodings are added to the scaled token embeddings.
#include <torch/torch.h>

#include "core/enum_names.h"

#include <string>

namespace nlpzoo {

enum class PositionType { kSinusoidal, kLearned, kRelative };
/// The names configs use (core/enum_names.h).
inline constexpr EnumNames<PositionType, 3> kPositionNames = {{{PositionType::kSinusoidal, "sinusoidal"}, {PositionType::kLearned, "learned"}, {PositionType::kRelative, "relative"}}};

/// Parses "sinusoidal" | "learned" | "relative". Throws std::invalid_argument otherwise.
PositionType parse_position_type(const std::string& name);
std::string to_string(PositionType type);

/// Rows offset .. offset+length-1 of the sinusoidal table: [length, d_model] float32, computed
/// in double precision. Works for any d_model >= 1 (an odd last column is a sine).
torch::Tensor sinusoidal_table(int64_t length, int64_t d_model, int64_t offset = 0);

/// The sinusoidal encoding with its first `max_len` rows kept as the buffer "table"
/// [max_len, d_model]; longer sequences get their extra rows computed on the fly, so there
/// is no length limit. Has no parameters.
class SinusoidalPositionalEncodingImpl : public torch::nn::Module {
 public:
  SinusoidalPositionalEncodingImpl(int64_t d_model, int64_t max_len);
  /// Encodings of positions offset .. offset+length-1: [length, d_model] float on the
  /// buffer's device.
  torch::Tensor forward(int64_t length, int64_t offset = 0);
  torch::Tensor table;

 private:
  int64_t d_model_;
};
TORCH_MODULE(SinusoidalPositionalEncoding);

/// Learned absolute position embeddings: parameter "weight" [max_positions, d_model],
/// initialised N(0, d_model^-1/2) like the token embeddings they are added to.
class LearnedPositionalEmbeddingImpl : public torch::nn::Module {
 public:
  LearnedPositionalEmbeddingImpl(int64_t max_positions, int64_t d_model);
  /// [length, d_model] rows offset .. offset+length-1. Throws c10::Error past max_positions.
  torch::Tensor forward(int64_t length, int64_t offset = 0);
  torch::Tensor weight;
};
TORCH_MODULE(LearnedPositionalEmbedding);

}  // namespace nlpzoo
