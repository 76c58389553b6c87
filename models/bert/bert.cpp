#include "models/bert/bert.h"

#include "models/transformer/attention.h"

namespace nlpzoo {

namespace {
// BERT's initializer_range: every table and head matrix starts N(0, 0.02), biases 0.
constexpr double kInitStd = 0.02;

torch::nn::Embedding bert_embedding(int64_t rows, int64_t d_model, int64_t pad_id = -1) {
  auto options = torch::nn::EmbeddingOptions(rows, d_model);
  if (pad_id >= 0) options.padding_idx(pad_id);
  torch::nn::Embedding e(options);
  torch::NoGradGuard ng;
  e->weight.normal_(0.0, kInitStd);
  if (pad_id >= 0) e->weight[pad_id].zero_();
  return e;
}

torch::nn::Linear bert_linear(int64_t in, int64_t out) {
  torch::nn::Linear l(in, out);
  torch::NoGradGuard ng;
  l->weight.normal_(0.0, kInitStd);
  l->bias.zero_();
  return l;
}

torch::nn::LayerNorm layer_norm(int64_t d_model, double eps) {
  return torch::nn::LayerNorm(torch::nn::LayerNormOptions({d_model}).eps(eps));
}
}  // namespace

BertEmbeddingsImpl::BertEmbeddingsImpl(const BertOptions& o) {
  TORCH_CHECK(o.max_positions() >= 1 && o.type_vocab_size() >= 1 && o.vocab_size() > o.pad_id(),
              "BERT embeddings need max_positions, type_vocab_size >= 1 and pad_id < vocab_size");
  token = register_module("token", bert_embedding(o.vocab_size(), o.d_model(), o.pad_id()));
  position = register_module("position", bert_embedding(o.max_positions(), o.d_model()));
  segment = register_module("segment", bert_embedding(o.type_vocab_size(), o.d_model()));
  norm = register_module("norm", layer_norm(o.d_model(), o.layer_norm_eps()));
  dropout = register_module("dropout", torch::nn::Dropout(o.dropout()));
}

torch::Tensor BertEmbeddingsImpl::forward(const torch::Tensor& tokens, const torch::Tensor& segments) {
  TORCH_CHECK(tokens.dim() == 2, "BERT input must be [B, S] token ids, got ", tokens.sizes());
  const int64_t S = tokens.size(1);
  TORCH_CHECK(S <= position->weight.size(0), "sequence of ", S, " positions is longer than max_positions (",
              position->weight.size(0), ")");
  auto x = token(tokens) + position->weight.slice(0, 0, S);  // [B, S, H] + [S, H]
  x = segments.defined() ? x + segment(segments) : x + segment->weight[0];
  return dropout(norm(x));
}

BertMlmHeadImpl::BertMlmHeadImpl(int64_t d_model, int64_t vocab_size, double layer_norm_eps) {
  dense = register_module("dense", bert_linear(d_model, d_model));
  norm = register_module("norm", layer_norm(d_model, layer_norm_eps));
  bias = register_parameter("bias", torch::zeros({vocab_size}));
}

torch::Tensor BertMlmHeadImpl::forward(const torch::Tensor& hidden, const torch::Tensor& embedding) {
  // Under CPU bf16 autocast dense() returns bf16, and LibTorch 1.13's CPU LayerNorm has no kernel
  // for bf16 input with float32 weights (autocast leaves layer_norm alone there): normalize in
  // the residual stream's dtype, as every LayerNorm of the encoder does.
  auto h = norm(torch::gelu(dense(hidden)).to(hidden.scalar_type()));  // [N, H]
  return torch::linear(h, embedding, bias);   // [N, V]
}

BertPoolerImpl::BertPoolerImpl(int64_t d_model) { dense = register_module("dense", bert_linear(d_model, d_model)); }

torch::Tensor BertPoolerImpl::forward(const torch::Tensor& hidden) {
  return torch::tanh(dense(hidden.select(1, 0)));  // [B, H] from h_[CLS]
}

TransformerLayerOptions encoder_layer_options(const BertOptions& o) {
  return TransformerLayerOptions(o.d_model(), o.num_heads(), o.ffn_dim())
      .dropout(o.dropout())
      .attention_dropout(o.attention_dropout())
      .activation(o.activation())
      .pre_norm(o.pre_norm())
      .layer_norm_eps(o.layer_norm_eps());
}

BertModelImpl::BertModelImpl(const BertOptions& o) : options_(o) {
  TORCH_CHECK(o.d_model() % o.num_heads() == 0, "d_model (", o.d_model(), ") must be a multiple of num_heads (",
              o.num_heads(), ")");
  embeddings = register_module("embeddings", BertEmbeddings(o));
  encoder = register_module("encoder", TransformerEncoder(encoder_layer_options(o), o.num_layers()));
  pooler = register_module("pooler", BertPooler(o.d_model()));
}

torch::Tensor BertModelImpl::forward(const torch::Tensor& tokens, const torch::Tensor& segments) {
  return encoder(embeddings(tokens, segments), padding_mask(tokens, options_.pad_id()));  // [B, S, H]
}

BertForPreTrainingImpl::BertForPreTrainingImpl(const BertOptions& o) {
  bert = register_module("bert", BertModel(o));
  mlm = register_module("mlm", BertMlmHead(o.d_model(), o.vocab_size(), o.layer_norm_eps()));
  if (o.nsp()) nsp = register_module("nsp", bert_linear(o.d_model(), 2));
}

BertPreTrainingOutput BertForPreTrainingImpl::forward(const torch::Tensor& tokens, const torch::Tensor& segments,
                                                      const torch::Tensor& masked) {
  TORCH_CHECK(masked.sizes() == tokens.sizes() && masked.scalar_type() == torch::kBool,
              "masked must be a bool tensor shaped like tokens ", tokens.sizes(), ", got ", masked.sizes());
  auto h = bert(tokens, segments);  // [B, S, H]
  BertPreTrainingOutput out;
  // Gather first: only N = |masked| rows meet the [V, H] matrix.
  out.mlm_logits = mlm(h.index({masked}), mlm_output_weight());  // [N, V]
  if (nsp) out.nsp_logits = nsp(bert->pooler(h));                 // [B, 2]
  return out;
}

torch::Tensor BertForPreTrainingImpl::mlm_all(const torch::Tensor& tokens, const torch::Tensor& segments) {
  return mlm(bert(tokens, segments), mlm_output_weight());  // [B, S, V]
}

BertClassificationHeadImpl::BertClassificationHeadImpl(int64_t d_model, int64_t num_labels, double dropout_p) {
  TORCH_CHECK(num_labels >= 1, "num_labels must be >= 1, got ", num_labels);
  TORCH_CHECK(dropout_p >= 0 && dropout_p < 1, "dropout must be in [0, 1), got ", dropout_p);
  dropout = register_module("dropout", torch::nn::Dropout(dropout_p));
  output = register_module("output", bert_linear(d_model, num_labels));
}

torch::Tensor BertClassificationHeadImpl::forward(const torch::Tensor& pooled) { return output(dropout(pooled)); }

BertForSequenceClassificationImpl::BertForSequenceClassificationImpl(const BertOptions& o, int64_t num_labels)
    : num_labels_(num_labels) {
  bert = register_module("bert", BertModel(o));
  head = register_module("head", BertClassificationHead(o.d_model(), num_labels, o.dropout()));
}

torch::Tensor BertForSequenceClassificationImpl::forward(const torch::Tensor& tokens, const torch::Tensor& segments) {
  return head(bert->pooler(bert(tokens, segments)));  // [B, num_labels]
}

}  // namespace nlpzoo
