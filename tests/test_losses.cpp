#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "train/losses.h"

using namespace nlpzoo;

// p = softmax(0, 0, ln 2) = (1/4, 1/4, 1/2), gold class 2, eps = 0.1:
//   0.9 * -ln(1/2) + 0.1 * (ln 4 + ln 4 + ln 2) / 3 = 0.9 ln 2 + 0.1 * (5/3) ln 2
TEST(SequenceCrossEntropy, LabelSmoothingByHand) {
  auto logits = torch::tensor({0.0, 0.0, std::log(2.0), 5.0, -1.0, 2.0}, torch::kFloat64).view({1, 2, 3});
  auto targets = torch::tensor({2, 0}, torch::kInt64).view({1, 2});  // second position is padding
  const double expected = 0.9 * std::log(2.0) + 0.1 * (5.0 / 3.0) * std::log(2.0);
  EXPECT_NEAR(sequence_cross_entropy(logits, targets, /*pad_id=*/0, 0.1).item<double>(), expected, 1e-12);
  EXPECT_NEAR(sequence_cross_entropy(logits, targets, 0, 0.0).item<double>(), std::log(2.0), 1e-12);
}

TEST(SequenceCrossEntropy, SumsOverRealTokensOnly) {
  auto logits = torch::zeros({2, 3, 4});
  auto targets = torch::tensor({1, 2, 0, 3, 0, 0}, torch::kInt64).view({2, 3});
  // Uniform over 4 classes: ln 4 per real token, 3 real tokens.
  EXPECT_NEAR(sequence_cross_entropy(logits, targets, 0, 0.0).item<double>(), 3 * std::log(4.0), 1e-5);
  EXPECT_NEAR(sequence_cross_entropy(logits, targets, 0, 0.3).item<double>(), 3 * std::log(4.0), 1e-5);
}
