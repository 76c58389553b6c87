#include "infer/export_transformer.h"

#include <cmath>
#include <iomanip>
#include <sstream>

#include "datasets/io.h"
#include "datasets/special_ids.h"

namespace nlpzoo {

namespace {

// A float literal that TorchScript parses back to the same double (17 significant digits;
// always with a '.' or an exponent, so "4" does not become an int).
std::string lit(double x) {
  std::ostringstream s;
  s << std::setprecision(17) << x;
  std::string out = s.str();
  if (out.find_first_of(".e") == std::string::npos) out += ".0";
  return out;
}

// The twin attribute holding eager tensor `eager_name`, as TorchScript.
std::string P(const std::string& eager_name) { return "self." + scripted_name(eager_name); }

std::string linear(const std::string& x, const std::string& prefix) {
  return "torch.linear(" + x + ", " + P(prefix + ".weight") + ", " + P(prefix + ".bias") + ")";
}

// The generated source, line by line, with the options it is generated for.
class Source {
 public:
  explicit Source(const TransformerOptions& o)
      : o_(o), D_(o.d_model()), H_(o.num_heads()), dk_(o.d_model() / o.num_heads()) {}

  std::string str() const { return s_.str(); }
  std::ostream& line() { return s_ << "    "; }
  std::ostream& raw() { return s_; }

  bool relative() const { return o_.positions() == PositionType::kRelative; }

  std::string layer_norm(const std::string& x, const std::string& prefix) const {
    return "torch.layer_norm(" + x + ", [" + std::to_string(D_) + "], " + P(prefix + ".weight") + ", " +
           P(prefix + ".bias") + ", 1e-05)";
  }

  // [R, T, D] -> [R, H, T, d_k], as MultiHeadAttentionImpl::split_heads.
  std::string split(const std::string& x, const std::string& R, const std::string& T) const {
    return x + ".view(" + R + ", " + T + ", " + std::to_string(H_) + ", " + std::to_string(dk_) + ").transpose(1, 2)";
  }

  // Multi-head attention of `query` [R, T, D] over keys/values already split into heads
  // (variables k, v: [R, H, S, d_k]) into variable `out` [R, T, D]; weights stay in `w`.
  // masked: apply the key mask held in `blocked`/`nothing` (see mask_lines). rel: name of
  // the [T, S] relative index variable, or "" without relative positions.
  void attention(const std::string& mha, const std::string& query, const std::string& k, const std::string& v,
                 const std::string& R, const std::string& T, bool masked, const std::string& rel,
                 const std::string& out) {
    // Same order of operations as scaled_dot_product_attention: q is scaled, not the scores.
    line() << "q = " << split(linear(query, mha + ".W_Q"), R, T) << " * " << lit(1.0 / std::sqrt(double(dk_))) << "\n";
    line() << "scores = torch.matmul(q, " << k << ".transpose(-2, -1))\n";
    if (!rel.empty()) {
      line() << "ri = " << rel << ".expand_as(scores)\n";
      line() << "scores = scores + torch.matmul(q, " << P(mha + ".relative_keys") << ".t()).gather(-1, ri)\n";
    }
    if (masked)
      line() << "w = torch.softmax(scores.masked_fill(blocked, float('-inf')), -1).masked_fill(nothing, 0.0)\n";
    else
      line() << "w = torch.softmax(scores, -1)\n";
    line() << "o = torch.matmul(w, " << v << ")\n";
    if (!rel.empty()) {
      // Weights bucketed by clipped distance, then one matmul with w^V (Shaw et al. eq. 3).
      line() << "buckets = torch.zeros([" << R << ", " << H_ << ", " << T << ", " << 2 * o_.relative_k() + 1
             << "], dtype=w.dtype, device=w.device).scatter_add(-1, ri, w)\n";
      line() << "o = o + torch.matmul(buckets, " << P(mha + ".relative_values") << ")\n";
    }
    line() << out << " = " << linear("o.transpose(1, 2).reshape(" + R + ", " + T + ", " + std::to_string(D_) + ")",
                                     mha + ".W_O")
           << "\n";
  }

  // From `allowed` [R, 1, 1, S] bool: `blocked` (keys to hide) and `nothing` (rows without a
  // single allowed key, which attend everywhere and are then zeroed, so no NaN), exactly as
  // scaled_dot_product_attention derives them.
  void mask_lines() {
    line() << "nothing = torch.logical_not(allowed.any(-1, True))\n";
    line() << "blocked = torch.logical_not(torch.logical_or(allowed, nothing))\n";
  }

  // FFN(y) into `out`.
  void ffn(const std::string& prefix, const std::string& y, const std::string& out) {
    const char* act = o_.activation() == Activation::kGelu ? "torch.gelu" : "torch.relu";
    line() << out << " = " << linear(std::string(act) + "(" + linear(y, prefix + ".linear1") + ")", prefix + ".linear2")
           << "\n";
  }

  // A residual sub-layer on x: `body` writes the sub-layer's output into `a` from its input `y`.
  template <class F>
  void sublayer(const std::string& norm, F&& body) {
    if (o_.pre_norm()) {
      line() << "y = " << layer_norm("x", norm) << "\n";
      body("y");
      line() << "x = x + a\n";
    } else {
      body("x");
      line() << "x = " << layer_norm("x + a", norm) << "\n";
    }
  }

  // √d_model E x + P(offset ..) for x [R, T] int64 into `out` [R, T, D].
  void embed(const std::string& table, const std::string& learned, const std::string& x, const std::string& T,
             const std::string& offset, const std::string& out) {
    line() << out << " = torch.embedding(" << P(table) << ", " << x << ") * " << lit(std::sqrt(double(D_))) << "\n";
    switch (o_.positions()) {
      case PositionType::kSinusoidal:
        line() << out << " = " << out << " + self._sinusoidal(" << T << ", " << offset << ")\n";
        break;
      case PositionType::kLearned:
        line() << "assert " << offset << " + " << T << " <= " << o_.max_positions()
               << ", \"position beyond the learned table (max_positions " << o_.max_positions() << ")\"\n";
        line() << out << " = " << out << " + " << P(learned) << "[" << offset << ":" << offset << " + " << T << "]\n";
        break;
      case PositionType::kRelative: break;
    }
  }

 private:
  const TransformerOptions& o_;
  const int64_t D_, H_, dk_;
  std::ostringstream s_;
};

// TorchScript source of the twin's methods for these options (see the header for signatures).
std::string twin_source(const TransformerOptions& o) {
  Source src(o);
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
  for (int64_t l = 0; l < o.num_encoder_layers(); ++l) {
    const std::string p = "encoder.layers." + std::to_string(l);
    src.sublayer(p + ".norm1", [&](const std::string& y) {
      src.line() << "k = " << src.split(linear(y, p + ".self_attn.W_K"), "B", "S") << "\n";
      src.line() << "v = " << src.split(linear(y, p + ".self_attn.W_V"), "B", "S") << "\n";
      src.attention(p + ".self_attn", y, "k", "v", "B", "S", /*masked=*/true, src.relative() ? "rel" : "", "a");
    });
    src.sublayer(p + ".norm2", [&](const std::string& y) { src.ffn(p + ".ffn", y, "a"); });
  }
  if (o.pre_norm()) src.line() << "x = " << src.layer_norm("x", "encoder.final_norm") << "\n";
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
  // Dtypes come from existing tensors: Module::define's resolver reads `torch.long` as the op
  // aten::long, not as a dtype.
  src.raw() << "def translate_greedy(self, src: Tensor, max_len: int) -> Tensor:\n";
  src.line() << "memory, src_mask = self.encode(src)\n";
  src.line() << "cross, cache = self.init_cache(memory, src_mask)\n";
  src.line() << "B = src.size(0)\n";
  src.line() << "prev = torch.full([B], self.bos_id, dtype=src.dtype, device=src.device)\n";
  src.line() << "out = torch.full([B, max_len], self.pad_id, dtype=src.dtype, device=src.device)\n";
  src.line() << "done = torch.zeros([B], dtype=src_mask.dtype, device=src.device)\n";
  src.line() << "T = 0\n";
  src.line() << "for t in range(max_len):\n";
  src.line() << "    log_probs, attn, cache = self.step(prev, t, src_mask, cross, cache)\n";
  src.line() << "    tok = torch.argmax(log_probs, 1)\n";
  src.line() << "    tok = torch.where(done, torch.full_like(tok, self.pad_id), tok)\n";
  src.line() << "    out[:, t] = tok\n";
  src.line() << "    done = torch.logical_or(done, torch.eq(tok, self.eos_id))\n";
  src.line() << "    prev = tok\n";
  src.line() << "    T = t + 1\n";
  src.line() << "    if bool(done.all()):\n";
  src.line() << "        break\n";
  src.line() << "return out[:, :T]\n";
  return src.str();
}

std::string layer_key(const char* kind, int64_t l) { return std::string(kind) + "_" + std::to_string(l); }

}  // namespace

torch::jit::Module script_transformer(TransformerSeq2SeqImpl& model) {
  const TransformerOptions& o = model.options();
  torch::jit::Module twin("nlpzoo_transformer");
  copy_tensors_into(twin, model, "script_transformer");
  add_int_attribute(twin, "src_vocab_size", o.src_vocab_size());
  add_int_attribute(twin, "tgt_vocab_size", o.tgt_vocab_size());
  add_int_attribute(twin, "d_model", o.d_model());
  add_int_attribute(twin, "num_heads", o.num_heads());
  add_int_attribute(twin, "num_encoder_layers", o.num_encoder_layers());
  add_int_attribute(twin, "num_decoder_layers", o.num_decoder_layers());
  add_int_attribute(twin, "ffn_dim", o.ffn_dim());
  add_string_attribute(twin, "activation", to_string(o.activation()));
  add_bool_attribute(twin, "pre_norm", o.pre_norm());
  add_string_attribute(twin, "positions", to_string(o.positions()));
  add_int_attribute(twin, "max_positions", o.max_positions());
  add_int_attribute(twin, "relative_k", o.relative_k());
  add_bool_attribute(twin, "share_embeddings", o.share_embeddings());
  add_int_attribute(twin, "attention_head", o.attention_head());
  add_int_attribute(twin, "pad_id", o.pad_id());
  add_int_attribute(twin, "bos_id", kBosId);
  add_int_attribute(twin, "eos_id", kEosId);
  twin.define(twin_source(o));
  twin.eval();
  return twin;
}

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
  save_twin(out_path, script_transformer(model), extra_files, transformer_export_readme(model.options()),
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
