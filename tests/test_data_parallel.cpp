// Data-parallel training (train/data_parallel.h, train/distributed.h): ranks as threads joined
// over a FileStore (Gloo on 127.0.0.1) against one process fed the same global batches; ranks
// as processes through the CLI (--nproc, torchrun, ranks started by hand): exact resume, a
// killed or hung rank, SIGTERM on one rank, ranks started with different options or corpora.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/torch.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "core/io.h"
#include "tests/test_util.h"
#include "train/checkpoint.h"
#include "train/data_parallel.h"
#include "train/distributed.h"
#include "train/tasks/registry.h"

using namespace nlpzoo;
namespace fs = std::filesystem;

namespace {

// Runs body(rank, group) for each of `world` ranks on its own thread, the ranks joined over a
// FileStore in `dir`; rethrows the first rank's exception. The signal handlers that the ranks'
// Trainers install and restore concurrently are put back as they were.
void run_ranks(int world, const fs::path& dir, const std::function<void(int, DataParallelGroup&)>& body) {
  static int runs = 0;
  const auto store = (dir / ("store_" + std::to_string(runs++))).string();
  const auto previous_int = std::signal(SIGINT, SIG_DFL), previous_term = std::signal(SIGTERM, SIG_DFL);
  std::vector<std::exception_ptr> errors(world);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < world; ++rank)
    threads.emplace_back([&, rank] {
      try {
        DataParallelGroup group(c10::make_intrusive<c10d::FileStore>(store, world), rank, world, {"gloo", 60},
                                torch::kCPU, /*loopback=*/true);
        body(rank, group);
      } catch (...) {
        errors[rank] = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  std::signal(SIGINT, previous_int);
  std::signal(SIGTERM, previous_term);
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

std::vector<torch::Tensor> params_of(Task& task) {
  std::vector<torch::Tensor> out;
  for (const auto& p : task.model()->parameters()) out.push_back(p.detach().clone());
  return out;
}

double max_abs_diff(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  EXPECT_EQ(a.size(), b.size());
  double diff = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) diff = std::max(diff, (a[i] - b[i]).abs().max().item<double>());
  return diff;
}

// The tiny translation model (the numbers corpus) and the tiny classifier, with clipping that
// bites (so that the norm must be the global one) and no dropout (the ranks' masks differ from
// one process's).
Config translation_config(const fs::path& data, std::vector<std::string> extra) {
  std::vector<std::string> o = {"--data_dir", data.string(), "--src_vocab_size", "60", "--tgt_vocab_size", "60",
                                "--embed_dim", "16", "--hidden_size", "16", "--attention_dim", "16", "--dropout", "0",
                                "--lr", "0.01", "--clip_norm", "0.5", "--max_tokens", "120", "--valid_interval", "5",
                                "--log_interval", "1000", "--device", "cpu"};
  o.insert(o.end(), extra.begin(), extra.end());
  return Config::resolve(task_schema("translation"),
                         std::string(NLPZOO_SOURCE_DIR) + "/configs/seq2seq-bahdanau-es-en.ini", o);
}

Config classifier_config(const fs::path& data, std::vector<std::string> extra) {
  std::vector<std::string> o = {"--data_dir", data.string(), "--vocab_size", "60", "--spm_model_type", "word",
                                "--embed_dim", "8", "--hidden_size", "8", "--dropout", "0", "--max_tokens", "40",
                                "--lr", "0.01", "--clip_norm", "0.5", "--valid_interval", "5", "--log_interval", "1000",
                                "--device", "cpu"};
  o.insert(o.end(), extra.begin(), extra.end());
  return Config::resolve(task_schema("classification"), "", o);
}

void write_classifier_corpus(const fs::path& data) {
  const char* good[] = {"a great film", "i loved this charming movie", "truly beautiful and moving", "funny warm smart",
                        "wonderful", "a moving and beautiful story told with care and a lot of warmth"};
  const char* bad[] = {"a dull film", "i hated this awful movie", "truly ugly and tedious", "stupid cold lazy",
                       "boring", "a tedious and ugly story told without care and with a lot of noise"};
  std::string text = "sentence\tlabel\n";
  for (int round = 0; round < 3; ++round)
    for (int i = 0; i < 6; ++i) text += std::string(good[i]) + "\t1\n" + bad[(i + round) % 6] + "\t0\n";
  fs::create_directories(data);
  atomic_write_text((data / "train.tsv").string(), text);
  atomic_write_text((data / "dev.tsv").string(), text);
}

// A task set up from `data`, its tokenizers in `tokenizer_run` (trained there unless `reuse`).
std::unique_ptr<Task> set_up(const std::string& name, Config& config, const fs::path& data,
                             const fs::path& tokenizer_run, bool reuse) {
  torch::manual_seed(1);
  auto task = make_task(name);
  task->setup(config, {data.string(), tokenizer_run.string(), {Split::kTrain, Split::kValid}, reuse});
  return task;
}

// Two ranks of update_freq `per_rank` for 10 updates against one process of update_freq
// 2 * per_rank from the same parameters: the same updates (up to float summation order).
void expect_two_ranks_equal_one_process(const std::string& name,
                                        const std::function<Config(std::vector<std::string>)>& config_of,
                                        const fs::path& dir, const fs::path& data, int per_rank) {
  const std::string f = std::to_string(per_rank), f2 = std::to_string(2 * per_rank);
  Config c0 = config_of({"--update_freq", f, "--max_steps", "10"}), c1 = c0;
  Config one = config_of({"--update_freq", f2, "--max_steps", "10"});
  const auto run0 = dir / ("rank0_" + f), run1 = dir / ("rank1_" + f), run_one = dir / ("one_" + f);
  auto t0 = set_up(name, c0, data, run0, false);
  auto t1 = set_up(name, c1, data, run0, true);
  auto reference = set_up(name, one, data, run0, true);
  {
    torch::NoGradGuard no_grad;
    auto from = t0->model()->parameters(), to = reference->model()->parameters();
    for (size_t i = 0; i < from.size(); ++i) to[i].copy_(from[i]);
  }
  const auto initial = params_of(*t0);
  run_ranks(2, dir, [&](int rank, DataParallelGroup& group) {
    DataParallelTrainer trainer(rank == 0 ? *t0 : *t1, rank == 0 ? c0 : c1, name,
                                (rank == 0 ? run0 : run1).string(), group);
    EXPECT_EQ(trainer.train(false), 0);
  });
  ASSERT_EQ(Trainer(*reference, one, name, run_one.string()).train(false), 0);

  const auto p0 = params_of(*t0), p1 = params_of(*t1), p = params_of(*reference);
  EXPECT_LE(max_abs_diff(p0, p), 1e-5) << name << ", update_freq " << per_rank;
  EXPECT_EQ(max_abs_diff(p0, p1), 0.0) << "the ranks disagree";
  EXPECT_GT(max_abs_diff(p0, initial), 1e-3) << "the run did not move";
  const auto ranks = read_checkpoint_header((run0 / "checkpoint_last.pt").string()).state;
  const auto single = read_checkpoint_header((run_one / "checkpoint_last.pt").string()).state;
  EXPECT_EQ(ranks.step, 10);
  EXPECT_EQ(ranks.world_size, 2);
  EXPECT_EQ(std::make_pair(ranks.epoch, ranks.batch_index), std::make_pair(single.epoch, single.batch_index));
  // Sharded validation with reduced sums: the one process's loss.
  EXPECT_NEAR(ranks.best_valid_loss, single.best_valid_loss, 1e-4 * single.best_valid_loss);
  // Only rank 0 writes: rank 1's run folder (its Trainer's) stays empty.
  EXPECT_TRUE(fs::is_empty(run1)) << fs::directory_iterator(run1)->path();
}

}  // namespace

TEST(DataParallel, TwoRanksEqualOneProcessWithTheGlobalBatch) {
  torch::set_num_threads(1);
  const auto dir = test::fresh_temp_dir("dp_equal");
  test::write_numbers_corpus(dir / "numbers");
  write_classifier_corpus(dir / "reviews");
  for (const int per_rank : {1, 2}) {
    expect_two_ranks_equal_one_process(
        "translation", [&](auto extra) { return translation_config(dir / "numbers", extra); }, dir / "translation",
        dir / "numbers", per_rank);
    expect_two_ranks_equal_one_process(
        "classification", [&](auto extra) { return classifier_config(dir / "reviews", extra); }, dir / "classifier",
        dir / "reviews", per_rank);
  }
  // The classifier's batches (a token budget) hold different numbers of sentences, its units:
  // the ranks' counts differ, and only the global count gives the one process's update.
  Config c = classifier_config(dir / "reviews", {});
  auto task = set_up("classification", c, dir / "reviews", dir / "classifier" / "rank0_1", true);
  std::set<int64_t> units;
  for (int64_t i = 0; i < task->num_batches(Split::kTrain, 0); ++i) units.insert(task->make_batch(Split::kTrain, 0, i).num_tokens);
  EXPECT_GT(units.size(), 1u);
  fs::remove_all(dir);
}

namespace {

// y = x w* over rows; batch i holds 1 row when i is even and 3 when odd, so that with two
// ranks rank 0 always has 1 unit and rank 1 three: the mean of the ranks' per-unit means is
// not the per-unit mean over the 4.
class UnevenTask : public Task {
 public:
  void setup(Config&, const TaskContext&) override {
    model_ = torch::nn::Linear(3, 1);
    torch::Generator gen = at::detail::createCPUGenerator(5);
    x_ = torch::randn({40, 3}, gen);
    y_ = x_.mm(torch::tensor({{1.0f}, {-2.0f}, {0.5f}})).view({-1});
  }
  std::shared_ptr<torch::nn::Module> model() override { return model_.ptr(); }
  int64_t num_batches(Split, int64_t) override { return 20; }
  Batch make_batch(Split, int64_t, int64_t index) override {
    const int64_t n = index % 2 == 0 ? 1 : 3, start = (index / 2) * 4 + (index % 2);
    Batch b;
    b.tensors = {{"x", x_.narrow(0, start, n)}, {"y", y_.narrow(0, start, n)}};
    b.num_examples = b.num_tokens = n;
    return b;
  }
  LossOutput loss(const Batch& b) override {
    return {(model_->forward(b.tensors.at("x")).view({-1}) - b.tensors.at("y")).pow(2).sum(), b.num_tokens};
  }
  torch::nn::Linear model_{nullptr};
  torch::Tensor x_, y_;
};

Config uneven_config(int64_t update_freq) {
  return Config::resolve(trainer_schema(), "",
                         {"--optimizer", "sgd", "--lr", "0.1", "--clip_norm", "0", "--device", "cpu", "--log_interval",
                          "1000", "--valid_interval", "1000", "--max_steps", "8", "--update_freq",
                          std::to_string(update_freq)});
}

}  // namespace

TEST(DataParallel, GlobalUnitCountNormalisesRanksWithDifferentCounts) {
  const auto dir = test::fresh_temp_dir("dp_uneven");
  Config config = uneven_config(1);
  std::vector<UnevenTask> tasks(3);
  for (auto& t : tasks) {
    torch::manual_seed(3);
    t.setup(config, {});
  }
  run_ranks(2, dir, [&](int rank, DataParallelGroup& group) {
    EXPECT_EQ(DataParallelTrainer(tasks[rank], config, "linear", (dir / ("rank" + std::to_string(rank))).string(), group)
                  .train(false),
              0);
  });
  ASSERT_EQ(Trainer(tasks[2], uneven_config(2), "linear", (dir / "one").string()).train(false), 0);
  EXPECT_LE(max_abs_diff(params_of(tasks[0]), params_of(tasks[2])), 1e-6);
  fs::remove_all(dir);
}

namespace {

// A task the data-parallel Trainer must refuse, by `kind`.
class RefusedTask : public Task {
 public:
  explicit RefusedTask(std::string kind) : kind_(std::move(kind)) {}
  void setup(Config&, const TaskContext&) override {
    model_ = torch::nn::Embedding(torch::nn::EmbeddingOptions(10, 4).sparse(kind_ == "sparse"));
  }
  std::shared_ptr<torch::nn::Module> model() override { return model_.ptr(); }
  int64_t num_batches(Split, int64_t) override { return 1; }
  Batch make_batch(Split, int64_t, int64_t) override { return {}; }
  LossOutput loss(const Batch&) override { return {}; }
  bool updates_in_place() const override { return kind_ == "in_place"; }
  bool carries_state_across_batches() const override { return kind_ == "tbptt"; }

 private:
  std::string kind_;
  torch::nn::Embedding model_{nullptr};
};

}  // namespace

TEST(DataParallel, RefusesInPlaceSparseAndCarriedStateTasksSayingWhatToUse) {
  const auto dir = test::fresh_temp_dir("dp_refused");
  Config config = uneven_config(1);
  for (const auto& [kind, expected] : std::vector<std::pair<std::string, std::string>>{
           {"in_place", "updates its parameters in place"}, {"sparse", "sparse gradients"},
           {"tbptt", "carries state from batch to batch"}}) {
    RefusedTask task(kind);
    task.setup(config, {});
    run_ranks(1, dir, [&](int, DataParallelGroup& group) {
      const auto e = test::user_error_of([&] { DataParallelTrainer(task, config, "x", (dir / "run").string(), group); });
      EXPECT_NE(e.find(expected), std::string::npos) << kind << ": " << e;
      EXPECT_NE(e.find("threads"), std::string::npos) << kind << ": " << e;
    });
  }
  // Launch variables: none is single-process; a half-set group is an error naming the variable.
  const auto e = test::user_error_of([] { resolve_backend("mpi", torch::kCPU); });
  EXPECT_NE(e.find("expected auto, gloo or nccl"), std::string::npos) << e;
  EXPECT_NE(test::user_error_of([] { resolve_backend("nccl", torch::kCPU); }).find("nccl"), std::string::npos);
  EXPECT_EQ(resolve_backend("auto", torch::kCPU), "gloo");
  fs::remove_all(dir);
}

// Ranks started otherwise (another option, corpus or build) stop before any collective on
// parameters, every one of them naming the lowest rank that differs, the key and both values.
TEST(DataParallel, RanksAgreeOnTheirRunOrAllStopNamingTheFirstDifference) {
  const auto dir = test::fresh_temp_dir("dp_agree");
  const std::map<std::string, std::string> run = {
      {"config.lr", "0.001"}, {"config.max_steps", "100"}, {"data.train.batches", "10"}, {"code.executable", "a"}};
  run_ranks(3, dir, [&](int, DataParallelGroup& group) { group.agree(run); });

  // Rank 1 with another lr and max_steps, rank 2 without a key: every rank names the lowest rank
  // that differs and its first key that does.
  std::vector<std::string> errors(3);
  run_ranks(3, dir, [&](int rank, DataParallelGroup& group) {
    auto mine = run;
    if (rank == 1) {
      mine["config.lr"] = "0.002";
      mine["config.max_steps"] = "50";
    }
    if (rank == 2) mine.erase("data.train.batches");
    errors[rank] = test::user_error_of([&] { group.agree(mine); });
  });
  for (int rank = 0; rank < 3; ++rank)
    EXPECT_NE(errors[rank].find("data-parallel rank " + std::to_string(rank) +
                                " of 3: rank 1's config differs from rank 0's at lr: 0.002 vs 0.001; start every rank "
                                "with the same config, options and corpus"),
              std::string::npos)
        << errors[rank];
  run_ranks(2, dir, [&](int rank, DataParallelGroup& group) {
    auto mine = run;
    if (rank == 1) mine.erase("data.train.batches");
    errors[rank] = test::user_error_of([&] { group.agree(mine); });
  });
  for (int rank = 0; rank < 2; ++rank)
    EXPECT_NE(errors[rank].find("rank 1's data differs from rank 0's at train.batches: (none) vs 10"), std::string::npos)
        << errors[rank];

  // A rank that failed before comparing: the others name it and its error instead of waiting.
  run_ranks(2, dir, [&](int rank, DataParallelGroup& group) {
    if (rank == 1)
      group.report_failure("data/train.es: no such file");
    else
      errors[rank] = test::user_error_of([&] { group.agree(run); });
  });
  EXPECT_NE(errors[0].find("rank 1 stopped with an error: data/train.es: no such file"), std::string::npos) << errors[0];
  fs::remove_all(dir);
}

// ---- Ranks as processes, through the CLI. ----

namespace {

using test::shell_quote;

int free_port() {
  const int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  getsockname(s, reinterpret_cast<sockaddr*>(&addr), &len);
  close(s);
  return ntohs(addr.sin_port);
}

const char* kTiny =
    "--src_vocab_size 60 --tgt_vocab_size 60 --embed_dim 16 --hidden_size 16 --attention_dim 16 --dropout 0.3 "
    "--lr 0.01 --max_tokens 120 --valid_interval 5 --log_interval 1 --device cpu";

class RegressionDataParallelCli : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = test::fresh_temp_dir("dp_cli");
    test::write_numbers_corpus(root_ / "data");
  }
  void TearDown() override { fs::remove_all(root_); }
  std::string path(const std::string& p) const { return shell_quote((root_ / p).string()); }
  // `nlpzoo train` arguments of a fresh tiny run into `run`, reading the corpus in `data`.
  std::string train(const std::string& run, const std::string& extra, const std::string& data = "data") const {
    return "train --config " + shell_quote(std::string(NLPZOO_SOURCE_DIR) + "/configs/seq2seq-bahdanau-es-en.ini") +
           " --data-dir " + path(data) + " --run-dir " + path(run) + " " + kTiny + " " + extra;
  }
  std::vector<torch::Tensor> params(const std::string& run) const {
    auto loaded = load_run((root_ / run / "checkpoint_last.pt").string(), torch::kCPU);
    return params_of(*loaded.task);
  }
  TrainingState state(const std::string& run) const {
    return read_checkpoint_header((root_ / run / "checkpoint_last.pt").string()).state;
  }
  fs::path root_;
};

}  // namespace

// --nproc 2 through the CLI: one process with update_freq 2 makes the same run (no dropout); a
// run stopped and resumed equals an uninterrupted one exactly (dropout on); resumed by one
// process, it goes on from the same place in the batch plan with a warning.
TEST_F(RegressionDataParallelCli, NprocTrainsAsOneProcessAndResumesExactly) {
  auto r = test::run_cli(train("two", "--nproc 2 --max-steps 8 --dropout 0"));
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("data-parallel: 2 ranks (gloo)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("done: 8 updates"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("% of it in all-reduce"), std::string::npos) << r.out;
  EXPECT_EQ(read_lines((root_ / "two" / "metrics.jsonl").string()).size(), 8u + 2u);  // 8 reports, 2 validations
  r = test::run_cli(train("one", "--max-steps 8 --dropout 0 --update_freq 2"));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_LE(max_abs_diff(params("two"), params("one")), 1e-5);

  // Exact resume, dropout on: 10 updates at once, or 6 then 4.
  ASSERT_EQ(test::run_cli(train("whole", "--nproc 2 --max-steps 10")).status, 0);
  ASSERT_EQ(test::run_cli(train("parts", "--nproc 2 --max-steps 6")).status, 0);
  fs::copy(root_ / "parts", root_ / "parts_one", fs::copy_options::recursive);
  r = test::run_cli("train --run-dir " + path("parts") + " --resume --nproc 2 --max-steps 10");
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("resumed from"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("warning"), std::string::npos) << r.out;
  const auto whole = params("whole"), parts = params("parts");
  for (size_t i = 0; i < whole.size(); ++i) EXPECT_TRUE(torch::equal(whole[i], parts[i])) << "parameter " << i;
  EXPECT_EQ(state("whole").best_valid_loss, state("parts").best_valid_loss);

  // Another world size: 6 updates of 2 batches, then 2 of 1 = 14 batches, where a one-process
  // run of 14 updates stands.
  r = test::run_cli("train --run-dir " + path("parts_one") + " --resume --max-steps 8");
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("warning: the checkpoint was written by 2 data-parallel rank(s) and this run has 1"),
            std::string::npos)
      << r.out;
  ASSERT_EQ(test::run_cli(train("fourteen", "--max-steps 14")).status, 0);
  EXPECT_EQ(std::make_pair(state("parts_one").epoch, state("parts_one").batch_index),
            std::make_pair(state("fourteen").epoch, state("fourteen").batch_index));
}

// Ranks started by hand (as a Slurm script would: rank 0 serves the store). SIGTERM to rank 1
// stops both at the same update with one resumable checkpoint; a killed or stopped (hung) rank
// makes rank 0 fail within its --dist-timeout, naming rank 1.
TEST_F(RegressionDataParallelCli, OneRanksSignalOrDeathStopsTheOthers) {
  for (const std::string signal : {"TERM", "KILL", "STOP"}) {
    const std::string run = "run_" + signal;
    // Rank 1 runs bare (its pid is the one signalled); rank 0 under timeout, lest a hang hang the test.
    const std::string env = "MASTER_ADDR=127.0.0.1 MASTER_PORT=" + std::to_string(free_port()) +
                            " WORLD_SIZE=2 NLPZOO_THREADS=1 ";
    const std::string worker = shell_quote(NLPZOO_CLI) + " " + train(run, "--max-steps 100000 --dist-timeout 4");
    const std::string script =
        env + "RANK=1 " + worker + " >" + path("r1.out") + " 2>" + path("r1.err") + " & p1=$!; " + env +
        "RANK=0 timeout 120 " + worker + " >" + path("r0.out") + " 2>" + path("r0.err") + " & p0=$!; " +
        "for i in $(seq 1200); do [ -s " + path(run + "/metrics.jsonl") + " ] && break; sleep 0.1; done; " +
        "kill -" + signal + " $p1; wait $p0; echo \"rank0=$?\"; " +
        (signal == "TERM" ? "" : "kill -KILL $p1 2>/dev/null; kill -CONT $p1 2>/dev/null; ") + "wait $p1; echo \"rank1=$?\"";
    const auto r = test::run_command(script);
    const std::string out0 = read_file((root_ / "r0.out").string()), err0 = read_file((root_ / "r0.err").string());
    if (signal == "TERM") {
      EXPECT_NE(r.out.find("rank0=143"), std::string::npos) << r.out << out0 << err0;
      EXPECT_NE(r.out.find("rank1=143"), std::string::npos) << r.out << read_file((root_ / "r1.err").string());
      EXPECT_NE(out0.find("interrupted (SIGTERM)"), std::string::npos) << out0;
      const int64_t step = state(run).step;
      EXPECT_GT(step, 0);
      const auto resumed = test::run_cli("train --run-dir " + path(run) + " --resume --nproc 2 --max-steps " +
                                         std::to_string(step + 2));
      EXPECT_EQ(resumed.status, 0) << resumed.out << resumed.err;
      EXPECT_NE(resumed.out.find("done: " + std::to_string(step + 2) + " updates"), std::string::npos) << resumed.out;
    } else {
      EXPECT_NE(r.out.find("rank0=1\n"), std::string::npos) << signal << ": " << r.out << err0;
      EXPECT_NE(err0.find("data-parallel rank 0 of 2: all-reduce"), std::string::npos) << signal << ": " << err0;
      EXPECT_NE(err0.find("failed: rank 1 stopped answering"), std::string::npos)
          << signal << ": " << err0;
    }
  }
}

// Ranks started by hand (the launcher gives every rank the same arguments) with another option,
// budget or corpus: both stop before training with the error naming the difference, rank 0 too,
// instead of training on (another lr), or rank 0 failing later as if rank 1 had died (another
// max_steps), or a crash in the first broadcast (another hidden_size).
TEST_F(RegressionDataParallelCli, RanksStartedDifferentlyAllStopNamingTheDifference) {
  fs::copy(root_ / "data", root_ / "more");
  for (const char* file : {"train.es", "train.en"}) {
    const std::string text = read_file((root_ / "data" / file).string());
    atomic_write_text((root_ / "more" / file).string(), text + text);
  }
  struct Case {
    std::string rank1, data1, expected;  // rank 1's options and corpus; rank 0 has --max-steps 6 and data
  };
  for (const auto& c : std::vector<Case>{
           {"--max-steps 6 --lr 0.002", "data", "rank 1's config differs from rank 0's at lr: 0.002 vs 0.01"},
           {"--max-steps 3", "data", "rank 1's config differs from rank 0's at max_steps: 3 vs 6"},
           {"--max-steps 6 --hidden_size 24", "data", "rank 1's config differs from rank 0's at hidden_size: 24 vs 16"},
           {"--max-steps 6", "more", "rank 1's data differs from rank 0's at train.batches: "}}) {
    const std::string port = std::to_string(free_port());
    const auto worker = [&](int rank, const std::string& args) {
      return "MASTER_ADDR=127.0.0.1 MASTER_PORT=" + port + " WORLD_SIZE=2 RANK=" + std::to_string(rank) +
             " NLPZOO_THREADS=1 timeout 120 " + shell_quote(NLPZOO_CLI) + " " + args + " --dist-timeout 60 2>" +
             path("r" + std::to_string(rank) + ".err") + " >/dev/null";
    };
    const auto r = test::run_command(worker(1, train("run", c.rank1, c.data1)) + " & p1=$!; " +
                                     worker(0, train("run", "--max-steps 6")) + "; echo \"rank0=$?\"; wait $p1; " +
                                     "echo \"rank1=$?\"");
    const std::string err0 = read_file((root_ / "r0.err").string()), err1 = read_file((root_ / "r1.err").string());
    EXPECT_NE(r.out.find("rank0=1\n"), std::string::npos) << c.rank1 << ": " << r.out << err0;
    EXPECT_NE(r.out.find("rank1=1\n"), std::string::npos) << c.rank1 << ": " << r.out << err1;
    EXPECT_NE(err0.find("data-parallel rank 0 of 2: " + c.expected), std::string::npos) << c.rank1 << ": " << err0;
    EXPECT_NE(err1.find("data-parallel rank 1 of 2: " + c.expected), std::string::npos) << c.rank1 << ": " << err1;
    EXPECT_FALSE(fs::exists(root_ / "run" / "checkpoint_last.pt")) << c.rank1;
    fs::remove_all(root_ / "run");
  }
}

// torchrun (Debian's python3-torch) launches the same workers as --nproc: the same run.
TEST_F(RegressionDataParallelCli, TorchrunLaunchesTheSameRunAsNproc) {
  NLPZOO_REQUIRE_PYTHON_MODULE("torch.distributed.run", "python3-torch");
  const auto r = test::run_command(
      "NLPZOO_THREADS=1 /usr/bin/python3 -m torch.distributed.run --redirects 1 --tee 1 --nproc_per_node 2 "
      "--master_port " + std::to_string(free_port()) + " --no_python " + shell_quote(NLPZOO_CLI) + " " +
      train("torchrun", "--max-steps 4"));
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  ASSERT_EQ(test::run_cli(train("nproc", "--nproc 2 --max-steps 4")).status, 0);
  const auto a = params("torchrun"), b = params("nproc");
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i], b[i])) << "parameter " << i;
}
