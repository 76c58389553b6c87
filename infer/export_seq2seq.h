#pragma once
// TorchScript export of the RNN encoder-decoder: "the scripted twin" (infer/script_twin.h).
//
// LibTorch's C++ modules cannot be scripted, so script_seq2seq builds a torch::jit::Module by
// hand: it copies every trained tensor of a Seq2SeqImpl into it and defines the inference
// methods in TorchScript source generated for the model's options (cell, layers, directions,
// attention, input feeding are decided in C++, so the script has no branches on them).
//
// Parameter names. A TorchScript attribute name cannot contain '.', so every eager name maps
// to the twin by replacing each '.' with "__" (scripted_name):
//   src_embed.weight                         -> src_embed__weight
//   encoder.rnn.weight_ih_l0_reverse         -> encoder__rnn__weight_ih_l0_reverse
//   attention.W_s.weight                     -> attention__W_s__weight
// The twin holds exactly the eager model's parameters (and buffers, of which Seq2SeqImpl has
// none today) under these names, nothing else: `twin.named_parameters()` is the eager
// `named_parameters()` with renamed keys, as float tensors that do not require grad.
//
// Attributes (plain ints/bools/strings): src_vocab_size, tgt_vocab_size, embed_dim,
// hidden_size, num_layers, bidirectional, attention_dim, input_feeding, cell ("gru" | "lstm" |
// "rnn"), attention ("none" | "additive" | "dot" | "general"), pad_id, bos_id, eos_id.
//
// Methods (all tensors batch-first; B sentences, S source positions, L = num_layers,
// H = hidden_size, V = tgt_vocab_size, N = rows being decoded). Tensors a configuration does
// not use are returned with a zero-width last dim ([B, 0] or [B, S, 0]) so every
// configuration has the same signatures and search can index_select(0, rows) all of them:
//   encode(src: [B, S] int64) -> (states [B, S, H] float (0 at padding), mask [B, S] bool
//       (true at real tokens), keys [B, S, P] float (attention's projected keys; [B, S, 0]
//       for none), summary [B, H] float ([→h_last; ←h_first] of the top encoder layer),
//       h [B, L, H] float (initial decoder state), c [B, L, H] (LSTM) or [B, 0],
//       feed [B, H] zeros (input feeding) or [B, 0])
//   step(prev_tokens: [N] int64, states, mask, keys, summary, h, c, feed)
//       -> (log_probs [N, V] float, attention [N, S] float ([N, 0] for none), h, c, feed):
//       one decoder step exactly as Seq2SeqImpl::step (BOS at the first step); the inputs
//       are not modified, the returned h, c, feed are the state after prev_tokens.
//   translate_greedy(src: [B, S] int64, max_len: int >= 0) -> [B, T] int64: greedy decoding
//       from BOS; each row holds its argmax tokens up to and including EOS, then PAD. T is
//       the number of steps until every row had emitted EOS, or max_len if some row never did.
// Sources are padded with pad_id at the end of each row (datasets' batches are). The twin is
// inference-only: dropout is never applied (as the eager model in eval mode). Its math is
// the eager model's, op for op, except that the bidirectional encoder runs each direction as
// a batched single-layer aten RNN over rows reversed within their lengths instead of packing,
// which gives the same values (tests hold the two within 1e-5). Shape or dtype errors in the
// inputs surface as std::runtime_error from the TorchScript interpreter (with its traceback).
#include <torch/script.h>
#include <torch/torch.h>

#include <map>
#include <string>

#include "infer/script_twin.h"  // scripted_name
#include "models/incremental_decoder.h"
#include "models/seq2seq/seq2seq.h"

namespace nlpzoo {

/// The scripted twin of `model` (see the file comment for names and methods), as build_twin
/// (infer/script_twin.h) makes every twin: in eval mode, a snapshot of the parameters, with
/// build_twin's errors.
torch::jit::Module script_seq2seq(Seq2SeqImpl& model);

/// Saves the twin of `model` to `out_path` with `extra_files` (e.g. "config.ini",
/// "spm.src.model", "spm.tgt.model") and seq2seq_export_readme, as export_twin
/// (infer/script_twin.h) does, with its errors.
void export_seq2seq(const std::string& out_path, Seq2SeqImpl& model,
                    const std::map<std::string, std::string>& extra_files);

/// The README.txt text stored in every export of a model with these options: configuration,
/// special token ids, the methods' signatures, and how to load the file from Python.
std::string seq2seq_export_readme(const Seq2SeqOptions& options);

/// The IncrementalDecoder seam over a scripted twin (built by script_seq2seq or loaded with
/// torch::jit::load), so C++ search can run an exported file. State tensors carry the eager
/// model's names ("states", "mask", "keys", "summary", "h", "c", "feed"); the ones a
/// configuration does not use are left out, as Seq2SeqImpl::init does.
class ScriptedSeq2Seq : public IncrementalDecoder {
 public:
  /// Throws UserError if `module` lacks the twin's methods or attributes.
  explicit ScriptedSeq2Seq(torch::jit::Module module);
  /// src: [B, S] int64 on the module's device. Same tensors (names, shapes, dtypes) as
  /// Seq2SeqImpl::init. Throws c10::Error on a wrong rank (as Seq2SeqImpl::encode), UserError
  /// if `encode` does not return the twin's 7-tuple.
  DecoderState init(const torch::Tensor& src) override;
  /// prev_tokens: [N] int64. Same result as Seq2SeqImpl::step; attention is undefined for
  /// attention none. Throws UserError if `step` does not return the twin's 5-tuple.
  DecoderStep step(const DecoderState& state, const torch::Tensor& prev_tokens) override;
  int64_t target_vocab_size() const override { return tgt_vocab_size_; }
  torch::jit::Module& module() { return module_; }

 private:
  torch::jit::Module module_;
  int64_t tgt_vocab_size_ = 0;
  // Which optional state tensors this configuration uses (attention keys, LSTM c, h̃ feed).
  bool has_keys_ = false, has_c_ = false, has_feed_ = false;
};

}  // namespace nlpzoo
