#include <gtest/gtest.h>
#include <sys/stat.h>
#include <torch/torch.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>
#include <tuple>

#include "datasets/batching.h"
#include "core/io.h"
#include "models/seq2seq/seq2seq.h"
#include "tests/test_util.h"
#include "train/checkpoint.h"
#include "train/lr_schedule.h"
#include "train/train_log.h"
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

// Adam's and AdamW's states have the same tensors, so loading one into the other succeeds;
// resume must refuse rather than continue a different optimizer with the old moments.
TEST(Trainer, ResumeRefusesAnotherOptimizer) {
  torch::set_num_threads(1);
  const auto dir = temp_dir("resume_optimizer");
  auto config = [](const std::string& optimizer) {
    return Config::resolve(trainer_schema(), "", {"--max_steps", "2", "--valid_interval", "0", "--log_interval",
                                                  "1000", "--device", "cpu", "--lr", "0.01", "--optimizer", optimizer});
  };
  torch::manual_seed(1);
  CopyTask a;
  auto adam = config("adam");
  a.setup(adam, {});
  ASSERT_EQ(Trainer(a, adam, "translation", dir).train(false), 0);
  CopyTask b;
  auto adamw = config("adamw");
  b.setup(adamw, {});
  try {
    Trainer(b, adamw, "translation", dir).train(true);
    FAIL() << "resumed an adam run as adamw";
  } catch (const UserError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("optimizer = adam,"), std::string::npos) << msg;
    EXPECT_NE(msg.find("adamw"), std::string::npos) << msg;
  }
  fs::remove_all(dir);
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

// warmup_fraction: a tenth of a 100-update budget is 10 updates of warm-up (known answers
// of linear_warmup), written back as warmup_steps; with only max_time it is a tenth of the
// time, read by the rate as training seconds.
TEST(LrSchedule, WarmupFractionOfTheBudget) {
  const auto schema = trainer_schema();
  auto options = [&](std::vector<std::string> flags) {
    flags.insert(flags.end(), {"--lr", "1", "--lr_schedule", "linear_warmup", "--warmup_fraction", "0.1"});
    return bind_options<TrainerOptions>(Config::resolve(schema, "", flags));
  };
  auto steps = options({"--max_steps", "100"});
  resolve_warmup_fraction(steps.schedule, 100, steps.budget.max_time);
  EXPECT_EQ(steps.schedule.warmup_steps, 10);
  EXPECT_EQ(steps.schedule.warmup_fraction, 0);
  // The run's config keeps what was derived.
  Config written = Config::resolve(schema, "", {});
  write_options(steps, written);
  EXPECT_EQ(written.get("warmup_steps"), "10");
  EXPECT_EQ(written.get("warmup_fraction"), "0");
  check_lr_schedule(steps.schedule);
  const LrSchedule by_steps(steps.schedule);
  EXPECT_DOUBLE_EQ(by_steps.lr_at(1), 0.1);
  EXPECT_DOUBLE_EQ(by_steps.lr_at(5), 0.5);
  EXPECT_DOUBLE_EQ(by_steps.lr_at(10), 1.0);
  EXPECT_DOUBLE_EQ(by_steps.lr_at(60), 1.0);
  EXPECT_EQ(by_steps.warmup_steps(), 10);

  auto time = options({"--max_time", "10"});  // minutes
  resolve_warmup_fraction(time.schedule, 0, time.budget.max_time);
  EXPECT_DOUBLE_EQ(time.schedule.warmup_time, 1.0);  // minutes
  const LrSchedule by_time(time.schedule);
  EXPECT_DOUBLE_EQ(by_time.lr_at(1, 15.0), 0.25);
  EXPECT_DOUBLE_EQ(by_time.lr_at(500, 30.0), 0.5);  // the step does not count
  EXPECT_DOUBLE_EQ(by_time.lr_at(2, 90.0), 1.0);
  EXPECT_EQ(by_time.warmup_steps(), 0);

  auto error = [&](std::vector<std::string> flags) {
    return test::user_error_of([&] {
      auto o = bind_options<TrainerOptions>(Config::resolve(schema, "", flags));
      resolve_warmup_fraction(o.schedule, o.budget.max_steps, o.budget.max_time);
    });
  };
  EXPECT_NE(error({"--warmup_fraction", "0.1", "--lr_schedule", "linear_warmup"}).find("needs a budget"), std::string::npos);
  EXPECT_NE(error({"--warmup_fraction", "1.5", "--lr_schedule", "linear_warmup", "--max_steps", "9"}).find("[0, 1)"),
            std::string::npos);
  EXPECT_NE(error({"--warmup_fraction", "0.1", "--lr_schedule", "noam", "--max_time", "5"}).find("warmup_fraction"),
            std::string::npos);
  EXPECT_NE(error({"--warmup_fraction", "0.1", "--max_steps", "9"}).find("constant"), std::string::npos);
}

// linear_decay over a time budget (24h-BERT, Izsak et al. 2021): a time-based warm-up to lr,
// then a linear fall to 0 at decay_time minutes of training time, whatever the step.
TEST(LrSchedule, LinearDecayOverTrainingTime) {
  auto o = bind_options<TrainerOptions>(
      Config::resolve(trainer_schema(), "",
                      {"--lr", "1", "--lr_schedule", "linear_decay", "--min_lr", "0", "--warmup_fraction", "0.1",
                       "--max_time", "10"}));
  resolve_warmup_fraction(o.schedule, 0, o.budget.max_time);
  o.schedule.decay_time = 10;  // what the Trainer derives from max_time alone
  const LrSchedule s(o.schedule);
  EXPECT_DOUBLE_EQ(s.lr_at(1, 30.0), 0.5 * (1 - 30.0 / 600));  // half-way through the 60 s warm-up
  EXPECT_DOUBLE_EQ(s.lr_at(7, 300.0), 0.5);                    // half the budget: half the rate
  EXPECT_DOUBLE_EQ(s.lr_at(2, 540.0), 0.1);
  EXPECT_DOUBLE_EQ(s.lr_at(99, 600.0), 0.0);                   // the budget's end: 0
  EXPECT_DOUBLE_EQ(s.lr_at(99, 700.0), 0.0);
}

// The warning of a warm-up longer than a time budget, from the measured rate: 6 updates in the
// first 60 s of a 10-minute budget reach about 6 + 0.1/s * 540 s = 60 updates.
TEST(LrSchedule, WarmupBudgetWarning) {
  const auto warning = warmup_budget_warning(400, 6, 6, 60.0, 600.0);
  EXPECT_NE(warning.find("warmup_steps = 400"), std::string::npos) << warning;
  EXPECT_NE(warning.find("about 60"), std::string::npos) << warning;
  EXPECT_NE(warning.find("warmup_fraction"), std::string::npos) << warning;
  EXPECT_EQ(warmup_budget_warning(60, 6, 6, 60.0, 600.0), "");        // ends exactly at the estimate
  EXPECT_EQ(warmup_budget_warning(400, 100, 100, 60.0, 600.0), "");   // ~1000 updates fit
  EXPECT_EQ(warmup_budget_warning(400, 410, 10, 60.0, 600.0), "");    // already past the warm-up
  EXPECT_NE(warmup_budget_warning(400, 300, 6, 60.0, 600.0).find("about 354"), std::string::npos);  // resumed at 294
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
  EXPECT_EQ(c.get("lr"), "0.25");  // the command line wins over the file
  EXPECT_THROW(Config::resolve(schema, ini, {"--optimizer", "rmsprop"}), UserError);
  EXPECT_THROW(Config::resolve(schema, ini, {"--no_such_key", "1"}), UserError);
  c.set("lr", "fast");
  EXPECT_THROW(check_trainer_config(c), UserError);
  // The resolved config round-trips through its INI text.
  auto back = Config::from_ini_text(schema, Config::resolve(schema, ini, {}).to_ini(), "x");
  EXPECT_EQ(back.values(), Config::resolve(schema, ini, {}).values());
  fs::remove_all(dir);
}


// ---------------------------------------------------------------------------------------------
// The Trainer's parts, on a least-squares task whose updates are known in closed form.

namespace {

// y = x w* + noise over N rows, batches of `batch_size` consecutive rows (no shuffle); the
// model is a Linear(3, 1) and the loss the summed squared error. Knobs make it report other
// units, fail, update in place or watch how make_batch is called.
class LinearTask : public Task {
 public:
  int64_t rows = 24, batch_size = 4;
  GradientReduction reduction = GradientReduction::kMean;
  TrainingProfile profile;
  bool in_place = false;
  int64_t throw_at_loss = -1;                  // throw from the n-th loss() call
  std::chrono::microseconds batch_delay{0};    // make_batch's work, to widen races
  std::atomic<int> in_flight{0}, max_in_flight{0};
  std::mutex order_mutex;
  std::vector<std::tuple<Split, int64_t, int64_t>> order;  // make_batch calls

  void setup(Config&, const TaskContext&) override {
    model_ = torch::nn::Linear(3, 1);
    torch::Generator gen = at::detail::createCPUGenerator(5);
    x_ = torch::randn({rows, 3}, gen);
    y_ = x_.mm(torch::tensor({{1.0f}, {-2.0f}, {0.5f}})).view({-1}) + 0.1f * torch::randn({rows}, gen);
  }
  std::shared_ptr<torch::nn::Module> model() override { return model_.ptr(); }
  int64_t num_batches(Split split, int64_t) override { return split == Split::kTrain ? rows / batch_size : 2; }
  Batch make_batch(Split split, int64_t epoch, int64_t index) override {
    const int now = ++in_flight;
    for (int seen = max_in_flight; now > seen && !max_in_flight.compare_exchange_weak(seen, now);) {
    }
    std::this_thread::sleep_for(batch_delay);
    {
      std::lock_guard<std::mutex> lock(order_mutex);
      order.emplace_back(split, epoch, index);
    }
    Batch b;
    const int64_t start = split == Split::kTrain ? index * batch_size : index * (rows / 2);
    const int64_t n = split == Split::kTrain ? batch_size : rows / 2;
    b.tensors = {{"x", x_.narrow(0, start, n)}, {"y", y_.narrow(0, start, n)}};
    b.num_examples = b.num_tokens = n;
    --in_flight;
    return b;
  }
  LossOutput loss(const Batch& b) override {
    if (throw_at_loss >= 0 && loss_calls_++ == throw_at_loss) throw std::runtime_error("loss failed");
    auto r = model_->forward(b.tensors.at("x")).view({-1}) - b.tensors.at("y");  // [B]
    // "accuracy": rows predicted within 0.5, a per-example statistic with a known value.
    return {r.pow(2).sum(), b.num_tokens, {{"accuracy", (r.detach().abs() < 0.5).sum()}}};
  }
  GradientReduction gradient_reduction() const override { return reduction; }
  bool updates_in_place() const override { return in_place; }
  LossOutput train_in_place(const Batch& b, double lr) override {
    auto out = loss(b);
    return {out.loss_sum.detach().to(torch::kDouble), out.num_tokens};
  }
  TrainingProfile training_profile() const override { return profile; }

  torch::nn::Linear model_{nullptr};
  torch::Tensor x_, y_;
  int64_t loss_calls_ = 0;
};

Config linear_config(std::vector<std::string> extra) {
  std::vector<std::string> o = {"--optimizer", "sgd", "--lr", "0.05", "--clip_norm", "0", "--device", "cpu",
                                "--log_interval", "1000", "--valid_interval", "1000"};
  o.insert(o.end(), extra.begin(), extra.end());
  return Config::resolve(trainer_schema(), "", o);
}

// A set-up LinearTask with the same initial parameters every time.
std::unique_ptr<LinearTask> linear_task(Config& c, int64_t batch_size = 4) {
  torch::manual_seed(3);
  auto task = std::make_unique<LinearTask>();
  task->batch_size = batch_size;
  task->setup(c, {});
  return task;
}

std::vector<nlohmann::json> metrics_of(const std::string& run) {
  std::vector<nlohmann::json> out;
  for (const auto& line : read_lines(run + "/metrics.jsonl")) out.push_back(nlohmann::json::parse(line));
  return out;
}

std::vector<int64_t> valid_steps(const std::vector<nlohmann::json>& records) {
  std::vector<int64_t> steps;
  for (const auto& r : records)
    if (r.contains("valid_loss")) steps.push_back(r["step"]);
  return steps;
}

}  // namespace

// update_freq k with batches of B rows makes the update one batch of k * B rows makes.
TEST(TrainerParts, GradientAccumulationEqualsOneLargerBatch) {
  for (const auto reduction : {Task::GradientReduction::kMean, Task::GradientReduction::kSum}) {
    const auto dir = temp_dir("accumulate");
    Config accumulated = linear_config({"--update_freq", "3", "--max_steps", "4"});
    auto a = linear_task(accumulated, /*batch_size=*/2);
    a->reduction = reduction;
    ASSERT_EQ(Trainer(*a, accumulated, "linear", dir + "/a").train(false), 0);
    Config large = linear_config({"--max_steps", "4"});
    auto b = linear_task(large, /*batch_size=*/6);
    b->reduction = reduction;
    ASSERT_EQ(Trainer(*b, large, "linear", dir + "/b").train(false), 0);
    const auto pa = params_of(*a), pb = params_of(*b);
    for (size_t i = 0; i < pa.size(); ++i) EXPECT_LT((pa[i] - pb[i]).abs().max().item<double>(), 1e-6);
    // ... and the run did move: 4 updates of 6 rows, every row of the 24 once.
    Config none = linear_config({});
    EXPECT_GT((params_of(*linear_task(none))[0] - pa[0]).abs().max().item<double>(), 1e-2);
    fs::remove_all(dir);
  }
}

// kMean steps with the summed gradient / the update's units, kSum with the sum itself.
TEST(TrainerParts, PerUnitMeanAndSumReduction) {
  for (const auto reduction : {Task::GradientReduction::kMean, Task::GradientReduction::kSum}) {
    const auto dir = temp_dir("reduction");
    Config c = linear_config({"--max_steps", "1", "--lr", "0.01"});
    auto task = linear_task(c);
    task->reduction = reduction;
    const auto w = task->model_->weight.detach().clone(), b = task->model_->bias.detach().clone();
    // d/dw sum_i (x_i w^T + b - y_i)^2 = sum_i 2 r_i x_i over the first batch's 4 rows.
    const auto x = task->x_.narrow(0, 0, 4), y = task->y_.narrow(0, 0, 4);
    const auto r = x.mm(w.t()).view({-1}) + b - y;
    const double scale = reduction == Task::GradientReduction::kMean ? 0.01 / 4 : 0.01;
    const auto w_expected = w - scale * (2 * r.unsqueeze(1) * x).sum(0, /*keepdim=*/true);
    const auto b_expected = b - scale * (2 * r).sum();
    ASSERT_EQ(Trainer(*task, c, "linear", dir).train(false), 0);
    EXPECT_LT((task->model_->weight - w_expected).abs().max().item<double>(), 1e-6);
    EXPECT_LT((task->model_->bias - b_expected).abs().max().item<double>(), 1e-6);
    fs::remove_all(dir);
  }
}

// linear_decay with max_time as the only budget decays by training time: the Trainer derives
// decay_time from max_time (minutes) and saves it in the run's config, so a resume keeps it.
TEST(TrainerParts, LinearDecayOverATimeBudgetDerivesDecayTime) {
  const auto dir = temp_dir("decay_time");
  Config c = linear_config({"--lr_schedule", "linear_decay", "--max_time", "0.01"});
  auto task = linear_task(c);
  ASSERT_EQ(Trainer(*task, c, "linear", dir).train(false), 0);
  const auto saved = read_checkpoint_header(dir + "/checkpoint_last.pt").config;
  EXPECT_NE(saved.find("decay_time = 0.01\n"), std::string::npos) << saved;
  EXPECT_NE(saved.find("decay_steps = 0\n"), std::string::npos) << saved;
  // Without any budget there is nothing to decay over.
  Config unbounded = linear_config({"--lr_schedule", "linear_decay"});
  auto other = linear_task(unbounded);
  EXPECT_NE(test::user_error_of([&] { Trainer(*other, unbounded, "linear", dir + "/b"); }).find("max_time"),
            std::string::npos);
  fs::remove_all(dir);
}

// lr 0: every validation ties the first, so patience 2 stops after the third.
TEST(TrainerParts, EarlyStoppingByPatience) {
  const auto dir = temp_dir("patience");
  Config c = linear_config({"--lr", "0", "--valid_interval", "2", "--patience", "2", "--max_steps", "100"});
  auto task = linear_task(c);
  ASSERT_EQ(Trainer(*task, c, "linear", dir).train(false), 0);
  const auto state = read_checkpoint_header(dir + "/checkpoint_last.pt").state;
  EXPECT_EQ(state.step, 6);
  EXPECT_EQ(state.bad_validations, 2);
  EXPECT_EQ(valid_steps(metrics_of(dir)), (std::vector<int64_t>{2, 4, 6}));
  // Resuming a run that early stopping ended trains nothing and logs nothing.
  auto again = linear_task(c);
  ASSERT_EQ(Trainer(*again, c, "linear", dir).train(true), 0);
  EXPECT_EQ(valid_steps(metrics_of(dir)), (std::vector<int64_t>{2, 4, 6}));
  fs::remove_all(dir);
}

// checkpoint_best.pt is checkpoint_last.pt's file (a hard link) when a validation improves,
// and keeps its bytes when a later checkpoint_last.pt does not improve.
TEST(TrainerParts, BestCheckpointIsALinkToTheLastOneThatImproved) {
  const auto dir = temp_dir("best_link");
  const auto inode = [](const std::string& path) {
    struct stat st {};
    EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
    return std::make_pair(st.st_ino, st.st_nlink);
  };
  Config c = linear_config({"--valid_interval", "2", "--max_steps", "2"});
  auto task = linear_task(c);
  ASSERT_EQ(Trainer(*task, c, "linear", dir).train(false), 0);
  const auto best = dir + "/checkpoint_best.pt", last = dir + "/checkpoint_last.pt";
  EXPECT_EQ(inode(best).first, inode(last).first);
  EXPECT_EQ(inode(best).second, 2u);
  const auto bytes = read_file(best);
  // lr 0 from here: the validations tie, no longer improve, and only the last checkpoint moves on.
  Config more = linear_config({"--valid_interval", "2", "--max_steps", "4", "--lr", "0"});
  auto again = linear_task(more);
  ASSERT_EQ(Trainer(*again, more, "linear", dir).train(true), 0);
  EXPECT_EQ(read_checkpoint_header(last).state.step, 4);
  EXPECT_EQ(read_checkpoint_header(best).state.step, 2);
  EXPECT_EQ(read_file(best), bytes);
  EXPECT_NE(inode(best).first, inode(last).first);
  EXPECT_EQ(inode(best).second, 1u);
  fs::remove_all(dir);
}

// valid_interval = 0 validates once per epoch: the last epoch's end is not validated twice
// (a duplicate metrics line and a spurious patience count before).
TEST(TrainerParts, ValidIntervalZeroValidatesEachEpochOnce) {
  const auto dir = temp_dir("valid_zero");
  Config c = linear_config({"--lr", "0", "--valid_interval", "0", "--max_epochs", "2"});
  auto task = linear_task(c);  // 6 batches per epoch
  ASSERT_EQ(Trainer(*task, c, "linear", dir).train(false), 0);
  EXPECT_EQ(valid_steps(metrics_of(dir)), (std::vector<int64_t>{6, 12}));
  const auto state = read_checkpoint_header(dir + "/checkpoint_last.pt").state;
  EXPECT_EQ(state.step, 12);
  EXPECT_EQ(state.bad_validations, 1);
  fs::remove_all(dir);
}

// A run stopped and resumed logs the lines one run makes: the same steps, the same losses.
TEST(TrainerParts, MetricsAfterResumeHaveNoDuplicatesAndNoGaps) {
  const auto dir = temp_dir("metrics_resume");
  auto config = [](const char* steps) {
    return linear_config({"--max_steps", steps, "--log_interval", "2", "--valid_interval", "4"});
  };
  Config c12 = config("12"), c8 = config("8");
  auto once = linear_task(c12);
  ASSERT_EQ(Trainer(*once, c12, "linear", dir + "/once").train(false), 0);
  auto first = linear_task(c8);
  ASSERT_EQ(Trainer(*first, c8, "linear", dir + "/twice").train(false), 0);
  auto second = linear_task(c12);
  ASSERT_EQ(Trainer(*second, c12, "linear", dir + "/twice").train(true), 0);
  const auto a = metrics_of(dir + "/once"), b = metrics_of(dir + "/twice");
  ASSERT_EQ(a.size(), b.size());
  std::vector<int64_t> train_steps;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i]["step"], b[i]["step"]) << i;
    EXPECT_EQ(a[i].contains("valid_loss"), b[i].contains("valid_loss")) << i;
    const char* key = a[i].contains("valid_loss") ? "valid_loss" : "loss";
    EXPECT_NEAR(a[i][key].get<double>(), b[i][key].get<double>(), 1e-9) << i;
    if (!a[i].contains("valid_loss")) train_steps.push_back(a[i]["step"]);
  }
  EXPECT_EQ(train_steps, (std::vector<int64_t>{2, 4, 6, 8, 10, 12}));
  EXPECT_EQ(valid_steps(b), (std::vector<int64_t>{4, 8, 12}));
  fs::remove_all(dir);
}

namespace {
void test_sigint_handler(int) {}
}  // namespace

// An exception leaving train() restores the SIGINT handler it replaced.
TEST(TrainerParts, SigintHandlerIsRestoredWhenTrainThrows) {
  const auto dir = temp_dir("sigint");
  Config c = linear_config({"--max_steps", "5"});
  auto task = linear_task(c);
  task->throw_at_loss = 2;
  auto before = std::signal(SIGINT, test_sigint_handler);
  EXPECT_THROW(Trainer(*task, c, "linear", dir).train(false), std::runtime_error);
  EXPECT_EQ(std::signal(SIGINT, before), test_sigint_handler);
  fs::remove_all(dir);
}

// make_batch runs on one thread at a time, each split's batches in order, although the training
// prefetcher is busy when a validation starts (slow batches, a validation every update).
TEST(TrainerParts, MakeBatchRunsOnOneThreadAtATimeInOrder) {
  const auto dir = temp_dir("prefetch");
  Config c = linear_config({"--max_steps", "12", "--valid_interval", "1"});
  auto task = linear_task(c, /*batch_size=*/2);
  task->batch_delay = std::chrono::microseconds(2000);
  ASSERT_EQ(Trainer(*task, c, "linear", dir).train(false), 0);
  EXPECT_EQ(task->max_in_flight.load(), 1);
  std::map<std::pair<Split, int64_t>, int64_t> next;  // (split, epoch) -> next index
  int64_t valid_batches = 0;
  for (const auto& [split, epoch, index] : task->order) {
    if (split == Split::kValid) {
      valid_batches++;
      continue;  // each validation starts again at 0
    }
    auto& expected = next[{split, epoch}];
    EXPECT_EQ(index, expected);
    expected = index + 1;
  }
  EXPECT_EQ(valid_batches, 12 * 2);
  fs::remove_all(dir);
}

// A task's units and statistics reach metrics.jsonl: no perplexity, units/s in its own unit,
// its validation metrics, and no gradient norm where updates are made in place.
TEST(TrainerParts, MetricsSpeakInTheTasksUnits) {
  for (const bool in_place : {false, true}) {
    const auto dir = temp_dir("units");
    Config c = linear_config({"--max_steps", "4", "--log_interval", "2", "--valid_interval", "2", "--lr", "0"});
    auto task = linear_task(c);
    task->profile.unit = "sentences";
    task->profile.perplexity = false;
    task->in_place = in_place;
    ASSERT_EQ(Trainer(*task, c, "linear", dir).train(false), 0);
    // The validation split is rows 0..23 in 2 batches; "accuracy" counts |residual| < 0.5.
    torch::NoGradGuard no_grad;
    const auto r = task->model_->forward(task->x_).view({-1}) - task->y_;
    const double accuracy = (r.abs() < 0.5).sum().item<double>() / task->rows;
    int valid_lines = 0;
    for (const auto& m : metrics_of(dir)) {
      EXPECT_FALSE(m.contains("ppl") || m.contains("valid_ppl") || m.contains("tokens_per_s")) << m.dump();
      if (m.contains("valid_loss")) {
        ++valid_lines;
        EXPECT_NEAR(m["valid_accuracy"].get<double>(), accuracy, 1e-12) << m.dump();
      } else {
        EXPECT_TRUE(m.contains("sentences_per_s")) << m.dump();
        EXPECT_EQ(m.contains("grad_norm"), !in_place) << m.dump();
      }
    }
    EXPECT_EQ(valid_lines, 2);
    fs::remove_all(dir);
  }
}

// noam scales by the model's d_model: a model without one is an error, not a silent 512.
TEST(TrainerParts, NoamNeedsTheModelsWidth) {
  Config c = linear_config({"--lr_schedule", "noam", "--warmup_steps", "10"});
  auto task = linear_task(c);
  EXPECT_NE(test::user_error_of([&] { Trainer(*task, c, "linear", temp_dir("noam")); }).find("'lr_schedule'"),
            std::string::npos);
  task->profile.d_model = 64;
  Trainer ok(*task, c, "linear", temp_dir("noam"));
  EXPECT_NEAR(LrSchedule(lr_schedule_options(c, 64)).lr_at(10), 0.05 * std::pow(64, -0.5) * std::pow(10, -0.5), 1e-12);
  fs::remove_all(temp_dir("noam"));
}

// Checkpoints restore every CUDA generator too, so a resumed CUDA run draws the same dropout.
TEST(TrainerParts, CheckpointRestoresCudaGenerators) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const auto dir = temp_dir("cuda_rng");
  torch::nn::Linear model(2, 2);
  save_checkpoint(dir + "/c.pt", *model, nullptr, {"linear", "", {}, {}});
  const auto first = torch::rand({8}, torch::Device(torch::kCUDA));
  load_checkpoint_weights(dir + "/c.pt", *model, nullptr, /*restore_rng=*/true);
  EXPECT_TRUE(torch::equal(first, torch::rand({8}, torch::Device(torch::kCUDA))));
  fs::remove_all(dir);
}

// A run that never validated a finite loss (here: it diverged to NaN) has no best loss: the last
// line printed the 1e300 sentinel in full, a 301-digit number.
TEST(TrainLog, DoneSaysNoneWithoutAFiniteValidLoss) {
  const auto dir = test::fresh_temp_dir("train_log_done");
  TrainLog log((dir / "metrics.jsonl").string(), Task::TrainingProfile{}, /*gradients=*/true, /*log_interval=*/1);
  testing::internal::CaptureStdout();
  log.done(60, 1e300, "loss", 1e300, "runs/x");
  log.done(4, 2.5, "loss", 2.5, "runs/x");
  log.done(4, 1e300, "accuracy", -1e300, "runs/x");
  const std::string out = testing::internal::GetCapturedStdout();
  EXPECT_NE(out.find("done: 60 updates, best valid loss none, checkpoints in runs/x\n"), std::string::npos) << out;
  EXPECT_NE(out.find("done: 4 updates, best valid loss 2.500000 (ppl 12.182494), checkpoints in runs/x\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("done: 4 updates, best valid accuracy none (best_metric: it chose checkpoint_best.pt), best "
                     "valid loss none, checkpoints in runs/x\n"),
            std::string::npos)
      << out;
  fs::remove_all(dir);
}
