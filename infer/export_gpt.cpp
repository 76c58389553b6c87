#include "infer/export_gpt.h"

#include <sstream>

#include "datasets/special_ids.h"
#include "infer/script_twin.h"
#include "infer/twin_transformer_source.h"

namespace nlpzoo {

namespace {

using twin_source::P;

std::string twin_source_of(const GptOptions& o) {
  twin_source::LayerShape shape;
  shape.d_model = o.d_model();
  shape.num_heads = o.num_heads();
  shape.activation = Activation::kGelu;
  shape.pre_norm = true;
  const auto layer = gpt_layer_options(o);
  shape.layer_norm_eps = layer.layer_norm_eps();
  const int64_t L = o.num_layers(), H = o.num_heads(), dk = o.d_model() / o.num_heads();
  twin_source::Source s(shape);

  s.raw() << "def empty_cache(self, batch_size: int) -> Tuple[Tensor, Tensor]:\n";
  s.line() << "w = " << P("token_embedding.weight") << "\n";
  s.line() << "k = torch.zeros([" << L << ", batch_size, " << H << ", 0, " << dk
           << "], dtype=w.dtype, device=w.device)\n";
  s.line() << "return k, k.clone()\n\n";

  s.raw() << "def step(self, tokens: Tensor, past_k: Tensor, past_v: Tensor) -> Tuple[Tensor, Tensor, Tensor]:\n";
  s.line() << "B = tokens.size(0)\n";
  s.line() << "T = tokens.size(1)\n";
  s.line() << "t = past_k.size(3)\n";
  s.line() << "assert t + T <= " << o.block_size() << ", \"context beyond block_size " << o.block_size() << "\"\n";
  s.line() << "x = torch.embedding(" << P("token_embedding.weight") << ", tokens) + "
           << P("position_embedding.weight") << "[t:t + T]\n";
  // Query i (position t + i) sees keys 0 .. t + i: causal_mask(T, t + T, t).
  s.line() << "keys = torch.arange(t + T, device=tokens.device)\n";
  s.line() << "queries = torch.arange(t, t + T, device=tokens.device)\n";
  s.line() << "allowed = keys.unsqueeze(0) <= queries.unsqueeze(1)\n";
  s.mask_lines();
  s.line() << "ks: List[Tensor] = []\n";
  s.line() << "vs: List[Tensor] = []\n";
  for (int64_t l = 0; l < L; ++l) {
    const std::string p = "blocks.layers." + std::to_string(l);
    s.sublayer(p + ".norm1", [&](const std::string& y) {
      s.line() << "k = torch.cat([past_k[" << l << "], " << s.split(twin_source::linear(y, p + ".self_attn.W_K"), "B", "T")
               << "], 2)\n";
      s.line() << "v = torch.cat([past_v[" << l << "], " << s.split(twin_source::linear(y, p + ".self_attn.W_V"), "B", "T")
               << "], 2)\n";
      s.line() << "ks.append(k)\n";
      s.line() << "vs.append(v)\n";
      s.attention(p + ".self_attn", y, "k", "v", "B", "T", /*masked=*/true, "", "a");
    });
    s.sublayer(p + ".norm2", [&](const std::string& y) { s.ffn(p + ".ffn", y, "a"); });
  }
  s.line() << "x = " << s.layer_norm("x", "blocks.final_norm") << "\n";
  s.line() << "logits = torch.linear(x, " << P("token_embedding.weight") << ")\n";
  s.line() << "return torch.log_softmax(logits, -1), torch.stack(ks), torch.stack(vs)\n\n";

  s.raw() << "def forward(self, tokens: Tensor) -> Tensor:\n";
  s.line() << "k, v = self.empty_cache(tokens.size(0))\n";
  s.line() << "log_probs, k, v = self.step(tokens, k, v)\n";
  s.line() << "return log_probs\n";
  return s.str();
}

TwinSpec gpt_spec(GptImpl& model) {
  const GptOptions& o = model.options();
  TwinSpec spec("script_gpt", "nlpzoo_gpt");
  spec.hold(model)
      .add_int("vocab_size", o.vocab_size())
      .add_int("d_model", o.d_model())
      .add_int("num_heads", o.num_heads())
      .add_int("num_layers", o.num_layers())
      .add_int("block_size", o.block_size())
      .add_int("pad_id", kPadId)
      .add_int("unk_id", kUnkId)
      .add_int("bos_id", kBosId)
      .add_int("eos_id", kEosId);
  spec.source = twin_source_of(o);
  return spec;
}

std::string readme(const GptOptions& o) {
  std::ostringstream s;
  s << "nlpzoo GPT (decoder-only Transformer language model), TorchScript export\n"
    << "layers=" << o.num_layers() << " heads=" << o.num_heads() << " d_model=" << o.d_model()
    << " ffn_dim=" << o.ffn_dim() << " block_size=" << o.block_size() << " vocab_size=" << o.vocab_size() << "\n\n"
    << "Token ids: PAD=" << kPadId << " UNK=" << kUnkId << " BOS=" << kBosId << " EOS=" << kEosId
    << ". The model was trained on the text's pieces with EOS for each line break, so a text\n"
    << "starts after EOS; PAD and BOS never occur in it (exclude them when sampling).\n\n"
    << "Methods (L=" << o.num_layers() << " layers, H=" << o.num_heads() << " heads, d_k=" << o.d_model() / o.num_heads()
    << "):\n"
    << "  empty_cache(batch_size) -> (k[L,B,H,0,d_k], v[L,B,H,0,d_k])\n"
    << "  step(tokens[B,T] int64, k, v) -> (log_probs[B,T,V], k, v)   the next T positions, the cache grown by T\n"
    << "  forward(tokens[B,T] int64) -> log_probs[B,T,V]               step from the empty cache\n"
    << "At most block_size positions: cut the context (e.g. to its last block_size/2 tokens) and refill the cache.\n\n"
    << twin_readme_python_footer({"config.ini", "spm.model"},
                                 "k, v = m.empty_cache(1)\n"
                                 "ids = [" + std::to_string(kEosId) + "]  # EOS, then a prompt's ids (spm.model)\n"
                                 "log_probs, k, v = m.step(torch.tensor([ids]), k, v)\n"
                                 "p = log_probs[:, -1]\n"
                                 "for _ in range(min(100, m.block_size - len(ids))):\n"
                                 "    p[:, [" + std::to_string(kPadId) + ", " + std::to_string(kBosId) +
                                     "]] = float('-inf')\n"
                                 "    nxt = torch.multinomial(p.exp(), 1)  # [1, 1]\n"
                                 "    ids.append(int(nxt))\n"
                                 "    log_probs, k, v = m.step(nxt, k, v)\n"
                                 "    p = log_probs[:, -1]");
  return s.str();
}

}  // namespace

torch::jit::Module script_gpt(GptImpl& model) { return build_twin(gpt_spec(model)); }

void export_gpt(const std::string& out_path, GptImpl& model, const std::map<std::string, std::string>& extra_files) {
  export_twin(out_path, gpt_spec(model), extra_files, readme(model.options()), "export_gpt");
}

}  // namespace nlpzoo
