// BERT's modules (models/bert/bert.h): padding invariance, the tied MLM head computed only at
// masked positions, the heads' shapes, and a tiny batch overfit with the MLM loss.
// (The encoder layer's parity with torch::nn::TransformerEncoderLayer is in test_transformer.cpp.)
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "models/bert/bert.h"

using namespace nlpzoo;
using torch::indexing::Slice;

namespace {
float max_abs_diff(const torch::Tensor& a, const torch::Tensor& b) { return (a - b).abs().max().item<float>(); }

BertOptions tiny(bool pre_norm = false) {
  return BertOptions().vocab_size(24).d_model(32).num_heads(4).num_layers(2).ffn_dim(64).dropout(0.0)
      .attention_dropout(0.0).max_positions(16).pre_norm(pre_norm);
}
}  // namespace

class BertPadding : public ::testing::TestWithParam<bool> {};

// A row's real positions give the same states alone or padded in a longer batch (the pad
// keys are masked; pad queries are computed but read by nobody).
TEST_P(BertPadding, PaddingChangesNoRealPosition) {
  torch::manual_seed(1);
  BertModel bert(tiny(GetParam()));
  bert->eval();
  auto short_row = torch::tensor({{4, 9, 10, 11, 5}}, torch::kLong);          // [1, 5]
  auto short_seg = torch::tensor({{0, 0, 0, 1, 1}}, torch::kLong);
  auto padded = torch::tensor({{4, 9, 10, 11, 5, 0, 0, 0}, {4, 12, 13, 14, 15, 16, 17, 5}}, torch::kLong);
  auto padded_seg = torch::tensor({{0, 0, 0, 1, 1, 0, 0, 0}, {0, 0, 0, 0, 1, 1, 1, 1}}, torch::kLong);
  auto alone = bert(short_row, short_seg);               // [1, 5, H]
  auto in_batch = bert(padded, padded_seg);              // [2, 8, H]
  EXPECT_LE(max_abs_diff(in_batch.index({Slice(0, 1), Slice(0, 5)}), alone), 1e-5);
  // Nor do the segment ids written at pad positions.
  auto other_seg = padded_seg.clone();
  other_seg.index_put_({0, Slice(5)}, 1);
  EXPECT_LE(max_abs_diff(bert(padded, other_seg).index({0, Slice(0, 5)}), in_batch.index({0, Slice(0, 5)})), 1e-5);
  // Segments matter: the same tokens as sentence B differ.
  EXPECT_GT(max_abs_diff(bert(short_row, torch::ones_like(short_seg)), alone), 1e-3);
}

INSTANTIATE_TEST_SUITE_P(PostAndPreLN, BertPadding, ::testing::Bool());

TEST(BertEmbeddings, SumOfThreeTablesThenLayerNorm) {
  torch::manual_seed(2);
  BertEmbeddings emb(tiny());
  emb->eval();
  auto tokens = torch::tensor({{4, 7, 8}}, torch::kLong);
  auto segments = torch::tensor({{0, 1, 1}}, torch::kLong);
  auto sum = emb->token->weight.index({tokens[0]}) + emb->position->weight.slice(0, 0, 3) +
             emb->segment->weight.index({segments[0]});
  auto expected = torch::layer_norm(sum, {32}, emb->norm->weight, emb->norm->bias, 1e-5);
  EXPECT_LE(max_abs_diff(emb(tokens, segments)[0], expected), 1e-5);
  // Undefined segments mean segment 0 everywhere.
  EXPECT_LE(max_abs_diff(emb(tokens), emb(tokens, torch::zeros_like(tokens))), 1e-6);
  EXPECT_EQ(emb->token->weight[0].abs().sum().item<float>(), 0.f);  // the pad row
  EXPECT_THROW(emb(torch::ones({1, 17}, torch::kLong)), c10::Error);  // past max_positions
}

// Google's checkpoints normalise with ε = 1e-12 (layer_norm_eps): every LayerNorm of the model
// takes it, and the default stays LibTorch's 1e-5 that our runs were trained with.
TEST(BertOptions, LayerNormEpsReachesEveryLayerNorm) {
  auto eps_of_every_norm = [](torch::nn::Module& model) {
    std::vector<double> eps;
    for (const auto& m : model.modules(/*include_self=*/false))
      if (auto* norm = dynamic_cast<torch::nn::LayerNormImpl*>(m.get())) eps.push_back(norm->options.eps());
    return eps;
  };
  BertForPreTraining google(tiny().layer_norm_eps(1e-12));
  // embeddings, 2 per layer x 2 layers, MLM head
  EXPECT_EQ(eps_of_every_norm(*google), std::vector<double>(6, 1e-12));
  BertForPreTraining ours(tiny());
  EXPECT_EQ(eps_of_every_norm(*ours), std::vector<double>(6, 1e-5));
  BertForPreTraining pre_ln(tiny(/*pre_norm=*/true).layer_norm_eps(1e-12));  // + final_norm
  EXPECT_EQ(eps_of_every_norm(*pre_ln), std::vector<double>(7, 1e-12));

  torch::manual_seed(2);
  BertEmbeddings emb(tiny().layer_norm_eps(1e-12));
  emb->eval();
  auto tokens = torch::tensor({{4, 7, 8}}, torch::kLong);
  auto sum = emb->token->weight.index({tokens[0]}) + emb->position->weight.slice(0, 0, 3) + emb->segment->weight[0];
  auto expected = torch::layer_norm(sum, {32}, emb->norm->weight, emb->norm->bias, 1e-12);
  EXPECT_LE(max_abs_diff(emb(tokens)[0], expected), 1e-5);
}

// The output projection is the token embedding itself: one storage, counted once among the
// parameters, and the MLM logits are computed only where `masked` is true.
TEST(BertForPreTraining, MlmHeadTiedAndOnlyAtMaskedPositions) {
  torch::manual_seed(3);
  BertForPreTraining model(tiny());
  model->eval();
  EXPECT_EQ(model->mlm_output_weight().data_ptr(), model->bert->embeddings->token->weight.data_ptr());
  int64_t vocab_sized = 0;
  for (const auto& p : model->named_parameters())
    if (p.value().dim() == 2 && p.value().size(0) == 24) ++vocab_sized;
  EXPECT_EQ(vocab_sized, 1) << "the embedding table must be the only [vocab, H] parameter";
  EXPECT_EQ(model->mlm->bias.sizes(), (std::vector<int64_t>{24}));

  auto tokens = torch::tensor({{4, 6, 9, 10, 5}, {4, 11, 6, 5, 0}}, torch::kLong);
  auto masked = torch::tensor({{0, 1, 0, 1, 0}, {0, 0, 1, 0, 0}}, torch::kBool);
  auto out = model(tokens, torch::Tensor(), masked);
  ASSERT_EQ(out.mlm_logits.sizes(), (std::vector<int64_t>{3, 24}));
  EXPECT_FALSE(out.nsp_logits.defined());
  auto all = model->mlm_all(tokens);  // [2, 5, V]
  EXPECT_LE(max_abs_diff(out.mlm_logits, all.index({masked})), 1e-5);

  // The gradient of the MLM loss reaches the embedding through both of its uses.
  torch::nn::functional::cross_entropy(out.mlm_logits, torch::tensor({7, 8, 9}, torch::kLong)).backward();
  auto g = model->bert->embeddings->token->weight.grad();
  ASSERT_TRUE(g.defined());
  EXPECT_GT(g[20].abs().sum().item<float>(), 0.f);  // an id absent from the input: output side only
}

TEST(BertForPreTraining, NspAndFineTuningHeads) {
  torch::manual_seed(4);
  BertForPreTraining model(tiny().nsp(true));
  model->eval();
  auto tokens = torch::tensor({{4, 6, 5, 9, 5}, {4, 11, 5, 7, 5}}, torch::kLong);
  auto segments = torch::tensor({{0, 0, 0, 1, 1}, {0, 0, 0, 1, 1}}, torch::kLong);
  auto out = model(tokens, segments, torch::zeros({2, 5}, torch::kBool));
  EXPECT_EQ(out.mlm_logits.size(0), 0);
  ASSERT_EQ(out.nsp_logits.sizes(), (std::vector<int64_t>{2, 2}));
  auto h = model->bert(tokens, segments);
  auto pooled = model->bert->pooler(h);
  EXPECT_LE(max_abs_diff(pooled, torch::tanh(model->bert->pooler->dense(h.select(1, 0)))), 1e-6);
  EXPECT_LE(pooled.abs().max().item<float>(), 1.f);

  BertClassificationHead classify(32, 3, 0.1), regress(32, 1, 0.1);
  classify->eval();
  EXPECT_EQ(classify(pooled).sizes(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(regress(pooled).sizes(), (std::vector<int64_t>{2, 1}));
  EXPECT_THROW(BertClassificationHead(32, 0, 0.1), c10::Error);
}

// Memorising a tiny batch: the MLM loss at the masked positions falls to about 0.
TEST(BertForPreTraining, OverfitsATinyBatch) {
  torch::manual_seed(5);
  BertForPreTraining model(tiny());
  model->train();
  auto tokens = torch::tensor({{4, 10, 11, 12, 13, 14, 5, 0},
                               {4, 15, 16, 17, 18, 5, 0, 0},
                               {4, 19, 20, 21, 22, 23, 10, 5}}, torch::kLong);
  auto masked = torch::tensor({{0, 0, 1, 0, 1, 0, 0, 0},
                               {0, 1, 0, 0, 1, 0, 0, 0},
                               {0, 0, 0, 1, 0, 0, 1, 0}}, torch::kBool);
  auto targets = tokens.index({masked});
  auto input = tokens.masked_fill(masked, 6);  // [MASK]
  torch::optim::AdamW opt(model->parameters(), torch::optim::AdamWOptions(3e-3).weight_decay(0.0));
  float first = 0, last = 0;
  for (int step = 0; step < 150; ++step) {
    opt.zero_grad();
    auto loss = torch::nn::functional::cross_entropy(model(input, torch::Tensor(), masked).mlm_logits, targets);
    loss.backward();
    opt.step();
    if (step == 0) first = loss.item<float>();
    last = loss.item<float>();
  }
  EXPECT_GT(first, 2.5f);  // about ln 24 = 3.18 at the start
  EXPECT_LT(last, 0.05f);
}
