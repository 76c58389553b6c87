#pragma once
// Queries on word vectors by cosine similarity: nearest neighbours and word analogies
// "a is to b as c is to ?" (Mikolov, Yih & Zweig 2013, "Linguistic Regularities in Continuous
// Space Word Representations"), answered by 3CosAdd or 3CosMul (Levy & Goldberg 2014,
// "Linguistic Regularities in Sparse and Explicit Word Representations", eq. 3 and 4).
#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "datasets/word_vectors.h"

namespace nlpzoo {

/// Rows of m divided by their L2 norms: m [N, D] float -> [N, D] of the same dtype. A zero row
/// stays zero (its norm is clamped at 1e-12) rather than becoming NaN.
torch::Tensor unit_rows(const torch::Tensor& m);

/// Row of `word` in `vectors`. Throws UserError "'word' is not in the vocabulary (N words)"
/// when it is absent; `what` (e.g. "--vectors model.vec") is added to the message.
int64_t require_word(const WordVectors& vectors, const std::string& word, const std::string& what = "");

/// Where a query word outside the table gets its vector ([D] float32), e.g. a subword model's
/// n-grams (WordVectorSource::oov_vector); std::nullopt when it has none. An empty function
/// means: no vectors beyond the table's.
using OovVectors = std::function<std::optional<torch::Tensor>(const std::string& word)>;

/// The vector of a query word as a [1, D] float32 row: its row in `vectors`, else oov(word)
/// when that gives one. Throws UserError as require_word (with `what`) when neither has it.
torch::Tensor query_vector(const WordVectors& vectors, const std::string& word, const OovVectors& oov = {},
                           const std::string& what = "");

/// A word found by a query, with its score (cosine similarity for neighbours and 3CosAdd,
/// Levy & Goldberg's 3CosMul objective for 3CosMul).
struct ScoredWord {
  std::string word;
  int64_t row = -1;  // row in the WordVectors
  double score = 0;
};

/// The k words of largest cosine similarity cos(u, v) = u·v / (|u| |v|) to `word`, best first,
/// `word` itself excluded. Only the first `restrict_vocab` rows are candidates (0: all; word2vec
/// files list the most frequent words first). A word outside the table is answered with
/// oov(word) when given (query_vector); the neighbours are always table words. Throws
/// UserError naming an unknown word, or k < 1.
std::vector<ScoredWord> nearest_neighbours(const WordVectors& vectors, const std::string& word, int64_t k,
                                           int64_t restrict_vocab = 0, const OovVectors& oov = {});

/// How an analogy a:b :: c:? is answered; â is a's unit vector and cos(x, y) = x̂·ŷ.
enum class AnalogyMethod {
  // 3CosAdd (Mikolov et al. 2013; Levy & Goldberg eq. 3): argmax_d cos(d, b̂ − â + ĉ), the
  // same ranking as cos(d,b) − cos(d,a) + cos(d,c). The score reported is cos(d, b̂ − â + ĉ),
  // as gensim's most_similar(positive=[b, c], negative=[a]) reports it.
  kAdd,
  // 3CosMul (Levy & Goldberg eq. 4): argmax_d cos'(d,b) cos'(d,c) / (cos'(d,a) + ε) with
  // cosines shifted to [0, 1] by cos' = (cos + 1) / 2 and ε = 0.001, as in the paper
  // (gensim's most_similar_cosmul shifts alike but uses ε = 1e-6).
  kMul,
};
/// "add" | "3cosadd" -> kAdd, "mul" | "3cosmul" -> kMul. Throws UserError naming `option`.
AnalogyMethod parse_analogy_method(const std::string& name, const std::string& option = "--method");
std::string analogy_method_name(AnalogyMethod method);  // "3CosAdd" | "3CosMul"

/// Scores of every candidate d for Q analogies a:b :: c:?. a, b, c: [Q, D] float unit rows;
/// candidates: [R, D] float unit rows. Returns [Q, R] float; larger is better. Query words are
/// NOT excluded here (callers mask them).
torch::Tensor analogy_scores(const torch::Tensor& a, const torch::Tensor& b, const torch::Tensor& c,
                             const torch::Tensor& candidates, AnalogyMethod method);

/// The k best answers d of a:b :: c:? (e.g. man:woman :: king:? -> queen), a, b and c
/// excluded, best first, among the first `restrict_vocab` rows (0: all). Query words outside
/// the table are answered with oov (query_vector). Throws UserError naming an unknown word, or
/// k < 1.
std::vector<ScoredWord> analogy(const WordVectors& vectors, const std::string& a, const std::string& b,
                                const std::string& c, int64_t k, AnalogyMethod method, int64_t restrict_vocab = 0,
                                const OovVectors& oov = {});

}  // namespace nlpzoo
