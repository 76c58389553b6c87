#pragma once
// RNN encoder-decoder with attention (Sutskever et al. 2014; Bahdanau et al. 2015; Luong et
// al. 2015), as the course draws it:
//   encoder:  h_i = BiRNN(E_src x_i)                               h_i: [dirs * hidden/dirs]
//   decoder:  s_t = RNN(s_{t-1}, [E_tgt y_{t-1}; h̃_{t-1} if input_feeding])
//             s_0 = tanh(W_bridge [→h_S; ←h_1])
//   attention α_t = softmax_i score(s_t, h_i) over real source positions; c_t = Σ α_ti h_i
//             (attention "none": c_t = [→h_S; ←h_1] for every t, the fixed-context bottleneck)
//   output    h̃_t = tanh(W_c [c_t; s_t]);  P(y_t | y_<t, x) = softmax(W_o h̃_t)
#include <torch/torch.h>

#include "models/incremental_decoder.h"
#include "models/rnn/recurrent.h"
#include "models/seq2seq/attention.h"

namespace nlpzoo {

struct Seq2SeqOptions {
  /// Source and target vocabulary sizes (SentencePiece pieces, special ids included).
  TORCH_ARG(int64_t, src_vocab_size) = 8000;
  TORCH_ARG(int64_t, tgt_vocab_size) = 8000;
  /// Width of the source and target token embeddings.
  TORCH_ARG(int64_t, embed_dim) = 256;
  /// Recurrent cell of encoder and decoder: gru | lstm | rnn.
  TORCH_ARG(CellType, cell) = CellType::kGru;
  /// Decoder state size; the encoder output has the same size (hidden_size / 2 per
  /// direction when bidirectional, as OpenNMT's brnn), so dot attention always fits.
  TORCH_ARG(int64_t, hidden_size) = 512;
  /// Stacked layers in the encoder and in the decoder.
  TORCH_ARG(int64_t, num_layers) = 1;
  /// Bidirectional encoder.
  TORCH_ARG(bool, bidirectional) = true;
  /// Score function: none | additive | dot | general.
  TORCH_ARG(AttentionType, attention) = AttentionType::kAdditive;
  /// Width A of the additive attention's hidden layer (vᵀ tanh(W_s s + W_h h), v ∈ R^A).
  TORCH_ARG(int64_t, attention_dim) = 512;
  /// Feed h̃_{t-1} into the decoder input (Luong et al. 2015, sec. 3.3). Off by default: it
  /// forces a step-by-step loop in training, where without it the whole target runs as one
  /// RNN call.
  TORCH_ARG(bool, input_feeding) = false;
  /// Padding id of both vocabularies (nlpzoo's tokenizers use 0): its embedding is zero and
  /// source positions holding it get no attention.
  TORCH_ARG(int64_t, pad_id) = 0;
  /// Dropout on embeddings, between stacked layers and on h̃_t.
  TORCH_ARG(double, dropout) = 0.2;
};

/// What the encoder gives the decoder. All tensors batch-first.
struct EncoderOutput {
  torch::Tensor states;   // [B, S, hidden_size] float: h_i (zeros at padding)
  torch::Tensor mask;     // [B, S] bool: true at real source tokens
  torch::Tensor keys;     // [B, S, P] float: attention's project_keys(h) (undefined for none)
  torch::Tensor summary;  // [B, hidden_size] float: [→h_S; ←h_1] of the top layer
};

/// Output of a teacher-forced pass over T target positions.
struct DecoderOutput {
  torch::Tensor logits;       // [B, T, tgt_vocab_size] float (before softmax)
  torch::Tensor attention;    // [B, T, S] float, or undefined for attention none
  RecurrentState state;       // decoder state after the last position
  torch::Tensor attentional;  // [B, T, hidden_size]: h̃_t
};

class Seq2SeqImpl : public torch::nn::Module, public IncrementalDecoder {
 public:
  explicit Seq2SeqImpl(const Seq2SeqOptions& options);

  /// src: [B, S] int64 padded with pad_id. Throws c10::Error on a wrong rank.
  EncoderOutput encode(const torch::Tensor& src);
  /// s_0 from the encoder summary: h (and c for LSTM) [num_layers, B, hidden_size].
  RecurrentState initial_state(const EncoderOutput& enc);
  /// Teacher-forced decoding. tgt_in: [B, T] int64 (BOS then y_1..y_{T-1}).
  /// prev_attentional: [B, hidden] h̃_0 for input feeding (zeros if undefined).
  DecoderOutput decode(const torch::Tensor& tgt_in, const EncoderOutput& enc, const RecurrentState& state,
                       const torch::Tensor& prev_attentional = {});
  /// Full pass: logits [B, T, tgt_vocab_size] for tgt_in [B, T] given src [B, S].
  torch::Tensor forward(const torch::Tensor& src, const torch::Tensor& tgt_in);

  // IncrementalDecoder: state tensors "states", "mask", "keys", "summary", "h", "c", "feed".
  DecoderState init(const torch::Tensor& src) override;
  DecoderStep step(const DecoderState& state, const torch::Tensor& prev_tokens) override;
  int64_t target_vocab_size() const override { return options_.tgt_vocab_size(); }

  /// Draws every parameter from U(-a, a), the embeddings' pad rows back to 0 (Luong et al. 2015,
  /// sec. 4.1: a = 0.1; OpenNMT-py's param_init). LibTorch's defaults give N(0, 1) embeddings,
  /// under which the LSTM + general attention + input feeding model stayed at the unigram loss
  /// (6.1) for its first 450 updates on the Bible. Uses the global torch generator.
  void init_uniform(double a);

  const Seq2SeqOptions& options() const { return options_; }

  torch::nn::Embedding src_embed{nullptr}, tgt_embed{nullptr};
  Recurrent encoder{nullptr}, decoder{nullptr};
  torch::nn::Linear bridge_h{nullptr}, bridge_c{nullptr}, combine{nullptr}, output{nullptr};
  std::shared_ptr<AttentionScoreImpl> attention;  // nullptr for attention none
  torch::nn::Dropout dropout{nullptr};

 private:
  // Attention + h̃ + logits for decoder outputs s: [B, T, H]. Shared by the full pass and
  // the incremental step, so both compute exactly the same thing.
  DecoderOutput attend_and_project(const torch::Tensor& s, const EncoderOutput& enc);
  Seq2SeqOptions options_;
};
TORCH_MODULE(Seq2Seq);

}  // namespace nlpzoo
