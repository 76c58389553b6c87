#include "infer/embedding_queries.h"

#include <algorithm>
#include <cctype>
#include <limits>

#include "core/io.h"

namespace nlpzoo {

namespace {

// Levy & Goldberg (2014), section 6: "ε = 0.001 is used to prevent division by zero".
constexpr double kCosMulEpsilon = 1e-3;

int64_t candidate_rows(const WordVectors& vectors, int64_t restrict_vocab) {
  return restrict_vocab > 0 ? std::min(restrict_vocab, vectors.size()) : vectors.size();
}

// The k best columns of scores [R] that are not -inf, best first.
std::vector<ScoredWord> top_k(const WordVectors& vectors, const torch::Tensor& scores, int64_t k) {
  const int64_t n = std::min<int64_t>(k, scores.size(0));
  std::vector<ScoredWord> out;
  if (n == 0) return out;
  const auto [values, rows] = scores.topk(n);
  for (int64_t i = 0; i < n; ++i) {
    const double v = values[i].item<double>();
    if (v == -std::numeric_limits<double>::infinity()) break;
    const int64_t row = rows[i].item<int64_t>();
    out.push_back({vectors.words()[row], row, v});
  }
  return out;
}

// Sets scores [R] to -inf at every row whose word is one of `words`.
void exclude(torch::Tensor& scores, const WordVectors& vectors, std::initializer_list<std::string> words) {
  std::vector<int64_t> rows;
  for (int64_t i = 0; i < scores.size(0); ++i)
    if (std::find(words.begin(), words.end(), vectors.words()[i]) != words.end()) rows.push_back(i);
  if (!rows.empty())
    scores.index_fill_(0, torch::tensor(rows, torch::kInt64), -std::numeric_limits<float>::infinity());
}

void require_k(int64_t k) {
  if (k < 1) throw UserError("-k: must be at least 1 (got " + std::to_string(k) + ")");
}

}  // namespace

torch::Tensor unit_rows(const torch::Tensor& m) {
  return m / m.norm(2, /*dim=*/{1}, /*keepdim=*/true).clamp_min(1e-12);
}

int64_t require_word(const WordVectors& vectors, const std::string& word, const std::string& what) {
  const int64_t row = vectors.find(word);
  if (row < 0)
    throw UserError("'" + word + "' is not in the vocabulary (" + std::to_string(vectors.size()) + " words" +
                    (what.empty() ? "" : " of " + what) +
                    "); words match exactly (the English corpus is lowercase, rare words fall under min_count), "
                    "and only a subword model (maxn > 0) answers words outside its vocabulary");
  return row;
}

torch::Tensor query_vector(const WordVectors& vectors, const std::string& word, const OovVectors& oov,
                           const std::string& what) {
  const int64_t row = vectors.find(word);
  if (row >= 0) return vectors.vectors().slice(0, row, row + 1);
  if (oov) {
    if (auto v = oov(word)) return v->to(torch::kFloat).reshape({1, -1});
  }
  require_word(vectors, word, what);  // throws: the word is in neither
  return {};
}

std::vector<ScoredWord> nearest_neighbours(const WordVectors& vectors, const std::string& word, int64_t k,
                                           int64_t restrict_vocab, const OovVectors& oov) {
  require_k(k);
  const auto vector = query_vector(vectors, word, oov);
  const int64_t R = candidate_rows(vectors, restrict_vocab);
  torch::NoGradGuard no_grad;
  const auto query = unit_rows(vector);                                                // [1, D]
  auto scores = unit_rows(vectors.vectors().slice(0, 0, R)).matmul(query.t()).squeeze(1);  // [R]
  // Every row holding the query word (a file may repeat a word) is excluded.
  exclude(scores, vectors, {word});
  return top_k(vectors, scores, k);
}

AnalogyMethod parse_analogy_method(const std::string& name, const std::string& option) {
  std::string n = name;
  for (char& ch : n) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (n == "add" || n == "3cosadd") return AnalogyMethod::kAdd;
  if (n == "mul" || n == "3cosmul") return AnalogyMethod::kMul;
  throw UserError(option + " " + name + ": expected add (3CosAdd) or mul (3CosMul)");
}

std::string analogy_method_name(AnalogyMethod method) {
  return method == AnalogyMethod::kAdd ? "3CosAdd" : "3CosMul";
}

torch::Tensor analogy_scores(const torch::Tensor& a, const torch::Tensor& b, const torch::Tensor& c,
                             const torch::Tensor& candidates, AnalogyMethod method) {
  const auto ct = candidates.t();  // [D, R]
  if (method == AnalogyMethod::kAdd) return unit_rows(b - a + c).matmul(ct);  // [Q, R]
  // In place: three [Q, R] matrices live at most (evaluation scores thousands of questions).
  const auto shifted = [&](const torch::Tensor& x) { return x.matmul(ct).add_(1).mul_(0.5); };  // [Q, R] in [0, 1]
  auto scores = shifted(b);
  scores.mul_(shifted(c));
  return scores.div_(shifted(a).add_(kCosMulEpsilon));
}

std::vector<ScoredWord> analogy(const WordVectors& vectors, const std::string& a, const std::string& b,
                                const std::string& c, int64_t k, AnalogyMethod method, int64_t restrict_vocab,
                                const OovVectors& oov) {
  require_k(k);
  const auto va = query_vector(vectors, a, oov), vb = query_vector(vectors, b, oov), vc = query_vector(vectors, c, oov);
  const int64_t R = candidate_rows(vectors, restrict_vocab);
  torch::NoGradGuard no_grad;
  auto scores = analogy_scores(unit_rows(va), unit_rows(vb), unit_rows(vc), unit_rows(vectors.vectors().slice(0, 0, R)),
                               method)
                    .squeeze(0);  // [R]
  exclude(scores, vectors, {a, b, c});
  return top_k(vectors, scores, k);
}

}  // namespace nlpzoo
