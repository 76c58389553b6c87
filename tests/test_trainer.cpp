#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "datasets/batching.h"
#include "datasets/io.h"
#include "models/seq2seq/seq2seq.h"
#include "tests/test_util.h"
#include "train/checkpoint.h"
#include "train/lr_schedule.h"
#include "train/trainer.h"

using namespace nlpzoo;
namespace fs = std::filesystem;

namespace {

// A copy task on synthetic data with dropout on, so that exact resume depends on restoring
// parameters, optimizer moments, the data position and the RNG.
class CopyTask : public Task {
 public:
  void setup(Config& c, const TaskContext&) override {
    model_ = Seq2Seq(Seq2SeqOptions().src_vocab_size(12).tgt_vocab_size(12).embed_dim(8).hidden_size(8)
                         .attention_dim(8).dropout(0.3));
    std::mt19937 rng(7);
    for (int i = 0; i < 40; ++i) {
      std::vector<int64_t> s;
      for (int j = 0, n = 2 + rng() % 5; j < n; ++j) s.push_back(4 + rng() % 8);
      data_.push_back(s);
    }
  }
  std::shared_ptr<torch::nn::Module> model() override { return model_.ptr(); }
  int64_t num_batches(Split split, int64_t epoch) override {
    plan_ = make_token_batches(lengths(), 24, 0, split == Split::kTrain, 99 + epoch);
    return plan_.size();
  }
  Batch make_batch(Split split, int64_t epoch, int64_t index) override {
    num_batches(split, epoch);
    return test::copy_task_batch(data_, plan_.at(index));
  }
  LossOutput loss(const Batch& b) override {
    auto logits = model_->forward(b.tensors.at("src"), b.tensors.at("in"));
    auto l = torch::nn::functional::cross_entropy(
        logits.view({-1, 12}), b.tensors.at("out").view({-1}),
        torch::nn::functional::CrossEntropyFuncOptions().ignore_index(0).reduction(torch::kSum));
    return {l, b.num_tokens};
  }

 private:
  std::vector<int64_t> lengths() const {
    std::vector<int64_t> l;
    for (auto& d : data_) l.push_back(d.size() + 1);
    return l;
  }
  Seq2Seq model_{nullptr};
  std::vector<std::vector<int64_t>> data_;
  std::vector<std::vector<int64_t>> plan_;
};

Config copy_config(int64_t max_steps) {
  auto schema = trainer_schema();
  return Config::resolve(schema, "", {"--max_steps", std::to_string(max_steps), "--valid_interval", "4",
                                      "--log_interval", "1000", "--device", "cpu", "--lr", "0.01"});
}

std::string temp_dir(const std::string& name) {
  auto d = fs::temp_directory_path() / ("nlpzoo_test_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d.string();
}

std::vector<torch::Tensor> params_of(Task& t) {
  std::vector<torch::Tensor> p;
  for (auto& x : t.model()->parameters()) p.push_back(x.detach().clone());
  return p;
}

}  // namespace

TEST(Trainer, ResumeIsExact) {
  torch::set_num_threads(1);
  const auto dir_a = temp_dir("resume_a"), dir_b = temp_dir("resume_b");
  Config c10 = copy_config(10);
  // The CLI seeds before building the model, so parameter init is reproducible too.
  torch::manual_seed(1234);
  CopyTask a;
  a.setup(c10, {});
  ASSERT_EQ(Trainer(a, c10, "translation", dir_a).train(false), 0);

  // The same run, stopped after 6 updates (mid-epoch: 4-5 batches per epoch) and resumed.
  Config c6 = copy_config(6);
  torch::manual_seed(1234);
  CopyTask b1;
  b1.setup(c6, {});
  ASSERT_EQ(Trainer(b1, c6, "translation", dir_b).train(false), 0);
  torch::manual_seed(12345);  // whatever the global RNG is now, resume must restore it
  CopyTask b2;
  b2.setup(c10, {});
  ASSERT_EQ(Trainer(b2, c10, "translation", dir_b).train(true), 0);

  auto pa = params_of(a), pb = params_of(b2);
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i) EXPECT_TRUE(torch::equal(pa[i], pb[i])) << "parameter " << i;
  auto ha = read_checkpoint_header(dir_a + "/checkpoint_last.pt");
  auto hb = read_checkpoint_header(dir_b + "/checkpoint_last.pt");
  EXPECT_EQ(ha.state.step, 10);
  EXPECT_EQ(hb.state.step, 10);
  EXPECT_EQ(ha.state.best_valid_loss, hb.state.best_valid_loss);
  EXPECT_EQ(ha.state.epoch, hb.state.epoch);
  EXPECT_EQ(ha.state.batch_index, hb.state.batch_index);
  fs::remove_all(dir_a);
  fs::remove_all(dir_b);
}

TEST(Trainer, CorruptAndMismatchedCheckpointsAreClearErrors) {
  const auto dir = temp_dir("corrupt");
  const auto path = dir + "/checkpoint_last.pt";
  atomic_write_text(path, "this is not a checkpoint");
  try {
    read_checkpoint_header(path);
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos);
  }
  // A checkpoint of one model loaded into another size names the file.
  Seq2Seq small(Seq2SeqOptions().src_vocab_size(10).tgt_vocab_size(10).embed_dim(4).hidden_size(4).attention_dim(4));
  save_checkpoint(path, *small, nullptr, {"translation", "", {}, {}});
  Seq2Seq other(Seq2SeqOptions().src_vocab_size(10).tgt_vocab_size(10).embed_dim(6).hidden_size(4).attention_dim(4));
  EXPECT_THROW(load_checkpoint_weights(path, *other, nullptr, false), UserError);
  EXPECT_THROW(read_checkpoint_header(dir + "/missing.pt"), UserError);
  fs::remove_all(dir);
}

TEST(LrSchedule, KnownValues) {
  LrScheduleOptions o;
  o.lr = 1.0;
  o.warmup_steps = 4;
  o.kind = LrScheduleKind::kLinearWarmup;
  EXPECT_DOUBLE_EQ(LrSchedule(o).lr_at(1), 0.25);
  EXPECT_DOUBLE_EQ(LrSchedule(o).lr_at(10), 1.0);
  o.kind = LrScheduleKind::kInverseSqrt;
  EXPECT_DOUBLE_EQ(LrSchedule(o).lr_at(2), 0.5);
  EXPECT_DOUBLE_EQ(LrSchedule(o).lr_at(16), 0.5);  // sqrt(4/16)
  o.kind = LrScheduleKind::kNoam;
  o.d_model = 512;
  o.warmup_steps = 4000;
  // Vaswani et al. eq. 3: 512^-0.5 * min(step^-0.5, step * 4000^-1.5)
  EXPECT_NEAR(LrSchedule(o).lr_at(4000), std::pow(512, -0.5) * std::pow(4000, -0.5), 1e-12);
  EXPECT_NEAR(LrSchedule(o).lr_at(100), std::pow(512, -0.5) * 100 * std::pow(4000, -1.5), 1e-12);
  o.kind = LrScheduleKind::kPlateau;
  o.warmup_steps = 0;
  o.plateau_patience = 2;
  LrSchedule p(o);
  p.on_validation(3.0);
  p.on_validation(3.1);
  EXPECT_DOUBLE_EQ(p.lr_at(5), 1.0);
  p.on_validation(3.2);
  EXPECT_DOUBLE_EQ(p.lr_at(5), 0.5);
  LrSchedule q(o);
  q.load_state(p.state());
  EXPECT_DOUBLE_EQ(q.lr_at(5), 0.5);
}

TEST(Batching, TokenBudgetAndDeterminism) {
  std::vector<int64_t> lengths = {5, 3, 9, 2, 7, 7, 1, 30};
  auto a = make_token_batches(lengths, 16, 0, true, 42);
  auto b = make_token_batches(lengths, 16, 0, true, 42);
  EXPECT_EQ(a, b);
  std::vector<int> seen(lengths.size(), 0);
  for (const auto& batch : a) {
    int64_t longest = 0;
    for (auto i : batch) longest = std::max(longest, lengths[i]), seen[i]++;
    // Only an example longer than the budget may exceed it, alone.
    if (batch.size() > 1) {
      EXPECT_LE(longest * static_cast<int64_t>(batch.size()), 16);
    }
  }
  for (int s : seen) EXPECT_EQ(s, 1);
  auto sorted = make_token_batches(lengths, 16, 0, false, 0);
  EXPECT_EQ(sorted.front(), (std::vector<int64_t>{6, 3, 1}));  // lengths 1, 2, 3 fit 3 x 3 <= 16
  EXPECT_EQ(pad_sequences({{1, 2}, {3}}, 0).sizes(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(append_eos({5, 6, 7}, 3), (std::vector<int64_t>{5, 6, 3}));
}

TEST(Config, UnknownKeysAndBadValuesNameTheKey) {
  auto schema = trainer_schema();
  const auto dir = temp_dir("config");
  const auto ini = dir + "/x.ini";
  atomic_write_text(ini, "task = translation\nlr = 0.5\nhiden_size = 3\n");
  try {
    Config::resolve(schema, ini, {});
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("hiden_size"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find(ini), std::string::npos);
  }
  atomic_write_text(ini, "task = translation\nlr = 0.5\n");
  auto c = Config::resolve(schema, ini, {"--lr", "0.25"});
  EXPECT_DOUBLE_EQ(c.get_double("lr"), 0.25);  // the command line wins over the file
  EXPECT_THROW(Config::resolve(schema, ini, {"--optimizer", "rmsprop"}), UserError);
  EXPECT_THROW(Config::resolve(schema, ini, {"--no_such_key", "1"}), UserError);
  c.set("lr", "fast");
  EXPECT_THROW(c.get_double("lr"), UserError);
  // The resolved config round-trips through its INI text.
  auto back = Config::from_ini_text(schema, Config::resolve(schema, ini, {}).to_ini(), "x");
  EXPECT_EQ(back.values(), Config::resolve(schema, ini, {}).values());
  fs::remove_all(dir);
}

