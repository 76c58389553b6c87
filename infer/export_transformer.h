#pragma once
// TorchScript export of the Transformer encoder-decoder: its "scripted twin"
// (infer/script_twin.h), built like the RNN seq2seq's (infer/export_seq2seq.h).
//
// script_transformer builds a torch::jit::Module by hand, copies every parameter and buffer of
// a TransformerSeq2SeqImpl into it under scripted_name ('.' -> "__", e.g.
// decoder.layers.1.cross_attn.W_K.weight -> decoder__layers__1__cross_attn__W_K__weight;
// sinusoidal.table is the one buffer) and defines the inference methods in TorchScript source
// generated for the model's options: positions, pre/post-LN, activation, layer counts, heads,
// shared embeddings and the reported attention head are resolved in C++, so the script has no
// branches on them. With share_embeddings the source embedding is tgt_embed__weight (the eager
// model registers the shared table once, as tgt_embed).
//
// Attributes (plain ints/bools/strings): src_vocab_size, tgt_vocab_size, d_model, num_heads,
// num_encoder_layers, num_decoder_layers, ffn_dim, activation ("relu" | "gelu"), pre_norm,
// positions ("sinusoidal" | "learned" | "relative"), max_positions, relative_k,
// share_embeddings, attention_head (-1 = mean over heads), pad_id, bos_id, eos_id.
//
// Methods (batch-first; B sentences, S source positions, D = d_model, H = num_heads,
// d_k = D / H, L = num_decoder_layers, V = tgt_vocab_size, N = rows being decoded, t = target
// positions consumed so far):
//   encode(src: [B, S] int64) -> (memory [B, S, D] float, src_mask [B, S] bool (true at real
//       tokens)): TransformerSeq2SeqImpl::encode.
//   init_cache(memory: [B, S, D], src_mask: [B, S] bool) -> (cross: List[Tensor],
//       self_cache: List[Tensor]): cross = [k_cross_0, v_cross_0, k_cross_1, ...], each
//       [B, H, S, d_k], the decoder layers' projections of memory; self_cache = [k_self_0,
//       v_self_0, ...], each [B, H, 0, d_k] (empty). The eager init()'s state, in lists.
//       src_mask is only checked against memory's shape.
//   step(prev_tokens: [N] int64, step_index: int, src_mask: [N, S] bool, cross: List[Tensor],
//        self_cache: List[Tensor]) -> (log_probs [N, V] float, attention [N, S] float,
//        self_cache: List[Tensor] with each entry grown to [N, H, t+1, d_k]):
//       one decoder step exactly as TransformerSeq2SeqImpl::step (BOS at step 0): prev_tokens
//       sit at absolute position step_index, which must equal t (the self caches' length).
//       attention is the last decoder layer's cross-attention, averaged over heads (or head
//       attention_head), zero at padding. The input lists are not modified.
//   translate_greedy(src: [B, S] int64, max_len: int >= 0) -> [B, T] int64: greedy decoding
//       from BOS; each row holds its argmax tokens up to and including EOS, then PAD. T is the
//       number of steps until every row had emitted EOS, or max_len if some row never did.
// Sources are padded with pad_id at the end of each row. The twin is inference-only: dropout
// is never applied (as the eager model in eval mode). Its math is the eager model's, op for op
// (tests hold the two within 1e-5). Sinusoidal positions past max_positions are computed on the
// fly as the eager model does; learned positions past max_positions fail, as they do eagerly.
// Errors in the inputs (wrong rank, step_index != t, a position past the learned table)
// surface as std::runtime_error from the TorchScript interpreter, with its traceback.
#include <torch/script.h>
#include <torch/torch.h>

#include <map>
#include <string>

#include "infer/script_twin.h"
#include "models/incremental_decoder.h"
#include "models/transformer/transformer.h"

namespace nlpzoo {

/// The scripted twin of `model` (see the file comment for names and methods), as build_twin
/// (infer/script_twin.h) makes every twin: in eval mode, a snapshot of the parameters and
/// buffers, with build_twin's errors.
torch::jit::Module script_transformer(TransformerSeq2SeqImpl& model);

/// Saves the twin of `model` to `out_path` with `extra_files` (e.g. "config.ini",
/// "spm.src.model", "spm.tgt.model") and transformer_export_readme, as export_twin
/// (infer/script_twin.h) does, with its errors.
void export_transformer(const std::string& out_path, TransformerSeq2SeqImpl& model,
                        const std::map<std::string, std::string>& extra_files);

/// The README.txt text stored in every export of a model with these options: configuration,
/// special token ids, the methods' signatures, and how to run the file from Python.
std::string transformer_export_readme(const TransformerOptions& options);

/// The IncrementalDecoder seam over a Transformer twin (built by script_transformer or loaded
/// with torch::jit::load), so C++ search can run an exported file. Its DecoderState holds the
/// eager model's tensors under the eager names ("src_mask", "k_cross_<l>", "v_cross_<l>",
/// "k_self_<l>", "v_self_<l>"), so beam search reorders it the same way.
class ScriptedTransformer : public IncrementalDecoder {
 public:
  /// Throws UserError if `module` lacks the twin's methods or attributes.
  explicit ScriptedTransformer(torch::jit::Module module);
  /// src: [B, S] int64 on the module's device. Same tensors (names, shapes, dtypes) as
  /// TransformerSeq2SeqImpl::init. Throws c10::Error on a wrong rank (as the eager model),
  /// UserError if the twin's methods return something else than documented.
  DecoderState init(const torch::Tensor& src) override;
  /// prev_tokens: [N] int64. Same result as TransformerSeq2SeqImpl::step (attention [N, S]).
  /// Throws std::out_of_range if `state` lacks a tensor init() put there, UserError if `step`
  /// does not return the twin's 3-tuple.
  DecoderStep step(const DecoderState& state, const torch::Tensor& prev_tokens) override;
  int64_t target_vocab_size() const override { return tgt_vocab_size_; }
  torch::jit::Module& module() { return module_; }

 private:
  torch::jit::Module module_;
  int64_t tgt_vocab_size_ = 0;
  int64_t num_layers_ = 0;  // decoder layers: one cross and one self K/V pair each
};

}  // namespace nlpzoo
