#include "datasets/subwords.h"

#include <stdexcept>

namespace nlpzoo {

namespace {

bool is_continuation(char byte) { return (static_cast<unsigned char>(byte) & 0xC0) == 0x80; }

void check_range(int64_t minn, int64_t maxn) {
  if (minn < 1) throw std::invalid_argument("subwords: minn must be at least 1, got " + std::to_string(minn));
  if (maxn != 0 && maxn < minn)
    throw std::invalid_argument("subwords: maxn must be 0 (no subwords) or at least minn, got " + std::to_string(maxn));
}

}  // namespace

uint32_t fnv1a_hash(std::string_view bytes) {
  uint32_t h = 2166136261u;
  for (char c : bytes) {
    h ^= static_cast<uint32_t>(static_cast<int32_t>(static_cast<signed char>(c)));
    h *= 16777619u;
  }
  return h;
}

std::vector<std::string> char_ngrams(const std::string& word, int64_t minn, int64_t maxn) {
  check_range(minn, maxn);
  std::vector<std::string> out;
  const std::string w = "<" + word + ">";
  for (size_t i = 0; i < w.size(); ++i) {
    if (is_continuation(w[i])) continue;
    // Grow the n-gram one whole character at a time: its lead byte, then its continuation bytes.
    size_t j = i;
    for (int64_t n = 1; n <= maxn && j < w.size(); ++n) {
      ++j;
      while (j < w.size() && is_continuation(w[j])) ++j;
      const bool lone_mark = n == 1 && (i == 0 || j == w.size());
      if (n >= minn && !lone_mark) out.push_back(w.substr(i, j - i));
    }
  }
  return out;
}

std::vector<int64_t> ngram_buckets(const std::string& word, int64_t minn, int64_t maxn, int64_t bucket) {
  if (maxn > 0 && bucket < 1) throw std::invalid_argument("subwords: bucket must be at least 1, got " + std::to_string(bucket));
  std::vector<int64_t> out;
  for (const auto& g : char_ngrams(word, minn, maxn)) out.push_back(static_cast<int64_t>(fnv1a_hash(g) % static_cast<uint64_t>(bucket)));
  return out;
}

SubwordRows subword_rows(const std::vector<std::string>& words, int64_t minn, int64_t maxn, int64_t bucket) {
  SubwordRows t;
  const int64_t V = static_cast<int64_t>(words.size());
  t.offsets.reserve(words.size() + 1);
  for (int64_t i = 0; i < V; ++i) {
    t.rows.push_back(i);
    for (int64_t b : ngram_buckets(words[i], minn, maxn, bucket)) t.rows.push_back(V + b);
    t.offsets.push_back(static_cast<int64_t>(t.rows.size()));
  }
  return t;
}

void SubwordRows::expand_bags(std::vector<int64_t>& words, std::vector<int64_t>& bag_offsets) const {
  std::vector<int64_t> out, out_offsets;
  out_offsets.reserve(bag_offsets.size());
  size_t bag = 0;
  for (size_t k = 0; k < words.size(); ++k) {
    while (bag < bag_offsets.size() && static_cast<size_t>(bag_offsets[bag]) == k) {
      out_offsets.push_back(static_cast<int64_t>(out.size()));
      ++bag;
    }
    const int64_t w = words[k];
    if (w < 0 || w >= num_words())
      throw std::out_of_range("SubwordRows::expand_bags: word id " + std::to_string(w) + " outside the vocabulary of " +
                              std::to_string(num_words()));
    out.insert(out.end(), rows.begin() + offsets[w], rows.begin() + offsets[w + 1]);
  }
  while (bag++ < bag_offsets.size()) out_offsets.push_back(static_cast<int64_t>(out.size()));  // empty trailing bags
  words.swap(out);
  bag_offsets.swap(out_offsets);
}

}  // namespace nlpzoo
