#include "models/seq2seq/attention.h"

#include <stdexcept>

#include "core/enum_names.h"
#include "models/linear.h"
#include "models/masked_softmax.h"

namespace nlpzoo {

AttentionType parse_attention_type(const std::string& name) { return parse_enum(name, kAttentionNames, "attention"); }

std::string to_string(AttentionType type) { return enum_name(type, kAttentionNames); }

std::tuple<torch::Tensor, torch::Tensor> masked_attention(const torch::Tensor& scores,
                                                           const torch::Tensor& mask,
                                                           const torch::Tensor& values) {
  auto weights = masked_softmax(scores, mask.unsqueeze(1));  // [B, T, S]; mask [B, 1, S]
  auto context = torch::bmm(weights, values);                // [B, T, K]
  return {context, weights};
}

AdditiveAttentionImpl::AdditiveAttentionImpl(int64_t query_dim, int64_t key_dim, int64_t attention_dim) {
  W_s = register_module("W_s", torch::nn::Linear(torch::nn::LinearOptions(query_dim, attention_dim).bias(false)));
  W_h = register_module("W_h", torch::nn::Linear(key_dim, attention_dim));
  v = register_module("v", torch::nn::Linear(torch::nn::LinearOptions(attention_dim, 1).bias(false)));
}

torch::Tensor AdditiveAttentionImpl::project_keys(const torch::Tensor& keys) { return W_h(keys); }

torch::Tensor AdditiveAttentionImpl::score(const torch::Tensor& queries, const torch::Tensor& projected) {
  // In place: the largest tensor of a decoding step, made once instead of twice.
  auto e = (nlpzoo::linear(queries, W_s).unsqueeze(2) + projected.unsqueeze(1)).tanh_();  // [B, T, S, A]
  return v(e).squeeze(-1);                                                 // [B, T, S]
}

torch::Tensor DotAttentionImpl::score(const torch::Tensor& queries, const torch::Tensor& projected) {
  return torch::bmm(queries, projected.transpose(1, 2));      // [B, T, S]
}

GeneralAttentionImpl::GeneralAttentionImpl(int64_t query_dim, int64_t key_dim) {
  W = register_module("W", torch::nn::Linear(torch::nn::LinearOptions(key_dim, query_dim).bias(false)));
}

torch::Tensor GeneralAttentionImpl::project_keys(const torch::Tensor& keys) { return W(keys); }

torch::Tensor GeneralAttentionImpl::score(const torch::Tensor& queries, const torch::Tensor& projected) {
  return torch::bmm(queries, projected.transpose(1, 2));      // [B, T, S]
}

std::shared_ptr<AttentionScoreImpl> make_attention(AttentionType type, int64_t query_dim,
                                                   int64_t key_dim, int64_t attention_dim) {
  switch (type) {
    case AttentionType::kNone: return nullptr;
    case AttentionType::kAdditive:
      return std::make_shared<AdditiveAttentionImpl>(query_dim, key_dim, attention_dim);
    case AttentionType::kDot:
      if (query_dim != key_dim)
        throw std::invalid_argument("dot attention needs the decoder hidden_size (" + std::to_string(query_dim) +
                                    ") to equal the encoder output size (" + std::to_string(key_dim) +
                                    "); use general attention or change the sizes");
      return std::make_shared<DotAttentionImpl>();
    case AttentionType::kGeneral: return std::make_shared<GeneralAttentionImpl>(query_dim, key_dim);
  }
  return nullptr;
}

}  // namespace nlpzoo
