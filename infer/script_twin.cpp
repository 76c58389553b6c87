#include "infer/script_twin.h"

#include <stdexcept>

#include "datasets/io.h"

namespace nlpzoo {

std::string scripted_name(const std::string& eager_name) {
  std::string out;
  for (char ch : eager_name) {
    if (ch == '.') out += "__";
    else out += ch;
  }
  return out;
}

void copy_tensors_into(torch::jit::Module& twin, const torch::nn::Module& model, const std::string& who) {
  torch::NoGradGuard no_grad;
  auto copy_in = [&](const std::string& name, const torch::Tensor& t, bool is_buffer) {
    if (name.find("__") != std::string::npos)
      throw std::invalid_argument(who + ": parameter name '" + name +
                                  "' contains '__', which the '.' -> '__' mapping reserves");
    twin.register_parameter(scripted_name(name), t.detach().clone(), is_buffer);
  };
  for (const auto& p : model.named_parameters()) copy_in(p.key(), p.value(), /*is_buffer=*/false);
  for (const auto& b : model.named_buffers()) copy_in(b.key(), b.value(), /*is_buffer=*/true);
}

void add_int_attribute(torch::jit::Module& twin, const std::string& name, int64_t value) {
  twin.register_attribute(name, c10::IntType::get(), value);
}

void add_bool_attribute(torch::jit::Module& twin, const std::string& name, bool value) {
  twin.register_attribute(name, c10::BoolType::get(), value);
}

void add_string_attribute(torch::jit::Module& twin, const std::string& name, const std::string& value) {
  twin.register_attribute(name, c10::StringType::get(), value);
}

void save_twin(const std::string& out_path, torch::jit::Module twin,
               const std::map<std::string, std::string>& extra_files, const std::string& readme,
               const std::string& who) {
  if (extra_files.count("README.txt"))
    throw std::invalid_argument(who + ": extra file name 'README.txt' is reserved for the export's own README");
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

std::string twin_readme_python_footer() {
  return "Python:\n"
         "  import torch\n"
         "  files = {'config.ini': '', 'spm.src.model': '', 'spm.tgt.model': ''}  # filled with bytes on load\n"
         "  m = torch.jit.load('model.pt', _extra_files=files)\n"
         "  out = m.translate_greedy(torch.tensor([[5, 6, 3]]), 100)\n"
         "The exporter may store the SentencePiece models (spm.*.model) and the training config\n"
         "inside this file as extra files, as above; tokenize with them before encode.\n";
}

}  // namespace nlpzoo
