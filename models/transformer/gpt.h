#pragma once
// A decoder-only Transformer language model in the layout of GPT-2 (Radford et al. 2019) and
// nanoGPT: token + learned position embeddings, N pre-LN blocks of causal multi-head
// self-attention and a GELU feed-forward network, a final LayerNorm, and the output layer
// tied to the token embeddings:
//   h_0 = Dropout(W_e[x_t] + W_p[t]),  h_l = Block_l(h_{l-1}),  logits_t = LayerNorm(h_N)_t W_eᵀ
// Init as GPT-2: every weight matrix and embedding ~ N(0, 0.02), biases 0, LayerNorm 1/0, and
// the projections that write into the residual stream (attention W_O, the FFN's second
// layer) ~ N(0, 0.02 / sqrt(2N)), so the stream's variance does not grow with depth.
// Reading one token at a time (CausalDecoder::step) reuses every earlier position's keys and
// values (the cache in CausalState), so a step costs one position, not the whole context.
#include <torch/torch.h>

#include "models/causal_decoder.h"
#include "models/transformer/layers.h"

namespace nlpzoo {

struct GptOptions {
  explicit GptOptions(int64_t vocab_size) : vocab_size_(vocab_size) {}
  /// Token ids 0 .. vocab_size-1 = output classes.
  TORCH_ARG(int64_t, vocab_size);
  /// Width of embeddings, attention and the residual stream (nanoGPT's n_embd).
  TORCH_ARG(int64_t, d_model) = 384;
  /// Attention heads per block (n_head); must divide d_model.
  TORCH_ARG(int64_t, num_heads) = 6;
  /// Blocks (n_layer).
  TORCH_ARG(int64_t, num_layers) = 6;
  /// Inner width of the feed-forward network (GPT-2: 4 d_model).
  TORCH_ARG(int64_t, ffn_dim) = 1536;
  /// Longest context: the rows of the position embedding.
  TORCH_ARG(int64_t, block_size) = 256;
  /// Dropout on the embeddings, on each sub-layer's output and on the attention weights.
  TORCH_ARG(double, dropout) = 0.2;
};

class GptImpl : public torch::nn::Module, public CausalDecoder {
 public:
  /// Throws c10::Error when num_heads does not divide d_model or a size is not positive.
  explicit GptImpl(const GptOptions& options);

  /// tokens: [B, T] int64, T <= block_size -> logits [B, T, V] float; row t scores the token
  /// after tokens[.., 0..t]. Throws UserError for T > block_size.
  torch::Tensor forward(const torch::Tensor& tokens);

  // CausalDecoder. The state holds each layer's keys and values ("k<l>", "v<l>": [1, H, t, d_k])
  // and the tokens read ("tokens": [t] int64). When the context reaches block_size, the next
  // step re-reads its last block_size / 2 tokens from an empty cache (one full pass every
  // block_size / 2 tokens; nanoGPT's sampler re-reads the last block_size at every token).
  // begin() with more than block_size tokens reads the last block_size of them.
  CausalStep begin(const std::vector<int64_t>& tokens) override;
  CausalStep step(const CausalState& state, int64_t token) override;
  /// Past block_size tokens, rows are what begin + step give: the context restarts from its
  /// recent half whenever it is full.
  torch::Tensor sequence_logits(const std::vector<int64_t>& tokens) override;
  int64_t vocab_size() const override { return options_.vocab_size(); }
  torch::nn::Module& module() override { return *this; }

  const GptOptions& options() const { return options_; }

  torch::nn::Embedding token_embedding{nullptr}, position_embedding{nullptr};
  torch::nn::Dropout dropout{nullptr};
  TransformerEncoder blocks{nullptr};  // pre-LN; its final_norm is GPT-2's ln_f

 private:
  /// Logits of the positions x continues after `caches` (which grow by x's length).
  torch::Tensor cached_logits(const torch::Tensor& tokens, std::vector<KeyValue>& caches);
  CausalStep read(const std::vector<int64_t>& tokens);
  /// Tokens a full context restarts from: max(1, block_size / 2).
  int64_t recent_context() const { return std::max<int64_t>(1, options_.block_size() / 2); }
  GptOptions options_;
};
TORCH_MODULE(Gpt);

/// The layer options of GPT's blocks (pre-LN, GELU, dropout everywhere).
TransformerLayerOptions gpt_layer_options(const GptOptions& options);

}  // namespace nlpzoo
