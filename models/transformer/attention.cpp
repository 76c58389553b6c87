#include "models/transformer/attention.h"

#include <cmath>

#include "models/linear.h"
#include "models/masked_softmax.h"

namespace nlpzoo {

torch::Tensor causal_mask(int64_t queries, int64_t keys, int64_t offset, torch::Device device) {
  // tril(offset) keeps j - i <= offset: query i (absolute i + offset) sees keys up to itself.
  return torch::ones({queries, keys}, torch::TensorOptions().dtype(torch::kBool).device(device)).tril(offset);
}

torch::Tensor padding_mask(const torch::Tensor& tokens, int64_t pad_id) {
  TORCH_CHECK(tokens.dim() == 2, "tokens must be [B, S] int64, got ", tokens.sizes());
  return tokens.ne(pad_id).unsqueeze(1);
}

torch::Tensor relative_position_index(int64_t queries, int64_t keys, int64_t k, int64_t offset,
                                      torch::Device device) {
  TORCH_CHECK(k >= 1, "relative position clipping distance k must be >= 1, got ", k);
  auto opts = torch::TensorOptions().dtype(torch::kLong).device(device);
  auto i = torch::arange(offset, offset + queries, opts).unsqueeze(1);  // [T, 1]
  auto j = torch::arange(keys, opts).unsqueeze(0);                      // [1, S]
  return (j - i).clamp(-k, k) + k;
}

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, const torch::Tensor& allowed,
    const RelativePositions* relative, double dropout_p, bool training) {
  TORCH_CHECK(q.size(-1) == k.size(-1), "queries and keys must have the same d_k, got ", q.sizes(), " and ",
              k.sizes());
  TORCH_CHECK(k.size(-2) == v.size(-2), "keys and values must have the same length, got ", k.sizes(), " and ",
              v.sizes());
  // Scaling q rather than the scores touches T*d_k numbers instead of T*S, and scales the
  // relative term the same way (Shaw et al. eq. 4 divides the whole sum by √d_k).
  auto qs = q * (1.0 / std::sqrt(static_cast<double>(q.size(-1))));
  auto scores = torch::matmul(qs, k.transpose(-2, -1));  // [..., T, S]
  torch::Tensor rel_index;
  if (relative) {
    // q·w^K_r for each of the 2k+1 distances, then pick each (i, j)'s distance: cheaper
    // than materialising a^K_ij as a [T, S, d_k] tensor.
    rel_index = relative->index.expand_as(scores);
    scores = scores + torch::matmul(qs, relative->keys.t()).gather(-1, rel_index);
  }
  auto weights = masked_softmax(scores, allowed);  // [..., T, S]
  auto attn = (dropout_p > 0 && training) ? torch::dropout(weights, dropout_p, /*train=*/true) : weights;
  auto out = torch::matmul(attn, v);  // [..., T, d_v]
  if (relative) {
    // Σ_j α_ij w^V_{r(i,j)} = Σ_r (Σ_{j: r(i,j)=r} α_ij) w^V_r: bucket the weights by distance.
    auto shape = attn.sizes().vec();
    shape.back() = relative->values.size(0);
    auto buckets = torch::zeros(shape, attn.options()).scatter_add(-1, rel_index, attn);
    out = out + torch::matmul(buckets, relative->values);
  }
  return {out, weights};
}

MultiHeadAttentionImpl::MultiHeadAttentionImpl(const MultiHeadAttentionOptions& o) : options_(o) {
  TORCH_CHECK(o.num_heads() >= 1 && o.d_model() % o.num_heads() == 0, "d_model (", o.d_model(),
              ") must be a multiple of num_heads (", o.num_heads(), ")");
  TORCH_CHECK(o.relative_k() >= 0, "relative_k must be >= 0, got ", o.relative_k());
  auto linear = [&](const char* name) {
    auto l = register_module(name, torch::nn::Linear(torch::nn::LinearOptions(o.d_model(), o.d_model()).bias(o.bias())));
    // torch::nn::MultiheadAttention's initialisation: Xavier-uniform weights, zero biases.
    torch::NoGradGuard ng;
    torch::nn::init::xavier_uniform_(l->weight);
    if (o.bias()) l->bias.zero_();
    return l;
  };
  W_Q = linear("W_Q");
  W_K = linear("W_K");
  W_V = linear("W_V");
  W_O = linear("W_O");
  if (o.relative_k() > 0) {
    const int64_t d_k = o.d_model() / o.num_heads();
    const double std = 1.0 / std::sqrt(static_cast<double>(d_k));
    relative_keys = register_parameter("relative_keys", torch::randn({2 * o.relative_k() + 1, d_k}) * std);
    relative_values = register_parameter("relative_values", torch::randn({2 * o.relative_k() + 1, d_k}) * std);
  }
}

torch::Tensor MultiHeadAttentionImpl::split_heads(const torch::Tensor& x) const {
  const int64_t H = options_.num_heads();
  return x.view({x.size(0), x.size(1), H, x.size(2) / H}).transpose(1, 2);
}

KeyValue MultiHeadAttentionImpl::project_key_value(const torch::Tensor& key, const torch::Tensor& value) {
  TORCH_CHECK(key.dim() == 3 && value.dim() == 3, "key and value must be [B, S, d_model], got ", key.sizes(),
              " and ", value.sizes());
  return {split_heads(nlpzoo::linear(key, W_K)), split_heads(nlpzoo::linear(value, W_V))};
}

AttentionOutput MultiHeadAttentionImpl::forward_projected(const torch::Tensor& query, const KeyValue& memory,
                                                          const torch::Tensor& allowed, bool need_weights,
                                                          int64_t query_offset) {
  TORCH_CHECK(query.dim() == 3 && query.size(2) == options_.d_model(), "query must be [B, T, ",
              options_.d_model(), "], got ", query.sizes());
  return attend(split_heads(nlpzoo::linear(query, W_Q)), memory, allowed, need_weights, query_offset);
}

AttentionOutput MultiHeadAttentionImpl::attend(const torch::Tensor& q, const KeyValue& memory,
                                               const torch::Tensor& allowed, bool need_weights, int64_t query_offset) {
  const int64_t B = q.size(0), T = q.size(2), S = memory.k.size(2);
  torch::Tensor mask = allowed;
  if (mask.defined()) {
    TORCH_CHECK(mask.dim() == 2 || mask.dim() == 3, "attention mask must be [T, S] or [B, T, S], got ",
                mask.sizes());
    if (mask.dim() == 3) mask = mask.unsqueeze(1);  // broadcast over heads
  }
  RelativePositions rel;
  if (options_.relative_k() > 0) {
    rel.index = relative_position_index(T, S, options_.relative_k(), query_offset, q.device());
    rel.keys = relative_keys;
    rel.values = relative_values;
  }
  auto [heads, weights] = scaled_dot_product_attention(q, memory.k, memory.v, mask,
                                                       options_.relative_k() > 0 ? &rel : nullptr,
                                                       options_.dropout(), is_training());
  AttentionOutput out;
  out.output = nlpzoo::linear(heads.transpose(1, 2).reshape({B, T, options_.d_model()}), W_O);  // Concat(heads) W_O
  if (need_weights) out.weights = weights;
  return out;
}

AttentionOutput MultiHeadAttentionImpl::forward(const torch::Tensor& query, const torch::Tensor& key,
                                                const torch::Tensor& value, const torch::Tensor& allowed,
                                                bool need_weights) {
  if (torch::GradMode::is_enabled() && query.is_same(key) && key.is_same(value)) {
    // Self-attention in training: one product with [W_Q; W_K; W_V] instead of three (and three
    // more in the backward pass); the same numbers, in fewer and larger GEMMs.
    TORCH_CHECK(query.dim() == 3 && query.size(2) == options_.d_model(), "query must be [B, T, ",
                options_.d_model(), "], got ", query.sizes());
    const auto weight = torch::cat({W_Q->weight, W_K->weight, W_V->weight});
    const auto bias = options_.bias() ? torch::cat({W_Q->bias, W_K->bias, W_V->bias}) : torch::Tensor();
    const auto qkv = torch::linear(query, weight, bias).chunk(3, -1);
    return attend(split_heads(qkv[0]), {split_heads(qkv[1]), split_heads(qkv[2])}, allowed, need_weights, 0);
  }
  return forward_projected(query, project_key_value(key, value), allowed, need_weights, 0);
}

AttentionOutput MultiHeadAttentionImpl::forward_incremental(const torch::Tensor& x, KeyValue& cache,
                                                            const torch::Tensor& allowed, bool need_weights) {
  const int64_t offset = cache.length();
  auto fresh = project_key_value(x, x);
  cache.k = cache.k.defined() ? torch::cat({cache.k, fresh.k}, 2) : fresh.k;
  cache.v = cache.v.defined() ? torch::cat({cache.v, fresh.v}, 2) : fresh.v;
  return forward_projected(x, cache, allowed, need_weights, offset);
}

}  // namespace nlpzoo
