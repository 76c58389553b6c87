#pragma once
// A "scripted twin" is how a C++ module is exported: LibTorch cannot script C++ code, so a
// torch::jit::Module holds the trained module's tensors as attributes and runs TorchScript
// source written from the same equations; python3-torch loads it as any TorchScript file.
// What every scripted twin shares: the mapping
// of eager parameter names to TorchScript attribute names; one shell (TwinSpec, build_twin,
// export_twin) that builds a torch::jit::Module holding a trained module's tensors, checks
// them against the eager ones and saves it atomically with extra files and a README; and
// unpacking the tuples its methods return. Each family's exporter (infer/export_*.h) gives
// the shell only what is its own: the TorchScript source of its methods, its attributes and
// its README text.
#include <torch/script.h>
#include <torch/torch.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "models/rnn/recurrent.h"

namespace nlpzoo {

/// The twin's name for an eager parameter/buffer name: every '.' becomes "__"
/// ("encoder.layers.0.norm1.weight" -> "encoder__layers__0__norm1__weight"), because a
/// TorchScript attribute name cannot contain '.'.
std::string scripted_name(const std::string& eager_name);

/// "" when `twin` holds every parameter and buffer of `model` under its scripted_name with
/// equal values (as build_twin puts them; NaN where the model has NaN), else the first
/// difference: a name the twin lacks, or one whose shape or values differ (with the max abs
/// difference). A non-empty `prefix` names `model` as a child, as TwinSpec::hold does.
/// `nlpzoo zoo check` asks this of a fresh export; the export tests add that the twin's
/// outputs match.
std::string twin_tensor_mismatch(const torch::nn::Module& model, const torch::jit::Module& twin,
                                 const std::string& prefix = "");

/// A plain attribute of a twin: its TorchScript reads it as self.<name>, Python as m.<name>.
struct TwinAttribute {
  std::string name;
  c10::TypePtr type;
  c10::IValue value;
};

/// What a family decides about its twin; build_twin and export_twin do the rest, the same way
/// for every family.
struct TwinSpec {
  TwinSpec(std::string who, std::string type_name) : who(std::move(who)), type_name(std::move(type_name)) {}

  std::string who;        // the scripting function, named in errors ("script_bert")
  std::string type_name;  // the module's class name ("nlpzoo_bert")
  /// The modules whose parameters and buffers the twin holds (copies): module "a.b" under
  /// scripted_name("a.b"), or with a prefix "p" (a child of a larger eager module) under
  /// scripted_name("p.a.b"), so a twin holds several modules as their eager parent names them.
  std::vector<std::pair<const torch::nn::Module*, std::string>> modules;
  /// Buffers no module names (the word-vector table), held as copies under these names.
  std::vector<std::pair<std::string, torch::Tensor>> buffers;
  std::vector<TwinAttribute> attributes;  // registered in this order, after the tensors
  std::string source;                     // TorchScript of the methods, for Module::define

  /// The twin holds `module`'s tensors (see `modules`); `module` must outlive the spec.
  TwinSpec& hold(const torch::nn::Module& module, const std::string& prefix = "");
  TwinSpec& add_int(const std::string& name, int64_t value);
  TwinSpec& add_bool(const std::string& name, bool value);
  TwinSpec& add_string(const std::string& name, const std::string& value);
  TwinSpec& add_attribute(const std::string& name, c10::TypePtr type, c10::IValue value);
};

/// The twin `spec` describes, in eval mode: a torch::jit::Module named spec.type_name holding
/// detached copies of the tensors (parameters as parameters, buffers as buffers, not requiring
/// grad, on the model's device; later training of the model does not reach them), then the
/// attributes, then the methods. Throws std::invalid_argument("<who>: parameter name ...") if
/// an eager name already contains "__" (the mapping would not be invertible),
/// torch::jit::ErrorReport if the source does not compile and std::logic_error if a copy
/// differs from its original (both bugs here, not user errors).
torch::jit::Module build_twin(const TwinSpec& spec);

/// build_twin(spec), moved to the CPU (so the file loads on any machine) and saved atomically
/// (core/io.h atomic_write) to `out_path` with `extra_files` (name -> bytes, read back with
/// torch::jit::load's ExtraFilesMap or Python's `_extra_files`) plus "README.txt" = `readme`.
/// The model itself is not changed. Throws std::invalid_argument("<who>: ...") if
/// `extra_files` names "README.txt" itself, or as build_twin, before writing anything;
/// UserError naming `out_path` if it cannot be written (missing folder, no permission, full
/// disk), leaving any earlier file there untouched.
void export_twin(const std::string& out_path, const TwinSpec& spec,
                 const std::map<std::string, std::string>& extra_files, const std::string& readme,
                 const std::string& who);

/// The README.txt lines every export ends with: loading the file and its extra files from
/// Python. `extra_files` are the names the example reads back; `example` is Python code run
/// on the loaded module `m` (one or more lines, indented by the footer).
std::string twin_readme_python_footer(const std::vector<std::string>& extra_files, const std::string& example);
/// The encoder-decoder twins' footer (config.ini, spm.src.model, spm.tgt.model; translate_greedy).
std::string twin_readme_python_footer();

/// TorchScript source of an encoder-decoder twin's translate_greedy(src: [B, S] int64,
/// max_len: int) -> [B, T] int64: greedy decoding from bos_id, each row's argmax tokens up to
/// and including eos_id, then pad_id; T is the number of steps until every row had emitted
/// eos_id, or max_len. `setup` (body lines, unindented) encodes src into the decoder's state,
/// which includes the bool tensor named `mask`; `step` (one line) assigns log_probs [B, V]
/// for the tokens `prev` at step `t` and updates that state.
std::string twin_translate_greedy_source(const std::string& setup, const std::string& mask, const std::string& step);

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
/// Adds to `spec` the attributes `labels` (List[str]: class id i is labels[i]; empty for a
/// regression model), `regression` (bool: labels is empty) and `num_classes` (int: the
/// outputs of forward). Regression is `labels` empty with a single output. Throws
/// std::invalid_argument("<spec.who>: N labels for M outputs") otherwise, unless
/// labels.size() == num_outputs.
void add_classifier_outputs(TwinSpec& spec, const std::vector<std::string>& labels, int64_t num_outputs);

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
