#pragma once
// Word2VecTask: Skip-Gram or CBOW word vectors with softmax, negative sampling or hierarchical
// softmax (Mikolov et al. 2013a/b; models/embeddings/word2vec.h), trained as word2vec.c and
// gensim train them, on the shared Trainer.
//
// Data: <data_dir>/<train_file> (default english.txt, as `nlpzoo data english --out DIR`
// writes it), one sentence per line, words separated by whitespace (the word rule of
// datasets/word2vec_corpus.h: the corpus is already normalised by the pipeline that wrote it).
// Line i (0-based) with (i + 1) % valid_every == 0 is held out as the valid split; the others
// are the train split. There is no test split.
//
// Vocabulary: the train split's words seen at least min_count times, by decreasing count
// (ties in byte order), written to <run_dir>/vocab.txt (word2vec.c's -save-vocab format) and
// stored in every checkpoint (artifact "vocab.txt"), so a checkpoint alone rebuilds the model
// (Huffman tree and noise distribution included). Words outside it are dropped from the text.
//
// Batches: the split's lines are cut, in order, into runs of whole lines holding at least
// batch_size vocabulary words (a longer line is a batch of its own); the same cut every epoch.
// With shuffle (default), epoch e visits the train batches in the order (a*i + b) mod n, a
// coprime to n, a and b drawn from (seed, e): the English corpus is Bible, then dictionary,
// then WordNet, and read in file order the vectors drift towards the current source.
// Batch (split, epoch, index) draws everything random from its own generator, seeded by
// (seed, split, epoch, index), so any batch can be remade alone (resume) and the valid split
// is the same at every validation (its epoch is always 0):
//   1. subsampling: each occurrence of word w is kept with probability keep_probability(count(w),
//      total, sample) (word2vec.c), and the dropped words are removed before windowing;
//   2. dynamic windows: b ~ U{1..window} per centre word (for_each_window);
//   3. Skip-Gram: every (centre, context) pair is an example, the context word's vector
//      predicting the centre word (word2vec.c's and gensim's order of updates; with subwords
//      the centre word's rows predict the context word, as fastText); CBOW: every centre word
//      with a non-empty context is one;
//   4. negative sampling: `negative` noise words per example from unigram^0.75 (NoiseSampler).
// The validation loss is the same objective on the valid split, per valid word.
//
// Subwords (Bojanowski et al. 2017; fastText's -minn/-maxn/-bucket): with maxn > 0 the input
// table gets `bucket` n-gram rows after the V word rows, and every vocabulary word's row list
// (its own row, then V + hash(g) mod bucket for each character n-gram g of "<w>" with
// minn <= |g| <= maxn, datasets/subwords.h) is computed once in setup. The examples then use
// the bag layout: Skip-Gram makes one bag per (centre, context) pair, holding the centre
// word's rows, with the context word as its target; CBOW's bag holds the rows of every context
// word (fastText's cbow). word_vectors() gives a vocabulary word the mean of its rows
// (fastText's getWordVector) and oov_vector() any other word the mean of its n-gram rows.
// The keys are in the saved config, so a checkpoint alone rebuilds the subword model.
//
// Units: Batch::num_tokens is the number of vocabulary words the batch's lines hold before
// subsampling (word2vec.c's word count), so the Trainer reports words/s as word2vec.c does and
// its loss is the summed objective per corpus word. `lr` is word2vec's per-example rate (0.025
// Skip-Gram, 0.05 CBOW); the schedule linear_decay with decay_steps = 0 decays it over the run's
// max_epochs * batches-per-epoch updates (derived by the Trainer), i.e. once per batch, as word2vec.c
// updates its rate every 10000 words (the default batch_size).
//
// Updates: with inplace_sgd (default) and ns or hs, each example is one SGD step on the
// parameter rows in place, in order, threads splitting a batch without locks
// (models/embeddings/word2vec_sgd.h): word2vec.c's training, so a batch of any size is sound.
// With inplace_sgd = false (and always for softmax), the loss goes through autograd and the
// optimizer with the gradient summed over examples (gradient_reduction kSum). Then the examples of
// a batch are all computed from the same parameters, so a row used k times in a batch moves by the
// sum of k gradients without the feedback of sequential updates: batches must stay small: on the
// English corpus at lr 0.025, 10000 words diverges within ten updates (frequent words' rows get
// thousands of coherent noise gradients at once), 1000 trains but its loss spikes, 250 trains
// smoothly. Hierarchical softmax's inner nodes near the root lie on most paths, so on that path
// their gradients are averaged over the batch instead (Word2VecOptions::hs_mean_node_gradient).
//
// Layouts: loss() and train_in_place() tell the layout by the "offsets" tensor, not by the model:
// pairs (context -> centre) without it, bags (any input rows -> centre) with it.
#include <map>
#include <optional>
#include <string>

#include "datasets/subwords.h"
#include "datasets/word2vec_corpus.h"
#include "datasets/word_vectors.h"
#include "models/embeddings/word2vec.h"
#include "train/task.h"
#include "train/tasks/word_corpus.h"
#include "train/tasks/word_vector_task.h"

namespace nlpzoo {

/// The word2vec task's config keys. (seed is the Trainer's.)
struct Word2VecTaskOptions {
  std::string model = "skipgram";  // parse_word2vec_model
  std::string objective = "ns";    // parse_word2vec_objective
  int64_t dim = 100;
  int64_t window = 5;
  int64_t negative = 5;  // ns only
  double ns_exponent = 0.75;
  double sample = 1e-3;
  WordCorpusOptions corpus{"word2vec", "english.txt", 5, 500};
  int64_t batch_size = 10000;
  bool inplace_sgd = true;
  bool shuffle = true;
  bool sparse = true;
  int64_t minn = 3;
  int64_t maxn = 0;
  int64_t bucket = 2000000;  // with maxn > 0
  void bind(OptionBinder& b);
};
ConfigSchema word2vec_schema();

class Word2VecTask : public WordVectorTask {
 public:
  /// Throws UserError naming the key for a bad value (before reading the corpus), naming the
  /// file when it is missing, has no word seen min_count times, or has no held-out line.
  void setup(Config& config, const TaskContext& context) override;
  std::shared_ptr<torch::nn::Module> model() override { return model_.ptr(); }
  int64_t num_batches(Split split, int64_t epoch) override;
  /// Skip-Gram tensors: "centre" [N] int64, "context" [N] int64; CBOW: "context" [M] int64 (the
  /// context words of each example, one example after the other), "offsets" [B] int64 (where
  /// each example's context starts), "centre" [B] int64; with negative sampling also
  /// "negatives" [N or B, negative] int64. num_examples = N or B; num_tokens = vocabulary words
  /// of the batch's lines before subsampling. N or B may be 0.
  /// With subwords (maxn > 0) both models use the bag layout: "context" [M] int64 holds each
  /// example's input rows in [0, V + bucket) bag after bag (Skip-Gram: the centre word's rows;
  /// CBOW: the rows of each context word), "offsets" [B], "centre" [B] the target word.
  Batch make_batch(Split split, int64_t epoch, int64_t index) override;
  /// The summed objective over the batch's examples; num_tokens as the batch's. A batch with
  /// "offsets" is a bag batch (Word2VecImpl::cbow_loss), one without is Skip-Gram pairs.
  LossOutput loss(const Batch& batch) override;
  GradientReduction gradient_reduction() const override { return GradientReduction::kSum; }
  /// inplace_sgd with the ns or hs objective: per-example SGD in place (word2vec_sgd), on
  /// torch::get_num_threads() threads (Hogwild).
  bool updates_in_place() const override { return in_place_; }
  /// One SGD step of rate lr per example of the batch (layout as loss()); returns the summed loss
  /// of the examples, each before its own update.
  LossOutput train_in_place(const Batch& batch, double lr) override;
  /// Unit "words", no perplexity; sparse gradients and in-place SGD need optimizer = sgd.
  TrainingProfile training_profile() const override;
  /// "vocab.txt": the vocabulary (WordVocabulary::to_text).
  std::map<std::string, std::string> artifacts() const override;
  /// Before setup: the vocabulary setup uses. After setup: must match the one in use
  /// (UserError otherwise).
  void restore_artifacts(const std::map<std::string, std::string>& blobs) override;

  /// The input vectors v_w ([V, dim] float32, CPU copy) with their words, in vocabulary order
  /// (decreasing count): what word2vec writes as its vectors. With subwords, a word's vector is
  /// the mean of its own row and its n-gram rows (fastText's getWordVector).
  WordVectors word_vectors() const override;
  /// With subwords: the mean of the n-gram rows of `word` ([dim] float32, CPU), for any word
  /// (fastText's vector for an unknown word); std::nullopt without subwords (maxn = 0) or
  /// when the word has no n-gram of minn..maxn characters.
  std::optional<torch::Tensor> oov_vector(const std::string& word) const override;

  Word2VecImpl& word2vec() { return *model_; }
  const WordVocabulary& vocabulary() const { return vocab_; }
  /// The split's sentences as ids. Throws UserError if setup did not read the split.
  const EncodedLines& lines(Split split) const;

 private:
  struct SplitData {
    EncodedLines lines;
    std::vector<int64_t> batch_starts;  // line index where each batch starts, then num_lines
  };
  const SplitData& split_data(Split split) const;

  Word2Vec model_{nullptr};
  WordVocabulary vocab_;
  std::string restored_vocab_;  // the checkpoint's vocabulary text ("" when training anew)
  std::vector<double> keep_;    // per word: keep_probability
  std::map<Split, SplitData> splits_;
  Word2VecModel kind_ = Word2VecModel::kSkipGram;
  int64_t window_ = 5, negative_ = 0, batch_size_ = 10000, seed_ = 0;
  bool shuffle_ = true, in_place_ = true, sparse_ = true;
  const NoiseSampler* sampler_ = nullptr;  // the negative-sampling objective's, or null
  int64_t minn_ = 3, maxn_ = 0, bucket_ = 0;
  SubwordRows subwords_;  // every word's input rows when maxn_ > 0, else empty
};

}  // namespace nlpzoo
