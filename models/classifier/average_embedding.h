#pragma once
// The course's baseline sentence classifier: the sentence is the average of its word
// embeddings (a neural bag of words, as in Iyyer et al. 2015's DAN without hidden layers
// and fastText's classifier, Joulin et al. 2017), fed to a linear layer:
//   s = (1/n) sum_{t=1..n} E x_t   over the n real tokens (padding excluded);
//   logits = W_o dropout(s) + b_o.
#include "models/classifier/text_classifier.h"

namespace nlpzoo {

class AverageEmbeddingClassifierImpl : public TextClassifierImpl {
 public:
  /// Uses vocab_size, num_classes, embed_dim, pad_id, dropout, freeze_embeddings; the RNN
  /// fields are ignored. Throws std::invalid_argument as TextClassifierImpl does.
  explicit AverageEmbeddingClassifierImpl(const ClassifierOptions& options);

  /// tokens: [B, T] int64 -> s: [B, embed_dim] float.
  torch::Tensor encode(const torch::Tensor& tokens) override;
};
TORCH_MODULE(AverageEmbeddingClassifier);

}  // namespace nlpzoo
