#include "models/bert/electra.h"

#include <algorithm>
#include <limits>

#include "models/transformer/attention.h"

namespace nlpzoo {

namespace {
// BERT's initializer_range, which ELECTRA keeps: matrices N(0, 0.02), biases 0.
torch::nn::Linear electra_linear(int64_t in, int64_t out) {
  torch::nn::Linear l(in, out);
  torch::NoGradGuard ng;
  l->weight.normal_(0.0, 0.02);
  l->bias.zero_();
  return l;
}
}  // namespace

BertOptions electra_generator_options(const BertOptions& d, int64_t divisor) {
  TORCH_CHECK(divisor >= 1, "the generator's size divisor must be >= 1, got ", divisor);
  TORCH_CHECK(d.d_model() % divisor == 0, "d_model (", d.d_model(), ") must be a multiple of the generator's size ",
              "divisor (", divisor, ")");
  BertOptions g = d;
  g.d_model(d.d_model() / divisor)
      .num_heads(std::max<int64_t>(1, d.num_heads() / divisor))
      .ffn_dim(std::max<int64_t>(1, d.ffn_dim() / divisor))
      .nsp(false);
  TORCH_CHECK(g.d_model() % g.num_heads() == 0, "the generator's d_model (", g.d_model(),
              ") must be a multiple of its num_heads (", g.num_heads(), ")");
  return g;
}

ElectraGeneratorHeadImpl::ElectraGeneratorHeadImpl(int64_t hidden_size, int64_t embedding_size, int64_t vocab_size,
                                                   double layer_norm_eps) {
  dense = register_module("dense", electra_linear(hidden_size, embedding_size));
  norm = register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({embedding_size}).eps(layer_norm_eps)));
  bias = register_parameter("bias", torch::zeros({vocab_size}));
}

torch::Tensor ElectraGeneratorHeadImpl::forward(const torch::Tensor& hidden, const torch::Tensor& embedding) {
  // Normalised in the residual stream's dtype, as BertMlmHead does (CPU bf16 autocast).
  auto h = norm(torch::gelu(dense(hidden)).to(hidden.scalar_type()));  // [N, E]
  return torch::linear(h, embedding, bias);                             // [N, V]
}

ElectraGeneratorImpl::ElectraGeneratorImpl(const BertOptions& o, BertEmbeddings shared) : options_(o) {
  embeddings = std::move(shared);
  const int64_t embedding_size = embeddings->token->weight.size(1);
  if (embedding_size != o.d_model())
    embeddings_project = register_module("embeddings_project", electra_linear(embedding_size, o.d_model()));
  encoder = register_module("encoder", TransformerEncoder(encoder_layer_options(o), o.num_layers()));
  predictions = register_module(
      "predictions", ElectraGeneratorHead(o.d_model(), embedding_size, o.vocab_size(), o.layer_norm_eps()));
}

torch::Tensor ElectraGeneratorImpl::hidden(const torch::Tensor& tokens, const torch::Tensor& segments) {
  auto x = embeddings(tokens, segments);               // [B, S, E]
  if (embeddings_project) x = embeddings_project(x);  // [B, S, H_G]
  return encoder(x, padding_mask(tokens, options_.pad_id()));
}

torch::Tensor ElectraGeneratorImpl::forward(const torch::Tensor& tokens, const torch::Tensor& segments,
                                            const torch::Tensor& masked) {
  TORCH_CHECK(masked.sizes() == tokens.sizes() && masked.scalar_type() == torch::kBool,
              "masked must be a bool tensor shaped like tokens ", tokens.sizes(), ", got ", masked.sizes());
  // Gathered first: only N = |masked| rows meet the [V, E] matrix.
  return predictions(hidden(tokens, segments).index({masked}), embeddings->token->weight);  // [N, V]
}

torch::Tensor ElectraGeneratorImpl::mlm_all(const torch::Tensor& tokens, const torch::Tensor& segments) {
  return predictions(hidden(tokens, segments), embeddings->token->weight);  // [B, S, V]
}

ElectraDiscriminatorHeadImpl::ElectraDiscriminatorHeadImpl(int64_t d_model) {
  dense = register_module("dense", electra_linear(d_model, d_model));
  output = register_module("output", electra_linear(d_model, 1));
}

torch::Tensor ElectraDiscriminatorHeadImpl::forward(const torch::Tensor& hidden) {
  return output(torch::gelu(dense(hidden))).squeeze(-1);  // [...]
}

torch::Tensor sample_from_softmax(const torch::Tensor& logits, const torch::Tensor& uniform) {
  TORCH_CHECK(logits.dim() == 2 && uniform.dim() == 1 && uniform.size(0) == logits.size(0),
              "sample_from_softmax takes logits [N, V] and uniform [N], got ", logits.sizes(), " and ",
              uniform.sizes());
  torch::NoGradGuard no_grad;
  const auto cdf = torch::softmax(logits.detach().to(torch::kFloat), -1).cumsum(-1);  // [N, V]
  const auto threshold = uniform.to(cdf.options()).unsqueeze(1) * cdf.slice(1, -1);   // [N, 1]
  // The first id past the threshold: the count of those at or below it (a rounded-down total
  // could leave none past it, hence the clamp).
  return (cdf <= threshold).sum(-1).clamp_max(logits.size(1) - 1);  // [N] int64
}

ReplacedTokens replace_tokens(const torch::Tensor& tokens, const torch::Tensor& masked, const torch::Tensor& sampled,
                              const torch::Tensor& targets) {
  TORCH_CHECK(sampled.sizes() == targets.sizes(), "replace_tokens takes one sampled and one original id per masked "
              "position, got ", sampled.sizes(), " and ", targets.sizes());
  ReplacedTokens out;
  out.corrupted = tokens.clone();  // [B, S]
  out.corrupted.index_put_({masked}, sampled);
  out.replaced = torch::zeros_like(masked);  // [B, S]
  out.replaced.index_put_({masked}, sampled != targets);
  return out;
}

ElectraForPreTrainingImpl::ElectraForPreTrainingImpl(const BertOptions& o, int64_t generator_size_divisor) {
  bert = register_module("bert", BertModel(o));
  generator = register_module("generator",
                              ElectraGenerator(electra_generator_options(o, generator_size_divisor), bert->embeddings));
  discriminator_predictions = register_module("discriminator_predictions", ElectraDiscriminatorHead(o.d_model()));
}

ElectraOutput ElectraForPreTrainingImpl::forward(const torch::Tensor& tokens, const torch::Tensor& segments,
                                                 const torch::Tensor& masked, const torch::Tensor& targets,
                                                 const torch::Tensor& uniform) {
  ElectraOutput out;
  out.mlm_logits = generator(tokens, segments, masked);  // [N, V]
  {
    // The padding id is never a target, and a sampled one would hide its position from the
    // discriminator's attention (padding_mask): the proposal leaves it out.
    torch::NoGradGuard no_grad;
    auto proposal = out.mlm_logits.detach().to(torch::kFloat).clone();  // [N, V]
    proposal.select(1, bert->options().pad_id()).fill_(-std::numeric_limits<float>::infinity());
    out.sampled = sample_from_softmax(proposal, uniform);  // [N]
  }
  auto corruption = replace_tokens(tokens, masked, out.sampled, targets);
  out.corrupted = corruption.corrupted;
  out.replaced = corruption.replaced;
  out.disc_logits = discriminator_predictions(bert(out.corrupted, segments));  // [B, S]
  return out;
}

}  // namespace nlpzoo
