#pragma once
// What every sentence classifier shares: token embeddings, a sentence encoder (the one
// thing subclasses define), dropout and a linear layer to class scores:
//   logits = W_o dropout(encode(tokens)) + b_o;   P(y | sentence) = softmax(logits).
#include <torch/torch.h>

#include "models/classifier/pooling.h"
#include "models/rnn/recurrent.h"

namespace nlpzoo {

struct ClassifierOptions {
  ClassifierOptions(int64_t vocab_size, int64_t num_classes) : vocab_size_(vocab_size), num_classes_(num_classes) {}
  /// Rows of the embedding (SentencePiece pieces, special ids included).
  TORCH_ARG(int64_t, vocab_size);
  /// Output classes.
  TORCH_ARG(int64_t, num_classes);
  TORCH_ARG(int64_t, embed_dim) = 128;
  /// Padding id: its embedding row is zero and it never counts as a position.
  TORCH_ARG(int64_t, pad_id) = 0;
  /// Dropout probability on the sentence vector before the output layer; the RNN
  /// classifier also applies it to the embeddings and between stacked layers.
  TORCH_ARG(double, dropout) = 0.0;
  /// Keep the embedding fixed (requires_grad = false; Keras' trainable=False), e.g. when it
  /// holds pretrained vectors that fine-tuning on a small set would overfit.
  TORCH_ARG(bool, freeze_embeddings) = false;
  /// RNN classifier only: rnn (tanh) | gru | lstm.
  TORCH_ARG(CellType, cell) = CellType::kLstm;
  /// RNN classifier only: state size per direction.
  TORCH_ARG(int64_t, hidden_size) = 128;
  /// RNN classifier only: stacked recurrent layers.
  TORCH_ARG(int64_t, num_layers) = 1;
  /// RNN classifier only: read the sentence in both directions and concatenate the states.
  TORCH_ARG(bool, bidirectional) = true;
  /// RNN classifier only: how the states become one vector (last | max | mean).
  TORCH_ARG(Pooling, pooling) = Pooling::kLast;
};

class TextClassifierImpl : public torch::nn::Module {
 public:
  /// Registers "embedding" [vocab_size, embed_dim], "dropout" and "output"
  /// [num_classes, feature_size]. Throws std::invalid_argument for a non-positive size or a
  /// dropout outside [0, 1).
  TextClassifierImpl(const ClassifierOptions& options, int64_t feature_size);

  /// tokens: [B, T] int64, each row's pieces then pad_id up to T. A row without any real
  /// token reads as if it held one pad token. Returns logits [B, num_classes] float.
  torch::Tensor forward(const torch::Tensor& tokens);

  /// The sentence vector: tokens [B, T] int64 -> [B, feature_size] float. Padding changes
  /// nothing: a row gives the same vector alone or padded in a longer batch.
  virtual torch::Tensor encode(const torch::Tensor& tokens) = 0;

  const ClassifierOptions& options() const { return options_; }

  /// Real tokens per row: [B] int64 on tokens' device, at least 1.
  torch::Tensor lengths(const torch::Tensor& tokens) const;

  torch::nn::Embedding embedding{nullptr};
  torch::nn::Linear output{nullptr};

 protected:
  ClassifierOptions options_;
  torch::nn::Dropout dropout_{nullptr};
};

}  // namespace nlpzoo
