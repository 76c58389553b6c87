// GloVe: co-occurrence counts (hand-counted with 1/d, both directions, line ends), the weighting
// function, the loss and its gradient by hand, W + W̃, the task's batches, bad input, training
// on a tiny corpus with AdaGrad's sparse updates and with the in-place per-entry AdaGrad (checked
// against autograd and the AdaGrad formula by hand), checkpoints and exact resume.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <filesystem>
#include <random>
#include <set>

#include "datasets/cooccurrence.h"
#include "core/io.h"
#include "models/embeddings/glove.h"
#include "models/embeddings/glove_sgd.h"
#include "tests/test_util.h"
#include "train/checkpoint.h"
#include "train/tasks/glove_task.h"
#include "train/tasks/registry.h"
#include "train/trainer.h"

using namespace nlpzoo;
namespace fs = std::filesystem;

// ---- co-occurrence counts ----

// Ten words on two lines, window 2. Line 1 "a b c a d": distance 1 pairs ab bc ca ad, distance 2
// pairs ac ba cd. Line 2 "d b e b a": distance 1 db be eb ba, distance 2 de bb ea. Each pair
// adds 1/d to X_ij and X_ji (so the pair b..b adds 2 * 1/2 to X_bb). Across the line end,
// "d | d" and "a d | d" would add to X_dd and X_ad: they must not.
TEST(GloveCooccurrence, TenWordsWindowTwoByHand) {
  const std::vector<std::string> text = {"a b c a d", "d b e b a"};
  const auto vocab = count_words(text, 1);
  EncodedLines lines;
  for (const auto& l : text) lines.add(l, vocab);
  ASSERT_EQ(lines.ids.size(), 10u);
  auto id = [&](const char* w) { return vocab.find(w); };
  const std::map<std::pair<std::string, std::string>, double> expected = {
      {{"a", "b"}, 1 + 0.5 + 1},  // a0 b1, b1 a3 (d = 2); line 2: b3 a4
      {{"a", "c"}, 1 + 0.5},      // c2 a3, a0 c2
      {{"a", "d"}, 1},            // a3 d4 (not a3 .. d5 across the line end)
      {{"a", "e"}, 0.5},          // e2 a4
      {{"b", "b"}, 1},            // b1 b3 at d = 2, in both directions
      {{"b", "c"}, 1},
      {{"b", "d"}, 1},
      {{"b", "e"}, 2},  // b1 e2, e2 b3
      {{"c", "d"}, 0.5},
      {{"d", "e"}, 0.5}};
  for (int64_t chunk : {int64_t{1} << 23, int64_t{1}, int64_t{3}}) {
    SCOPED_TRACE(chunk);
    const auto x = count_cooccurrences(lines, 2, chunk);
    EXPECT_EQ(x.nnz(), 19);  // 9 pairs of different words, both ways, and X_bb
    for (const auto& [pair, value] : expected) {
      EXPECT_NEAR(x.at(id(pair.first.c_str()), id(pair.second.c_str())), value, 1e-6) << pair.first << pair.second;
      EXPECT_NEAR(x.at(id(pair.second.c_str()), id(pair.first.c_str())), value, 1e-6) << pair.second << pair.first;
    }
    EXPECT_EQ(x.at(id("d"), id("d")), 0.0);
    EXPECT_EQ(x.at(id("a"), id("a")), 0.0);  // a0 and a3 are 3 apart
    // Σ X = both directions of every position pair: per line 4 * 1 + 3 * 1/2.
    double sum = 0;
    for (float v : x.values) sum += v;
    EXPECT_NEAR(sum, 2 * 2 * 5.5, 1e-5);
    // Sorted by (row, col), no repeats.
    for (int64_t k = 1; k < x.nnz(); ++k)
      EXPECT_TRUE(std::make_pair(x.rows[k - 1], x.cols[k - 1]) < std::make_pair(x.rows[k], x.cols[k]));
  }
  EXPECT_THROW(count_cooccurrences(lines, 0), std::invalid_argument);
}

// Random lines: chunked counting equals a dense count, and window 1 counts only neighbours.
TEST(GloveCooccurrence, ChunksAgreeWithADenseCount) {
  std::mt19937 rng(5);
  EncodedLines lines;
  const int V = 12, window = 4;
  for (int s = 0; s < 30; ++s) {
    const int len = static_cast<int>(rng() % 9);
    for (int k = 0; k < len; ++k) lines.ids.push_back(static_cast<int32_t>(rng() % V));
    lines.offsets.push_back(static_cast<int64_t>(lines.ids.size()));
  }
  std::vector<double> dense(V * V, 0.0);
  for (int64_t s = 0; s < lines.num_lines(); ++s)
    for (int64_t a = lines.offsets[s]; a < lines.offsets[s + 1]; ++a)
      for (int64_t b = lines.offsets[s]; b < lines.offsets[s + 1]; ++b)
        if (a != b && std::abs(a - b) <= window) dense[lines.ids[a] * V + lines.ids[b]] += 1.0 / std::abs(a - b);
  const auto big = count_cooccurrences(lines, window), small = count_cooccurrences(lines, window, 7);
  EXPECT_EQ(big.rows, small.rows);
  EXPECT_EQ(big.cols, small.cols);
  int64_t nonzero = 0;
  for (int i = 0; i < V; ++i)
    for (int j = 0; j < V; ++j) {
      nonzero += dense[i * V + j] > 0;
      EXPECT_NEAR(big.at(i, j), dense[i * V + j], 1e-5);
      EXPECT_NEAR(small.at(i, j), dense[i * V + j], 1e-5);
    }
  EXPECT_EQ(big.nnz(), nonzero);
}

// ---- the model ----

TEST(GloveModel, WeightingFunction) {
  auto f = [](double x, double x_max, double alpha) {
    return glove_weight(torch::tensor({x}, torch::kDouble), x_max, alpha).item<double>();
  };
  EXPECT_NEAR(f(50, 100, 0.75), std::pow(0.5, 0.75), 1e-12);  // 0.5946
  EXPECT_NEAR(f(1, 100, 0.75), std::pow(10.0, -1.5), 1e-12);   // 0.0316
  EXPECT_EQ(f(100, 100, 0.75), 1.0);
  EXPECT_EQ(f(300, 100, 0.75), 1.0);
  EXPECT_NEAR(f(25, 100, 1.0), 0.25, 1e-12);
  EXPECT_NEAR(f(4, 10, 0.5), std::sqrt(0.4), 1e-12);
  EXPECT_EQ(f(3, 100, 0.0), 1.0);
}

namespace {

// V = 3, D = 2 with set parameters.
Glove small_glove(bool sparse) {
  Glove g(GloveOptions(3, 2).sparse(sparse));
  torch::NoGradGuard no_grad;
  g->word->weight.copy_(torch::tensor({{1.0, 2.0}, {-1.0, 0.5}, {0.0, 1.0}}));
  g->context->weight.copy_(torch::tensor({{2.0, 3.0}, {0.5, -1.0}, {1.0, 1.0}}));
  g->word_bias->weight.copy_(torch::tensor({{0.25}, {0.0}, {1.0}}));
  g->context_bias->weight.copy_(torch::tensor({{0.0}, {-0.5}, {2.0}}));
  return g;
}

}  // namespace

// Entry (0, 1, X = 1): w_0·w̃_1 = 0.5 - 2 = -1.5, + b_0 + b̃_1 = -1.75, log 1 = 0, f(1) = 100^-0.75.
// Entry (2, 0, X = 200): w_2·w̃_0 = 3, + 1 + 0 = 4, diff = 4 - log 200, f = 1.
TEST(GloveModel, LossByHand) {
  auto g = small_glove(true);
  const auto rows = torch::tensor({0, 2}, torch::kLong), cols = torch::tensor({1, 0}, torch::kLong);
  const auto x = torch::tensor({1.0f, 200.0f});
  const double expected = 0.5 * (std::pow(0.01, 0.75) * 1.75 * 1.75 + std::pow(4 - std::log(200.0), 2));
  EXPECT_NEAR(g->loss(rows, cols, x).item<double>(), expected, 1e-5);
  EXPECT_NEAR(expected, 0.891236, 1e-6);
  // alpha = 1, x_max = 2: f(1) = 1/2, f(200) = 1.
  Glove g2(GloveOptions(3, 2).x_max(2).alpha(1));
  {
    torch::NoGradGuard no_grad;
    for (const auto& p : g->named_parameters()) g2->named_parameters()[p.key()].copy_(p.value());
  }
  EXPECT_NEAR(g2->loss(rows, cols, x).item<double>(), 0.5 * (0.5 * 1.75 * 1.75 + std::pow(4 - std::log(200.0), 2)), 1e-5);
  EXPECT_EQ(g->loss(rows.slice(0, 0, 0), cols.slice(0, 0, 0), x.slice(0, 0, 0)).item<double>(), 0.0);
}

// ∂(½ f diff²)/∂w_i = f diff w̃_j, ∂/∂w̃_j = f diff w_i, ∂/∂b_i = ∂/∂b̃_j = f diff, summed over
// the entries that use a row (row 0 appears twice here, as a word and as a context).
TEST(GloveModel, GradientByHand) {
  for (bool sparse : {true, false}) {
    SCOPED_TRACE(sparse);
    auto g = small_glove(sparse);
    const std::vector<int64_t> r = {0, 2, 0}, c = {1, 0, 0};
    const std::vector<float> xs = {1.0f, 200.0f, 30.0f};
    g->loss(torch::tensor(r), torch::tensor(c), torch::tensor(xs)).backward();
    auto dense = [](const torch::Tensor& t) { return t.is_sparse() ? t.to_dense() : t; };
    EXPECT_EQ(g->word->weight.grad().is_sparse(), sparse);
    auto W = g->word->weight.detach(), C = g->context->weight.detach();
    auto b = g->word_bias->weight.detach(), bc = g->context_bias->weight.detach();
    auto gW = torch::zeros_like(W), gC = torch::zeros_like(C), gb = torch::zeros_like(b), gbc = torch::zeros_like(bc);
    for (size_t k = 0; k < r.size(); ++k) {
      const double diff = (W[r[k]] * C[c[k]]).sum().item<double>() + b[r[k]][0].item<double>() +
                          bc[c[k]][0].item<double>() - std::log(xs[k]);
      const double fd = std::min(1.0, std::pow(xs[k] / 100.0, 0.75)) * diff;
      gW[r[k]] += fd * C[c[k]];
      gC[c[k]] += fd * W[r[k]];
      gb[r[k]] += fd;
      gbc[c[k]] += fd;
    }
    EXPECT_LT(test::max_diff(dense(g->word->weight.grad()), gW), 1e-5);
    EXPECT_LT(test::max_diff(dense(g->context->weight.grad()), gC), 1e-5);
    EXPECT_LT(test::max_diff(dense(g->word_bias->weight.grad()), gb), 1e-5);
    EXPECT_LT(test::max_diff(dense(g->context_bias->weight.grad()), gbc), 1e-5);
    EXPECT_GT(gW.abs().max().item<double>(), 0.1);  // the check is not vacuous
  }
}

TEST(GloveModel, InitialisationAndWordPlusContext) {
  torch::manual_seed(4);
  Glove g(GloveOptions(500, 10));
  for (const auto& p : g->parameters()) {
    EXPECT_LE(p.abs().max().item<double>(), 0.05);  // U(-0.5/D, 0.5/D)
    EXPECT_GT(p.abs().max().item<double>(), 0.045);
    EXPECT_NEAR(p.mean().item<double>(), 0.0, 0.005);
  }
  EXPECT_EQ(g->word_bias->weight.sizes(), (std::vector<int64_t>{500, 1}));
  auto s = small_glove(true);
  EXPECT_TRUE(torch::allclose(s->word_vectors(), torch::tensor({{3.0f, 5.0f}, {-0.5f, -0.5f}, {1.0f, 2.0f}})));
  EXPECT_FALSE(s->word_vectors().requires_grad());
  EXPECT_THROW(Glove(GloveOptions(3, 2).x_max(0)), std::invalid_argument);
}

// ---- the in-place AdaGrad step (glove_sgd.h) ----

namespace {

// Accumulators away from their start, so that the test sees which G divides the step.
void set_accumulators(GloveImpl& g, uint64_t seed) {
  torch::manual_seed(seed);
  torch::NoGradGuard no_grad;
  for (auto* t : {&g.word_gradsq, &g.context_gradsq, &g.word_bias_gradsq, &g.context_bias_gradsq})
    t->copy_(torch::rand_like(*t) * 3 + 0.5);
}

}  // namespace

// One entry: θ ← θ − lr g / sqrt(G), then G ← G + g², with g from autograd on ½ f d² (a word
// entry and a diagonal one, i = j, whose w_i and w̃_i are distinct rows).
TEST(GloveInPlace, OneEntryIsAutogradPlusAdagradByHand) {
  const double lr = 0.3;
  for (const auto& [i, j, xv] : std::vector<std::tuple<int64_t, int64_t, float>>{{0, 1, 30.0f}, {2, 2, 200.0f}, {1, 0, 0.5f}}) {
    SCOPED_TRACE(i * 10 + j);
    auto ref = small_glove(false), g = small_glove(false);
    set_accumulators(*ref, 11);
    set_accumulators(*g, 11);
    const auto rows = torch::tensor({i}), cols = torch::tensor({j}), x = torch::tensor({xv});
    auto loss = ref->loss(rows, cols, x);
    loss.backward();
    const double got = glove_adagrad(*g, rows, cols, x, lr, 1);
    EXPECT_NEAR(got, loss.item<double>(), 1e-6);  // the loss before the step
    const std::vector<std::tuple<std::string, torch::Tensor, torch::Tensor>> tables = {
        {"word", ref->word->weight, ref->word_gradsq},
        {"context", ref->context->weight, ref->context_gradsq},
        {"word_bias", ref->word_bias->weight, ref->word_bias_gradsq},
        {"context_bias", ref->context_bias->weight, ref->context_bias_gradsq}};
    double moved = 0;
    for (const auto& [name, p, G] : tables) {
      SCOPED_TRACE(name);
      const auto grad = p.grad().detach();
      const auto expected = p.detach() - lr * grad / G.sqrt();
      const auto expected_G = G + grad * grad;
      auto params = g->named_parameters();
      auto buffers = g->named_buffers();
      EXPECT_LT(test::max_diff(params[name + ".weight"], expected), 1e-6);
      EXPECT_LT(test::max_diff(buffers[name + "_gradsq"], expected_G), 1e-6);
      moved = std::max<double>(moved, test::max_diff(params[name + ".weight"], p.detach()));
    }
    EXPECT_GT(moved, 1e-3);  // the step did something to compare
  }
}

// Entries that share no row (W row 0 and W̃ row 0 are different rows): the returned loss is the
// model's loss before the call, and each entry's step is its own.
TEST(GloveInPlace, LossIsTheModelsLossBefore) {
  auto g = small_glove(true);
  const auto rows = torch::tensor({0, 2}, torch::kLong), cols = torch::tensor({1, 0}, torch::kLong);
  const auto x = torch::tensor({1.0f, 200.0f});
  const double before = g->loss(rows, cols, x).item<double>();
  EXPECT_NEAR(glove_adagrad(*g, rows, cols, x, 0.05, 1), before, 1e-5);
  EXPECT_LT(g->loss(rows, cols, x).item<double>(), before);  // and it went down
  EXPECT_THROW(glove_adagrad(*g, torch::tensor({3}, torch::kLong), torch::tensor({0}, torch::kLong), torch::tensor({1.0f}), 0.1, 1),
               std::invalid_argument);
  EXPECT_THROW(glove_adagrad(*g, torch::tensor({0}, torch::kLong), torch::tensor({0}, torch::kLong), torch::tensor({0.0f}), 0.1, 1),
               std::invalid_argument);
  EXPECT_THROW(glove_adagrad(*g, torch::tensor({0}, torch::kInt), torch::tensor({0}, torch::kLong), torch::tensor({1.0f}), 0.1, 1),
               std::invalid_argument);
  EXPECT_THROW(Glove(GloveOptions(3, 2).initial_accumulator(0)), std::invalid_argument);
}

// Many entries that share rows: one thread gives the same tables twice, bit for bit; Hogwild
// threads reach about the same loss.
TEST(GloveInPlace, OneThreadIsDeterministic) {
  const int64_t V = 20, D = 16, N = 2000;
  torch::manual_seed(2);
  const auto rows = torch::randint(V, {N}, torch::kLong), cols = torch::randint(V, {N}, torch::kLong);
  const auto x = torch::rand({N}) * 50 + 0.5;
  auto fresh = [&] {
    torch::manual_seed(3);
    return Glove(GloveOptions(V, D).x_max(10));
  };
  auto a = fresh(), b = fresh(), c = fresh();
  const double before = a->loss(rows, cols, x).item<double>();
  const double la = glove_adagrad(*a, rows, cols, x, 0.05, 1);
  const double lb = glove_adagrad(*b, rows, cols, x, 0.05, 1);
  EXPECT_EQ(la, lb);
  for (const auto& p : a->named_parameters()) EXPECT_TRUE(torch::equal(p.value(), b->named_parameters()[p.key()])) << p.key();
  for (const auto& t : a->named_buffers()) EXPECT_TRUE(torch::equal(t.value(), b->named_buffers()[t.key()])) << t.key();
  const double after = a->loss(rows, cols, x).item<double>();
  EXPECT_LT(after, 0.9 * before) << before << " -> " << after;
  glove_adagrad(*c, rows, cols, x, 0.05, 4);
  EXPECT_NEAR(c->loss(rows, cols, x).item<double>(), after, 0.05 * after);
}

// ---- the task ----

namespace {

// Two topics of six words on alternate lines (test::write_topic_corpus).
void write_corpus(const fs::path& dir, int lines = 200) { test::write_topic_corpus(dir / "english.txt", lines); }

Config glove_config(const std::vector<std::string>& extra = {}) {
  std::vector<std::string> o = {"--task", "glove", "--dim", "8", "--window", "3", "--min_count", "2",
                                "--batch_size", "40", "--valid_every", "10", "--optimizer", "adagrad",
                                "--adagrad_initial_accumulator", "1", "--lr", "0.05", "--clip_norm", "0",
                                "--device", "cpu", "--log_interval", "1000", "--valid_interval", "0"};
  o.insert(o.end(), extra.begin(), extra.end());
  return Config::resolve(task_schema("glove"), "", o);
}

class GloveData : public ::testing::Test {
 protected:
  void SetUp() override {
    torch::set_num_threads(1);
    root_ = test::fresh_temp_dir("glove");
    write_corpus(root_ / "data");
  }
  void TearDown() override { fs::remove_all(root_); }
  TaskContext context(const std::string& run, std::set<Split> splits = {Split::kTrain, Split::kValid},
                      bool resume = false) const {
    return {(root_ / "data").string(), (root_ / run).string(), std::move(splits), resume};
  }
  fs::path root_;
};

double cosine(const torch::Tensor& a, const torch::Tensor& b) {
  return (a.dot(b) / (a.norm() * b.norm())).item<double>();
}

}  // namespace

TEST_F(GloveData, BatchesVisitEveryEntryOncePerEpoch) {
  Config c = glove_config();
  GloveTask task;
  task.setup(c, context("run"));
  EXPECT_EQ(task.vocabulary().size(), 14);
  EXPECT_EQ(read_file((root_ / "run" / "vocab.txt").string()), task.vocabulary().to_text());
  const auto& x = task.cooccurrences(Split::kTrain);
  const int64_t n = task.num_batches(Split::kTrain, 0);
  EXPECT_EQ(n, (x.nnz() + 39) / 40);
  auto entries_of = [&](int64_t epoch) {
    std::vector<std::tuple<int64_t, int64_t, float>> seen;
    for (int64_t i = 0; i < n; ++i) {
      auto b = task.make_batch(Split::kTrain, epoch, i);
      EXPECT_EQ(b.num_tokens, i + 1 < n ? 40 : x.nnz() - 40 * (n - 1));
      for (int64_t k = 0; k < b.num_tokens; ++k)
        seen.emplace_back(b.tensors.at("rows")[k].item<int64_t>(), b.tensors.at("cols")[k].item<int64_t>(),
                          b.tensors.at("x")[k].item<float>());
    }
    return seen;
  };
  auto e0 = entries_of(0), e1 = entries_of(1);
  EXPECT_NE(e0, e1);  // another order
  EXPECT_EQ(e0, entries_of(0));
  std::sort(e0.begin(), e0.end());
  std::sort(e1.begin(), e1.end());
  ASSERT_EQ(static_cast<int64_t>(e0.size()), x.nnz());
  for (int64_t k = 0; k < x.nnz(); ++k)
    EXPECT_EQ(e0[k], std::make_tuple(int64_t{x.rows[k]}, int64_t{x.cols[k]}, x.values[k]));
  EXPECT_EQ(e0, e1);
  EXPECT_THROW(task.make_batch(Split::kTrain, 0, n), std::out_of_range);
  // The valid split is the held-out pairs, both directions; with the train split they are the
  // counts over all 200 lines.
  const auto& valid = task.cooccurrences(Split::kValid);
  EXPECT_GT(valid.nnz(), 0);
  for (int64_t k = 0; k < valid.nnz(); ++k) {
    EXPECT_TRUE(held_out_pair(valid.rows[k], valid.cols[k], 10));
    EXPECT_EQ(x.at(valid.rows[k], valid.cols[k]), 0.0);
    EXPECT_EQ(valid.at(valid.cols[k], valid.rows[k]), valid.values[k]);
  }
  EncodedLines all;
  for (const auto& line : read_lines((root_ / "data" / "english.txt").string())) all.add(line, task.vocabulary());
  EXPECT_EQ(all.num_lines(), 200);
  const auto full = count_cooccurrences(all, 3);
  EXPECT_EQ(full.nnz(), x.nnz() + valid.nnz());
  for (int64_t k = 0; k < full.nnz(); ++k)
    EXPECT_EQ(full.values[k], (held_out_pair(full.rows[k], full.cols[k], 10) ? valid : x).at(full.rows[k], full.cols[k]));
  // About one pair in valid_every is held out.
  int64_t held = 0;
  for (int32_t i = 0; i < 300; ++i)
    for (int32_t j = 0; j < 300; ++j) held += held_out_pair(i, j, 10);
  EXPECT_NEAR(held / 90000.0, 0.1, 0.01);
}

// The tiny corpus is fitted: the weighted loss over all train entries falls by far, and words of
// a topic end up closer to each other than to the other topic's.
TEST_F(GloveData, TinyCorpusOverfits) {
  for (const char* in_place : {"true", "false"}) {
    SCOPED_TRACE(in_place);
    torch::manual_seed(1);
    Config c = glove_config({"--max_epochs", "150", "--lr", "0.1", "--inplace_adagrad", in_place});
    GloveTask task;
    const std::string run = std::string("run_") + in_place;
    task.setup(c, context(run));
    EXPECT_EQ(task.updates_in_place(), std::string(in_place) == "true");
    const double before = evaluate_loss(task, Split::kTrain, torch::kCPU).loss;
    ASSERT_EQ(Trainer(task, c, "glove", (root_ / run).string()).train(false), 0);
    const double after = evaluate_loss(task, Split::kTrain, torch::kCPU).loss;
    EXPECT_LT(after, 0.05 * before) << before << " -> " << after;
    // The autograd path stepped on sparse rows; the in-place one formed no gradient and moved
    // its accumulators.
    if (task.updates_in_place()) {
      EXPECT_FALSE(task.glove().word->weight.grad().defined());
      EXPECT_GT(task.glove().word_gradsq.max().item<double>(), 1.5);
    } else {
      EXPECT_TRUE(task.glove().word->weight.grad().is_sparse());
      EXPECT_EQ(task.glove().word_gradsq.max().item<double>(), 1.0);
    }
    const auto wv = task.word_vectors();
    EXPECT_EQ(wv.words(), task.vocabulary().words());
    EXPECT_TRUE(torch::equal(wv.vectors(), task.glove().word->weight + task.glove().context->weight));
    auto vec = [&](const std::string& w) { return wv.vectors()[wv.find(w)]; };
    EXPECT_GT(cosine(vec("cat"), vec("dog")), cosine(vec("cat"), vec("two")));
    EXPECT_GT(cosine(vec("one"), vec("six")), cosine(vec("one"), vec("fox")));
  }
}

// 7 updates straight equal 4 updates, a resume, and 3 more, bit for bit (the epoch of 5
// batches ends in between), parameters and AdaGrad accumulators, for the in-place path (one
// thread, from SetUp) and the autograd one; the checkpoint alone rebuilds the vectors without
// the corpus.
TEST_F(GloveData, ResumeIsExactAndCheckpointRebuilds) {
  for (const char* in_place : {"false", "true"}) {  // the in-place run is the one checked further below
  SCOPED_TRACE(in_place);
  auto train = [&](const std::string& run, int64_t steps, bool resume) {
    torch::manual_seed(7);
    Config c = glove_config({"--max_steps", std::to_string(steps), "--batch_size", "20", "--inplace_adagrad", in_place});
    auto task = std::make_unique<GloveTask>();
    task->setup(c, context(run, {Split::kTrain, Split::kValid}, resume));
    EXPECT_EQ(Trainer(*task, c, "glove", (root_ / run).string()).train(resume), 0);
    return task;
  };
  auto straight = train(std::string("straight_") + in_place, 7, false);
  ASSERT_EQ(straight->num_batches(Split::kTrain, 0), 5);  // the resume below is mid-epoch 1, then crosses to 2
  train(std::string("split_") + in_place, 4, false);
  auto resumed = train(std::string("split_") + in_place, 7, true);
  for (const char* name : {"word.weight", "context.weight", "word_bias.weight", "context_bias.weight"})
    EXPECT_TRUE(torch::equal(straight->glove().named_parameters()[name], resumed->glove().named_parameters()[name]))
        << name;
  for (const char* name : {"word_gradsq", "context_gradsq", "word_bias_gradsq", "context_bias_gradsq"})
    EXPECT_TRUE(torch::equal(straight->glove().named_buffers()[name], resumed->glove().named_buffers()[name])) << name;
  if (std::string(in_place) == "false") continue;
  EXPECT_GT(straight->glove().word_gradsq.max().item<double>(), 1.001);  // the accumulators moved
  // Training moved the vectors.
  torch::manual_seed(7);
  Config fresh = glove_config();
  GloveTask untrained;
  untrained.setup(fresh, context("fresh"));
  EXPECT_GT(test::max_diff(untrained.word_vectors().vectors(), straight->word_vectors().vectors()), 1e-3);

  const auto ckpt = (root_ / "straight_true" / "checkpoint_last.pt").string();
  auto run = load_run(ckpt, torch::kCPU, "/nonexistent");  // no corpus, no counting
  auto& back = dynamic_cast<GloveTask&>(*run.task);
  EXPECT_EQ(back.vocabulary().words(), straight->vocabulary().words());
  EXPECT_TRUE(torch::equal(back.word_vectors().vectors(), straight->word_vectors().vectors()));
  EXPECT_TRUE(torch::equal(back.glove().word_gradsq, straight->glove().word_gradsq));
  EXPECT_THROW(back.cooccurrences(Split::kTrain), UserError);
  }
}

TEST_F(GloveData, BadInputNamesTheFileOrKey) {
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"window", "0"}, {"dim", "0"}, {"min_count", "0"}, {"batch_size", "0"}, {"valid_every", "1"},
           {"x_max", "0"}, {"alpha", "-1"}, {"adagrad_initial_accumulator", "0"}, {"shuffle", "maybe"}}) {
    Config bad = glove_config({"--" + key + "=" + value});
    GloveTask t;
    auto err = test::user_error_of([&] { t.setup(bad, {(root_ / "none").string(), "", {Split::kTrain}, false}); });
    EXPECT_NE(err.find("'" + key + "'"), std::string::npos) << key << ": " << err;
  }
  // Trainer keys the sparse gradients cannot use are the Trainer's to refuse (the task reports
  // its optimizers in Task::TrainingProfile and reads no Trainer key).
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"optimizer", "adam"}, {"weight_decay", "0.1"}, {"momentum", "0.9"}}) {
    Config bad = glove_config({"--" + key + "=" + value});
    GloveTask t;
    t.setup(bad, context("bad_" + key));
    auto err = test::user_error_of([&] { Trainer(t, bad, "glove", (root_ / ("bad_" + key)).string()); });
    EXPECT_NE(err.find("'" + key + "'"), std::string::npos) << key << ": " << err;
  }
  Config c = glove_config();
  GloveTask t1;
  auto err = test::user_error_of([&] { t1.setup(c, {(root_ / "nowhere").string(), "", {Split::kTrain}, false}); });
  EXPECT_NE(err.find((root_ / "nowhere" / "english.txt").string()), std::string::npos) << err;

  const auto file = (root_ / "data" / "english.txt").string();
  atomic_write_text(file, "");
  GloveTask t2;
  err = test::user_error_of([&] { t2.setup(c, context("r2")); });
  EXPECT_NE(err.find(file), std::string::npos) << err;
  EXPECT_NE(err.find("empty"), std::string::npos) << err;

  atomic_write_text(file, "every word here is rare\n");
  GloveTask t3;
  err = test::user_error_of([&] { t3.setup(c, context("r3")); });
  EXPECT_NE(err.find("min_count=2"), std::string::npos) << err;

  // No held-out pair (and no held-out line) with valid_every this large.
  write_corpus(root_ / "data");
  Config rare = glove_config({"--valid_every", "100000"});
  GloveTask t5;
  err = test::user_error_of([&] { t5.setup(rare, context("r5")); });
  EXPECT_NE(err.find("valid_every=100000"), std::string::npos) << err;

  GloveTask t4;
  err = test::user_error_of([&] { t4.setup(c, context("r4", {Split::kTest})); });
  EXPECT_NE(err.find("test split"), std::string::npos) << err;
}
