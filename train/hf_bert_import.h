#pragma once
// Reading a published BERT checkpoint in Hugging Face's folder layout:
//   config.json            BertConfig (bert_options_from_hf_config, below)
//   model.safetensors      the weights, read as data (core/safetensors.h); never pytorch_model.bin,
//                          a pickle that runs code when it is loaded
//   vocab.txt              the WordPiece vocabulary (datasets/wordpiece.h)
//   tokenizer_config.json  optional: do_lower_case (default true, as BertTokenizer's),
//                          strip_accents (null: follows do_lower_case), tokenize_chinese_chars
// into our BertForPreTraining and WordPiece tokenizer, with a report of what each tensor became.
#include <nlohmann/json.hpp>

#include <string>

#include "datasets/wordpiece.h"
#include "models/bert/bert.h"
#include "models/bert/hf_bert.h"

namespace nlpzoo {

/// Our options for a Hugging Face config.json (`where` names it in errors): hidden_size,
/// num_hidden_layers, num_attention_heads, intermediate_size, hidden_act, max_position_embeddings,
/// type_vocab_size, vocab_size, layer_norm_eps, hidden_dropout_prob, attention_probs_dropout_prob,
/// pad_token_id (BertConfig's defaults where a key is absent). Throws UserError naming the key
/// for a model_type other than "bert", a hidden_act other than "gelu" (the tanh approximations
/// "gelu_new" / "gelu_pytorch_tanh" compute another function), a position_embedding_type other
/// than "absolute", a decoder (is_decoder / add_cross_attention), or a size that is not a
/// positive integer or does not divide as BERT needs.
BertOptions bert_options_from_hf_config(const nlohmann::json& config, const std::string& where);

struct HfBertImport {
  BertOptions options;                 // from config.json; layer_norm_eps 1e-12 for Google's checkpoints
  BertForPreTraining model{nullptr};   // every weight from the file (train mode: call eval() to infer)
  WordPieceTokenizer tokenizer;        // vocab.txt with tokenizer_config.json's casing
  HfBertLoadReport report;             // loaded / tied / ignored / unexpected / missing, by name
};

/// Imports the folder `dir`. Throws UserError naming the file and the reason when config.json,
/// model.safetensors or vocab.txt is missing or malformed, when only pytorch_model.bin is there
/// (with the command that converts it to safetensors), when a value of the config is not
/// supported, when weights are missing or of another shape (load_hf_bert_weights), or when the
/// vocabulary does not fit the model (more tokens than vocab_size, no [PAD] [UNK] [CLS] [SEP]
/// [MASK], or [PAD] at another id than pad_token_id).
HfBertImport import_hf_bert(const std::string& dir);

}  // namespace nlpzoo
