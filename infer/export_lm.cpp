#include "infer/export_lm.h"

#include <sstream>

#include "datasets/special_ids.h"
#include "infer/script_twin.h"

namespace nlpzoo {

namespace {

// TorchScript source of init_state/forward/step for these options. Options are resolved here
// in C++, so the script holds no branches on them and every line type-checks.
std::string twin_source(const LanguageModelOptions& o) {
  const int64_t L = o.num_layers(), H = o.hidden_size();
  const bool lstm = o.cell() == CellType::kLstm;
  std::ostringstream s;
  // Dtype and device come from a parameter: the native resolver reads `torch.float` as an op.
  s << "def init_state(self, batch_size: int) -> Tuple[Tensor, Tensor]:\n"
    << "    w = self.embedding__weight\n"
    << "    h = torch.zeros([" << L << ", batch_size, " << H << "], dtype=w.dtype, device=w.device)\n"
    << "    c = torch.zeros([" << L << ", batch_size, " << (lstm ? H : 0) << "], dtype=w.dtype, device=w.device)\n"
    << "    return h, c\n\n";

  // Trailing aten arguments: has_biases, num_layers, dropout, train, bidirectional, batch_first.
  const std::string tail = ", True, " + std::to_string(L) + ", 0.0, False, False, True)\n";
  const std::string params = twin_rnn_stack_params("rnn", L);
  s << "def forward(self, tokens: Tensor, h: Tensor, c: Tensor) -> Tuple[Tensor, Tensor, Tensor]:\n"
    << "    x = torch.embedding(self.embedding__weight, tokens)\n";
  if (lstm)
    s << "    out, hn, cn = torch.lstm(x, [h, c], " << params << tail;
  else
    s << "    out, hn = " << twin_aten_rnn(o.cell()) << "(x, h, " << params << tail << "    cn = c\n";
  if (o.tie_embeddings())
    s << "    logits = torch.linear(out, self.embedding__weight, self.output_bias)\n";
  else
    s << "    logits = torch.linear(out, self.output__weight, self.output__bias)\n";
  s << "    return torch.log_softmax(logits, -1), hn, cn\n\n";

  s << "def step(self, tokens: Tensor, h: Tensor, c: Tensor) -> Tuple[Tensor, Tensor, Tensor]:\n"
    << "    log_probs, hn, cn = self.forward(tokens.unsqueeze(1), h, c)\n"
    << "    return log_probs.squeeze(1), hn, cn\n";
  return s.str();
}

TwinSpec language_model_spec(LanguageModelImpl& model) {
  const LanguageModelOptions& o = model.options();
  TwinSpec spec("script_language_model", "nlpzoo_language_model");
  spec.hold(model)
      .add_int("vocab_size", o.vocab_size())
      .add_int("embed_dim", o.embed_dim())
      .add_int("hidden_size", o.hidden_size())
      .add_int("num_layers", o.num_layers())
      .add_string("cell", to_string(o.cell()))
      .add_bool("tie_embeddings", o.tie_embeddings())
      .add_int("pad_id", o.pad_id())
      .add_int("unk_id", kUnkId)
      .add_int("bos_id", kBosId)
      .add_int("eos_id", kEosId);
  spec.source = twin_source(o);
  return spec;
}

}  // namespace

torch::jit::Module script_language_model(LanguageModelImpl& model) { return build_twin(language_model_spec(model)); }

std::string language_model_export_readme(const LanguageModelOptions& o) {
  const bool lstm = o.cell() == CellType::kLstm;
  std::ostringstream s;
  s << "nlpzoo recurrent language model, TorchScript export\n"
    << "cell=" << to_string(o.cell()) << " layers=" << o.num_layers() << " embed_dim=" << o.embed_dim()
    << " hidden_size=" << o.hidden_size() << " tie_embeddings=" << (o.tie_embeddings() ? "true" : "false")
    << " vocab_size=" << o.vocab_size() << "\n\n"
    << "Token ids: PAD=" << o.pad_id() << " UNK=" << kUnkId << " BOS=" << kBosId << " EOS=" << kEosId
    << ". The model was trained on the stream pieces(line1) EOS pieces(line2) EOS ..., so a text\n"
    << "starts after EOS; PAD and BOS never occur in it (exclude them when sampling).\n\n"
    << "Methods (tokens batch-first; state in LibTorch's layout [L,B,H], L=" << o.num_layers()
    << ", H=" << o.hidden_size() << "):\n"
    << "  init_state(batch_size) -> (h[L,B,H], c" << (lstm ? "[L,B,H]" : "[L,B,0] (no cell state: passed through)")
    << ")   zeros\n"
    << "  forward(tokens[B,T] int64, h, c) -> (log_probs[B,T,V], h, c)   log P(next | tokens so far)\n"
    << "  step(tokens[B] int64, h, c) -> (log_probs[B,V], h, c)            one position\n\n"
    << twin_readme_python_footer({"config.ini", "spm.model"},
                                 "ids = [" + std::to_string(kEosId) +
                                     ", 5, 6]  # EOS, then the prompt's SentencePiece ids (spm.model)\n"
                                     "h, c = m.init_state(1)\n"
                                     "log_probs, h, c = m.forward(torch.tensor([ids]), h, c)\n"
                                     "p = log_probs[:, -1]\n"
                                     "for _ in range(100):\n"
                                     "    p[:, [" + std::to_string(o.pad_id()) + ", " + std::to_string(kBosId) +
                                     "]] = float('-inf')\n"
                                     "    nxt = torch.multinomial(p.exp(), 1).squeeze(1)  # or p.argmax(1)\n"
                                     "    if int(nxt) == " + std::to_string(kEosId) + ":\n"
                                     "        break\n"
                                     "    ids.append(int(nxt))\n"
                                     "    p, h, c = m.step(nxt, h, c)");
  return s.str();
}

void export_language_model(const std::string& out_path, LanguageModelImpl& model,
                           const std::map<std::string, std::string>& extra_files) {
  export_twin(out_path, language_model_spec(model), extra_files, language_model_export_readme(model.options()),
              "export_language_model");
}

}  // namespace nlpzoo
