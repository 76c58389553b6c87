#include "infer/export_transformer.h"

#include <sstream>

#include "core/io.h"
#include "datasets/special_ids.h"
#include "infer/twin_transformer_source.h"

namespace nlpzoo {

namespace {

using twin_source::lit;
using twin_source::linear;
using twin_source::P;

twin_source::Source transformer_source(const TransformerOptions& o) {
  twin_source::LayerShape shape;
  shape.d_model = o.d_model();
  shape.num_heads = o.num_heads();
  shape.activation = o.activation();
  shape.pre_norm = o.pre_norm();
  shape.positions = o.positions();
  shape.max_positions = o.max_positions();
  shape.relative_k = o.relative_k();
  return twin_source::Source(shape);
}

// TorchScript source of the twin's methods for these options (see the header for signatures).
std::string methods_source(const TransformerOptions& o) {
  auto src = transformer_source(o);
  const int64_t D = o.d_model(), H = o.num_heads(), dk = D / H, L = o.num_decoder_layers(), k = o.relative_k();
  const std::string src_table = o.share_embeddings() ? "tgt_embed.weight" : "src_embed.weight";

  // --- _sinusoidal (sinusoidal positions only) --------------------------------------------
  // SinusoidalPositionalEncodingImpl::forward: the buffer's rows when they suffice, else the
  // formula in double precision as sinusoidal_table computes it (same ops, so same values).
  if (o.positions() == PositionType::kSinusoidal) {
    src.raw() << "def _sinusoidal(self, length: int, offset: int) -> Tensor:\n";
    src.line() << "table = self.sinusoidal__table\n";
    src.line() << "if offset + length <= table.size(0):\n";
    src.line() << "    return table[offset:offset + length]\n";
    src.line() << "pos = torch.arange(offset, offset + length, device=table.device).double().unsqueeze(1)\n";
    src.line() << "two_i = torch.arange(0, " << D << ", 2, device=table.device).double()\n";
    src.line() << "angle = pos / torch.pow(10000.0, two_i / " << lit(double(D)) << ")\n";
    src.line() << "pe = torch.zeros([length, " << D << "], dtype=angle.dtype, device=table.device)\n";
    src.line() << "pe[:, 0::2] = torch.sin(angle)\n";
    src.line() << "pe[:, 1::2] = torch.cos(angle[:, 0:" << D / 2 << "])\n";
    src.line() << "return pe.to(table.dtype)\n\n";
  }

  // --- encode -------------------------------------------------------------------------------
  src.raw() << "def encode(self, src: Tensor) -> Tuple[Tensor, Tensor]:\n";
  src.line() << "assert src.dim() == 2, \"src must be [B, S] int64\"\n";
  src.line() << "B = src.size(0)\n";
  src.line() << "S = src.size(1)\n";
  src.line() << "src_mask = torch.ne(src, self.pad_id)\n";
  src.line() << "allowed = src_mask.unsqueeze(1).unsqueeze(1)\n";
  src.mask_lines();
  if (src.relative()) {
    // relative_position_index(S, S, k): clip(j - i, k) + k.
    src.line() << "rel = torch.clamp(torch.arange(S, device=src.device).unsqueeze(0) - "
                  "torch.arange(S, device=src.device).unsqueeze(1), "
               << -k << ", " << k << ") + " << k << "\n";
  }
  src.embed(src_table, "src_positions.weight", "src", "S", "0", "x");
  src.encoder_stack("encoder", o.num_encoder_layers(), src.relative() ? "rel" : "");
  src.line() << "return x, src_mask\n\n";

  // --- init_cache ---------------------------------------------------------------------------
  src.raw() << "def init_cache(self, memory: Tensor, src_mask: Tensor) -> Tuple[List[Tensor], List[Tensor]]:\n";
  src.line() << "assert memory.dim() == 3 and src_mask.dim() == 2 and memory.size(0) == src_mask.size(0) and "
                "memory.size(1) == src_mask.size(1), \"memory must be [B, S, d_model] and src_mask [B, S]\"\n";
  src.line() << "B = memory.size(0)\n";
  src.line() << "S = memory.size(1)\n";
  src.line() << "cross: List[Tensor] = []\n";
  src.line() << "self_cache: List[Tensor] = []\n";
  for (int64_t l = 0; l < L; ++l) {
    const std::string p = "decoder.layers." + std::to_string(l) + ".cross_attn";
    src.line() << "cross.append(" << src.split(linear("memory", p + ".W_K"), "B", "S") << ")\n";
    src.line() << "cross.append(" << src.split(linear("memory", p + ".W_V"), "B", "S") << ")\n";
    for (int i = 0; i < 2; ++i)
      src.line() << "self_cache.append(torch.zeros([B, " << H << ", 0, " << dk
                 << "], dtype=memory.dtype, device=memory.device))\n";
  }
  src.line() << "return cross, self_cache\n\n";

  // --- step ---------------------------------------------------------------------------------
  src.raw() << "def step(self, prev_tokens: Tensor, step_index: int, src_mask: Tensor, cross: List[Tensor], "
               "self_cache: List[Tensor]) -> Tuple[Tensor, Tensor, List[Tensor]]:\n";
  src.line() << "assert prev_tokens.dim() == 1, \"prev_tokens must be [N] int64\"\n";
  src.line() << "assert len(cross) == " << 2 * L << " and len(self_cache) == " << 2 * L << ", \"cross and self_cache "
             << "must hold " << 2 * L << " tensors each (k, v per decoder layer)\"\n";
  src.line() << "assert step_index == self_cache[0].size(2), \"step_index must equal the number of cached "
                "target positions\"\n";
  src.line() << "N = prev_tokens.size(0)\n";
  src.line() << "allowed = src_mask.unsqueeze(1).unsqueeze(1)\n";
  src.mask_lines();
  if (src.relative()) {
    // relative_position_index(1, t+1, k, offset t): the new query against every cached key.
    src.line() << "rel = torch.clamp(torch.arange(step_index + 1, device=prev_tokens.device).unsqueeze(0) - "
                  "torch.arange(step_index, step_index + 1, device=prev_tokens.device).unsqueeze(1), "
               << -k << ", " << k << ") + " << k << "\n";
  }
  src.embed("tgt_embed.weight", "tgt_positions.weight", "prev_tokens.unsqueeze(1)", "1", "step_index", "x");
  src.line() << "new_cache: List[Tensor] = []\n";
  for (int64_t l = 0; l < L; ++l) {
    const std::string p = "decoder.layers." + std::to_string(l), sl = std::to_string(2 * l),
                      sl1 = std::to_string(2 * l + 1);
    src.sublayer(p + ".norm1", [&](const std::string& y) {
      // forward_incremental: this position's keys/values join the cache, the query sees all.
      src.line() << "k = torch.cat([self_cache[" << sl << "], " << src.split(linear(y, p + ".self_attn.W_K"), "N", "1")
                 << "], 2)\n";
      src.line() << "v = torch.cat([self_cache[" << sl1 << "], " << src.split(linear(y, p + ".self_attn.W_V"), "N", "1")
                 << "], 2)\n";
      src.line() << "new_cache.append(k)\n";
      src.line() << "new_cache.append(v)\n";
      src.attention(p + ".self_attn", y, "k", "v", "N", "1", /*masked=*/false, src.relative() ? "rel" : "", "a");
    });
    src.sublayer(p + ".norm2", [&](const std::string& y) {
      src.attention(p + ".cross_attn", y, "cross[" + sl + "]", "cross[" + sl1 + "]", "N", "1", /*masked=*/true, "",
                    "a");
      if (l + 1 == L) src.line() << "cross_w = w\n";
    });
    src.sublayer(p + ".norm3", [&](const std::string& y) { src.ffn(p + ".ffn", y, "a"); });
  }
  if (o.pre_norm()) src.line() << "x = " << src.layer_norm("x", "decoder.final_norm") << "\n";
  src.line() << "log_probs = torch.log_softmax(torch.matmul(x, " << P("tgt_embed.weight") << ".t()).squeeze(1), -1)\n";
  src.line() << "cross_w = cross_w.squeeze(2)\n";
  if (o.attention_head() < 0) src.line() << "attn = cross_w.mean(1)\n";
  else src.line() << "attn = cross_w.select(1, " << o.attention_head() << ")\n";
  src.line() << "return log_probs, attn, new_cache\n\n";

  // --- translate_greedy ---------------------------------------------------------------------
  src.raw() << twin_translate_greedy_source("memory, src_mask = self.encode(src)\n"
                                            "cross, cache = self.init_cache(memory, src_mask)",
                                            "src_mask", "log_probs, attn, cache = self.step(prev, t, src_mask, cross, cache)");
  return src.str();
}

std::string layer_key(const char* kind, int64_t l) { return std::string(kind) + "_" + std::to_string(l); }

TwinSpec transformer_spec(TransformerSeq2SeqImpl& model) {
  const TransformerOptions& o = model.options();
  TwinSpec spec("script_transformer", "nlpzoo_transformer");
  spec.hold(model)
      .add_int("src_vocab_size", o.src_vocab_size())
      .add_int("tgt_vocab_size", o.tgt_vocab_size())
      .add_int("d_model", o.d_model())
      .add_int("num_heads", o.num_heads())
      .add_int("num_encoder_layers", o.num_encoder_layers())
      .add_int("num_decoder_layers", o.num_decoder_layers())
      .add_int("ffn_dim", o.ffn_dim())
      .add_string("activation", to_string(o.activation()))
      .add_bool("pre_norm", o.pre_norm())
      .add_string("positions", to_string(o.positions()))
      .add_int("max_positions", o.max_positions())
      .add_int("relative_k", o.relative_k())
      .add_bool("share_embeddings", o.share_embeddings())
      .add_int("attention_head", o.attention_head())
      .add_int("pad_id", o.pad_id())
      .add_int("bos_id", kBosId)
      .add_int("eos_id", kEosId);
  spec.source = methods_source(o);
  return spec;
}

}  // namespace

torch::jit::Module script_transformer(TransformerSeq2SeqImpl& model) { return build_twin(transformer_spec(model)); }

std::string transformer_export_readme(const TransformerOptions& o) {
  std::ostringstream s;
  s << "nlpzoo Transformer encoder-decoder, TorchScript export\n"
    << "d_model=" << o.d_model() << " heads=" << o.num_heads() << " encoder_layers=" << o.num_encoder_layers()
    << " decoder_layers=" << o.num_decoder_layers() << " ffn_dim=" << o.ffn_dim()
    << " activation=" << to_string(o.activation()) << " norm=" << (o.pre_norm() ? "pre" : "post")
    << " positions=" << to_string(o.positions());
  if (o.positions() == PositionType::kRelative) s << " relative_k=" << o.relative_k();
  else s << " max_positions=" << o.max_positions();
  s << " share_embeddings=" << (o.share_embeddings() ? "true" : "false") << "\n"
    << "src_vocab_size=" << o.src_vocab_size() << " tgt_vocab_size=" << o.tgt_vocab_size() << "\n\n"
    << "Token ids: PAD=" << o.pad_id() << " UNK=" << kUnkId << " BOS=" << kBosId << " EOS=" << kEosId
    << ". Sources are padded at the end with PAD and end with EOS.\n\n"
    << "Methods (batch-first; H heads, d_k = d_model / H, L = " << o.num_decoder_layers() << " decoder layers):\n"
    << "  encode(src[B,S] int64) -> (memory[B,S,d_model], src_mask[B,S] bool)\n"
    << "  init_cache(memory, src_mask) -> (cross, self_cache): lists of 2L tensors [k_0, v_0, k_1, v_1, ...],\n"
    << "      cross [B,H,S,d_k] (fixed), self_cache [B,H,0,d_k] (grows by one position per step)\n"
    << "  step(prev_tokens[N] int64, step_index, src_mask, cross, self_cache)\n"
    << "      -> (log_probs[N,V], attention[N,S], self_cache)   (BOS at step 0; step_index = t = 0, 1, ...)\n"
    << "  translate_greedy(src[B,S] int64, max_len) -> tokens[B,T] int64 (up to EOS, then PAD)\n"
    << "For beam search, reorder rows with index_select(0, rows) on src_mask and every list entry.\n\n"
    << twin_readme_python_footer();
  return s.str();
}

void export_transformer(const std::string& out_path, TransformerSeq2SeqImpl& model,
                        const std::map<std::string, std::string>& extra_files) {
  export_twin(out_path, transformer_spec(model), extra_files, transformer_export_readme(model.options()),
              "export_transformer");
}

// ---------------------------------------------------------------------------------------

ScriptedTransformer::ScriptedTransformer(torch::jit::Module module) : module_(std::move(module)) {
  require_twin_members(module_, {"encode", "init_cache", "step", "translate_greedy"},
                       {"tgt_vocab_size", "num_decoder_layers"}, "transformer");
  tgt_vocab_size_ = module_.attr("tgt_vocab_size").toInt();
  num_layers_ = module_.attr("num_decoder_layers").toInt();
}

DecoderState ScriptedTransformer::init(const torch::Tensor& src) {
  TORCH_CHECK(src.dim() == 2, "src must be [B, S] int64, got ", src.sizes());
  const auto enc = twin_tuple(module_.get_method("encode")({src}), 2, "encode", "transformer");
  const auto caches = twin_tuple(module_.get_method("init_cache")({enc[0], enc[1]}), 2, "init_cache", "transformer");
  const auto cross = caches[0].toTensorVector(), self = caches[1].toTensorVector();
  if (cross.size() != size_t(2 * num_layers_) || self.size() != size_t(2 * num_layers_))
    throw UserError("not an nlpzoo transformer export: 'init_cache' does not return " +
                    std::to_string(2 * num_layers_) + " tensors per list");
  DecoderState st;
  st.tensors["src_mask"] = enc[1].toTensor();
  for (int64_t l = 0; l < num_layers_; ++l) {
    st.tensors[layer_key("k_cross", l)] = cross[2 * l];
    st.tensors[layer_key("v_cross", l)] = cross[2 * l + 1];
    st.tensors[layer_key("k_self", l)] = self[2 * l];
    st.tensors[layer_key("v_self", l)] = self[2 * l + 1];
  }
  return st;
}

DecoderStep ScriptedTransformer::step(const DecoderState& state, const torch::Tensor& prev_tokens) {
  const auto& t = state.tensors;
  c10::List<torch::Tensor> cross, self;
  for (int64_t l = 0; l < num_layers_; ++l) {
    cross.push_back(t.at(layer_key("k_cross", l)));
    cross.push_back(t.at(layer_key("v_cross", l)));
    self.push_back(t.at(layer_key("k_self", l)));
    self.push_back(t.at(layer_key("v_self", l)));
  }
  const int64_t step_index = self.get(0).size(2);
  const auto e = twin_tuple(module_.get_method("step")({prev_tokens, step_index, t.at("src_mask"), cross, self}), 3,
                            "step", "transformer");
  const auto grown = e[2].toTensorVector();
  if (grown.size() != size_t(2 * num_layers_))
    throw UserError("not an nlpzoo transformer export: 'step' does not return " + std::to_string(2 * num_layers_) +
                    " cache tensors");
  DecoderStep step;
  step.log_probs = e[0].toTensor();
  step.attention = e[1].toTensor();
  step.state = state;
  for (int64_t l = 0; l < num_layers_; ++l) {
    step.state.tensors[layer_key("k_self", l)] = grown[2 * l];
    step.state.tensors[layer_key("v_self", l)] = grown[2 * l + 1];
  }
  return step;
}

}  // namespace nlpzoo
