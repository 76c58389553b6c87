#pragma once
// word2vec (Mikolov et al. 2013a, "Efficient Estimation of Word Representations in Vector
// Space"; 2013b, "Distributed Representations of Words and Phrases and their
// Compositionality"): every word w has an input vector v_w (the word vector users keep) and
// the output layer has its own parameters. Two models give the hidden vector h:
//   Skip-Gram: every (centre t, context c) pair of t's window is an example (2013b eq. 1);
//              the task (train/tasks/word2vec_task.h) makes h = v_c and t the target, the
//              order in which word2vec.c and gensim update, or with subwords h = the mean of
//              t's rows and c the target, as fastText;
//   CBOW:      h = (1/|C|) sum_{c in C} v_c, the mean of the context's vectors; the centre
//              word t is the target (word2vec.c's cbow with cbow_mean, gensim's default).
// Three objectives turn (h, target w) into a loss, interchangeable strategies as fastText's
// Loss classes (Word2VecObjectiveImpl):
//   softmax:  -log P(w|h),  P(w|h) = exp(θ_w·h) / Σ_w' exp(θ_w'·h)              (2013a; O(V))
//   ns:       -log σ(θ_w·h) - Σ_{k=1..K} log σ(-θ_{n_k}·h),  n_k ~ P_n(w) ∝ count(w)^0.75
//             (2013b eq. 4; a negative equal to w is skipped, as word2vec.c and gensim do)
//   hs:       -Σ_{j=1..L(w)-1} log σ(s_j θ_{n_j}·h) over the inner nodes n_j on the path from
//             the root of a Huffman tree of the word counts to w, s_j = +1 for code bit 0 and
//             -1 for bit 1 (2013b eq. 3, with word2vec.c's tree and bit convention).
// Initialisation as word2vec.c: v ~ U(-0.5/D, 0.5/D), output parameters θ = 0.
//
// Subword information (Bojanowski et al. 2017, "Enriching Word Vectors with Subword
// Information", section 3.2; fastText): with `bucket` > 0 the input table has V + bucket rows,
// the words' rows then the character n-gram buckets (datasets/subwords.h), and a word's input is
// the bag of its own row and its n-grams' rows. The paper scores s(w, c) = Σ_{g in G_w} z_g·v_c
// (eq. 1's sum); fastText's code, and this model, use the mean (1/|G_w|) Σ_g z_g, which is the
// sum scaled by a positive per-word constant: cosine queries are identical, and the mean keeps
// the hidden vector's scale (hence the learning rate) independent of the word's length. The
// bags go through cbow_loss (Skip-Gram: one bag per (centre, context) pair; CBOW: the rows of
// every context word in one bag); the output side is unchanged.
#include <torch/torch.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace nlpzoo {

enum class Word2VecModel { kSkipGram, kCbow };
enum class Word2VecObjective { kSoftmax, kNegativeSampling, kHierarchicalSoftmax };
/// "skipgram" | "cbow"; throws std::invalid_argument otherwise.
Word2VecModel parse_word2vec_model(const std::string& name);
std::string to_string(Word2VecModel model);
/// "softmax" | "ns" | "hs"; throws std::invalid_argument otherwise.
Word2VecObjective parse_word2vec_objective(const std::string& name);
std::string to_string(Word2VecObjective objective);

/// A word's path in the Huffman tree: `nodes` are inner-node ids in [0, V-1) from the root
/// (id V-2) down to the word's parent, `code` the branch bits taken (0 or 1), same length.
struct HuffmanPath {
  std::vector<int64_t> nodes;
  std::vector<uint8_t> code;
};

/// The Huffman tree of word2vec.c's CreateBinaryTree over `counts` (word ids in order of
/// non-increasing count, as the vocabulary is sorted): frequent words get short codes. Ties
/// are broken as word2vec.c does (a leaf is merged before an equal-count inner node when it
/// is strictly smaller only), so the codes are word2vec.c's. Returns one path per word; a
/// vocabulary of one word has an empty path. Throws std::invalid_argument if `counts` is
/// empty, has a count below 1 or is not sorted by non-increasing count.
std::vector<HuffmanPath> huffman_tree(const std::vector<int64_t>& counts);

/// The negative-sampling noise distribution P_n(w) = count(w)^power / Σ_w' count(w')^power
/// (2013b: power 0.75), as [V] float64. Throws std::invalid_argument for empty counts or a
/// negative count.
torch::Tensor noise_distribution(const std::vector<int64_t>& counts, double power = 0.75);

/// Draws negatives from P_n in O(1) per draw with Walker's alias method (Walker 1977; the
/// construction of Vose 1991): V cells, cell c holds word c with probability keep_c and its alias
/// word otherwise; a draw picks a cell uniformly and keeps or aliases with one more uniform number.
/// Two [V] arrays (460 KB for 57k words) hold P_n to 2^-32 per cell, where word2vec.c's unigram
/// table (10^8 slots; ours was 10^7, 40 MB) rounds every P_n(w) to whole slots and its random reads
/// miss the cache: on the English corpus a draw took 30 ns from the 10^7 table and 14 ns here.
class NoiseSampler {
 public:
  NoiseSampler() = default;
  /// Throws std::invalid_argument as noise_distribution.
  explicit NoiseSampler(const std::vector<int64_t>& counts, double power = 0.75);
  /// [n, k] int64 word ids, drawn with `rng` (deterministic given its state: one rng() per draw).
  torch::Tensor sample(int64_t n, int64_t k, std::mt19937_64& rng) const;
  /// The probability each word is drawn with, read back from the cells: [V] float64, P_n to
  /// within 2^-32 / V per word.
  torch::Tensor probabilities() const;

 private:
  std::vector<uint32_t> keep_;  // cell c draws word c when the draw's low 32 bits are below keep_[c]
  std::vector<int32_t> alias_;  // ... and alias_[c] otherwise (c itself for a full cell)
};

struct Word2VecOptions {
  Word2VecOptions(int64_t vocab_size, int64_t dim) : vocab_size_(vocab_size), dim_(dim) {}
  /// Words V (the first V rows of the input vectors, and the output side's size).
  TORCH_ARG(int64_t, vocab_size);
  /// Extra input rows after the V word rows: the character n-gram buckets (fastText's
  /// -bucket); 0 = none, the plain word2vec model. The input table is [V + bucket, D].
  TORCH_ARG(int64_t, bucket) = 0;
  /// Vector size D.
  TORCH_ARG(int64_t, dim);
  TORCH_ARG(Word2VecModel, model) = Word2VecModel::kSkipGram;
  TORCH_ARG(Word2VecObjective, objective) = Word2VecObjective::kNegativeSampling;
  /// Embedding rows get sparse gradients (only the rows a batch uses; optimizer sgd), as
  /// word2vec.c updates only those rows. false: dense [V, D] gradients (any optimizer).
  TORCH_ARG(bool, sparse) = true;
  /// Negative sampling: noise words per example, K.
  TORCH_ARG(int64_t, negative) = 5;
  /// Negative sampling: P_n(w) ∝ count(w)^ns_exponent (2013b: 0.75).
  TORCH_ARG(double, ns_exponent) = 0.75;
  /// Hierarchical softmax: average, not sum, each inner node's gradient over the examples of a
  /// batch that pass through it (see HierarchicalSoftmaxObjectiveImpl).
  TORCH_ARG(bool, hs_mean_node_gradient) = true;
};

/// The output layer of word2vec: a strategy (softmax, negative sampling, hierarchical softmax).
class Word2VecObjectiveImpl : public torch::nn::Module {
 public:
  /// Summed negative log-likelihood of `targets` given `hidden`: hidden [N, D] float,
  /// targets [N] int64 in [0, V); `negatives` [N, K] int64 for negative sampling (drawn with
  /// the global torch generator when undefined), ignored by the other objectives. Returns a
  /// scalar float; 0 (with a graph) for N = 0.
  virtual torch::Tensor loss(const torch::Tensor& hidden, const torch::Tensor& targets,
                             const torch::Tensor& negatives = {}) = 0;
};

/// Full softmax: θ is "output_vectors.weight" [V, D]; every row gets a gradient (dense).
class SoftmaxObjectiveImpl : public Word2VecObjectiveImpl {
 public:
  SoftmaxObjectiveImpl(int64_t vocab_size, int64_t dim);
  torch::Tensor loss(const torch::Tensor& hidden, const torch::Tensor& targets,
                     const torch::Tensor& negatives = {}) override;
  torch::nn::Embedding output_vectors{nullptr};
};

/// Negative sampling: θ is "output_vectors.weight" [V, D] (sparse gradients if `sparse`).
class NegativeSamplingObjectiveImpl : public Word2VecObjectiveImpl {
 public:
  /// `negative` = K draws per target from P_n (used only when no negatives are given: then
  /// torch::multinomial on `sampler`'s probabilities, LibTorch's global generator).
  NegativeSamplingObjectiveImpl(int64_t vocab_size, int64_t dim, bool sparse, int64_t negative, NoiseSampler sampler);
  torch::Tensor loss(const torch::Tensor& hidden, const torch::Tensor& targets,
                     const torch::Tensor& negatives = {}) override;
  torch::nn::Embedding output_vectors{nullptr};
  int64_t negative() const { return negative_; }
  const NoiseSampler& sampler() const { return sampler_; }

 private:
  int64_t negative_;
  NoiseSampler sampler_;
  torch::Tensor noise_probabilities_;  // [V] float64, sampler_.probabilities()
};

/// Hierarchical softmax: θ is "node_vectors.weight" [max(V-1, 1), D], one row per inner node of
/// the Huffman tree; paths are padded to the longest code with a mask, so a batch is one bmm.
///
/// With `mean_node_gradient`, the gradient reaching each inner node's row is divided by the
/// number of examples of the call whose path passes through it (the loss's value is unchanged).
/// Why: the root lies on every path and the nodes below it on large shares of them, so a batch
/// of examples computed from the same parameters would move them by the sum of hundreds of
/// coherent gradients at once, where word2vec.c's sequential updates see each step's effect;
/// Skip-Gram on the English corpus then does not learn (loss per word 30.7 -> 30.2 in 2 minutes).
/// With the mean, a node moves at most one example's step per batch, a deep node (few paths)
/// nearly as with the sum.
class HierarchicalSoftmaxObjectiveImpl : public Word2VecObjectiveImpl {
 public:
  /// `counts`: as huffman_tree (V = counts.size()).
  HierarchicalSoftmaxObjectiveImpl(const std::vector<int64_t>& counts, int64_t dim, bool sparse,
                                   bool mean_node_gradient = false);
  torch::Tensor loss(const torch::Tensor& hidden, const torch::Tensor& targets,
                     const torch::Tensor& negatives = {}) override;
  torch::nn::Embedding node_vectors{nullptr};
  /// Buffers: "path_nodes" [V, L] int64 (0 past a path's end), "path_signs" [V, L] float
  /// (+1 for code 0, -1 for code 1, 0 past the end: the mask).
  torch::Tensor path_nodes, path_signs;

 private:
  bool mean_node_gradient_;
};

/// Skip-Gram or CBOW with one objective. Parameters: "input_vectors.weight" [V + bucket, D] and
/// the objective's under "objective.".
class Word2VecImpl : public torch::nn::Module {
 public:
  /// `counts`: the vocabulary's word counts, in id order, non-increasing (the Huffman tree and
  /// the noise distribution are built from them); size = options.vocab_size().
  /// Throws std::invalid_argument for a non-positive size, a negative bucket, counts of the
  /// wrong size, or negative < 1 with negative sampling.
  Word2VecImpl(const Word2VecOptions& options, const std::vector<int64_t>& counts);

  /// Skip-Gram pairs: input [N] int64 (h = its input vector), target [N] int64 (N may be 0),
  /// negatives [N, K] int64 (ns) -> summed loss, a scalar float.
  torch::Tensor skip_gram_loss(const torch::Tensor& input, const torch::Tensor& target,
                               const torch::Tensor& negatives = {});
  /// CBOW (and any bag of input rows): context [M] int64 input rows in [0, V + bucket), the
  /// bags of B examples one after the other (CBOW: the context words; with subwords: their
  /// rows, or for Skip-Gram the centre word's rows); offsets [B] int64, where each bag starts in
  /// `context` (each non-empty); centre [B] int64, the targets in [0, V); negatives [B, K]
  /// int64 (ns). The hidden vector is the mean of a bag's rows. -> summed loss, a scalar float.
  torch::Tensor cbow_loss(const torch::Tensor& context, const torch::Tensor& offsets, const torch::Tensor& centre,
                          const torch::Tensor& negatives = {});

  const Word2VecOptions& options() const { return options_; }
  torch::nn::Embedding input_vectors{nullptr};
  std::shared_ptr<Word2VecObjectiveImpl> objective;

 private:
  Word2VecOptions options_;
};
TORCH_MODULE(Word2Vec);

}  // namespace nlpzoo
