#pragma once
// word2vec's training step without autograd: sequential per-example SGD over the raw float rows
// of the parameter tensors, in place, as word2vec.c, gensim and fastText train, with threads
// updating the shared matrices without locks (Hogwild, Recht et al. 2011).
//
// The update, from the gradients of the objectives (Mikolov et al. 2013b, eq. 4 for negative
// sampling, eq. 3 for hierarchical softmax; models/embeddings/word2vec.h). Both are sums of
// binary logistic terms -log σ(±θ·h): negative sampling has the target w with label y = 1 and
// each noise word n_k with y = 0; hierarchical softmax has each inner node n_j on w's Huffman
// path with y = 1 - code_j (s_j = +1 for code 0). For one term ℓ = -[y log σ(f) + (1-y) log σ(-f)],
// f = θ·h, and since dσ(f)/df = σ(f)(1 - σ(f)):
//   ∂ℓ/∂f = σ(f) - y,   ∂ℓ/∂θ = (σ(f) - y) h,   ∂ℓ/∂h = (σ(f) - y) θ.
// With g = lr (y - σ(f)), one SGD step on the example's loss is θ ← θ + g h for each term's row
// and h ← h + Σ_terms g θ. Per example, as word2vec.c does:
//   h = (1/|bag|) Σ_{r in bag} v_r                 (the mean of the example's input rows)
//   e = 0
//   for each term (row θ, label y):  f = θ·h;  g = lr (y - σ(f));  e += g θ;  θ += g h
//   for each r in bag:  v_r += e
// Each term's θ is updated before the next term's f is computed (sequential, as word2vec.c);
// e uses θ before its own update.
//
// Convention (word2vec.c, gensim, fastText): every input row of a bag gets the full e, not
// e/|bag|. The autograd loss of the mean h gives each row ∂ℓ/∂v_r = (1/|bag|) ∂ℓ/∂h, so a row of
// a bag of n moves by n × the autograd step; for a bag of one (Skip-Gram, or a CBOW example with
// one context word) the update is exactly one SGD step of rate lr on the autograd loss of
// word2vec.h (up to float rounding and the sequential θ updates when a row repeats within an
// example, e.g. a noise word drawn twice).
//
// Threads: the examples are cut into contiguous chunks, one per thread (parallel_chunks.h); the
// threads read and write the shared rows without locks. Races lose or mix an update now and then,
// which SGD tolerates (Hogwild); with one thread the result is deterministic.
#include <torch/torch.h>

#include <cstdint>

#include "models/embeddings/word2vec.h"

namespace nlpzoo {

/// A batch for word2vec_sgd, in one of the two layouts Word2VecTask::make_batch emits:
///   pairs: inputs [N] int64 (one input row per example, e.g. Skip-Gram's centre words),
///          offsets undefined;
///   bags:  inputs [M] int64, the input rows of every example one bag after another; offsets [B]
///          int64, where each bag starts in inputs (non-decreasing, offsets[0] = 0; an empty bag
///          gives h = 0). Any rows of the input table (e.g. subword rows >= vocab_size).
/// targets [B] int64: each example's word id (the target of ns, the leaf of hs).
/// negatives [B, K] int64: noise word ids (ns only; a noise word equal to the target is skipped,
/// as in word2vec.c and the autograd loss).
struct SgdExamples {
  torch::Tensor inputs, offsets, targets, negatives;
};

/// Applies one SGD step of rate `lr` per example, in order within each thread's chunk, to
/// `input_table` [R, D] float32 (the rows `inputs` name) and to the objective's parameters
/// (negative sampling's output_vectors [V, D], hierarchical softmax's node_vectors [V-1, D]),
/// in place; `threads` >= 1 threads (Hogwild). Returns the summed loss of the examples, each
/// computed from the parameters just before its own update (as the progress line's loss).
/// With lr = 0 nothing is written: the summed loss of the parameters as they are, in O(D)
/// memory per thread, where the autograd loss of word2vec.h builds [N, K or path length, D]
/// tensors (Word2VecTask validates this way).
/// Throws std::invalid_argument for the softmax objective (it keeps autograd), a parameter that
/// is not contiguous float32 on the CPU, ids outside their table, wrong shapes or dtypes, or
/// negatives missing for ns.
double word2vec_sgd(torch::Tensor input_table, Word2VecObjectiveImpl& objective, const SgdExamples& examples,
                    double lr, int64_t threads);

}  // namespace nlpzoo
