#pragma once
// TorchScript export of the recurrent language model (models/rnn/language_model.h): its
// "scripted twin" (infer/script_twin.h), built like the seq2seq twins (infer/export_seq2seq.h).
//
// script_language_model builds a torch::jit::Module by hand, copies every parameter of a
// LanguageModelImpl into it under scripted_name ('.' -> "__"):
//   embedding.weight          -> embedding__weight   (E, [V, embed_dim])
//   rnn.rnn.weight_ih_l0      -> rnn__rnn__weight_ih_l0   (and _hh_, bias_ih_, bias_hh_, per layer)
//   output.weight, output.bias -> output__weight, output__bias   (untied)
//   output_bias               -> output_bias   (tied: the logits are h Eᵀ + output_bias)
// and defines the methods in TorchScript source generated for the model's options (cell,
// layers, tied or not are resolved in C++, so the script has no branches on them).
//
// Attributes (plain ints/bools/strings): vocab_size, embed_dim, hidden_size, num_layers,
// cell ("rnn" | "gru" | "lstm"), tie_embeddings, pad_id, unk_id, bos_id, eos_id.
//
// State: LibTorch's layout, as LanguageModelImpl::forward carries it (RecurrentState):
// h [L, B, H] float, c [L, B, H] float for lstm. rnn and gru have no cell state: their c is
// passed through unchanged (init_state makes it [L, B, 0]), so every cell has the same
// signatures and a caller's sampling loop does not depend on the cell.
// Methods (B rows, T positions, L = num_layers, H = hidden_size, V = vocab_size):
//   init_state(batch_size: int) -> (h, c): zeros, the state a text starts from.
//   forward(tokens: [B, T] int64, h, c) -> (log_probs [B, T, V] float, h, c): log P(y_{t+1} |
//       y_<=t) at every position, and the state after the last one: log_softmax of
//       LanguageModelImpl::forward's logits.
//   step(tokens: [B] int64, h, c) -> (log_probs [B, V] float, h, c): forward for one position.
// Generation as nlpzoo generate does it: forward over EOS + the prompt's pieces from
// init_state, then step one drawn token at a time until EOS (infer/sampling.h).
// The twin is inference-only: dropout is never applied (as the eager model in eval mode). Its
// math is the eager model's, op for op (tests hold the two within 1e-5). Shape or dtype errors
// in the inputs surface as std::runtime_error from the TorchScript interpreter.
#include <torch/script.h>
#include <torch/torch.h>

#include <map>
#include <string>

#include "models/rnn/bilm.h"
#include "models/rnn/language_model.h"

namespace nlpzoo {

/// The scripted twin of `model` (see the file comment for names and methods), as build_twin
/// (infer/script_twin.h) makes every twin: in eval mode, a snapshot of the parameters, with
/// build_twin's errors.
torch::jit::Module script_language_model(LanguageModelImpl& model);

/// Saves the twin of `model` to `out_path` with `extra_files` ("config.ini", "spm.model") and
/// language_model_export_readme, as export_twin (infer/script_twin.h) does, with its errors.
void export_language_model(const std::string& out_path, LanguageModelImpl& model,
                           const std::map<std::string, std::string>& extra_files);

/// The README.txt text stored in every export of a model with these options: configuration,
/// special token ids, the methods' signatures, and a sampling loop in Python.
std::string language_model_export_readme(const LanguageModelOptions& options);

// ---- ELMo's bidirectional LM (models/rnn/bilm.h) ----
// Its twin holds the biLM's tensors under their eager names (embedding__weight,
// forward_lstm__0__rnn__weight_ih_l0, forward_proj__0__weight, ..., output__weight) and has
//   forward(tokens: [B, T] int64, each row's pieces then pad 0) -> [L + 1, B, T, 2d] float: the
//       representations ELMo mixes, of each piece, the biLM reading [CLS] pieces [SEP] (an <eos>
//       as [SEP]), as ElmoImpl reads them (the same aten kernels).
//   bilm_layers(tokens, lengths: [B] int64) -> List[Tensor]: the same, for given row lengths.

/// TorchScript source of `bilm_layers(self, tokens, lengths) -> List[Tensor]` (above) for a
/// biLM of options `o` whose tensors the twin holds under `prefix` ("" for the bilm twin,
/// "elmo__bilm__" inside a classifier's).
std::string twin_bilm_layers_source(const BiLanguageModelOptions& o, const std::string& prefix);

torch::jit::Module script_bilm(BiLanguageModelImpl& model);

/// Saves script_bilm's twin with `extra_files` and a README, as export_twin does.
void export_bilm(const std::string& out_path, BiLanguageModelImpl& model,
                 const std::map<std::string, std::string>& extra_files);

}  // namespace nlpzoo
