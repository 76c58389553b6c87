#pragma once
// Subword information for word vectors (Bojanowski et al. 2017, "Enriching Word Vectors with
// Subword Information", section 3.2): a word w is wrapped in the boundary marks "<" and ">",
// and represented by its own row plus one row per character n-gram of "<w>" with
// minn <= n <= maxn; an n-gram's row is found by hashing it into one of `bucket` rows, so
// unseen words (out of the vocabulary) still get a vector from their n-grams.
//
// As fastText (the authors' code, -minn/-maxn/-bucket):
//   * characters are UTF-8 code points: an n-gram never starts at or ends inside a
//     continuation byte (10xxxxxx), so a multi-byte character is never split (malformed UTF-8
//     is grouped by the same byte rule, never rejected);
//   * the whole "<w>" is an n-gram too when it has at most maxn characters (the paper's
//     "<where>"-style special sequence is the word's own row, which is separate);
//   * a 1-gram made of a lone boundary mark ("<" or ">", only possible with minn = 1) is left
//     out: it would be a row shared by every word;
//   * repeated n-grams (and hash collisions) are kept: "<aaaa>" lists "aaa" twice and its mean
//     counts it twice.
//
// Row layout, as fastText's input matrix: rows [0, V) are the vocabulary's words, row V + h is
// n-gram bucket h = hash(ngram) mod bucket.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace nlpzoo {

/// 32-bit FNV-1a over `bytes` (offset basis 2166136261, prime 16777619), as fastText's
/// Dictionary::hash computes it: each byte is sign-extended (cast to a signed char, then to
/// uint32) before the XOR. For ASCII bytes (< 0x80) this is textbook FNV-1a; a byte >= 0x80 is
/// XORed as 0xFFFFFFxx instead of 0x000000xx. We follow fastText so that the n-gram bucket of
/// every word, non-ASCII ones included, is the one fastText's .bin files use for the same
/// bucket count. Throws nothing.
uint32_t fnv1a_hash(std::string_view bytes);

/// The character n-grams of "<" + word + ">" with minn <= n <= maxn (n counted in UTF-8
/// characters), in fastText's order: by start character, then by length. maxn = 0 (no
/// subwords) returns none. Throws std::invalid_argument if minn < 1 or 0 < maxn < minn.
/// Example: "where", 3..3 -> <wh whe her ere re>.
std::vector<std::string> char_ngrams(const std::string& word, int64_t minn, int64_t maxn);

/// The bucket of each of char_ngrams(word, minn, maxn): fnv1a_hash(ngram) mod bucket, in
/// [0, bucket), same order. Throws std::invalid_argument as char_ngrams, or if bucket < 1
/// while maxn > 0.
std::vector<int64_t> ngram_buckets(const std::string& word, int64_t minn, int64_t maxn, int64_t bucket);

/// Every vocabulary word's input rows, computed once: the rows of word i are
/// rows[offsets[i], offsets[i+1]) = i, then V + b for each b of ngram_buckets(words[i]).
struct SubwordRows {
  std::vector<int64_t> rows;
  std::vector<int64_t> offsets{0};
  int64_t num_words() const { return static_cast<int64_t>(offsets.size()) - 1; }

  /// Replaces bags of word ids by bags of their rows, in place: bag j is
  /// words[offsets[j], offsets[j+1]) (the last bag runs to the end); afterwards `words` holds
  /// the words' rows one word after the other and `offsets` where each bag starts in it.
  /// Throws std::out_of_range for a word id outside [0, num_words()).
  void expand_bags(std::vector<int64_t>& words, std::vector<int64_t>& offsets) const;
};

/// The rows of `words` (V = words.size(), ids in order), as described at SubwordRows. Throws as
/// ngram_buckets.
SubwordRows subword_rows(const std::vector<std::string>& words, int64_t minn, int64_t maxn, int64_t bucket);

}  // namespace nlpzoo
