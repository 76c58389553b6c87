#include "models/bert/hf_bert.h"

#include <cctype>
#include <map>
#include <sstream>

#include "core/io.h"

namespace nlpzoo {

namespace {

// Hugging Face name (without "bert.", LayerNorm as weight/bias, layer index as {i}) -> ours.
const std::vector<std::pair<std::string, std::string>>& name_table() {
  static const std::vector<std::pair<std::string, std::string>> table = [] {
    std::vector<std::pair<std::string, std::string>> t = {
        {"embeddings.word_embeddings.weight", "bert.embeddings.token.weight"},
        {"embeddings.position_embeddings.weight", "bert.embeddings.position.weight"},
        {"embeddings.token_type_embeddings.weight", "bert.embeddings.segment.weight"},
        {"cls.predictions.bias", "mlm.bias"},
    };
    const std::vector<std::pair<std::string, std::string>> with_bias = {
        {"embeddings.LayerNorm", "bert.embeddings.norm"},
        {"encoder.layer.{i}.attention.self.query", "bert.encoder.layers.{i}.self_attn.W_Q"},
        {"encoder.layer.{i}.attention.self.key", "bert.encoder.layers.{i}.self_attn.W_K"},
        {"encoder.layer.{i}.attention.self.value", "bert.encoder.layers.{i}.self_attn.W_V"},
        {"encoder.layer.{i}.attention.output.dense", "bert.encoder.layers.{i}.self_attn.W_O"},
        {"encoder.layer.{i}.attention.output.LayerNorm", "bert.encoder.layers.{i}.norm1"},
        {"encoder.layer.{i}.intermediate.dense", "bert.encoder.layers.{i}.ffn.linear1"},
        {"encoder.layer.{i}.output.dense", "bert.encoder.layers.{i}.ffn.linear2"},
        {"encoder.layer.{i}.output.LayerNorm", "bert.encoder.layers.{i}.norm2"},
        {"pooler.dense", "bert.pooler.dense"},
        {"cls.predictions.transform.dense", "mlm.dense"},
        {"cls.predictions.transform.LayerNorm", "mlm.norm"},
        {"cls.seq_relationship", "nsp"},
    };
    for (const auto& [hf, ours] : with_bias) {
      t.emplace_back(hf + ".weight", ours + ".weight");
      t.emplace_back(hf + ".bias", ours + ".bias");
    }
    return t;
  }();
  return table;
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }
bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Replaces the first "<marker><digits>." by "<marker>{i}." and returns the digits ("" if none).
std::string take_index(std::string& name, const std::string& marker) {
  const size_t at = name.find(marker);
  if (at == std::string::npos) return "";
  const size_t begin = at + marker.size();
  size_t end = begin;
  while (end < name.size() && std::isdigit(static_cast<unsigned char>(name[end]))) ++end;
  if (end == begin || end >= name.size() || name[end] != '.') return "";
  std::string index = name.substr(begin, end - begin);
  name.replace(begin, end - begin, "{i}");
  return index;
}

void put_index(std::string& name, const std::string& index) {
  const size_t at = name.find("{i}");
  if (at != std::string::npos) name.replace(at, 3, index);
}

// Hugging Face's name as BertForPreTraining saves it, for messages about our parameter `ours`.
std::string hf_name_of(std::string ours) {
  const std::string index = take_index(ours, "layers.");
  for (const auto& [hf, mine] : name_table())
    if (mine == ours) {
      std::string name = starts_with(hf, "cls.") ? hf : "bert." + hf;
      put_index(name, index);
      return name;
    }
  return "";
}

std::string shape_text(torch::IntArrayRef sizes) {
  std::ostringstream s;
  s << sizes;
  return s.str();
}

}  // namespace

std::string hf_bert_parameter_name(const std::string& hf_name) {
  std::string name = hf_name;
  if (starts_with(name, "bert.")) name = name.substr(5);
  // Older checkpoints (converted from TensorFlow) call LayerNorm's parameters gamma and beta.
  if (ends_with(name, "LayerNorm.gamma")) name = name.substr(0, name.size() - 5) + "weight";
  if (ends_with(name, "LayerNorm.beta")) name = name.substr(0, name.size() - 4) + "bias";
  const std::string index = take_index(name, "encoder.layer.");
  for (const auto& [hf, ours] : name_table())
    if (hf == name) {
      std::string mapped = ours;
      put_index(mapped, index);
      return mapped;
    }
  return "";
}

HfBertLoadReport load_hf_bert_weights(BertForPreTrainingImpl& model,
                                      const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
                                      const std::string& where) {
  HfBertLoadReport report;
  auto params = model.named_parameters(/*recurse=*/true);
  std::map<std::string, std::string> filled;  // ours -> the Hugging Face name it came from
  std::vector<std::string> problems;
  std::vector<const std::pair<std::string, torch::Tensor>*> decoder;  // checked once the embedding is in
  torch::NoGradGuard no_grad;
  for (const auto& entry : tensors) {
    const auto& [name, tensor] = entry;
    if (ends_with(name, "embeddings.position_ids")) {  // a buffer (arange) older versions saved
      report.ignored.push_back(name);
      continue;
    }
    if (name == "cls.predictions.decoder.weight" || name == "cls.predictions.decoder.bias") {
      decoder.push_back(&entry);
      continue;
    }
    const std::string ours = hf_bert_parameter_name(name);
    torch::Tensor* param = ours.empty() ? nullptr : params.find(ours);
    if (!param) {
      report.unexpected.push_back(name);
      continue;
    }
    if (!tensor.is_floating_point()) {
      problems.push_back(name + " has dtype " + std::string(c10::toString(tensor.scalar_type())) + ", not floating point");
    } else if (tensor.sizes() != param->sizes()) {
      problems.push_back(name + " has shape " + shape_text(tensor.sizes()) + " but " + ours + " is " +
                         shape_text(param->sizes()));
    } else if (filled.count(ours)) {
      problems.push_back(name + " fills " + ours + " which " + filled[ours] + " already filled");
    } else {
      param->copy_(tensor.to(param->scalar_type()));
      filled[ours] = name;
      report.loaded.push_back(name);
    }
  }
  // The decoder is tied to the word embeddings (and its bias to cls.predictions.bias): what the
  // file holds for it must be the same numbers, since we have no separate output matrix.
  for (const auto* entry : decoder) {
    const auto& [name, tensor] = *entry;
    const bool weight = ends_with(name, ".weight");
    const std::string ours = weight ? "bert.embeddings.token.weight" : "mlm.bias";
    torch::Tensor& param = *params.find(ours);
    if (!tensor.is_floating_point() || tensor.sizes() != param.sizes()) {
      problems.push_back(name + " has shape " + shape_text(tensor.sizes()) + " but " + ours + " (tied) is " +
                         shape_text(param.sizes()));
    } else if (!filled.count(ours)) {
      if (weight) {  // an output matrix without the embedding it is tied to
        problems.push_back(name + " is present but the word embeddings it is tied to are not");
      } else {  // newer files may keep the bias under the decoder's name only
        param.copy_(tensor.to(param.scalar_type()));
        filled[ours] = name;
        report.loaded.push_back(name);
      }
    } else if (!torch::equal(tensor.to(param.scalar_type()), param)) {
      problems.push_back(name + " differs from " + filled[ours] + ": an untied output layer is not supported");
    } else {
      report.tied.push_back(name);
    }
  }
  for (const auto& p : params) {
    if (filled.count(p.key())) continue;
    const bool encoder = starts_with(p.key(), "bert.embeddings.") || starts_with(p.key(), "bert.encoder.");
    if (encoder) {
      problems.push_back("missing " + hf_name_of(p.key()) + " (for " + p.key() + ")");
    } else {
      report.missing.push_back(p.key());
    }
  }
  if (!problems.empty()) {
    std::string message = where + ": not a checkpoint of this BERT shape:";
    for (const auto& p : problems) message += "\n  " + p;
    throw UserError(message);
  }
  return report;
}

}  // namespace nlpzoo
