// word2vec's in-place SGD kernel (models/embeddings/word2vec_sgd.h) against autograd: one
// example's update equals loss.backward() + a plain SGD step on a copy of the model (pairs, a bag
// of one, and a bag of several with the full-e convention); a batch is the examples' steps in
// order; the returned loss; determinism on one thread; bad input.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "models/embeddings/word2vec.h"
#include "models/embeddings/word2vec_sgd.h"
#include "tests/test_util.h"

using namespace nlpzoo;

namespace {

const std::vector<int64_t> kCounts = {9, 7, 5, 4, 3, 2, 2, 1};  // V = 8
constexpr int64_t kDim = 6;
constexpr double kLr = 0.3;  // large, so that a wrong step is far from a right one

// A model with every parameter random (θ starts at 0 otherwise, which hides errors in e).
Word2Vec random_model(Word2VecObjective objective, uint64_t seed) {
  torch::manual_seed(seed);
  Word2Vec m(Word2VecOptions(8, kDim).objective(objective).sparse(false).negative(3), kCounts);
  torch::NoGradGuard no_grad;
  for (auto& p : m->parameters()) p.uniform_(-0.5, 0.5);
  return m;
}

Word2Vec copy_of(Word2VecObjective objective, Word2Vec& from) {
  auto m = random_model(objective, 99);
  torch::NoGradGuard no_grad;
  auto src = from->named_parameters();
  for (auto& p : m->named_parameters()) p.value().copy_(src[p.key()]);
  return m;
}

// Plain SGD on `loss`: p -= lr * scale(p) * grad, where inputs' step is multiplied by
// input_scale (the kernel's full-e convention for a bag). Returns the loss.
double autograd_step(Word2Vec& m, const torch::Tensor& loss, double input_scale = 1.0) {
  m->zero_grad();
  loss.backward();
  torch::NoGradGuard no_grad;
  for (auto& p : m->named_parameters()) {
    if (!p.value().grad().defined()) continue;
    const double s = p.key() == "input_vectors.weight" ? input_scale : 1.0;
    p.value().sub_(kLr * s * p.value().grad());
  }
  return loss.item<double>();
}

double max_param_diff(Word2Vec& a, Word2Vec& b) {
  double d = 0;
  auto pb = b->named_parameters();
  for (auto& p : a->named_parameters()) d = std::max(d, static_cast<double>(test::max_diff(p.value(), pb[p.key()])));
  return d;
}

const torch::Tensor kNone;

class Word2VecSgd : public ::testing::TestWithParam<Word2VecObjective> {};

}  // namespace

// A Skip-Gram pair: exactly one SGD step on the autograd loss; the loss is the autograd loss.
TEST_P(Word2VecSgd, PairIsOneAutogradStep) {
  auto kernel = random_model(GetParam(), 1), ref = copy_of(GetParam(), kernel);
  const auto centre = torch::tensor({2}, torch::kLong), context = torch::tensor({5}, torch::kLong);
  const auto negatives = torch::tensor({{0, 3, 7}}, torch::kLong);  // distinct, none is the target
  const bool ns = GetParam() == Word2VecObjective::kNegativeSampling;
  const double want = autograd_step(ref, ref->skip_gram_loss(centre, context, ns ? negatives : kNone));
  const double got = word2vec_sgd(kernel->input_vectors->weight, *kernel->objective,
                                  {centre, kNone, context, ns ? negatives : kNone}, kLr, 1);
  EXPECT_NEAR(got, want, 1e-5 * std::abs(want));
  EXPECT_LT(max_param_diff(kernel, ref), 1e-6);
  EXPECT_GT(test::max_diff(kernel->input_vectors->weight, random_model(GetParam(), 1)->input_vectors->weight), 1e-3);
}

// Bags: one row is exactly the autograd step on the mean; several rows move each input row by
// |bag| times the autograd step of the mean (word2vec.c's convention), θ exactly as autograd.
TEST_P(Word2VecSgd, BagsFollowTheFullErrorConvention) {
  const bool ns = GetParam() == Word2VecObjective::kNegativeSampling;
  const auto negatives = torch::tensor({{1, 6, 4}}, torch::kLong);
  for (const auto& rows : std::vector<std::vector<int64_t>>{{3}, {0, 6, 2}}) {
    SCOPED_TRACE(rows.size());
    auto kernel = random_model(GetParam(), 2), ref = copy_of(GetParam(), kernel);
    const auto inputs = torch::tensor(rows, torch::kLong), offsets = torch::tensor({0}, torch::kLong);
    const auto target = torch::tensor({7}, torch::kLong);
    const double want = autograd_step(ref, ref->cbow_loss(inputs, offsets, target, ns ? negatives : kNone),
                                      static_cast<double>(rows.size()));
    const double got = word2vec_sgd(kernel->input_vectors->weight, *kernel->objective,
                                    {inputs, offsets, target, ns ? negatives : kNone}, kLr, 1);
    EXPECT_NEAR(got, want, 1e-5 * std::abs(want));
    EXPECT_LT(max_param_diff(kernel, ref), 1e-6);
  }
}

// A batch is its examples' steps in order (the second sees the first's update: its rows overlap),
// over both layouts at once (two bags); the loss sums each example's loss before its own step.
TEST_P(Word2VecSgd, BatchIsSequentialSteps) {
  const bool ns = GetParam() == Word2VecObjective::kNegativeSampling;
  auto kernel = random_model(GetParam(), 3), ref = copy_of(GetParam(), kernel);
  const std::vector<std::vector<int64_t>> bags = {{1}, {1, 4}};
  const std::vector<int64_t> targets = {5, 6};
  const std::vector<std::vector<int64_t>> noise = {{0, 2, 3}, {0, 5, 7}};
  double want = 0;
  for (size_t b = 0; b < bags.size(); ++b)
    want += autograd_step(ref,
                          ref->cbow_loss(torch::tensor(bags[b], torch::kLong), torch::tensor({0}, torch::kLong),
                                         torch::tensor({targets[b]}, torch::kLong),
                                         ns ? torch::tensor(noise[b], torch::kLong).view({1, 3}) : kNone),
                          static_cast<double>(bags[b].size()));
  const SgdExamples ex{torch::tensor({1, 1, 4}, torch::kLong), torch::tensor({0, 1}, torch::kLong),
                       torch::tensor(targets, torch::kLong),
                       ns ? torch::tensor({0, 2, 3, 0, 5, 7}, torch::kLong).view({2, 3}) : kNone};
  const double got = word2vec_sgd(kernel->input_vectors->weight, *kernel->objective, ex, kLr, 1);
  EXPECT_NEAR(got, want, 1e-5 * std::abs(want));
  EXPECT_LT(max_param_diff(kernel, ref), 1e-6);
}

// Rate 0 (validation): the batch's autograd loss, summed over pairs and bags, with every
// parameter untouched, on one thread and on two.
TEST_P(Word2VecSgd, RateZeroIsTheAutogradLossAndWritesNothing) {
  const bool ns = GetParam() == Word2VecObjective::kNegativeSampling;
  auto kernel = random_model(GetParam(), 4), before = copy_of(GetParam(), kernel);
  const auto negatives = torch::tensor({0, 2, 3, 0, 5, 7, 1, 4, 6}, torch::kLong).view({3, 3});
  const auto targets = torch::tensor({5, 6, 2}, torch::kLong);
  for (bool bags : {false, true}) {
    SCOPED_TRACE(bags);
    const SgdExamples ex{bags ? torch::tensor({1, 1, 4, 0, 7, 3}, torch::kLong) : torch::tensor({1, 4, 7}, torch::kLong),
                         bags ? torch::tensor({0, 1, 3}, torch::kLong) : kNone, targets, ns ? negatives : kNone};
    torch::NoGradGuard no_grad;
    const double want = (bags ? before->cbow_loss(ex.inputs, ex.offsets, targets, ns ? negatives : kNone)
                              : before->skip_gram_loss(ex.inputs, targets, ns ? negatives : kNone))
                            .item<double>();
    for (int64_t threads : {1, 2}) {
      EXPECT_NEAR(word2vec_sgd(kernel->input_vectors->weight, *kernel->objective, ex, 0.0, threads), want,
                  1e-5 * std::abs(want));
      EXPECT_EQ(max_param_diff(kernel, before), 0.0);
    }
  }
}

// One thread: the same batch twice from the same start gives identical parameters; two threads
// (Hogwild) still give finite parameters and a loss close to it.
TEST_P(Word2VecSgd, OneThreadIsDeterministic) {
  const bool ns = GetParam() == Word2VecObjective::kNegativeSampling;
  torch::manual_seed(5);
  const int64_t n = 500;
  const SgdExamples ex{torch::randint(8, {n}, torch::kLong), kNone, torch::randint(8, {n}, torch::kLong),
                       ns ? torch::randint(8, {n, 3}, torch::kLong) : kNone};
  auto a = random_model(GetParam(), 4), b = random_model(GetParam(), 4), c = random_model(GetParam(), 4);
  const double la = word2vec_sgd(a->input_vectors->weight, *a->objective, ex, 0.025, 1);
  const double lb = word2vec_sgd(b->input_vectors->weight, *b->objective, ex, 0.025, 1);
  EXPECT_EQ(la, lb);
  EXPECT_EQ(max_param_diff(a, b), 0.0);
  const double lc = word2vec_sgd(c->input_vectors->weight, *c->objective, ex, 0.025, 2);
  EXPECT_NEAR(lc, la, 0.05 * la);
  for (auto& p : c->parameters()) EXPECT_TRUE(torch::isfinite(p).all().item<bool>());
}

TEST_P(Word2VecSgd, BadInputThrows) {
  auto m = random_model(GetParam(), 6);
  const bool ns = GetParam() == Word2VecObjective::kNegativeSampling;
  const auto neg = ns ? torch::zeros({1, 3}, torch::kLong) : kNone;
  auto run = [&](const SgdExamples& ex) { word2vec_sgd(m->input_vectors->weight, *m->objective, ex, 0.1, 1); };
  EXPECT_THROW(run({torch::tensor({8}, torch::kLong), kNone, torch::tensor({1}, torch::kLong), neg}),
               std::invalid_argument);  // input row outside the table
  EXPECT_THROW(run({torch::tensor({1}, torch::kLong), kNone, torch::tensor({-1}, torch::kLong), neg}),
               std::invalid_argument);
  EXPECT_THROW(run({torch::tensor({1, 2}, torch::kLong), torch::tensor({1}, torch::kLong),
                    torch::tensor({1}, torch::kLong), neg}),
               std::invalid_argument);  // offsets must start at 0
  EXPECT_THROW(run({torch::tensor({1.0}), kNone, torch::tensor({1}, torch::kLong), neg}), std::invalid_argument);
  if (ns) {
    EXPECT_THROW(run({torch::tensor({1}, torch::kLong), kNone, torch::tensor({1}, torch::kLong), kNone}),
                 std::invalid_argument);  // ns without negatives
  }
}

INSTANTIATE_TEST_SUITE_P(Objectives, Word2VecSgd,
                         ::testing::Values(Word2VecObjective::kNegativeSampling,
                                           Word2VecObjective::kHierarchicalSoftmax),
                         [](const auto& info) { return to_string(info.param); });

TEST(Word2VecSgdSoftmax, SoftmaxKeepsAutograd) {
  auto m = random_model(Word2VecObjective::kSoftmax, 7);
  EXPECT_THROW(word2vec_sgd(m->input_vectors->weight, *m->objective,
                            {torch::tensor({1}, torch::kLong), kNone, torch::tensor({2}, torch::kLong), kNone}, 0.1, 1),
               std::invalid_argument);
}
