#pragma once
// Recurrent language model (Mikolov et al. 2010; Zaremba et al. 2014), as the course draws it:
//   x_t = dropout(E y_{t-1});  h_t = RNN(h_{t-1}, x_t)  (rnn | gru | lstm, num_layers deep)
//   P(y_t | y_<t) = softmax(W_o dropout(h_t) + b_o)
// With tie_embeddings, W_o = E (Press & Wolf 2017; Inan et al. 2017), which needs
// embed_dim == hidden_size.
#include <torch/torch.h>

#include "models/causal_decoder.h"
#include "models/rnn/recurrent.h"

namespace nlpzoo {

struct LanguageModelOptions {
  explicit LanguageModelOptions(int64_t vocab_size) : vocab_size_(vocab_size) {}
  /// Pieces in the SentencePiece vocabulary (special ids included) = output classes.
  TORCH_ARG(int64_t, vocab_size);
  /// rnn (tanh) | gru | lstm.
  TORCH_ARG(CellType, cell) = CellType::kLstm;
  TORCH_ARG(int64_t, embed_dim) = 512;
  TORCH_ARG(int64_t, hidden_size) = 512;
  TORCH_ARG(int64_t, num_layers) = 2;
  /// Dropout on embeddings, between stacked layers and before the output layer.
  TORCH_ARG(double, dropout) = 0.2;
  /// Share the input embedding with the output projection.
  TORCH_ARG(bool, tie_embeddings) = false;
  /// Padding id: its embedding row is zero.
  TORCH_ARG(int64_t, pad_id) = 0;
};

class LanguageModelImpl : public torch::nn::Module, public CausalDecoder {
 public:
  /// Throws std::invalid_argument if tie_embeddings is set and embed_dim != hidden_size.
  explicit LanguageModelImpl(const LanguageModelOptions& options);

  /// tokens: [B, T] int64 (inputs y_{t-1}); state: from the previous segment or undefined
  /// (zeros). Returns logits [B, T, vocab_size] float and the state after the last position
  /// (h, c: [num_layers, B, hidden_size]).
  std::tuple<torch::Tensor, RecurrentState> forward(const torch::Tensor& tokens, const RecurrentState& state = {});

  const LanguageModelOptions& options() const { return options_; }

  /// CausalDecoder: the state is the recurrent state after the tokens read ("h", and "c" for
  /// an LSTM: [num_layers, 1, hidden_size]); a step is a forward pass of one token.
  CausalStep begin(const std::vector<int64_t>& tokens) override;
  CausalStep step(const CausalState& state, int64_t token) override;
  torch::Tensor sequence_logits(const std::vector<int64_t>& tokens) override;
  int64_t vocab_size() const override { return options_.vocab_size(); }
  torch::nn::Module& module() override { return *this; }

  /// The output layer's logits for top-layer states h: [..., hidden_size] -> [..., vocab_size].
  torch::Tensor project(const torch::Tensor& h);

  torch::nn::Embedding embedding{nullptr};
  Recurrent rnn{nullptr};
  /// Untied: the output layer W_o, b_o ("output.weight", "output.bias"). Tied: null, and the
  /// logits are h Eᵀ + output_bias (one registered copy of E, so optimizers see it once).
  torch::nn::Linear output{nullptr};
  torch::Tensor output_bias;

 private:
  LanguageModelOptions options_;
  torch::nn::Dropout dropout_{nullptr};
};
TORCH_MODULE(LanguageModel);

}  // namespace nlpzoo
