#include "datasets/word2vec_corpus.h"

#include <cmath>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <string_view>

#include "core/io.h"

namespace nlpzoo {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f'; }

// Calls f(word) for every word of `line`, without copying it.
template <class F>
void for_each_word(std::string_view line, F&& f) {
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && is_space(line[i])) ++i;
    const size_t start = i;
    while (i < line.size() && !is_space(line[i])) ++i;
    if (i > start) f(line.substr(start, i - start));
  }
}

}  // namespace

WordVocabulary::WordVocabulary(std::vector<std::string> words, std::vector<int64_t> counts)
    : words_(std::move(words)), counts_(std::move(counts)) {
  if (words_.size() != counts_.size()) throw std::invalid_argument("WordVocabulary: words and counts differ in size");
  index_.reserve(words_.size());
  for (size_t i = 0; i < words_.size(); ++i) {
    if (words_[i].empty()) throw std::invalid_argument("WordVocabulary: empty word");
    if (counts_[i] < 1 || (i > 0 && counts_[i] > counts_[i - 1]))
      throw std::invalid_argument("WordVocabulary: counts must be positive and non-increasing (word '" + words_[i] + "')");
    if (!index_.emplace(words_[i], static_cast<int32_t>(i)).second)
      throw std::invalid_argument("WordVocabulary: word '" + words_[i] + "' is repeated");
    total_ += counts_[i];
  }
}

int32_t WordVocabulary::find(const std::string& word) const {
  auto it = index_.find(word);
  return it == index_.end() ? -1 : it->second;
}

std::string WordVocabulary::to_text() const {
  std::string out;
  for (size_t i = 0; i < words_.size(); ++i) out += words_[i] + " " + std::to_string(counts_[i]) + "\n";
  return out;
}

WordVocabulary WordVocabulary::from_text(const std::string& text, const std::string& origin) {
  std::vector<std::string> words;
  std::vector<int64_t> counts;
  std::istringstream in(text);
  int64_t line_no = 0;
  for (std::string line; std::getline(in, line);) {
    if (++line_no == 1) strip_utf8_bom(line);
    std::vector<std::string> fields = split_words(line);
    const std::string where = origin + ":" + std::to_string(line_no) + ": ";
    if (fields.size() != 2) throw UserError(where + "expected \"word count\", got '" + line + "'");
    int64_t count = 0;
    try {
      size_t used = 0;
      count = std::stoll(fields[1], &used);
      if (used != fields[1].size()) count = 0;
    } catch (const std::exception&) {
    }
    if (count < 1) throw UserError(where + "the count '" + fields[1] + "' is not a positive integer");
    if (!counts.empty() && count > counts.back())
      throw UserError(where + "counts must not increase (word2vec's vocabulary is sorted by decreasing count)");
    words.push_back(fields[0]);
    counts.push_back(count);
  }
  try {
    return WordVocabulary(std::move(words), std::move(counts));
  } catch (const std::invalid_argument& e) {
    throw UserError(origin + ": " + e.what());
  }
}

std::vector<std::string> split_words(const std::string& line) {
  std::vector<std::string> words;
  for_each_word(line, [&](std::string_view w) { words.emplace_back(w); });
  return words;
}

void WordCounter::add(const std::string& line) {
  for_each_word(line, [&](std::string_view w) {
    ++counts_[std::string(w)];
    ++words_;
  });
}

WordVocabulary WordCounter::vocabulary(int64_t min_count) const {
  std::vector<std::pair<const std::string*, int64_t>> kept;
  for (const auto& [w, c] : counts_)
    if (c >= min_count) kept.emplace_back(&w, c);
  std::sort(kept.begin(), kept.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : *a.first < *b.first;
  });
  std::vector<std::string> words;
  std::vector<int64_t> cs;
  words.reserve(kept.size());
  cs.reserve(kept.size());
  for (const auto& [w, c] : kept) {
    words.push_back(*w);
    cs.push_back(c);
  }
  return WordVocabulary(std::move(words), std::move(cs));
}

WordVocabulary count_words(const std::vector<std::string>& lines, int64_t min_count) {
  WordCounter counter;
  for (const auto& line : lines) counter.add(line);
  return counter.vocabulary(min_count);
}

double keep_probability(int64_t count, int64_t total, double sample) {
  if (sample <= 0 || count <= 0) return 1.0;
  const double t = sample * static_cast<double>(total);
  const double f = static_cast<double>(count);
  return std::min(1.0, (std::sqrt(f / t) + 1) * t / f);
}

void EncodedLines::add(const std::string& line, const WordVocabulary& vocab) {
  for_each_word(line, [&](std::string_view w) {
    // find() takes a std::string; a short-lived copy is cheaper than a second index.
    const int32_t id = vocab.find(std::string(w));
    if (id >= 0) ids.push_back(id);
  });
  offsets.push_back(static_cast<int64_t>(ids.size()));
}

int64_t stride_permutation(int64_t index, int64_t n, uint64_t seed, uint64_t epoch) {
  if (n <= 1) return index;
  std::seed_seq seq{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32), 0x5eedu, static_cast<uint32_t>(epoch),
                    static_cast<uint32_t>(epoch >> 32)};
  std::mt19937_64 rng(seq);
  int64_t a = 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(n - 1));
  while (std::gcd(a, n) != 1) a = a % (n - 1) + 1;  // reaches a = 1 at worst
  const int64_t b = static_cast<int64_t>(rng() % static_cast<uint64_t>(n));
  return static_cast<int64_t>((static_cast<unsigned __int128>(a) * static_cast<uint64_t>(index) + b) % n);
}

void skip_gram_pairs(const std::vector<int32_t>& sentence, int64_t window, std::mt19937_64& rng,
                     std::vector<int64_t>& centre, std::vector<int64_t>& context) {
  for_each_window(static_cast<int64_t>(sentence.size()), window, rng, [&](int64_t i, int64_t first, int64_t last) {
    for (int64_t j = first; j <= last; ++j) {
      if (j == i) continue;
      centre.push_back(sentence[i]);
      context.push_back(sentence[j]);
    }
  });
}

}  // namespace nlpzoo
