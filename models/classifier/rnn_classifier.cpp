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

RnnClassifierImpl::RnnClassifierImpl(const ClassifierOptions& o) : TextClassifierImpl(o, checked_feature_size(o)) {
  rnn = register_module("rnn", Recurrent(RecurrentOptions(o.cell(), o.embed_dim(), o.hidden_size())
                                             .num_layers(o.num_layers())
                                             .dropout(o.num_layers() > 1 ? o.dropout() : 0.0)
                                             .bidirectional(o.bidirectional())));
}

std::tuple<torch::Tensor, RecurrentState> RnnClassifierImpl::states(const torch::Tensor& tokens) {
  return rnn->forward(dropout_->forward(embedding->forward(tokens)), lengths(tokens));  // [B, T, dirs*H]
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
