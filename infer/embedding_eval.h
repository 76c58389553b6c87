#pragma once
// Intrinsic evaluation of word vectors, computed as gensim's KeyedVectors does it so the
// numbers can be compared with published ones:
//  * word analogies (Mikolov, Chen, Corrado & Dean 2013, "Efficient Estimation of Word
//    Representations in Vector Space", the Google analogy set): accuracy per section and
//    overall, as gensim's evaluate_word_analogies(restrict_vocab=30000, case_insensitive=True);
//  * word-pair similarity (Finkelstein et al. 2002, WordSim-353): Spearman's ρ and Pearson's r
//    between human scores and cosine similarities, as gensim's evaluate_word_pairs.
#include <cstdint>
#include <string>
#include <vector>

#include "datasets/word_vectors.h"
#include "infer/embedding_queries.h"

namespace nlpzoo {

/// ASCII lowercase of `word` (bytes >= 0x80 unchanged). The evaluation sets are ASCII; gensim
/// folds with str.upper(), which agrees on them.
std::string fold_case(const std::string& word);

// ---------------------------------------------------------------------------------------------
// Analogies

struct AnalogyQuestion {
  std::string a, b, c, expected;  // a:b :: c:expected, as written in the file
  int64_t line = 0;               // 1-based line in the file
};
struct AnalogySection {
  std::string name;  // the text after ": " of the section line
  int64_t line = 0;
  std::vector<AnalogyQuestion> questions;
};

/// Reads the Google analogy format: "`: name`" section lines, then questions of exactly four
/// whitespace-separated words "a b c d" (a:b :: c:d). Blank lines are skipped. Throws
/// UserError "path:LINE: ..." for a question before any section line, a line that is not four
/// words, or a section line without a name; and naming the file when it is missing or holds no
/// question. (gensim skips a line that is not four words; we stop, as a typo there would
/// silently change the score.)
std::vector<AnalogySection> read_analogy_questions(const std::string& path);

struct AnalogyEvalOptions {
  // Only the first restrict_vocab rows (word2vec files list words by descending frequency)
  // may answer or be asked about; 0 = every row. gensim's default is 30000.
  int64_t restrict_vocab = 30000;
  // Fold questions and vocabulary with fold_case; a folded key stands for its first (most
  // frequent) row, and a prediction is right if its folded word equals the folded answer.
  bool case_insensitive = true;
  AnalogyMethod method = AnalogyMethod::kAdd;
  // Questions scored by one [batch, R] matmul (R allowed rows), lowered when R is large so
  // that one score matrix stays under 128 MiB (3CosMul holds three).
  int64_t batch = 1024;
};

struct AnalogyScore {
  std::string name;
  int64_t questions = 0;  // in the file
  int64_t seen = 0;       // all four words among the allowed rows: these are answered
  int64_t correct = 0;    // answered right (a, b and c excluded from the answers)
  /// correct / seen (gensim's section accuracy; 0 when nothing was seen).
  double accuracy() const { return seen > 0 ? static_cast<double>(correct) / seen : 0.0; }
  /// seen / questions (= 1 − gensim's oov_ratio / 100).
  double coverage() const { return questions > 0 ? static_cast<double>(seen) / questions : 0.0; }
};

struct AnalogyReport {
  std::vector<AnalogyScore> sections;  // in file order
  AnalogyScore semantic;               // sections whose name does not start with "gram"
  AnalogyScore syntactic;              // sections named "gram..." (Mikolov et al. 2013's split)
  AnalogyScore total;                  // every question: gensim's "Total accuracy"
  AnalogyEvalOptions options;
  /// A table: one row per section, then semantic, syntactic and total, with questions, seen,
  /// correct, accuracy % and coverage %.
  std::string table() const;
};

/// Answers every question whose four words are among the allowed rows, a whole section per
/// batch of matrix products against the unit-normalised allowed rows. Throws UserError when
/// options.restrict_vocab < 0 or options.batch < 1.
AnalogyReport evaluate_analogies(const WordVectors& vectors, const std::vector<AnalogySection>& sections,
                                 const AnalogyEvalOptions& options = {});

// ---------------------------------------------------------------------------------------------
// Word-pair similarity

struct WordPair {
  std::string a, b;
  double score = 0;  // human judgement (WordSim-353: 0-10)
  int64_t line = 0;
};

/// Reads "w1<TAB>w2<TAB>score" lines; lines starting with '#' (WordSim-353's header) and blank
/// lines are skipped. Throws UserError "path:LINE: ..." for a line that is not three
/// tab-separated fields or whose score is not a finite number; naming the file when it is
/// missing or holds no pair.
std::vector<WordPair> read_word_pairs(const std::string& path);

struct SimilarityOptions {
  int64_t restrict_vocab = 300000;  // as AnalogyEvalOptions; gensim's default here is 300000
  bool case_insensitive = true;     // as AnalogyEvalOptions
};

struct SimilarityReport {
  int64_t pairs = 0;  // in the file
  int64_t seen = 0;   // both words among the allowed rows: these are scored
  double spearman = 0;  // Spearman's ρ over the seen pairs (NaN when undefined)
  double pearson = 0;   // Pearson's r over the seen pairs (NaN when undefined)
  /// Pairs with a word out of vocabulary, in % of all pairs (gensim's oov_ratio).
  double oov_ratio() const { return pairs > 0 ? 100.0 * (pairs - seen) / pairs : 0.0; }
  std::string table() const;
};

SimilarityReport evaluate_word_pairs(const WordVectors& vectors, const std::vector<WordPair>& pairs,
                                     const SimilarityOptions& options = {});

}  // namespace nlpzoo
