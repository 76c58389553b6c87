#include "models/classifier/average_embedding.h"

namespace nlpzoo {

AverageEmbeddingClassifierImpl::AverageEmbeddingClassifierImpl(const ClassifierOptions& o)
    : TextClassifierImpl(o, o.embed_dim()) {}

torch::Tensor AverageEmbeddingClassifierImpl::encode(const torch::Tensor& tokens) {
  auto mask = length_mask(lengths(tokens), tokens.size(1));   // [B, T]
  return masked_mean(embedding->forward(tokens), mask);       // [B, E]
}

}  // namespace nlpzoo
