#include "models/embeddings/word2vec.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <stdexcept>

#include "core/enum_names.h"

namespace nlpzoo {

namespace F = torch::nn::functional;

namespace {

constexpr EnumNames<Word2VecModel, 2> kModelNames = {{{Word2VecModel::kSkipGram, "skipgram"}, {Word2VecModel::kCbow, "cbow"}}};
constexpr EnumNames<Word2VecObjective, 3> kObjectiveNames = {{{Word2VecObjective::kSoftmax, "softmax"},
                                                             {Word2VecObjective::kNegativeSampling, "ns"},
                                                             {Word2VecObjective::kHierarchicalSoftmax, "hs"}}};

torch::nn::Embedding make_vectors(int64_t rows, int64_t dim, bool sparse) {
  return torch::nn::Embedding(torch::nn::EmbeddingOptions(rows, dim).sparse(sparse));
}

// -Σ log σ(signs ⊙ (θ h)) over the unmasked entries: rows [N, J, D], hidden [N, D], signs [N, J]
// (+1 target, -1 noise, 0 padding). log σ comes from log_sigmoid, which is exact where
// log(sigmoid(x)) would underflow to -inf.
torch::Tensor binary_logistic_loss(const torch::Tensor& rows, const torch::Tensor& hidden, const torch::Tensor& signs) {
  auto scores = torch::bmm(rows, hidden.unsqueeze(2)).squeeze(2);  // [N, J]
  return -(torch::log_sigmoid(scores * signs) * signs.abs()).sum();
}

}  // namespace

Word2VecModel parse_word2vec_model(const std::string& name) { return parse_enum(name, kModelNames, "word2vec model"); }
std::string to_string(Word2VecModel model) { return enum_name(model, kModelNames); }
Word2VecObjective parse_word2vec_objective(const std::string& name) {
  return parse_enum(name, kObjectiveNames, "word2vec objective");
}
std::string to_string(Word2VecObjective objective) { return enum_name(objective, kObjectiveNames); }

std::vector<HuffmanPath> huffman_tree(const std::vector<int64_t>& counts) {
  const int64_t V = static_cast<int64_t>(counts.size());
  if (V == 0) throw std::invalid_argument("huffman_tree: no words");
  for (int64_t i = 0; i < V; ++i) {
    if (counts[i] < 1) throw std::invalid_argument("huffman_tree: word " + std::to_string(i) + " has count " + std::to_string(counts[i]));
    if (i > 0 && counts[i] > counts[i - 1])
      throw std::invalid_argument("huffman_tree: counts must be sorted by non-increasing count (word " +
                                  std::to_string(i) + ")");
  }
  if (V == 1) return {HuffmanPath{}};
  // word2vec.c's two-queue construction: leaves in [0, V) sorted by decreasing count are read
  // from the back (pos1), inner nodes [V, 2V-1) are made in increasing count (pos2), so the
  // two smallest are always at the queues' heads.
  std::vector<int64_t> count(2 * V - 1, 0), parent(2 * V - 1, 0);
  std::vector<uint8_t> binary(2 * V - 1, 0);
  std::copy(counts.begin(), counts.end(), count.begin());
  constexpr int64_t kInfinity = INT64_MAX / 4;
  std::fill(count.begin() + V, count.end(), kInfinity);
  int64_t pos1 = V - 1, pos2 = V;
  auto pop_min = [&]() {
    if (pos1 >= 0 && count[pos1] < count[pos2]) return pos1--;
    return pos2++;
  };
  for (int64_t a = 0; a < V - 1; ++a) {
    const int64_t min1 = pop_min(), min2 = pop_min();
    count[V + a] = count[min1] + count[min2];
    parent[min1] = parent[min2] = V + a;
    binary[min2] = 1;
  }
  const int64_t root = 2 * V - 2;
  std::vector<HuffmanPath> paths(V);
  for (int64_t w = 0; w < V; ++w) {
    auto& p = paths[w];
    for (int64_t b = w; b != root; b = parent[b]) {
      p.code.push_back(binary[b]);
      p.nodes.push_back(parent[b] - V);
    }
    std::reverse(p.code.begin(), p.code.end());
    std::reverse(p.nodes.begin(), p.nodes.end());
  }
  return paths;
}

torch::Tensor noise_distribution(const std::vector<int64_t>& counts, double power) {
  if (counts.empty()) throw std::invalid_argument("noise_distribution: no words");
  std::vector<double> p(counts.size());
  double total = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] < 0) throw std::invalid_argument("noise_distribution: negative count");
    total += p[i] = std::pow(static_cast<double>(counts[i]), power);
  }
  if (total <= 0) throw std::invalid_argument("noise_distribution: every count is 0");
  for (auto& x : p) x /= total;
  return torch::tensor(p, torch::kDouble);
}

NoiseSampler::NoiseSampler(const std::vector<int64_t>& counts, double power) {
  const auto p = noise_distribution(counts, power);
  const int64_t V = static_cast<int64_t>(counts.size());
  const auto* pp = p.data_ptr<double>();
  // Vose: scale to mean 1; pair each under-full cell with an over-full word that tops it up.
  std::vector<double> q(V);
  std::vector<int32_t> small, large;
  for (int64_t c = 0; c < V; ++c) {
    q[c] = pp[c] * static_cast<double>(V);
    (q[c] < 1 ? small : large).push_back(static_cast<int32_t>(c));
  }
  keep_.assign(V, UINT32_MAX);
  alias_.resize(V);
  std::iota(alias_.begin(), alias_.end(), 0);
  while (!small.empty() && !large.empty()) {
    const int32_t s = small.back(), l = large.back();
    small.pop_back();
    keep_[s] = static_cast<uint32_t>(std::min(q[s] * 0x1.0p32, static_cast<double>(UINT32_MAX)));
    alias_[s] = l;
    q[l] -= 1 - q[s];
    if (q[l] < 1) {
      large.pop_back();
      small.push_back(l);
    }
  }
  // What is left is full up to rounding: it keeps its own word (alias itself).
}

torch::Tensor NoiseSampler::sample(int64_t n, int64_t k, std::mt19937_64& rng) const {
  if (keep_.empty()) throw std::logic_error("NoiseSampler::sample on an empty sampler");
  auto out = torch::empty({n, k}, torch::kLong);
  auto* o = out.data_ptr<int64_t>();
  const uint64_t V = keep_.size();
  for (int64_t i = 0; i < n * k; ++i) {
    const uint64_t r = rng();
    // The high 32 bits pick the cell (multiply-shift: no division), the low 32 keep or alias.
    const auto c = static_cast<int64_t>(((r >> 32) * V) >> 32);
    o[i] = static_cast<uint32_t>(r) < keep_[c] ? c : alias_[c];
  }
  return out;
}

torch::Tensor NoiseSampler::probabilities() const {
  const int64_t V = static_cast<int64_t>(keep_.size());
  auto p = torch::zeros({V}, torch::kDouble);
  auto* pp = p.data_ptr<double>();
  for (int64_t c = 0; c < V; ++c) {
    const double kept = alias_[c] == c ? 1.0 : keep_[c] * 0x1.0p-32;
    pp[c] += kept / static_cast<double>(V);
    pp[alias_[c]] += (1 - kept) / static_cast<double>(V);
  }
  return p;
}

// ---- objectives ----

SoftmaxObjectiveImpl::SoftmaxObjectiveImpl(int64_t vocab_size, int64_t dim) {
  // The full softmax's gradient reaches every row anyway, so sparse rows would only cost.
  output_vectors = register_module("output_vectors", make_vectors(vocab_size, dim, /*sparse=*/false));
}

torch::Tensor SoftmaxObjectiveImpl::loss(const torch::Tensor& hidden, const torch::Tensor& targets, const torch::Tensor&) {
  auto logits = torch::matmul(hidden, output_vectors->weight.t());  // [N, V]
  return F::cross_entropy(logits, targets, F::CrossEntropyFuncOptions().reduction(torch::kSum));
}

NegativeSamplingObjectiveImpl::NegativeSamplingObjectiveImpl(int64_t vocab_size, int64_t dim, bool sparse,
                                                             int64_t negative, NoiseSampler sampler)
    : negative_(negative), sampler_(std::move(sampler)), noise_probabilities_(sampler_.probabilities()) {
  output_vectors = register_module("output_vectors", make_vectors(vocab_size, dim, sparse));
}

torch::Tensor NegativeSamplingObjectiveImpl::loss(const torch::Tensor& hidden, const torch::Tensor& targets,
                                                  const torch::Tensor& negatives) {
  auto noise = negatives;
  if (!noise.defined()) {
    // LibTorch's own draw from P_n, on its global generator (this path is the reference, not the hot one).
    noise = torch::multinomial(noise_probabilities_, targets.size(0) * negative_, /*replacement=*/true)
                .view({targets.size(0), negative_})
                .to(targets.device());
  }
  auto ids = torch::cat({targets.unsqueeze(1), noise}, 1);  // [N, 1+K]
  // +1 for the target, -1 for a noise word, 0 for a noise word equal to the target (skipped).
  auto signs = torch::cat({torch::ones({targets.size(0), 1}, hidden.options()),
                           -noise.ne(targets.unsqueeze(1)).to(hidden.scalar_type())},
                          1);  // [N, 1+K]
  auto rows = output_vectors->forward(ids);  // [N, 1+K, D]
  return binary_logistic_loss(rows, hidden, signs);
}

HierarchicalSoftmaxObjectiveImpl::HierarchicalSoftmaxObjectiveImpl(const std::vector<int64_t>& counts, int64_t dim,
                                                                   bool sparse, bool mean_node_gradient)
    : mean_node_gradient_(mean_node_gradient) {
  const auto paths = huffman_tree(counts);
  const int64_t V = static_cast<int64_t>(counts.size());
  size_t longest = 1;
  for (const auto& p : paths) longest = std::max(longest, p.nodes.size());
  auto nodes = torch::zeros({V, static_cast<int64_t>(longest)}, torch::kLong);
  auto signs = torch::zeros({V, static_cast<int64_t>(longest)}, torch::kFloat);
  auto n = nodes.accessor<int64_t, 2>();
  auto s = signs.accessor<float, 2>();
  for (int64_t w = 0; w < V; ++w)
    for (size_t j = 0; j < paths[w].nodes.size(); ++j) {
      n[w][j] = paths[w].nodes[j];
      s[w][j] = paths[w].code[j] ? -1.0f : 1.0f;  // word2vec.c: label 1 - code
    }
  path_nodes = register_buffer("path_nodes", nodes);
  path_signs = register_buffer("path_signs", signs);
  node_vectors = register_module("node_vectors", make_vectors(std::max<int64_t>(V - 1, 1), dim, sparse));
}

torch::Tensor HierarchicalSoftmaxObjectiveImpl::loss(const torch::Tensor& hidden, const torch::Tensor& targets,
                                                     const torch::Tensor&) {
  // Module::to(dtype) converts integer buffers too, so the ids are cast back.
  auto nodes = path_nodes.index_select(0, targets).to(torch::kLong);              // [N, L]
  auto signs = path_signs.index_select(0, targets).to(hidden.scalar_type());      // [N, L]
  auto rows = node_vectors->forward(nodes);                                       // [N, L, D]
  if (mean_node_gradient_ && nodes.numel() > 0) {
    // Examples through each node (padding excluded), then rows' = rows with gradient / count:
    // the forward value is rows exactly, only the backward is scaled.
    auto real = signs.ne(0);                                                      // [N, L]
    auto through = torch::bincount(nodes.masked_select(real), {}, node_vectors->weight.size(0));  // [V-1]
    auto scale = through.index_select(0, nodes.view(-1)).clamp_min(1).to(rows.scalar_type())
                     .reciprocal().view({nodes.size(0), nodes.size(1), 1});       // [N, L, 1]
    auto fixed = rows.detach();
    rows = fixed + (rows - fixed) * scale;
  }
  return binary_logistic_loss(rows, hidden, signs);
}

// ---- the model ----

Word2VecImpl::Word2VecImpl(const Word2VecOptions& o, const std::vector<int64_t>& counts) : options_(o) {
  if (o.vocab_size() <= 0 || o.dim() <= 0) throw std::invalid_argument("word2vec: vocab_size and dim must be positive");
  if (o.bucket() < 0) throw std::invalid_argument("word2vec: bucket must not be negative");
  if (static_cast<int64_t>(counts.size()) != o.vocab_size())
    throw std::invalid_argument("word2vec: " + std::to_string(counts.size()) + " counts for a vocabulary of " +
                                std::to_string(o.vocab_size()));
  input_vectors = register_module("input_vectors", make_vectors(o.vocab_size() + o.bucket(), o.dim(), o.sparse()));
  switch (o.objective()) {
    case Word2VecObjective::kSoftmax:
      objective = std::make_shared<SoftmaxObjectiveImpl>(o.vocab_size(), o.dim());
      break;
    case Word2VecObjective::kNegativeSampling:
      if (o.negative() < 1) throw std::invalid_argument("word2vec: negative sampling needs negative >= 1");
      objective = std::make_shared<NegativeSamplingObjectiveImpl>(
          o.vocab_size(), o.dim(), o.sparse(), o.negative(),
          NoiseSampler(counts, o.ns_exponent()));
      break;
    case Word2VecObjective::kHierarchicalSoftmax:
      objective = std::make_shared<HierarchicalSoftmaxObjectiveImpl>(counts, o.dim(), o.sparse(), o.hs_mean_node_gradient());
      break;
  }
  register_module("objective", objective);
  torch::NoGradGuard no_grad;
  input_vectors->weight.uniform_(-0.5 / o.dim(), 0.5 / o.dim());
  for (auto& p : objective->parameters()) p.zero_();
}

torch::Tensor Word2VecImpl::skip_gram_loss(const torch::Tensor& input, const torch::Tensor& target,
                                           const torch::Tensor& negatives) {
  return objective->loss(input_vectors->forward(input), target, negatives);  // hidden [N, D]
}

torch::Tensor Word2VecImpl::cbow_loss(const torch::Tensor& context, const torch::Tensor& offsets,
                                      const torch::Tensor& centre, const torch::Tensor& negatives) {
  // embedding_bag's mean is the context average without a padded [B, 2W, D] tensor; its
  // sparse gradient touches only the context rows.
  auto hidden = F::embedding_bag(context, input_vectors->weight,
                                 F::EmbeddingBagFuncOptions().offsets(offsets).mode(torch::kMean).sparse(options_.sparse()));
  return objective->loss(hidden, centre, negatives);  // hidden [B, D]
}

}  // namespace nlpzoo
