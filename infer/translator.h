#pragma once
// Text in, text out: tokenizes sentences, batches them, runs greedy or beam search over any
// IncrementalDecoder (RNN seq2seq, Transformer, a scripted twin) and detokenizes.
#include <torch/torch.h>

#include <functional>
#include <string>
#include <vector>

#include "datasets/tokenizer.h"
#include "infer/search.h"
#include "models/incremental_decoder.h"

namespace nlpzoo {

struct Translation {
  std::vector<Hypothesis> hypotheses;      // best first (n_best of them); empty for an empty line
  std::vector<std::string> source_pieces;  // the pieces the model read, "</s>" last
  bool truncated = false;                  // the source was cut to max_positions
};

class Translator {
 public:
  /// `model` must already be on `device` and in eval mode; the references must outlive this.
  /// max_positions: longest source the model reads, EOS included (0 = no limit); longer
  /// sources are cut to max_positions - 1 pieces and EOS (Translation::truncated).
  Translator(IncrementalDecoder& model, const Tokenizer& source, const Tokenizer& target, int64_t max_positions,
             torch::Device device);

  /// Translates each line. beam_size 1 runs greedy search (as fairseq's --beam 1), larger
  /// runs beam search. Sentences are grouped `batch_size` at a time in order of length,
  /// results come back in input order. An empty (or all-whitespace) line gives no hypotheses.
  /// The first call sets glibc's M_MMAP_THRESHOLD (32 MiB) and M_TRIM_THRESHOLD (256 MiB) for
  /// the process, unless the environment sets them: see translator.cpp. On a CPU in a bf16
  /// autocast region, with at most 16 rows a step (batch_size x beam_size), it runs on one
  /// intra-op thread and restores the count on return (faster there, see translator.cpp).
  std::vector<Translation> translate(const std::vector<std::string>& lines, const SearchOptions& options,
                                     int64_t batch_size = 32) const;

  /// Forced decoding (infer/search.h, forced_log_probs) of targets[i] (ids, without BOS and
  /// EOS) after lines[i], batched as translate batches and with its sources: per line, the
  /// model's log-prob of each target token and of EOS after them. An empty line gives none.
  std::vector<std::vector<double>> force(const std::vector<std::string>& lines,
                                         const std::vector<std::vector<int64_t>>& targets, int64_t batch_size = 32) const;

  /// The detokenized text of a hypothesis.
  std::string text(const Hypothesis& hypothesis) const;
  /// The target pieces of a hypothesis, "</s>" last if it finished (attention plot labels).
  std::vector<std::string> target_pieces(const Hypothesis& hypothesis) const;

 private:
  // Each line's source ids (EOS last, cut to max_positions; none for an empty line), with
  // out's source_pieces and truncated filled when given.
  std::vector<std::vector<int64_t>> source_ids(const std::vector<std::string>& lines, std::vector<Translation>* out) const;
  // f(src [B, S] on the device, the lines of its rows) for the non-empty ids, batch_size at a time.
  void for_each_batch(const std::vector<std::vector<int64_t>>& ids, int64_t batch_size,
                      const std::function<void(const torch::Tensor&, const std::vector<size_t>&)>& f) const;

  IncrementalDecoder& model_;
  const Tokenizer& source_;
  const Tokenizer& target_;
  int64_t max_positions_;
  torch::Device device_;
};

}  // namespace nlpzoo
