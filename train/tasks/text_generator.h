#pragma once
// The capability "this task's model generates text" (language models). `nlpzoo generate`
// works with the run of any task that offers it (Task::text_generator).
#include "datasets/tokenizer.h"
#include "models/causal_decoder.h"

namespace nlpzoo {

class TextGenerator {
 public:
  virtual ~TextGenerator() = default;
  /// The model sampling draws from (infer/sampling.h).
  virtual CausalDecoder& causal_decoder() = 0;
  /// The SentencePiece model the text is encoded and decoded with.
  virtual const Tokenizer& tokenizer() const = 0;
  /// Whether EOS ends a text (a corpus of sentences) or is a line break inside one (a text
  /// file read whole): then sampling goes on past it and prints it as a newline.
  virtual bool eos_ends_text() const { return true; }
};

}  // namespace nlpzoo
