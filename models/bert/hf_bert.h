#pragma once
// Hugging Face's BERT layout (transformers' BertConfig and BertModel / BertForPreTraining /
// BertForMaskedLM parameter names) onto ours. The two models compute the same function:
//   embeddings   word_embeddings + position_embeddings[0..S) + token_type_embeddings, LayerNorm
//                -> our BertEmbeddings (token, position, segment, norm)
//   each layer   post-LN: LayerNorm(x + Attention(x)), LayerNorm(x + W_2 gelu(W_1 x))
//                attention.self.{query,key,value}, attention.output.dense / .LayerNorm,
//                intermediate.dense, output.dense / .LayerNorm
//                -> encoder.layers.i: self_attn.{W_Q,W_K,W_V,W_O}, norm1, ffn.linear1/linear2, norm2
//   pooler       tanh(dense(h_[CLS])) -> pooler.dense
//   MLM head     cls.predictions.transform.{dense,LayerNorm}, cls.predictions.bias, decoder
//                tied to word_embeddings -> mlm.dense, mlm.norm, mlm.bias (ours is tied by design)
//   NSP head     cls.seq_relationship -> nsp (only when the model has one)
// with hidden_act "gelu" (the erf form: torch::gelu's default) and layer_norm_eps (1e-12 in
// Google's checkpoints) carried over. Older checkpoints name LayerNorm's parameters gamma/beta
// instead of weight/bias; BertModel saves its names without the "bert." prefix; both are read.
#include <torch/torch.h>

#include <string>
#include <utility>
#include <vector>

#include "models/bert/bert.h"

namespace nlpzoo {

/// What load_hf_bert_weights did with each tensor, by name.
struct HfBertLoadReport {
  std::vector<std::string> loaded;      // Hugging Face names copied into the model
  std::vector<std::string> tied;        // names that duplicate a loaded tensor (the tied decoder)
  std::vector<std::string> ignored;     // buffers that are not weights (embeddings.position_ids)
  std::vector<std::string> unexpected;  // names with no place in the model (e.g. cls.seq_relationship without NSP)
  std::vector<std::string> missing;     // our parameters left as initialised: pooler, MLM or NSP head only
};

/// Copies `tensors` (Hugging Face names, any float dtype) into `model`, whose options came from
/// the checkpoint's config.json (train/hf_bert_import.h: bert_options_from_hf_config). Throws
/// UserError naming `where` and every offending tensor when a shape differs from ours, a tensor
/// is not floating point, a tied decoder differs from the word embeddings, or an embedding or
/// encoder parameter is missing (an encoder half loaded is never useful); a missing pooler or
/// head is reported, not refused (BertForMaskedLM saves no pooler, BertModel no heads).
HfBertLoadReport load_hf_bert_weights(BertForPreTrainingImpl& model,
                                      const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
                                      const std::string& where);

/// Our parameter name for a Hugging Face tensor name, "" when it maps to none (tied, buffers,
/// or unknown). Exposed for tests and the report.
std::string hf_bert_parameter_name(const std::string& hf_name);

}  // namespace nlpzoo
