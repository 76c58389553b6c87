#pragma once
// The seam between generative language models and whatever reads them one token at a time
// (sampling, `nlpzoo generate`, the golden harness): P(y_t | y_<t) with nothing to condition
// on but the tokens so far. The recurrent LM implements it; a decoder-only Transformer would
// carry its cached keys and values in the same opaque state, so the code above serves both.
#include <torch/torch.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace nlpzoo {

/// What a decoder carries from one token to the next (a recurrent state, cached keys and
/// values). Only the decoder that made it reads it.
struct CausalState {
  std::map<std::string, torch::Tensor> tensors;
};

struct CausalStep {
  /// [V] float32 on the model's device: log P(next token | tokens read), up to one constant
  /// (the logits; softmax of them is the distribution).
  torch::Tensor logits;
  CausalState state;  // the state after the tokens read
};

class CausalDecoder {
 public:
  virtual ~CausalDecoder() = default;

  /// Reads `tokens` (ids, at least one) from the empty state in one pass and scores the next.
  virtual CausalStep begin(const std::vector<int64_t>& tokens) = 0;

  /// Reads one more token after `state` and scores the next. Must not modify `state`.
  virtual CausalStep step(const CausalState& state, int64_t token) = 0;

  /// Teacher forcing in one pass from the empty state: row t scores the token after
  /// tokens[0..t]. Returns [T, V] float32 logits (as CausalStep::logits) on the model's device.
  virtual torch::Tensor sequence_logits(const std::vector<int64_t>& tokens) = 0;

  /// Width of the logits.
  virtual int64_t vocab_size() const = 0;

  /// The module holding the parameters (for train/eval mode).
  virtual torch::nn::Module& module() = 0;
};

}  // namespace nlpzoo
