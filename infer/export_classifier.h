#pragma once
// TorchScript export of the average-of-embeddings sentence classifier
// (models/classifier/average_embedding.h): its "scripted twin" (docs/ARCHITECTURE.md), built
// like the other twins (infer/script_twin.h). Parameters, under scripted_name ('.' -> "__"):
//   embedding.weight -> embedding__weight   [V, embed_dim]
//   output.weight    -> output__weight      [C, embed_dim]
//   output.bias      -> output__bias        [C]
// Attributes: vocab_size, embed_dim, num_classes, pad_id (ints), labels (List[str]: class id i
// is labels[i]).
// Methods (B sentences, T positions, C classes):
//   forward(tokens: [B, T] int64, each row's pieces then pad_id) -> logits [B, C] float:
//       W_o mean(embedding of the row's first n tokens) + b_o, n = the row's non-pad tokens
//       (at least 1), as the eager model's forward in eval mode (no dropout).
//   predict(tokens) -> probabilities [B, C] float: softmax(forward(tokens)).
// The tokens are the SentencePiece ids of the normalized sentence (the run's lowercase and
// split_punctuation; spm.model and config.ini travel in the file).
// The RNN classifiers have no twin yet.
#include <torch/script.h>

#include <map>
#include <string>
#include <vector>

#include "models/classifier/average_embedding.h"

namespace nlpzoo {

/// The twin of `model` described above, in eval mode, holding copies of its parameters (later
/// training of `model` does not reach them). Throws std::invalid_argument if `labels` does not
/// hold one name per class.
torch::jit::Module script_average_embedding_classifier(AverageEmbeddingClassifierImpl& model,
                                                       const std::vector<std::string>& labels);

/// Scripts `model`, moves the twin to the CPU and saves it atomically to `out_path` with
/// `extra_files` (e.g. "config.ini", "spm.model") plus a "README.txt". Throws
/// std::invalid_argument as script_average_embedding_classifier or if `extra_files` names
/// "README.txt"; UserError naming `out_path` if it cannot be written, leaving any earlier file
/// there untouched.
void export_average_embedding_classifier(const std::string& out_path, AverageEmbeddingClassifierImpl& model,
                                         const std::vector<std::string>& labels,
                                         const std::map<std::string, std::string>& extra_files);

}  // namespace nlpzoo
