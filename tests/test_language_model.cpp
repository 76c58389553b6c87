// The recurrent language model and its TBPTT task: shapes, tied embeddings, the carried and
// detached state, gradient clipping, overfitting, exact resume, bad input, and (Regression)
// a run on the Bible through the CLI.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "datasets/bible.h"
#include "core/io.h"
#include "datasets/special_ids.h"
#include "models/rnn/language_model.h"
#include "tests/test_util.h"
#include "train/checkpoint.h"
#include "train/losses.h"
#include "train/tasks/language_model_task.h"
#include "train/tasks/registry.h"
#include "train/trainer.h"

using namespace nlpzoo;
namespace fs = std::filesystem;

namespace {

LanguageModelOptions small_lm(CellType cell, bool tied = false) {
  return LanguageModelOptions(11).cell(cell).embed_dim(8).hidden_size(8).num_layers(2).dropout(0.0).tie_embeddings(tied);
}

torch::Tensor cross_entropy_sum(const torch::Tensor& logits, const torch::Tensor& target) {
  return sequence_cross_entropy(logits, target, kPadId, 0.0);
}

std::vector<torch::Tensor> gradients_of(torch::nn::Module& m) {
  std::vector<torch::Tensor> g;
  for (auto& p : m.parameters()) g.push_back(p.grad().defined() ? p.grad().clone() : torch::zeros_like(p));
  return g;
}

}  // namespace

// ---- the model ----

TEST(LanguageModel, ShapesAndStateCarryOverSegments) {
  for (CellType cell : {CellType::kRnn, CellType::kGru, CellType::kLstm}) {
    torch::manual_seed(1);
    LanguageModel lm(small_lm(cell));
    lm->eval();
    torch::NoGradGuard no_grad;
    auto tokens = torch::randint(1, 11, {3, 7}, torch::kLong);
    auto [logits, state] = lm->forward(tokens);
    EXPECT_EQ(logits.sizes(), (std::vector<int64_t>{3, 7, 11})) << to_string(cell);
    EXPECT_EQ(state.h.sizes(), (std::vector<int64_t>{2, 3, 8})) << to_string(cell);
    EXPECT_EQ(state.c.defined(), cell == CellType::kLstm) << to_string(cell);
    if (state.c.defined()) {
      EXPECT_EQ(state.c.sizes(), (std::vector<int64_t>{2, 3, 8}));
    }
    // Two segments with the state carried are one pass over the whole sequence.
    auto [first, mid] = lm->forward(tokens.slice(1, 0, 3));
    auto [second, end] = lm->forward(tokens.slice(1, 3), mid);
    EXPECT_LT(test::max_diff(torch::cat({first, second}, 1), logits), 1e-5) << to_string(cell);
    EXPECT_LT(test::max_diff(end.h, state.h), 1e-6) << to_string(cell);
  }
}

TEST(LanguageModel, TiedEmbeddingsAreOneMatrix) {
  torch::manual_seed(2);
  LanguageModel tied(small_lm(CellType::kLstm, /*tied=*/true));
  LanguageModel untied(small_lm(CellType::kLstm, /*tied=*/false));
  auto names = tied->named_parameters();
  EXPECT_TRUE(names.contains("embedding.weight"));
  EXPECT_TRUE(names.contains("output_bias"));
  EXPECT_FALSE(names.contains("output.weight"));
  // The untied model has W_o (11 x 8) and b_o; the tied one only b.
  EXPECT_EQ(untied->parameters().size(), tied->parameters().size() + 1);
  int64_t tied_n = 0, untied_n = 0;
  for (auto& p : tied->parameters()) tied_n += p.numel();
  for (auto& p : untied->parameters()) untied_n += p.numel();
  EXPECT_EQ(untied_n - tied_n, 11 * 8);

  // logits = h E^T + b
  tied->eval();
  torch::NoGradGuard no_grad;
  tied->output_bias.copy_(torch::randn({11}));
  auto tokens = torch::randint(1, 11, {2, 5}, torch::kLong);
  auto [logits, state] = tied->forward(tokens);
  auto [h, unused] = tied->rnn->forward(tied->embedding->forward(tokens));  // [B, T, H]
  auto expected = torch::matmul(h, tied->embedding->weight.t()) + tied->output_bias;
  EXPECT_LT(test::max_diff(logits, expected), 1e-6);

  EXPECT_THROW(LanguageModel(LanguageModelOptions(11).embed_dim(6).hidden_size(8).tie_embeddings(true)),
               std::invalid_argument);
}

// A ~10-token cycle in which "the" (4) has three successors, so the state must remember.
TEST(LanguageModel, OverfitsARepeatedSentence) {
  torch::manual_seed(3);
  const std::vector<int64_t> cycle = {4, 5, 6, 7, 4, 8, 9, 4, 10, 11};  // the cat sat on the mat and the dog ran
  std::vector<int64_t> ids;
  for (int r = 0; r < 5; ++r) ids.insert(ids.end(), cycle.begin(), cycle.end());
  auto seq = torch::tensor(ids, torch::kLong);
  // Two rows starting at different points of the cycle.
  auto input = torch::stack({seq.slice(0, 0, 40), seq.slice(0, 3, 43)});
  auto target = torch::stack({seq.slice(0, 1, 41), seq.slice(0, 4, 44)});
  LanguageModel lm(LanguageModelOptions(12).embed_dim(16).hidden_size(32).num_layers(1).dropout(0.0));
  torch::optim::Adam adam(lm->parameters(), torch::optim::AdamOptions(0.01));
  double per_token = 1e9;
  for (int step = 0; step < 300 && per_token >= 0.05; ++step) {
    adam.zero_grad();
    auto loss = cross_entropy_sum(std::get<0>(lm->forward(input)), target) / target.numel();
    loss.backward();
    adam.step();
    per_token = loss.item<double>();
  }
  EXPECT_LT(per_token, 0.05);
}

// ---- gradient clipping ----

TEST(LanguageModelClipGradients, ScalesTheGlobalNormToTheThreshold) {
  auto a = torch::zeros({2}, torch::requires_grad());
  auto b = torch::zeros({1}, torch::requires_grad());
  auto no_grad = torch::zeros({3}, torch::requires_grad());
  auto set = [&] {
    a.mutable_grad() = torch::tensor({3.0f, 4.0f});
    b.mutable_grad() = torch::tensor({12.0f});
  };
  auto norm_after = [&] { return std::sqrt(a.grad().pow(2).sum().item<double>() + b.grad().pow(2).sum().item<double>()); };
  set();
  EXPECT_NEAR(clip_gradients({a, b, no_grad}, 1.3), 13.0, 1e-5);  // sqrt(9 + 16 + 144)
  EXPECT_NEAR(norm_after(), 1.3, 1e-6);
  EXPECT_NEAR(a.grad()[0].item<double>() / a.grad()[1].item<double>(), 0.75, 1e-6);  // direction kept
  EXPECT_FALSE(no_grad.grad().defined());
  // Below the threshold, and with no threshold, nothing changes but the norm is measured.
  for (double max_norm : {20.0, 0.0}) {
    set();
    EXPECT_NEAR(clip_gradients({a, b}, max_norm), 13.0, 1e-5) << max_norm;
    EXPECT_TRUE(torch::equal(a.grad(), torch::tensor({3.0f, 4.0f}))) << max_norm;
    EXPECT_TRUE(torch::equal(b.grad(), torch::tensor({12.0f}))) << max_norm;
  }
  EXPECT_EQ(clip_gradients({no_grad}, 1.0), 0.0);
}

// ---- the task ----

namespace {

// 100 lines of five words, vocabulary of a dozen words.
void write_corpus(const fs::path& dir) {
  const std::vector<std::string> words = {"one", "two", "three", "four", "five", "red", "green", "blue", "black", "white"};
  fs::create_directories(dir);
  std::string text;
  for (const auto& x : words)
    for (const auto& y : words) text += "the " + x + " and the " + y + "\n";
  for (const char* split : {"train", "valid", "test"}) atomic_write_text((dir / (std::string(split) + ".en")).string(), text);
}

Config lm_config(const std::vector<std::string>& extra = {}) {
  std::vector<std::string> o = {"--vocab_size", "60",  "--embed_dim", "16", "--hidden_size", "16", "--num_layers", "1",
                                "--dropout",    "0",   "--bptt",      "5",  "--batch_size",  "4",  "--device",     "cpu",
                                "--log_interval", "1000", "--lr", "0.01"};
  o.insert(o.end(), extra.begin(), extra.end());
  return Config::resolve(task_schema("language_model"), "", o);
}

class LanguageModelData : public ::testing::Test {
 protected:
  void SetUp() override {
    torch::set_num_threads(1);
    root_ = test::fresh_temp_dir("lm");
    write_corpus(root_ / "data");
  }
  void TearDown() override { fs::remove_all(root_); }
  TaskContext context(const std::string& run, std::set<Split> splits = {Split::kTrain, Split::kValid},
                      bool resume = false) const {
    return {(root_ / "data").string(), (root_ / run).string(), std::move(splits), resume};
  }
  fs::path root_;
};

}  // namespace

TEST_F(LanguageModelData, BatchesCutTheStreamIntoRows) {
  torch::manual_seed(4);
  Config c = lm_config();
  LanguageModelTask task;
  task.setup(c, context("run"));
  const auto& s = task.stream(Split::kTrain);
  ASSERT_EQ(s.size(0), 4);
  // Row 0 starts with the first line's pieces and EOS.
  auto first = task.tokenizer().encode("the one and the one");
  first.push_back(kEosId);
  EXPECT_TRUE(torch::equal(s[0].slice(0, 0, first.size()), torch::tensor(first, torch::kLong)));
  EXPECT_EQ(c.get("vocab_size"), std::to_string(task.tokenizer().vocab_size()));  // the soft limit, filled in

  const int64_t n = task.num_batches(Split::kTrain, 0);
  EXPECT_EQ(n, (s.size(1) - 1 + 4) / 5);
  std::vector<torch::Tensor> inputs, targets;
  for (int64_t i = 0; i < n; ++i) {
    auto b = task.make_batch(Split::kTrain, 0, i);
    EXPECT_EQ(b.num_tokens, b.tensors.at("input").numel());
    EXPECT_EQ(b.index, i);
    EXPECT_EQ(b.split, Split::kTrain);
    inputs.push_back(b.tensors.at("input"));
    targets.push_back(b.tensors.at("target"));
  }
  EXPECT_EQ(inputs.front().sizes(), (std::vector<int64_t>{4, 5}));
  EXPECT_TRUE(torch::equal(torch::cat(inputs, 1), s.slice(1, 0, -1)));
  EXPECT_TRUE(torch::equal(torch::cat(targets, 1), s.slice(1, 1)));
  EXPECT_EQ(task.num_batches(Split::kTrain, 3), n);  // every epoch the same order
}

TEST_F(LanguageModelData, CarriedStateIsUsedAndDetached) {
  torch::manual_seed(5);
  Config c = lm_config();
  LanguageModelTask task;
  task.setup(c, context("run"));
  auto& lm = task.language_model();
  lm.train();
  const auto b0 = task.make_batch(Split::kTrain, 0, 0), b1 = task.make_batch(Split::kTrain, 0, 1);
  const auto& in1 = b1.tensors.at("input");
  const auto& tgt1 = b1.tensors.at("target");

  auto l0 = task.loss(b0).loss_sum;
  const auto carried = task.carried_state(Split::kTrain);
  ASSERT_TRUE(carried.h.defined());
  ASSERT_TRUE(carried.c.defined());
  EXPECT_FALSE(carried.h.requires_grad());
  EXPECT_FALSE(carried.c.requires_grad());
  EXPECT_EQ(carried.h.grad_fn(), nullptr);
  auto manual_state = std::get<1>(lm.forward(b0.tensors.at("input")));
  EXPECT_LT(test::max_diff(carried.h, manual_state.h.detach()), 1e-6);

  // Batch 1 starts from the carried state, and its gradient stops there (l0's graph is still
  // alive, so without the detach backward would reach batch 0 and change the gradients).
  lm.zero_grad();
  auto l1 = task.loss(b1).loss_sum;
  l1.backward();
  const auto task_grads = gradients_of(lm);
  lm.zero_grad();
  const RecurrentState constant{carried.h.clone(), carried.c.clone()};
  auto l1_manual = cross_entropy_sum(std::get<0>(lm.forward(in1, constant)), tgt1);
  l1_manual.backward();
  const auto manual_grads = gradients_of(lm);
  EXPECT_NEAR(l1.item<double>(), l1_manual.item<double>(), 1e-4);
  for (size_t i = 0; i < task_grads.size(); ++i) EXPECT_LT(test::max_diff(task_grads[i], manual_grads[i]), 1e-6) << i;
  torch::NoGradGuard no_grad;
  const double from_zeros = cross_entropy_sum(std::get<0>(lm.forward(in1)), tgt1).item<double>();
  EXPECT_GT(std::abs(from_zeros - l1.item<double>()), 1e-3);
  // Batch 0 always starts from zeros again.
  EXPECT_NEAR(task.loss(b0).loss_sum.item<double>(), l0.item<double>(), 1e-4);
}

TEST_F(LanguageModelData, ArtifactsCarryTheTokenizerAndState) {
  torch::manual_seed(6);
  Config c = lm_config({"--cell", "lstm"});
  LanguageModelTask task;
  task.setup(c, context("run"));
  EXPECT_EQ(task.artifacts().count("tbptt_state"), 0u);  // nothing carried before the first step
  task.loss(task.make_batch(Split::kTrain, 0, 0));
  const auto blobs = task.artifacts();
  ASSERT_EQ(blobs.count("tbptt_state"), 1u);
  EXPECT_EQ(blobs.at("spm.model"), task.tokenizer().serialized());

  // A task rebuilt from the blobs alone (no run folder) has the same tokenizer and state.
  LanguageModelTask back;
  back.restore_artifacts(blobs);
  Config c2 = lm_config({"--cell", "lstm"});
  back.setup(c2, {"", "", {}, true});
  EXPECT_EQ(back.tokenizer().serialized(), task.tokenizer().serialized());
  EXPECT_TRUE(torch::equal(back.carried_state(Split::kTrain).h, task.carried_state(Split::kTrain).h));
  EXPECT_TRUE(torch::equal(back.carried_state(Split::kTrain).c, task.carried_state(Split::kTrain).c));
  EXPECT_NE(test::user_error_of([&] { back.restore_artifacts({{"tbptt_state", "garbage"}}); }).find("tbptt_state"),
            std::string::npos);
}

// As Trainer.ResumeIsExact, with the TBPTT state: stopped mid-epoch (30 batches per epoch), a
// resumed run must start batch 6 from the state batch 5 left, not from zeros.
TEST_F(LanguageModelData, ResumeIsExact) {
  auto config = [](int64_t max_steps) {
    return lm_config({"--max_steps", std::to_string(max_steps), "--valid_interval", "4", "--dropout", "0.3",
                      "--cell", "gru"});
  };
  Config c12 = config(12);
  torch::manual_seed(1234);
  LanguageModelTask a;
  a.setup(c12, context("a"));
  ASSERT_EQ(Trainer(a, c12, "language_model", (root_ / "a").string()).train(false), 0);

  Config c6 = config(6);
  torch::manual_seed(1234);
  LanguageModelTask b1;
  b1.setup(c6, context("b"));
  ASSERT_EQ(Trainer(b1, c6, "language_model", (root_ / "b").string()).train(false), 0);
  ASSERT_EQ(read_checkpoint_header((root_ / "b" / "checkpoint_last.pt").string()).state.batch_index, 6);
  torch::manual_seed(999);  // resume must restore the RNG, whatever it is now
  Config c12b = config(12);
  LanguageModelTask b2;
  b2.setup(c12b, context("b", {Split::kTrain, Split::kValid}, /*resume=*/true));
  ASSERT_EQ(Trainer(b2, c12b, "language_model", (root_ / "b").string()).train(true), 0);

  auto pa = a.model()->parameters(), pb = b2.model()->parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i) EXPECT_TRUE(torch::equal(pa[i], pb[i])) << "parameter " << i;
  EXPECT_TRUE(torch::equal(a.carried_state(Split::kTrain).h, b2.carried_state(Split::kTrain).h));
  EXPECT_EQ(read_checkpoint_header((root_ / "b" / "checkpoint_last.pt").string()).state.step, 12);
}

TEST_F(LanguageModelData, BadInputNamesTheFileOrKey) {
  // A split too short for one batch (here: empty) names its file.
  atomic_write_text((root_ / "data" / "valid.en").string(), "");
  Config c = lm_config();
  LanguageModelTask t1;
  const auto valid = (root_ / "data" / "valid.en").string();
  auto err = test::user_error_of([&] { t1.setup(c, context("run1")); });
  EXPECT_NE(err.find(valid), std::string::npos) << err;
  EXPECT_NE(err.find("batch_size=4"), std::string::npos) << err;

  atomic_write_text((root_ / "data" / "test.en").string(), "the one\n");  // 3 tokens < 2 * 4
  Config c2 = lm_config();
  LanguageModelTask t2;
  err = test::user_error_of([&] { t2.setup(c2, context("run2", {Split::kTest})); });
  EXPECT_NE(err.find("test.en"), std::string::npos) << err;

  // Bad keys are named before any slow work: no tokenizer is trained.
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"tie_embeddings", "true"}, {"bptt", "0"}, {"batch_size", "0"}, {"dropout", "1"}}) {
    Config bad = lm_config({"--embed_dim", "16", "--hidden_size", "32", "--tie_embeddings", "false", "--" + key, value});
    LanguageModelTask t;
    err = test::user_error_of([&] { t.setup(bad, context("bad")); });
    EXPECT_NE(err.find("'" + key + "'"), std::string::npos) << key << ": " << err;
    EXPECT_FALSE(fs::exists(root_ / "bad" / "spm.en.model")) << key;
  }
}

// ---- the CLI on the Bible ----

class RegressionLanguageModel : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = test::fresh_temp_dir("lm_bible");
    export_bible((root_ / "bible").string());
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path root_;
};

TEST_F(RegressionLanguageModel, TrainThenEvaluatePerplexity) {
  const auto run = (root_ / "run").string();
  const std::string config = std::string(NLPZOO_SOURCE_DIR) + "/configs/lm-lstm-bible.ini";
  auto r = test::run_cli("train --config " + test::shell_quote(config) + " --data-dir " +
                         test::shell_quote((root_ / "bible").string()) + " --run-dir " + test::shell_quote(run) +
                         " --max-steps 30 --device cpu --vocab_size 1000 --embed_dim 64 --hidden_size 64 "
                         "--num_layers 1 --lr 0.003 --log_interval 10");
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("done: 30 updates"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(run + "/spm.en.model"));

  r = test::run_cli("evaluate --run-dir " + test::shell_quote(run) + " --split valid --device cpu");
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_EQ(r.out.find("BLEU"), std::string::npos) << r.out;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex("perplexity ([0-9.]+)"))) << r.out;
  const double ppl = std::stod(m[1]);
  const auto saved = Config::from_ini_text(task_schema("language_model"), read_file(run + "/config.ini"), "config.ini");
  const int64_t vocab = std::stoll(saved.get("vocab_size"));
  EXPECT_LE(vocab, 1000);
  EXPECT_TRUE(std::isfinite(ppl));
  EXPECT_LT(ppl, vocab) << r.out;  // better than uniform after 30 updates
  EXPECT_GT(ppl, 1.0);
  // The trainer's own last validation (of the same best checkpoint) saw the same perplexity.
  double logged = -1;
  for (const auto& line : read_lines(run + "/metrics.jsonl")) {
    auto j = nlohmann::json::parse(line);
    if (j.contains("valid_ppl")) logged = j["valid_ppl"].get<double>();
  }
  EXPECT_NEAR(ppl, logged, 0.01 + 1e-4 * logged) << r.out;
}
