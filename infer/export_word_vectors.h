#pragma once
// TorchScript export of word vectors (any WordVectorSource run: word2vec, GloVe, subword
// Skip-Gram): a module mapping token ids to vectors, so the vectors load with torch.jit.load in
// Python or torch::jit::load in C++ next to the zoo's other exports (infer/script_twin.h).
//
// Contents:
//   buffer  vectors     [V, D] float32: row i is the vector of word i (most frequent first, the
//                       row order of the word2vec files `nlpzoo embed export` writes).
//   attrs   words       List[str], V entries: word of each id.
//           word_to_id  Dict[str, int]: id of each word (the first of duplicates).
//           vocab_size, dim (int).
//   forward(ids: [...] int64) -> [..., D] float32: the rows of `ids`, any shape (an embedding
//           lookup). An id outside [0, V) raises the interpreter's index error.
//   ids(words: List[str]) -> [N] int64: word_to_id of each word; an unknown word raises KeyError.
// Subword models: only the vocabulary's words (their vectors already include the n-grams);
// out-of-vocabulary words need `nlpzoo embed` on the run.
#include <torch/script.h>

#include <map>
#include <string>

#include "datasets/word_vectors.h"

namespace nlpzoo {

/// The module above for `vectors`, in eval mode, holding a copy of the table. Throws
/// std::invalid_argument for an empty table.
torch::jit::Module script_word_vectors(const WordVectors& vectors);

/// Saves the module of `vectors` to `out_path` with `extra_files` (e.g. "config.ini") and a
/// README.txt (how to load and query it), as export_twin (infer/script_twin.h) does, with its
/// errors and script_word_vectors'.
void export_word_vectors(const std::string& out_path, const WordVectors& vectors,
                         const std::map<std::string, std::string>& extra_files);

}  // namespace nlpzoo
