#pragma once
// TorchScript export of the sentence classifiers (models/classifier/): their "scripted twins"
// (infer/script_twin.h), built like the other twins (infer/script_twin.h).
//
// Parameters, under scripted_name ('.' -> "__"), as the eager model names them:
//   embedding.weight -> embedding__weight   [V, embed_dim]
//   output.weight    -> output__weight      [C, F]   (F: embed_dim, or dirs * hidden_size)
//   output.bias      -> output__bias        [C]
//   RNN only: rnn.rnn.weight_ih_l0 -> rnn__rnn__weight_ih_l0, ... (LibTorch's names, _reverse
//   for the backward direction of a bidirectional stack).
// Attributes: vocab_size, embed_dim, num_classes (C), pad_id (ints); labels (List[str]: class id
// i is labels[i]; empty for regression) and regression (bool) (add_classifier_outputs); RNN
// only: cell ("rnn" | "gru" | "lstm"), hidden_size, num_layers, bidirectional, pooling
// ("last" | "max" | "mean").
// Methods (B sentences, T positions):
//   forward(tokens: [B, T] int64, each row's pieces then pad_id) -> logits [B, C] float, as the
//       eager model's forward in eval mode (no dropout). A row's length n is its count of
//       non-pad tokens (at least 1), as TextClassifierImpl::lengths counts it.
//       avg_emb: W_o mean(embedding of the row's first n tokens) + b_o.
//       rnn:     the row's first n tokens read by the recurrent stack (packed, as the eager
//                Recurrent runs it: same aten kernels), pooled (last: the top layer's final
//                state of each direction; max / mean over the n states), then W_o s + b_o.
//       rnn with ELMo (attribute elmo = True; the biLM's tensors under elmo__bilm__*, the mix's
//                under elmo__mix__*): the recurrent stack reads [embeddings; elmo_features(tokens,
//                lengths, mask)], the mix of the biLM's layers (infer/export_lm.h bilm_layers).
//   predict(tokens) -> probabilities [B, C] float: softmax(forward(tokens)); for a regression
//       model (labels empty, C = 1) the score [B] float: forward(tokens)[:, 0].
// The tokens are the SentencePiece ids of the normalized sentence (the run's lowercase and
// split_punctuation; spm.model and config.ini travel in the file); a pair is A <eos>=3 B.
#include <torch/script.h>

#include <map>
#include <string>
#include <vector>

#include "models/classifier/average_embedding.h"
#include "models/classifier/rnn_classifier.h"

namespace nlpzoo {

/// The twin of `model` described above, in eval mode, holding copies of its parameters (later
/// training of `model` does not reach them). `labels`: one name per class, or empty for a
/// regression model (one output). Throws std::invalid_argument if `labels` does not match the
/// model's outputs.
torch::jit::Module script_average_embedding_classifier(AverageEmbeddingClassifierImpl& model,
                                                       const std::vector<std::string>& labels);
torch::jit::Module script_rnn_classifier(RnnClassifierImpl& model, const std::vector<std::string>& labels);

/// The twin of whichever classifier `model` is (average of embeddings or RNN). Throws
/// std::invalid_argument as above, or for a classifier type without a twin.
torch::jit::Module script_text_classifier(TextClassifierImpl& model, const std::vector<std::string>& labels);

/// Saves the twin of `model` (script_text_classifier) to `out_path` with `extra_files` (e.g.
/// "config.ini", "spm.model", "labels.txt") and text_classifier_export_readme, as export_twin
/// (infer/script_twin.h) does, with its errors and script_text_classifier's.
void export_text_classifier(const std::string& out_path, TextClassifierImpl& model,
                            const std::vector<std::string>& labels,
                            const std::map<std::string, std::string>& extra_files);

/// The README.txt stored with `model`'s export: the architecture and sizes, the labels (or that
/// it is a regression model), the methods, and the Python lines that classify a sentence.
std::string text_classifier_export_readme(TextClassifierImpl& model, const std::vector<std::string>& labels);

}  // namespace nlpzoo
