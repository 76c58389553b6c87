#pragma once
// The Transformer encoder-decoder (Vaswani et al. 2017, "Attention Is All You Need", fig. 1):
//   encoder:  z = Encoder_N(Dropout(√d_model E_src x + P))           (sec. 3.1, 3.4, 3.5)
//   decoder:  h = Decoder_N(Dropout(√d_model E_tgt y_<t + P), z)     causal self-attention
//   output:   P(y_t | y_<t, x) = softmax(h_t E_tgtᵀ)                 (sec. 3.4: the target
//             embedding and the pre-softmax projection share one matrix)
// P is the sinusoidal or learned absolute encoding; with relative positions (Shaw et al.
// 2018) P is absent and every self-attention sub-layer carries a^K, a^V instead.
// Incremental decoding caches each decoder layer's self-attention keys/values (one more
// position per step) and its cross-attention keys/values of z (computed once in init), so a
// step costs O(t) instead of re-running the whole prefix.
#include <torch/torch.h>

#include <vector>

#include "models/incremental_decoder.h"
#include "models/transformer/attention.h"
#include "models/transformer/layers.h"
#include "models/transformer/positional.h"

namespace nlpzoo {

struct TransformerOptions {
  /// Source and target vocabulary sizes (SentencePiece pieces, special ids included).
  TORCH_ARG(int64_t, src_vocab_size) = 8000;
  TORCH_ARG(int64_t, tgt_vocab_size) = 8000;
  /// Model width d_model: embeddings, attention and every residual stream.
  TORCH_ARG(int64_t, d_model) = 256;
  /// Attention heads h per attention sub-layer (d_k = d_model / h).
  TORCH_ARG(int64_t, num_heads) = 4;
  /// Encoder and decoder depth N.
  TORCH_ARG(int64_t, num_encoder_layers) = 3;
  TORCH_ARG(int64_t, num_decoder_layers) = 3;
  /// Inner width d_ff of the position-wise feed-forward networks.
  TORCH_ARG(int64_t, ffn_dim) = 1024;
  /// P_drop: on the embedding + position sums and on every sub-layer output (sec. 5.4).
  TORCH_ARG(double, dropout) = 0.1;
  /// Dropout on attention weights (not in the paper; fairseq's attention_dropout).
  TORCH_ARG(double, attention_dropout) = 0.0;
  /// Feed-forward non-linearity: relu (paper) | gelu.
  TORCH_ARG(Activation, activation) = Activation::kRelu;
  /// Pre-LN sub-layers and a final LayerNorm per stack, instead of the paper's post-LN.
  TORCH_ARG(bool, pre_norm) = false;
  /// Positional information: sinusoidal (paper) | learned | relative (Shaw et al. 2018).
  TORCH_ARG(PositionType, positions) = PositionType::kSinusoidal;
  /// Rows of the learned position tables (the longest sentence, BOS/EOS included); also the
  /// rows of the sinusoidal buffer, which computes longer positions on the fly.
  TORCH_ARG(int64_t, max_positions) = 256;
  /// Clipping distance k of relative positions (used only with positions = relative).
  TORCH_ARG(int64_t, relative_k) = 16;
  /// One embedding table for source and target (a joint SentencePiece model); needs
  /// src_vocab_size == tgt_vocab_size.
  TORCH_ARG(bool, share_embeddings) = false;
  /// Padding id of both vocabularies: zero embedding, never attended to in the source.
  TORCH_ARG(int64_t, pad_id) = 0;
  /// Which head's cross-attention step() reports (last decoder layer): -1 = mean over heads.
  TORCH_ARG(int64_t, attention_head) = -1;
};

/// What the encoder gives the decoder.
struct TransformerEncoding {
  torch::Tensor memory;  // [B, S, d_model] float: encoder output z
  torch::Tensor mask;    // [B, S] bool: true at real (non-pad) source tokens
};

/// Output of a teacher-forced pass over T target positions.
struct TransformerDecoding {
  torch::Tensor logits;     // [B, T, tgt_vocab_size] float (before softmax)
  torch::Tensor attention;  // [B, H, T, S] float cross-attention of the last decoder layer,
                            // undefined unless asked for
};

class TransformerSeq2SeqImpl : public torch::nn::Module, public IncrementalDecoder {
 public:
  /// Throws c10::Error for inconsistent sizes (d_model % num_heads, share_embeddings with
  /// different vocabularies, attention_head out of range, non-positive layer counts).
  explicit TransformerSeq2SeqImpl(const TransformerOptions& options);

  /// src: [B, S] int64 padded with pad_id. Throws c10::Error on a wrong rank, or with learned
  /// positions when S > max_positions.
  TransformerEncoding encode(const torch::Tensor& src);
  /// Teacher-forced decoding with the causal mask. tgt_in: [B, T] int64 (BOS then y_1..y_{T-1}).
  TransformerDecoding decode(const torch::Tensor& tgt_in, const TransformerEncoding& enc,
                             bool need_attention = false);
  /// Full pass: logits [B, T, tgt_vocab_size] float for tgt_in [B, T] given src [B, S].
  torch::Tensor forward(const torch::Tensor& src, const torch::Tensor& tgt_in);

  // IncrementalDecoder. State tensors (all with rows on dim 0; L = num_decoder_layers):
  //   "src_mask"    [N, S] bool, true at real source tokens
  //   "k_cross_<l>" [N, H, S, d_k], "v_cross_<l>" [N, H, S, d_k]  layer l's W_K z, W_V z
  //   "k_self_<l>"  [N, H, t, d_k], "v_self_<l>"  [N, H, t, d_k]  keys/values of the t
  //                 target positions consumed so far (t = 0 after init)
  // step() reports as `attention` the last decoder layer's cross-attention of the new
  // position, [N, S], averaged over heads (or head attention_head); zero at padding.
  DecoderState init(const torch::Tensor& src) override;
  DecoderStep step(const DecoderState& state, const torch::Tensor& prev_tokens) override;
  int64_t target_vocab_size() const override { return options_.tgt_vocab_size(); }

  const TransformerOptions& options() const { return options_; }
  /// Chooses which head's cross-attention step() reports (-1 = mean over heads); a display
  /// choice that changes no output. Throws c10::Error outside [-1, num_heads).
  void set_attention_head(int64_t head);

  /// Target embedding E_tgt [tgt_vocab, d_model], which is also the output projection.
  torch::nn::Embedding tgt_embed{nullptr};
  /// Source embedding; the same module as tgt_embed when share_embeddings.
  torch::nn::Embedding src_embed{nullptr};
  SinusoidalPositionalEncoding sinusoidal{nullptr};                       // positions = sinusoidal
  LearnedPositionalEmbedding src_positions{nullptr}, tgt_positions{nullptr};  // positions = learned
  TransformerEncoder encoder{nullptr};
  TransformerDecoder decoder{nullptr};
  torch::nn::Dropout dropout{nullptr};

 private:
  // √d_model E x + P(offset ..), then dropout: x [B, T] int64 -> [B, T, d_model].
  torch::Tensor embed(torch::nn::Embedding& table, LearnedPositionalEmbedding& learned, const torch::Tensor& x,
                      int64_t offset);
  torch::Tensor project(const torch::Tensor& h);  // [B, T, d_model] -> logits [B, T, V]
  TransformerOptions options_;
};
TORCH_MODULE(TransformerSeq2Seq);

}  // namespace nlpzoo
