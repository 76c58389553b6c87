#pragma once
// Error analysis of beam search (the course's "is it the search or the model?"): for each
// sentence, the model's score of the reference y* (forced decoding) against that of the search's
// output ŷ, both under the length normalisation the search ranks by. When
// score(y*) > score(ŷ) the model preferred the reference and the search did not find it: a
// search error (a wider beam may help). Otherwise the model itself prefers a wrong output: a
// model error (more data, regularisation or another architecture may help). Also the empty
// output's score, whose beating the search output Stahlberg and Byrne (2019) found common for
// exact search in NMT.
#include <cstdint>
#include <string>
#include <vector>

#include "datasets/parallel_corpus.h"
#include "infer/search.h"
#include "infer/translator.h"

namespace nlpzoo {

/// Both candidates of a comparison are scored as finished sentences by the model alone: the
/// summed log-probs of their tokens and EOS (forced decoding), divided by
/// length_penalty(tokens + 1). A hypothesis the search cut at its maximum length is rescored
/// with its EOS; repetition penalties and n-gram blocks of the search are not applied.
struct ForcedScore {
  double log_prob = 0;
  double score = 0;
  int64_t length = 0;  // tokens + 1 (EOS)
};

enum class SearchVerdict {
  kExact,        // ŷ is the reference (same pieces)
  kSearchError,  // score(y*) > score(ŷ)
  kModelError,   // score(y*) <= score(ŷ), ŷ != y*
};
std::string to_string(SearchVerdict verdict);

struct SearchOutput {
  int64_t beam_size = 1;
  std::vector<int64_t> tokens;  // ŷ, target ids without BOS/EOS
  ForcedScore model;            // ŷ rescored (see ForcedScore)
  bool cut = false;             // the search stopped ŷ at its maximum length (no EOS of its own)
  SearchVerdict verdict = SearchVerdict::kModelError;
};

struct SentenceAnalysis {
  int64_t index = 0;               // line of the split
  std::vector<int64_t> reference;  // y*'s target ids (cut to max_positions - 1 when reference_cut)
  bool reference_cut = false;
  ForcedScore reference_score;
  ForcedScore empty;               // the empty output: EOS alone
  std::vector<SearchOutput> outputs;  // one per beam size, in the order asked
};

struct BeamSummary {
  int64_t beam_size = 1;
  int64_t sentences = 0, exact = 0, search_errors = 0, model_errors = 0;
  int64_t empty_beats_output = 0;  // score(empty) > score(ŷ)
  // ŷ cut at the maximum length: rescored with an EOS the search never chose, so its search
  // error may be the length cap's (--max-length, --max-length-ratio), not the beam's.
  int64_t cut = 0;
  double mean_score = 0;           // of ŷ, over the sentences
};

struct SearchErrorReport {
  std::vector<SentenceAnalysis> sentences;  // the corpus' non-empty source lines, in order
  std::vector<BeamSummary> beams;           // one per beam size, in the order asked
  int64_t references_cut = 0;
  int64_t empty_sources = 0;  // lines with nothing to translate, left out
};

/// Decodes `corpus.src` with each of `beam_sizes` (1: greedy search, as translate does) under
/// `search` (its beam_size ignored) and compares every output with the reference
/// corpus.tgt[i], tokenized by `target` and cut to max_positions - 1 pieces when
/// max_positions > 0 (the longest target a model with learned positions can score). Throws
/// UserError for an empty `beam_sizes`, one below 1 or one given twice, and as beam_search for
/// bad options.
SearchErrorReport analyse_search_errors(const Translator& translator, const Tokenizer& target,
                                        const ParallelCorpus& corpus, int64_t max_positions,
                                        const std::vector<int64_t>& beam_sizes, const SearchOptions& search,
                                        int64_t batch_size);

/// The target ids of reference `text`, cut to max_positions - 1 pieces when max_positions > 0
/// (past that a model with learned positions has no row to score them), saying so in `cut`.
std::vector<int64_t> reference_ids(const Tokenizer& target, const std::string& text, int64_t max_positions, bool* cut);

/// The ForcedScore of `log_probs` (one per token, EOS's last) under `search`'s length penalty.
ForcedScore forced_score(const std::vector<double>& log_probs, const SearchOptions& search);

}  // namespace nlpzoo
