#include "models/rnn/elmo.h"

#include <stdexcept>

#include "datasets/special_ids.h"
#include "models/classifier/pooling.h"  // length_mask

namespace nlpzoo {

ScalarMixImpl::ScalarMixImpl(int64_t count) {
  if (count <= 0) throw std::invalid_argument("ScalarMix: needs at least one layer");
  scalar_parameters = register_parameter("scalar_parameters", torch::zeros({count}));
  gamma = register_parameter("gamma", torch::ones({1}));
}

torch::Tensor ScalarMixImpl::forward(const std::vector<torch::Tensor>& layers) {
  if (static_cast<int64_t>(layers.size()) != scalar_parameters.size(0))
    throw std::invalid_argument("ScalarMix: expected " + std::to_string(scalar_parameters.size(0)) + " layers, got " +
                                std::to_string(layers.size()));
  const auto weights = torch::softmax(scalar_parameters, /*dim=*/0);  // [L + 1]
  auto mixed = weights[0] * layers[0];
  for (size_t j = 1; j < layers.size(); ++j) mixed = mixed + weights[j] * layers[j];
  return gamma * mixed;
}

ElmoImpl::ElmoImpl(const BiLanguageModelOptions& o) {
  bilm = register_module("bilm", BiLanguageModel(o));
  for (auto& p : bilm->parameters()) p.set_requires_grad(false);
  mix = register_module("mix", ScalarMix(o.num_layers() + 1));
  bilm->eval();
}

void ElmoImpl::train(bool on) {
  torch::nn::Module::train(on);
  bilm->eval();
}

torch::Tensor ElmoImpl::forward(const torch::Tensor& tokens, const torch::Tensor& lengths) {
  std::vector<torch::Tensor> layers;
  {
    torch::NoGradGuard frozen;
    for (auto& layer : bilm->layers(bilm_input(tokens, lengths), lengths + 2))
      layers.push_back(layer.narrow(1, 1, tokens.size(1)));  // the pieces' positions: [B, T, 2d]
  }
  const auto valid = length_mask(lengths, tokens.size(1));  // [B, T]
  return mix->forward(layers) * valid.unsqueeze(-1).to(layers[0].dtype());
}

torch::Tensor bilm_input(const torch::Tensor& tokens, const torch::Tensor& lengths) {
  const int64_t B = tokens.size(0), T = tokens.size(1);
  const auto pieces = tokens.masked_fill(~length_mask(lengths, T), kPadId).masked_fill(tokens == kEosId, kSepId);
  auto out = torch::full({B, T + 2}, kPadId, tokens.options());  // [B, T + 2]
  out.select(1, 0).fill_(kClsId);
  out.narrow(1, 1, T).copy_(pieces);
  out.scatter_(1, (lengths + 1).unsqueeze(1), kSepId);
  return out;
}

}  // namespace nlpzoo
