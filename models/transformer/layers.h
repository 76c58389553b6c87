#pragma once
// Transformer encoder and decoder blocks (Vaswani et al. 2017, sec. 3.1 and 3.3):
//   sub-layer, post-LN (the paper):  x = LayerNorm(x + Dropout(Sublayer(x)))
//   sub-layer, pre-LN (Xiong et al. 2020; tensor2tensor's default): x = x + Dropout(Sublayer(LayerNorm(x))),
//     with one more LayerNorm on the output of the stack
//   position-wise feed-forward (eq. 2): FFN(x) = act(x W_1 + b_1) W_2 + b_2, act = ReLU (paper) or GELU
//   encoder layer: self-attention, FFN
//   decoder layer: masked self-attention, encoder-decoder attention, FFN
// The encoder stack takes embedded inputs and a mask only, so that BERT's encoder (with its
// own token + segment + position embeddings) is the same module.
#include <torch/torch.h>

#include "core/enum_names.h"

#include <string>
#include <vector>

#include "models/transformer/attention.h"

namespace nlpzoo {

enum class Activation { kRelu, kGelu };
/// The names configs use (core/enum_names.h).
inline constexpr EnumNames<Activation, 2> kActivationNames = {{{Activation::kRelu, "relu"}, {Activation::kGelu, "gelu"}}};

/// Parses "relu" | "gelu". Throws std::invalid_argument otherwise.
Activation parse_activation(const std::string& name);
std::string to_string(Activation activation);

struct TransformerLayerOptions {
  TransformerLayerOptions(int64_t d_model, int64_t num_heads, int64_t ffn_dim)
      : d_model_(d_model), num_heads_(num_heads), ffn_dim_(ffn_dim) {}
  /// Width of every sub-layer's input and output (the residual stream).
  TORCH_ARG(int64_t, d_model);
  /// Attention heads per attention sub-layer; must divide d_model.
  TORCH_ARG(int64_t, num_heads);
  /// Inner width d_ff of the position-wise feed-forward network.
  TORCH_ARG(int64_t, ffn_dim);
  /// Dropout on each sub-layer's output before the residual sum (P_drop, sec. 5.4).
  TORCH_ARG(double, dropout) = 0.1;
  /// Dropout on attention weights.
  TORCH_ARG(double, attention_dropout) = 0.0;
  /// Non-linearity of the feed-forward network.
  TORCH_ARG(Activation, activation) = Activation::kRelu;
  /// LayerNorm before each sub-layer (pre-LN) instead of after the residual sum (post-LN).
  TORCH_ARG(bool, pre_norm) = false;
  /// ε of every LayerNorm, (x - mean) / sqrt(var + ε): LibTorch's 1e-5; Google's BERT checkpoints 1e-12.
  TORCH_ARG(double, layer_norm_eps) = 1e-5;
  /// Shaw et al. 2018 clipping distance k in the self-attention sub-layers; 0 = none. (In the
  /// decoder's causal self-attention the k rows for future distances are never used.)
  TORCH_ARG(int64_t, relative_k) = 0;
};

/// FFN(x) = act(x W_1 + b_1) W_2 + b_2 (eq. 2): Linear d_model -> ffn_dim -> d_model.
class PositionwiseFeedForwardImpl : public torch::nn::Module {
 public:
  PositionwiseFeedForwardImpl(int64_t d_model, int64_t ffn_dim, Activation activation);
  /// x: [..., d_model] -> [..., d_model].
  torch::Tensor forward(const torch::Tensor& x);
  torch::nn::Linear linear1{nullptr}, linear2{nullptr};

 private:
  Activation activation_;
};
TORCH_MODULE(PositionwiseFeedForward);

/// One encoder layer: self-attention and FFN, each with residual + LayerNorm.
/// Children: self_attn, ffn, norm1 (around self_attn), norm2 (around ffn).
class TransformerEncoderLayerImpl : public torch::nn::Module {
 public:
  explicit TransformerEncoderLayerImpl(const TransformerLayerOptions& options);
  /// x: [B, S, d_model] float. allowed: bool [B, 1, S] (padding_mask) or [B, S, S], true
  /// where attention is allowed; undefined = attend everywhere. Returns [B, S, d_model].
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& allowed = {});
  /// Causal incremental pass (a decoder-only model, models/transformer/gpt.h) over the next T
  /// positions x: [B, T, d_model]; `cache` holds this layer's keys/values of every earlier
  /// position [B, H, t, d_k] and grows by T. allowed: needed only for T > 1
  /// (causal_mask(T, t+T, t)). Equals the rows t..t+T-1 of forward over all t+T positions
  /// with the causal mask.
  torch::Tensor step(const torch::Tensor& x, KeyValue& cache, const torch::Tensor& allowed = {});
  const TransformerLayerOptions& options() const { return options_; }

  MultiHeadAttention self_attn{nullptr};
  PositionwiseFeedForward ffn{nullptr};
  torch::nn::LayerNorm norm1{nullptr}, norm2{nullptr};
  torch::nn::Dropout dropout{nullptr};

 private:
  TransformerLayerOptions options_;
};
TORCH_MODULE(TransformerEncoderLayer);

struct DecoderLayerOutput {
  torch::Tensor output;         // [B, T, d_model] float
  torch::Tensor cross_weights;  // [B, H, T, S] float encoder-decoder attention, undefined unless asked for
};

/// One decoder layer: masked self-attention, encoder-decoder attention (queries from the
/// decoder, keys and values from the encoder output, sec. 3.2.3) and FFN, each with
/// residual + LayerNorm. Children: self_attn, cross_attn, ffn, norm1, norm2, norm3.
/// Relative positions (relative_k) apply to self-attention only.
class TransformerDecoderLayerImpl : public torch::nn::Module {
 public:
  explicit TransformerDecoderLayerImpl(const TransformerLayerOptions& options);
  /// Teacher-forced pass. x: [B, T, d_model]; memory: [B, S, d_model] encoder output;
  /// self_allowed: [T, T] (causal_mask) or [B, T, T]; memory_allowed: [B, 1, S] or [B, T, S];
  /// either may be undefined (no mask).
  DecoderLayerOutput forward(const torch::Tensor& x, const torch::Tensor& memory,
                             const torch::Tensor& self_allowed, const torch::Tensor& memory_allowed,
                             bool need_weights = false);
  /// Incremental pass over the next T positions x: [N, T, d_model] (usually T = 1).
  /// self_cache: this layer's self-attention keys/values [N, H, t, d_k], grown by T.
  /// memory: cross_attn->project_key_value(encoder output), [N, H, S, d_k].
  /// self_allowed: needed only for T > 1 ([T, t+T], causal_mask(T, t+T, t)).
  DecoderLayerOutput step(const torch::Tensor& x, KeyValue& self_cache, const KeyValue& memory,
                          const torch::Tensor& memory_allowed, bool need_weights = false,
                          const torch::Tensor& self_allowed = {});
  const TransformerLayerOptions& options() const { return options_; }

  MultiHeadAttention self_attn{nullptr}, cross_attn{nullptr};
  PositionwiseFeedForward ffn{nullptr};
  torch::nn::LayerNorm norm1{nullptr}, norm2{nullptr}, norm3{nullptr};
  torch::nn::Dropout dropout{nullptr};

 private:
  TransformerLayerOptions options_;
};
TORCH_MODULE(TransformerDecoderLayer);

/// N encoder layers; with pre_norm, a final LayerNorm ("final_norm") on the output.
/// Children: layers (ModuleList of TransformerEncoderLayer), final_norm (pre-LN only).
class TransformerEncoderImpl : public torch::nn::Module {
 public:
  /// Throws c10::Error for num_layers < 1.
  TransformerEncoderImpl(const TransformerLayerOptions& options, int64_t num_layers);
  /// x: [B, S, d_model] embedded input (positions already added, dropout applied).
  /// allowed: as TransformerEncoderLayer::forward. Returns [B, S, d_model].
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& allowed = {});
  /// Causal incremental pass over x: [B, T, d_model] at positions t .. t+T-1,
  /// t = caches[0].length(); caches (one per layer, may start empty) grow by T. Position i
  /// sees positions <= i only (the look-ahead mask for T > 1).
  torch::Tensor step(const torch::Tensor& x, std::vector<KeyValue>& caches);

  torch::nn::ModuleList layers{nullptr};
  torch::nn::LayerNorm final_norm{nullptr};  // null for post-LN
  std::vector<TransformerEncoderLayer> typed_layers;
};
TORCH_MODULE(TransformerEncoder);

/// N decoder layers; with pre_norm, a final LayerNorm on the output.
/// Children: layers (ModuleList of TransformerDecoderLayer), final_norm (pre-LN only).
class TransformerDecoderImpl : public torch::nn::Module {
 public:
  /// Throws c10::Error for num_layers < 1.
  TransformerDecoderImpl(const TransformerLayerOptions& options, int64_t num_layers);
  /// Teacher-forced pass with the causal mask. x: [B, T, d_model] embedded target input;
  /// memory: [B, S, d_model]; memory_allowed: [B, 1, S]. cross_weights of the last layer
  /// ([B, H, T, S]) when need_weights.
  DecoderLayerOutput forward(const torch::Tensor& x, const torch::Tensor& memory,
                             const torch::Tensor& memory_allowed, bool need_weights = false);
  /// Cross-attention keys/values of every layer for memory [B, S, d_model]: one per layer.
  std::vector<KeyValue> project_memory(const torch::Tensor& memory);
  /// Incremental pass over x: [N, T, d_model] at positions t .. t+T-1, t = caches[0].length().
  /// self_caches (one per layer) grow by T. cross_weights of the last layer when need_weights.
  DecoderLayerOutput step(const torch::Tensor& x, std::vector<KeyValue>& self_caches,
                          const std::vector<KeyValue>& memory, const torch::Tensor& memory_allowed,
                          bool need_weights = false);

  torch::nn::ModuleList layers{nullptr};
  torch::nn::LayerNorm final_norm{nullptr};  // null for post-LN
  std::vector<TransformerDecoderLayer> typed_layers;
};
TORCH_MODULE(TransformerDecoder);

}  // namespace nlpzoo
