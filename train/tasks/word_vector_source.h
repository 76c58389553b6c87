#pragma once
// The capability "this task's model holds word vectors" (word2vec, GloVe, fastText-style
// tasks). `nlpzoo embed ... --run-dir RUN` works with the run of any task that offers it, so a
// new word-vector task only has to derive from WordVectorSource as well as Task.
#include "datasets/word_vectors.h"

namespace nlpzoo {

class WordVectorSource {
 public:
  virtual ~WordVectorSource() = default;
  /// The model's word vectors: one row per vocabulary word, most frequent first (the order
  /// word2vec files use, which restrict_vocab and `embed plot --top` rely on), float32 on CPU.
  virtual WordVectors word_vectors() const = 0;
};

}  // namespace nlpzoo
