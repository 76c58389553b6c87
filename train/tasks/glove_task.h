#pragma once
// GloveTask: GloVe word vectors (Pennington, Socher & Manning 2014; models/embeddings/glove.h)
// fitted by AdaGrad to a corpus's co-occurrence counts, on the shared Trainer.
//
// Data: as the word2vec task (train/tasks/word_corpus.h): <data_dir>/<train_file>, one
// sentence per line; the vocabulary (the words seen min_count times in the lines other than
// every valid_every-th) goes to <run_dir>/vocab.txt and into every checkpoint, so a checkpoint
// alone rebuilds the model without counting anything.
//
// Co-occurrences: setup counts X over all the lines with a symmetric window of `window` words
// weighted 1/d (datasets/cooccurrence.h) and prints its size and time. An epoch visits every
// train entry (i, j, X_ij) once, in the order of a stride permutation drawn from (seed, epoch)
// (stride_permutation), cut into batches of batch_size entries; the same (epoch, index) is
// always the same batch, so a resumed run continues exactly.
//
// Validation: GloVe has no held-out objective of its own. Holding out lines does not give one:
// the few co-occurrences of 1/500 of the text are a noisy, upward-biased sample (only pairs
// that occur are entries), and on the English corpus their weighted loss, even scaled to the
// train split's size, rose from the first epoch on while the analogies improved. So the valid
// split is a set of held-out matrix entries instead: the word pairs {i, j} with
// held_out_pair(i, j, valid_every) (both X_ij and X_ji) are left out of training, and the
// valid loss is the same weighted loss per entry on them: how well w_iᵀw̃_j + b_i + b̃_j
// predicts log X_ij for pairs the model never fitted.
//
// Loss and units: each batch's loss is ½ Σ f(X_ij)(w_iᵀw̃_j + b_i + b̃_j − log X_ij)² over its
// entries (glove.c's cost); Batch::num_tokens is the number of entries, so the Trainer's loss
// is glove.c's printed cost per entry.
//
// Training (inplace_adagrad = true, the default): AdaGrad (Duchi et al. 2011; the paper's §4.2
// optimiser) steps once per entry, in the batch's order, in place, with torch::get_num_threads()
// threads sharing the tables without locks, as glove.c does (models/embeddings/glove_sgd.h: the
// step divides by the accumulator before adding this entry's g², glove.c's order; the
// accumulators start at adagrad_initial_accumulator and are buffers of the model, so checkpoints
// keep them). It uses lr (the schedule's rate) and adagrad_initial_accumulator; the torch
// optimizer the Trainer builds stays idle. The batch size then only sets how often the Trainer
// logs and checks time. One difference from glove.c remains: it accumulates (lr g)² where this
// accumulates g² (Duchi et al.); lr' = 1 with accumulator a0 / lr² reproduces glove.c's update.
//
// inplace_adagrad = false keeps the autograd path as the reference: the batch's gradient is
// summed (kSum) and torch::optim::Adagrad, which handles the embeddings' sparse gradients, steps
// once per batch, so a frequent word takes one step per batch instead of one per entry, and
// LibTorch adds g² to the history before dividing.
#include <map>
#include <string>

#include "datasets/cooccurrence.h"
#include "models/embeddings/glove.h"
#include "train/task.h"
#include "train/tasks/word_corpus.h"
#include "train/tasks/word_vector_task.h"

namespace nlpzoo {

/// Whether the word pair {i, j} belongs to the valid split: a hash of the unordered pair is
/// divisible by valid_every (>= 1), so about 1 pair in valid_every is held out.
bool held_out_pair(int32_t i, int32_t j, int64_t valid_every);

/// The GloVe task's config keys. (seed and adagrad_initial_accumulator are the Trainer's.)
struct GloveTaskOptions {
  int64_t dim = 100;
  int64_t window = 10;
  double x_max = 100;
  double alpha = 0.75;
  WordCorpusOptions corpus{"glove", "english.txt", 5, 100};
  int64_t batch_size = 100000;
  bool inplace_adagrad = true;
  bool shuffle = true;
  void bind(OptionBinder& b);
};
ConfigSchema glove_schema();

class GloveTask : public WordVectorTask {
 public:
  /// Throws UserError naming the key for a bad value (before reading the corpus), naming the
  /// file when it is missing, empty, has no word seen min_count times, or leaves a split empty.
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
  /// inplace_adagrad: the Trainer calls train_in_place instead of loss + backward + optimizer.
  bool updates_in_place() const override { return in_place_; }
  /// One AdaGrad step per entry in the batch's order, in place, torch::get_num_threads() Hogwild
  /// threads (glove_adagrad); loss_sum: float64 scalar, the entries' summed loss each just before
  /// its own step; num_tokens = the entries.
  LossOutput train_in_place(const Batch& batch, double lr) override;
  /// Unit "entries", no perplexity; sparse gradients need optimizer = adagrad (the paper's) or sgd.
  TrainingProfile training_profile() const override;
  /// "vocab.txt": the vocabulary (WordVocabulary::to_text).
  std::map<std::string, std::string> artifacts() const override;
  void restore_artifacts(const std::map<std::string, std::string>& blobs) override;

  /// W + W̃ ([V, dim] float32, CPU copy) with their words, most frequent first (paper §4.2).
  WordVectors word_vectors() const override;

  GloveImpl& glove() { return *model_; }
  const WordVocabulary& vocabulary() const { return vocab_; }
  /// The split's co-occurrence entries. Throws UserError if not loaded.
  const Cooccurrences& cooccurrences(Split split) const;

 private:
  Glove model_{nullptr};
  WordVocabulary vocab_;
  std::string restored_vocab_;  // the checkpoint's vocabulary text ("" when training anew)
  std::map<Split, Cooccurrences> splits_;
  int64_t batch_size_ = 10000, seed_ = 0;
  bool shuffle_ = true, in_place_ = true;
};

}  // namespace nlpzoo
