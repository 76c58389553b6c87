// Sampling (temperature, top-k, top-p, seeded draws, the generation loop against a full
// pass), the language model's scripted twin against the eager model (in memory, after a
// save/load round trip, and in Debian's python3-torch), and (Regression*) `nlpzoo generate`
// and `nlpzoo export` on a language model trained on the Bible.
#include <gtest/gtest.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <ATen/CPUGeneratorImpl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/io.h"
#include "datasets/special_ids.h"
#include "infer/export_lm.h"
#include "infer/sampling.h"
#include "infer/script_twin.h"
#include "models/rnn/language_model.h"
#include "tests/test_util.h"
#include "tests/twin_util.h"

using namespace nlpzoo;
namespace fs = std::filesystem;
using test::max_diff;
using test::user_error_of;

namespace {

torch::Generator generator(uint64_t seed) { return at::detail::createCPUGenerator(seed); }

std::vector<int64_t> to_vector(const torch::Tensor& t) {
  auto c = t.to(torch::kCPU).to(torch::kLong).contiguous();
  return {c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel()};
}

// The indices with non-zero probability.
std::set<int64_t> support(const torch::Tensor& probs) {
  auto v = to_vector(probs.nonzero().flatten());
  return {v.begin(), v.end()};
}

// ---- the filtered distribution -------------------------------------------------------------

TEST(Sampling, TemperatureScalesTheLogitsBeforeSoftmax) {
  const std::vector<double> logits = {1.0, 2.0, 0.5, -1.0};
  for (double T : {0.5, 1.0, 2.0}) {
    double z = 0;
    for (double l : logits) z += std::exp(l / T);
    std::vector<float> expected;
    for (double l : logits) expected.push_back(static_cast<float>(std::exp(l / T) / z));
    SamplingOptions o;
    o.temperature = T;
    auto probs = sampling_distribution(torch::tensor(std::vector<float>(logits.begin(), logits.end())), o);
    EXPECT_LE(max_diff(probs, torch::tensor(expected)), 1e-6) << "T=" << T << " " << probs;
  }
  // T = 0.5 by hand: e^{2, 4, 1, -2} / 64.840823.
  SamplingOptions sharp;
  sharp.temperature = 0.5;
  auto probs = sampling_distribution(torch::tensor({1.0f, 2.0f, 0.5f, -1.0f}), sharp);
  EXPECT_LE(max_diff(probs, torch::tensor({0.1139569f, 0.8420336f, 0.0419224f, 0.0020872f})), 1e-6) << probs;
  // Rows of a batch are scaled independently, and a tiny T neither overflows nor gives NaN.
  sharp.temperature = 1e-30;
  auto rows = sampling_distribution(torch::tensor({{0.0f, 1.0f}, {3.0f, 1.0f}}), sharp);
  EXPECT_TRUE(rows.equal(torch::tensor({{0.0f, 1.0f}, {1.0f, 0.0f}}))) << rows;
}

TEST(Sampling, TemperatureZeroIsArgmaxAndDrawsNothing) {
  torch::manual_seed(3);
  auto logits = torch::randn({8, 50});
  SamplingOptions o;
  o.temperature = 0;
  o.top_k = 3;  // irrelevant at T = 0
  o.top_p = 0.5;
  auto gen = generator(5);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(sample_next(logits, o, gen).equal(logits.argmax(1)));
  EXPECT_TRUE(sampling_distribution(logits, o).equal(torch::one_hot(logits.argmax(1), 50).to(torch::kFloat)));
  // One row gives one id, as a scalar.
  EXPECT_EQ(sample_next(logits[2], o, gen).dim(), 0);
  EXPECT_EQ(sample_next(logits[2], o, gen).item<int64_t>(), logits[2].argmax().item<int64_t>());
  // The generator was never advanced: its next draw is a fresh generator's.
  SamplingOptions plain;
  auto fresh = generator(5);
  EXPECT_TRUE(sample_next(logits, plain, gen).equal(sample_next(logits, plain, fresh)));
}

TEST(Sampling, TopKNeverDrawsOutsideTheKBest) {
  torch::manual_seed(4);
  const int64_t V = 30, k = 5;
  auto logits = torch::randn({V});
  std::vector<int64_t> order(V);
  std::iota(order.begin(), order.end(), 0);
  auto l = logits.accessor<float, 1>();
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return l[a] > l[b]; });
  const std::set<int64_t> best(order.begin(), order.begin() + k);

  SamplingOptions o;
  o.top_k = k;
  auto probs = sampling_distribution(logits, o);
  EXPECT_EQ(support(probs), best);
  double z = 0;
  for (int64_t i : best) z += std::exp(l[i]);
  for (int64_t i : best) EXPECT_NEAR(probs[i].item<float>(), std::exp(l[i]) / z, 1e-6) << i;

  auto gen = generator(9);
  auto draws = to_vector(sample_next(logits.expand({4000, V}).contiguous(), o, gen));
  std::map<int64_t, int> counts;
  for (int64_t d : draws) counts[d]++;
  for (const auto& [id, n] : counts) EXPECT_TRUE(best.count(id)) << "drew " << id << ", not among the " << k << " best";
  EXPECT_EQ(counts.size(), best.size()) << "every one of the k best should be drawn in 4000 draws";
  // k >= V changes nothing.
  o.top_k = V + 3;
  EXPECT_LE(max_diff(sampling_distribution(logits, o), torch::softmax(logits, 0)), 1e-6);
}

TEST(Sampling, TopPKeepsTheSmallestSetThatReachesP) {
  // Most probable first: id 1 (0.5), id 3 (0.3), id 2 (0.15), id 0 (0.05).
  const std::vector<float> p = {0.05f, 0.5f, 0.15f, 0.3f};
  std::vector<float> lp;
  for (float x : p) lp.push_back(std::log(x));
  const auto logits = torch::tensor(lp);
  const std::vector<std::pair<double, std::set<int64_t>>> cases = {
      {0.45, {1}}, {0.75, {1, 3}}, {0.9, {1, 2, 3}}, {0.97, {0, 1, 2, 3}}, {1.0, {0, 1, 2, 3}}, {1e-9, {1}}};
  for (const auto& [top_p, kept] : cases) {
    SamplingOptions o;
    o.top_p = top_p;
    auto probs = sampling_distribution(logits, o);
    EXPECT_EQ(support(probs), kept) << "p=" << top_p << " " << probs;
    double mass = 0;
    for (int64_t i : kept) mass += p[i];
    for (int64_t i : kept) EXPECT_NEAR(probs[i].item<float>(), p[i] / mass, 1e-6) << "p=" << top_p << " id " << i;
  }
  // After top-k = 2 the distribution is {1: 0.625, 3: 0.375}: p = 0.6 keeps id 1 only.
  SamplingOptions both;
  both.top_k = 2;
  both.top_p = 0.6;
  EXPECT_EQ(support(sampling_distribution(logits, both)), (std::set<int64_t>{1}));
  both.top_p = 0.7;
  EXPECT_EQ(support(sampling_distribution(logits, both)), (std::set<int64_t>{1, 3}));
  // Tokens at -inf (never drawable) stay out, whatever p.
  SamplingOptions all;
  all.top_p = 0.999;
  auto masked = sampling_distribution(torch::tensor({0.0f, -std::numeric_limits<float>::infinity(), 0.0f}), all);
  EXPECT_EQ(support(masked), (std::set<int64_t>{0, 2}));
}

TEST(Sampling, FixedSeedReproducesTheDraws) {
  auto logits = torch::zeros({50});  // uniform: every draw is pure generator
  SamplingOptions o;
  auto a = generator(42), b = generator(42), c = generator(43);
  std::vector<int64_t> da, db, dc;
  for (int i = 0; i < 20; ++i) {
    da.push_back(sample_next(logits, o, a).item<int64_t>());
    db.push_back(sample_next(logits, o, b).item<int64_t>());
    dc.push_back(sample_next(logits, o, c).item<int64_t>());
  }
  EXPECT_EQ(da, db);
  EXPECT_NE(da, dc);  // equal with probability 50^-20
}

TEST(Sampling, BadOptionsAreUserErrorsNamingTheFlag) {
  auto logits = torch::zeros({5});
  auto expect_names = [&](SamplingOptions o, const std::string& flag) {
    auto gen = generator(1);
    const auto e1 = user_error_of([&] { sampling_distribution(logits, o); });
    EXPECT_NE(e1.find(flag), std::string::npos) << e1;
    const auto e2 = user_error_of([&] { sample_next(logits, o, gen); });
    EXPECT_NE(e2.find(flag), std::string::npos) << e2;
  };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  SamplingOptions o;
  o.temperature = -0.5;
  expect_names(o, "--temperature");
  o.temperature = nan;
  expect_names(o, "--temperature");
  o = {};
  o.top_k = -1;
  expect_names(o, "--top-k");
  for (double p : {0.0, -0.1, 1.5, nan}) {
    o = {};
    o.top_p = p;
    expect_names(o, "--top-p");
  }
  for (double theta : {0.0, -1.0, nan, std::numeric_limits<double>::infinity()}) {
    o = {};
    o.repetition_penalty = theta;
    expect_names(o, "--repetition-penalty");
  }
  o = {};
  o.no_repeat_ngram_size = -1;
  expect_names(o, "--no-repeat-ngram-size");
  LanguageModel lm(LanguageModelOptions(7).embed_dim(4).hidden_size(4).num_layers(1).dropout(0));
  EXPECT_NE(user_error_of([&] { sample_sequence(*lm, {4}, -1, {}, 1); }).find("--max-new-tokens"), std::string::npos);
}


// ---- the generation loop -----------------------------------------------------------------

constexpr int64_t kVocab = 23;

LanguageModelOptions small_lm(CellType cell, bool tied) {
  // Dropout is set (and must be ignored in eval mode) so that a loop or twin applying it fails.
  return LanguageModelOptions(kVocab).cell(cell).embed_dim(tied ? 12 : 8).hidden_size(12).num_layers(2)
      .dropout(0.4).tie_embeddings(tied);
}

torch::Tensor& output_bias(LanguageModelImpl& lm) { return lm.output ? lm.output->bias : lm.output_bias; }

// Greedy continuation by full passes over the whole prefix (no carried state), PAD and BOS
// excluded as sample_sequence excludes them.
std::vector<int64_t> greedy_by_full_passes(LanguageModelImpl& lm, const std::vector<int64_t>& prompt, int64_t n) {
  torch::NoGradGuard ng;
  std::vector<int64_t> seq{kEosId};
  seq.insert(seq.end(), prompt.begin(), prompt.end());
  std::vector<int64_t> out;
  for (int64_t i = 0; i < n; ++i) {
    auto logits = std::get<0>(lm.forward(torch::tensor(seq, torch::kLong).view({1, -1})))[0][-1].clone();
    logits[kPadId] = -std::numeric_limits<float>::infinity();
    logits[kBosId] = -std::numeric_limits<float>::infinity();
    const int64_t id = logits.argmax().item<int64_t>();
    if (id == kEosId) break;
    out.push_back(id);
    seq.push_back(id);
  }
  return out;
}

TEST(Sampling, GreedySequenceEqualsFullPassesWithoutCarriedState) {
  for (auto cell : {CellType::kLstm, CellType::kGru}) {
    torch::manual_seed(31);
    LanguageModel lm(small_lm(cell, false));
    lm->eval();
    // Sharper logits, so that argmax is not decided by rounding; and EOS never wins.
    lm->output->weight.data().mul_(6.0);
    output_bias(*lm).data()[kEosId] = -1e4;
    SamplingOptions greedy;
    greedy.temperature = 0;
    const std::vector<int64_t> prompt = {5, 9, 4};
    const auto got = sample_sequence(*lm, prompt, 12, greedy, 0);
    EXPECT_EQ(got.size(), 12u);
    EXPECT_EQ(got, greedy_by_full_passes(*lm, prompt, 12)) << to_string(cell);
    // The unconditional case starts from EOS alone.
    EXPECT_EQ(sample_sequence(*lm, {}, 6, greedy, 0), greedy_by_full_passes(*lm, {}, 6));
    EXPECT_TRUE(sample_sequence(*lm, prompt, 0, greedy, 0).empty());
  }
}

// A decoder whose next-token scores depend only on how many tokens it has read (row n of a
// fixed table), and which records what it was given: sampling must need nothing else.
class TableDecoder : public CausalDecoder {
 public:
  explicit TableDecoder(torch::Tensor table) : table_(std::move(table)) {}  // [N, V]
  CausalStep begin(const std::vector<int64_t>& tokens) override {
    read.insert(read.end(), tokens.begin(), tokens.end());
    return after(static_cast<int64_t>(tokens.size()));
  }
  CausalStep step(const CausalState& state, int64_t token) override {
    read.push_back(token);
    return after(state.tensors.at("n").item<int64_t>() + 1);
  }
  torch::Tensor sequence_logits(const std::vector<int64_t>& tokens) override {
    return table_.slice(0, 1, static_cast<int64_t>(tokens.size()) + 1);
  }
  int64_t vocab_size() const override { return table_.size(1); }
  torch::nn::Module& module() override { return module_; }
  std::vector<int64_t> read;

 private:
  CausalStep after(int64_t n) {
    CausalStep s;
    s.logits = table_[n];
    s.state.tensors["n"] = torch::tensor(n);
    return s;
  }
  torch::Tensor table_;
  torch::nn::Module module_;
};

TEST(Sampling, AnyCausalDecoderIsSampledThroughTheInterface) {
  constexpr int64_t V = 9;
  // Row n: the scores after n tokens. The primer is EOS + prompt (2 tokens), so rows 2.. decide.
  auto table = torch::zeros({8, V});
  table[2][6] = 5;
  table[3][7] = 5;
  table[4][kPadId] = 9;  // never drawn: the next best is
  table[4][4] = 5;
  table[5][kEosId] = 5;
  SamplingOptions greedy;
  greedy.temperature = 0;
  TableDecoder decoder(table);
  EXPECT_EQ(sample_sequence(decoder, {5}, 10, greedy, 0), (std::vector<int64_t>{6, 7, 4}));
  EXPECT_EQ(decoder.read, (std::vector<int64_t>{kEosId, 5, 6, 7, 4}));
  // The last drawn token is not read: nothing scores past max_tokens.
  TableDecoder two(table);
  EXPECT_EQ(sample_sequence(two, {5}, 2, greedy, 0), (std::vector<int64_t>{6, 7}));
  EXPECT_EQ(two.read, (std::vector<int64_t>{kEosId, 5, 6}));
  // top-k = 1 draws the argmax whatever the seed.
  SamplingOptions one;
  one.top_k = 1;
  TableDecoder sampled(table);
  EXPECT_EQ(sample_sequence(sampled, {5}, 10, one, 123), (std::vector<int64_t>{6, 7, 4}));
}

// CTRL's penalty on hand-made logits (divided when positive, multiplied when negative, once
// per distinct token), and the n-gram ban (the tokens that followed the last n-1 before).
TEST(Sampling, RepeatRulesFollowCtrlAndTheNgramBan) {
  const auto logits = torch::tensor({2.0f, -1.0f, 0.5f, 3.0f, -2.0f});
  SamplingOptions o;
  o.repetition_penalty = 2.0;
  EXPECT_TRUE(torch::equal(penalize_repeats(logits, {0, 1, 1, 4}, o), torch::tensor({1.0f, -2.0f, 0.5f, 3.0f, -4.0f})));
  EXPECT_TRUE(torch::equal(penalize_repeats(logits, {}, o), logits));
  const float inf = std::numeric_limits<float>::infinity();
  o = {};
  o.no_repeat_ngram_size = 2;  // "3 1" was seen and the text ends in 3: 1 is banned
  EXPECT_TRUE(torch::equal(penalize_repeats(logits, {3, 1, 2, 3}, o), torch::tensor({2.0f, -inf, 0.5f, 3.0f, -2.0f})));
  o.no_repeat_ngram_size = 1;  // every token seen
  EXPECT_TRUE(torch::equal(penalize_repeats(logits, {3, 1, 2, 3}, o), torch::tensor({2.0f, -inf, -inf, -inf, -2.0f})));
  EXPECT_EQ(repeated_ngram_ends({5, 6, 7, 5, 6, 8, 5, 6}, 3), (std::vector<int64_t>{7, 8}));

  // In the loop the rules read the prompt too: greedy would repeat 6 forever.
  constexpr int64_t V = 9;
  auto table = torch::zeros({8, V});
  for (int64_t r = 0; r < 8; ++r) {
    table[r][6] = 5;
    table[r][7] = 4;
    table[r][8] = 3;
  }
  SamplingOptions greedy;
  greedy.temperature = 0;
  greedy.no_repeat_ngram_size = 1;
  TableDecoder decoder(table);
  EXPECT_EQ(sample_sequence(decoder, {6}, 2, greedy, 0), (std::vector<int64_t>{7, 8}));
}

TEST(Sampling, SequenceStopsAtEosAndNeverDrawsPadOrBos) {
  torch::manual_seed(32);
  LanguageModel lm(small_lm(CellType::kLstm, true));
  SamplingOptions hot;
  hot.temperature = 3.0;  // flat: every drawable token turns up
  {
    torch::NoGradGuard ng;
    output_bias(*lm).fill_(0.0);
    output_bias(*lm)[kPadId] = 8.0;  // the most probable tokens, were they not excluded
    output_bias(*lm)[kBosId] = 8.0;
    output_bias(*lm)[kEosId] = -1e4;
  }
  std::set<int64_t> seen;
  for (uint64_t seed = 0; seed < 5; ++seed)
    for (int64_t id : sample_sequence(*lm, {7}, 40, hot, seed)) seen.insert(id);
  EXPECT_FALSE(seen.count(kPadId));
  EXPECT_FALSE(seen.count(kBosId));
  EXPECT_FALSE(seen.count(kEosId));
  EXPECT_GT(seen.size(), 10u);
  {
    torch::NoGradGuard ng;
    output_bias(*lm)[kEosId] = 1e4;  // EOS at once
  }
  EXPECT_TRUE(sample_sequence(*lm, {7, 8}, 40, hot, 1).empty());
}

TEST(Sampling, SameSeedSameSequenceInEvalModeWhateverTheCallerSet) {
  torch::manual_seed(33);
  LanguageModel lm(small_lm(CellType::kGru, false));
  output_bias(*lm).data()[kEosId] = -1e4;  // full-length samples, so that they can differ
  SamplingOptions o;
  o.top_k = 10;
  o.top_p = 0.95;
  lm->train();  // dropout 0.4 would make draws differ if it were applied
  const auto a = sample_sequence(*lm, {4, 5}, 30, o, 7);
  EXPECT_TRUE(lm->is_training()) << "the caller's mode is restored";
  lm->eval();
  const auto b = sample_sequence(*lm, {4, 5}, 30, o, 7);
  const auto c = sample_sequence(*lm, {4, 5}, 30, o, 8);
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.size(), 30u);
  EXPECT_NE(a, c);
}

// ---- the scripted twin ---------------------------------------------------------------------

struct LmVariant {
  CellType cell;
  bool tied;
};

std::string lm_variant_name(const LmVariant& v) { return to_string(v.cell) + (v.tied ? "_tied" : "_untied"); }
std::ostream& operator<<(std::ostream& os, const LmVariant& v) { return os << lm_variant_name(v); }

std::vector<LmVariant> lm_variants() {
  std::vector<LmVariant> out;
  for (auto cell : {CellType::kLstm, CellType::kGru, CellType::kRnn})
    for (bool tied : {false, true}) out.push_back({cell, tied});
  return out;
}

struct TwinOut {
  torch::Tensor log_probs, h, c;
};

TwinOut call_twin(torch::jit::Module& twin, const std::string& method, const torch::Tensor& tokens,
                  const torch::Tensor& h, const torch::Tensor& c) {
  const auto e = twin_tuple(twin.get_method(method)({tokens, h, c}), 3, method, "language model");
  return {e[0].toTensor(), e[1].toTensor(), e[2].toTensor()};
}

// Three chunks through both models from a zero state, carrying the state: forward [B, 5],
// step [B], forward [B, 3]. Every log-prob and state tensor agrees.
void expect_twin_matches(LanguageModelImpl& eager, torch::jit::Module& twin, int64_t B) {
  torch::NoGradGuard ng;
  const bool lstm = eager.options().cell() == CellType::kLstm;
  const int64_t L = eager.options().num_layers(), H = eager.options().hidden_size();
  auto init = twin_tuple(twin.get_method("init_state")({B}), 2, "init_state", "language model");
  auto h = init[0].toTensor(), c = init[1].toTensor();
  EXPECT_EQ(h.sizes(), (std::vector<int64_t>{L, B, H}));
  EXPECT_EQ(c.sizes(), (std::vector<int64_t>{L, B, lstm ? H : 0}));
  EXPECT_EQ(h.abs().sum().item<float>(), 0.f);
  RecurrentState state;
  const std::vector<std::pair<std::string, torch::Tensor>> chunks = {
      {"forward", torch::randint(0, kVocab, {B, 5}, torch::kLong)},
      {"step", torch::randint(0, kVocab, {B}, torch::kLong)},
      {"forward", torch::randint(0, kVocab, {B, 3}, torch::kLong)}};
  for (const auto& [method, tokens] : chunks) {
    const bool one = method == "step";
    auto [logits, next] = eager.forward(one ? tokens.unsqueeze(1) : tokens, state);
    auto expected = torch::log_softmax(logits, -1);
    if (one) expected = expected.squeeze(1);
    auto got = call_twin(twin, method, tokens, h, c);
    EXPECT_LE(max_diff(got.log_probs, expected), 1e-5) << method;
    EXPECT_LE((got.log_probs.exp().sum(-1) - 1).abs().max().item<float>(), 1e-5) << method;
    EXPECT_LE(max_diff(got.h, next.h), 1e-5) << method;
    if (lstm) {
      EXPECT_LE(max_diff(got.c, next.c), 1e-5) << method;
    } else {
      EXPECT_TRUE(got.c.equal(c)) << "rnn/gru: c is passed through";
    }
    state = next;
    h = got.h;
    c = got.c;
  }
}

std::string temp_path(const std::string& name) {
  return (fs::temp_directory_path() / ("nlpzoo_lmexport_" + std::to_string(::getpid()) + "_" + name)).string();
}

class LmExport : public ::testing::TestWithParam<LmVariant> {};

TEST_P(LmExport, TwinMatchesEagerWithCarriedState) {
  torch::manual_seed(41);
  LanguageModel lm(small_lm(GetParam().cell, GetParam().tied));
  lm->eval();
  auto twin = script_language_model(*lm);
  expect_twin_matches(*lm, twin, 4);
  expect_twin_matches(*lm, twin, 1);
}

TEST_P(LmExport, TwinHoldsEveryParameterUnderItsMappedName) {
  const LmVariant v = GetParam();
  LanguageModel lm(small_lm(v.cell, v.tied));
  auto twin = script_language_model(*lm);
  test::expect_twin_holds_parameters(*lm, twin);
  EXPECT_EQ(twin.hasattr("output__weight"), !v.tied);
  EXPECT_EQ(twin.hasattr("output_bias"), v.tied);
  EXPECT_EQ(twin.attr("cell").toStringRef(), to_string(v.cell));
  EXPECT_EQ(twin.attr("tie_embeddings").toBool(), v.tied);
  EXPECT_EQ(twin.attr("vocab_size").toInt(), kVocab);
  EXPECT_EQ(twin.attr("num_layers").toInt(), 2);
  EXPECT_EQ(twin.attr("hidden_size").toInt(), 12);
  EXPECT_EQ(twin.attr("eos_id").toInt(), kEosId);
  EXPECT_EQ(twin.attr("pad_id").toInt(), kPadId);
}

TEST_P(LmExport, SavedFileLoadsWithItsExtraFilesAndMatches) {
  torch::manual_seed(42);
  LanguageModel lm(small_lm(GetParam().cell, GetParam().tied));
  lm->eval();
  const auto path = temp_path(lm_variant_name(GetParam()) + ".pt");
  const std::map<std::string, std::string> extras = {{"config.ini", "task = language_model\n"},
                                                     {"spm.model", std::string("\0\x02spm", 5)}};
  export_language_model(path, *lm, extras);
  auto loaded = test::load_export_checking_extras(path, extras, language_model_export_readme(lm->options()));
  expect_twin_matches(*lm, loaded, 3);
}

INSTANTIATE_TEST_SUITE_P(Variants, LmExport, ::testing::ValuesIn(lm_variants()),
                         [](const ::testing::TestParamInfo<LmVariant>& info) { return lm_variant_name(info.param); });

TEST(LmExportErrors, ReservedNameAndUnwritablePath) {
  LanguageModel lm(small_lm(CellType::kGru, false));
  const auto path = temp_path("x.pt");
  EXPECT_THROW(export_language_model(path, *lm, {{"README.txt", "mine"}}), std::invalid_argument);
  EXPECT_FALSE(fs::exists(path));
  EXPECT_NE(user_error_of([&] { export_language_model("/nonexistent_dir_nlpzoo/lm.pt", *lm, {}); })
                .find("/nonexistent_dir_nlpzoo/lm.pt"),
            std::string::npos);
}

// Debian's python3-torch loads the exported files, reads their extra files, parameter names
// and attributes, computes the eager model's log-probs through forward and step, and runs the
// README's own sampling example. One python process checks every file (importing torch is slow).
TEST(RegressionGeneratePython, PythonTorchRunsTheExportedLanguageModels) {
  NLPZOO_REQUIRE_PYTHON_MODULE("torch", "python3-torch");
  const std::vector<LmVariant> variants = {{CellType::kLstm, true}, {CellType::kLstm, false},
                                           {CellType::kGru, true}, {CellType::kGru, false}};
  torch::manual_seed(43);
  std::vector<LanguageModel> models;
  std::vector<std::string> paths;
  for (size_t i = 0; i < variants.size(); ++i) {
    models.emplace_back(small_lm(variants[i].cell, variants[i].tied));
    models.back()->eval();
    paths.push_back(temp_path("py" + std::to_string(i) + ".pt"));
    export_language_model(paths.back(), *models.back(), {{"config.ini", "task = language_model\n"}, {"spm.model", "spm"}});
  }
  const auto py = test::run_python(R"PY(
import sys, textwrap, torch
torch.set_num_threads(1)
tokens = torch.tensor([[3, 5, 6, 7], [3, 9, 4, 1]])
nxt = torch.tensor([8, 10])
for i, path in enumerate(sys.argv[1:]):
    files = {'config.ini': '', 'spm.model': '', 'README.txt': ''}
    m = torch.jit.load(path, _extra_files=files)
    assert files['config.ini'] == b'task = language_model\n', files['config.ini']
    assert files['spm.model'] == b'spm', files['spm.model']
    print('params', i, ' '.join(sorted(n for n, _ in m.named_parameters())))
    print('attrs', i, m.cell, m.tie_embeddings, m.num_layers, m.vocab_size)
    with torch.no_grad():
        h, c = m.init_state(2)
        log_probs, h, c = m.forward(tokens, h, c)
        print('logp', i, 0, ' '.join('%.9g' % v for v in log_probs.flatten().tolist()))
        log_probs, h, c = m.step(nxt, h, c)
        print('logp', i, 1, ' '.join('%.9g' % v for v in log_probs.flatten().tolist()))
        print('state', i, 1, ' '.join('%.9g' % v for v in h.flatten().tolist()))
        # The README's example, verbatim, on this file.
        readme = files['README.txt'].decode()
        example = textwrap.dedent(readme[readme.index('Python:\n') + 8:readme.index('The exporter')])
        scope = {}
        exec(example.replace("'model.pt'", repr(path)), scope)
        assert 3 <= len(scope['ids']) <= 103 and all(0 <= t < m.vocab_size for t in scope['ids']), scope['ids']
print('done')
)PY", paths);
  for (const auto& path : paths) fs::remove(path);
  ASSERT_EQ(py.status, 0) << py.out << py.err;

  torch::NoGradGuard ng;
  const auto tokens = torch::tensor({3, 5, 6, 7, 3, 9, 4, 1}, torch::kLong).view({2, 4});
  const auto nxt = torch::tensor({8, 10}, torch::kLong).view({2, 1});
  std::map<std::string, torch::Tensor> values;
  std::map<std::string, std::string> texts;
  for (size_t i = 0; i < variants.size(); ++i) {
    auto& lm = *models[i];
    const std::string id = std::to_string(i);
    texts["params " + id] = test::sorted_scripted_names(lm);
    texts["attrs " + id] = to_string(variants[i].cell) + (variants[i].tied ? " True" : " False") + " 2 " +
                           std::to_string(kVocab);
    auto [logits, state] = lm.forward(tokens);
    values["logp " + id + " 0"] = torch::log_softmax(logits, -1).flatten();
    auto [logits1, state1] = lm.forward(nxt, state);
    values["logp " + id + " 1"] = torch::log_softmax(logits1, -1).flatten();
    values["state " + id + " 1"] = state1.h.flatten();
  }
  test::expect_python_report(py.out, values, texts);
}

// ---- the CLI on a language model trained on the Bible ---------------------------------------

using test::run_cli;
using test::shell_quote;

void expect_error(const test::CommandResult& r, const std::string& what) {
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_NE(r.err.find(": error: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(what), std::string::npos) << "error should name '" << what << "': " << r.err;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

class RegressionGenerate : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = test::fresh_temp_dir("generate");
    auto r = run_cli("data bible --out " + shell_quote((root_ / "bible").string()));
    ASSERT_EQ(r.status, 0) << r.out << r.err;
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path root_;
};

TEST_F(RegressionGenerate, TrainGenerateReproducibleAndExport) {
  const std::string run = shell_quote((root_ / "lm").string());
  auto r = run_cli("train --config " + shell_quote(std::string(NLPZOO_SOURCE_DIR) + "/configs/lm-lstm-bible.ini") +
                   " --data-dir " + shell_quote((root_ / "bible").string()) + " --run-dir " + run +
                   " --max_steps 5 --hidden_size 32 --embed_dim 32 --num_layers 1 --vocab_size 500 --bptt 20"
                   " --batch_size 16 --device cpu");
  ASSERT_EQ(r.status, 0) << r.out << r.err;

  const std::string gen = "generate --run-dir " + run + " --device cpu --max-new-tokens 30 ";
  auto a = run_cli(gen + "--seed 7 --prompt 'In the beginning'");
  ASSERT_EQ(a.status, 0) << a.err;
  ASSERT_EQ(lines_of(a.out).size(), 1u) << a.out;
  EXPECT_EQ(a.out.rfind("In the beginning", 0), 0u) << a.out;
  EXPECT_GT(a.out.size(), std::string("In the beginning\n").size()) << a.out;
  EXPECT_EQ(a.err.find("seed"), std::string::npos) << "a given seed is not announced: " << a.err;
  // --max-tokens, the flag's old name, still works, with a deprecation warning; both at once is an error.
  const std::string old_gen = "generate --run-dir " + run + " --device cpu --max-tokens 30 ";
  auto old_name = run_cli(old_gen + "--seed 7 --prompt 'In the beginning'");
  ASSERT_EQ(old_name.status, 0) << old_name.err;
  EXPECT_EQ(old_name.out, a.out);
  // --prompt - reads the prompt from standard input.
  auto piped = run_cli(gen + "--seed 7 --prompt -", "In the beginning\n");
  ASSERT_EQ(piped.status, 0) << piped.err;
  EXPECT_EQ(piped.out, a.out);
  EXPECT_NE(old_name.err.find("--max-tokens is deprecated"), std::string::npos) << old_name.err;
  EXPECT_EQ(a.err.find("deprecated"), std::string::npos) << a.err;
  expect_error(run_cli(old_gen + "--max-new-tokens 20"), "--max-new-tokens");
  const std::string bare = "generate --run-dir " + run + " --device cpu --seed 1 ";
  expect_error(run_cli(bare + "--max-tokens -1"), "--max-tokens: must be >= 0");
  expect_error(run_cli(bare + "--max-new-tokens -1"), "--max-new-tokens: must be >= 0");
  // Another run with the same seed repeats the text; sample i uses seed + i, so the first of
  // three is the single sample above.
  auto three = run_cli(gen + "--seed 7 --prompt 'In the beginning' --num-samples 3");
  ASSERT_EQ(three.status, 0) << three.err;
  const auto samples = lines_of(three.out);
  ASSERT_EQ(samples.size(), 3u) << three.out;
  EXPECT_EQ(samples[0] + "\n", a.out);
  EXPECT_NE(samples[1], samples[2]);
  // Greedy: no randomness, so no seed is needed for the same text.
  auto g1 = run_cli(gen + "--temperature 0 --num-samples 2 --prompt 'And God said'");
  ASSERT_EQ(g1.status, 0) << g1.err;
  const auto greedy = lines_of(g1.out);
  ASSERT_EQ(greedy.size(), 2u) << g1.out;
  EXPECT_EQ(greedy[0], greedy[1]);  // the two seeds make no difference
  EXPECT_EQ(greedy[0].rfind("And God said", 0), 0u) << g1.out;
  EXPECT_NE(g1.err.find("pass --seed "), std::string::npos) << g1.err;
  // Bad flags fail before the model is loaded, naming the flag.
  expect_error(run_cli(gen + "--top-p 0"), "--top-p");
  expect_error(run_cli(gen + "--temperature -1"), "--temperature");
  expect_error(run_cli(gen + "--num-samples 0"), "--num-samples");

  const auto pt = (root_ / "lm.pt").string();
  r = run_cli("export --run-dir " + run + " --out " + shell_quote(pt));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("spm.model"), std::string::npos) << r.out;
  torch::jit::ExtraFilesMap files{{"config.ini", ""}, {"spm.model", ""}};
  auto twin = torch::jit::load(pt, torch::kCPU, files);
  EXPECT_NE(files.at("config.ini").find("language_model"), std::string::npos) << files.at("config.ini");
  EXPECT_EQ(files.at("spm.model"), read_file((root_ / "lm" / "spm.en.model").string()));
  EXPECT_EQ(twin.attr("hidden_size").toInt(), 32);
  EXPECT_EQ(twin.attr("cell").toStringRef(), "lstm");
  NLPZOO_REQUIRE_PYTHON_MODULE("torch", "python3-torch");
  const auto py = test::run_python(
      "import sys, torch\n"
      "m = torch.jit.load(sys.argv[1])\n"
      "h, c = m.init_state(1)\n"
      "lp, h, c = m.forward(torch.tensor([[3, 5, 6]]), h, c)\n"
      "print(m.vocab_size, tuple(lp.shape), round(float(lp[0, -1].exp().sum()), 4))\n",
      {pt});
  ASSERT_EQ(py.status, 0) << py.out << py.err;
  const int64_t V = twin.attr("vocab_size").toInt();
  EXPECT_EQ(py.out, std::to_string(V) + " (1, 3, " + std::to_string(V) + ") 1.0\n");
}

}  // namespace
