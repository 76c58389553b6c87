// nlpzoo::linear's gemv path for decoding steps of a few rows, and the recurrent cell step built
// on it: the same values as LibTorch's linear and cells, up to float32 rounding.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "models/linear.h"
#include "models/rnn/recurrent.h"
#include "models/seq2seq/seq2seq.h"

using namespace nlpzoo;

namespace {
float max_diff(const torch::Tensor& a, const torch::Tensor& b) { return (a - b).abs().max().item<float>(); }
}  // namespace

TEST(Linear, GemvRowsEqualTheMatrixProduct) {
  torch::manual_seed(1);
  auto W = torch::randn({1000, 300}) * 0.05, b = torch::randn({1000});
  auto x = torch::randn({1, 5, 300});
  torch::NoGradGuard ng;
  ASSERT_TRUE(linear_uses_gemv(x, W));
  auto y = nlpzoo::linear(x, W, b);
  EXPECT_EQ(y.sizes(), (std::vector<int64_t>{1, 5, 1000}));
  EXPECT_LT(max_diff(y, torch::nn::functional::linear(x, W, b)), 1e-5);
  EXPECT_LT(max_diff(nlpzoo::linear(x, W), torch::matmul(x, W.t())), 1e-5);  // no bias
  // Each row alone gives the same bits as in the batch (one gemv per row either way).
  EXPECT_TRUE(torch::equal(nlpzoo::linear(x[0][3], W, b), y[0][3]));
}

TEST(Linear, GemvOnlyForInferenceWithFewRowsAndALargeWeight) {
  auto W = torch::zeros({1024, 256});  // 2^18 elements: the smallest weight that qualifies
  auto x = torch::zeros({6, 256});
  EXPECT_FALSE(linear_uses_gemv(x, W)) << "autograd records: at::linear";
  torch::NoGradGuard ng;
  EXPECT_TRUE(linear_uses_gemv(x, W));
  EXPECT_FALSE(linear_uses_gemv(torch::zeros({7, 256}), W)) << "more than kGemvMaxRows rows";
  EXPECT_FALSE(linear_uses_gemv(x, torch::zeros({1023, 256}))) << "weight below kGemvMinWeight";
  EXPECT_FALSE(linear_uses_gemv(x.to(torch::kBFloat16), W.to(torch::kBFloat16))) << "bf16: oneDNN";
  EXPECT_FALSE(linear_uses_gemv(torch::zeros({0, 256}), W));
  EXPECT_THROW(nlpzoo::linear(torch::zeros({2, 255}), W), c10::Error);
}

class RecurrentGemvStep : public ::testing::TestWithParam<CellType> {};

// One step in eval mode without autograd runs the cell equations on gemv; with autograd it is
// LibTorch's own GRU/LSTM/RNN. Hidden 512 makes every W_hh large enough for the gemv path.
TEST_P(RecurrentGemvStep, EqualsLibTorchsCell) {
  torch::manual_seed(2);
  Recurrent rnn(RecurrentOptions(GetParam(), 300, 512).num_layers(2));
  rnn->eval();
  auto x = torch::randn({3, 1, 300});
  RecurrentState s0;
  s0.h = torch::randn({2, 3, 512}) * 0.5;
  if (GetParam() == CellType::kLstm) s0.c = torch::randn({2, 3, 512}) * 0.5;
  for (bool zero_state : {false, true}) {
    auto state = zero_state ? RecurrentState{} : s0;
    auto [want, want_state] = rnn->forward(x, {}, state);  // autograd on: LibTorch's cell
    torch::NoGradGuard ng;
    ASSERT_TRUE(linear_uses_gemv(x.squeeze(1), rnn->flat_weights()[1]));
    auto [got, got_state] = rnn->forward(x, {}, state);
    EXPECT_EQ(got.sizes(), want.sizes());
    EXPECT_LT(max_diff(got, want), 1e-5) << "zero state " << zero_state;
    EXPECT_LT(max_diff(got_state.h, want_state.h), 1e-5);
    if (GetParam() == CellType::kLstm) {
      EXPECT_LT(max_diff(got_state.c, want_state.c), 1e-5);
    }
    // The first layer's state differs from the output (the top layer's): both layers ran.
    EXPECT_GT(max_diff(got_state.h[0], got.squeeze(1)), 1e-3);
  }
}

INSTANTIATE_TEST_SUITE_P(Cells, RecurrentGemvStep,
                         ::testing::Values(CellType::kRnn, CellType::kGru, CellType::kLstm));

// A decoder large enough that its steps take the gemv path: step-by-step log-probs equal the
// teacher-forced pass (8 rows: sgemm), as Seq2SeqVariants checks for a small model.
TEST(Seq2SeqGemv, IncrementalStepsEqualFullPass) {
  torch::manual_seed(3);
  for (auto cell : {CellType::kGru, CellType::kLstm}) {
    Seq2Seq model(Seq2SeqOptions().src_vocab_size(50).tgt_vocab_size(2000).embed_dim(64).hidden_size(512)
                      .cell(cell).attention(AttentionType::kAdditive).attention_dim(512).dropout(0.0));
    model->eval();
    torch::NoGradGuard ng;
    auto src = torch::tensor({5, 6, 7, 8, 3, 9, 4, 3, 0, 0}, torch::kLong).view({2, 5});
    auto tgt = torch::tensor({2, 40, 51, 600, 2, 7, 1800, 9}, torch::kLong).view({2, 4});
    auto full = torch::log_softmax(model->forward(src, tgt), -1);  // [B, T, V]
    auto state = model->init(src);
    for (int64_t t = 0; t < tgt.size(1); ++t) {
      ASSERT_TRUE(linear_uses_gemv(torch::zeros({2, 512}), model->output->weight));
      auto step = model->step(state, tgt.select(1, t));
      EXPECT_LT(max_diff(step.log_probs, full.select(1, t)), 1e-4) << "t=" << t;
      state = step.state;
    }
  }
}
