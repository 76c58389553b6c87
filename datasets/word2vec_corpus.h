#pragma once
// word2vec's corpus handling (Mikolov et al. 2013b; word2vec.c and gensim behave alike):
// a vocabulary of the words seen at least min_count times, in order of decreasing count;
// subsampling of frequent words; dynamic windows.
//
// Words: the corpus is read as word2vec.c and gensim's LineSentence read it: a word is a
// maximal run of bytes other than space, tab, '\r', '\n', '\v' and '\f'; a line is a
// sentence (windows never cross a line). No further normalisation happens here, because the
// corpus is already normalised by the shared pipeline that writes it (`nlpzoo data english`:
// normalize_words lowercases, folds diacritics and splits punctuation off, datasets/
// english_corpus.h). A SentencePiece `word` model would add nothing but a cost and two
// differences from word2vec: its trainer skips sentences longer than max_sentence_length
// (4192 bytes; long dictionary paragraphs) and pieces longer than max_sentencepiece_length,
// so its counts would not be the corpus's.
#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

namespace nlpzoo {

/// Words and their counts, in order of decreasing count (ties: byte order of the word), as
/// word2vec.c's and gensim's vocabularies are sorted; a word's id is its row.
class WordVocabulary {
 public:
  WordVocabulary() = default;
  /// Throws std::invalid_argument if the sizes differ, a word is empty or repeated, or the
  /// counts are not non-increasing.
  WordVocabulary(std::vector<std::string> words, std::vector<int64_t> counts);

  const std::vector<std::string>& words() const { return words_; }
  const std::vector<int64_t>& counts() const { return counts_; }
  int64_t size() const { return static_cast<int64_t>(words_.size()); }
  /// Σ counts: the corpus words the vocabulary covers (word2vec.c's train_words).
  int64_t total() const { return total_; }
  /// The id of `word`, -1 when it is not in the vocabulary.
  int32_t find(const std::string& word) const;

  /// word2vec.c's -save-vocab format: one "word count" line per word, in id order.
  std::string to_text() const;
  /// Reads to_text()'s format; `origin` names the source in errors. Throws UserError naming
  /// origin and line for a line that is not "word count" with count >= 1, a repeated word, or
  /// counts out of order.
  static WordVocabulary from_text(const std::string& text, const std::string& origin);

 private:
  std::vector<std::string> words_;
  std::vector<int64_t> counts_;
  std::unordered_map<std::string, int32_t> index_;
  int64_t total_ = 0;
};

/// The words of `line` (the word rule above).
std::vector<std::string> split_words(const std::string& line);

/// Counts the words of lines given one at a time, so a corpus need not be held whole to count it.
class WordCounter {
 public:
  void add(const std::string& line);
  /// Every word seen at least `min_count` times (min_count >= 1), ordered as WordVocabulary.
  WordVocabulary vocabulary(int64_t min_count) const;
  /// Words added so far, every occurrence (before min_count).
  int64_t words() const { return words_; }

 private:
  std::unordered_map<std::string, int64_t> counts_;
  int64_t words_ = 0;
};

/// The vocabulary of `lines`: every word seen at least `min_count` times (min_count >= 1).
WordVocabulary count_words(const std::vector<std::string>& lines, int64_t min_count);

/// Probability of keeping one occurrence of a word seen `count` times among `total` words
/// when frequent words are subsampled with threshold `sample` (word2vec.c, gensim):
///   t = sample * total;  keep(count) = min(1, (sqrt(count / t) + 1) * t / count).
/// sample = 0 keeps every word (returns 1).
double keep_probability(int64_t count, int64_t total, double sample);

/// Sentences as word ids: sentence s is ids[offsets[s], offsets[s+1]); words outside the
/// vocabulary are dropped (as word2vec.c does), so windows reach over them.
struct EncodedLines {
  std::vector<int32_t> ids;
  std::vector<int64_t> offsets{0};
  int64_t num_lines() const { return static_cast<int64_t>(offsets.size()) - 1; }
  /// Appends one line.
  void add(const std::string& line, const WordVocabulary& vocab);
};

/// A uniform double in [0, 1) from 53 random bits.
inline double uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

/// The dynamic window (Mikolov et al. 2013a, word2vec.c): for each position i of `sentence`
/// a reduced window b_i ~ U{1..window} is drawn with `rng`, and the context of i is every
/// position j != i with |i - j| <= b_i. Calls `visit(i, first, last)` for every i with a
/// non-empty context, the context being positions [first, last] without i. Throws nothing.
template <class Visit>
void for_each_window(int64_t length, int64_t window, std::mt19937_64& rng, Visit&& visit) {
  for (int64_t i = 0; i < length; ++i) {
    const int64_t b = 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(window));
    const int64_t first = std::max<int64_t>(0, i - b), last = std::min<int64_t>(length - 1, i + b);
    if (last > first) visit(i, first, last);
  }
}

/// Position `index` (in [0, n)) of a permutation of [0, n) drawn from (seed, epoch): the stride
/// permutation (a * index + b) mod n, a in [1, n) coprime to n, b in [0, n). It spreads
/// neighbouring indices far apart and needs no per-epoch table. Returns index when n <= 1.
int64_t stride_permutation(int64_t index, int64_t n, uint64_t seed, uint64_t epoch);

/// Skip-Gram (centre, context) pairs of one sentence of word ids with dynamic windows, in order
/// of centre position, then context position; appended to `centre` and `context`.
void skip_gram_pairs(const std::vector<int32_t>& sentence, int64_t window, std::mt19937_64& rng,
                     std::vector<int64_t>& centre, std::vector<int64_t>& context);

}  // namespace nlpzoo
