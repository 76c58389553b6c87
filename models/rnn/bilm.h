#pragma once
// The bidirectional language model of ELMo (Peters et al. 2018, sec. 3.1): a forward LM and a
// backward LM over the same tokens t_1..t_N, sharing the token embeddings and the softmax,
// trained to maximise
//   sum_k [ log p(t_k | t_1..t_{k-1}) + log p(t_k | t_{k+1}..t_N) ].
// Each direction is a stack of L LSTM layers; layer l's output is projected back to the
// embedding size d (ELMo: 4096 cells projected to 512), with a residual connection between
// layers:
//   h^0 = dropout(E t);   h^1 = P^1 LSTM^1(h^0);   h^l = P^l LSTM^l(dropout(h^{l-1})) + h^{l-1}  (l >= 2)
// (ELMo's LSTMP projects inside the recurrence; here the projection follows each layer.)
// A sequence is read as [CLS] t_1..t_N [SEP], the way the pre-training corpus packs its text
// (train/tasks/masked_lm_data.h): the forward LM predicts t_1..t_N [SEP] from the states at
// [CLS] t_1..t_N, the backward LM [CLS] t_1..t_N from the states at t_1..t_N [SEP].
// The representations ELMo mixes are, per position k, R_k = {[x_k; x_k], [f^l_k; b^l_k] for l = 1..L}
// (x_k the token embedding, f and b the forward and backward layers): L + 1 vectors of 2d.
#include <torch/torch.h>

#include <vector>

#include "models/rnn/recurrent.h"

namespace nlpzoo {

struct BiLanguageModelOptions {
  explicit BiLanguageModelOptions(int64_t vocab_size) : vocab_size_(vocab_size) {}
  /// Pieces in the SentencePiece vocabulary = output classes of the shared softmax.
  TORCH_ARG(int64_t, vocab_size);
  /// d: the token embedding and every layer's output per direction (ELMo: 512).
  TORCH_ARG(int64_t, embed_dim) = 256;
  /// LSTM cells per layer and direction, before the projection to d (ELMo: 4096).
  TORCH_ARG(int64_t, hidden_size) = 1024;
  /// L: LSTM layers per direction (ELMo: 2).
  TORCH_ARG(int64_t, num_layers) = 2;
  /// Dropout on the embeddings, between layers and before the softmax (ELMo: 0.1).
  TORCH_ARG(double, dropout) = 0.1;
  /// Padding id: its embedding row is zero.
  TORCH_ARG(int64_t, pad_id) = 0;
};

/// The two directions' summed negative log-likelihoods of a batch and how many predictions
/// each made (the same count: N + 1 per sequence of N tokens).
struct BiLmLoss {
  torch::Tensor forward_nll;   // [] float, summed
  torch::Tensor backward_nll;  // [] float, summed
  int64_t predictions = 0;     // per direction
};

class BiLanguageModelImpl : public torch::nn::Module {
 public:
  /// Throws std::invalid_argument for a non-positive size.
  explicit BiLanguageModelImpl(const BiLanguageModelOptions& options);

  /// sequences: [B, S] int64, each row [CLS] t_1..t_N [SEP] then pad_id; lengths: [B] int64
  /// (N + 2 per row, on sequences' device). Returns the L + 1 representations of every
  /// position: layer 0 = [x; x], layer l = [f^l; b^l], each [B, S, 2d] (values at padded
  /// positions mean nothing).
  std::vector<torch::Tensor> layers(const torch::Tensor& sequences, const torch::Tensor& lengths);

  /// The objective on a batch laid out as layers() takes it: cross-entropy of the forward LM
  /// at positions 1..N+1 and of the backward LM at positions 0..N, each summed.
  BiLmLoss loss(const torch::Tensor& sequences, const torch::Tensor& lengths);

  const BiLanguageModelOptions& options() const { return options_; }

  torch::nn::Embedding embedding{nullptr};
  torch::nn::ModuleList forward_lstm{nullptr}, forward_proj{nullptr};    // L each
  torch::nn::ModuleList backward_lstm{nullptr}, backward_proj{nullptr};  // L each
  /// The softmax layer both directions share: [vocab_size, d] and its bias.
  torch::nn::Linear output{nullptr};

 private:
  /// One direction's layers 1..L over x [B, S, d], read left to right.
  std::vector<torch::Tensor> direction(const torch::Tensor& x, torch::nn::ModuleList& lstm, torch::nn::ModuleList& proj);

  BiLanguageModelOptions options_;
  torch::nn::Dropout dropout_{nullptr};
};
TORCH_MODULE(BiLanguageModel);

/// Each row's first `lengths[b]` positions in reverse order, the rest where they are:
/// x: [B, S, ...], lengths: [B] int64 -> [B, S, ...]. Its own inverse.
torch::Tensor reverse_padded(const torch::Tensor& x, const torch::Tensor& lengths);

}  // namespace nlpzoo
