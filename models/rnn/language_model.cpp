#include "models/rnn/language_model.h"

#include <stdexcept>

#include "models/linear.h"

namespace nlpzoo {

LanguageModelImpl::LanguageModelImpl(const LanguageModelOptions& o) : options_(o) {
  if (o.tie_embeddings() && o.embed_dim() != o.hidden_size())
    throw std::invalid_argument("tied embeddings need embed_dim == hidden_size (got " + std::to_string(o.embed_dim()) +
                                " and " + std::to_string(o.hidden_size()) + ")");
  embedding = register_module(
      "embedding", torch::nn::Embedding(torch::nn::EmbeddingOptions(o.vocab_size(), o.embed_dim()).padding_idx(o.pad_id())));
  rnn = register_module("rnn", Recurrent(RecurrentOptions(o.cell(), o.embed_dim(), o.hidden_size())
                                             .num_layers(o.num_layers())
                                             // LibTorch drops between layers only (and warns for one).
                                             .dropout(o.num_layers() > 1 ? o.dropout() : 0.0)));
  if (o.tie_embeddings()) {
    output_bias = register_parameter("output_bias", torch::zeros({o.vocab_size()}));
  } else {
    output = register_module("output", torch::nn::Linear(o.hidden_size(), o.vocab_size()));
  }
  dropout_ = register_module("dropout", torch::nn::Dropout(o.dropout()));
}

std::tuple<torch::Tensor, RecurrentState> LanguageModelImpl::forward(const torch::Tensor& tokens,
                                                                     const RecurrentState& state) {
  auto [h, next] = rnn->forward(dropout_->forward(embedding->forward(tokens)), {}, state);
  return {project(dropout_->forward(h)), next};
}

torch::Tensor LanguageModelImpl::project(const torch::Tensor& h) {
  return output ? nlpzoo::linear(h, output) : nlpzoo::linear(h, embedding->weight, output_bias);
}

}  // namespace nlpzoo
