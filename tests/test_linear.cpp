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

// Per-channel symmetric int8: row j's scale is max_k |W_jk| / 127 and its integers round(W / scale).
TEST(Int8Linear, PerChannelScalesOfAHandMadeWeight) {
  const auto W = torch::tensor({1.0f, -2.0f, 0.5f, 0.1f, 0.2f, -0.3f, 0.0f, 0.0f, 0.0f}).view({3, 3});
  const auto q = quantize_weight_int8(W);
  const auto scales = q.q_per_channel_scales();
  EXPECT_NEAR(scales[0].item<double>(), 2.0 / 127, 1e-9);  // computed in float32
  EXPECT_NEAR(scales[1].item<double>(), 0.3 / 127, 1e-9);
  EXPECT_DOUBLE_EQ(scales[2].item<double>(), 1.0);           // an all-zero row
  const auto ints = q.int_repr().flatten().to(torch::kLong);
  EXPECT_EQ(std::vector<int64_t>(ints.data_ptr<int64_t>(), ints.data_ptr<int64_t>() + 9),
            std::vector<int64_t>({64, -127, 32, 42, 85, -127, 0, 0, 0}));
}

// The int8 product is within the error its scales allow: with weight scale s_j (error at most
// s_j / 2 per weight) and the input's scale s_x = (max(x, 0) - min(x, 0)) / 255 (error at most
// s_x: half a step, and half a step more where the zero point is rounded),
//   |y_j - y_j*| <= sum_k |x_k| s_j / 2 + |W_jk| s_x + s_j s_x / 2   (+ float32 rounding).
// Only without gradients and for the packed weight; other weights and training are unchanged.
TEST(Int8Linear, WithinTheBoundItsScalesGive) {
  if (!int8_supported()) GTEST_SKIP() << "no int8 engine in this LibTorch";
  torch::manual_seed(3);
  torch::nn::Linear layer(200, 300);
  const auto x = torch::randn({2, 7, 200});
  const auto exact = torch::nn::functional::linear(x, layer->weight, layer->bias).detach();
  const auto other = torch::randn({50, 200});
  use_int8_weights(*layer);
  EXPECT_TRUE(torch::equal(nlpzoo::linear(x, layer).detach(), exact)) << "gradients on: float32";
  torch::NoGradGuard ng;
  EXPECT_TRUE(torch::equal(nlpzoo::linear(x, other), torch::nn::functional::linear(x, other)));
  const auto y = nlpzoo::linear(x, layer);
  ASSERT_EQ(y.sizes(), exact.sizes());
  const auto rows = x.reshape({-1, 200});
  const double s_x = (rows.max().clamp_min(0) - rows.min().clamp_max(0)).item<double>() / 255;
  const auto s_w = quantize_weight_int8(layer->weight).q_per_channel_scales().to(torch::kFloat);  // [300]
  const auto bound = rows.abs().sum(1, true) * s_w.unsqueeze(0) / 2 +
                     layer->weight.abs().sum(1).unsqueeze(0) * s_x + 200 * s_w.unsqueeze(0) * s_x / 2;  // [14, 300]
  const auto error = (y.reshape({-1, 300}) - exact.reshape({-1, 300})).abs();
  EXPECT_TRUE((error <= bound + 1e-4 + 1e-5 * exact.reshape({-1, 300}).abs()).all().item<bool>())
      << "worst error over bound " << (error / bound).max().item<float>();
  EXPECT_GT(error.max().item<float>(), 0) << "the int8 path ran";
}
