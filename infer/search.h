#pragma once
// Decoding through the IncrementalDecoder seam: greedy search and beam search with length
// normalisation. Both run any model that implements models/incremental_decoder.h (the
// attention RNN, the Transformer), on whatever device the source batch is on.
//
// Conventions shared by both searches:
//  * A hypothesis' tokens exclude BOS and EOS. Its `length` — the number the length penalty
//    and the maximum length count — includes EOS when the hypothesis is finished: the model
//    had to predict EOS, and that prediction is in log_prob, so it is counted as a step.
//  * The maximum target length of sentence b is
//        max_len_b = max(1, min(max_length, floor(max_length_ratio * S_b + max_length_offset)))
//    where S_b is the number of non-pad tokens in src row b (its EOS included). It counts in
//    the same unit as `length`: a finished hypothesis has at most max_len_b - 1 tokens, one
//    cut at the limit has exactly max_len_b tokens.
//  * kPadId and kBosId are never produced (their log-probs are set to -inf before choosing):
//    neither ever appears in a training target, so choosing them is always a model error.
//    The log-probs summed are the model's own, not renormalised. EOS is likewise never
//    produced before min_length tokens, nor a token that repeats an n-gram of the
//    hypothesis when no_repeat_ngram_size = n > 0. With repetition_penalty != 1 the log-prob of a
//    token the hypothesis already holds is scaled (see SearchOptions) and summed as scaled.
#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "models/incremental_decoder.h"

namespace nlpzoo {

/// How a hypothesis' summed log-probability is normalised by its length.
enum class LengthPenaltyForm {
  kCourse,  // lp(len) = len^alpha
  kGnmt,    // lp(len) = ((5 + len) / 6)^alpha  (Wu et al. 2016, "Google's Neural Machine
            // Translation System", eq. 14; their coverage penalty is not implemented)
};

/// The length penalty lp(length) a summed log-probability is divided by. alpha = 0 gives 1
/// for both forms (no normalisation). Throws std::invalid_argument when length < 1 (every
/// hypothesis has length >= 1, and the course form would divide by zero at 0).
double length_penalty(int64_t length, double alpha, LengthPenaltyForm form);

/// Parses "course" | "gnmt" (the --length-penalty-form values). Throws UserError naming the
/// value otherwise.
LengthPenaltyForm parse_length_penalty_form(const std::string& name);

/// When beam search may stop a sentence before its maximum length (--early-stopping; the
/// values are Hugging Face's early_stopping = "never" and True).
enum class EarlyStopping {
  kNever,  // only when no live hypothesis can still beat the n_best-th finished one (exact)
  kBeam,   // as soon as beam_size hypotheses finished: fairseq's rule and the Python reference's
};

/// Parses "never" | "beam" (the --early-stopping values). Throws UserError naming the value
/// otherwise.
EarlyStopping parse_early_stopping(const std::string& name);

/// Settings of greedy_search and beam_search. The option names in errors are the CLI's.
struct SearchOptions {
  int64_t beam_size = 5;           // --beam-size, >= 1 (beam search only)
  int64_t n_best = 1;              // --n-best: hypotheses returned per sentence, 1..beam_size
  double length_penalty = 0.7;     // --length-penalty: alpha (finite); 0 = no normalisation
  LengthPenaltyForm length_penalty_form = LengthPenaltyForm::kCourse;
  double max_length_ratio = 1.5;   // --max-length-ratio, >= 0 (see max_len_b above)
  int64_t max_length_offset = 10;  // --max-length-offset
  int64_t max_length = 256;        // --max-length, >= 1
  // --min-length, >= 0: EOS may not end a hypothesis of fewer tokens (its log-prob is taken as
  // -inf until then). 1, fairseq's default, rules out the empty output, which a weak model's
  // EOS can otherwise win as the search finds better-scoring hypotheses (Stahlberg and Byrne
  // 2019). When max_len_b <= min_length no hypothesis can finish: all are cut.
  int64_t min_length = 1;
  // --no-repeat-ngram-size, >= 0 (fairseq's): a token that would complete an n-gram the
  // hypothesis already contains gets log-prob -inf. 0 = off. n = 1 forbids any repeated token.
  int64_t no_repeat_ngram_size = 0;
  // --repetition-penalty, finite and > 0 (Hugging Face's repetition_penalty): the log-prob of
  // every token the hypothesis already holds is multiplied by it before choosing, so > 1 makes
  // a repeat less likely (log-probs are <= 0) and 1 is off. Keskar et al. 2019 (CTRL), sec. 4.1,
  // divide such tokens' logits by it; on log-probs Hugging Face multiplies, as here. The
  // penalised log-prob is what the hypothesis sums and reports.
  double repetition_penalty = 1.0;
  // --early-stopping (beam search only): see beam_search's stopping rule.
  EarlyStopping early_stopping = EarlyStopping::kNever;
  bool keep_attention = false;     // fill Hypothesis::attention
};

/// The checks beam_search makes before it decodes (greedy_search makes the length ones), for a
/// caller that wants bad options reported before slow work: --beam-size >= 1, --n-best in
/// 1..--beam-size, --max-length >= 1, --max-length-ratio finite and >= 0, --length-penalty
/// finite, --min-length >= 0, --no-repeat-ngram-size >= 0, --repetition-penalty finite and > 0.
/// Throws UserError naming the option and its value.
void validate_search_options(const SearchOptions& options);

/// One decoded target sentence.
struct Hypothesis {
  std::vector<int64_t> tokens;  // target ids, without BOS, without EOS
  double log_prob = 0;          // sum of the chosen tokens' log-probs, EOS's included if finished
  // The model's log-prob of each predicted token, in order, EOS's last if finished: `length`
  // entries that sum to log_prob (fairseq's positional scores); greedy's stuck row (log_prob
  // -inf: no possible token) has only its tokens' entries. With repetition_penalty != 1 a
  // repeated token's entry is its penalised log-prob, the value the search summed.
  std::vector<double> token_log_probs;
  double score = 0;             // log_prob / length_penalty(length)
  int64_t length = 0;           // tokens.size() + 1 if finished (EOS counts), else tokens.size()
  bool finished = false;        // ended with EOS; false: cut at the maximum length
  // Only with keep_attention and a model that returns attention: [length][S_b], row t the
  // attention of the step that predicted token t (the last row, of a finished hypothesis,
  // predicted EOS), over the sentence's S_b real source positions. Empty otherwise.
  std::vector<std::vector<float>> attention;
};

/// Greedy search: every row takes the arg-max token until it produces EOS or reaches its
/// maximum length; all live rows are decoded in one step call, and rows that stop are
/// dropped from the batch. Returns one hypothesis per sentence, scored with the options'
/// length penalty (which never changes what greedy chooses).
///
/// src: [B, S] int64, padded with kPadId at the end, rows ending with kEosId, on the model's
/// device. Runs under torch::NoGradGuard; the caller puts the model in eval mode.
/// Throws UserError on invalid length options (--max-length, --max-length-ratio,
/// --length-penalty, --min-length), c10::Error when src is not a 2-D int64 tensor.
std::vector<Hypothesis> greedy_search(IncrementalDecoder& model, const torch::Tensor& src,
                                      const SearchOptions& options);

/// Beam search with summed log-probabilities and length-normalised ranking.
///
/// Each sentence keeps beam_size live hypotheses; the rows of all live sentences x beams are
/// decoded in one step call and reordered with DecoderState::index_select. At every step a
/// sentence's candidates (live hypothesis + next token) are ranked by summed log-prob and the
/// best 2 * beam_size are taken: every EOS candidate among them becomes a finished hypothesis
/// (finished hypotheses are never extended), and the best beam_size non-EOS candidates form
/// the next beam (the 2 * beam_size always hold that many, since each live hypothesis gives at
/// most one EOS candidate). fairseq and Hugging Face finish only the EOS candidates ranked
/// within the first beam_size and drop the others, although one of them can be the best
/// result the search would find (13 of 200 sentences of a trained model got a lower
/// model score from beam 5 than from greedy with their rule); keeping them makes the result
/// score at least as well as theirs, since the live beams are the same. At max_len_b the live hypotheses
/// are cut (finished = false) and join the finished ones; all are ranked by the same score
/// log_prob / length_penalty(length).
///
/// Stopping rule: a sentence stops before max_len_b only when it has at least n_best
/// finished hypotheses and no live hypothesis can still beat the n_best-th best of them.
/// Since log-probs are <= 0, a live hypothesis' log_prob L can only fall, and its final
/// length lies in [t + 1, max_len_b] (t: its tokens so far), so its score is at most
/// L / max(lp(t + 1), lp(max_len_b)) — lp is monotonic in the length for any alpha. With
/// alpha = 0 this is the usual "best live log-prob is below the n_best-th finished" rule;
/// with alpha > 0 the search goes on after the top beam ends while a longer hypothesis could
/// still win after normalisation.
/// EarlyStopping::kBeam stops a sentence as soon as it has beam_size finished hypotheses
/// (fairseq, Hugging Face's early_stopping=True, the Python reference): fewer steps (beam 5
/// at batch 1 on the GRU bench model: 6.15 vs 5.88 sentences/s), and a result that can score
/// below the exact rule's (BLEU 23.76 vs 24.03 on 200 verses).
///
/// With beam_size 1 the live hypothesis follows greedy's arg-max path, and greedy's result
/// joins the finished ones when greedy stops; the search may go on past it (the second-best
/// token continues while the bound allows) and past an EOS ranked second, so it returns
/// greedy's hypothesis or a better-scoring one, whatever alpha is.
///
/// src: as for greedy_search. Returns, per sentence, its n_best hypotheses best first (ties
/// in score keep the order they were found in); fewer only when the model's -inf log-probs
/// leave fewer than beam_size possible continuations (never with a real softmax). Throws UserError on invalid options (--beam-size,
/// --n-best, and those of greedy_search), c10::Error when src is not a 2-D int64 tensor.
std::vector<std::vector<Hypothesis>> beam_search(IncrementalDecoder& model, const torch::Tensor& src,
                                                 const SearchOptions& options);

/// Forced decoding (teacher forcing through the same seam): the model's log-probability of
/// each given target, token by token as the searches read them, with nothing masked or
/// penalised (the model's own scores, which a finished hypothesis' token_log_probs equal when
/// no repetition penalty or n-gram block applies). targets[b]: ids of sentence b without BOS
/// and EOS. Returns per sentence targets[b].size() + 1 log-probs, EOS's last; their sum
/// divided by length_penalty(targets[b].size() + 1) is the score beam search ranks by.
/// src: as for greedy_search, one row per target. Runs under torch::NoGradGuard.
std::vector<std::vector<double>> forced_log_probs(IncrementalDecoder& model, const torch::Tensor& src,
                                                  const std::vector<std::vector<int64_t>>& targets);

}  // namespace nlpzoo
