#pragma once
// BERT (Devlin et al. 2019, "BERT: Pre-training of Deep Bidirectional Transformers for
// Language Understanding"):
//   input (fig. 2):   E = LayerNorm(E_token[x] + E_position[t] + E_segment[s]), then dropout
//   encoder (sec. 3): h = TransformerEncoder_N(E) with GELU feed-forward networks and post-LN
//                     sub-layers (pre-LN by option), padding never attended to; this is the
//                     same TransformerEncoder as the Transformer's (models/transformer/layers.h)
//   masked LM (sec. 3.1, task #1; BERT's cls/predictions):
//                     P(x_t | h) = softmax(LayerNorm(GELU(W_t h_t + b_t)) E_tokenᵀ + b_V),
//                     the output matrix tied to the token embedding, computed at the masked
//                     positions only (gathered before the vocabulary-sized product)
//   pooler + NSP (sec. 3.1, task #2): p = tanh(W_p h_[CLS] + b_p),  P(IsNext) = softmax(W_n p + b_n)
//   fine-tuning (sec. 4): logits = W_c dropout(p) + b_c, num_labels outputs (1 for regression)
// The model knows nothing of tokenizers: [CLS]/[SEP]/[MASK] are ids chosen by the data side.
#include <torch/torch.h>

#include "models/transformer/layers.h"

namespace nlpzoo {

struct BertOptions {
  /// Rows of the token embedding and outputs of the MLM head (SentencePiece pieces, specials included).
  TORCH_ARG(int64_t, vocab_size) = 8000;
  /// Hidden size H: embeddings, attention and the residual stream (BERT-base 768).
  TORCH_ARG(int64_t, d_model) = 256;
  /// Attention heads A (d_k = d_model / A).
  TORCH_ARG(int64_t, num_heads) = 4;
  /// Encoder depth L.
  TORCH_ARG(int64_t, num_layers) = 4;
  /// Feed-forward inner size (BERT: 4H).
  TORCH_ARG(int64_t, ffn_dim) = 1024;
  /// Dropout on the embedding sum and every sub-layer output (BERT: 0.1).
  TORCH_ARG(double, dropout) = 0.1;
  /// Dropout on attention weights (BERT: 0.1; attention_probs_dropout_prob).
  TORCH_ARG(double, attention_dropout) = 0.1;
  /// Rows of the learned position table: the longest input, [CLS] and [SEP] included.
  TORCH_ARG(int64_t, max_positions) = 128;
  /// Segment (token type) embeddings: 2 for sentence A / sentence B.
  TORCH_ARG(int64_t, type_vocab_size) = 2;
  /// Pre-LN sub-layers and a final LayerNorm (Xiong et al. 2020) instead of BERT's post-LN.
  TORCH_ARG(bool, pre_norm) = false;
  /// Feed-forward non-linearity (BERT: GELU, Hendrycks & Gimpel 2016).
  TORCH_ARG(Activation, activation) = Activation::kGelu;
  /// Next-sentence-prediction head (off by default: RoBERTa, Liu et al. 2019, sec. 4.2, finds it does not help).
  TORCH_ARG(bool, nsp) = false;
  /// Padding id: zero embedding row, never attended to.
  TORCH_ARG(int64_t, pad_id) = 0;
  /// ε of every LayerNorm (embeddings, encoder, MLM head): LibTorch's 1e-5, which our own runs
  /// were trained with; Google's BERT checkpoints were trained with 1e-12 (layer_norm_eps).
  TORCH_ARG(double, layer_norm_eps) = 1e-5;
};

/// The options of every encoder layer of a BERT of these sizes (the discriminator's and an
/// ELECTRA generator's alike).
TransformerLayerOptions encoder_layer_options(const BertOptions& o);

/// Token + learned position + segment embeddings, summed, LayerNorm, dropout (Devlin et al.
/// fig. 2). Children: token [vocab, H], position [max_positions, H], segment [type_vocab, H],
/// norm, dropout. Tables start N(0, 0.02) (BERT's initializer_range), the pad row zero.
class BertEmbeddingsImpl : public torch::nn::Module {
 public:
  explicit BertEmbeddingsImpl(const BertOptions& options);
  /// tokens: [B, S] int64; segments: [B, S] int64 in [0, type_vocab_size), undefined = all 0.
  /// Returns [B, S, d_model] float. Throws c10::Error when S > max_positions.
  torch::Tensor forward(const torch::Tensor& tokens, const torch::Tensor& segments = {});

  torch::nn::Embedding token{nullptr}, position{nullptr}, segment{nullptr};
  torch::nn::LayerNorm norm{nullptr};
  torch::nn::Dropout dropout{nullptr};
};
TORCH_MODULE(BertEmbeddings);

/// BERT's cls/predictions transform: dense H -> H, GELU, LayerNorm; then the tied output
/// projection. Owns dense, norm and the output bias [vocab]; the output matrix is the token
/// embedding, passed in (one storage, so it is neither copied nor seen twice by an optimizer).
class BertMlmHeadImpl : public torch::nn::Module {
 public:
  BertMlmHeadImpl(int64_t d_model, int64_t vocab_size, double layer_norm_eps = 1e-5);
  /// hidden: [N, H] float (the encoder states at the masked positions only); embedding:
  /// [vocab, H] the token embedding table. Returns logits [N, vocab] float.
  torch::Tensor forward(const torch::Tensor& hidden, const torch::Tensor& embedding);

  torch::nn::Linear dense{nullptr};
  torch::nn::LayerNorm norm{nullptr};
  torch::Tensor bias;
};
TORCH_MODULE(BertMlmHead);

/// Pooler p = tanh(W_p h_[CLS] + b_p) (the first position's final state).
class BertPoolerImpl : public torch::nn::Module {
 public:
  explicit BertPoolerImpl(int64_t d_model);
  /// hidden: [B, S, H] -> [B, H] float.
  torch::Tensor forward(const torch::Tensor& hidden);
  torch::nn::Linear dense{nullptr};
};
TORCH_MODULE(BertPooler);

/// The encoder, Hugging Face's "BertModel": embeddings, TransformerEncoder, pooler.
/// Children: embeddings, encoder, pooler.
class BertModelImpl : public torch::nn::Module {
 public:
  /// Throws c10::Error for inconsistent sizes (d_model % num_heads, num_layers < 1, ...).
  explicit BertModelImpl(const BertOptions& options);
  /// tokens: [B, S] int64 padded with pad_id; segments: [B, S] int64 or undefined (all 0).
  /// Returns the final states [B, S, d_model] float; a pad position changes no output at a
  /// real position.
  torch::Tensor forward(const torch::Tensor& tokens, const torch::Tensor& segments = {});
  const BertOptions& options() const { return options_; }

  BertEmbeddings embeddings{nullptr};
  TransformerEncoder encoder{nullptr};
  BertPooler pooler{nullptr};

 private:
  BertOptions options_;
};
TORCH_MODULE(BertModel);

/// What pre-training computes for a batch.
struct BertPreTrainingOutput {
  torch::Tensor mlm_logits;  // [N, vocab] float: one row per masked position, in row-major (b, t) order
  torch::Tensor nsp_logits;  // [B, 2] float, undefined without the NSP head
};

/// BERT for pre-training: BertModel, the MLM head, optionally the NSP head.
/// Children: bert, mlm, nsp (Linear H -> 2, only with options.nsp).
class BertForPreTrainingImpl : public torch::nn::Module {
 public:
  explicit BertForPreTrainingImpl(const BertOptions& options);
  /// tokens, segments: as BertModel; masked: [B, S] bool, true at the positions to predict.
  /// Only those positions go through the MLM head (Devlin et al. sec. 3.1: the final states
  /// of the masked tokens feed the output softmax).
  BertPreTrainingOutput forward(const torch::Tensor& tokens, const torch::Tensor& segments,
                                const torch::Tensor& masked);
  /// MLM logits at every position: [B, S, vocab] (fill-mask, tests; training uses forward).
  torch::Tensor mlm_all(const torch::Tensor& tokens, const torch::Tensor& segments = {});
  /// The matrix the MLM head projects with: the token embedding itself.
  const torch::Tensor& mlm_output_weight() const { return bert->embeddings->token->weight; }

  BertModel bert{nullptr};
  BertMlmHead mlm{nullptr};
  torch::nn::Linear nsp{nullptr};
};
TORCH_MODULE(BertForPreTraining);

/// The fine-tuning head (Devlin et al. sec. 4, fig. 4): logits = W dropout(p) + b on the pooled
/// [CLS] state p, num_labels outputs for classification (cross-entropy) or 1 for regression
/// (mean squared error). Children: dropout, output.
class BertClassificationHeadImpl : public torch::nn::Module {
 public:
  /// Throws c10::Error for num_labels < 1 or dropout outside [0, 1).
  BertClassificationHeadImpl(int64_t d_model, int64_t num_labels, double dropout);
  /// pooled: [B, H] float (BertPooler's output) -> [B, num_labels] float.
  torch::Tensor forward(const torch::Tensor& pooled);
  torch::nn::Dropout dropout{nullptr};
  torch::nn::Linear output{nullptr};
};
TORCH_MODULE(BertClassificationHead);

/// BERT fine-tuned on a sentence or sentence-pair task (Devlin et al. sec. 4, fig. 4a-b):
/// logits = head(pooler(BertModel(tokens, segments))), the pooled [CLS] state through dropout
/// and a linear layer; num_labels outputs for classification (cross-entropy), 1 for regression
/// (squared error). Children: bert (BertModel, whose names "bert.*" match BertForPreTraining's,
/// so a pre-trained encoder loads by name) and head (BertClassificationHead, dropout =
/// options.dropout()). The input layout ([CLS] A [SEP] B [SEP], segment ids) is the data side's.
class BertForSequenceClassificationImpl : public torch::nn::Module {
 public:
  /// Throws c10::Error for inconsistent sizes (as BertModel) or num_labels < 1.
  BertForSequenceClassificationImpl(const BertOptions& options, int64_t num_labels);
  /// tokens: [B, S] int64 padded with pad_id, position 0 the [CLS] of each row; segments: [B, S]
  /// int64 in [0, type_vocab_size) or undefined (all 0). Returns logits [B, num_labels] float.
  torch::Tensor forward(const torch::Tensor& tokens, const torch::Tensor& segments = {});
  int64_t num_labels() const { return num_labels_; }

  BertModel bert{nullptr};
  BertClassificationHead head{nullptr};

 private:
  int64_t num_labels_;
};
TORCH_MODULE(BertForSequenceClassification);

}  // namespace nlpzoo
