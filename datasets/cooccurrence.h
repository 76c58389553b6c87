#pragma once
// GloVe's word-word co-occurrence counts (Pennington, Socher & Manning 2014, §3 and §4.2; as
// GloVe's cooccur.c counts them with symmetric = 1): for every pair of positions a != b of one
// line with |a - b| = d <= window, X[id_a][id_b] += 1/d. Each ordered pair counts once, so
// X is symmetric (X_ij = X_ji) and a word next to itself at distance d adds 2/d to X_ii.
// Windows never cross a line end (cooccur.c restarts its history at each newline).
//
// Storage is sparse: the English corpus has V = 57k words, a dense V x V table would be 13 GB.
// The counts are accumulated over the upper triangle (i <= j) as sorted (key = i * 2^32 + j,
// x) runs: each chunk of pairs is sorted and summed, then merged into the running result (no
// hash table: ~16 bytes per distinct pair, and the same input always gives the same output).
#include <cstdint>
#include <vector>

#include "datasets/word2vec_corpus.h"

namespace nlpzoo {

/// The non-zero entries of a co-occurrence matrix X, sorted by (row, col), both triangles.
/// rows, cols: [nnz] int32 word ids; values: [nnz] float32 X_ij (sums of 1/d, > 0).
struct Cooccurrences {
  std::vector<int32_t> rows, cols;
  std::vector<float> values;
  int64_t nnz() const { return static_cast<int64_t>(values.size()); }
  /// X_ij, 0 when the pair never co-occurs (binary search; for tests and inspection).
  double at(int32_t i, int32_t j) const;
};

/// X of `lines` (word ids; words outside the vocabulary were already dropped, so a window
/// reaches over them as in cooccur.c, whose vocabulary filter also drops them first) with a
/// symmetric window of `window` >= 1 words on each side. `chunk_pairs` bounds the unsorted
/// pairs held at once (memory: 16 bytes each); the result does not depend on it.
/// Throws std::invalid_argument if window < 1 or chunk_pairs < 1.
Cooccurrences count_cooccurrences(const EncodedLines& lines, int64_t window, int64_t chunk_pairs = int64_t{1} << 23);

}  // namespace nlpzoo
