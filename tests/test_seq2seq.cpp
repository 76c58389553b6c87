#include <gtest/gtest.h>
#include <torch/torch.h>

#include "models/seq2seq/seq2seq.h"

using namespace nlpzoo;

namespace {
Seq2SeqOptions small(CellType cell, AttentionType att, bool feed = false) {
  return Seq2SeqOptions().src_vocab_size(13).tgt_vocab_size(11).embed_dim(8).hidden_size(12).num_layers(2)
      .cell(cell).attention(att).attention_dim(7).input_feeding(feed).dropout(0.0);
}
// Two sources of different length (padding at the end), targets starting with BOS=2.
torch::Tensor src_batch() { return torch::tensor({5, 6, 7, 8, 3, 9, 4, 3, 0, 0}, torch::kLong).view({2, 5}); }
torch::Tensor tgt_batch() { return torch::tensor({2, 4, 5, 6, 2, 7, 8, 9}, torch::kLong).view({2, 4}); }
}  // namespace

// Step-by-step decoding through the IncrementalDecoder seam gives the teacher-forced logits.
class Seq2SeqVariants : public ::testing::TestWithParam<std::tuple<CellType, AttentionType, bool>> {};

TEST_P(Seq2SeqVariants, IncrementalStepsEqualFullPass) {
  torch::manual_seed(3);
  auto [cell, att, feed] = GetParam();
  Seq2Seq model(small(cell, att, feed));
  model->eval();
  torch::NoGradGuard ng;
  auto src = src_batch(), tgt = tgt_batch();
  auto full = torch::log_softmax(model->forward(src, tgt), -1);  // [B, T, V]
  auto state = model->init(src);
  for (int64_t t = 0; t < tgt.size(1); ++t) {
    auto step = model->step(state, tgt.select(1, t));
    EXPECT_LT((step.log_probs - full.select(1, t)).abs().max().item<float>(), 1e-5) << "t=" << t;
    if (att != AttentionType::kNone) {
      // Padding never receives attention.
      EXPECT_EQ(step.attention[1].slice(0, 3).abs().sum().item<float>(), 0.f);
    }
    state = step.state;
  }
}

TEST_P(Seq2SeqVariants, PaddingDoesNotChangeASentence) {
  torch::manual_seed(4);
  auto [cell, att, feed] = GetParam();
  Seq2Seq model(small(cell, att, feed));
  model->eval();
  torch::NoGradGuard ng;
  auto src = src_batch(), tgt = tgt_batch();
  auto batched = model->forward(src, tgt)[1];
  auto alone = model->forward(src.slice(0, 1, 2).slice(1, 0, 3), tgt.slice(0, 1, 2))[0];
  EXPECT_LT((batched - alone).abs().max().item<float>(), 1e-5);
}

INSTANTIATE_TEST_SUITE_P(
    AllCellsAndScores, Seq2SeqVariants,
    ::testing::Values(std::make_tuple(CellType::kGru, AttentionType::kAdditive, false),
                      std::make_tuple(CellType::kLstm, AttentionType::kGeneral, false),
                      std::make_tuple(CellType::kGru, AttentionType::kDot, true),
                      std::make_tuple(CellType::kLstm, AttentionType::kAdditive, true),
                      std::make_tuple(CellType::kGru, AttentionType::kNone, false)));

TEST(Seq2Seq, OverfitsATinyBatch) {
  torch::manual_seed(5);
  Seq2Seq model(small(CellType::kGru, AttentionType::kAdditive));
  torch::optim::Adam opt(model->parameters(), torch::optim::AdamOptions(1e-2));
  auto src = src_batch(), tgt_in = tgt_batch();
  auto tgt_out = torch::tensor({4, 5, 6, 3, 7, 8, 9, 3}, torch::kLong).view({2, 4});
  float loss_value = 0;
  for (int i = 0; i < 300; ++i) {
    opt.zero_grad();
    auto logits = model->forward(src, tgt_in);
    auto loss = torch::nn::functional::cross_entropy(logits.view({-1, 11}), tgt_out.view({-1}));
    loss.backward();
    opt.step();
    loss_value = loss.item<float>();
  }
  EXPECT_LT(loss_value, 0.01);
}

// Luong et al.'s init: every parameter in [-a, a] and spread over it (not left at LibTorch's
// N(0, 1) embeddings), the pad rows 0 as padding_idx keeps them.
TEST(Seq2Seq, InitUniformDrawsEveryParameterFromTheRangeAndZeroesPadRows) {
  torch::manual_seed(3);
  Seq2Seq model(small(CellType::kLstm, AttentionType::kGeneral, /*feed=*/true));
  model->init_uniform(0.1);
  for (const auto& p : model->named_parameters()) {
    EXPECT_LE(p.value().abs().max().item<double>(), 0.1) << p.key();
    if (p.value().numel() >= 100) EXPECT_GT(p.value().abs().max().item<double>(), 0.09) << p.key();
  }
  EXPECT_EQ(model->src_embed->weight[0].abs().sum().item<double>(), 0.0);
  EXPECT_EQ(model->tgt_embed->weight[0].abs().sum().item<double>(), 0.0);
  EXPECT_GT(model->tgt_embed->weight[1].abs().sum().item<double>(), 0.0);
}
