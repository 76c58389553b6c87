// The decoder-only Transformer LM (models/transformer/gpt.h), its task (train/tasks/gpt_task.h),
// the cosine schedule it trains with, and its TorchScript twin (infer/export_gpt.h).
#include <gtest/gtest.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <cmath>
#include <filesystem>

#include "core/io.h"
#include "datasets/special_ids.h"
#include "infer/export_gpt.h"
#include "infer/sampling.h"
#include "models/transformer/gpt.h"
#include "tests/test_util.h"
#include "train/checkpoint.h"
#include "train/lr_schedule.h"
#include "train/tasks/gpt_task.h"
#include "train/tasks/registry.h"
#include "train/trainer.h"

namespace fs = std::filesystem;

namespace nlpzoo {
namespace {

Gpt small_gpt(int64_t block_size = 8, int64_t layers = 2) {
  torch::manual_seed(5);
  Gpt m(GptOptions(11).d_model(16).num_heads(4).num_layers(layers).ffn_dim(32).block_size(block_size).dropout(0.1));
  m->eval();
  return m;
}

// Every cached step equals the full causal forward pass at its position.
TEST(Gpt, CachedStepsEqualTheFullForwardPass) {
  auto m = small_gpt();
  torch::NoGradGuard ng;
  const std::vector<int64_t> tokens = {3, 5, 7, 9, 4, 6, 10, 8};
  const auto full = m->sequence_logits(tokens);  // [8, V]
  auto step = m->begin({tokens[0], tokens[1], tokens[2]});
  EXPECT_LT(test::max_diff(step.logits, full[2]), 1e-5);
  for (size_t t = 3; t < tokens.size(); ++t) {
    const auto before = step.state.tensors.at("k0").clone();
    auto next = m->step(step.state, tokens[t]);
    EXPECT_TRUE(torch::equal(step.state.tensors.at("k0"), before)) << "step modified its input state";
    EXPECT_LT(test::max_diff(next.logits, full[t]), 1e-5) << "position " << t;
    EXPECT_EQ(next.state.tensors.at("k1").size(2), static_cast<int64_t>(t) + 1);
    step = next;
  }
}

// Row t never depends on tokens after t (the look-ahead mask).
TEST(Gpt, LaterTokensDoNotChangeEarlierLogits) {
  auto m = small_gpt();
  torch::NoGradGuard ng;
  const auto a = m->sequence_logits({3, 5, 7, 9, 4});
  const auto b = m->sequence_logits({3, 5, 7, 10, 10});
  EXPECT_TRUE(torch::allclose(a.slice(0, 0, 3), b.slice(0, 0, 3)));
  EXPECT_FALSE(torch::allclose(a[3], b[3]));
}

// A full context is cut to its last block_size / 2 tokens and read again, and teacher forcing
// over a longer text reads it in the same windows.
TEST(Gpt, AFullContextRestartsFromItsRecentHalf) {
  auto m = small_gpt(/*block_size=*/4);
  torch::NoGradGuard ng;
  const std::vector<int64_t> tokens = {3, 5, 7, 9, 6, 4, 8, 10, 3};
  auto s = m->begin({3, 5, 7, 9});
  const auto next = m->step(s.state, 6);  // the fifth token: re-reads {9, 6}
  EXPECT_LT(test::max_diff(next.logits, m->sequence_logits({9, 6})[1]), 1e-6);
  EXPECT_EQ(next.state.tensors.at("tokens").size(0), 2);
  const auto full = m->sequence_logits(tokens);
  ASSERT_EQ(full.size(0), 9);
  s = m->begin({3});
  for (size_t t = 1; t < tokens.size(); ++t) {
    s = m->step(s.state, tokens[t]);
    EXPECT_LT(test::max_diff(s.logits, full[t]), 1e-5) << "position " << t;
  }
  EXPECT_THROW(m->forward(torch::ones({1, 5}, torch::kLong)), UserError);
}

// GPT-2's init: weights N(0, 0.02), residual projections N(0, 0.02 / sqrt(2N)), biases 0,
// and the output layer is the token embedding (no parameter of its own).
TEST(Gpt, InitAndTiedOutputFollowGpt2) {
  torch::manual_seed(3);
  Gpt m(GptOptions(500).d_model(64).num_heads(4).num_layers(8).ffn_dim(256).block_size(32).dropout(0));
  auto& layer = m->blocks->typed_layers[3];
  EXPECT_NEAR(layer->self_attn->W_Q->weight.std().item<double>(), 0.02, 0.001);
  EXPECT_NEAR(m->token_embedding->weight.std().item<double>(), 0.02, 0.001);
  EXPECT_NEAR(layer->ffn->linear2->weight.std().item<double>(), 0.02 / 4.0, 0.0003);
  EXPECT_NEAR(layer->self_attn->W_O->weight.std().item<double>(), 0.02 / 4.0, 0.0005);
  EXPECT_EQ(layer->ffn->linear1->bias.abs().sum().item<double>(), 0.0);
  EXPECT_EQ(layer->norm1->weight.sum().item<double>(), 64.0);
  // V*D + block*D + per layer (4 D^2 + 4 D + 2 D F + F + D + 4 D) + 2 D
  const int64_t D = 64, F = 256;
  int64_t count = 0;
  for (const auto& p : m->parameters()) count += p.numel();
  EXPECT_EQ(count, 500 * D + 32 * D + 8 * (4 * D * D + 4 * D + 2 * D * F + F + D + 4 * D) + 2 * D);
  torch::NoGradGuard ng;
  m->eval();
  const auto tokens = torch::tensor({{4, 9, 2}}, torch::kLong);
  const auto positions = torch::arange(3, torch::kLong);
  auto h = m->blocks(m->token_embedding(tokens) + m->position_embedding(positions), causal_mask(3, 3));
  EXPECT_LT(test::max_diff(m->forward(tokens), torch::matmul(h, m->token_embedding->weight.t())), 1e-5);
}

// nanoGPT's get_lr: linear warm-up, then min_lr + (lr - min_lr)(1 + cos(pi r)) / 2.
TEST(CosineSchedule, FollowsTheFormula) {
  LrScheduleOptions o;
  o.kind = LrScheduleKind::kCosine;
  o.lr = 1e-3;
  o.min_lr = 1e-4;
  o.warmup_steps = 100;
  o.decay_steps = 2000;
  LrSchedule s(o);
  EXPECT_DOUBLE_EQ(s.lr_at(50), 0.5e-3);
  EXPECT_DOUBLE_EQ(s.lr_at(100), 1e-3);
  EXPECT_NEAR(s.lr_at(1050), 1e-4 + 0.9e-3 * 0.5, 1e-15);
  EXPECT_NEAR(s.lr_at(575), 1e-4 + 0.9e-3 * 0.5 * (1 + std::cos(M_PI * 0.25)), 1e-15);
  EXPECT_DOUBLE_EQ(s.lr_at(2000), 1e-4);
  EXPECT_DOUBLE_EQ(s.lr_at(5000), 1e-4);
  o.decay_steps = 0;
  EXPECT_NE(test::user_error_of([&] { check_lr_schedule(o); }).find("decay_steps"), std::string::npos);
}

// ---- the task ----------------------------------------------------------------------------

// 40 lines of a play-like text: names, speeches, blank lines, two spaces in a row.
std::string play_text() {
  std::string text;
  for (int i = 0; i < 10; ++i)
    text += "ROMEO:\nBut soft,  what light through yonder window breaks?\n\nJULIET:\nAy me! " + std::to_string(i) + "\n";
  return text;
}

Config gpt_config(const std::vector<std::string>& extra = {}) {
  std::vector<std::string> o = {"--text_file", "play.txt", "--spm_model_type", "char", "--spm_normalization",
                                "identity", "--spm_add_dummy_prefix", "false", "--spm_remove_extra_whitespaces",
                                "false", "--vocab_size", "100", "--d_model", "16", "--num_heads", "2",
                                "--num_layers", "2", "--block_size", "16", "--batch_size", "4", "--dropout", "0.1",
                                "--device", "cpu", "--log_interval", "1000", "--lr", "0.003", "--seed", "7"};
  o.insert(o.end(), extra.begin(), extra.end());
  return Config::resolve(task_schema("gpt"), "", o);
}

class GptData : public ::testing::Test {
 protected:
  void SetUp() override {
    torch::set_num_threads(1);
    root_ = test::fresh_temp_dir("gpt");
    fs::create_directories(root_ / "data");
    atomic_write_text((root_ / "data" / "play.txt").string(), play_text());
  }
  void TearDown() override { fs::remove_all(root_); }
  TaskContext context(const std::string& run, std::set<Split> splits = {Split::kTrain, Split::kValid},
                      bool resume = false) const {
    return {(root_ / "data").string(), (root_ / run).string(), std::move(splits), resume};
  }
  fs::path root_;
};

// A verbatim char model reads one token per character (a line break is EOS), and valid is the
// text after its first 90% of characters, as nanoGPT cuts tiny Shakespeare.
TEST_F(GptData, TheTextIsOneTokenPerCharacterCutAtNinetyPercent) {
  Config c = gpt_config();
  GptTask task;
  task.setup(c, context("run"));
  const std::string text = play_text();
  const size_t cut = text.size() * 9 / 10;
  ASSERT_EQ(task.stream(Split::kTrain).size(0), static_cast<int64_t>(cut));
  ASSERT_EQ(task.stream(Split::kValid).size(0), static_cast<int64_t>(text.size() - cut));
  const auto& tok = task.tokenizer();
  std::string decoded;
  for (int64_t id : std::vector<int64_t>(task.stream(Split::kValid).data_ptr<int64_t>(),
                                         task.stream(Split::kValid).data_ptr<int64_t>() + text.size() - cut))
    decoded += id == kEosId ? "\n" : tok.decode(std::vector<int64_t>{id});
  std::string expected = text.substr(cut);
  expected.replace(expected.find('9'), 1, tok.decode(std::vector<int64_t>{kUnkId}));  // not in the train split
  EXPECT_EQ(decoded, expected);
  EXPECT_FALSE(fs::exists(root_ / "run" / "spm.en.train.txt")) << "the tokenizer's input is removed";
  // The tokenizer saw the train split only: '9' occurs only in the last line.
  EXPECT_EQ(tok.encode("9"), std::vector<int64_t>{kUnkId});
  EXPECT_EQ(c.get("vocab_size"), std::to_string(tok.vocab_size()));

  GptTask no_test;
  Config c2 = gpt_config();
  EXPECT_NE(test::user_error_of([&] { no_test.setup(c2, context("r2", {Split::kTest})); }).find("no test split"),
            std::string::npos);
}

TEST_F(GptData, BatchesAreShiftedBlocksAndValidScoresEveryTokenOnce) {
  for (const char* mode : {"random", "none"}) {
    Config c = gpt_config({"--sample_break", mode});
    GptTask task;
    task.setup(c, context(std::string("run_") + mode));
    const auto& s = task.stream(Split::kTrain);
    const auto b = task.make_batch(Split::kTrain, 2, 1);
    const auto& in = b.tensors.at("input");
    ASSERT_EQ(in.sizes(), (std::vector<int64_t>{4, 16}));
    for (int64_t r = 0; r < 4; ++r) {
      // The block is a slice of the stream and the target is it shifted by one.
      const auto row = in[r];
      bool found = false;
      for (int64_t o = 0; o + 16 < s.size(0) && !found; ++o)
        found = torch::equal(s.slice(0, o, o + 16), row) && torch::equal(s.slice(0, o + 1, o + 17), b.tensors.at("target")[r]);
      EXPECT_TRUE(found) << mode << " row " << r;
    }
    EXPECT_TRUE(torch::equal(task.make_batch(Split::kTrain, 2, 1).tensors.at("input"), in)) << "deterministic";
    EXPECT_FALSE(torch::equal(task.make_batch(Split::kTrain, 3, 1).tensors.at("input"), in)) << "another epoch";
  }
  Config c = gpt_config();
  GptTask task;
  task.setup(c, context("run"));
  int64_t scored = 0;
  std::vector<int64_t> targets;
  for (int64_t i = 0; i < task.num_batches(Split::kValid, 0); ++i) {
    const auto b = task.make_batch(Split::kValid, 0, i);
    scored += b.num_tokens;
    const auto t = b.tensors.at("target").flatten();
    for (int64_t j = 0; j < t.size(0); ++j)
      if (t[j].item<int64_t>() != kPadId) targets.push_back(t[j].item<int64_t>());
  }
  const auto& v = task.stream(Split::kValid);
  EXPECT_EQ(scored, v.size(0) - 1);
  EXPECT_EQ(targets, std::vector<int64_t>(v.data_ptr<int64_t>() + 1, v.data_ptr<int64_t>() + v.size(0)));
}

// bits per character = the summed loss over the split's characters / ln 2.
TEST_F(GptData, EvaluateReportsBitsPerCharacter) {
  Config c = gpt_config();
  GptTask task;
  task.setup(c, context("run"));
  task.model()->eval();
  const auto m = task.evaluate(Split::kValid, {});
  const double chars = static_cast<double>(play_text().size() - play_text().size() * 9 / 10);
  EXPECT_NEAR(m.at("bits_per_character").value,
              m.at("loss").value * m.at("tokens").value / chars / std::log(2.0), 1e-9);
  EXPECT_NEAR(m.at("loss_per_character").value, m.at("bits_per_character").value * std::log(2.0), 1e-9);
  // An untrained model is near uniform over the vocabulary.
  EXPECT_NEAR(m.at("loss").value, std::log(static_cast<double>(task.tokenizer().vocab_size())), 0.3);
}

TEST_F(GptData, ResumeIsExactAndTrainingLowersTheLoss) {
  auto config = [](int64_t max_steps) {
    return gpt_config({"--max_steps", std::to_string(max_steps), "--valid_interval", "4", "--optimizer", "adamw",
                       "--weight_decay", "0.1", "--lr_schedule", "cosine", "--warmup_steps", "2", "--min_lr",
                       "0.0003", "--decay_steps", "12", "--clip_norm", "1"});
  };
  Config c12 = config(12);
  torch::manual_seed(1234);
  GptTask a;
  a.setup(c12, context("a"));
  a.model()->eval();
  const double before = a.evaluate(Split::kValid, {}).at("loss").value;
  ASSERT_EQ(Trainer(a, c12, "gpt", (root_ / "a").string()).train(false), 0);
  a.model()->eval();
  EXPECT_LT(a.evaluate(Split::kValid, {}).at("loss").value, before - 0.15);  // 3.86 (uniform over 48) -> 3.65

  Config c6 = config(6);
  torch::manual_seed(1234);
  GptTask b1;
  b1.setup(c6, context("b"));
  ASSERT_EQ(Trainer(b1, c6, "gpt", (root_ / "b").string()).train(false), 0);
  torch::manual_seed(999);
  Config c12b = config(12);
  GptTask b2;
  b2.setup(c12b, context("b", {Split::kTrain, Split::kValid}, /*resume=*/true));
  ASSERT_EQ(Trainer(b2, c12b, "gpt", (root_ / "b").string()).train(true), 0);
  auto pa = a.model()->parameters(), pb = b2.model()->parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i) EXPECT_TRUE(torch::equal(pa[i], pb[i])) << "parameter " << i;

  // Weight decay skips the biases and LayerNorms (nanoGPT's groups).
  const auto profile = a.training_profile();
  for (const auto& name : profile.no_weight_decay)
    EXPECT_TRUE(name.find("bias") != std::string::npos || name.find("norm") != std::string::npos) << name;
  EXPECT_EQ(profile.no_weight_decay.size(), 2u * 10 + 2);  // per layer 4 + 2 biases, 2 LayerNorms; the final one
}

// Sampling goes through the one CausalDecoder code; the same seed gives the same text, and a
// text model's EOS (a line break) does not end the sample.
TEST_F(GptData, SamplingIsReproducibleAndGoesPastLineBreaks) {
  Config c = gpt_config();
  GptTask task;
  task.setup(c, context("run"));
  SamplingOptions o;
  o.top_k = 5;
  const auto a = sample_sequence(task.causal_decoder(), {}, 40, o, 11, task.eos_ends_text());
  const auto b = sample_sequence(task.causal_decoder(), {}, 40, o, 11, task.eos_ends_text());
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.size(), 40u);  // past block_size (16) too
  EXPECT_FALSE(task.eos_ends_text());
}

// ---- the TorchScript twin ----------------------------------------------------------------

TEST(ExportGpt, TwinMatchesEagerWithAndWithoutTheCache) {
  auto m = small_gpt(/*block_size=*/8, /*layers=*/3);
  torch::NoGradGuard ng;
  auto twin = script_gpt(*m);
  const auto tokens = torch::tensor({{3, 5, 7, 9, 4, 6}, {10, 8, 4, 4, 5, 6}}, torch::kLong);
  const auto eager = torch::log_softmax(m->forward(tokens), -1);
  EXPECT_LT(test::max_diff(twin.forward({tokens}).toTensor(), eager), 1e-5);
  auto cache = twin.get_method("empty_cache")({int64_t{2}}).toTuple();
  auto k = cache->elements()[0].toTensor(), v = cache->elements()[1].toTensor();
  EXPECT_EQ(k.sizes(), (std::vector<int64_t>{3, 2, 4, 0, 4}));
  auto first = twin.get_method("step")({tokens.slice(1, 0, 4), k, v}).toTuple();
  EXPECT_LT(test::max_diff(first->elements()[0].toTensor(), eager.slice(1, 0, 4)), 1e-5);
  auto second = twin.get_method("step")({tokens.slice(1, 4, 6), first->elements()[1], first->elements()[2]}).toTuple();
  EXPECT_LT(test::max_diff(second->elements()[0].toTensor(), eager.slice(1, 4, 6)), 1e-5);
  EXPECT_EQ(second->elements()[1].toTensor().size(3), 6);
  EXPECT_EQ(twin.attr("block_size").toInt(), 8);
}

TEST(RegressionExportGptPython, PythonTorchSamplesFromTheCache) {
  NLPZOO_REQUIRE_PYTHON_MODULE("torch", "python3-torch");
  auto m = small_gpt(/*block_size=*/8);
  const auto path = (test::fresh_temp_dir("gpt_py") / "gpt.pt").string();
  export_gpt(path, *m, {{"config.ini", "[model]\n"}, {"spm.model", "x"}});
  const auto py = test::run_python(R"PY(
import sys, torch
m = torch.jit.load(sys.argv[1])
with torch.no_grad():
    k, v = m.empty_cache(1)
    lp, k, v = m.step(torch.tensor([[3, 5, 7]]), k, v)
    print('logp', 0, 0, ' '.join('%.9g' % x for x in lp[0, -1].tolist()))
    lp, k, v = m.step(torch.tensor([[9]]), k, v)
    print('logp', 0, 1, ' '.join('%.9g' % x for x in lp[0, -1].tolist()))
print('done')
)PY", {path});
  ASSERT_EQ(py.status, 0) << py.out << py.err;
  torch::NoGradGuard ng;
  const auto full = torch::log_softmax(m->sequence_logits({3, 5, 7, 9}), -1);
  test::expect_python_report(py.out, {{"logp 0 0", full[2]}, {"logp 0 1", full[3]}}, {});
}

}  // namespace
}  // namespace nlpzoo
