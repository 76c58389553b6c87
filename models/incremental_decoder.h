#pragma once
// The seam between sequence-to-sequence models and search (greedy, beam, sampling).
// A model that can decode one target token at a time implements IncrementalDecoder; the
// search code in infer/ knows nothing else about it, so the attention RNN and the
// Transformer share one beam search.
#include <torch/torch.h>

#include <map>
#include <set>
#include <string>

namespace nlpzoo {

/// Everything a decoder carries between steps: encoder outputs, masks, recurrent state,
/// cached keys/values. Every tensor has the batch (or batch x beam) on dim 0, so search
/// can reorder or expand the whole state with index_select(0, rows) without knowing what
/// is inside.
struct DecoderState {
  std::map<std::string, torch::Tensor> tensors;
  /// Names of the tensors that are fixed for the whole decode and equal on every row of one
  /// sentence (encoder outputs, source masks, the Transformer's cross-attention keys/values),
  /// as opposed to those a step changes per hypothesis. A model may list them so that beam
  /// search does not re-gather them when it only reorders beams within their sentences
  /// (CTranslate2's should_reorder_state); listing none is always correct, only slower.
  std::set<std::string> per_sentence;

  /// Selects rows along dim 0 of every tensor. rows: [N] int64. Returns a new state.
  /// With reorder_per_sentence = false the per_sentence tensors are kept as they are: the
  /// caller promises that row i of the result comes from a row of the same sentence as row i
  /// here (beams reordered within unchanged sentence blocks), so those rows are already right.
  DecoderState index_select(const torch::Tensor& rows, bool reorder_per_sentence = true) const {
    DecoderState out;
    out.per_sentence = per_sentence;
    for (const auto& [name, t] : tensors)
      out.tensors[name] = !reorder_per_sentence && per_sentence.count(name) ? t : t.index_select(0, rows);
    return out;
  }
};

struct DecoderStep {
  torch::Tensor log_probs;  // [N, V] float32: log P(y_t | y_<t, x), already log-softmaxed
  DecoderState state;       // the state after consuming prev_tokens
  torch::Tensor attention;  // [N, S] float32 attention over source positions, or undefined
};

class IncrementalDecoder {
 public:
  virtual ~IncrementalDecoder() = default;

  /// Encodes a padded source batch. src: [B, S] int64, padded with kPadId at the end, each
  /// row ending with kEosId. Returns the initial decoder state (batch on dim 0).
  virtual DecoderState init(const torch::Tensor& src) = 0;

  /// Consumes one target token per row (kBosId at the first step) and scores the next.
  /// prev_tokens: [N] int64 on the model's device. Must not modify `state`.
  virtual DecoderStep step(const DecoderState& state, const torch::Tensor& prev_tokens) = 0;

  /// Size of the target vocabulary (width of log_probs).
  virtual int64_t target_vocab_size() const = 0;
};

}  // namespace nlpzoo
