#pragma once
// BLEU (Papineni et al., 2002, "BLEU: a Method for Automatic Evaluation of Machine
// Translation") computed exactly as sacreBLEU 2.x does it (Post, 2018, "A Call for Clarity in
// Reporting BLEU Scores"), so that numbers printed by nlpzoo can be compared with published
// sacreBLEU numbers. Written from the description in shared/data/bleu/README.md (sacreBLEU
// commit f615c72, v2.6.0) and checked against sacreBLEU's own test vectors in tests/test_bleu.cpp.
//
// Supported: the `13a` tokenizer (mteval-v13a, sacreBLEU's default) and `none`.
// Not supported: `intl`, `char`, `zh`, `ja-mecab`, `ko-mecab`, `flores*`, `spm`.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace nlpzoo {

/// Tokenizer applied to hypotheses and references before n-grams are counted.
enum class BleuTokenize {
  k13a,   // mteval-v13a rules (see tokenize_13a)
  kNone,  // the text is used as given; only whitespace splits tokens
};

/// How orders with no matching n-gram are scored (Chen & Cherry, 2014, "A Systematic
/// Comparison of Smoothing Techniques for Sentence-Level BLEU").
enum class BleuSmooth {
  kExp,    // the i-th order with no match gets precision 1/(2^i * total) (NIST, mteval-v13a)
  kFloor,  // an order with no match gets value/total (Chen & Cherry method 1; default value 0.1)
  kAddK,   // orders n >= 2 use (count+k)/(total+k) (Chen & Cherry method 2; default k = 1)
  kNone,   // plain precisions: any order with no match makes the score 0
};

/// Parses "13a" | "none". Throws UserError naming the value otherwise.
BleuTokenize parse_bleu_tokenize(const std::string& name);
/// Parses "exp" | "floor" | "add-k" | "none". Throws UserError naming the value otherwise.
BleuSmooth parse_bleu_smooth(const std::string& name);
std::string to_string(BleuTokenize tokenize);
std::string to_string(BleuSmooth smooth);

/// Settings of a BLEU computation. The defaults are sacreBLEU's `BLEU()` class defaults
/// (corpus BLEU); sentence_bleu callers usually want use_effective_order = true, as
/// sacreBLEU's `sentence_bleu` sets it.
struct BleuOptions {
  BleuTokenize tokenize = BleuTokenize::k13a;
  BleuSmooth smooth_method = BleuSmooth::kExp;
  // Value for floor / add-k; nullopt means the method's default (floor 0.1, add-k 1).
  // exp and none ignore it.
  std::optional<double> smooth_value;
  // Lowercase before tokenizing (Python's str.lower(); see lowercase_utf8 for the limits).
  bool lowercase = false;
  // Take the geometric mean only up to the last order that has hypothesis n-grams
  // (the orders after the first order whose total is 0 are left out).
  bool use_effective_order = false;
  // N: the highest n-gram order; BLEU-4 when 4. Must be >= 1.
  int max_ngram_order = 4;
};

/// Sufficient statistics of BLEU, summed over segments (sacreBLEU's stats vector).
struct BleuStats {
  int64_t sys_len = 0;          // hypothesis tokens
  int64_t ref_len = 0;          // closest reference length, ties to the shorter reference
  std::vector<int64_t> counts;  // [N] clipped n-gram matches of order n+1
  std::vector<int64_t> totals;  // [N] hypothesis n-grams of order n+1
  BleuStats& operator+=(const BleuStats& other);
};

/// A BLEU score and what it was computed from.
struct BleuScore {
  double score = 0;                // 0..100
  std::vector<double> precisions;  // [N] modified n-gram precisions in percent (smoothed)
  double bp = 0;                   // brevity penalty, exp(1 - ref_len/sys_len) or 1
  double ratio = 0;                // sys_len / ref_len (0 when ref_len is 0)
  int64_t sys_len = 0;
  int64_t ref_len = 0;
  std::vector<double> counts;  // [N] matches; include k for orders >= 2 under add-k
  std::vector<double> totals;  // [N] hypothesis n-grams; include k likewise
  /// sacreBLEU's one-line summary, e.g.
  /// "BLEU = 48.53 82.4/50.0/45.5/37.5 (BP = 0.943 ratio = 0.944 hyp_len = 17 ref_len = 18)".
  std::string format() const;
};

/// Python's str.lower() on UTF-8 text, for ASCII, Latin-1, Latin Extended-A, the
/// Romanian/Latin Extended-B pairs U+0200..U+0233, basic Greek (with final sigma) and
/// basic Cyrillic (U+0400..U+042F). Other code points, and invalid UTF-8 bytes, are copied
/// unchanged: sacreBLEU's lowercase is full Unicode, so text with other capitals (e.g.
/// Armenian, Georgian, fullwidth Latin) will not match it under --lowercase.
std::string lowercase_utf8(const std::string& text);

/// Splits on runs of Python's whitespace set (str.split() with no argument): U+0009..U+000D,
/// U+001C..U+0020, U+0085, U+00A0, U+1680, U+2000..U+200A, U+2028, U+2029, U+202F, U+205F,
/// U+3000, decoded from UTF-8. U+200B and U+FEFF are not whitespace.
std::vector<std::string> split_whitespace(const std::string& text);

/// sacreBLEU's `13a` tokenizer (mteval-v13a.pl): drops "<skipped>", joins "-\n", unescapes
/// &quot; &amp; &lt; &gt; (in that order, so "&amp;lt;" -> "<"), splits off ASCII punctuation
/// except ' , . -, splits periods/commas not between digits and hyphens after digits, then
/// collapses whitespace. Works on UTF-8 bytes; non-ASCII text is never split.
std::string tokenize_13a(const std::string& text);

/// Applies the options' lowercasing, trailing-whitespace strip and tokenizer to one segment
/// and returns its tokens.
std::vector<std::string> bleu_tokens(const std::string& segment, const BleuOptions& opts);

/// Statistics of one segment against its references (any number >= 0; an empty string is a
/// reference of length 0). With no reference at all ref_len is 0 and nothing matches.
BleuStats bleu_segment_stats(const std::string& hyp, const std::vector<std::string>& refs,
                             const BleuOptions& opts);

/// Sums segment statistics over a corpus. ref_streams[k][i] is the k-th reference of hyps[i]
/// (sacreBLEU's layout). Throws UserError when a stream's length differs from hyps'.
BleuStats bleu_corpus_stats(const std::vector<std::string>& hyps,
                            const std::vector<std::vector<std::string>>& ref_streams,
                            const BleuOptions& opts);

/// BLEU from statistics (sacreBLEU's BLEU.compute_bleu): score = BP * exp((1/eff) *
/// sum_{n<=eff} log p_n) with log(0) taken as -9999999999 so any zero precision gives 0.
/// If no order has a match the score is 0 whatever the smoothing. counts/totals must have
/// at least max_ngram_order entries; throws std::invalid_argument otherwise.
BleuScore compute_bleu(const std::vector<int64_t>& counts, const std::vector<int64_t>& totals,
                       int64_t sys_len, int64_t ref_len, BleuSmooth smooth_method,
                       std::optional<double> smooth_value, bool use_effective_order,
                       int max_ngram_order);
/// compute_bleu with the smoothing settings of `opts`.
BleuScore compute_bleu(const BleuStats& stats, const BleuOptions& opts);

/// Corpus BLEU (sacreBLEU's BLEU.corpus_score); ref_streams as in bleu_corpus_stats.
BleuScore corpus_bleu(const std::vector<std::string>& hyps,
                      const std::vector<std::vector<std::string>>& ref_streams,
                      const BleuOptions& opts = {});

/// Sentence BLEU (sacreBLEU's BLEU.sentence_score): one segment, each reference its own
/// stream. sacreBLEU's compat sentence_bleu also sets use_effective_order = true.
BleuScore sentence_bleu(const std::string& hyp, const std::vector<std::string>& refs,
                        const BleuOptions& opts);

/// The settings in sacreBLEU 2.x's signature style:
/// "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:nlpzoo". floor and add-k add their
/// value as "smooth:floor[0.10]". A max_ngram_order other than 4 adds "|ngram:N" (sacreBLEU
/// does not print it). The version field is "nlpzoo", not a sacreBLEU version: it says the
/// numbers come from this implementation, which matches sacreBLEU v2.6.0's vectors.
std::string bleu_signature(const BleuOptions& opts, int num_refs);

}  // namespace nlpzoo
