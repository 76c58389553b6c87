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

std::string twin_bilm_layers_source(const BiLanguageModelOptions& o, const std::string& prefix) {
  const std::string p = "self." + prefix;
  std::ostringstream s;
  // bilm_input (models/rnn/elmo.h), then reverse_padded's index over the T + 2 positions.
  s << "def bilm_layers(self, tokens: Tensor, lengths: Tensor) -> List[Tensor]:\n"
    << "    T = tokens.size(1)\n"
    << "    positions = torch.arange(T, device=tokens.device).unsqueeze(0)\n"
    << "    pieces = tokens.masked_fill(torch.ge(positions, lengths.unsqueeze(1)), " << kPadId << ")\n"
    << "    pieces = pieces.masked_fill(torch.eq(tokens, " << kEosId << "), " << kSepId << ")\n"
    << "    seq = torch.full([tokens.size(0), T + 2], " << kPadId << ", dtype=tokens.dtype, device=tokens.device)\n"
    << "    seq.select(1, 0).fill_(" << kClsId << ")\n"
    << "    seq.narrow(1, 1, T).copy_(pieces)\n"
    << "    seq.scatter_(1, (lengths + 1).unsqueeze(1), " << kSepId << ")\n"
    << "    n = (lengths + 2).unsqueeze(1)\n"
    << "    t = torch.arange(T + 2, device=tokens.device).unsqueeze(0)\n"
    << "    x = torch.embedding(" << p << "embedding__weight, seq)\n"
    << "    reverse = torch.where(torch.lt(t, n), n - 1 - t, t).unsqueeze(-1).expand(x.size())\n"
    << "    h0 = torch.zeros([1, tokens.size(0), " << o.hidden_size() << "], dtype=x.dtype, device=x.device)\n"
    << "    layers = [torch.cat([x, x], -1)]\n"
    << "    f = x\n"
    << "    b = x.gather(1, reverse)\n";
  for (int64_t l = 0; l < o.num_layers(); ++l) {
    for (const char* direction : {"forward", "backward"}) {
      const std::string v = direction[0] == 'f' ? "f" : "b", layer = std::to_string(l);
      // Trailing aten arguments: has_biases, num_layers, dropout, train, bidirectional, batch_first.
      s << "    out, _, _ = torch.lstm(" << v << ", [h0, h0], "
        << twin_rnn_layer_params(prefix + direction + "_lstm__" + layer, 0, false) << ", True, 1, 0.0, False, False, True)\n"
        << "    " << v << " = torch.linear(out, " << p << direction << "_proj__" << layer << "__weight)"
        << (l == 0 ? "" : " + " + v) << "\n";
    }
    s << "    layers.append(torch.cat([f, b.gather(1, reverse)], -1))\n";
  }
  s << "    return [layer.narrow(1, 1, T) for layer in layers]\n\n";
  return s.str();
}

namespace {
TwinSpec bilm_spec(BiLanguageModelImpl& model) {
  const auto& o = model.options();
  TwinSpec spec("script_bilm", "nlpzoo_bilm");
  spec.hold(model)
      .add_int("vocab_size", o.vocab_size())
      .add_int("embed_dim", o.embed_dim())
      .add_int("hidden_size", o.hidden_size())
      .add_int("num_layers", o.num_layers())
      .add_int("pad_id", o.pad_id());
  spec.source = twin_bilm_layers_source(o, "") +
                "def forward(self, tokens: Tensor) -> Tensor:\n"
                "    lengths = torch.clamp_min(torch.sum(torch.ne(tokens, self.pad_id), 1), 1)\n"
                "    return torch.stack(self.bilm_layers(tokens, lengths))\n";
  return spec;
}
}  // namespace

torch::jit::Module script_bilm(BiLanguageModelImpl& model) { return build_twin(bilm_spec(model)); }

void export_bilm(const std::string& out_path, BiLanguageModelImpl& model,
                 const std::map<std::string, std::string>& extra_files) {
  const auto& o = model.options();
  std::ostringstream s;
  s << "nlpzoo bidirectional LSTM language model (ELMo's biLM), TorchScript export\n"
    << "vocab_size=" << o.vocab_size() << " embed_dim=" << o.embed_dim() << " hidden_size=" << o.hidden_size()
    << " num_layers=" << o.num_layers() << "\n\n"
    << "forward(tokens[B,T] int64, each row's SentencePiece ids (spm.model) then " << o.pad_id() << ")\n"
    << "  -> [L+1, B, T, 2d] float: per piece, layer 0 = [x; x] (its embedding twice) and layer l =\n"
    << "  [forward LSTM layer l; backward LSTM layer l], the biLM reading [CLS] pieces [SEP]. ELMo's\n"
    << "  features are a task's gamma * sum_j softmax(s)_j layer_j (Peters et al. 2018, eq. 1).\n\n"
    << twin_readme_python_footer({"config.ini", "spm.model"},
                                 "import sentencepiece as spm\n"
                                 "sp = spm.SentencePieceProcessor(model_proto=files['spm.model'])\n"
                                 "layers = m.forward(torch.tensor([sp.encode('the film is a charming journey')]))\n"
                                 "elmo = layers.mean(0)  # an even mix: [1, T, 2d]");
  export_twin(out_path, bilm_spec(model), extra_files, s.str(), "export_bilm");
}

}  // namespace nlpzoo
