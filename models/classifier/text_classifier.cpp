#include "models/classifier/text_classifier.h"

#include <stdexcept>

namespace nlpzoo {

TextClassifierImpl::TextClassifierImpl(const ClassifierOptions& o, int64_t feature_size) : options_(o) {
  if (o.vocab_size() <= 0 || o.num_classes() <= 0 || o.embed_dim() <= 0 || feature_size <= 0)
    throw std::invalid_argument("classifier: vocab_size, num_classes, embed_dim and the feature size must be positive");
  if (o.dropout() < 0 || o.dropout() >= 1) throw std::invalid_argument("classifier: dropout must be in [0, 1)");
  embedding = register_module(
      "embedding", torch::nn::Embedding(torch::nn::EmbeddingOptions(o.vocab_size(), o.embed_dim()).padding_idx(o.pad_id())));
  if (o.freeze_embeddings()) embedding->weight.set_requires_grad(false);
  dropout_ = register_module("dropout", torch::nn::Dropout(o.dropout()));
  output = register_module("output", torch::nn::Linear(feature_size, o.num_classes()));
}

torch::Tensor TextClassifierImpl::forward(const torch::Tensor& tokens) {
  return output->forward(dropout_->forward(encode(tokens)));  // [B, C]
}

torch::Tensor TextClassifierImpl::lengths(const torch::Tensor& tokens) const {
  return tokens.ne(options_.pad_id()).sum(/*dim=*/1).clamp_min(1);  // [B]
}

}  // namespace nlpzoo
