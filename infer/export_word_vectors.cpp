#include "infer/export_word_vectors.h"

#include <sstream>
#include <stdexcept>

#include "infer/script_twin.h"

namespace nlpzoo {

namespace {

TwinSpec word_vectors_spec(const WordVectors& vectors) {
  if (vectors.size() == 0) throw std::invalid_argument("script_word_vectors: no word vectors to export");
  TwinSpec spec("script_word_vectors", "nlpzoo_word_vectors");
  spec.buffers.emplace_back("vectors", vectors.vectors());
  c10::List<std::string> words;
  c10::Dict<std::string, int64_t> word_to_id;
  for (int64_t i = 0; i < vectors.size(); ++i) {
    const auto& w = vectors.words()[i];
    words.push_back(w);
    if (!word_to_id.contains(w)) word_to_id.insert(w, i);
  }
  spec.add_attribute("words", c10::ListType::ofStrings(), words)
      .add_attribute("word_to_id", c10::DictType::create(c10::StringType::get(), c10::IntType::get()), word_to_id)
      .add_int("vocab_size", vectors.size())
      .add_int("dim", vectors.dim());
  spec.source =
      "def forward(self, ids: Tensor) -> Tensor:\n"
      "    return torch.embedding(self.vectors, ids)\n\n"
      "def ids(self, words: List[str]) -> Tensor:\n"
      "    out: List[int] = []\n"
      "    for w in words:\n"
      "        out.append(self.word_to_id[w])\n"
      "    return torch.tensor(out, dtype=4)\n";  // 4 = torch.int64 (the resolver reads torch.long as an op)
  return spec;
}

// Unlike the other twins' READMEs, it names the extra files this export carries: a word-vector
// run has no tokenizer to always store.
std::string word_vectors_export_readme(const WordVectors& vectors, const std::map<std::string, std::string>& extra_files) {
  std::ostringstream readme;
  readme << "nlpzoo word vectors, TorchScript export\n"
         << "vocab_size=" << vectors.size() << " dim=" << vectors.dim() << "\n\n"
         << "vectors [V, D] float32, row i = the vector of words[i] (most frequent first).\n"
         << "forward(ids: [...] int64) -> [..., D]    the rows of ids (an embedding lookup)\n"
         << "ids(words: List[str]) -> [N] int64        word_to_id of each word (KeyError if unknown)\n\n";
  std::vector<std::string> names;
  for (const auto& [name, bytes] : extra_files) names.push_back(name);
  readme << twin_readme_python_footer(names, "v = m(m.ids(['king', 'queen']))   # [2, D]\n"
                                             "emb = torch.nn.Embedding.from_pretrained(m.vectors)");
  return readme.str();
}

}  // namespace

torch::jit::Module script_word_vectors(const WordVectors& vectors) { return build_twin(word_vectors_spec(vectors)); }

void export_word_vectors(const std::string& out_path, const WordVectors& vectors,
                         const std::map<std::string, std::string>& extra_files) {
  export_twin(out_path, word_vectors_spec(vectors), extra_files, word_vectors_export_readme(vectors, extra_files),
              "export_word_vectors");
}

}  // namespace nlpzoo
