#include "models/transformer/layers.h"

#include "core/enum_names.h"
#include "models/linear.h"

#include <stdexcept>

namespace nlpzoo {

Activation parse_activation(const std::string& name) { return parse_enum(name, kActivationNames, "activation"); }

std::string to_string(Activation activation) { return enum_name(activation, kActivationNames); }

namespace {
torch::nn::Linear xavier_linear(int64_t in, int64_t out) {
  torch::nn::Linear l(in, out);
  torch::NoGradGuard ng;
  torch::nn::init::xavier_uniform_(l->weight);
  l->bias.zero_();
  return l;
}

MultiHeadAttentionOptions attention_options(const TransformerLayerOptions& o, bool self) {
  return MultiHeadAttentionOptions(o.d_model(), o.num_heads())
      .dropout(o.attention_dropout())
      .relative_k(self ? o.relative_k() : 0);
}

torch::nn::LayerNorm layer_norm(const TransformerLayerOptions& o) {
  return torch::nn::LayerNorm(torch::nn::LayerNormOptions({o.d_model()}).eps(o.layer_norm_eps()));
}

// The residual + LayerNorm wrapper, in either order.
template <class F>
torch::Tensor sublayer(const torch::Tensor& x, bool pre_norm, torch::nn::LayerNorm& norm,
                       torch::nn::Dropout& dropout, F&& f) {
  if (pre_norm) return x + dropout(f(norm(x)));
  return norm(x + dropout(f(x)));
}
}  // namespace

PositionwiseFeedForwardImpl::PositionwiseFeedForwardImpl(int64_t d_model, int64_t ffn_dim, Activation activation)
    : activation_(activation) {
  linear1 = register_module("linear1", xavier_linear(d_model, ffn_dim));
  linear2 = register_module("linear2", xavier_linear(ffn_dim, d_model));
}

torch::Tensor PositionwiseFeedForwardImpl::forward(const torch::Tensor& x) {
  auto h = nlpzoo::linear(x, linear1);
  h = activation_ == Activation::kGelu ? torch::gelu(h) : torch::relu(h);
  return nlpzoo::linear(h, linear2);
}

TransformerEncoderLayerImpl::TransformerEncoderLayerImpl(const TransformerLayerOptions& o) : options_(o) {
  self_attn = register_module("self_attn", MultiHeadAttention(attention_options(o, /*self=*/true)));
  ffn = register_module("ffn", PositionwiseFeedForward(o.d_model(), o.ffn_dim(), o.activation()));
  norm1 = register_module("norm1", layer_norm(o));
  norm2 = register_module("norm2", layer_norm(o));
  dropout = register_module("dropout", torch::nn::Dropout(o.dropout()));
}

torch::Tensor TransformerEncoderLayerImpl::forward(const torch::Tensor& x, const torch::Tensor& allowed) {
  const bool pre = options_.pre_norm();
  auto h = sublayer(x, pre, norm1, dropout,
                    [&](const torch::Tensor& y) { return self_attn(y, y, y, allowed).output; });
  return sublayer(h, pre, norm2, dropout, [&](const torch::Tensor& y) { return ffn(y); });
}

torch::Tensor TransformerEncoderLayerImpl::step(const torch::Tensor& x, KeyValue& cache, const torch::Tensor& allowed) {
  const bool pre = options_.pre_norm();
  auto h = sublayer(x, pre, norm1, dropout, [&](const torch::Tensor& y) {
    return self_attn->forward_incremental(y, cache, allowed).output;
  });
  return sublayer(h, pre, norm2, dropout, [&](const torch::Tensor& y) { return ffn(y); });
}

TransformerDecoderLayerImpl::TransformerDecoderLayerImpl(const TransformerLayerOptions& o) : options_(o) {
  self_attn = register_module("self_attn", MultiHeadAttention(attention_options(o, /*self=*/true)));
  cross_attn = register_module("cross_attn", MultiHeadAttention(attention_options(o, /*self=*/false)));
  ffn = register_module("ffn", PositionwiseFeedForward(o.d_model(), o.ffn_dim(), o.activation()));
  norm1 = register_module("norm1", layer_norm(o));
  norm2 = register_module("norm2", layer_norm(o));
  norm3 = register_module("norm3", layer_norm(o));
  dropout = register_module("dropout", torch::nn::Dropout(o.dropout()));
}

DecoderLayerOutput TransformerDecoderLayerImpl::forward(const torch::Tensor& x, const torch::Tensor& memory,
                                                        const torch::Tensor& self_allowed,
                                                        const torch::Tensor& memory_allowed, bool need_weights) {
  const bool pre = options_.pre_norm();
  DecoderLayerOutput out;
  auto h = sublayer(x, pre, norm1, dropout,
                    [&](const torch::Tensor& y) { return self_attn(y, y, y, self_allowed).output; });
  h = sublayer(h, pre, norm2, dropout, [&](const torch::Tensor& y) {
    auto a = cross_attn(y, memory, memory, memory_allowed, need_weights);
    out.cross_weights = a.weights;
    return a.output;
  });
  out.output = sublayer(h, pre, norm3, dropout, [&](const torch::Tensor& y) { return ffn(y); });
  return out;
}

DecoderLayerOutput TransformerDecoderLayerImpl::step(const torch::Tensor& x, KeyValue& self_cache,
                                                     const KeyValue& memory, const torch::Tensor& memory_allowed,
                                                     bool need_weights, const torch::Tensor& self_allowed) {
  const bool pre = options_.pre_norm();
  DecoderLayerOutput out;
  auto h = sublayer(x, pre, norm1, dropout, [&](const torch::Tensor& y) {
    return self_attn->forward_incremental(y, self_cache, self_allowed).output;
  });
  h = sublayer(h, pre, norm2, dropout, [&](const torch::Tensor& y) {
    auto a = cross_attn->forward_projected(y, memory, memory_allowed, need_weights);
    out.cross_weights = a.weights;
    return a.output;
  });
  out.output = sublayer(h, pre, norm3, dropout, [&](const torch::Tensor& y) { return ffn(y); });
  return out;
}

TransformerEncoderImpl::TransformerEncoderImpl(const TransformerLayerOptions& o, int64_t num_layers) {
  TORCH_CHECK(num_layers >= 1, "an encoder needs at least one layer, got ", num_layers);
  layers = register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < num_layers; ++i) {
    typed_layers.emplace_back(o);
    layers->push_back(typed_layers.back());
  }
  if (o.pre_norm()) final_norm = register_module("final_norm", layer_norm(o));
}

torch::Tensor TransformerEncoderImpl::forward(const torch::Tensor& x, const torch::Tensor& allowed) {
  auto h = x;
  for (auto& layer : typed_layers) h = layer(h, allowed);
  // Pre-LN leaves the residual stream unnormalised; the final LayerNorm restores the scale
  // the next consumer (decoder attention, output projection) expects.
  return final_norm ? final_norm(h) : h;
}

torch::Tensor TransformerEncoderImpl::step(const torch::Tensor& x, std::vector<KeyValue>& caches) {
  TORCH_CHECK(caches.size() == typed_layers.size(), "encoder step needs one cache per layer (", typed_layers.size(),
              "), got ", caches.size());
  const int64_t T = x.size(1), t = caches[0].length();
  auto allowed = T > 1 ? causal_mask(T, t + T, t, x.device()) : torch::Tensor();
  auto h = x;
  for (size_t l = 0; l < typed_layers.size(); ++l) h = typed_layers[l]->step(h, caches[l], allowed);
  return final_norm ? final_norm(h) : h;
}

TransformerDecoderImpl::TransformerDecoderImpl(const TransformerLayerOptions& o, int64_t num_layers) {
  TORCH_CHECK(num_layers >= 1, "a decoder needs at least one layer, got ", num_layers);
  layers = register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < num_layers; ++i) {
    typed_layers.emplace_back(o);
    layers->push_back(typed_layers.back());
  }
  if (o.pre_norm()) final_norm = register_module("final_norm", layer_norm(o));
}

DecoderLayerOutput TransformerDecoderImpl::forward(const torch::Tensor& x, const torch::Tensor& memory,
                                                   const torch::Tensor& memory_allowed, bool need_weights) {
  auto self_allowed = causal_mask(x.size(1), x.size(1), 0, x.device());
  DecoderLayerOutput out;
  auto h = x;
  for (size_t l = 0; l < typed_layers.size(); ++l) {
    const bool last = l + 1 == typed_layers.size();
    auto o = typed_layers[l](h, memory, self_allowed, memory_allowed, need_weights && last);
    h = o.output;
    if (last) out.cross_weights = o.cross_weights;
  }
  out.output = final_norm ? final_norm(h) : h;
  return out;
}

std::vector<KeyValue> TransformerDecoderImpl::project_memory(const torch::Tensor& memory) {
  std::vector<KeyValue> kv;
  kv.reserve(typed_layers.size());
  for (auto& layer : typed_layers) kv.push_back(layer->cross_attn->project_key_value(memory, memory));
  return kv;
}

DecoderLayerOutput TransformerDecoderImpl::step(const torch::Tensor& x, std::vector<KeyValue>& self_caches,
                                                const std::vector<KeyValue>& memory,
                                                const torch::Tensor& memory_allowed, bool need_weights) {
  TORCH_CHECK(self_caches.size() == typed_layers.size() && memory.size() == typed_layers.size(),
              "decoder step needs one self cache and one memory per layer (", typed_layers.size(), "), got ",
              self_caches.size(), " and ", memory.size());
  const int64_t T = x.size(1), t = self_caches[0].length();
  // One new position sees every cached one; several at once need the look-ahead mask.
  auto self_allowed = T > 1 ? causal_mask(T, t + T, t, x.device()) : torch::Tensor();
  DecoderLayerOutput out;
  auto h = x;
  for (size_t l = 0; l < typed_layers.size(); ++l) {
    const bool last = l + 1 == typed_layers.size();
    auto o = typed_layers[l]->step(h, self_caches[l], memory[l], memory_allowed, need_weights && last, self_allowed);
    h = o.output;
    if (last) out.cross_weights = o.cross_weights;
  }
  out.output = final_norm ? final_norm(h) : h;
  return out;
}

}  // namespace nlpzoo
