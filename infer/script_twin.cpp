#include "infer/script_twin.h"

#include <algorithm>
#include <stdexcept>

#include "core/io.h"

namespace nlpzoo {

std::string scripted_name(const std::string& eager_name) {
  std::string out;
  for (char ch : eager_name) {
    if (ch == '.') out += "__";
    else out += ch;
  }
  return out;
}

namespace {

// Each line of `text` after `indent`, each ending in '\n' (a last line need not have one).
std::string indented(const std::string& text, const std::string& indent) {
  std::string out;
  for (size_t start = 0; start < text.size();) {
    const size_t end = std::min(text.find('\n', start), text.size());
    out += indent + text.substr(start, end - start) + "\n";
    start = end + 1;
  }
  return out;
}

// A copied NaN is still the NaN it was copied from: only a value that changed is a difference.
bool same_values(const torch::Tensor& a, const torch::Tensor& b) {
  if (a.equal(b)) return true;
  return a.is_floating_point() && torch::logical_or(a == b, torch::logical_and(a.isnan(), b.isnan())).all().item<bool>();
}

// Registers a detached clone of every parameter and buffer of `model` on `twin` (see
// TwinSpec::modules).
void copy_tensors_into(torch::jit::Module& twin, const torch::nn::Module& model, const std::string& who,
                       const std::string& prefix) {
  auto copy_in = [&](const std::string& local, const torch::Tensor& t, bool is_buffer) {
    const std::string name = prefix.empty() ? local : prefix + "." + local;
    if (name.find("__") != std::string::npos)
      throw std::invalid_argument(who + ": parameter name '" + name +
                                  "' contains '__', which the '.' -> '__' mapping reserves");
    twin.register_parameter(scripted_name(name), t.detach().clone(), is_buffer);
  };
  for (const auto& p : model.named_parameters()) copy_in(p.key(), p.value(), /*is_buffer=*/false);
  for (const auto& b : model.named_buffers()) copy_in(b.key(), b.value(), /*is_buffer=*/true);
}

// The twin must hold what it was built from: a file that loads and runs but with other
// weights would be wrong without any error.
void check_copies(const TwinSpec& spec, const torch::jit::Module& twin) {
  for (const auto& [module, prefix] : spec.modules)
    if (auto why = twin_tensor_mismatch(*module, twin, prefix); !why.empty())
      throw std::logic_error(spec.who + ": the twin does not hold the model's tensors: " + why);
  for (const auto& [name, t] : spec.buffers)
    if (!same_values(twin.attr(name).toTensor(), t.detach()))
      throw std::logic_error(spec.who + ": the twin's " + name + " differs from its original");
}

void save_twin(const std::string& out_path, torch::jit::Module twin,
               const std::map<std::string, std::string>& extra_files, const std::string& readme) {
  twin.to(torch::kCPU);
  torch::jit::ExtraFilesMap files(extra_files.begin(), extra_files.end());
  files["README.txt"] = readme;
  atomic_write(out_path, [&](const std::string& tmp) {
    try {
      twin.save(tmp, files);
    } catch (const c10::Error& e) {
      // LibTorch reports a missing folder or a full disk as c10::Error; to the user it is a bad path.
      throw UserError(out_path + ": cannot write the TorchScript export: " + e.what_without_backtrace());
    }
  });
}

}  // namespace

std::string twin_tensor_mismatch(const torch::nn::Module& model, const torch::jit::Module& twin,
                                 const std::string& prefix) {
  auto check = [&](const std::string& local, const torch::Tensor& eager) -> std::string {
    const std::string name = prefix.empty() ? local : prefix + "." + local;
    const auto scripted = scripted_name(name);
    if (!twin.hasattr(scripted)) return "the twin has no " + scripted + " (eager " + name + ")";
    const auto t = twin.attr(scripted).toTensor();
    if (t.sizes() != eager.sizes()) return scripted + ": shape differs from the eager " + name;
    const auto e = eager.detach().to(t.device());
    if (same_values(t, e)) return "";
    const double diff = (t.to(torch::kDouble) - e.to(torch::kDouble)).abs().max().item<double>();
    return scripted + " differs from the eager " + name + " (max abs diff " + std::to_string(diff) + ")";
  };
  for (const auto& p : model.named_parameters())
    if (auto why = check(p.key(), p.value()); !why.empty()) return why;
  for (const auto& b : model.named_buffers())
    if (auto why = check(b.key(), b.value()); !why.empty()) return why;
  return "";
}

TwinSpec& TwinSpec::hold(const torch::nn::Module& module, const std::string& prefix) {
  modules.emplace_back(&module, prefix);
  return *this;
}

TwinSpec& TwinSpec::add_attribute(const std::string& name, c10::TypePtr type, c10::IValue value) {
  attributes.push_back({name, std::move(type), std::move(value)});
  return *this;
}

TwinSpec& TwinSpec::add_int(const std::string& name, int64_t value) {
  return add_attribute(name, c10::IntType::get(), value);
}

TwinSpec& TwinSpec::add_bool(const std::string& name, bool value) {
  return add_attribute(name, c10::BoolType::get(), value);
}

TwinSpec& TwinSpec::add_string(const std::string& name, const std::string& value) {
  return add_attribute(name, c10::StringType::get(), value);
}

torch::jit::Module build_twin(const TwinSpec& spec) {
  torch::NoGradGuard no_grad;
  torch::jit::Module twin(spec.type_name);
  for (const auto& [module, prefix] : spec.modules) copy_tensors_into(twin, *module, spec.who, prefix);
  for (const auto& [name, t] : spec.buffers) twin.register_buffer(name, t.detach().clone());
  for (const auto& a : spec.attributes) twin.register_attribute(a.name, a.type, a.value);
  twin.define(spec.source);
  check_copies(spec, twin);
  twin.eval();
  return twin;
}

void export_twin(const std::string& out_path, const TwinSpec& spec,
                 const std::map<std::string, std::string>& extra_files, const std::string& readme,
                 const std::string& who) {
  if (extra_files.count("README.txt"))
    throw std::invalid_argument(who + ": extra file name 'README.txt' is reserved for the export's own README");
  save_twin(out_path, build_twin(spec), extra_files, readme);
}

void add_classifier_outputs(TwinSpec& spec, const std::vector<std::string>& labels, int64_t num_outputs) {
  const bool regression = labels.empty();
  if (regression ? num_outputs != 1 : static_cast<int64_t>(labels.size()) != num_outputs)
    throw std::invalid_argument(spec.who + ": " + std::to_string(labels.size()) + " labels for " +
                                std::to_string(num_outputs) + " outputs (a regression model: no labels, 1 output)");
  spec.add_int("num_classes", num_outputs);
  spec.add_bool("regression", regression);
  spec.add_attribute("labels", c10::ListType::ofStrings(), c10::List<std::string>(labels));
}

std::string twin_predict_source(const std::string& params, const std::string& args, bool regression) {
  return "def predict(self, " + params + ") -> Tensor:\n" +
         (regression ? "    return self.forward(" + args + ").select(1, 0)\n"
                     : "    return torch.softmax(self.forward(" + args + "), -1)\n");
}

std::string twin_classifier_readme(const std::vector<std::string>& labels, const std::string& inputs,
                                   const std::string& text_line, const std::string& prepare, const std::string& call) {
  std::string s;
  if (labels.empty()) {
    s += "Regression (objective = regression): one output, the predicted score; labels is empty.\n";
  } else {
    s += "labels (class id i is labels[i]):";
    for (const auto& l : labels) s += " " + l;
    s += "\n";
  }
  const std::string C = labels.empty() ? "1" : "C";
  s += "Methods:\n  forward(" + inputs + ") -> logits[B," + C + "]\n";
  s += labels.empty() ? "  predict(" + inputs + ") -> scores[B]   forward's single column\n\n"
                      : "  predict(" + inputs + ") -> probabilities[B,C]   softmax of the logits\n\n";
  const std::string show = labels.empty() ? "print(float(m.predict(" + call + ")[0]))"
                                          : "p = m.predict(" + call + ")\n"
                                            "print(m.labels[int(p.argmax(1))], float(p.max()))";
  return s + twin_readme_python_footer({"config.ini", "spm.model"},
                                       "import sentencepiece as spm\n"
                                       "sp = spm.SentencePieceProcessor(model_proto=files['spm.model'])\n" +
                                           text_line + "\n" + prepare + "\n" + show);
}

std::vector<c10::IValue> twin_tuple(const c10::IValue& v, size_t size, const std::string& method,
                                    const std::string& family) {
  if (!v.isTuple() || v.toTupleRef().elements().size() != size)
    throw UserError("not an nlpzoo " + family + " export: '" + method + "' does not return a " +
                    std::to_string(size) + "-tuple");
  return v.toTupleRef().elements().vec();
}

void require_twin_members(const torch::jit::Module& module, const std::vector<std::string>& methods,
                          const std::vector<std::string>& attributes, const std::string& family) {
  for (const auto& m : methods)
    if (!module.find_method(m)) throw UserError("not an nlpzoo " + family + " export: no method '" + m + "'");
  for (const auto& a : attributes)
    if (!module.hasattr(a)) throw UserError("not an nlpzoo " + family + " export: no attribute '" + a + "'");
}

std::string twin_readme_python_footer(const std::vector<std::string>& extra_files, const std::string& example) {
  std::string files;
  for (const auto& f : extra_files) files += (files.empty() ? "" : ", ") + ("'" + f + "': ''");
  return "Python:\n"
         "  import torch\n"
         "  files = {" + files + "}  # filled with bytes on load\n"
         "  m = torch.jit.load('model.pt', _extra_files=files)\n" +
         indented(example, "  ") +
         "The exporter may store the SentencePiece models (spm*.model) and the training config\n"
         "inside this file as extra files, as above; tokenize with them before calling the model.\n";
}

std::string twin_readme_python_footer() {
  return twin_readme_python_footer({"config.ini", "spm.src.model", "spm.tgt.model"},
                                   "out = m.translate_greedy(torch.tensor([[5, 6, 3]]), 100)");
}

std::string twin_translate_greedy_source(const std::string& setup, const std::string& mask, const std::string& step) {
  // Dtypes come from existing tensors: Module::define's native resolver reads `torch.long` as
  // the builtin op aten::long, not as a dtype.
  return "def translate_greedy(self, src: Tensor, max_len: int) -> Tensor:\n" + indented(setup, "    ") +
         "    B = src.size(0)\n"
         "    prev = torch.full([B], self.bos_id, dtype=src.dtype, device=src.device)\n"
         "    out = torch.full([B, max_len], self.pad_id, dtype=src.dtype, device=src.device)\n"
         "    done = torch.zeros([B], dtype=" + mask + ".dtype, device=src.device)\n"
         "    T = 0\n"
         "    for t in range(max_len):\n"
         "        " + step + "\n"
         "        tok = torch.argmax(log_probs, 1)\n"
         "        tok = torch.where(done, torch.full_like(tok, self.pad_id), tok)\n"
         "        out[:, t] = tok\n"
         "        done = torch.logical_or(done, torch.eq(tok, self.eos_id))\n"
         "        prev = tok\n"
         "        T = t + 1\n"
         "        if bool(done.all()):\n"
         "            break\n"
         "    return out[:, :T]\n";
}

std::string twin_rnn_layer_params(const std::string& prefix, int64_t layer, bool reverse) {
  const std::string sfx = "_l" + std::to_string(layer) + (reverse ? "_reverse" : "");
  std::string out = "[";
  const char* names[] = {"weight_ih", "weight_hh", "bias_ih", "bias_hh"};
  for (int i = 0; i < 4; ++i) {
    if (i) out += ", ";
    out += "self." + prefix + "__rnn__" + names[i] + sfx;
  }
  return out + "]";
}

std::string twin_rnn_stack_params(const std::string& prefix, int64_t num_layers, bool bidirectional) {
  std::string out = "[";
  for (int64_t l = 0; l < num_layers; ++l) {
    for (bool reverse : {false, true}) {
      if (reverse && !bidirectional) continue;
      auto one = twin_rnn_layer_params(prefix, l, reverse);
      if (out.size() > 1) out += ", ";
      out += one.substr(1, one.size() - 2);
    }
  }
  return out + "]";
}

std::string twin_aten_rnn(CellType cell) {
  switch (cell) {
    case CellType::kGru: return "torch.gru";
    case CellType::kLstm: return "torch.lstm";
    case CellType::kRnn: return "torch.rnn_tanh";
  }
  return "?";
}

}  // namespace nlpzoo
