#pragma once
// Attention for the RNN encoder-decoder, from the course's equations:
//   additive (Bahdanau et al. 2015, eq. 6):  score(s, h) = vᵀ tanh(W_s s + W_h h)
//   general  (Luong et al. 2015, eq. 8):     score(s, h) = sᵀ W h
//   dot      (Luong et al. 2015, eq. 8):     score(s, h) = sᵀ h
//   α_t = softmax over valid source positions of score(s_t, h_i);  c_t = Σ_i α_ti h_i
// Each score is a strategy behind one interface; `project_keys` is the part that depends
// only on the encoder, computed once per sentence and reused at every decoder step.
#include <torch/torch.h>

#include "core/enum_names.h"

#include <memory>
#include <string>

namespace nlpzoo {

enum class AttentionType { kNone, kAdditive, kDot, kGeneral };
/// The names configs use (core/enum_names.h).
inline constexpr EnumNames<AttentionType, 4> kAttentionNames = {{{AttentionType::kNone, "none"}, {AttentionType::kAdditive, "additive"}, {AttentionType::kDot, "dot"}, {AttentionType::kGeneral, "general"}}};

/// Parses "none" | "additive" | "dot" | "general"; throws std::invalid_argument otherwise.
AttentionType parse_attention_type(const std::string& name);
std::string to_string(AttentionType type);

/// Softmax of `scores` over the last dim with masked positions at exactly 0, then the
/// weighted sum of `values`.
///   scores: [B, T, S] float; mask: [B, S] bool, true at real (non-pad) source positions;
///   values: [B, S, K] float.
/// Returns {context [B, T, K], weights [B, T, S]}. A row whose mask is all false gets zero
/// weights and a zero context rather than NaN.
std::tuple<torch::Tensor, torch::Tensor> masked_attention(const torch::Tensor& scores,
                                                           const torch::Tensor& mask,
                                                           const torch::Tensor& values);

/// A scoring function score(s_t, h_i).
class AttentionScoreImpl : public torch::nn::Module {
 public:
  /// keys: [B, S, key_dim] encoder states -> [B, S, P], whatever `score` needs of them.
  virtual torch::Tensor project_keys(const torch::Tensor& keys) = 0;
  /// queries: [B, T, query_dim] decoder states; projected: from project_keys -> [B, T, S].
  virtual torch::Tensor score(const torch::Tensor& queries, const torch::Tensor& projected) = 0;
};

/// vᵀ tanh(W_s s + W_h h). Parameters: W_s [A, query_dim] (no bias), W_h [A, key_dim] (+bias), v [1, A].
class AdditiveAttentionImpl : public AttentionScoreImpl {
 public:
  AdditiveAttentionImpl(int64_t query_dim, int64_t key_dim, int64_t attention_dim);
  torch::Tensor project_keys(const torch::Tensor& keys) override;  // [B, S, A] = W_h h
  torch::Tensor score(const torch::Tensor& queries, const torch::Tensor& projected) override;
  torch::nn::Linear W_s{nullptr}, W_h{nullptr}, v{nullptr};
};

/// sᵀ h; requires query_dim == key_dim.
class DotAttentionImpl : public AttentionScoreImpl {
 public:
  torch::Tensor project_keys(const torch::Tensor& keys) override { return keys; }
  torch::Tensor score(const torch::Tensor& queries, const torch::Tensor& projected) override;
};

/// sᵀ W h with W [query_dim, key_dim], computed as s · (W h).
class GeneralAttentionImpl : public AttentionScoreImpl {
 public:
  GeneralAttentionImpl(int64_t query_dim, int64_t key_dim);
  torch::Tensor project_keys(const torch::Tensor& keys) override;  // [B, S, query_dim] = W h
  torch::Tensor score(const torch::Tensor& queries, const torch::Tensor& projected) override;
  torch::nn::Linear W{nullptr};
};

/// Builds the scoring module for `type` (nullptr for kNone). attention_dim is used by additive only.
/// Throws std::invalid_argument for dot attention with query_dim != key_dim.
std::shared_ptr<AttentionScoreImpl> make_attention(AttentionType type, int64_t query_dim,
                                                   int64_t key_dim, int64_t attention_dim);

}  // namespace nlpzoo
