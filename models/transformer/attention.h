#pragma once
// Attention of the Transformer (Vaswani et al. 2017, sec. 3.2), from the equations:
//   scaled dot-product (eq. 1):  Attention(Q, K, V) = softmax(Q Kᵀ / √d_k + M) V
//   multi-head (sec. 3.2.2):     MultiHead(Q, K, V) = Concat(head_1..head_h) W_O,
//                                head_i = Attention(Q W_Q^i, K W_K^i, V W_V^i),  d_k = d_model / h
// with relative position representations (Shaw et al. 2018, eq. 3-5) as an option of
// self-attention:
//   e_ij = (x_i W_Q)(x_j W_K + a^K_ij)ᵀ / √d_k,   z_i = Σ_j α_ij (x_j W_V + a^V_ij),
//   a^K_ij = w^K_{clip(j-i, k)},  a^V_ij = w^V_{clip(j-i, k)},  clip(x, k) = max(-k, min(k, x))
// Masks follow the rest of nlpzoo: a bool tensor that is true where attention is allowed
// (the opposite of torch::nn::MultiheadAttention's key_padding_mask).
#include <torch/torch.h>

#include <tuple>

namespace nlpzoo {

/// Shaw et al.'s relative position terms for one attention call.
struct RelativePositions {
  torch::Tensor index;   // [T, S] int64 in [0, 2k]: clip(j - i, k) + k for query i, key j
  torch::Tensor keys;    // [2k+1, d_k] float: w^K, one row per clipped distance
  torch::Tensor values;  // [2k+1, d_v] float: w^V
};

/// Bool mask [T, S] allowing query i to see keys j <= i + offset (the decoder's look-ahead
/// mask, Vaswani et al. sec. 3.2.3); offset is the number of keys before the first query
/// (cached positions). true = allowed.
torch::Tensor causal_mask(int64_t queries, int64_t keys, int64_t offset = 0,
                          torch::Device device = torch::kCPU);

/// Key padding mask from token ids: tokens [B, S] int64 -> [B, 1, S] bool, true at real
/// tokens; broadcasts over queries (and, unsqueezed at dim 1, over heads).
torch::Tensor padding_mask(const torch::Tensor& tokens, int64_t pad_id);

/// Scaled dot-product attention, Vaswani et al. 2017 eq. (1), optionally with Shaw et al.
/// 2018's relative position terms (eq. 3 for the scores, eq. 5 for the output).
///   q: [..., T, d_k], k: [..., S, d_k], v: [..., S, d_v] float (leading dims equal, e.g. [B, H]).
///   allowed: bool, broadcastable to [..., T, S], true where query t may attend to key s;
///     undefined = no mask.
///   relative: optional; index [T, S] selects rows of keys/values, shared by all leading dims.
///   dropout_p / training: dropout on the attention weights (only when training).
/// Returns {output [..., T, d_v], weights [..., T, S]}. Masked positions get exactly zero
/// weight; a query whose every key is masked gets all-zero weights and a zero output (and
/// finite gradients), not NaN. Throws c10::Error when q and k differ in d_k or k and v in length.
std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
    const torch::Tensor& allowed = {}, const RelativePositions* relative = nullptr,
    double dropout_p = 0.0, bool training = false);

/// Indices of Shaw et al.'s clipped relative distances: [queries, keys] int64 with entry
/// (i, j) = clip(j - (i + offset), k) + k, in [0, 2k]. offset is the absolute position of
/// the first query, so a decoder step at position t with t+1 cached keys uses offset t.
/// Throws c10::Error for k < 1.
torch::Tensor relative_position_index(int64_t queries, int64_t keys, int64_t k, int64_t offset = 0,
                                      torch::Device device = torch::kCPU);

struct MultiHeadAttentionOptions {
  MultiHeadAttentionOptions(int64_t d_model, int64_t num_heads) : d_model_(d_model), num_heads_(num_heads) {}
  /// Model width: the size of queries, keys, values and the output.
  TORCH_ARG(int64_t, d_model);
  /// Number of heads h; each works in d_k = d_v = d_model / h dimensions.
  TORCH_ARG(int64_t, num_heads);
  /// Dropout on the attention weights (fairseq's attention_dropout; the paper uses none).
  TORCH_ARG(double, dropout) = 0.0;
  /// Biases on the W_Q, W_K, W_V and W_O projections (torch::nn::MultiheadAttention has them).
  TORCH_ARG(bool, bias) = true;
  /// Shaw et al.'s clipping distance k; 0 disables relative positions. Only meaningful for
  /// self-attention, where queries and keys index the same sequence.
  TORCH_ARG(int64_t, relative_k) = 0;
};

/// Keys and values already projected and split into heads: k, v [B, H, S, d_k].
/// For self-attention decoding it is the cache of every earlier position; for
/// cross-attention it is the encoder output, projected once per sentence.
struct KeyValue {
  torch::Tensor k;
  torch::Tensor v;
  /// Number of cached positions (0 when empty or undefined).
  int64_t length() const { return k.defined() ? k.size(2) : 0; }
};

struct AttentionOutput {
  torch::Tensor output;   // [B, T, d_model] float
  torch::Tensor weights;  // [B, H, T, S] float per-head attention, undefined unless asked for
};

/// Multi-head attention, Vaswani et al. 2017 sec. 3.2.2. W_Q, W_K, W_V are d_model x d_model
/// Linears whose output rows are split into h heads of d_k (head i uses rows i*d_k..(i+1)*d_k),
/// the layout of torch::nn::MultiheadAttention's in_proj_weight thirds.
/// Parameters: W_Q, W_K, W_V, W_O (weight [d_model, d_model], bias [d_model]); with
/// relative_k > 0 also relative_keys, relative_values [2k+1, d_k] (shared by all heads, as in
/// Shaw et al.).
class MultiHeadAttentionImpl : public torch::nn::Module {
 public:
  /// Throws c10::Error when d_model is not a multiple of num_heads.
  explicit MultiHeadAttentionImpl(const MultiHeadAttentionOptions& options);

  /// query: [B, T, d_model]; key, value: [B, S, d_model] (all the same tensor for
  /// self-attention, the encoder output for cross-attention).
  /// allowed: bool broadcastable to [B, T, S] (e.g. padding_mask [B, 1, S], causal_mask
  /// [T, T], or both combined), true where attention is allowed; undefined = none.
  /// Throws c10::Error when a width is not d_model or the mask is not of rank 2 or 3.
  AttentionOutput forward(const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value,
                          const torch::Tensor& allowed = {}, bool need_weights = false);

  /// Projects key/value once, for attention repeated over the same memory (the decoder's
  /// cross-attention during incremental decoding). key, value: [B, S, d_model].
  KeyValue project_key_value(const torch::Tensor& key, const torch::Tensor& value);

  /// Attention of query [B, T, d_model] over pre-projected keys/values (project_key_value).
  /// query_offset: absolute position of the first query, used by relative positions only.
  AttentionOutput forward_projected(const torch::Tensor& query, const KeyValue& memory,
                                    const torch::Tensor& allowed = {}, bool need_weights = false,
                                    int64_t query_offset = 0);

  /// Incremental self-attention: x [B, T, d_model] are the next T positions (usually T = 1).
  /// Their keys/values are appended to `cache` (grows along dim 2; may start empty) and the
  /// queries attend over the whole cache, at absolute positions cache.length() .. +T-1.
  /// allowed: as in forward over the grown cache, [*, T, cache.length()]; for T = 1 no causal
  /// mask is needed since every cached position is in the past.
  AttentionOutput forward_incremental(const torch::Tensor& x, KeyValue& cache,
                                      const torch::Tensor& allowed = {}, bool need_weights = false);

  const MultiHeadAttentionOptions& options() const { return options_; }

  torch::nn::Linear W_Q{nullptr}, W_K{nullptr}, W_V{nullptr}, W_O{nullptr};
  torch::Tensor relative_keys, relative_values;  // undefined without relative_k

 private:
  torch::Tensor split_heads(const torch::Tensor& x) const;  // [B, T, D] -> [B, H, T, d_k]
  /// Attention of queries already projected and split, q [B, H, T, d_k], over `memory`.
  AttentionOutput attend(const torch::Tensor& q, const KeyValue& memory, const torch::Tensor& allowed,
                         bool need_weights, int64_t query_offset);
  MultiHeadAttentionOptions options_;
};
TORCH_MODULE(MultiHeadAttention);

}  // namespace nlpzoo
