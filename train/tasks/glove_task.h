#pragma once
// GloveTask: GloVe word vectors (Pennington, Socher & Manning 2014; models/embeddings/glove.h)
// fitted by AdaGrad to a corpus's co-occurrence counts, on the shared Trainer.
//
// Data: as the word2vec task (train/tasks/word_corpus.h): <data_dir>/<train_file>, one
// sentence per line; line i with (i + 1) % valid_every == 0 is held out; the vocabulary (the
// train split's words seen min_count times) goes to <run_dir>/vocab.txt and into every
// checkpoint, so a checkpoint alone rebuilds the model without counting anything.
//
// Co-occurrences: setup counts X over the train split with a symmetric window of `window`
// words weighted 1/d (datasets/cooccurrence.h) and prints its size and time. An epoch visits
// every non-zero entry (i, j, X_ij) once, in the order of a stride permutation drawn from
// (seed, epoch) (stride_permutation), cut into batches of batch_size entries; the same
// (epoch, index) is always the same batch, so a resumed run continues exactly.
//
// Loss and units: each batch's loss is ½ Σ f(X_ij)(w_iᵀw̃_j + b_i + b̃_j − log X_ij)² over its
// entries (glove.c's cost); Batch::num_tokens is the number of entries, so the Trainer's loss
// is glove.c's printed cost per entry. The gradient is the batch's sum (kSum): AdaGrad
// (Duchi et al. 2011; the paper's §4.2 optimiser, torch::optim::Adagrad, which handles the
// embeddings' sparse gradients) scales each coordinate by its own history anyway; glove.c
// starts that history at 1 (adagrad_initial_accumulator = 1) with lr 0.05.
//
// Validation: GloVe has no held-out objective, so the valid loss is the same weighted loss per
// entry on the co-occurrences of the held-out lines, their counts scaled by (train words /
// valid words) so that they estimate the train split's X_ij: how well the model predicts the
// log co-occurrences of text it has not seen.
#include <map>
#include <string>

#include "datasets/cooccurrence.h"
#include "models/embeddings/glove.h"
#include "train/task.h"
#include "train/tasks/word_corpus.h"
#include "train/tasks/word_vector_source.h"

namespace nlpzoo {

/// The GloVe task's config keys: dim, window, x_max, alpha, min_count, batch_size, train_file,
/// valid_every, shuffle.
ConfigSchema glove_schema();

class GloveTask : public Task, public WordVectorSource {
 public:
  /// Throws UserError naming the key for a bad value (before reading the corpus), naming the
  /// file when it is missing, empty, has no word seen min_count times or no held-out line.
  void setup(Config& config, const TaskContext& context) override;
  std::shared_ptr<torch::nn::Module> model() override { return model_.ptr(); }
  /// ceil(nnz / batch_size) for the split's co-occurrences.
  int64_t num_batches(Split split, int64_t epoch) override;
  /// Tensors "rows" [N] int64, "cols" [N] int64 (word ids i, j), "x" [N] float32 (X_ij);
  /// num_examples = num_tokens = N <= batch_size. Throws std::out_of_range for a bad index.
  Batch make_batch(Split split, int64_t epoch, int64_t index) override;
  /// ½ Σ f(x)(w_iᵀw̃_j + b_i + b̃_j − log x)² over the batch; num_tokens = its entries.
  LossOutput loss(const Batch& batch) override;
  GradientReduction gradient_reduction() const override { return GradientReduction::kSum; }
  /// "vocab.txt": the vocabulary (WordVocabulary::to_text).
  std::map<std::string, std::string> artifacts() const override;
  void restore_artifacts(const std::map<std::string, std::string>& blobs) override;

  /// W + W̃ ([V, dim] float32, CPU copy) with their words, most frequent first (paper §4.2).
  WordVectors word_vectors() const override;

  GloveImpl& glove() { return *model_; }
  const WordVocabulary& vocabulary() const { return vocab_; }
  /// The split's co-occurrences (valid: scaled as above). Throws UserError if not loaded.
  const Cooccurrences& cooccurrences(Split split) const;

 private:
  Glove model_{nullptr};
  WordVocabulary vocab_;
  std::string restored_vocab_;  // the checkpoint's vocabulary text ("" when training anew)
  std::map<Split, Cooccurrences> splits_;
  int64_t batch_size_ = 100000, seed_ = 0;
  bool shuffle_ = true;
};

}  // namespace nlpzoo
