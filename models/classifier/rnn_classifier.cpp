#include "models/classifier/rnn_classifier.h"

#include <stdexcept>

namespace nlpzoo {

namespace {
int64_t checked_feature_size(const ClassifierOptions& o) {
  if (o.hidden_size() <= 0 || o.num_layers() <= 0)
    throw std::invalid_argument("rnn classifier: hidden_size and num_layers must be positive");
  return o.hidden_size() * (o.bidirectional() ? 2 : 1);
}
}  // namespace

RnnClassifierImpl::RnnClassifierImpl(const ClassifierOptions& o, const std::optional<BiLanguageModelOptions>& elmo_options)
    : TextClassifierImpl(o, checked_feature_size(o)) {
  if (elmo_options) elmo = register_module("elmo", Elmo(*elmo_options));
  const int64_t input_size = o.embed_dim() + (elmo ? elmo->dim() : 0);
  rnn = register_module("rnn", Recurrent(RecurrentOptions(o.cell(), input_size, o.hidden_size())
                                             .num_layers(o.num_layers())
                                             .dropout(o.num_layers() > 1 ? o.dropout() : 0.0)
                                             .bidirectional(o.bidirectional())));
}

std::tuple<torch::Tensor, RecurrentState> RnnClassifierImpl::states(const torch::Tensor& tokens) {
  const auto n = lengths(tokens);
  auto x = dropout_->forward(embedding->forward(tokens));                                  // [B, T, E]
  if (elmo) x = torch::cat({x, dropout_->forward(elmo->forward(tokens, n))}, /*dim=*/-1);  // [B, T, E + 2d]
  return rnn->forward(x, n);  // [B, T, dirs*H]
}

torch::Tensor RnnClassifierImpl::encode(const torch::Tensor& tokens) {
  auto [out, final_state] = states(tokens);
  switch (options_.pooling()) {
    case Pooling::kLast:
      return top_layer_final_state(final_state.h, options_.num_layers(), num_directions());
    case Pooling::kMax:
      return masked_max(out, length_mask(lengths(tokens), tokens.size(1)));
    case Pooling::kMean:
      return masked_mean(out, length_mask(lengths(tokens), tokens.size(1)));
  }
  throw std::logic_error("rnn classifier: unknown pooling");
}

}  // namespace nlpzoo
