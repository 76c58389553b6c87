#pragma once
// The capability "this task's model holds word vectors" (word2vec, GloVe, fastText-style
// tasks). `nlpzoo embed ... --run-dir RUN` works with the run of any task that offers it
// (Task::word_vector_source); word-vector tasks get it by deriving from WordVectorTask.
#include <optional>
#include <string>

#include "datasets/word_vectors.h"

namespace nlpzoo {

class WordVectorSource {
 public:
  virtual ~WordVectorSource() = default;
  /// The model's word vectors: one row per vocabulary word, most frequent first (the order
  /// word2vec files use, which restrict_vocab and `embed plot --top` rely on), float32 on CPU.
  virtual WordVectors word_vectors() const = 0;
  /// Optional capability: a vector for a word outside the vocabulary ([D] float32 on CPU), e.g.
  /// from its character n-grams (fastText-style subword models); std::nullopt when the model
  /// cannot make one for `word` (the default: a table of whole words knows only its words).
  virtual std::optional<torch::Tensor> oov_vector(const std::string& /*word*/) const { return std::nullopt; }
};

}  // namespace nlpzoo
