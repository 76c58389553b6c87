// word2vec: the Huffman tree, subsampling, the noise distribution, the three objectives
// (hand-computed values and finite-difference gradients), dynamic windows, the task's
// batches, training on a tiny corpus, sparse gradients through the Trainer, checkpoints,
// bad input, and (Regression) the CLI on a small text.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <tuple>
#include <algorithm>
#include <functional>
#include <numeric>
#include <queue>
#include <random>
#include <set>

#include "core/io.h"
#include "datasets/subwords.h"
#include "datasets/word2vec_corpus.h"
#include "models/embeddings/parallel_chunks.h"
#include "models/embeddings/word2vec.h"
#include "tests/test_util.h"
#include "train/checkpoint.h"
#include "train/lr_schedule.h"
#include "train/tasks/registry.h"
#include "train/tasks/word2vec_task.h"
#include "train/trainer.h"

using namespace nlpzoo;
namespace fs = std::filesystem;

namespace {

double log_sigmoid(double x) { return -std::log1p(std::exp(-x)); }

}  // namespace

// ---- the Huffman tree ----

// Hand-run of word2vec.c's CreateBinaryTree on counts {5, 4, 3, 2, 1}: inner nodes
// 5 = {4, 3} (3), 6 = {5, 2} (6; the inner node 5 wins the tie 3 = 3), 7 = {1, 0} (9),
// 8 = {6, 7} (15, the root); the second-smallest of each merge gets bit 1. Inner node ids are
// node - V, so the root is 3.
TEST(Word2VecHuffman, KnownCodesForFiveWords) {
  const auto paths = huffman_tree({5, 4, 3, 2, 1});
  ASSERT_EQ(paths.size(), 5u);
  const std::vector<std::vector<uint8_t>> codes = {{1, 1}, {1, 0}, {0, 1}, {0, 0, 1}, {0, 0, 0}};
  const std::vector<std::vector<int64_t>> nodes = {{3, 2}, {3, 2}, {3, 1}, {3, 1, 0}, {3, 1, 0}};
  for (size_t w = 0; w < 5; ++w) {
    EXPECT_EQ(paths[w].code, codes[w]) << "word " << w;
    EXPECT_EQ(paths[w].nodes, nodes[w]) << "word " << w;
  }
  EXPECT_TRUE(huffman_tree({7})[0].nodes.empty());
  const auto two = huffman_tree({3, 3});
  EXPECT_EQ(two[0].code, (std::vector<uint8_t>{1}));
  EXPECT_EQ(two[1].code, (std::vector<uint8_t>{0}));
}

// Any Huffman tree has the optimal weighted path length Σ count·len, which equals the sum of
// the merged weights of the textbook priority-queue construction; and its codes are a
// complete prefix code (Kraft: Σ 2^-len = 1), frequent words never deeper than rare ones.
TEST(Word2VecHuffman, OptimalAndPrefixFreeOnRandomCounts) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<int64_t> counts(2 + rng() % 60);
    for (auto& c : counts) c = 1 + rng() % 1000;
    std::sort(counts.rbegin(), counts.rend());
    const auto paths = huffman_tree(counts);
    int64_t weighted = 0;
    double kraft = 0;
    std::set<std::vector<uint8_t>> distinct;
    for (size_t w = 0; w < counts.size(); ++w) {
      weighted += counts[w] * static_cast<int64_t>(paths[w].code.size());
      kraft += std::ldexp(1.0, -static_cast<int>(paths[w].code.size()));
      distinct.insert(paths[w].code);
      ASSERT_EQ(paths[w].nodes.size(), paths[w].code.size());
      EXPECT_EQ(paths[w].nodes.front(), static_cast<int64_t>(counts.size()) - 2);  // the root
      if (w > 0) {
        EXPECT_GE(paths[w].code.size(), paths[w - 1].code.size());
      }
    }
    std::priority_queue<int64_t, std::vector<int64_t>, std::greater<>> q(counts.begin(), counts.end());
    int64_t optimal = 0;
    while (q.size() > 1) {
      const int64_t a = q.top();
      q.pop();
      const int64_t b = q.top();
      q.pop();
      optimal += a + b;
      q.push(a + b);
    }
    EXPECT_EQ(weighted, optimal) << "trial " << trial;
    EXPECT_NEAR(kraft, 1.0, 1e-12);
    EXPECT_EQ(distinct.size(), counts.size());
  }
}

TEST(Word2VecHuffman, RejectsBadCounts) {
  EXPECT_THROW(huffman_tree({}), std::invalid_argument);
  EXPECT_THROW(huffman_tree({3, 0}), std::invalid_argument);
  EXPECT_THROW(huffman_tree({1, 2}), std::invalid_argument);
}

// ---- subsampling and noise ----

TEST(Word2VecSubsampling, KeepProbabilityByHand) {
  // sample 1e-3 of 1e6 words: t = 1000; keep(f) = min(1, (sqrt(f/t) + 1) t/f).
  EXPECT_DOUBLE_EQ(keep_probability(4000, 1'000'000, 1e-3), 0.75);         // (2 + 1) / 4
  EXPECT_DOUBLE_EQ(keep_probability(9000, 1'000'000, 1e-3), 4.0 / 9.0);    // (3 + 1) / 9
  EXPECT_NEAR(keep_probability(250'000, 1'000'000, 1e-3), 0.0672455532, 1e-10);  // (sqrt(250) + 1) / 250
  EXPECT_NEAR(keep_probability(250'000, 1'000'000, 1e-3), (std::sqrt(250.0) + 1) / 250, 1e-15);
  EXPECT_DOUBLE_EQ(keep_probability(1000, 1'000'000, 1e-3), 1.0);          // (1 + 1) * 1 = 2, capped
  EXPECT_DOUBLE_EQ(keep_probability(10, 1'000'000, 1e-3), 1.0);
  EXPECT_DOUBLE_EQ(keep_probability(900'000, 1'000'000, 0.0), 1.0);        // sample 0: no subsampling
}

// The Hogwild kernels' threads. at::parallel_for runs serially in a file compiled without OpenMP,
// which kept word2vec's and GloVe's kernels on one thread whatever NLPZOO_THREADS said: two
// chunks must run on two threads at once.
TEST(ParallelChunks, EachChunkRunsOnItsOwnThread) {
  const int previous = torch::get_num_threads();
  torch::set_num_threads(2);
  std::mutex m;
  std::set<std::thread::id> threads;
  std::vector<std::tuple<int64_t, int64_t, int64_t>> calls;
  std::vector<int> visits(11, 0);
  parallel_chunks(11, 2, [&](int64_t c, int64_t begin, int64_t end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::lock_guard<std::mutex> lock(m);
    threads.insert(std::this_thread::get_id());
    calls.emplace_back(c, begin, end);
    for (int64_t i = begin; i < end; ++i) ++visits[i];
    return 0.0;
  });
  torch::set_num_threads(previous);
  EXPECT_EQ(threads.size(), 2u);
  std::sort(calls.begin(), calls.end());
  EXPECT_EQ(calls, (std::vector<std::tuple<int64_t, int64_t, int64_t>>{{0, 0, 6}, {1, 6, 11}}));
  EXPECT_EQ(visits, std::vector<int>(11, 1));

  // One thread, or fewer items than threads: whole chunks on fewer calls; nothing for n = 0.
  calls.clear();
  parallel_chunks(5, 1, [&](int64_t c, int64_t begin, int64_t end) {
    calls.emplace_back(c, begin, end);
    return 0.0;
  });
  EXPECT_EQ(calls, (std::vector<std::tuple<int64_t, int64_t, int64_t>>{{0, 0, 5}}));
  int none = 0;
  parallel_chunks(0, 2, [&](int64_t, int64_t, int64_t) { return static_cast<double>(++none); });
  EXPECT_EQ(none, 0);
  // An exception in a chunk reaches the caller.
  EXPECT_THROW(parallel_chunks(4, 2, [](int64_t c, int64_t, int64_t) {
                 if (c == 1) throw std::runtime_error("chunk 1");
                 return 0.0;
               }),
               std::runtime_error);
}

TEST(Word2VecNoise, UnigramToTheThreeQuarters) {
  // 81^0.75 = 27, 16^0.75 = 8, 1^0.75 = 1: P_n = {27, 8, 1} / 36.
  auto p = noise_distribution({81, 16, 1});
  ASSERT_EQ(p.scalar_type(), torch::kDouble);
  EXPECT_NEAR(p[0].item<double>(), 27.0 / 36, 1e-12);
  EXPECT_NEAR(p[1].item<double>(), 8.0 / 36, 1e-12);
  EXPECT_NEAR(p[2].item<double>(), 1.0 / 36, 1e-12);
  auto uniform = noise_distribution({81, 16, 1}, 0.0);
  EXPECT_NEAR(uniform[2].item<double>(), 1.0 / 3, 1e-12);

  // The alias cells give each word its P_n (to the 2^-32 of a cell's split), here and on a
  // Zipf-shaped vocabulary of 1000 words.
  NoiseSampler sampler({81, 16, 1}, 0.75);
  EXPECT_TRUE(torch::allclose(sampler.probabilities(), p, 0, 1e-9)) << sampler.probabilities();
  std::vector<int64_t> zipf;
  for (int64_t r = 1; r <= 1000; ++r) zipf.push_back(100000 / r);
  EXPECT_TRUE(torch::allclose(NoiseSampler(zipf).probabilities(), noise_distribution(zipf), 0, 1e-9));
  // Draws follow P_n; the same generator state gives the same draws.
  std::mt19937_64 a(5), b(5);
  auto draws = sampler.sample(20000, 3, a);
  EXPECT_EQ(draws.sizes(), (std::vector<int64_t>{20000, 3}));
  EXPECT_TRUE(torch::equal(draws, sampler.sample(20000, 3, b)));
  EXPECT_NEAR(draws.eq(1).to(torch::kDouble).mean().item<double>(), 8.0 / 36, 0.01);
  EXPECT_NEAR(draws.eq(2).to(torch::kDouble).mean().item<double>(), 1.0 / 36, 0.003);
  EXPECT_THROW(noise_distribution({}), std::invalid_argument);
}

// ---- objectives: values by hand ----

namespace {

// hidden h = [1, 2] (N = 1, D = 2).
torch::Tensor one_hidden() { return torch::tensor({{1.0, 2.0}}, torch::kDouble); }

}  // namespace

TEST(Word2VecObjectives, NegativeSamplingByHand) {
  NegativeSamplingObjectiveImpl ns(4, 2, /*sparse=*/false, 2, NoiseSampler({4, 3, 2, 1}));
  ns.to(torch::kDouble);
  torch::NoGradGuard no_grad;
  ns.output_vectors->weight.copy_(torch::tensor({{0.5, 0.0}, {0.0, -1.0}, {1.0, 1.0}, {-0.5, 0.25}}, torch::kDouble));
  // target 2, noise {1, 3}: -log σ(θ2·h) - log σ(-θ1·h) - log σ(-θ3·h); θ·h = 3, -2, 0.
  auto l = ns.loss(one_hidden(), torch::tensor({2}, torch::kLong), torch::tensor({{1, 3}}, torch::kLong));
  EXPECT_NEAR(l.item<double>(), -(log_sigmoid(3) + log_sigmoid(2) + log_sigmoid(0)), 1e-12);
  // A noise word equal to the target is skipped (word2vec.c, gensim).
  l = ns.loss(one_hidden(), torch::tensor({2}, torch::kLong), torch::tensor({{2, 1}}, torch::kLong));
  EXPECT_NEAR(l.item<double>(), -(log_sigmoid(3) + log_sigmoid(2)), 1e-12);
  // Two examples sum; no examples give 0.
  auto h2 = torch::tensor({{1.0, 2.0}, {0.0, 1.0}}, torch::kDouble);
  l = ns.loss(h2, torch::tensor({2, 0}, torch::kLong), torch::tensor({{1, 3}, {1, 1}}, torch::kLong));
  EXPECT_NEAR(l.item<double>(), -(log_sigmoid(3) + log_sigmoid(2) + log_sigmoid(0)) - (log_sigmoid(0) + 2 * log_sigmoid(1)),
              1e-12);
  EXPECT_EQ(ns.loss(torch::zeros({0, 2}, torch::kDouble), torch::zeros({0}, torch::kLong),
                    torch::zeros({0, 2}, torch::kLong)).item<double>(), 0.0);
  // Without given negatives it draws K = 2 per example itself.
  EXPECT_TRUE(std::isfinite(ns.loss(h2, torch::tensor({2, 0}, torch::kLong)).item<double>()));
}

TEST(Word2VecObjectives, HierarchicalSoftmaxByHand) {
  // counts {5,4,3,2,1}: word 3's path is nodes {3, 1, 0} with code {0, 0, 1}.
  HierarchicalSoftmaxObjectiveImpl hs({5, 4, 3, 2, 1}, 2, /*sparse=*/false);
  hs.to(torch::kDouble);
  EXPECT_EQ(hs.path_nodes.sizes(), (std::vector<int64_t>{5, 3}));
  torch::NoGradGuard no_grad;
  hs.node_vectors->weight.copy_(torch::tensor({{1.0, 0.0}, {0.0, 0.5}, {2.0, 2.0}, {-1.0, 1.0}}, torch::kDouble));
  // θ·h with h = [1, 2]: node 0 -> 1, node 1 -> 1, node 2 -> 6, node 3 -> 1.
  auto l = hs.loss(one_hidden(), torch::tensor({3}, torch::kLong));
  EXPECT_NEAR(l.item<double>(), -(log_sigmoid(1) + log_sigmoid(1) + log_sigmoid(-1)), 1e-12);
  // word 0: nodes {3, 2}, code {1, 1}: -log σ(-1) - log σ(-6).
  l = hs.loss(one_hidden(), torch::tensor({0}, torch::kLong));
  EXPECT_NEAR(l.item<double>(), -(log_sigmoid(-1) + log_sigmoid(-6)), 1e-12);
  // The leaf probabilities of a Huffman tree sum to 1 for any h.
  double total = 0;
  for (int64_t w = 0; w < 5; ++w) total += std::exp(-hs.loss(one_hidden(), torch::tensor({w}, torch::kLong)).item<double>());
  EXPECT_NEAR(total, 1.0, 1e-12);
}

TEST(Word2VecObjectives, SoftmaxByHand) {
  SoftmaxObjectiveImpl sm(3, 2);
  sm.to(torch::kDouble);
  torch::NoGradGuard no_grad;
  sm.output_vectors->weight.copy_(torch::tensor({{1.0, 0.0}, {0.0, 1.0}, {-1.0, 0.0}}, torch::kDouble));
  // logits θ·h = {1, 2, -1}; -log P(target 0) = log(e + e^2 + e^-1) - 1.
  auto l = sm.loss(one_hidden(), torch::tensor({0}, torch::kLong));
  EXPECT_NEAR(l.item<double>(), std::log(std::exp(1.0) + std::exp(2.0) + std::exp(-1.0)) - 1.0, 1e-12);
}

// ---- objectives: gradients against central differences, in double precision ----

namespace {

// Checks d loss / d hidden and d loss / d (every output parameter) of `objective` at random
// points. `sparse_twin`, if given, is the same objective with sparse gradients: its gradient
// must equal the dense one.
void check_gradients(Word2VecObjectiveImpl& objective, const torch::Tensor& targets, const torch::Tensor& negatives,
                     Word2VecObjectiveImpl* sparse_twin = nullptr) {
  torch::manual_seed(3);
  objective.to(torch::kDouble);
  auto params = objective.parameters();
  ASSERT_EQ(params.size(), 1u);
  auto& weight = params[0];
  {
    torch::NoGradGuard no_grad;
    weight.copy_(torch::randn_like(weight) * 0.7);
  }
  auto hidden = (torch::randn({targets.size(0), weight.size(1)}, torch::kDouble) * 0.7).requires_grad_(true);
  objective.zero_grad();
  auto loss = objective.loss(hidden, targets, negatives);
  loss.backward();
  const auto grad_h = hidden.grad().clone();
  const auto grad_w = weight.grad().is_sparse() ? weight.grad().to_dense() : weight.grad().clone();
  const double eps = 1e-6;
  auto f = [&] {
    torch::NoGradGuard no_grad;
    return objective.loss(hidden, targets, negatives).item<double>();
  };
  for (int64_t i = 0; i < hidden.numel(); ++i) {
    auto flat = hidden.detach().view(-1);
    const double x = flat[i].item<double>();
    flat[i] = x + eps;
    const double up = f();
    flat[i] = x - eps;
    const double down = f();
    flat[i] = x;
    EXPECT_NEAR(grad_h.view(-1)[i].item<double>(), (up - down) / (2 * eps), 1e-6) << "hidden " << i;
  }
  for (int64_t i = 0; i < weight.numel(); ++i) {
    auto flat = weight.detach().view(-1);
    const double x = flat[i].item<double>();
    flat[i] = x + eps;
    const double up = f();
    flat[i] = x - eps;
    const double down = f();
    flat[i] = x;
    EXPECT_NEAR(grad_w.view(-1)[i].item<double>(), (up - down) / (2 * eps), 1e-6) << "weight " << i;
  }
  if (sparse_twin != nullptr) {
    sparse_twin->to(torch::kDouble);
    auto twin_weight = sparse_twin->parameters()[0];
    {
      torch::NoGradGuard no_grad;
      twin_weight.copy_(weight);
    }
    sparse_twin->zero_grad();
    auto h = hidden.detach().clone().requires_grad_(true);
    sparse_twin->loss(h, targets, negatives).backward();
    ASSERT_TRUE(twin_weight.grad().is_sparse());
    EXPECT_LT(test::max_diff(twin_weight.grad().to_dense(), grad_w), 1e-12);
    EXPECT_LT(test::max_diff(h.grad(), grad_h), 1e-12);
  }
}

}  // namespace

TEST(Word2VecObjectives, GradientsMatchFiniteDifferences) {
  // Repeated targets and noise words check that the rows' gradients add up.
  const auto targets = torch::tensor({0, 3, 3, 5}, torch::kLong);
  const auto negatives = torch::tensor({{1, 2, 5}, {0, 0, 4}, {3, 1, 2}, {5, 5, 1}}, torch::kLong);
  const std::vector<int64_t> counts = {9, 7, 5, 4, 2, 1};
  {
    SCOPED_TRACE("ns");
    NegativeSamplingObjectiveImpl dense(6, 3, false, 3, NoiseSampler(counts));
    NegativeSamplingObjectiveImpl sparse(6, 3, true, 3, NoiseSampler(counts));
    check_gradients(dense, targets, negatives, &sparse);
  }
  {
    SCOPED_TRACE("hs");
    HierarchicalSoftmaxObjectiveImpl dense(counts, 3, false), sparse(counts, 3, true);
    check_gradients(dense, targets, {}, &sparse);
  }
  {
    // Averaged node gradients: the value is the same, each node row's gradient is the true one
    // divided by the examples through that node (root: all 4; node 0: those of words 4 and 5).
    SCOPED_TRACE("hs mean");
    HierarchicalSoftmaxObjectiveImpl sum(counts, 3, true), mean(counts, 3, true, /*mean_node_gradient=*/true);
    sum.to(torch::kDouble);
    mean.to(torch::kDouble);
    torch::manual_seed(5);
    {
      torch::NoGradGuard no_grad;
      sum.node_vectors->weight.copy_(torch::randn({5, 3}, torch::kDouble));
      mean.node_vectors->weight.copy_(sum.node_vectors->weight);
    }
    auto h = torch::randn({4, 3}, torch::kDouble);
    auto ls = sum.loss(h, targets), lm = mean.loss(h, targets);
    EXPECT_DOUBLE_EQ(ls.item<double>(), lm.item<double>());
    ls.backward();
    lm.backward();
    auto through = torch::zeros({5}, torch::kDouble);
    const auto paths = huffman_tree(counts);
    for (int64_t t : {0, 3, 3, 5})
      for (int64_t node : paths[t].nodes) through[node] += 1;
    EXPECT_EQ(through[4].item<double>(), 4.0);  // the root
    auto want = sum.node_vectors->weight.grad().to_dense() / through.clamp_min(1).unsqueeze(1);
    EXPECT_LT(test::max_diff(mean.node_vectors->weight.grad().to_dense(), want), 1e-12);
  }
  {
    SCOPED_TRACE("softmax");
    SoftmaxObjectiveImpl softmax(6, 3);
    check_gradients(softmax, targets, {});
  }
}

// CBOW's hidden vector is the mean of the context's input vectors; Skip-Gram's the centre's.
TEST(Word2VecModel, HiddenVectorsOfSkipGramAndCbow) {
  torch::manual_seed(4);
  const std::vector<int64_t> counts = {5, 4, 3, 2, 1};
  Word2Vec cbow(Word2VecOptions(5, 4).model(Word2VecModel::kCbow).objective(Word2VecObjective::kHierarchicalSoftmax), counts);
  // Initialisation as word2vec.c: v in [-0.5/D, 0.5/D], output parameters zero.
  EXPECT_LE(cbow->input_vectors->weight.abs().max().item<double>(), 0.5 / 4);
  EXPECT_EQ(cbow->objective->parameters()[0].abs().sum().item<double>(), 0.0);
  cbow->to(torch::kDouble);
  {
    torch::NoGradGuard no_grad;
    for (auto& p : cbow->parameters()) p.copy_(torch::randn_like(p));
  }
  auto& hs = static_cast<HierarchicalSoftmaxObjectiveImpl&>(*cbow->objective);
  auto v = cbow->input_vectors->weight;
  // Two examples: context {1, 2, 4} -> centre 0, context {3} -> centre 2.
  auto l = cbow->cbow_loss(torch::tensor({1, 2, 4, 3}, torch::kLong), torch::tensor({0, 3}, torch::kLong),
                           torch::tensor({0, 2}, torch::kLong));
  auto h = torch::stack({(v[1] + v[2] + v[4]) / 3, v[3]});
  EXPECT_NEAR(l.item<double>(), hs.loss(h, torch::tensor({0, 2}, torch::kLong)).item<double>(), 1e-10);
  l.backward();
  EXPECT_TRUE(v.grad().is_sparse());

  Word2Vec sg(Word2VecOptions(5, 4).objective(Word2VecObjective::kHierarchicalSoftmax), counts);
  sg->to(torch::kDouble);
  auto pairs = sg->skip_gram_loss(torch::tensor({1, 1}, torch::kLong), torch::tensor({0, 4}, torch::kLong));
  auto& hs2 = static_cast<HierarchicalSoftmaxObjectiveImpl&>(*sg->objective);
  auto v1 = sg->input_vectors->weight[1].unsqueeze(0);
  EXPECT_NEAR(pairs.item<double>(), (hs2.loss(v1, torch::tensor({0}, torch::kLong)) +
                                     hs2.loss(v1, torch::tensor({4}, torch::kLong))).item<double>(), 1e-10);
  EXPECT_THROW(Word2Vec(Word2VecOptions(5, 4), std::vector<int64_t>{1, 2}), std::invalid_argument);
  EXPECT_THROW(Word2Vec(Word2VecOptions(5, 4).negative(0), counts), std::invalid_argument);
}

// ---- dynamic windows ----

TEST(Word2VecWindows, DynamicWindowPairs) {
  const std::vector<int32_t> sentence = {10, 11, 12, 13, 14};
  // window 1: b is always 1, every neighbour pair.
  std::mt19937_64 rng(1);
  std::vector<int64_t> centre, context;
  skip_gram_pairs(sentence, 1, rng, centre, context);
  EXPECT_EQ(centre, (std::vector<int64_t>{10, 11, 11, 12, 12, 13, 13, 14}));
  EXPECT_EQ(context, (std::vector<int64_t>{11, 10, 12, 11, 13, 12, 14, 13}));

  // window 3 with a fixed seed: the reduced windows b_i = 1 + r_i % 3 from the generator's
  // first five numbers give the pairs.
  std::mt19937_64 draws(42);
  std::vector<int64_t> b;
  for (int i = 0; i < 5; ++i) b.push_back(1 + static_cast<int64_t>(draws() % 3));
  std::vector<int64_t> want_centre, want_context;
  for (int64_t i = 0; i < 5; ++i)
    for (int64_t j = std::max<int64_t>(0, i - b[i]); j <= std::min<int64_t>(4, i + b[i]); ++j)
      if (j != i) {
        want_centre.push_back(sentence[i]);
        want_context.push_back(sentence[j]);
      }
  std::mt19937_64 rng42(42);
  centre.clear();
  context.clear();
  skip_gram_pairs(sentence, 3, rng42, centre, context);
  EXPECT_EQ(centre, want_centre);
  EXPECT_EQ(context, want_context);
  // Over many draws every b in {1, 2, 3} occurs about equally: the mean pair count of the
  // middle word (2b) is 4.
  std::mt19937_64 many(7);
  int64_t middle_pairs = 0;
  for (int t = 0; t < 3000; ++t) {
    centre.clear();
    context.clear();
    skip_gram_pairs({1, 2, 3, 4, 5, 6, 7}, 3, many, centre, context);
    middle_pairs += std::count(centre.begin(), centre.end(), 4);
  }
  EXPECT_NEAR(middle_pairs / 3000.0, 4.0, 0.1);
  // One word has no context.
  centre.clear();
  skip_gram_pairs({7}, 5, rng, centre, context);
  EXPECT_TRUE(centre.empty());
}

TEST(Word2VecWindows, StridePermutationVisitsEveryBatchOnce) {
  for (int64_t n : {1, 2, 7, 12, 26518}) {
    std::set<std::pair<uint64_t, std::vector<int64_t>>> orders;
    for (uint64_t epoch = 0; epoch < 4; ++epoch) {
      std::vector<int64_t> order(n);
      for (int64_t i = 0; i < n; ++i) order[i] = stride_permutation(i, n, 1234, epoch);
      std::vector<int64_t> sorted = order;
      std::sort(sorted.begin(), sorted.end());
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(sorted[i], i) << "n " << n << " epoch " << epoch;
      orders.insert({0, order});
      EXPECT_EQ(stride_permutation(3 % n, n, 1234, epoch), order[3 % n]);  // the same every call
    }
    if (n >= 12) {
      EXPECT_GT(orders.size(), 1u) << n;  // epochs differ
    }
  }
}

TEST(Word2VecVocabulary, CountsSortedAndMinCount) {
  auto v = count_words({"b a c a", "  b\ta d\r", "a c"}, 2);
  EXPECT_EQ(v.words(), (std::vector<std::string>{"a", "b", "c"}));  // b and c tie at 2: byte order
  EXPECT_EQ(v.counts(), (std::vector<int64_t>{4, 2, 2}));
  EXPECT_EQ(v.total(), 8);
  EXPECT_EQ(v.find("d"), -1);
  EXPECT_EQ(v.find("c"), 2);
  auto back = WordVocabulary::from_text(v.to_text(), "vocab");
  EXPECT_EQ(back.words(), v.words());
  EXPECT_EQ(back.counts(), v.counts());
  EXPECT_NE(test::user_error_of([] { WordVocabulary::from_text("a 3\nb x\n", "v.txt"); }).find("v.txt:2"), std::string::npos);
  EXPECT_NE(test::user_error_of([] { WordVocabulary::from_text("a 3\nb 4\n", "v.txt"); }).find("v.txt:2"), std::string::npos);
  EncodedLines lines;
  lines.add("a d b", v);
  lines.add("", v);
  EXPECT_EQ(lines.ids, (std::vector<int32_t>{0, 1}));  // d is dropped
  EXPECT_EQ(lines.offsets, (std::vector<int64_t>{0, 2, 2}));
}

TEST(LrSchedule, LinearDecayToAFloor) {
  LrScheduleOptions o;
  o.kind = LrScheduleKind::kLinearDecay;
  o.lr = 0.025;
  o.decay_steps = 100;
  o.min_lr = 0.025 * 1e-4;
  LrSchedule s(o);
  EXPECT_DOUBLE_EQ(s.lr_at(1), 0.025);
  EXPECT_DOUBLE_EQ(s.lr_at(51), 0.0125);
  EXPECT_DOUBLE_EQ(s.lr_at(101), 0.025 * 1e-4);
  EXPECT_DOUBLE_EQ(s.lr_at(1000), 0.025 * 1e-4);
  auto c = Config::resolve(lr_schedule_schema(), "", {"--lr_schedule", "linear_decay"});
  EXPECT_NE(test::user_error_of([&] { lr_schedule_options(c); }).find("'decay_steps'"), std::string::npos);
}

TEST(Word2VecClipGradients, SparseGradientsAreCoalescedAndClipped) {
  auto dense = torch::zeros({4, 2}, torch::requires_grad());
  auto sparse = torch::zeros({4, 2}, torch::requires_grad());
  // Row 1 listed twice: its gradient is [3, 4] + [0, 8] = [3, 12].
  auto g = torch::sparse_coo_tensor(torch::tensor({{1, 3, 1}}, torch::kLong),
                                    torch::tensor({{3.0f, 4.0f}, {4.0f, 0.0f}, {0.0f, 8.0f}}), {4, 2});
  sparse.mutable_grad() = g;
  dense.mutable_grad() = g.to_dense();
  const double expected = std::sqrt(9.0 + 144 + 16);  // 13
  EXPECT_NEAR(clip_gradients({sparse}, 0.0), expected, 1e-5);
  EXPECT_TRUE(sparse.grad().is_sparse());
  EXPECT_NEAR(clip_gradients({sparse, dense}, 1.0), expected * std::sqrt(2.0), 1e-4);
  EXPECT_LT(test::max_diff(sparse.grad().to_dense(), dense.grad()), 1e-6);
  EXPECT_NEAR(dense.grad().pow(2).sum().item<double>() * 2, 1.0, 1e-5);
}

// ---- the task ----

namespace {

// Two "topics" that never share a sentence (test::write_topic_corpus), 400 lines, so a trained
// model puts each topic's words together.
void write_corpus(const fs::path& dir, int lines = 400) { test::write_topic_corpus(dir / "english.txt", lines); }

Config w2v_config(const std::vector<std::string>& extra = {}) {
  std::vector<std::string> o = {"--task", "word2vec", "--dim", "8", "--min_count", "2", "--batch_size", "200",
                                "--valid_every", "10", "--optimizer", "sgd", "--lr", "0.05", "--clip_norm", "0",
                                "--device", "cpu", "--log_interval", "1000", "--valid_interval", "0", "--sample", "0"};
  o.insert(o.end(), extra.begin(), extra.end());
  return Config::resolve(task_schema("word2vec"), "", o);
}

class Word2VecData : public ::testing::Test {
 protected:
  void SetUp() override {
    torch::set_num_threads(1);
    root_ = test::fresh_temp_dir("w2v");
    write_corpus(root_ / "data");
  }
  void TearDown() override { fs::remove_all(root_); }
  TaskContext context(const std::string& run, std::set<Split> splits = {Split::kTrain, Split::kValid}) const {
    return {(root_ / "data").string(), (root_ / run).string(), std::move(splits), false};
  }
  fs::path root_;
};

double cosine(const torch::Tensor& a, const torch::Tensor& b) {
  return (a.dot(b) / (a.norm() * b.norm())).item<double>();
}

}  // namespace

TEST_F(Word2VecData, VocabularySplitsAndBatches) {
  Config c = w2v_config();
  Word2VecTask task;
  task.setup(c, context("run"));
  // 14 words (a, the and 12 topic words), by decreasing count.
  const auto& v = task.vocabulary();
  EXPECT_EQ(v.size(), 14);
  EXPECT_EQ(v.counts()[v.find("a")], 200);   // the 200 numbers lines
  EXPECT_EQ(v.counts()[v.find("the")], 160);  // the 200 animal lines less the 40 held out
  EXPECT_EQ(v.total(), 360 * 7);  // 40 of 400 lines held out
  EXPECT_EQ(read_file((root_ / "run" / "vocab.txt").string()), v.to_text());
  EXPECT_EQ(task.lines(Split::kValid).num_lines(), 40);
  EXPECT_EQ(task.artifacts().at("vocab.txt"), v.to_text());

  // Batches of whole lines with >= 200 words: 29 lines (203 words) each, then the rest.
  const int64_t n = task.num_batches(Split::kTrain, 0);
  EXPECT_EQ(n, (360 + 28) / 29);
  int64_t words = 0, pairs = 0;
  for (int64_t i = 0; i < n; ++i) {
    auto b = task.make_batch(Split::kTrain, 0, i);
    words += b.num_tokens;
    pairs += b.num_examples;
    EXPECT_EQ(b.tensors.at("negatives").sizes(), (std::vector<int64_t>{b.num_examples, 5}));
    EXPECT_EQ(b.tensors.at("centre").sizes(), (std::vector<int64_t>{b.num_examples}));
  }
  EXPECT_EQ(words, 360 * 7);
  // Each of 7 words per line has 1..5 neighbours on each side: between 12 and 42 pairs a line.
  EXPECT_GT(pairs, 360 * 12);
  EXPECT_LT(pairs, 360 * 42);
  // Deterministic per (epoch, index); another epoch draws other windows.
  auto b0 = task.make_batch(Split::kTrain, 0, 1), b0again = task.make_batch(Split::kTrain, 0, 1);
  EXPECT_TRUE(torch::equal(b0.tensors.at("context"), b0again.tensors.at("context")));
  EXPECT_TRUE(torch::equal(b0.tensors.at("negatives"), b0again.tensors.at("negatives")));
  auto b1 = task.make_batch(Split::kTrain, 1, 1);
  EXPECT_FALSE(b1.num_examples == b0.num_examples && torch::equal(b1.tensors.at("context"), b0.tensors.at("context")));
  // The valid split is the same sample whatever the epoch.
  EXPECT_TRUE(torch::equal(task.make_batch(Split::kValid, 0, 0).tensors.at("context"),
                           task.make_batch(Split::kValid, 3, 0).tensors.at("context")));
  EXPECT_THROW(task.make_batch(Split::kTrain, 0, n), std::out_of_range);
}

// Skip-Gram pairs train as word2vec.c and gensim update: the context word's input vector
// predicts the centre word (centre -> context scored 0.60 analogy points lower on the English
// corpus, 12 seeds).
// On a batch of three pairs and random parameters, both loss paths (autograd with grad mode,
// the in-place kernel at rate 0 without) score it that way round, and one in-place step moves
// the context words' input rows, never the centre words'; for ns and hs.
TEST_F(Word2VecData, SkipGramPairsPredictTheCentreFromTheContext) {
  for (const char* objective : {"ns", "hs"}) {
    SCOPED_TRACE(objective);
    Config c = w2v_config({"--objective", objective});
    Word2VecTask task;
    task.setup(c, context(std::string("run_") + objective));
    auto& model = task.word2vec();
    auto& input = model.input_vectors->weight;
    {
      torch::NoGradGuard no_grad;
      torch::manual_seed(3);
      for (auto& p : model.parameters()) p.normal_(0, 0.5);
    }
    Batch b;
    b.tensors["centre"] = torch::tensor({1, 2, 3}, torch::kLong);
    b.tensors["context"] = torch::tensor({4, 5, 6}, torch::kLong);
    if (std::string(objective) == "ns") b.tensors["negatives"] = torch::tensor({{7, 8}, {9, 10}, {11, 12}}, torch::kLong);
    b.num_examples = 3;
    b.num_tokens = 6;
    const auto& t = b.tensors;
    const auto negatives = t.count("negatives") ? t.at("negatives") : torch::Tensor();
    const double want = model.skip_gram_loss(t.at("context"), t.at("centre"), negatives).item<double>();
    const double reversed = model.skip_gram_loss(t.at("centre"), t.at("context"), negatives).item<double>();
    EXPECT_NEAR(task.loss(b).loss_sum.item<double>(), want, 1e-4 * std::abs(want));
    {
      torch::NoGradGuard no_grad;
      EXPECT_NEAR(task.loss(b).loss_sum.item<double>(), want, 1e-4 * std::abs(want));
    }
    EXPECT_GT(std::abs(want - reversed), 0.1) << want << " vs " << reversed;
    const auto before = input.detach().clone();
    task.train_in_place(b, 0.5);
    const auto moved = (input.detach() - before).abs().sum(1).gt(0);
    EXPECT_TRUE(moved.index_select(0, t.at("context")).all().item<bool>());
    EXPECT_FALSE(moved.index_select(0, t.at("centre")).any().item<bool>());
  }
}

TEST_F(Word2VecData, CbowBatchesAndSubsampling) {
  Config c = w2v_config({"--model", "cbow", "--objective", "hs", "--sample", "0.01"});
  Word2VecTask task;
  task.setup(c, context("run"));
  auto b = task.make_batch(Split::kTrain, 0, 0);
  const auto& offsets = b.tensors.at("offsets");
  const auto& ctx = b.tensors.at("context");
  ASSERT_EQ(offsets.size(0), b.num_examples);
  EXPECT_EQ(b.tensors.count("negatives"), 0u);
  EXPECT_EQ(offsets[0].item<int64_t>(), 0);
  // Each example has 1..10 context words.
  auto sizes = torch::diff(torch::cat({offsets, torch::tensor({ctx.size(0)})}));
  EXPECT_GE(sizes.min().item<int64_t>(), 1);
  EXPECT_LE(sizes.max().item<int64_t>(), 10);
  // Subsampling at t = 0.01 * 2520 = 25.2 keeps a word seen 200 times with probability
  // (sqrt(200/25.2) + 1) * 25.2/200 = 0.48: about half the words are kept, and nearly each kept
  // word is an example (all but those left alone in their line, ~7/128 of the lines).
  int64_t examples = 0, words = 0;
  for (int64_t i = 0; i < task.num_batches(Split::kTrain, 0); ++i) {
    auto batch = task.make_batch(Split::kTrain, 0, i);
    examples += batch.num_examples;
    words += batch.num_tokens;
  }
  const auto& v = task.vocabulary();
  double kept = 0;
  for (int64_t w = 0; w < v.size(); ++w) kept += v.counts()[w] * keep_probability(v.counts()[w], v.total(), 0.01);
  EXPECT_NEAR(keep_probability(200, 2520, 0.01), (std::sqrt(200 / 25.2) + 1) * 25.2 / 200, 1e-12);
  EXPECT_LT(kept, 0.6 * 2520);
  EXPECT_NEAR(examples, 0.985 * kept, 0.04 * kept);
  EXPECT_EQ(words, 360 * 7);
}

// Every model and objective learns the tiny corpus: the valid loss falls, and words of a topic
// end up closer to each other than to the other topic's.
TEST_F(Word2VecData, TinyCorpusTrainsAndLossFalls) {
  for (const char* inplace : {"true", "false"})
  for (const char* model : {"skipgram", "cbow"})
    for (const char* objective : {"ns", "hs", "softmax"}) {
      if (std::string(inplace) == "false" && std::string(objective) == "softmax") continue;  // always autograd
      SCOPED_TRACE(std::string(model) + "/" + objective + "/inplace_sgd=" + inplace);
      torch::manual_seed(1);
      const std::string run = std::string("run_") + model + "_" + objective + "_" + inplace;
      // Batches of 3 lines: on 14 words, larger summed batches diverge with autograd (see
      // word2vec_task.h); in-place updates are sequential and do not mind.
      Config c = w2v_config({"--model", model, "--objective", objective, "--max_epochs", "8", "--lr", "0.025",
                             "--lr_schedule", "linear_decay", "--min_lr", "1e-4", "--batch_size", "20",
                             "--inplace_sgd", inplace});
      Word2VecTask task;
      task.setup(c, context(run));
      const double before = evaluate_loss(task, Split::kValid, torch::kCPU).loss;
      ASSERT_EQ(Trainer(task, c, "word2vec", (root_ / run).string()).train(false), 0);
      // The Trainer derived decay_steps from max_epochs and the batches per epoch, and saved it.
      const auto saved = Config::from_ini_text(task_schema("word2vec"), read_file((root_ / run / "config.ini").string()), "x");
      EXPECT_EQ(saved.get("decay_steps"), std::to_string(8 * task.num_batches(Split::kTrain, 0)));
      const double after = evaluate_loss(task, Split::kValid, torch::kCPU).loss;
      EXPECT_LT(after, 0.8 * before) << before << " -> " << after;
      const auto wv = task.word_vectors();
      ASSERT_EQ(wv.size(), task.vocabulary().size());
      EXPECT_EQ(wv.words(), task.vocabulary().words());
      EXPECT_EQ(wv.dim(), 8);
      auto vec = [&](const std::string& w) { return wv.vectors()[wv.find(w)]; };
      EXPECT_GT(cosine(vec("cat"), vec("dog")), cosine(vec("cat"), vec("two")));
      EXPECT_GT(cosine(vec("one"), vec("six")), cosine(vec("one"), vec("fox")));
    }
}

// Sparse gradients through the Trainer with clipping on, then the checkpoint alone rebuilds the
// model (vocabulary from the artifact) with the same vectors.
TEST_F(Word2VecData, SparseTrainerCheckpointAndReload) {
  torch::manual_seed(2);
  Config c = w2v_config({"--max_steps", "6", "--clip_norm", "0.5", "--valid_interval", "3", "--inplace_sgd", "false"});
  Word2VecTask task;
  task.setup(c, context("run"));
  ASSERT_EQ(Trainer(task, c, "word2vec", (root_ / "run").string()).train(false), 0);
  EXPECT_TRUE(task.word2vec().input_vectors->weight.grad().is_sparse());
  const auto ckpt = (root_ / "run" / "checkpoint_last.pt").string();
  EXPECT_EQ(read_checkpoint_header(ckpt).artifacts.at("vocab.txt"), task.vocabulary().to_text());
  auto run = load_run(ckpt, torch::kCPU, "/nonexistent");  // no corpus needed
  auto& back = dynamic_cast<Word2VecTask&>(*run.task);
  EXPECT_EQ(back.vocabulary().words(), task.vocabulary().words());
  EXPECT_TRUE(torch::equal(back.word_vectors().vectors(), task.word_vectors().vectors()));
  // A trained vector differs from its initial value (the step did update the sparse rows).
  torch::manual_seed(2);
  Config fresh = w2v_config();
  Word2VecTask untrained;
  untrained.setup(fresh, context("fresh"));
  EXPECT_GT(test::max_diff(untrained.word_vectors().vectors(), task.word_vectors().vectors()), 1e-4);

  // Resume continues from the run's vocab.txt.
  Config c2 = w2v_config({"--max_steps", "8", "--clip_norm", "0.5", "--valid_interval", "3", "--inplace_sgd", "false"});
  Word2VecTask resumed;
  resumed.setup(c2, {(root_ / "data").string(), (root_ / "run").string(), {Split::kTrain, Split::kValid}, true});
  ASSERT_EQ(Trainer(resumed, c2, "word2vec", (root_ / "run").string()).train(true), 0);
  EXPECT_EQ(read_checkpoint_header(ckpt).state.step, 8);
}

// In-place SGD through the Trainer on one thread: a run stopped and resumed ends with exactly the
// parameters of a run made in one go (each batch remade from its seed, the kernel deterministic),
// and the in-place path forms no gradient.
TEST_F(Word2VecData, InPlaceResumeIsExact) {
  for (const char* objective : {"ns", "hs"}) {
    SCOPED_TRACE(objective);
    auto config = [&](const char* steps) {
      return w2v_config({"--objective", objective, "--batch_size", "40", "--lr_schedule", "linear_decay",
                         "--decay_steps", "20", "--valid_interval", "3", "--max_steps", steps});
    };
    const std::string once = std::string("once_") + objective, twice = std::string("twice_") + objective;
    torch::manual_seed(4);
    Config a = config("7");
    Word2VecTask straight;
    straight.setup(a, context(once));
    ASSERT_EQ(Trainer(straight, a, "word2vec", (root_ / once).string()).train(false), 0);
    EXPECT_FALSE(straight.word2vec().input_vectors->weight.grad().defined());

    torch::manual_seed(4);
    Config b = config("4");
    Word2VecTask first;
    first.setup(b, context(twice));
    ASSERT_EQ(Trainer(first, b, "word2vec", (root_ / twice).string()).train(false), 0);
    EXPECT_GT(test::max_diff(first.word_vectors().vectors(), straight.word_vectors().vectors()), 1e-6);
    Config b2 = config("7");
    Word2VecTask resumed;
    resumed.setup(b2, {(root_ / "data").string(), (root_ / twice).string(), {Split::kTrain, Split::kValid}, true});
    ASSERT_EQ(Trainer(resumed, b2, "word2vec", (root_ / twice).string()).train(true), 0);
    for (auto& p : straight.word2vec().named_parameters())
      EXPECT_TRUE(torch::equal(p.value(), resumed.word2vec().named_parameters()[p.key()])) << p.key();
  }
}

TEST_F(Word2VecData, DenseGradientsWithAdam) {
  torch::manual_seed(3);
  Config c = w2v_config({"--sparse", "false", "--optimizer", "adam", "--lr", "0.01", "--max_steps", "3",
                         "--clip_norm", "1.0", "--objective", "hs", "--inplace_sgd", "false"});
  Word2VecTask task;
  task.setup(c, context("run"));
  const torch::Tensor before = task.word2vec().input_vectors->weight.detach().clone();
  ASSERT_EQ(Trainer(task, c, "word2vec", (root_ / "run").string()).train(false), 0);
  const torch::Tensor weight = task.word2vec().input_vectors->weight;
  ASSERT_TRUE(weight.grad().defined());
  EXPECT_FALSE(weight.grad().is_sparse());
  // Adam moved the rows the batches used: every row with a gradient in the last step differs from
  // its value before training (a run whose optimizer never stepped fails here).
  const torch::Tensor used = weight.grad().ne(0).any(1), moved = weight.detach().ne(before).any(1);
  ASSERT_GT(used.sum().item<int64_t>(), 0) << "the last step left no gradient";
  EXPECT_TRUE(moved.index({used}).all().item<bool>())
      << used.sum().item<int64_t>() << " rows had a gradient, " << moved.sum().item<int64_t>() << " moved";
}

TEST_F(Word2VecData, BadInputNamesTheFileOrKey) {
  // Bad values name their key, before the corpus is read (here it does not even exist).
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"window", "0"}, {"dim", "-3"}, {"min_count", "0"}, {"batch_size", "0"}, {"sample", "-1"},
           {"negative", "0"}, {"valid_every", "1"}, {"sparse", "maybe"}}) {
    Config bad = w2v_config({"--" + key + "=" + value});  // one token: "-3" would read as a flag
    Word2VecTask t;
    auto err = test::user_error_of([&] { t.setup(bad, {(root_ / "none").string(), "", {Split::kTrain}, false}); });
    EXPECT_NE(err.find("'" + key + "'"), std::string::npos) << key << ": " << err;
  }
  // Trainer keys the update rule cannot use are the Trainer's to refuse: the task reports its
  // optimizers (Task::TrainingProfile) and reads no Trainer key.
  const auto trainer_error = [&](Config c) {
    Word2VecTask t;
    t.setup(c, context("r"));
    return test::user_error_of([&] { Trainer(t, c, "word2vec", (root_ / "r").string()); });
  };
  for (const char* key : {"momentum", "weight_decay"}) {
    auto err = trainer_error(w2v_config({std::string("--") + key + "=0.9"}));
    EXPECT_NE(err.find(std::string("'") + key + "'"), std::string::npos) << err;
  }
  EXPECT_NE(trainer_error(w2v_config({"--optimizer", "adam"})).find("'sparse'"), std::string::npos);
  EXPECT_NE(trainer_error(w2v_config({"--optimizer", "adam", "--sparse", "false"})).find("'inplace_sgd'"),
            std::string::npos);
  // linear_decay over the whole run needs the run's length.
  EXPECT_NE(trainer_error(w2v_config({"--lr_schedule", "linear_decay", "--max_epochs", "0", "--max_steps", "0"}))
                .find("'decay_steps'"),
            std::string::npos);
  auto err = test::user_error_of([] { Config::resolve(task_schema("word2vec"), "", {"--model", "glove"}); });
  EXPECT_NE(err.find("'model'"), std::string::npos) << err;
  err = test::user_error_of([] { Config::resolve(task_schema("word2vec"), "", {"--objective", "nce"}); });
  EXPECT_NE(err.find("'objective'"), std::string::npos) << err;

  // A missing file, an empty one, one without a frequent word, one too short to hold out a line.
  const auto missing = (root_ / "nowhere" / "english.txt").string();
  Config c = w2v_config();
  Word2VecTask t1;
  err = test::user_error_of([&] { t1.setup(c, {(root_ / "nowhere").string(), "", {Split::kTrain}, false}); });
  EXPECT_NE(err.find(missing), std::string::npos) << err;
  EXPECT_NE(err.find("nlpzoo data english"), std::string::npos) << err;

  const auto file = (root_ / "data" / "english.txt").string();
  atomic_write_text(file, "");
  Word2VecTask t2;
  err = test::user_error_of([&] { t2.setup(c, context("r2")); });
  EXPECT_NE(err.find(file), std::string::npos) << err;
  EXPECT_NE(err.find("empty"), std::string::npos) << err;

  atomic_write_text(file, "every word here is rare\n");
  Word2VecTask t3;
  err = test::user_error_of([&] { t3.setup(c, context("r3")); });
  EXPECT_NE(err.find("min_count=2"), std::string::npos) << err;

  atomic_write_text(file, "a b a b\na b\na b\n");  // 3 lines: none is line 10
  Word2VecTask t4;
  err = test::user_error_of([&] { t4.setup(c, context("r4")); });
  EXPECT_NE(err.find("valid_every=10"), std::string::npos) << err;

  Word2VecTask t5;
  err = test::user_error_of([&] { t5.setup(c, context("r5", {Split::kTest})); });
  EXPECT_NE(err.find("test split"), std::string::npos) << err;
}

// ---- subwords (Bojanowski et al. 2017) ----

namespace {

// The mean of `rows` of the model's input table: [D].
torch::Tensor mean_of_rows(Word2VecTask& task, const std::vector<int64_t>& rows) {
  return task.word2vec().input_vectors->weight.detach().index_select(0, torch::tensor(rows, torch::kLong)).mean(0);
}

}  // namespace

// The subword Skip-Gram batch holds the plain run's pairs (same draws), each as a bag of the
// centre word's rows predicting the context word; its loss is the objective at the bags' means;
// vectors are the means of a word's rows (vocabulary) or of its n-gram rows (OOV).
TEST_F(Word2VecData, SubwordBatchesVectorsAndOov) {
  Config c = w2v_config({"--maxn", "4", "--bucket", "1000"});
  Word2VecTask task;
  task.setup(c, context("run"));
  const auto& vocab = task.vocabulary();
  const int64_t V = vocab.size();
  EXPECT_EQ(task.word2vec().input_vectors->weight.sizes(), (std::vector<int64_t>{V + 1000, 8}));
  Config plain_config = w2v_config();
  Word2VecTask plain;
  plain.setup(plain_config, context("plain"));
  const auto table = subword_rows(vocab.words(), 3, 4, 1000);
  auto b = task.make_batch(Split::kTrain, 0, 1), pb = plain.make_batch(Split::kTrain, 0, 1);
  ASSERT_EQ(b.num_examples, pb.num_examples);
  EXPECT_EQ(b.num_tokens, pb.num_tokens);
  EXPECT_TRUE(torch::equal(b.tensors.at("centre"), pb.tensors.at("context")));  // the targets
  EXPECT_TRUE(torch::equal(b.tensors.at("negatives"), pb.tensors.at("negatives")));
  const auto centres = pb.tensors.at("centre");
  std::vector<int64_t> words(centres.data_ptr<int64_t>(), centres.data_ptr<int64_t>() + centres.numel()), offsets;
  for (size_t i = 0; i < words.size(); ++i) offsets.push_back(static_cast<int64_t>(i));
  table.expand_bags(words, offsets);
  EXPECT_EQ(b.tensors.at("context").sizes(), (std::vector<int64_t>{static_cast<int64_t>(words.size())}));
  EXPECT_TRUE(torch::equal(b.tensors.at("context"), torch::tensor(words, torch::kLong)));
  EXPECT_TRUE(torch::equal(b.tensors.at("offsets"), torch::tensor(offsets, torch::kLong)));

  // The loss: hidden_i = mean of the rows of pair i's centre word.
  std::vector<torch::Tensor> hidden;
  for (int64_t i = 0; i < b.num_examples; ++i) {
    const int64_t w = centres[i].item<int64_t>();
    hidden.push_back(mean_of_rows(task, std::vector<int64_t>(table.rows.begin() + table.offsets[w],
                                                             table.rows.begin() + table.offsets[w + 1])));
  }
  const auto want = task.word2vec().objective->loss(torch::stack(hidden), b.tensors.at("centre"), b.tensors.at("negatives"));
  EXPECT_NEAR(task.loss(b).loss_sum.item<double>(), want.item<double>(), 1e-4);

  // "cat": its row and the rows of <ca, <cat, cat, cat>, at> (5 n-grams of 3..4 characters).
  const int64_t cat = vocab.find("cat");
  std::vector<int64_t> rows = {cat};
  for (int64_t h : ngram_buckets("cat", 3, 4, 1000)) rows.push_back(V + h);
  ASSERT_EQ(rows.size(), 6u);
  const auto wv = task.word_vectors();
  EXPECT_EQ(wv.words(), vocab.words());
  EXPECT_LT(test::max_diff(wv.vectors()[cat], mean_of_rows(task, rows)), 1e-7);
  // An OOV word: the mean of its n-gram rows only; a word without one has no vector.
  std::vector<int64_t> cats;
  for (int64_t h : ngram_buckets("cats", 3, 4, 1000)) cats.push_back(V + h);
  ASSERT_EQ(cats.size(), 7u);  // <ca <cat cat cats ats ats> ts>
  const auto oov = task.oov_vector("cats");
  ASSERT_TRUE(oov.has_value());
  EXPECT_LT(test::max_diff(*oov, mean_of_rows(task, cats)), 1e-7);
  EXPECT_FALSE(task.oov_vector("").has_value());  // "<>": no 3-gram
  EXPECT_FALSE(plain.oov_vector("cats").has_value());
  // Plain runs keep the word rows as they are.
  EXPECT_TRUE(torch::equal(plain.word_vectors().vectors(), plain.word2vec().input_vectors->weight.detach()));

  // CBOW: the bag of each example holds the rows of each of its context words.
  Config cc = w2v_config({"--maxn", "4", "--bucket", "1000", "--model", "cbow"}), pc = w2v_config({"--model", "cbow"});
  Word2VecTask cbow, plain_cbow;
  cbow.setup(cc, context("cbow"));
  plain_cbow.setup(pc, context("plain_cbow"));
  auto cb = cbow.make_batch(Split::kTrain, 0, 2), pcb = plain_cbow.make_batch(Split::kTrain, 0, 2);
  const auto pctx = pcb.tensors.at("context"), poff = pcb.tensors.at("offsets");
  std::vector<int64_t> cw(pctx.data_ptr<int64_t>(), pctx.data_ptr<int64_t>() + pctx.numel());
  std::vector<int64_t> co(poff.data_ptr<int64_t>(), poff.data_ptr<int64_t>() + poff.numel());
  table.expand_bags(cw, co);
  EXPECT_TRUE(torch::equal(cb.tensors.at("context"), torch::tensor(cw, torch::kLong)));
  EXPECT_TRUE(torch::equal(cb.tensors.at("offsets"), torch::tensor(co, torch::kLong)));
  EXPECT_TRUE(torch::equal(cb.tensors.at("centre"), pcb.tensors.at("centre")));
}

// Subword Skip-Gram and CBOW learn the tiny corpus as the plain models do.
TEST_F(Word2VecData, SubwordModelsTrain) {
  for (const char* model : {"skipgram", "cbow"})
  for (const char* in_place : {"true", "false"}) {
    SCOPED_TRACE(std::string(model) + " inplace_sgd " + in_place);
    torch::manual_seed(1);
    const std::string run = std::string("sub_") + model + in_place;
    Config c = w2v_config({"--model", model, "--maxn", "4", "--bucket", "1000", "--max_epochs", "8", "--lr", "0.025",
                           "--lr_schedule", "linear_decay", "--min_lr", "1e-4", "--batch_size", "20",
                           "--inplace_sgd", in_place});
    Word2VecTask task;
    task.setup(c, context(run));
    const double before = evaluate_loss(task, Split::kValid, torch::kCPU).loss;
    ASSERT_EQ(Trainer(task, c, "word2vec", (root_ / run).string()).train(false), 0);
    const double after = evaluate_loss(task, Split::kValid, torch::kCPU).loss;
    EXPECT_LT(after, 0.8 * before) << before << " -> " << after;
    // Autograd: sparse gradients of the rows used; in place: no gradient is ever formed.
    const auto& grad = task.word2vec().input_vectors->weight.grad();
    if (std::string(in_place) == "false") EXPECT_TRUE(grad.defined() && grad.is_sparse());
    else EXPECT_FALSE(grad.defined());
    const auto wv = task.word_vectors();
    auto vec = [&](const std::string& w) { return wv.vectors()[wv.find(w)]; };
    EXPECT_GT(cosine(vec("cat"), vec("dog")), cosine(vec("cat"), vec("two")));
    EXPECT_GT(cosine(vec("one"), vec("six")), cosine(vec("one"), vec("fox")));
  }
}

TEST_F(Word2VecData, BadSubwordKeysNameTheKey) {
  for (const auto& [key, flags] : std::vector<std::pair<std::string, std::vector<std::string>>>{
           {"minn", {"--minn=0"}}, {"maxn", {"--maxn", "2"}}, {"maxn", {"--maxn=-1"}},
           {"bucket", {"--maxn", "6", "--bucket=0"}}}) {
    Config bad = w2v_config(flags);
    Word2VecTask t;
    auto err = test::user_error_of([&] { t.setup(bad, {(root_ / "none").string(), "", {Split::kTrain}, false}); });
    EXPECT_NE(err.find("'" + key + "'"), std::string::npos) << key << ": " << err;
  }
  Config ok = w2v_config({"--bucket=0"});  // no subwords: bucket is not used
  Word2VecTask t;
  EXPECT_NO_THROW(t.setup(ok, context("ok")));
}

// `nlpzoo embed similar/analogy --run-dir` answers an OOV word from a subword run (checkpoint
// alone, config keys from it), and a plain run still says the word is not in the vocabulary.
TEST_F(Word2VecData, EmbedAnswersOovWordsOfSubwordRuns) {
  for (const bool subwords : {true, false}) {
    SCOPED_TRACE(subwords);
    const std::string run = subwords ? "sub" : "plain";
    std::vector<std::string> flags = {"--max_steps", "3", "--valid_interval", "3"};
    if (subwords) flags.insert(flags.end(), {"--maxn", "4", "--bucket", "1000"});
    Config c = w2v_config(flags);
    Word2VecTask task;
    task.setup(c, context(run));
    ASSERT_EQ(Trainer(task, c, "word2vec", (root_ / run).string()).train(false), 0);
    const auto dir = test::shell_quote((root_ / run).string());
    auto r = test::run_cli("embed similar cats --run-dir " + dir + " -k 3");
    auto a = test::run_cli("embed analogy cat cats dog --run-dir " + dir + " -k 2");
    if (subwords) {
      ASSERT_EQ(r.status, 0) << r.out << r.err;
      EXPECT_NE(r.out.find("rank"), std::string::npos) << r.out;
      EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 4) << r.out;  // header + 3 neighbours
      ASSERT_EQ(a.status, 0) << a.out << a.err;
      const auto answers = a.out.substr(a.out.find("rank"));  // the query words are never answers
      EXPECT_EQ(std::count(answers.begin(), answers.end(), '\n'), 3) << a.out;
      EXPECT_EQ(answers.find("dog"), std::string::npos) << a.out;
      EXPECT_EQ(answers.find("cat "), std::string::npos) << a.out;
    } else {
      EXPECT_EQ(r.status, 1);
      EXPECT_NE(r.err.find("'cats' is not in the vocabulary"), std::string::npos) << r.err;
      EXPECT_EQ(a.status, 1);
      EXPECT_NE(a.err.find("'cats' is not in the vocabulary"), std::string::npos) << a.err;
    }
  }
}

// ---- the CLI ----

TEST(RegressionWord2Vec, TrainSkipGramFromTheCli) {
  const auto root = test::fresh_temp_dir("w2v_cli");
  write_corpus(root / "data", 2000);
  const auto run = (root / "run").string();
  const std::string config = std::string(NLPZOO_SOURCE_DIR) + "/configs/skipgram-ns.ini";
  auto r = test::run_cli("train --config " + test::shell_quote(config) + " --data-dir " +
                         test::shell_quote((root / "data").string()) + " --run-dir " + test::shell_quote(run) +
                         " --device cpu --max_epochs 2 --batch_size 1000 --valid_every 20 --dim 16 --log_interval 5");
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("word2vec: 14 words"), std::string::npos) << r.out;
  // word2vec speaks in words; perplexity and the gradient norm (in place: none) mean nothing here.
  EXPECT_NE(r.out.find("words/s"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("ppl"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("gnorm"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(run + "/vocab.txt"));
  EXPECT_TRUE(fs::exists(run + "/checkpoint_best.pt"));
  fs::remove_all(root);
}
