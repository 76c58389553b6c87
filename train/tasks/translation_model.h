#pragma once
// The capability "this task's model translates" (encoder-decoders: the attention RNN, the
// Transformer). `nlpzoo translate` works with the run of any task that offers it
// (Task::translation_model), so a new encoder-decoder task only has to derive from it.
#include <cstdint>

#include "datasets/parallel_corpus.h"
#include "datasets/tokenizer.h"
#include "models/incremental_decoder.h"
#include "train/task.h"

namespace nlpzoo {

class TranslationModel {
 public:
  virtual ~TranslationModel() = default;
  /// The model as search sees it (infer/search.h, infer/translator.h).
  virtual IncrementalDecoder& decoder() = 0;
  virtual const Tokenizer& source_tokenizer() const = 0;
  virtual const Tokenizer& target_tokenizer() const = 0;
  /// Longest source the model can read, in pieces, EOS included; 0 = no limit. Only learned
  /// position embeddings end (the Transformer with positions = learned: the run's
  /// max_positions, past which no row was trained); the RNN, sinusoidal and relative
  /// positions read any length.
  virtual int64_t max_positions() const = 0;
  /// The raw sentence pairs of a split the run was loaded with (load_run's splits). Throws
  /// UserError if that split was not loaded.
  virtual const ParallelCorpus& raw_split(Split split) const = 0;
  /// Heads of the cross-attention the search reports (DecoderStep::attention) that can be
  /// shown one at a time; 0 when the model has a single attention (the RNN).
  virtual int64_t attention_heads() const = 0;
  /// Reports head `head` of the cross-attention instead of the mean over heads (-1); a
  /// display choice that changes no output. Needs -1 <= head < attention_heads(); throws
  /// std::out_of_range otherwise.
  virtual void set_attention_head(int64_t head) = 0;
};

}  // namespace nlpzoo
