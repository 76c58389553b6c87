#include "datasets/batching.h"

#include <algorithm>
#include <numeric>
#include <random>
#include <stdexcept>

namespace nlpzoo {

std::vector<std::vector<int64_t>> make_token_batches(const std::vector<int64_t>& lengths, int64_t max_tokens,
                                                     int64_t max_sentences, bool shuffle, uint64_t seed) {
  if (max_tokens <= 0) throw std::invalid_argument("max_tokens must be positive");
  std::vector<int64_t> order(lengths.size());
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(seed);
  if (shuffle) std::shuffle(order.begin(), order.end(), rng);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return lengths[a] < lengths[b]; });
  std::vector<std::vector<int64_t>> batches;
  std::vector<int64_t> current;
  int64_t longest = 0;
  for (int64_t i : order) {
    const int64_t len = std::max<int64_t>(lengths[i], 1);
    const int64_t rows = static_cast<int64_t>(current.size()) + 1;
    const bool over = std::max(longest, len) * rows > max_tokens || (max_sentences > 0 && rows > max_sentences);
    if (!current.empty() && over) {
      batches.push_back(std::move(current));
      current.clear();
      longest = 0;
    }
    current.push_back(i);
    longest = std::max(longest, len);
  }
  if (!current.empty()) batches.push_back(std::move(current));
  if (shuffle) std::shuffle(batches.begin(), batches.end(), rng);
  return batches;
}

torch::Tensor pad_sequences(const std::vector<std::vector<int64_t>>& sequences, int64_t pad_id) {
  size_t longest = 0;
  for (const auto& s : sequences) longest = std::max(longest, s.size());
  auto out = torch::full({static_cast<int64_t>(sequences.size()), static_cast<int64_t>(longest)}, pad_id, torch::kInt64);
  auto acc = out.accessor<int64_t, 2>();
  for (size_t i = 0; i < sequences.size(); ++i)
    for (size_t j = 0; j < sequences[i].size(); ++j) acc[i][j] = sequences[i][j];
  return out;
}

}  // namespace nlpzoo

#include "datasets/special_ids.h"

namespace nlpzoo {

std::vector<int64_t> append_eos(std::vector<int64_t> ids, int64_t max_positions, bool* truncated) {
  const auto limit = static_cast<size_t>(std::max<int64_t>(max_positions - 1, 0));
  if (truncated) *truncated = ids.size() > limit;
  if (ids.size() > limit) ids.resize(limit);
  ids.push_back(kEosId);
  return ids;
}

}  // namespace nlpzoo
