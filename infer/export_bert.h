#pragma once
// TorchScript export of BERT (models/bert/bert.h), masked-LM pre-trained, ELECTRA pre-trained
// (models/bert/electra.h) or fine-tuned as a classifier: its "scripted twin"
// (infer/script_twin.h), built like the Transformer's (infer/export_transformer.h) from the
// same sub-layer source (infer/twin_transformer_source.h).
//
// script_bert builds a torch::jit::Module by hand, copies every parameter of a
// BertForPreTrainingImpl into it under scripted_name ('.' -> "__", e.g.
// bert.encoder.layers.0.self_attn.W_Q.weight -> bert__encoder__layers__0__self_attn__W_Q__weight;
// the MLM output matrix is bert__embeddings__token__weight, held once as in the eager model)
// and defines the inference methods in TorchScript generated for the model's options (pre/post-LN,
// activation, layer count, heads are resolved in C++).
//
// Attributes: vocab_size, d_model, num_heads, num_layers, ffn_dim, max_positions,
// type_vocab_size, activation ("relu" | "gelu"), pre_norm, pad_id (0), cls_id (4),
// sep_id (5), mask_id (6) (datasets/special_ids.h).
//
// Methods (batch-first; B sequences of S <= max_positions ids, padded at the end with pad_id,
// D = d_model, V = vocab_size):
//   encode(tokens: [B, S] int64, segments: [B, S] int64 in [0, type_vocab_size)) -> [B, S, D]:
//       BertModelImpl::forward; padding is never attended to, so a pad changes no real position.
//   mlm_logits(tokens, segments) -> [B, S, V]: the MLM head (dense, GELU, LayerNorm, the tied
//       token embedding plus its bias) at every position, as BertForPreTrainingImpl::mlm_all;
//       read the rows at the [MASK] positions.
// The pooler (and an NSP head, which masked_lm does not train yet) are held but have no method:
// masked-LM pre-training never updates them.
//
// script_bert_classifier: the twin of a fine-tuned classifier, a BertModelImpl `bert` and a
// BertClassificationHeadImpl `head`, held as a parent module with children "bert" and "head"
// names them (bert__encoder__..., bert__pooler__dense__weight, head__output__weight,
// head__output__bias; twin_tensor_mismatch of that parent holds), with the attributes above
// plus num_classes, labels (List[str]; empty for regression) and regression (bool), and methods
//   encode(tokens, segments) -> [B, S, D], as above;
//   forward(tokens, segments) -> logits [B, C]: BertPoolerImpl (tanh(W_p h_[CLS] + b_p)) then
//       BertClassificationHeadImpl (W_c p + b_c; no dropout, as in eval mode);
//   predict(tokens, segments) -> probabilities [B, C] (softmax of forward), or for a
//       regression model (labels empty, C = 1) the score [B] (forward's single column).
// script_electra: the twin of an ELECTRA pre-training model (models/bert/electra.h), holding
// every parameter of an ElectraForPreTrainingImpl under its scripted_name (bert__...,
// generator__..., discriminator_predictions__...; the shared embeddings once, as bert__embeddings__*),
// with the attributes above of the discriminator plus generator_d_model, generator_num_heads and
// generator_ffn_dim, and methods
//   encode(tokens, segments) -> [B, S, D]: the discriminator's BertModelImpl::forward, as above;
//   replaced_logits(tokens, segments) -> [B, S]: ElectraDiscriminatorHeadImpl at every position,
//       the log-odds that the token was replaced;
//   mlm_logits(tokens, segments) -> [B, S, V]: the generator at every position
//       (ElectraGeneratorImpl::mlm_all).
// The twin is inference-only (no dropout, as the eager model in eval mode); tests hold it within
// 1e-5 of the eager model. Bad inputs (wrong rank, S > max_positions, segments of another
// shape) fail with the TorchScript interpreter's std::runtime_error.
#include <torch/script.h>
#include <torch/torch.h>

#include <map>
#include <string>
#include <vector>

#include "infer/script_twin.h"
#include "models/bert/bert.h"

namespace nlpzoo {

class ElectraForPreTrainingImpl;  // models/bert/electra.h

/// The scripted twin of `model` (see the file comment), as build_twin (infer/script_twin.h)
/// makes every twin: in eval mode, a snapshot of the parameters, with build_twin's errors.
torch::jit::Module script_bert(BertForPreTrainingImpl& model);

/// Saves the twin of `model` to `out_path` with `extra_files` ("config.ini", "spm.model") and
/// bert_export_readme, as export_twin (infer/script_twin.h) does, with its errors.
void export_bert(const std::string& out_path, BertForPreTrainingImpl& model,
                 const std::map<std::string, std::string>& extra_files);

/// The README.txt stored in every export of a model with these options: sizes, the special ids,
/// the methods, and the Python lines that fill a [MASK].
std::string bert_export_readme(const BertOptions& options);

/// The twin of an ELECTRA pre-training model (see the file comment), as build_twin makes it.
torch::jit::Module script_electra(ElectraForPreTrainingImpl& model);

/// Saves script_electra's twin to `out_path` with `extra_files` ("config.ini", "spm.model") and
/// electra_export_readme, as export_twin does, with its errors.
void export_electra(const std::string& out_path, ElectraForPreTrainingImpl& model,
                    const std::map<std::string, std::string>& extra_files);

/// The README.txt of an ELECTRA export: the discriminator's sizes and the generator's, the
/// special ids, the methods, and the Python lines that score replaced tokens.
std::string electra_export_readme(const BertOptions& discriminator, const BertOptions& generator);

/// The twin of a fine-tuned BERT classifier (see the file comment), as build_twin makes it,
/// holding `bert`'s and `head`'s parameters. `labels`: one name per output of `head`, or empty
/// for a regression head (1 output). Throws std::invalid_argument if `labels` does not match
/// the head's outputs or if the head does not read d_model features; else as build_twin.
torch::jit::Module script_bert_classifier(BertModelImpl& bert, BertClassificationHeadImpl& head,
                                          const std::vector<std::string>& labels);

/// Saves the classifier's twin (script_bert_classifier) to `out_path` with `extra_files`
/// ("config.ini", "spm.model", "labels.txt") and bert_classifier_export_readme, as export_twin
/// (infer/script_twin.h) does, with its errors and script_bert_classifier's.
void export_bert_classifier(const std::string& out_path, BertModelImpl& bert, BertClassificationHeadImpl& head,
                            const std::vector<std::string>& labels,
                            const std::map<std::string, std::string>& extra_files);

/// The README.txt of a fine-tuned classifier's export: sizes, special ids, the input layout,
/// the labels (or that it predicts a score), the methods, and the Python lines that classify a
/// sentence ([CLS]=4 + its pieces + [SEP]=5, segments 0).
std::string bert_classifier_export_readme(const BertOptions& options, const std::vector<std::string>& labels);

}  // namespace nlpzoo
