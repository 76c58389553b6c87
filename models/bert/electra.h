#pragma once
// ELECTRA (Clark et al. 2020, "ELECTRA: Pre-training Text Encoders as Discriminators Rather
// Than Generators"): replaced-token detection.
//   generator G (sec. 2): a small masked LM on the masked input x^masked,
//                     p_G(x_t | x^masked) = softmax(LayerNorm(GELU(W h^G_t + b)) E_tokenᵀ + b_V),
//                     h^G = TransformerEncoder_G(W_proj E(x^masked)), its width d_model / divisor
//                     (sec. 3.2: a generator 1/4-1/2 the discriminator's size works best)
//   corruption:       x^corrupt_t = x̂_t ~ p_G(x_t | x^masked) at the masked positions (sampled,
//                     no gradient flows back through the sample; the padding id, never a
//                     target, is left out of the proposal), x_t elsewhere
//   discriminator D:  a BERT encoder over x^corrupt (models/bert/bert.h BertModel), then
//                     D(x^corrupt, t) = sigmoid(w_2ᵀ GELU(W_1 h^D_t + b_1) + b_2), the probability
//                     that x^corrupt_t was replaced (label 0 when x̂_t = x_t: a sampled original
//                     counts as original)
// Embedding sharing (sec. 3.2, and ELECTRA's reference code): the generator uses the
// discriminator's token, position and segment embeddings and their LayerNorm, and when its
// hidden size differs projects the embedding (dense, "embeddings_project") to it; its output
// layer is the shared token table again (dense to the embedding width first).
// The losses (MLM + λ·BCE) are the task's (train/tasks/electra_task.h).
#include <torch/torch.h>

#include "models/bert/bert.h"

namespace nlpzoo {

/// The generator's sizes for a discriminator of `discriminator`'s: d_model, num_heads and
/// ffn_dim divided by `divisor` (heads and ffn_dim at least 1), depth, positions, vocabulary
/// and dropout the same (ELECTRA's get_generator_config). Throws c10::Error when divisor < 1,
/// d_model is not a multiple of divisor or the generator's d_model not of its heads.
BertOptions electra_generator_options(const BertOptions& discriminator, int64_t divisor);

/// ELECTRA's generator_predictions: dense hidden -> embedding width, GELU, LayerNorm, then the
/// tied output projection onto the shared token table (passed in, as BertMlmHead takes it).
/// Children: dense, norm; parameter bias [vocab].
class ElectraGeneratorHeadImpl : public torch::nn::Module {
 public:
  ElectraGeneratorHeadImpl(int64_t hidden_size, int64_t embedding_size, int64_t vocab_size, double layer_norm_eps);
  /// hidden: [N, H_G]; embedding: [vocab, E]. Returns logits [N, vocab].
  torch::Tensor forward(const torch::Tensor& hidden, const torch::Tensor& embedding);

  torch::nn::Linear dense{nullptr};
  torch::nn::LayerNorm norm{nullptr};
  torch::Tensor bias;
};
TORCH_MODULE(ElectraGeneratorHead);

/// The generator: a masked LM over the discriminator's embeddings. Children: embeddings_project
/// (Linear E -> H_G, only when they differ), encoder (TransformerEncoder of the generator's
/// sizes), predictions (ElectraGeneratorHead). `embeddings` is the discriminator's module, held
/// but not registered, so its parameters exist once (under the discriminator's names) and one
/// optimizer update moves both models' embeddings.
class ElectraGeneratorImpl : public torch::nn::Module {
 public:
  /// options: the generator's sizes (electra_generator_options); embeddings: the shared module.
  ElectraGeneratorImpl(const BertOptions& options, BertEmbeddings embeddings);
  /// tokens, segments: [B, S] as BertModel; masked: [B, S] bool. Logits at the masked positions
  /// only, [N, vocab] in row-major (b, t) order.
  torch::Tensor forward(const torch::Tensor& tokens, const torch::Tensor& segments, const torch::Tensor& masked);
  /// Logits at every position: [B, S, vocab].
  torch::Tensor mlm_all(const torch::Tensor& tokens, const torch::Tensor& segments = {});
  const BertOptions& options() const { return options_; }

  BertEmbeddings embeddings{nullptr};  // shared, not registered
  torch::nn::Linear embeddings_project{nullptr};
  TransformerEncoder encoder{nullptr};
  ElectraGeneratorHead predictions{nullptr};

 private:
  torch::Tensor hidden(const torch::Tensor& tokens, const torch::Tensor& segments);  // [B, S, H_G]
  BertOptions options_;
};
TORCH_MODULE(ElectraGenerator);

/// ELECTRA's discriminator_predictions: dense H -> H, GELU, dense H -> 1. Children: dense, output.
class ElectraDiscriminatorHeadImpl : public torch::nn::Module {
 public:
  explicit ElectraDiscriminatorHeadImpl(int64_t d_model);
  /// hidden: [..., H] -> logits [...] (the log-odds that the token was replaced).
  torch::Tensor forward(const torch::Tensor& hidden);
  torch::nn::Linear dense{nullptr}, output{nullptr};
};
TORCH_MODULE(ElectraDiscriminatorHead);

/// x̂ ~ softmax(logits) by inversion: the first id whose cumulative probability exceeds
/// uniform · (the row's total). logits: [N, V] (any float type; computed in float32), uniform:
/// [N] in [0, 1). Returns [N] int64. No gradient (an id is not differentiable).
torch::Tensor sample_from_softmax(const torch::Tensor& logits, const torch::Tensor& uniform);

/// The corruption of a masked input by a sample: x^corrupt (the masked positions take the
/// sample, the rest stay) and the discriminator's labels, replaced = x^corrupt != x (a sampled
/// original counts as original, label 0).
struct ReplacedTokens {
  torch::Tensor corrupted;  // [B, S] int64
  torch::Tensor replaced;   // [B, S] bool
};
/// tokens: [B, S] the masked input; masked: [B, S] bool; sampled, targets: [N] the sample and
/// the original ids at the masked positions, in row-major order.
ReplacedTokens replace_tokens(const torch::Tensor& tokens, const torch::Tensor& masked, const torch::Tensor& sampled,
                              const torch::Tensor& targets);

/// What ELECTRA computes for a batch.
struct ElectraOutput {
  torch::Tensor mlm_logits;   // [N, vocab] float: the generator's, at the masked positions
  torch::Tensor sampled;      // [N] int64: x̂, drawn without gradient
  torch::Tensor corrupted;    // [B, S] int64: the discriminator's input x^corrupt
  torch::Tensor replaced;     // [B, S] bool: x^corrupt_t != x_t (the discriminator's labels)
  torch::Tensor disc_logits;  // [B, S] float: the discriminator's log-odds of "replaced"
};

/// ELECTRA for pre-training. Children: bert (the discriminator's BertModel, the encoder that
/// fine-tuning loads; its names "bert.*" are BertForSequenceClassification's), generator,
/// discriminator_predictions.
class ElectraForPreTrainingImpl : public torch::nn::Module {
 public:
  /// options: the discriminator's sizes; the generator's are electra_generator_options(options,
  /// generator_size_divisor). Throws c10::Error for inconsistent sizes.
  ElectraForPreTrainingImpl(const BertOptions& options, int64_t generator_size_divisor);
  /// tokens: [B, S] the masked input x^masked; segments: [B, S] or undefined; masked: [B, S]
  /// bool; targets: [N] the original ids at the masked positions (row-major); uniform: [N] the
  /// draws that sample_from_softmax turns into x̂.
  ElectraOutput forward(const torch::Tensor& tokens, const torch::Tensor& segments, const torch::Tensor& masked,
                        const torch::Tensor& targets, const torch::Tensor& uniform);

  BertModel bert{nullptr};
  ElectraGenerator generator{nullptr};
  ElectraDiscriminatorHead discriminator_predictions{nullptr};
};
TORCH_MODULE(ElectraForPreTraining);

}  // namespace nlpzoo
