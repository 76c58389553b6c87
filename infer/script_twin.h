#pragma once
// What every scripted twin shares (docs/ARCHITECTURE.md, "the scripted twin"): the mapping
// of eager parameter names to TorchScript attribute names, copying a trained module's
// tensors into a hand-built torch::jit::Module, saving it atomically with extra files and a
// README, and unpacking the tuples its methods return. The per-family exporters
// (export_seq2seq, export_transformer) add the TorchScript source of their methods.
#include <torch/script.h>
#include <torch/torch.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "models/rnn/recurrent.h"

namespace nlpzoo {

/// The twin's name for an eager parameter/buffer name: every '.' becomes "__"
/// ("encoder.layers.0.norm1.weight" -> "encoder__layers__0__norm1__weight"), because a
/// TorchScript attribute name cannot contain '.'.
std::string scripted_name(const std::string& eager_name);

/// Registers a detached clone of every parameter (as a parameter) and every buffer (as a
/// buffer) of `model` on `twin` under its scripted_name. The clones do not require grad and
/// stay on the model's device; later changes to `model` do not reach them. A non-empty
/// `prefix` names `model` as a child of a larger module: its tensor "a.b" is then held as
/// scripted_name("<prefix>.a.b") (e.g. prefix "head": head__output__weight), so a twin can
/// hold several modules as the eager parent holding them names them. Throws
/// std::invalid_argument("<who>: parameter name ...") if an eager name already contains "__"
/// (the mapping would not be invertible).
void copy_tensors_into(torch::jit::Module& twin, const torch::nn::Module& model, const std::string& who,
                       const std::string& prefix = "");

/// "" when `twin` holds every parameter and buffer of `model` under its scripted_name with
/// equal values (as copy_tensors_into puts them), else the first difference: a name the twin
/// lacks, or one whose shape or values differ (with the max abs difference). `nlpzoo zoo
/// check` asks this of a fresh export; the export tests add that the twin's outputs match.
std::string twin_tensor_mismatch(const torch::nn::Module& model, const torch::jit::Module& twin);

/// Registers plain attributes that the twin's TorchScript reads as self.<name> and that
/// users see in Python as m.<name>.
void add_int_attribute(torch::jit::Module& twin, const std::string& name, int64_t value);
void add_bool_attribute(torch::jit::Module& twin, const std::string& name, bool value);
void add_string_attribute(torch::jit::Module& twin, const std::string& name, const std::string& value);

/// Moves `twin` to the CPU (so the file loads on any machine) and saves it atomically
/// (core/io.h atomic_write) to `out_path` with `extra_files` (name -> bytes) plus
/// "README.txt" = `readme`. Throws std::invalid_argument("<who>: ...") if `extra_files`
/// names "README.txt" itself, before writing anything; UserError naming `out_path` if it
/// cannot be written (missing folder, no permission, full disk), leaving any earlier file
/// there untouched.
void save_twin(const std::string& out_path, torch::jit::Module twin,
               const std::map<std::string, std::string>& extra_files, const std::string& readme,
               const std::string& who);

/// The README.txt lines every export ends with: loading the file and its extra files from
/// Python. `extra_files` are the names the example reads back; `example` is Python code run
/// on the loaded module `m` (one or more lines, indented by the footer).
std::string twin_readme_python_footer(const std::vector<std::string>& extra_files, const std::string& example);
/// The encoder-decoder twins' footer (config.ini, spm.src.model, spm.tgt.model; translate_greedy).
std::string twin_readme_python_footer();

/// TorchScript source of the weight list aten::rnn_tanh/gru/lstm take for a recurrent stack
/// registered under `prefix` (a models/rnn/recurrent.h Recurrent, whose LibTorch module is
/// "<prefix>.rnn"): "[self.<prefix>__rnn__weight_ih_l0, ..._hh_l0, bias_ih_l0, bias_hh_l0, ...]"
/// in LibTorch's flat order, for one layer and direction (twin_rnn_layer_params) or for
/// layers 0..num_layers-1 of a stack (twin_rnn_stack_params; bidirectional: each layer's
/// forward then its _reverse weights, the order aten::lstm's `params` expects).
std::string twin_rnn_layer_params(const std::string& prefix, int64_t layer, bool reverse);
std::string twin_rnn_stack_params(const std::string& prefix, int64_t num_layers, bool bidirectional = false);

/// The aten op running a cell's recurrence, as TorchScript names it: "torch.rnn_tanh" |
/// "torch.gru" | "torch.lstm", the kernels torch::nn::RNN/GRU/LSTM run.
std::string twin_aten_rnn(CellType cell);

/// What every classifier twin shares (infer/export_classifier.h, infer/export_bert.h).
/// Registers the attributes `labels` (List[str]: class id i is labels[i]; empty for a
/// regression model), `regression` (bool: labels is empty) and `num_classes` (int: the
/// outputs of forward). Regression is `labels` empty with a single output. Throws
/// std::invalid_argument("<who>: N labels for M outputs") otherwise, unless labels.size() ==
/// num_outputs.
void add_classifier_outputs(torch::jit::Module& twin, const std::vector<std::string>& labels, int64_t num_outputs,
                            const std::string& who);

/// TorchScript source of a classifier twin's predict(<params>), calling its forward(<args>)
/// (logits [B, C]): softmax over the classes -> probabilities [B, C] float, or for regression
/// the score, forward's single column -> [B] float. E.g. params "tokens: Tensor", args "tokens".
std::string twin_predict_source(const std::string& params, const std::string& args, bool regression);

/// The README.txt lines every classifier twin ends with: what predict returns (the labels, or
/// a score for regression), forward's and predict's signatures for `inputs` (e.g.
/// "tokens[B,T] int64"), then twin_readme_python_footer with the Python lines that classify
/// one sentence: load the SentencePiece model stored in the file as `sp`, run `prepare`
/// (Python lines that turn the string `text` into the model's input tensors, e.g.
/// "tokens = torch.tensor([sp.encode(text)])"; `text_line` assigns `text` first), then
/// m.predict(<call>) and print the label and its probability (or the score).
std::string twin_classifier_readme(const std::vector<std::string>& labels, const std::string& inputs,
                                   const std::string& text_line, const std::string& prepare, const std::string& call);

/// The elements of a twin method's result `v`, which must be a tuple of `size` elements.
/// Throws UserError("not an nlpzoo <family> export: '<method>' does not return a <size>-tuple")
/// otherwise: a file whose methods return something else is not a twin the caller can drive.
std::vector<c10::IValue> twin_tuple(const c10::IValue& v, size_t size, const std::string& method,
                                    const std::string& family);

/// Throws UserError("not an nlpzoo <family> export: no method/attribute '<name>'") unless
/// `module` has every one of `methods` and `attributes`.
void require_twin_members(const torch::jit::Module& module, const std::vector<std::string>& methods,
                          const std::vector<std::string>& attributes, const std::string& family);

}  // namespace nlpzoo
