#pragma once
// ELMo features (Peters et al. 2018, sec. 3.2): a task reads a pre-trained, frozen
// bidirectional LM (models/rnn/bilm.h) and mixes its L + 1 layer representations of each token
// with weights it learns:
//   ELMo_k = gamma * sum_j softmax(s)_j R_{k,j}      (AllenNLP's ScalarMix)
// s (L + 1 scalars, starting at 0: an even mix) and gamma (starting at 1) are the task's
// parameters; the biLM's stay fixed, and it reads in eval mode (no dropout) whatever mode the
// task trains in.
#include <torch/torch.h>

#include <vector>

#include "models/rnn/bilm.h"

namespace nlpzoo {

/// gamma * sum_j softmax(s)_j h_j over a fixed number of same-shaped tensors.
class ScalarMixImpl : public torch::nn::Module {
 public:
  explicit ScalarMixImpl(int64_t count);
  /// layers: `count` tensors of one shape -> that shape. Throws std::invalid_argument for
  /// another count.
  torch::Tensor forward(const std::vector<torch::Tensor>& layers);

  torch::Tensor scalar_parameters;  // s: [count]
  torch::Tensor gamma;              // [1]
};
TORCH_MODULE(ScalarMix);

class ElmoImpl : public torch::nn::Module {
 public:
  /// A frozen biLM of these options (its weights are loaded afterwards) and a mix of its
  /// num_layers + 1 representations.
  explicit ElmoImpl(const BiLanguageModelOptions& bilm_options);

  /// tokens: [B, T] int64, each row's n pieces then padding; lengths: [B] int64 (n). The biLM
  /// reads [CLS] pieces [SEP] (an <eos> between the sides of a pair as [SEP]); returns the mix
  /// at the pieces' positions, [B, T, 2d] (zeros past each row's n).
  torch::Tensor forward(const torch::Tensor& tokens, const torch::Tensor& lengths);

  /// The mix learns in training mode; the biLM stays in eval mode.
  void train(bool on = true) override;

  /// 2d: the width of a feature vector.
  int64_t dim() const { return 2 * bilm->options().embed_dim(); }

  BiLanguageModel bilm{nullptr};
  ScalarMix mix{nullptr};
};
TORCH_MODULE(Elmo);

/// [CLS] pieces [SEP] of each row, <eos> read as [SEP]: tokens [B, T] int64 and lengths [B] int64
/// -> [B, T + 2] int64 (padded with 0), the biLM's input layout.
torch::Tensor bilm_input(const torch::Tensor& tokens, const torch::Tensor& lengths);

}  // namespace nlpzoo
