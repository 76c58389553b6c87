#include <gtest/gtest.h>
#include <torch/torch.h>

#include "models/masked_softmax.h"
#include "models/seq2seq/attention.h"

using namespace nlpzoo;

// The course's worked example: encoder states (1,0), (0,1), (1,1), decoder state (0.8,0.2),
// dot scores (0.8, 0.2, 1.0) -> weights (0.361, 0.198, 0.441), context (0.802, 0.639).
TEST(Attention, DotWorkedExample) {
  auto h = torch::tensor({1.f, 0.f, 0.f, 1.f, 1.f, 1.f}).view({1, 3, 2});
  auto s = torch::tensor({0.8f, 0.2f}).view({1, 1, 2});
  auto dot = make_attention(AttentionType::kDot, 2, 2, 0);
  auto scores = dot->score(s, dot->project_keys(h));
  EXPECT_TRUE(torch::allclose(scores.view({3}), torch::tensor({0.8f, 0.2f, 1.0f})));
  auto [context, weights] = masked_attention(scores, torch::ones({1, 3}, torch::kBool), h);
  auto w = weights.view({3});
  EXPECT_NEAR(w[0].item<float>(), 0.361, 5e-4);
  EXPECT_NEAR(w[1].item<float>(), 0.198, 5e-4);
  EXPECT_NEAR(w[2].item<float>(), 0.441, 5e-4);
  EXPECT_NEAR(context.view({2})[0].item<float>(), 0.802, 5e-4);
  EXPECT_NEAR(context.view({2})[1].item<float>(), 0.639, 5e-4);
}

TEST(Attention, PaddingGetsExactlyZeroWeight) {
  torch::manual_seed(0);
  auto scores = torch::randn({2, 4, 5}) * 10;
  auto mask = torch::tensor({1, 1, 1, 0, 0, 1, 1, 1, 1, 1}, torch::kBool).view({2, 5});
  auto values = torch::randn({2, 5, 3});
  auto [context, weights] = masked_attention(scores, mask, values);
  EXPECT_EQ(weights.index({0, torch::indexing::Slice(), torch::indexing::Slice(3)}).abs().max().item<float>(), 0.f);
  EXPECT_TRUE(torch::allclose(weights.sum(-1), torch::ones({2, 4})));
  // Changing the values at padded positions cannot change the context.
  auto values2 = values.clone();
  values2.index_put_({0, torch::indexing::Slice(3)}, 1000.f);
  auto [context2, w2] = masked_attention(scores, mask, values2);
  EXPECT_TRUE(torch::equal(context, context2));
}

TEST(Attention, FullyMaskedRowIsFinite) {
  auto [context, weights] = masked_attention(torch::randn({1, 2, 3}), torch::zeros({1, 3}, torch::kBool),
                                             torch::randn({1, 3, 4}));
  EXPECT_TRUE(torch::isfinite(context).all().item<bool>());
  EXPECT_EQ(weights.abs().sum().item<float>(), 0.f);
}

TEST(Attention, AdditiveMatchesEquationAndHasGradients) {
  torch::manual_seed(1);
  auto att = std::dynamic_pointer_cast<AdditiveAttentionImpl>(make_attention(AttentionType::kAdditive, 4, 6, 5));
  ASSERT_TRUE(att);
  auto s = torch::randn({2, 3, 4});
  auto h = torch::randn({2, 7, 6});
  auto scores = att->score(s, att->project_keys(h));
  ASSERT_EQ(scores.sizes(), (std::vector<int64_t>{2, 3, 7}));
  // v^T tanh(W_s s + W_h h + b) for one (b, t, i), by hand.
  auto e = torch::tanh(torch::mv(att->W_s->weight, s[1][2]) + torch::mv(att->W_h->weight, h[1][4]) + att->W_h->bias);
  EXPECT_NEAR(scores[1][2][4].item<float>(), torch::dot(att->v->weight.view({5}), e).item<float>(), 1e-5);
  scores.sum().backward();
  for (auto& p : att->parameters()) {
    ASSERT_TRUE(p.grad().defined());
    EXPECT_GT(p.grad().abs().sum().item<float>(), 0.f);
  }
}

TEST(Attention, GeneralMatchesBilinearForm) {
  torch::manual_seed(2);
  auto att = std::dynamic_pointer_cast<GeneralAttentionImpl>(make_attention(AttentionType::kGeneral, 4, 6, 0));
  ASSERT_TRUE(att);
  auto s = torch::randn({2, 3, 4}, torch::requires_grad());
  auto h = torch::randn({2, 7, 6});
  auto scores = att->score(s, att->project_keys(h));
  ASSERT_EQ(scores.sizes(), (std::vector<int64_t>{2, 3, 7}));
  // s^T W h with W: [query_dim, key_dim] = the Linear's weight.
  auto expected = torch::dot(s[0][1], torch::mv(att->W->weight, h[0][3]));
  EXPECT_NEAR(scores[0][1][3].item<float>(), expected.item<float>(), 1e-5);
  scores.sum().backward();
  EXPECT_GT(att->W->weight.grad().abs().sum().item<float>(), 0.f);
  EXPECT_GT(s.grad().abs().sum().item<float>(), 0.f);
}

TEST(Attention, DotRejectsMismatchedSizes) {
  EXPECT_THROW(make_attention(AttentionType::kDot, 4, 6, 0), std::invalid_argument);
  EXPECT_THROW(parse_attention_type("bahdanau"), std::invalid_argument);
}

// The one masked softmax both attentions use (models/masked_softmax.h), on the course's worked
// example: scores (0.8, 0.2, 1.0) give weights (0.361, 0.198, 0.441).
TEST(MaskedSoftmax, WorkedExampleAndExactZerosWhereMasked) {
  auto scores = torch::tensor({0.8f, 0.2f, 1.0f}).view({1, 3});
  auto all = masked_softmax(scores, torch::ones({1, 3}, torch::kBool)).view({3});
  EXPECT_NEAR(all[0].item<float>(), 0.361, 5e-4);
  EXPECT_NEAR(all[1].item<float>(), 0.198, 5e-4);
  EXPECT_NEAR(all[2].item<float>(), 0.441, 5e-4);
  EXPECT_TRUE(torch::equal(masked_softmax(scores, torch::Tensor()), all.view({1, 3})));  // no mask: plain softmax
  // Masking the middle score renormalises the other two: e^0.8 / (e^0.8 + e^1.0) = 0.4502.
  auto w = masked_softmax(scores, torch::tensor({true, false, true}).view({1, 3})).view({3});
  EXPECT_EQ(w[1].item<float>(), 0.f);
  EXPECT_NEAR(w[0].item<float>(), 0.450166, 1e-5);
  EXPECT_NEAR(w[2].item<float>(), 0.549834, 1e-5);
}

TEST(MaskedSoftmax, BroadcastsACausalMaskAndZeroesRowsThatSeeNothing) {
  auto scores = torch::randn({2, 3, 3}, torch::requires_grad());
  // Row 0 sees key 0, row 1 keys 0..1, row 2 nothing.
  auto allowed = torch::tensor({true, false, false, true, true, false, false, false, false}).view({3, 3});
  auto w = masked_softmax(scores, allowed);
  ASSERT_EQ(w.sizes(), scores.sizes());
  EXPECT_TRUE(torch::equal(w.masked_select(allowed.logical_not().expand({2, 3, 3})), torch::zeros({12})));
  EXPECT_TRUE(torch::allclose(w.select(1, 0).select(1, 0), torch::ones({2})));
  EXPECT_TRUE(torch::allclose(w.select(1, 1).sum(-1), torch::ones({2})));
  w.sum().backward();
  EXPECT_TRUE(torch::isfinite(scores.grad()).all().item<bool>());
}
