#include "infer/export_classifier.h"

#include <sstream>
#include <stdexcept>

#include "infer/script_twin.h"

namespace nlpzoo {

namespace {

// The eager encode op for op: the first `n` positions of each row are its tokens
// (length_mask), their embeddings averaged (masked_mean), then the output layer.
const char* kSource = R"(
def forward(self, tokens: Tensor) -> Tensor:
    lengths = torch.clamp_min(torch.sum(torch.ne(tokens, self.pad_id), 1), 1)
    positions = torch.arange(tokens.size(1), device=tokens.device)
    mask = torch.lt(positions.unsqueeze(0), lengths.unsqueeze(1))
    x = torch.embedding(self.embedding__weight, tokens)
    w = mask.unsqueeze(-1).to(x.dtype)
    s = torch.sum(x * w, 1) / torch.clamp_min(torch.sum(w, 1), 1.0)
    return torch.linear(s, self.output__weight, self.output__bias)

def predict(self, tokens: Tensor) -> Tensor:
    return torch.softmax(self.forward(tokens), -1)
)";

std::string readme(const ClassifierOptions& o, const std::vector<std::string>& labels) {
  std::ostringstream s;
  s << "nlpzoo sentence classifier (average of embeddings), TorchScript export\n"
    << "vocab_size=" << o.vocab_size() << " embed_dim=" << o.embed_dim() << " num_classes=" << o.num_classes()
    << " pad_id=" << o.pad_id() << "\nlabels (class id i is labels[i]):";
  for (const auto& l : labels) s << " " << l;
  s << "\n\nInput: the SentencePiece ids (spm.model) of the sentence normalized as config.ini says\n"
    << "(lowercase, split_punctuation), each row padded with pad_id.\n"
    << "Methods:\n"
    << "  forward(tokens[B,T] int64) -> logits[B,C]\n"
    << "  predict(tokens[B,T] int64) -> probabilities[B,C]   softmax of the logits\n\n"
    << twin_readme_python_footer({"config.ini", "spm.model", "labels.txt"},
                                 "p = m.predict(torch.tensor([[5, 6, 7]]))\n"
                                 "print(m.labels[int(p.argmax(1))], float(p.max()))");
  return s.str();
}

}  // namespace

torch::jit::Module script_average_embedding_classifier(AverageEmbeddingClassifierImpl& model,
                                                       const std::vector<std::string>& labels) {
  const ClassifierOptions& o = model.options();
  if (static_cast<int64_t>(labels.size()) != o.num_classes())
    throw std::invalid_argument("script_average_embedding_classifier: " + std::to_string(labels.size()) +
                                " labels for " + std::to_string(o.num_classes()) + " classes");
  torch::jit::Module twin("nlpzoo_average_embedding_classifier");
  copy_tensors_into(twin, model, "script_average_embedding_classifier");
  add_int_attribute(twin, "vocab_size", o.vocab_size());
  add_int_attribute(twin, "embed_dim", o.embed_dim());
  add_int_attribute(twin, "num_classes", o.num_classes());
  add_int_attribute(twin, "pad_id", o.pad_id());
  twin.register_attribute("labels", c10::ListType::ofStrings(), c10::List<std::string>(labels));
  twin.define(kSource);
  twin.eval();
  return twin;
}

void export_average_embedding_classifier(const std::string& out_path, AverageEmbeddingClassifierImpl& model,
                                         const std::vector<std::string>& labels,
                                         const std::map<std::string, std::string>& extra_files) {
  save_twin(out_path, script_average_embedding_classifier(model, labels), extra_files,
            readme(model.options(), labels), "export_average_embedding_classifier");
}

}  // namespace nlpzoo
