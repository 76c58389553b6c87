#pragma once
// A recurrent sentence classifier: embeddings read by a (bi)directional RNN / GRU / LSTM
// stack (models/rnn/Recurrent), the states pooled into one vector, then a linear layer:
//   h_1..h_n = RNN(dropout(E x_1..n));   s = pool(h_1..h_n)   (last | max | mean);
//   logits = W_o dropout(s) + b_o.
// Padding is invisible: padded steps neither update the recurrence nor enter the pooling.
// `last` is the top layer's final state, as LibTorch's h_n gives it: the forward direction
// after the last real token, concatenated (bidirectional) with the backward direction after
// the first token.
// With ELMo (Peters et al. 2018, sec. 3.3), each position's input is [E x_k; ELMo_k], the
// features of a frozen biLM mixed by the classifier (models/rnn/elmo.h), dropout on both.
#include <optional>

#include "models/classifier/text_classifier.h"
#include "models/rnn/elmo.h"

namespace nlpzoo {

class RnnClassifierImpl : public TextClassifierImpl {
 public:
  /// Throws std::invalid_argument as TextClassifierImpl does, or for a non-positive
  /// hidden_size or num_layers. With `elmo`, an untrained biLM of those options ("elmo.bilm.*",
  /// to be loaded) feeds the recurrent stack with the embeddings.
  explicit RnnClassifierImpl(const ClassifierOptions& options, const std::optional<BiLanguageModelOptions>& elmo = {});

  /// Every position's top-layer state: tokens [B, T] int64 -> states [B, T, dirs * hidden_size]
  /// float (zeros at padded positions) and the final state (h, c: [num_layers * dirs, B, hidden_size]).
  std::tuple<torch::Tensor, RecurrentState> states(const torch::Tensor& tokens);

  /// tokens: [B, T] int64 -> s: [B, dirs * hidden_size] float, pooled as options().pooling() says.
  torch::Tensor encode(const torch::Tensor& tokens) override;

  int64_t num_directions() const { return options_.bidirectional() ? 2 : 1; }

  Recurrent rnn{nullptr};
  Elmo elmo{nullptr};  // null without ELMo features
};
TORCH_MODULE(RnnClassifier);

}  // namespace nlpzoo
