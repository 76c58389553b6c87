#include "models/transformer/gpt.h"

#include <cmath>
#include <string>

#include "core/io.h"
#include "models/linear.h"

namespace nlpzoo {

TransformerLayerOptions gpt_layer_options(const GptOptions& o) {
  return TransformerLayerOptions(o.d_model(), o.num_heads(), o.ffn_dim())
      .dropout(o.dropout())
      .attention_dropout(o.dropout())
      .activation(Activation::kGelu)
      .pre_norm(true);
}

GptImpl::GptImpl(const GptOptions& o) : options_(o) {
  TORCH_CHECK(o.vocab_size() > 0 && o.block_size() > 0 && o.num_layers() > 0, "GPT: sizes must be positive");
  token_embedding = register_module("token_embedding", torch::nn::Embedding(o.vocab_size(), o.d_model()));
  position_embedding = register_module("position_embedding", torch::nn::Embedding(o.block_size(), o.d_model()));
  dropout = register_module("dropout", torch::nn::Dropout(o.dropout()));
  blocks = register_module("blocks", TransformerEncoder(gpt_layer_options(o), o.num_layers()));

  torch::NoGradGuard no_grad;
  for (auto& p : named_parameters()) {
    if (p.value().dim() >= 2)
      p.value().normal_(0.0, 0.02);
    else if (p.key().find("norm") == std::string::npos)
      p.value().zero_();  // biases; LayerNorm keeps its 1 and 0
  }
  const double residual_std = 0.02 / std::sqrt(2.0 * o.num_layers());
  for (auto& layer : blocks->typed_layers) {
    layer->self_attn->W_O->weight.normal_(0.0, residual_std);
    layer->ffn->linear2->weight.normal_(0.0, residual_std);
  }
}

torch::Tensor GptImpl::forward(const torch::Tensor& tokens) {
  const int64_t T = tokens.size(1);
  if (T > options_.block_size())
    throw UserError("GPT: " + std::to_string(T) + " tokens exceed the context of block_size = " +
                    std::to_string(options_.block_size()));
  const auto positions = torch::arange(T, tokens.options());
  auto x = dropout(token_embedding(tokens) + position_embedding(positions));
  auto h = blocks(x, causal_mask(T, T, 0, tokens.device()));
  return nlpzoo::linear(h, token_embedding->weight);  // tied output layer, no bias (GPT-2)
}

torch::Tensor GptImpl::cached_logits(const torch::Tensor& tokens, std::vector<KeyValue>& caches) {
  const int64_t t = caches[0].length(), T = tokens.size(1);
  const auto positions = torch::arange(t, t + T, tokens.options());
  auto x = dropout(token_embedding(tokens) + position_embedding(positions));
  return nlpzoo::linear(blocks->step(x, caches), token_embedding->weight);
}

namespace {
CausalStep pack(const torch::Tensor& logits, const std::vector<KeyValue>& caches, const torch::Tensor& tokens) {
  CausalStep out;
  out.logits = logits[0][-1];  // [V]
  for (size_t l = 0; l < caches.size(); ++l) {
    out.state.tensors["k" + std::to_string(l)] = caches[l].k;
    out.state.tensors["v" + std::to_string(l)] = caches[l].v;
  }
  out.state.tensors["tokens"] = tokens;
  return out;
}
}  // namespace

CausalStep GptImpl::read(const std::vector<int64_t>& tokens) {
  const auto ids = torch::tensor(tokens, torch::kLong);
  std::vector<KeyValue> caches(options_.num_layers());
  const auto logits = cached_logits(ids.to(token_embedding->weight.device()).view({1, -1}), caches);
  return pack(logits, caches, ids);
}

CausalStep GptImpl::begin(const std::vector<int64_t>& tokens) {
  TORCH_CHECK(!tokens.empty(), "CausalDecoder::begin needs at least one token");
  const int64_t keep = options_.block_size();
  if (static_cast<int64_t>(tokens.size()) <= keep) return read(tokens);
  return read(std::vector<int64_t>(tokens.end() - keep, tokens.end()));
}

CausalStep GptImpl::step(const CausalState& state, int64_t token) {
  const auto& read_so_far = state.tensors.at("tokens");
  const int64_t t = read_so_far.size(0);
  if (t >= options_.block_size()) {
    // No position is left: start again from the recent half of the context.
    const int64_t keep = recent_context() - 1;
    const auto* ids = read_so_far.data_ptr<int64_t>();
    std::vector<int64_t> recent(ids + t - keep, ids + t);
    recent.push_back(token);
    return read(recent);
  }
  std::vector<KeyValue> caches(options_.num_layers());
  for (size_t l = 0; l < caches.size(); ++l)
    caches[l] = {state.tensors.at("k" + std::to_string(l)), state.tensors.at("v" + std::to_string(l))};
  const auto input = torch::full({1, 1}, token, torch::TensorOptions(torch::kLong).device(token_embedding->weight.device()));
  const auto logits = cached_logits(input, caches);
  return pack(logits, caches, torch::cat({read_so_far, torch::tensor({token}, torch::kLong)}));
}

torch::Tensor GptImpl::sequence_logits(const std::vector<int64_t>& tokens) {
  const auto input = torch::tensor(tokens, torch::TensorOptions(torch::kLong).device(token_embedding->weight.device()));
  const int64_t n = input.size(0), block = options_.block_size(), keep = recent_context() - 1;
  // Windows as step() reads them: each one after the first starts `keep` tokens before its
  // first new row.
  std::vector<torch::Tensor> rows;
  for (int64_t start = 0, first = 0;;) {
    const int64_t length = std::min(block, n - start);
    rows.push_back(forward(input.slice(0, start, start + length).view({1, -1}))[0].slice(0, first));
    if (start + length >= n) break;
    start += length - keep;
    first = keep;
  }
  return torch::cat(rows);  // [T, V]
}

}  // namespace nlpzoo
