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

namespace {
CausalStep last_step(const torch::Tensor& logits, const RecurrentState& next) {
  CausalStep out;
  out.logits = logits[0][-1];  // [V]
  out.state.tensors["h"] = next.h;
  if (next.c.defined()) out.state.tensors["c"] = next.c;
  return out;
}
}  // namespace

CausalStep LanguageModelImpl::begin(const std::vector<int64_t>& tokens) {
  TORCH_CHECK(!tokens.empty(), "CausalDecoder::begin needs at least one token");
  const auto input = torch::tensor(tokens, torch::TensorOptions(torch::kLong).device(embedding->weight.device()));
  auto [logits, next] = forward(input.view({1, -1}));  // [1, T, V]
  return last_step(logits, next);
}

CausalStep LanguageModelImpl::step(const CausalState& state, int64_t token) {
  RecurrentState carried;
  carried.h = state.tensors.at("h");
  if (const auto c = state.tensors.find("c"); c != state.tensors.end()) carried.c = c->second;
  const auto input = torch::full({1, 1}, token, torch::TensorOptions(torch::kLong).device(embedding->weight.device()));
  auto [logits, next] = forward(input, carried);  // [1, 1, V]
  return last_step(logits, next);
}

torch::Tensor LanguageModelImpl::sequence_logits(const std::vector<int64_t>& tokens) {
  const auto input = torch::tensor(tokens, torch::TensorOptions(torch::kLong).device(embedding->weight.device()));
  return std::get<0>(forward(input.view({1, -1})))[0];  // [T, V]
}

torch::Tensor LanguageModelImpl::project(const torch::Tensor& h) {
  return output ? nlpzoo::linear(h, output) : nlpzoo::linear(h, embedding->weight, output_bias);
}

}  // namespace nlpzoo
