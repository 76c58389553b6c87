#include "models/embeddings/glove.h"

#include <stdexcept>

namespace nlpzoo {

torch::Tensor glove_weight(const torch::Tensor& x, double x_max, double alpha) {
  return torch::clamp_max(torch::pow(x / x_max, alpha), 1.0);
}

GloveImpl::GloveImpl(const GloveOptions& options) : options_(options) {
  const auto& o = options_;
  if (o.vocab_size() < 1 || o.dim() < 1) throw std::invalid_argument("Glove: vocab_size and dim must be at least 1");
  if (!(o.x_max() > 0)) throw std::invalid_argument("Glove: x_max must be positive");
  if (!(o.alpha() >= 0)) throw std::invalid_argument("Glove: alpha must not be negative");
  if (!(o.initial_accumulator() > 0)) throw std::invalid_argument("Glove: initial_accumulator must be positive");
  auto table = [&](const char* name, int64_t dim) {
    auto e = register_module(name, torch::nn::Embedding(torch::nn::EmbeddingOptions(o.vocab_size(), dim).sparse(o.sparse())));
    torch::NoGradGuard no_grad;
    e->weight.uniform_(-0.5 / o.dim(), 0.5 / o.dim());
    return e;
  };
  word = table("word", o.dim());
  context = table("context", o.dim());
  word_bias = table("word_bias", 1);
  context_bias = table("context_bias", 1);
  auto sums = [&](const char* name, int64_t dim) {
    return register_buffer(name, torch::full({o.vocab_size(), dim}, o.initial_accumulator(), torch::kFloat));
  };
  word_gradsq = sums("word_gradsq", o.dim());
  context_gradsq = sums("context_gradsq", o.dim());
  word_bias_gradsq = sums("word_bias_gradsq", 1);
  context_bias_gradsq = sums("context_bias_gradsq", 1);
}

torch::Tensor GloveImpl::loss(const torch::Tensor& rows, const torch::Tensor& cols, const torch::Tensor& x) {
  auto dot = (word(rows) * context(cols)).sum(1);                                                 // [N]
  auto diff = dot + word_bias(rows).squeeze(1) + context_bias(cols).squeeze(1) - torch::log(x);  // [N]
  return 0.5 * (glove_weight(x, options_.x_max(), options_.alpha()) * diff * diff).sum();
}

torch::Tensor GloveImpl::word_vectors() const {
  torch::NoGradGuard no_grad;
  return (word->weight + context->weight).detach();
}

}  // namespace nlpzoo
