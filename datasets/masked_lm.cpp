#include "datasets/masked_lm.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>
#include <string>

#include "datasets/special_ids.h"

namespace nlpzoo {

SentenceChunks chunk_sentences(std::vector<TokenIds> sentences, int64_t room) {
  if (room < 1) throw std::invalid_argument("grouping sentences needs room for 1 piece, got " + std::to_string(room));
  const auto limit = static_cast<size_t>(room);
  SentenceChunks out;
  std::vector<TokenIds> current;
  size_t pieces = 0;
  auto flush = [&] {
    if (!current.empty()) out.chunks.push_back(std::move(current));
    current.clear();
    pieces = 0;
  };
  for (auto& s : sentences) {
    if (s.empty()) continue;
    if (pieces + s.size() > limit) flush();
    if (s.size() > limit) {
      ++out.truncated;
      s.resize(limit);
      current.push_back(std::move(s));
      flush();
      continue;
    }
    pieces += s.size();
    current.push_back(std::move(s));
  }
  flush();
  return out;
}

PackedSequences pack_sentences(std::vector<TokenIds> sentences, int64_t max_positions) {
  if (max_positions < 3)
    throw std::invalid_argument("packing needs max_positions >= 3 ([CLS] piece [SEP]), got " +
                                std::to_string(max_positions));
  auto grouped = chunk_sentences(std::move(sentences), max_positions - 2);
  PackedSequences out;
  out.truncated = grouped.truncated;
  out.sequences.reserve(grouped.chunks.size());
  for (auto& chunk : grouped.chunks) {
    TokenIds seq{kClsId};
    for (auto& s : chunk) {
      seq.insert(seq.end(), s.begin(), s.end());
      TokenIds().swap(s);  // the corpus is large: free each sentence once copied
    }
    seq.push_back(kSepId);
    out.sequences.push_back(std::move(seq));
  }
  return out;
}

PairInput pair_input(const TokenIds& a, const TokenIds& b, int64_t max_positions) {
  const int64_t specials = b.empty() ? 2 : 3;
  if (max_positions < specials + (b.empty() ? 1 : 2))
    throw std::invalid_argument("max_positions " + std::to_string(max_positions) + " cannot hold " +
                                (b.empty() ? "[CLS] A [SEP]" : "[CLS] A [SEP] B [SEP]"));
  size_t na = a.size(), nb = b.size();
  PairInput out;
  while (static_cast<int64_t>(na + nb) + specials > max_positions) {
    (na > nb ? na : nb)--;
    out.truncated = true;
  }
  out.tokens.push_back(kClsId);
  out.tokens.insert(out.tokens.end(), a.begin(), a.begin() + static_cast<std::ptrdiff_t>(na));
  out.tokens.push_back(kSepId);
  out.segments.assign(out.tokens.size(), 0);
  if (!b.empty()) {
    out.tokens.insert(out.tokens.end(), b.begin(), b.begin() + static_cast<std::ptrdiff_t>(nb));
    out.tokens.push_back(kSepId);
    out.segments.resize(out.tokens.size(), 1);
  }
  return out;
}

NextSentencePair next_sentence_pair(const std::vector<std::vector<TokenIds>>& chunks, size_t k,
                                    int64_t max_positions, uint64_t rng_seed) {
  if (chunks.size() < 2)
    throw std::invalid_argument("next-sentence pairs need at least 2 chunks of text, got " +
                                std::to_string(chunks.size()));
  if (k >= chunks.size() || chunks[k].empty())
    throw std::invalid_argument("next-sentence pair: chunk " + std::to_string(k) + " does not exist or is empty");
  if (max_positions < 5)
    throw std::invalid_argument("next-sentence pairs need max_positions >= 5, got " + std::to_string(max_positions));
  const auto& chunk = chunks[k];
  std::mt19937_64 rng(rng_seed);
  const size_t n = chunk.size();
  const size_t a_end = n >= 2 ? std::uniform_int_distribution<size_t>(1, n - 1)(rng) : 1;
  const bool is_next = n >= 2 && std::uniform_real_distribution<double>(0.0, 1.0)(rng) < 0.5;
  auto append = [](TokenIds& to, const TokenIds& from) { to.insert(to.end(), from.begin(), from.end()); };
  TokenIds a, b;
  for (size_t i = 0; i < a_end; ++i) append(a, chunk[i]);
  if (is_next) {
    for (size_t i = a_end; i < n; ++i) append(b, chunk[i]);
  } else {
    // Another chunk, drawn without k; from one of its sentences on, as much as A leaves room for.
    size_t j = std::uniform_int_distribution<size_t>(0, chunks.size() - 2)(rng);
    if (j >= k) ++j;
    const auto& other = chunks[j];
    const int64_t room = std::max<int64_t>(1, max_positions - 3 - static_cast<int64_t>(a.size()));
    for (size_t i = std::uniform_int_distribution<size_t>(0, other.size() - 1)(rng);
         i < other.size() && (b.empty() || static_cast<int64_t>(b.size() + other[i].size()) <= room); ++i)
      append(b, other[i]);
  }
  return {pair_input(a, b, max_positions), is_next};
}

bool is_special_for_masking(int64_t id) {
  return id == kPadId || id == kBosId || id == kEosId || id == kClsId || id == kSepId || id == kMaskId;
}

uint64_t mix_seed(std::initializer_list<uint64_t> values) {
  uint64_t h = 0x9E3779B97F4A7C15ull;
  for (uint64_t v : values) {
    uint64_t z = h + v + 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    h = z ^ (z >> 31);
  }
  return h;
}

MaskedSequence mask_sequence(const TokenIds& tokens, const MaskingOptions& o, uint64_t rng_seed) {
  if (o.vocab_size <= o.first_random_id)
    throw std::invalid_argument("masking needs vocab_size > " + std::to_string(o.first_random_id) + ", got " +
                                std::to_string(o.vocab_size));
  const bool whole_words = !o.word_start.empty();
  if (whole_words && static_cast<int64_t>(o.word_start.size()) < o.vocab_size)
    throw std::invalid_argument("whole-word masking needs word_start for every id of the vocabulary");
  // Units: runs of maskable positions; a unit is one piece, or a word's pieces.
  std::vector<std::vector<int64_t>> units;
  int64_t maskable = 0;
  for (int64_t t = 0; t < static_cast<int64_t>(tokens.size()); ++t) {
    const int64_t id = tokens[t];
    if (is_special_for_masking(id)) continue;
    ++maskable;
    const bool continues = whole_words && !units.empty() && units.back().back() == t - 1 &&
                           id >= 0 && id < o.vocab_size && !o.word_start[id];
    if (continues) units.back().push_back(t);
    else units.push_back({t});
  }
  MaskedSequence out{tokens, {}, {}};
  if (maskable == 0) return out;
  const int64_t budget = std::max<int64_t>(1, std::llround(o.mask_prob * static_cast<double>(maskable)));
  std::mt19937_64 rng(rng_seed);
  std::shuffle(units.begin(), units.end(), rng);
  std::vector<int64_t>& chosen = out.positions;
  for (const auto& unit : units) {
    if (static_cast<int64_t>(chosen.size()) >= budget) break;
    // BERT skips a word that would overshoot the budget and tries the next.
    if (static_cast<int64_t>(chosen.size() + unit.size()) > budget) continue;
    chosen.insert(chosen.end(), unit.begin(), unit.end());
  }
  std::sort(chosen.begin(), chosen.end());
  std::uniform_real_distribution<double> coin(0.0, 1.0);
  std::uniform_int_distribution<int64_t> random_piece(o.first_random_id, o.vocab_size - 1);
  for (int64_t t : chosen) {
    out.targets.push_back(tokens[t]);
    const double r = coin(rng);
    if (r < o.replace_mask) out.input[t] = kMaskId;
    else if (r < o.replace_mask + o.replace_random) out.input[t] = random_piece(rng);
  }
  return out;
}

}  // namespace nlpzoo
