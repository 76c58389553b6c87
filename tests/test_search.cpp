#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <iostream>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/io.h"
#include "datasets/special_ids.h"
#include "infer/search.h"
#include "tests/test_util.h"
#include "models/seq2seq/seq2seq.h"

using namespace nlpzoo;

namespace {

constexpr int64_t kA = 4, kB = 5;  // the fake decoders' two words
using Tokens = std::vector<int64_t>;
using Dist = std::map<int64_t, double>;  // token -> probability; unlisted tokens get 0

// The log-prob the search sees for probability p: the fake decoder hands it over as float32.
double flog(double p) { return static_cast<double>(static_cast<float>(std::log(p))); }

// A deterministic decoder whose next-token distribution is looked up by the prefix decoded
// so far (BOS excluded); unlisted prefixes use `fallback`. The prefix lives in the state, so
// beam reordering through DecoderState::index_select moves it along. Records every prefix it
// is asked to extend and the rows of every step call.
class TableDecoder : public IncrementalDecoder {
 public:
  TableDecoder(std::map<Tokens, Dist> table, Dist fallback, int64_t vocab = 6)
      : table_(std::move(table)), fallback_(std::move(fallback)), vocab_(vocab) {}

  DecoderState init(const torch::Tensor& src) override {
    DecoderState st;
    st.tensors["prefix"] = torch::empty({src.size(0), 0}, torch::kLong).to(src.device());
    return st;
  }

  DecoderStep step(const DecoderState& state, const torch::Tensor& prev_tokens) override {
    auto prefix = torch::cat({state.tensors.at("prefix"), prev_tokens.unsqueeze(1)}, 1);
    auto host = prefix.to(torch::kCPU).contiguous();
    const int64_t n = host.size(0), width = host.size(1);
    rows_per_call.push_back(n);
    auto log_probs = torch::full({n, vocab_}, -std::numeric_limits<float>::infinity());
    auto lp = log_probs.accessor<float, 2>();
    auto px = host.accessor<int64_t, 2>();
    for (int64_t r = 0; r < n; ++r) {
      EXPECT_EQ(px[r][0], kBosId);
      Tokens p;
      for (int64_t i = 1; i < width; ++i) p.push_back(px[r][i]);
      extended.push_back(p);
      auto it = table_.find(p);
      for (const auto& [token, prob] : it == table_.end() ? fallback_ : it->second)
        lp[r][token] = static_cast<float>(std::log(prob));
    }
    DecoderStep out;
    out.log_probs = log_probs.to(prev_tokens.device());
    out.state.tensors["prefix"] = prefix;
    return out;
  }

  int64_t target_vocab_size() const override { return vocab_; }

  std::vector<Tokens> extended;
  std::vector<int64_t> rows_per_call;

 private:
  std::map<Tokens, Dist> table_;
  Dist fallback_;
  int64_t vocab_;
};

torch::Tensor one_source() { return torch::tensor({kA, kEosId}, torch::kLong).view({1, 2}); }

SearchOptions opts(int64_t beam, int64_t n_best, double alpha) {
  SearchOptions o;
  o.beam_size = beam;
  o.n_best = n_best;
  o.length_penalty = alpha;
  return o;
}

// A small random attention RNN whose EOS logit is raised a little, so that hypotheses end at
// different lengths instead of all running to the maximum (bias 0) or stopping at once
// (bias >= 0.5); an untrained model has no better reason to end.
Seq2Seq random_seq2seq(uint64_t seed, CellType cell = CellType::kGru, AttentionType att = AttentionType::kAdditive,
                       double eos_bias = 0.3) {
  torch::manual_seed(seed);
  Seq2Seq model(Seq2SeqOptions().src_vocab_size(13).tgt_vocab_size(11).embed_dim(8).hidden_size(12)
                    .num_layers(1).cell(cell).attention(att).attention_dim(7).dropout(0.0));
  model->eval();
  torch::NoGradGuard ng;
  model->output->bias[kEosId] += eos_bias;
  return model;
}

// Four sources of lengths 5, 3, 6 and 2 (EOS included), padded at the end.
torch::Tensor padded_sources() {
  return torch::tensor({5, 6, 7, 8, 3, 0,
                        9, 4, 3, 0, 0, 0,
                        10, 11, 12, 5, 6, 3,
                        7, 3, 0, 0, 0, 0},
                       torch::kLong)
      .view({4, 6});
}
const std::vector<int64_t> kPaddedLengths = {5, 3, 6, 2};

void expect_scored_consistently(const Hypothesis& h, const SearchOptions& o) {
  EXPECT_EQ(h.length, static_cast<int64_t>(h.tokens.size()) + (h.finished ? 1 : 0));
  EXPECT_NEAR(h.score, h.log_prob / length_penalty(h.length, o.length_penalty, o.length_penalty_form), 1e-12);
  // Per-token scores: one per predicted piece, summed in order to exactly log_prob.
  ASSERT_EQ(static_cast<int64_t>(h.token_log_probs.size()), h.length);
  double sum = 0;
  for (double lp : h.token_log_probs) sum += lp;
  EXPECT_EQ(sum, h.log_prob);
  for (int64_t t : h.tokens) {
    EXPECT_NE(t, kEosId);
    EXPECT_NE(t, kBosId);
    EXPECT_NE(t, kPadId);
  }
}

using test::user_error_of;

}  // namespace

TEST(SearchLengthPenalty, CourseAndGnmtValuesByHand) {
  using F = LengthPenaltyForm;
  EXPECT_DOUBLE_EQ(length_penalty(1, 0.7, F::kCourse), 1.0);
  EXPECT_DOUBLE_EQ(length_penalty(4, 0.5, F::kCourse), 2.0);
  EXPECT_NEAR(length_penalty(8, 1.0 / 3.0, F::kCourse), 2.0, 1e-12);
  EXPECT_DOUBLE_EQ(length_penalty(3, 2.0, F::kCourse), 9.0);
  EXPECT_DOUBLE_EQ(length_penalty(10, 0.0, F::kCourse), 1.0);
  // GNMT: ((5 + len) / 6)^alpha.
  EXPECT_DOUBLE_EQ(length_penalty(1, 0.7, F::kGnmt), 1.0);
  EXPECT_DOUBLE_EQ(length_penalty(7, 1.0, F::kGnmt), 2.0);
  EXPECT_NEAR(length_penalty(13, 0.5, F::kGnmt), std::sqrt(3.0), 1e-12);
  EXPECT_DOUBLE_EQ(length_penalty(19, 2.0, F::kGnmt), 16.0);
  EXPECT_DOUBLE_EQ(length_penalty(10, 0.0, F::kGnmt), 1.0);
  EXPECT_THROW(length_penalty(0, 0.7, F::kCourse), std::invalid_argument);
}

TEST(SearchLengthPenalty, ParsesFormNames) {
  EXPECT_EQ(parse_length_penalty_form("course"), LengthPenaltyForm::kCourse);
  EXPECT_EQ(parse_length_penalty_form("gnmt"), LengthPenaltyForm::kGnmt);
  EXPECT_NE(user_error_of([] { parse_length_penalty_form("wu"); }).find("'wu'"), std::string::npos);
}

TEST(SearchOptionsValidation, ParsesEarlyStopping) {
  EXPECT_EQ(parse_early_stopping("never"), EarlyStopping::kNever);
  EXPECT_EQ(parse_early_stopping("beam"), EarlyStopping::kBeam);
  EXPECT_NE(user_error_of([] { parse_early_stopping("true"); }).find("'true'"), std::string::npos);
}

TEST(SearchOptionsValidation, BadOptionsNameTheFlag) {
  TableDecoder model({}, {{kEosId, 1.0}});
  auto src = one_source();
  auto beam = [&](SearchOptions o) { return user_error_of([&] { beam_search(model, src, o); }); };
  auto greedy = [&](SearchOptions o) { return user_error_of([&] { greedy_search(model, src, o); }); };
  SearchOptions o;
  o.beam_size = 0;
  o.n_best = 0;
  EXPECT_NE(beam(o).find("--beam-size"), std::string::npos);
  o = SearchOptions();
  o.n_best = 0;
  EXPECT_NE(beam(o).find("--n-best"), std::string::npos);
  o.n_best = 6;  // > beam_size 5
  EXPECT_NE(beam(o).find("--n-best"), std::string::npos);
  o = SearchOptions();
  o.max_length = 0;
  EXPECT_NE(beam(o).find("--max-length"), std::string::npos);
  EXPECT_NE(greedy(o).find("--max-length"), std::string::npos);
  o = SearchOptions();
  o.max_length_ratio = -1;
  EXPECT_NE(greedy(o).find("--max-length-ratio"), std::string::npos);
  o = SearchOptions();
  o.length_penalty = std::nan("");
  EXPECT_NE(beam(o).find("--length-penalty"), std::string::npos);
  o = SearchOptions();
  o.min_length = -1;
  EXPECT_NE(beam(o).find("--min-length"), std::string::npos);
  EXPECT_NE(greedy(o).find("--min-length"), std::string::npos);
  o = SearchOptions();
  o.no_repeat_ngram_size = -1;
  EXPECT_NE(beam(o).find("--no-repeat-ngram-size"), std::string::npos);
  EXPECT_NE(greedy(o).find("--no-repeat-ngram-size"), std::string::npos);
  for (double bad : {0.0, -1.5, std::nan(""), std::numeric_limits<double>::infinity()}) {
    o = SearchOptions();
    o.repetition_penalty = bad;
    EXPECT_NE(beam(o).find("--repetition-penalty"), std::string::npos) << bad;
    EXPECT_NE(greedy(o).find("--repetition-penalty"), std::string::npos) << bad;
  }
  // Greedy ignores the beam options.
  o = SearchOptions();
  o.beam_size = 0;
  EXPECT_NO_THROW(greedy_search(model, src, o));
}

// EOS may not end a hypothesis shorter than min_length: its log-prob counts as -inf until
// then, for greedy and beam alike. Default 1 (fairseq's): no empty output.
TEST(Search, MinLengthKeepsEosOutUntilThatManyTokens) {
  // EOS is the best token at every step; "a" second, "b" third.
  TableDecoder model({}, {{kEosId, 0.5}, {kA, 0.3}, {kB, 0.2}});
  auto src = one_source();
  for (int64_t min_length : {0, 1, 3}) {
    SCOPED_TRACE(min_length);
    auto o = opts(2, 1, 0.0);
    o.min_length = min_length;
    const auto g = greedy_search(model, src, o)[0];
    EXPECT_EQ(g.tokens, Tokens(min_length, kA));
    EXPECT_TRUE(g.finished);
    EXPECT_NEAR(g.log_prob, min_length * flog(0.3) + flog(0.5), 1e-12);
    const auto b = beam_search(model, src, o)[0][0];
    EXPECT_EQ(b.tokens, g.tokens);
    EXPECT_NEAR(b.log_prob, g.log_prob, 1e-12);
  }
  // The default rules out the empty output.
  EXPECT_EQ(SearchOptions().min_length, 1);
  EXPECT_EQ(greedy_search(model, src, SearchOptions())[0].tokens, Tokens({kA}));
  // Longer than the bound: nothing can finish, the hypotheses are cut at max_length.
  auto o = opts(2, 1, 0.0);
  o.min_length = 10;
  o.max_length = 4;
  const auto cut = beam_search(model, src, o)[0][0];
  EXPECT_FALSE(cut.finished);
  EXPECT_EQ(cut.tokens, Tokens(4, kA));
  EXPECT_FALSE(greedy_search(model, src, o)[0].finished);
  // A decoder that can only end gives greedy a cut, impossible (log-prob -inf) hypothesis,
  // without an impossible token appended, and beam search none.
  TableDecoder only_eos({}, {{kEosId, 1.0}});
  const auto stuck = greedy_search(only_eos, src, SearchOptions())[0];
  EXPECT_TRUE(stuck.tokens.empty());
  EXPECT_FALSE(stuck.finished);
  EXPECT_EQ(stuck.log_prob, -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(beam_search(only_eos, src, SearchOptions())[0].empty());
}

// The CLI checks its decoding flags with the search's own check (validate_search_options),
// before it loads a model: the run folder here does not exist, and the flag is named first.
// (Before, translate and evaluate repeated three of the checks and met the rest, such as
// --max-length-ratio, only after loading the run.)
TEST(SearchOptionsValidation, TheCliChecksFlagsBeforeLoadingTheRun) {
  const std::string run = " --run-dir /nonexistent_nlpzoo_run --device cpu";
  for (const auto& [flags, named] : std::vector<std::pair<std::string, std::string>>{
           {"translate --beam-size 2 --n-best 3", "--n-best"},
           {"translate --max-length-ratio -1", "--max-length-ratio"},
           {"translate --beam-size 0", "--beam-size"},
           {"translate --max-length 0", "--max-length"},
           {"translate --early-stopping soon", "--early-stopping"},
           {"evaluate --early-stopping true", "--early-stopping"}}) {
    const auto r = test::run_cli(flags + run);
    EXPECT_NE(r.status, 0) << flags;
    EXPECT_NE(r.err.find(named), std::string::npos) << flags << ": " << r.err;
    EXPECT_EQ(r.err.find("nonexistent_nlpzoo_run"), std::string::npos) << flags << ": " << r.err;
  }
}

// Greedy takes "a" (0.6) but every continuation of "a" is poor; "b" (0.4) ends well.
TEST(BeamSearch, FindsABetterSequenceThanGreedy) {
  TableDecoder model({{{}, {{kA, 0.6}, {kB, 0.4}}},
                      {{kA}, {{kEosId, 0.4}, {kA, 0.3}, {kB, 0.3}}},
                      {{kB}, {{kEosId, 0.9}, {kA, 0.05}, {kB, 0.05}}}},
                     {{kEosId, 0.5}, {kA, 0.3}, {kB, 0.2}});
  auto src = one_source();
  auto greedy = greedy_search(model, src, opts(1, 1, 0.0));
  ASSERT_EQ(greedy.size(), 1u);
  EXPECT_EQ(greedy[0].tokens, Tokens({kA}));
  EXPECT_NEAR(greedy[0].log_prob, flog(0.6) + flog(0.4), 1e-12);  // P = 0.24
  EXPECT_TRUE(greedy[0].finished);

  auto beam = beam_search(model, src, opts(2, 2, 0.0));
  ASSERT_EQ(beam.size(), 1u);
  ASSERT_EQ(beam[0].size(), 2u);
  EXPECT_EQ(beam[0][0].tokens, Tokens({kB}));
  EXPECT_NEAR(beam[0][0].log_prob, flog(0.4) + flog(0.9), 1e-12);  // P = 0.36
  EXPECT_TRUE(beam[0][0].finished);
  EXPECT_EQ(beam[0][0].length, 2);
  // n_best = 2: greedy's answer is the runner-up.
  EXPECT_EQ(beam[0][1].tokens, Tokens({kA}));
  EXPECT_NEAR(beam[0][1].log_prob, greedy[0].log_prob, 1e-12);
}

// "a EOS" finishes at step 2 with the best raw log-prob (0.495 against 0.405 for "a a" so
// far), but "a a EOS" (0.401) wins once divided by its length (alpha = 1): -0.305 > -0.352.
// A search that stopped when the top beam ended would return "a".
TEST(BeamSearch, DoesNotStopWhenTheTopBeamEndsButALongerOneCanStillWin) {
  TableDecoder model({{{}, {{kA, 0.9}, {kB, 0.1}}},
                      {{kA}, {{kEosId, 0.55}, {kA, 0.45}}},
                      {{kA, kA}, {{kEosId, 0.99}, {kA, 0.005}, {kB, 0.005}}}},
                     {{kEosId, 0.5}, {kA, 0.3}, {kB, 0.2}});
  auto src = one_source();
  auto o = opts(2, 2, 1.0);
  auto beam = beam_search(model, src, o);
  ASSERT_EQ(beam[0].size(), 2u);
  const double long_lp = flog(0.9) + flog(0.45) + flog(0.99), short_lp = flog(0.9) + flog(0.55);
  ASSERT_GT(short_lp, long_lp);
  EXPECT_EQ(beam[0][0].tokens, Tokens({kA, kA}));
  EXPECT_NEAR(beam[0][0].log_prob, long_lp, 1e-12);
  EXPECT_NEAR(beam[0][0].score, long_lp / 3.0, 1e-12);
  EXPECT_EQ(beam[0][1].tokens, Tokens({kA}));
  EXPECT_NEAR(beam[0][1].score, short_lp / 2.0, 1e-12);

  // The same winner when only one hypothesis is wanted: the search goes on after "a EOS".
  auto best = beam_search(model, src, opts(2, 1, 1.0));
  ASSERT_EQ(best[0].size(), 1u);
  EXPECT_EQ(best[0][0].tokens, Tokens({kA, kA}));

  // Without normalisation the short one wins.
  auto raw = beam_search(model, src, opts(2, 1, 0.0));
  EXPECT_EQ(raw[0][0].tokens, Tokens({kA}));
  EXPECT_NEAR(raw[0][0].log_prob, short_lp, 1e-12);
}

// --early-stopping beam (fairseq's rule) stops as soon as beam_size hypotheses finished: at
// step 2 "a EOS" and "b EOS" are both among the 2K candidates, so the search ends there with
// "a" (score log 0.495 / 2), where the exact rule above goes on to find "a a" (log 0.401 / 3).
TEST(BeamSearch, EarlyStoppingBeamEndsOnceBeamSizeHypothesesFinished) {
  const std::map<Tokens, Dist> table = {{{}, {{kA, 0.9}, {kB, 0.1}}},
                                        {{kA}, {{kEosId, 0.55}, {kA, 0.45}}},
                                        {{kA, kA}, {{kEosId, 0.99}, {kA, 0.005}, {kB, 0.005}}}};
  const Dist fallback = {{kEosId, 0.5}, {kA, 0.3}, {kB, 0.2}};
  TableDecoder exact_model(table, fallback), early_model(table, fallback);
  auto o = opts(2, 1, 1.0);
  const auto exact = beam_search(exact_model, one_source(), o);
  o.early_stopping = EarlyStopping::kBeam;
  const auto early = beam_search(early_model, one_source(), o);
  EXPECT_EQ(exact[0][0].tokens, Tokens({kA, kA}));
  EXPECT_EQ(exact_model.rows_per_call.size(), 3u);
  ASSERT_EQ(early[0].size(), 1u);
  EXPECT_EQ(early[0][0].tokens, Tokens({kA}));
  EXPECT_NEAR(early[0][0].score, (flog(0.9) + flog(0.55)) / 2.0, 1e-12);
  EXPECT_EQ(early_model.rows_per_call, std::vector<int64_t>({2, 2}));
  // One finished hypothesis is not enough: with beam 3 the search goes on until three have.
  TableDecoder wide_model(table, fallback);
  const auto wide = beam_search(wide_model, one_source(), opts(3, 1, 1.0));
  o.beam_size = 3;
  TableDecoder wide_early_model(table, fallback);
  const auto wide_early = beam_search(wide_early_model, one_source(), o);
  EXPECT_GT(wide_early_model.rows_per_call.size(), 2u);
  EXPECT_LE(wide_early_model.rows_per_call.size(), wide_model.rows_per_call.size());
  EXPECT_EQ(wide_early[0][0].tokens, wide[0][0].tokens);  // "a a EOS" finished by step 3
}

// The stopping bound must look ahead to the maximum length, not only to the next step:
// after "a EOS" (0.54, score -0.308 at alpha 1) the live "a a" (0.36) could not win if it
// ended next step (-1.02 / 3 = -0.34), but it goes on at no cost and wins at length 5.
TEST(BeamSearch, StoppingBoundLooksAheadToTheMaximumLength) {
  TableDecoder model({{{}, {{kA, 0.9}, {kB, 0.1}}},
                      {{kA}, {{kEosId, 0.6}, {kA, 0.4}}},
                      {{kA, kA}, {{kA, 1.0}}},
                      {{kA, kA, kA}, {{kA, 1.0}}},
                      {{kA, kA, kA, kA}, {{kEosId, 1.0}}}},
                     {{kEosId, 0.5}, {kA, 0.3}, {kB, 0.2}});
  auto beam = beam_search(model, one_source(), opts(2, 1, 1.0));
  EXPECT_EQ(beam[0][0].tokens, Tokens({kA, kA, kA, kA}));
  EXPECT_NEAR(beam[0][0].score, (flog(0.9) + flog(0.4)) / 5.0, 1e-12);
  EXPECT_GT(beam[0][0].score, (flog(0.9) + flog(0.6)) / 2.0);
}

// With alpha > 0, beam size 1 is not greedy: after greedy's EOS the runner-up token goes on
// while it could still win. Here "a b EOS" (0.27 / 3) beats greedy's "a EOS" (0.33 / 2).
TEST(BeamSearch, BeamSizeOneCanBeatGreedyWithALengthPenalty) {
  TableDecoder model({{{}, {{kA, 0.6}, {kB, 0.4}}},
                      {{kA}, {{kEosId, 0.55}, {kB, 0.45}}},
                      {{kA, kB}, {{kEosId, 1.0}}}},
                     {{kEosId, 0.5}, {kA, 0.3}, {kB, 0.2}});
  auto src = one_source();
  auto o = opts(1, 1, 1.0);
  auto greedy = greedy_search(model, src, o);
  EXPECT_EQ(greedy[0].tokens, Tokens({kA}));
  EXPECT_NEAR(greedy[0].score, (flog(0.6) + flog(0.55)) / 2.0, 1e-12);
  auto beam = beam_search(model, src, o);
  EXPECT_EQ(beam[0][0].tokens, Tokens({kA, kB}));
  EXPECT_NEAR(beam[0][0].score, (flog(0.6) + flog(0.45) + flog(1.0)) / 3.0, 1e-12);
  EXPECT_GT(beam[0][0].score, greedy[0].score);
  // With alpha = 0 they agree.
  EXPECT_EQ(beam_search(model, src, opts(1, 1, 0.0))[0][0].tokens, Tokens({kA}));
}

TEST(BeamSearch, NeverExtendsFinishedHypotheses) {
  TableDecoder model({{{}, {{kA, 0.5}, {kB, 0.3}, {kEosId, 0.2}}}}, {{kEosId, 0.4}, {kA, 0.35}, {kB, 0.25}});
  auto src = torch::tensor({kA, kEosId, kPadId, kA, kB, kEosId}, torch::kLong).view({2, 3});
  auto o = opts(3, 3, 0.7);
  o.max_length = 6;
  auto beam = beam_search(model, src, o);
  ASSERT_FALSE(model.extended.empty());
  int64_t eos_results = 0;
  for (const auto& sentence : beam) {
    ASSERT_EQ(sentence.size(), 3u);
    for (const auto& h : sentence) eos_results += h.finished;
  }
  EXPECT_GT(eos_results, 0);  // hypotheses did finish, and none was extended afterwards:
  for (const auto& prefix : model.extended)
    for (int64_t t : prefix) EXPECT_NE(t, kEosId) << "an ended hypothesis was extended";
  // All sentences x beams go through one call per step.
  EXPECT_EQ(model.rows_per_call[0], 2 * 3);
  for (int64_t n : model.rows_per_call) EXPECT_EQ(n % 3, 0);

  model.extended.clear();
  greedy_search(model, src, o);
  for (const auto& prefix : model.extended)
    for (int64_t t : prefix) EXPECT_NE(t, kEosId);
}

// EOS (0.05) never ranks among the 4 best candidates of a beam of 2 (the best beam's a, b and
// c alone beat it), so every hypothesis is cut at max_length = 4.
TEST(BeamSearch, HypothesesCutAtMaxLengthAreNormalisedLikeFinishedOnes) {
  TableDecoder model({}, {{kA, 0.6}, {kB, 0.25}, {6, 0.1}, {kEosId, 0.05}}, /*vocab=*/8);
  auto src = one_source();
  for (auto form : {LengthPenaltyForm::kCourse, LengthPenaltyForm::kGnmt}) {
    auto o = opts(2, 2, 0.7);
    o.length_penalty_form = form;
    o.max_length = 4;
    auto beam = beam_search(model, src, o);
    ASSERT_EQ(beam[0].size(), 2u);
    EXPECT_EQ(beam[0][0].tokens, Tokens({kA, kA, kA, kA}));
    EXPECT_NEAR(beam[0][0].log_prob, 4 * flog(0.6), 1e-12);
    for (const auto& h : beam[0]) {
      EXPECT_FALSE(h.finished);
      EXPECT_EQ(h.tokens.size(), 4u);
      EXPECT_EQ(h.length, 4);
      EXPECT_NEAR(h.score, h.log_prob / length_penalty(4, 0.7, form), 1e-12);
    }
    auto greedy = greedy_search(model, src, o);
    EXPECT_EQ(greedy[0].tokens, Tokens({kA, kA, kA, kA}));
    EXPECT_FALSE(greedy[0].finished);
    EXPECT_EQ(greedy[0].length, 4);
    EXPECT_NEAR(greedy[0].score, 4 * flog(0.6) / length_penalty(4, 0.7, form), 1e-12);
  }
}

// A cut hypothesis competes with finished ones on the same normalised score: "a a a" is cut
// at 3 with P = 0.9^3 = 0.729 and beats "a a EOS" (0.081) and "b EOS" (0.1), which finished.
TEST(BeamSearch, CutAndFinishedHypothesesShareOneRanking) {
  TableDecoder model({{{}, {{kA, 0.9}, {kB, 0.1}}}, {{kB}, {{kEosId, 1.0}}}}, {{kA, 0.9}, {kEosId, 0.1}});
  auto src = one_source();
  auto o = opts(2, 2, 0.7);
  o.max_length = 3;
  auto beam = beam_search(model, src, o);
  ASSERT_EQ(beam[0].size(), 2u);
  EXPECT_EQ(beam[0][0].tokens, Tokens({kA, kA, kA}));
  EXPECT_FALSE(beam[0][0].finished);
  EXPECT_NEAR(beam[0][0].score, 3 * flog(0.9) / std::pow(3.0, 0.7), 1e-12);
  EXPECT_GE(beam[0][0].score, beam[0][1].score);
  for (const auto& h : beam[0]) expect_scored_consistently(h, o);
}

TEST(BeamSearch, LengthCountsEosForFinishedHypotheses) {
  auto model = random_seq2seq(11);
  auto src = padded_sources();
  for (double alpha : {0.0, 0.7, 1.3}) {
    for (auto form : {LengthPenaltyForm::kCourse, LengthPenaltyForm::kGnmt}) {
      auto o = opts(4, 4, alpha);
      o.length_penalty_form = form;
      o.max_length_offset = 3;
      int64_t finished = 0;
      for (const auto& sentence : beam_search(*model, src, o)) {
        for (const auto& h : sentence) {
          expect_scored_consistently(h, o);
          if (h.finished) {
            ++finished;
            EXPECT_NEAR(h.score, h.log_prob / length_penalty(h.tokens.size() + 1, alpha, form), 1e-12);
          }
        }
      }
      EXPECT_GT(finished, 0) << "the test needs finished hypotheses";
      for (const auto& h : greedy_search(*model, src, o)) expect_scored_consistently(h, o);
    }
  }
}

TEST(BeamSearch, NBestReturnsDistinctHypothesesSortedByScore) {
  auto model = random_seq2seq(12);
  auto src = padded_sources();
  auto o = opts(5, 5, 0.7);
  auto beam = beam_search(*model, src, o);
  ASSERT_EQ(beam.size(), 4u);
  for (const auto& sentence : beam) {
    ASSERT_EQ(sentence.size(), 5u);
    std::set<Tokens> distinct;
    for (size_t i = 0; i < sentence.size(); ++i) {
      distinct.insert(sentence[i].tokens);
      if (i > 0) {
        EXPECT_GE(sentence[i - 1].score, sentence[i].score);
      }
    }
    EXPECT_EQ(distinct.size(), 5u);
  }
  // n_best 1 of the same search is the first of the five.
  auto one = beam_search(*model, src, opts(5, 1, 0.7));
  for (size_t b = 0; b < beam.size(); ++b) {
    ASSERT_EQ(one[b].size(), 1u);
    EXPECT_EQ(one[b][0].tokens, beam[b][0].tokens);
  }
}

// Beam size 1 follows greedy's path and keeps greedy's result among its finished
// hypotheses, so it returns it or a better-scoring one; with alpha = 0 and these models it
// mostly returns greedy's exactly, which shows both searches score the same way.
TEST(BeamSearch, BeamSizeOneReturnsGreedysHypothesisOrABetterOne) {
  int64_t finished = 0, cut = 0, same = 0, better = 0;
  for (auto [seed, cell, att, bias] : {std::make_tuple(13, CellType::kGru, AttentionType::kAdditive, 0.3),
                                       std::make_tuple(14, CellType::kLstm, AttentionType::kGeneral, 0.3),
                                       std::make_tuple(13, CellType::kGru, AttentionType::kAdditive, 0.6),
                                       std::make_tuple(14, CellType::kLstm, AttentionType::kGeneral, 0.6)}) {
    auto model = random_seq2seq(seed, cell, att, bias);
    auto src = padded_sources();
    for (double alpha : {0.0, 1.0}) {
      auto o = opts(1, 1, alpha);
      o.keep_attention = true;
      auto greedy = greedy_search(*model, src, o);
      auto beam = beam_search(*model, src, o);
      ASSERT_EQ(greedy.size(), 4u);
      for (size_t b = 0; b < greedy.size(); ++b) {
        ASSERT_EQ(beam[b].size(), 1u);
        const auto& g = greedy[b];
        const auto& h = beam[b][0];
        if (h.tokens == g.tokens && h.finished == g.finished) {
          // Equal up to float32 rounding: rows leave greedy's and beam's batches at different
          // steps, and a BLAS kernel may round a row differently in another batch size
          // (OpenBLAS's Haswell kernels on AMD EPYC: 4.8e-7 on a log-prob of -28).
          EXPECT_NEAR(h.log_prob, g.log_prob, 1e-5 * std::max(1.0, std::abs(g.log_prob)));
          ASSERT_EQ(h.attention.size(), g.attention.size());
          for (size_t t = 0; t < g.attention.size(); ++t) {
            ASSERT_EQ(h.attention[t].size(), g.attention[t].size());
            for (size_t s = 0; s < g.attention[t].size(); ++s) EXPECT_NEAR(h.attention[t][s], g.attention[t][s], 1e-5);
          }
          ++same;
        } else {
          EXPECT_GT(h.score, g.score) << "sentence " << b << " alpha " << alpha;
          ++better;
        }
        finished += g.finished;
        cut += !g.finished;
      }
    }
  }
  EXPECT_GT(finished, 0);
  EXPECT_GT(cut, 0);
  EXPECT_GT(same, 8);
}

// Beam 2: step 2 ranks "a a" .275, "a b" .225, "b EOS" .18, "b a" .135. "b EOS" is third,
// outside the beam's first 2 (fairseq's and Hugging Face's rule drops it, and their search
// returns greedy's "a a EOS", .165), but it is the best result there is.
TEST(BeamSearch, KeepsAnEosCandidateRankedBelowTheBeam) {
  TableDecoder model({{{}, {{kA, 0.5}, {kB, 0.45}, {kEosId, 0.05}}},
                      {{kA}, {{kA, 0.55}, {kB, 0.45}}},
                      {{kB}, {{kEosId, 0.4}, {kA, 0.3}, {kB, 0.3}}}},
                     {{kEosId, 0.6}, {kA, 0.2}, {kB, 0.2}});
  auto src = one_source();
  auto greedy = greedy_search(model, src, opts(1, 1, 0.0));
  EXPECT_EQ(greedy[0].tokens, Tokens({kA, kA}));
  EXPECT_NEAR(greedy[0].log_prob, flog(0.5) + flog(0.55) + flog(0.6), 1e-12);
  auto beam = beam_search(model, src, opts(2, 2, 0.0));
  ASSERT_EQ(beam[0].size(), 2u);
  EXPECT_EQ(beam[0][0].tokens, Tokens({kB}));
  EXPECT_TRUE(beam[0][0].finished);
  EXPECT_NEAR(beam[0][0].log_prob, flog(0.45) + flog(0.4), 1e-12);
  EXPECT_EQ(beam[0][1].tokens, Tokens({kA, kA}));
  // "b" was never extended: a finished hypothesis leaves the beam.
  for (const auto& prefix : model.extended) EXPECT_NE(prefix, Tokens({kB, kEosId}));
}

// Wraps a decoder and records every prefix it extends: the prefix rides in the state, so
// the search's reordering moves it with the beam it belongs to.
class PrefixRecorder : public IncrementalDecoder {
 public:
  explicit PrefixRecorder(IncrementalDecoder& inner) : inner_(inner) {}
  DecoderState init(const torch::Tensor& src) override {
    auto st = inner_.init(src);
    st.tensors["recorded_prefix"] = torch::empty({src.size(0), 0}, torch::kLong);
    return st;
  }
  DecoderStep step(const DecoderState& state, const torch::Tensor& prev_tokens) override {
    DecoderState inner_state = state;
    auto prefix = torch::cat({inner_state.tensors.at("recorded_prefix"), prev_tokens.unsqueeze(1)}, 1);
    inner_state.tensors.erase("recorded_prefix");
    for (int64_t r = 0; r < prefix.size(0); ++r) {
      auto row = prefix[r].contiguous();
      extended.insert(Tokens(row.data_ptr<int64_t>() + 1, row.data_ptr<int64_t>() + row.numel()));  // BOS dropped
    }
    auto out = inner_.step(inner_state, prev_tokens);
    out.state.tensors["recorded_prefix"] = prefix;
    return out;
  }
  int64_t target_vocab_size() const override { return inner_.target_vocab_size(); }
  std::set<Tokens> extended;

 private:
  IncrementalDecoder& inner_;
};

// The property that motivates keeping every EOS candidate of the 2K: whenever greedy's
// hypothesis was within the beam's reach (each of its prefixes was a live beam, so it was
// scored as a candidate), beam search returns it or a better-scoring one. One sentence at a
// time, as reach is per sentence; several random models, widths and length penalties.
TEST(BeamSearch, ScoresAtLeastGreedyWhenGreedysHypothesisWasInReach) {
  int64_t in_reach = 0, out_of_reach = 0, beam_better = 0;
  for (uint64_t seed : {31, 32, 33, 34}) {
    auto model = random_seq2seq(seed, seed % 2 ? CellType::kGru : CellType::kLstm, AttentionType::kAdditive, 0.25);
    auto src = padded_sources();
    for (int64_t beam_size : {2, 3, 5}) {
      for (double alpha : {0.0, 0.7}) {
        auto o = opts(beam_size, 1, alpha);
        for (int64_t b = 0; b < src.size(0); ++b) {
          auto one = src.slice(0, b, b + 1).slice(1, 0, kPaddedLengths[b]);
          const auto g = greedy_search(*model, one, o)[0];
          PrefixRecorder recorder(*model);
          const auto h = beam_search(recorder, one, o)[0][0];
          // Greedy's finished hypothesis was a live beam: all its prefixes, itself included,
          // were extended (a cut one is left out: its last prefix is never extended).
          bool reached = g.finished;
          for (size_t n = 0; n <= g.tokens.size() && reached; ++n)
            reached = recorder.extended.count(Tokens(g.tokens.begin(), g.tokens.begin() + n)) > 0;
          if (!reached) {
            ++out_of_reach;
            continue;
          }
          ++in_reach;
          EXPECT_GE(h.score, g.score - 1e-9) << "seed " << seed << " beam " << beam_size << " alpha " << alpha
                                              << " sentence " << b;
          beam_better += h.score > g.score + 1e-9;
        }
      }
    }
  }
  EXPECT_GT(in_reach, 40);
  std::cout << "greedy in reach " << in_reach << ", out of reach " << out_of_reach << ", beam better " << beam_better
            << "\n";
}

TEST(BeamSearch, LogProbIsTheModelsTeacherForcedScore) {
  auto model = random_seq2seq(19, CellType::kLstm, AttentionType::kDot);
  auto src = padded_sources();
  auto o = opts(4, 4, 1.0);
  auto beam = beam_search(*model, src, o);
  torch::NoGradGuard ng;
  int64_t checked = 0, long_ones = 0;
  for (int64_t b = 0; b < src.size(0); ++b) {
    auto one = src.slice(0, b, b + 1).slice(1, 0, kPaddedLengths[b]);
    for (const auto& h : beam[b]) {
      Tokens in = {kBosId}, target = h.tokens;
      in.insert(in.end(), h.tokens.begin(), h.tokens.end());
      if (h.finished) target.push_back(kEosId);
      in.resize(target.size());
      auto log_probs = torch::log_softmax(model->forward(one, torch::tensor(in).view({1, -1})), -1)[0];
      double sum = 0;
      for (size_t t = 0; t < target.size(); ++t) sum += log_probs[t][target[t]].item<float>();
      EXPECT_NEAR(h.log_prob, sum, 1e-4) << "sentence " << b;
      ++checked;
      long_ones += h.tokens.size() >= 4;
    }
  }
  EXPECT_EQ(checked, 16);
  EXPECT_GT(long_ones, 8) << "reordering only shows in hypotheses of several steps";
}

// Decoding the padded batch and each sentence alone (unpadded) gives the same hypotheses;
// counts the finished and cut ones so the caller can check both kinds were compared.
void expect_batched_equals_alone(uint64_t seed, CellType cell, AttentionType att, double alpha,
                                 int64_t& finished, int64_t& cut) {
  auto model = random_seq2seq(seed, cell, att);
  auto src = padded_sources();
  auto o = opts(3, 3, alpha);
  o.max_length_offset = 1;  // tight enough that each sentence's own bound matters
  o.keep_attention = true;
  auto batched = beam_search(*model, src, o);
  auto batched_greedy = greedy_search(*model, src, o);
  for (int64_t b = 0; b < src.size(0); ++b) {
    auto alone_src = src.slice(0, b, b + 1).slice(1, 0, kPaddedLengths[b]);
    auto alone = beam_search(*model, alone_src, o);
    ASSERT_EQ(alone[0].size(), batched[b].size());
    for (size_t i = 0; i < alone[0].size(); ++i) {
      const auto& x = alone[0][i];
      const auto& y = batched[b][i];
      EXPECT_EQ(x.tokens, y.tokens) << "seed " << seed << " sentence " << b << " hypothesis " << i;
      EXPECT_EQ(x.finished, y.finished);
      EXPECT_EQ(x.length, y.length);
      EXPECT_NEAR(x.log_prob, y.log_prob, 1e-5);
      ASSERT_EQ(x.attention.size(), y.attention.size());
      for (size_t t = 0; t < x.attention.size(); ++t) {
        ASSERT_EQ(y.attention[t].size(), static_cast<size_t>(kPaddedLengths[b]));
        for (size_t s = 0; s < x.attention[t].size(); ++s) EXPECT_NEAR(x.attention[t][s], y.attention[t][s], 1e-5);
      }
      finished += y.finished;
      cut += !y.finished;
    }
    auto alone_greedy = greedy_search(*model, alone_src, o);
    EXPECT_EQ(alone_greedy[0].tokens, batched_greedy[b].tokens);
    EXPECT_NEAR(alone_greedy[0].log_prob, batched_greedy[b].log_prob, 1e-5);
  }
}

TEST(BeamSearch, BatchedSentencesEqualOneAtATime) {
  int64_t finished = 0, cut = 0;
  expect_batched_equals_alone(15, CellType::kLstm, AttentionType::kAdditive, 1.0, finished, cut);
  expect_batched_equals_alone(20, CellType::kGru, AttentionType::kDot, 0.0, finished, cut);
  expect_batched_equals_alone(22, CellType::kLstm, AttentionType::kNone, 0.7, finished, cut);
  EXPECT_GT(finished, 0);
  EXPECT_GT(cut, 0);  // hypotheses cut at their own sentence's bound
}

TEST(BeamSearch, KeepsAttentionPerStepOverRealSourcePositions) {
  auto model = random_seq2seq(16);
  auto src = padded_sources();
  auto o = opts(3, 2, 0.7);
  o.keep_attention = true;
  auto beam = beam_search(*model, src, o);
  for (size_t b = 0; b < beam.size(); ++b) {
    for (const auto& h : beam[b]) {
      ASSERT_EQ(static_cast<int64_t>(h.attention.size()), h.length);
      for (const auto& row : h.attention) {
        ASSERT_EQ(static_cast<int64_t>(row.size()), kPaddedLengths[b]);
        double sum = 0;
        for (float a : row) sum += a;
        EXPECT_NEAR(sum, 1.0, 1e-5);
      }
    }
  }
  // Off by default, and empty for a model without attention.
  o.keep_attention = false;
  EXPECT_TRUE(beam_search(*model, src, o)[0][0].attention.empty());
  TableDecoder table({}, {{kEosId, 1.0}});
  o.keep_attention = true;
  o.min_length = 0;  // this decoder can only end
  EXPECT_TRUE(beam_search(table, one_source(), o)[0][0].attention.empty());
}

// Sources of 3 and 6 real tokens with ratio 1 and offset 1: at most 4 and 7 target steps.
// EOS never wins in this decoder, so both searches run to the bound exactly.
TEST(BeamSearch, MaxLengthRatioBoundsTheOutputPerSentence) {
  TableDecoder model({}, {{kA, 0.6}, {kB, 0.25}, {kEosId, 0.15}});
  auto src = torch::tensor({kA, kA, kEosId, kPadId, kPadId, kPadId, kA, kA, kA, kA, kA, kEosId}, torch::kLong)
                 .view({2, 6});
  auto o = opts(2, 1, 0.7);
  o.max_length_ratio = 1.0;
  o.max_length_offset = 1;
  auto beam = beam_search(model, src, o);
  auto greedy = greedy_search(model, src, o);
  EXPECT_EQ(beam[0][0].tokens.size(), 4u);
  EXPECT_EQ(beam[1][0].tokens.size(), 7u);
  EXPECT_EQ(greedy[0].tokens.size(), 4u);
  EXPECT_EQ(greedy[1].tokens.size(), 7u);
  // max_length caps the ratio's bound.
  o.max_length = 5;
  beam = beam_search(model, src, o);
  EXPECT_EQ(beam[0][0].tokens.size(), 4u);
  EXPECT_EQ(beam[1][0].tokens.size(), 5u);

  // On the real model every hypothesis respects its sentence's bound.
  auto rnn = random_seq2seq(17);
  auto padded = padded_sources();
  o = opts(4, 4, 1.0);
  o.max_length_ratio = 0.5;
  o.max_length_offset = 1;
  auto out = beam_search(*rnn, padded, o);
  for (size_t b = 0; b < out.size(); ++b) {
    const int64_t bound = static_cast<int64_t>(std::floor(0.5 * kPaddedLengths[b] + 1));
    for (const auto& h : out[b]) EXPECT_LE(h.length, bound);
  }
}

TEST(BeamSearch, RunsOnCudaLikeOnCpu) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  auto model = random_seq2seq(18);
  auto src = padded_sources();
  auto o = opts(3, 2, 0.7);
  auto cpu = beam_search(*model, src, o);
  model->to(torch::kCUDA);
  auto gpu = beam_search(*model, src.to(torch::kCUDA), o);
  for (size_t b = 0; b < cpu.size(); ++b) {
    ASSERT_EQ(cpu[b].size(), gpu[b].size());
    for (size_t i = 0; i < cpu[b].size(); ++i) {
      EXPECT_EQ(cpu[b][i].tokens, gpu[b][i].tokens);
      EXPECT_NEAR(cpu[b][i].log_prob, gpu[b][i].log_prob, 1e-4);
    }
  }
  auto g = greedy_search(*model, src.to(torch::kCUDA), o);
  EXPECT_EQ(g.size(), 4u);
}

// Every hypothesis carries the model's log-prob of each piece it predicted, EOS's last.
TEST(Search, TokenLogProbsAreTheModelsOwnPerPiece) {
  TableDecoder model({{{}, {{kA, 0.6}, {kB, 0.4}}}, {{kA}, {{kEosId, 0.7}, {kB, 0.3}}}}, {{kEosId, 1.0}});
  auto src = one_source();
  auto o = opts(2, 2, 0.0);
  const auto g = greedy_search(model, src, o)[0];
  EXPECT_EQ(g.tokens, Tokens({kA}));
  EXPECT_EQ(g.token_log_probs, std::vector<double>({flog(0.6), flog(0.7)}));
  const auto b = beam_search(model, src, o)[0];
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[0].tokens, Tokens({kA}));  // 0.42
  EXPECT_EQ(b[0].token_log_probs, std::vector<double>({flog(0.6), flog(0.7)}));
  EXPECT_EQ(b[1].tokens, Tokens({kB}));  // 0.4
  EXPECT_EQ(b[1].token_log_probs, std::vector<double>({flog(0.4), 0.0}));
  for (const auto& h : b) expect_scored_consistently(h, o);
}

namespace {

bool repeats_an_ngram(const Tokens& tokens, size_t n) {
  std::set<Tokens> seen;
  for (size_t i = 0; i + n <= tokens.size(); ++i)
    if (!seen.insert(Tokens(tokens.begin() + i, tokens.begin() + i + n)).second) return true;
  return false;
}

}  // namespace

// fairseq's --no-repeat-ngram-size: a token that would complete an n-gram already in the
// hypothesis is impossible. The decoder prefers "a" at every step, then "b", then EOS.
TEST(Search, NoRepeatNgramSizeBlocksRepeatedNgrams) {
  TableDecoder model({}, {{kA, 0.6}, {kB, 0.3}, {kEosId, 0.1}});
  auto src = one_source();
  auto o = opts(3, 3, 0.0);
  o.max_length = 8;
  EXPECT_EQ(greedy_search(model, src, o)[0].tokens, Tokens(8, kA));  // off: a a a ... cut
  o.no_repeat_ngram_size = 1;  // no token twice: a b, then only EOS is left
  auto g = greedy_search(model, src, o)[0];
  EXPECT_EQ(g.tokens, Tokens({kA, kB}));
  EXPECT_TRUE(g.finished);
  EXPECT_NEAR(g.log_prob, flog(0.6) + flog(0.3) + flog(0.1), 1e-12);
  o.no_repeat_ngram_size = 2;  // a a, then "a a" is taken: b; "b a" is new: a; after a, a and b are taken: EOS
  g = greedy_search(model, src, o)[0];
  EXPECT_EQ(g.tokens, Tokens({kA, kA, kB, kA}));
  EXPECT_TRUE(g.finished);
  for (int64_t n : {1, 2, 3}) {
    SCOPED_TRACE(n);
    o.no_repeat_ngram_size = n;
    const auto beams = beam_search(model, src, o);
    for (const auto& h : beams[0]) {
      EXPECT_FALSE(repeats_an_ngram(h.tokens, n)) << ::testing::PrintToString(h.tokens);
      expect_scored_consistently(h, o);
    }
    EXPECT_FALSE(repeats_an_ngram(greedy_search(model, src, o)[0].tokens, n));
  }
}

// Hugging Face's repetition_penalty on log-probs: each token the hypothesis holds has its
// log-prob multiplied by the penalty, and that product is what the hypothesis sums. The
// decoder prefers a (0.6), then b (0.3), then EOS (0.1) at every step.
TEST(Search, RepetitionPenaltyScalesTheLogProbsOfHeldTokens) {
  TableDecoder model({}, {{kA, 0.6}, {kB, 0.3}, {kEosId, 0.1}});
  auto src = one_source();
  auto o = opts(3, 3, 0.0);
  o.max_length = 8;
  const double a = flog(0.6), b = flog(0.3), eos = flog(0.1);
  // 2 log 0.6 = -1.02 still beats log 0.3 = -1.20: a repeats, as with no penalty.
  o.repetition_penalty = 2;
  auto g = greedy_search(model, src, o)[0];
  EXPECT_EQ(g.tokens, Tokens(8, kA));
  EXPECT_NEAR(g.log_prob, a + 7 * 2 * a, 1e-9);
  expect_scored_consistently(g, o);
  // 3 log 0.6 = -1.53: b comes second; then a (-1.53) beats b (-3.61) and EOS (-2.30) for good.
  o.repetition_penalty = 3;
  g = greedy_search(model, src, o)[0];
  EXPECT_EQ(g.tokens, Tokens({kA, kB, kA, kA, kA, kA, kA, kA}));
  EXPECT_FALSE(g.finished);
  EXPECT_NEAR(g.token_log_probs[1], b, 1e-9);
  EXPECT_NEAR(g.token_log_probs[2], 3 * a, 1e-9);
  EXPECT_NEAR(g.log_prob, a + b + 6 * 3 * a, 1e-9);
  expect_scored_consistently(g, o);
  // 5 log 0.6 = -2.55: after a b, EOS (-2.30, never held) wins; no token was penalised.
  o.repetition_penalty = 5;
  g = greedy_search(model, src, o)[0];
  EXPECT_EQ(g.tokens, Tokens({kA, kB}));
  EXPECT_TRUE(g.finished);
  EXPECT_NEAR(g.log_prob, a + b + eos, 1e-9);
  for (double penalty : {2.0, 3.0, 5.0}) {
    o.repetition_penalty = penalty;
    const auto beams = beam_search(model, src, o);
    for (const auto& h : beams[0]) expect_scored_consistently(h, o);
  }
  o.repetition_penalty = 5;
  const auto best = beam_search(model, src, o)[0][0];  // a EOS (-2.81) beats greedy's a b EOS (-4.01)
  EXPECT_EQ(best.tokens, Tokens({kA}));
  EXPECT_NEAR(best.log_prob, a + eos, 1e-9);
}

namespace {

// Emits its source's first token until it has `want` of them (1 for "a", 3 for "b"), then EOS.
// The source lives in a per_sentence tensor: if search left it in place after a sentence
// dropped out, the surviving rows would read the finished sentence's source.
class EchoDecoder : public IncrementalDecoder {
 public:
  DecoderState init(const torch::Tensor& src) override {
    DecoderState st;
    st.tensors["src"] = src;
    st.per_sentence.insert("src");
    st.tensors["count"] = torch::zeros({src.size(0)}, torch::kLong);
    return st;
  }
  DecoderStep step(const DecoderState& state, const torch::Tensor& prev_tokens) override {
    auto first = state.tensors.at("src").select(1, 0).contiguous();
    auto count = state.tensors.at("count") + prev_tokens.ne(kBosId).to(torch::kLong);
    const int64_t n = prev_tokens.size(0);
    auto lp = torch::full({n, 6}, std::log(0.01f));
    for (int64_t r = 0; r < n; ++r) {
      const int64_t token = first[r].item<int64_t>(), want = token == kA ? 1 : 3;
      lp[r][count[r].item<int64_t>() < want ? token : kEosId] = std::log(0.95f);
    }
    DecoderStep out;
    out.log_probs = lp;
    out.state = state;
    out.state.tensors["count"] = count;
    return out;
  }
  int64_t target_vocab_size() const override { return 6; }
};

}  // namespace

TEST(Search, PerSentenceStateFollowsItsSentenceWhenOthersFinish) {
  EchoDecoder model;
  auto src = torch::tensor({kA, kEosId, kB, kEosId, kA, kEosId}, torch::kLong).view({3, 2});
  auto o = opts(2, 1, 0.0);
  const auto g = greedy_search(model, src, o);
  const auto b = beam_search(model, src, o);
  const std::vector<Tokens> want = {{kA}, {kB, kB, kB}, {kA}};
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(g[i].tokens, want[i]) << i;
    EXPECT_EQ(b[i][0].tokens, want[i]) << i;
  }
}

TEST(DecoderState, IndexSelectCanKeepPerSentenceTensors) {
  DecoderState st;
  st.tensors["enc"] = torch::tensor({1, 1, 2, 2});
  st.tensors["h"] = torch::tensor({10, 11, 20, 21});
  st.per_sentence.insert("enc");
  auto rows = torch::tensor({1, 1, 3, 2}, torch::kLong);
  auto kept = st.index_select(rows, /*reorder_per_sentence=*/false);
  EXPECT_TRUE(kept.tensors["enc"].is_same(st.tensors["enc"]));
  EXPECT_TRUE(kept.tensors["h"].equal(torch::tensor({11, 11, 21, 20})));
  EXPECT_EQ(kept.per_sentence, st.per_sentence);
  auto moved = st.index_select(torch::tensor({2, 3}, torch::kLong));
  EXPECT_TRUE(moved.tensors["enc"].equal(torch::tensor({2, 2})));
}

namespace {

// Forced decoding reads the table's log-probs token by token, EOS last, each row its own
// target in one batch (rows of other lengths padded and dropped).
TEST(ForcedDecoding, SumsTheModelsLogProbsTokenByTokenThenEos) {
  TableDecoder model({{{}, {{kA, 0.6}, {kB, 0.4}}},
                      {{kA}, {{kEosId, 0.4}, {kA, 0.3}, {kB, 0.3}}},
                      {{kB}, {{kEosId, 0.9}, {kA, 0.05}, {kB, 0.05}}}},
                     {{kEosId, 0.5}, {kA, 0.3}, {kB, 0.2}});
  const auto src = torch::tensor({kA, kEosId, kA, kEosId, kA, kEosId, kA, kEosId}, torch::kLong).view({4, 2});
  const auto out = forced_log_probs(model, src, {{kA}, {kB, kA}, {kB}, {}});
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0], std::vector<double>({flog(0.6), flog(0.4)}));
  EXPECT_EQ(out[1], std::vector<double>({flog(0.4), flog(0.05), flog(0.5)}));  // "b a" falls back
  EXPECT_EQ(out[2], std::vector<double>({flog(0.4), flog(0.9)}));
  ASSERT_EQ(out[3].size(), 1u);  // the empty output: EOS first, which the table gives no mass
  EXPECT_EQ(out[3][0], -std::numeric_limits<double>::infinity());
  // Their scores as beam search ranks them: log P / lp(tokens + 1).
  SearchOptions o = opts(2, 1, 1.0);
  auto beam = beam_search(model, src.slice(0, 0, 1), o);
  EXPECT_NEAR(beam[0][0].score, (out[2][0] + out[2][1]) / length_penalty(2, 1.0, LengthPenaltyForm::kCourse), 1e-12);
}

// On a trained-shape model, forcing each finished beam hypothesis gives back the search's own
// per-piece log-probs (one batch of padded sources, several lengths).
TEST(ForcedDecoding, EqualsTheSearchsLogProbsOfItsHypotheses) {
  auto model = random_seq2seq(23, CellType::kGru, AttentionType::kAdditive);
  auto src = padded_sources();
  auto beam = beam_search(*model, src, opts(3, 3, 0.7));
  for (size_t k = 0; k < 3; ++k) {
    std::vector<std::vector<int64_t>> targets;
    for (const auto& hyps : beam) targets.push_back(hyps.at(k).tokens);
    const auto forced = forced_log_probs(*model, src, targets);
    int64_t compared = 0;
    for (size_t b = 0; b < beam.size(); ++b) {
      const auto& h = beam[b][k];
      if (!h.finished) continue;
      ASSERT_EQ(forced[b].size(), h.token_log_probs.size());
      for (size_t t = 0; t < forced[b].size(); ++t) EXPECT_NEAR(forced[b][t], h.token_log_probs[t], 1e-5) << b << " " << t;
      ++compared;
    }
    EXPECT_GT(compared, 0) << "hypothesis " << k;
  }
}

}  // namespace
