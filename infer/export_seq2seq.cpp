#include "infer/export_seq2seq.h"

#include <sstream>

#include "core/io.h"
#include "datasets/special_ids.h"
#include "infer/script_twin.h"

namespace nlpzoo {

namespace {

// One single-layer, single-direction run over x [B, S, in] from zero state, output `out`
// [B, S, Hd]. Trailing arguments: has_biases, num_layers, dropout, train, bidirectional, batch_first.
std::string run_direction(CellType cell, const std::string& out, const std::string& x,
                          const std::string& params) {
  const std::string tail = ", True, 1, 0.0, False, False, True)";
  if (cell == CellType::kLstm)
    return "    " + out + ", _h, _c = torch.lstm(" + x + ", [h0, h0], " + params + tail + "\n";
  return "    " + out + ", _h = " + twin_aten_rnn(cell) + "(" + x + ", h0, " + params + tail + "\n";
}

// TorchScript source of encode/step/translate_greedy for these options. Options are resolved
// here in C++, so the script holds no branches on them and every line type-checks.
std::string twin_source(const Seq2SeqOptions& o) {
  const bool bidir = o.bidirectional();
  const int64_t H = o.hidden_size(), L = o.num_layers(), Hd = bidir ? H / 2 : H;
  const bool lstm = o.cell() == CellType::kLstm;
  const AttentionType att = o.attention();
  std::ostringstream s;

  // --- encode ---------------------------------------------------------------------------
  // Padding: the eager encoder packs by lengths (number of non-pad tokens, at least 1), so a
  // row's forward direction ends at its last real token and its backward direction starts
  // there. The twin runs the whole padded batch forward (padding comes after the real tokens,
  // so it cannot reach them) and runs the backward direction forward over each row reversed
  // within its length (rev), then un-reverses; outputs at padding are then zeroed as
  // pad_packed_sequence does. Same aten kernels, fully batched.
  s << "def encode(self, src: Tensor) -> Tuple[Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor]:\n"
    << "    B = src.size(0)\n"
    << "    S = src.size(1)\n"
    << "    mask = torch.ne(src, self.pad_id)\n"
    << "    lengths = torch.clamp_min(mask.sum(1), 1)\n"
    << "    pos = torch.arange(S, device=src.device).unsqueeze(0)\n"
    << "    real = torch.lt(pos, lengths.unsqueeze(1))\n"
    << "    rev = torch.where(real, lengths.unsqueeze(1) - 1 - pos, pos)\n"
    << "    x = torch.embedding(self.src_embed__weight, src)\n"
    << "    h0 = torch.zeros([1, B, " << Hd << "], dtype=x.dtype, device=x.device)\n";
  for (int64_t l = 0; l < L; ++l) {
    s << run_direction(o.cell(), "fwd", "x", twin_rnn_layer_params("encoder", l, false));
    if (bidir) {
      s << "    xr = x.gather(1, rev.unsqueeze(2).expand(B, S, x.size(2)))\n"
        << run_direction(o.cell(), "bwd", "xr", twin_rnn_layer_params("encoder", l, true))
        << "    bwd = bwd.gather(1, rev.unsqueeze(2).expand(B, S, " << Hd << "))\n"
        << "    x = torch.cat([fwd, bwd], 2)\n";
    } else {
      s << "    x = fwd\n";
    }
  }
  s << "    states = x.masked_fill(torch.logical_not(real).unsqueeze(2), 0.0)\n"
    << "    last = (lengths - 1).view(B, 1, 1).expand(B, 1, " << Hd << ")\n";
  if (bidir)
    s << "    summary = torch.cat([fwd.gather(1, last).squeeze(1), bwd.select(1, 0)], 1)\n";
  else
    s << "    summary = fwd.gather(1, last).squeeze(1)\n";
  switch (att) {
    case AttentionType::kAdditive:
      s << "    keys = torch.linear(states, self.attention__W_h__weight, self.attention__W_h__bias)\n";
      break;
    case AttentionType::kGeneral: s << "    keys = torch.linear(states, self.attention__W__weight)\n"; break;
    case AttentionType::kDot: s << "    keys = states\n"; break;
    case AttentionType::kNone:
      s << "    keys = torch.zeros([B, S, 0], dtype=states.dtype, device=states.device)\n";
      break;
  }
  s << "    h = torch.tanh(torch.linear(summary, self.bridge_h__weight, self.bridge_h__bias)).view(B, "
    << L << ", " << H << ")\n";
  if (lstm)
    s << "    c = torch.tanh(torch.linear(summary, self.bridge_c__weight, self.bridge_c__bias)).view(B, "
      << L << ", " << H << ")\n";
  else
    s << "    c = torch.zeros([B, 0], dtype=states.dtype, device=states.device)\n";
  s << "    feed = torch.zeros([B, " << (o.input_feeding() ? H : 0)
    << "], dtype=states.dtype, device=states.device)\n"
    << "    return states, mask, keys, summary, h, c, feed\n\n";

  // --- step -----------------------------------------------------------------------------
  s << "def step(self, prev_tokens: Tensor, states: Tensor, mask: Tensor, keys: Tensor, summary: Tensor,"
       " h: Tensor, c: Tensor, feed: Tensor) -> Tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:\n"
    << "    x = torch.embedding(self.tgt_embed__weight, prev_tokens)\n";
  if (o.input_feeding()) s << "    x = torch.cat([x, feed], 1)\n";
  s << "    x = x.unsqueeze(1)\n"
    << "    h0 = h.transpose(0, 1).contiguous()\n";
  const std::string tail = ", True, " + std::to_string(L) + ", 0.0, False, False, True)\n";
  if (lstm) {
    s << "    s, hn, cn = torch.lstm(x, [h0, c.transpose(0, 1).contiguous()], " << twin_rnn_stack_params("decoder", L)
      << tail << "    new_c = cn.transpose(0, 1).contiguous()\n";
  } else {
    s << "    s, hn = " << twin_aten_rnn(o.cell()) << "(x, h0, " << twin_rnn_stack_params("decoder", L) << tail
      << "    new_c = c\n";
  }
  s << "    new_h = hn.transpose(0, 1).contiguous()\n";
  if (att == AttentionType::kNone) {
    s << "    context = summary.unsqueeze(1)\n"
      << "    attn = torch.zeros([x.size(0), 0], dtype=s.dtype, device=s.device)\n";
  } else {
    if (att == AttentionType::kAdditive) {
      s << "    q = torch.linear(s, self.attention__W_s__weight).unsqueeze(2)\n"
        << "    scores = torch.linear(torch.tanh(q + keys.unsqueeze(1)), self.attention__v__weight).squeeze(3)\n";
    } else {
      s << "    scores = torch.bmm(s, keys.transpose(1, 2))\n";
    }
    // masked_attention: exp(-inf) = 0 at padding; an all-padding row gets zeros, not NaN.
    s << "    invalid = torch.logical_not(mask.unsqueeze(1))\n"
      << "    weights = torch.softmax(scores.masked_fill(invalid, float('-inf')), -1)\n"
      << "    weights = weights.masked_fill(invalid, 0.0)\n"
      << "    context = torch.bmm(weights, states)\n"
      << "    attn = weights.squeeze(1)\n";
  }
  s << "    attentional = torch.tanh(torch.linear(torch.cat([context, s], 2), self.combine__weight,"
       " self.combine__bias))\n"
    << "    logits = torch.linear(attentional, self.output__weight, self.output__bias).squeeze(1)\n"
    << "    new_feed = " << (o.input_feeding() ? "attentional.squeeze(1)" : "feed") << "\n"
    << "    return torch.log_softmax(logits, -1), attn, new_h, new_c, new_feed\n\n";

  // --- translate_greedy -----------------------------------------------------------------
  s << twin_translate_greedy_source("states, mask, keys, summary, h, c, feed = self.encode(src)", "mask",
                                    "log_probs, attn, h, c, feed = self.step(prev, states, mask, keys, summary, h, c, feed)");
  return s.str();
}

TwinSpec seq2seq_spec(Seq2SeqImpl& model) {
  const Seq2SeqOptions& o = model.options();
  TwinSpec spec("script_seq2seq", "nlpzoo_seq2seq");
  spec.hold(model)
      .add_int("src_vocab_size", o.src_vocab_size())
      .add_int("tgt_vocab_size", o.tgt_vocab_size())
      .add_int("embed_dim", o.embed_dim())
      .add_int("hidden_size", o.hidden_size())
      .add_int("num_layers", o.num_layers())
      .add_bool("bidirectional", o.bidirectional())
      .add_int("attention_dim", o.attention_dim())
      .add_bool("input_feeding", o.input_feeding())
      .add_string("cell", to_string(o.cell()))
      .add_string("attention", to_string(o.attention()))
      .add_int("pad_id", o.pad_id())
      .add_int("bos_id", kBosId)
      .add_int("eos_id", kEosId);
  spec.source = twin_source(o);
  return spec;
}

}  // namespace

torch::jit::Module script_seq2seq(Seq2SeqImpl& model) { return build_twin(seq2seq_spec(model)); }

std::string seq2seq_export_readme(const Seq2SeqOptions& o) {
  std::ostringstream s;
  s << "nlpzoo seq2seq (RNN encoder-decoder), TorchScript export\n"
    << "cell=" << to_string(o.cell()) << " attention=" << to_string(o.attention())
    << " layers=" << o.num_layers() << " hidden_size=" << o.hidden_size()
    << " bidirectional=" << (o.bidirectional() ? "true" : "false")
    << " input_feeding=" << (o.input_feeding() ? "true" : "false") << "\n"
    << "src_vocab_size=" << o.src_vocab_size() << " tgt_vocab_size=" << o.tgt_vocab_size() << "\n\n"
    << "Token ids: PAD=" << o.pad_id() << " UNK=" << kUnkId << " BOS=" << kBosId << " EOS=" << kEosId
    << ". Sources are padded at the end with PAD and end with EOS.\n\n"
    << "Methods (batch-first; unused tensors have a zero-width last dim):\n"
    << "  encode(src[B,S] int64) -> (states[B,S,H], mask[B,S] bool, keys[B,S,P], summary[B,H],\n"
    << "                              h[B,L,H], c[B,L,H] or [B,0], feed[B,H] or [B,0])\n"
    << "  step(prev_tokens[N] int64, states, mask, keys, summary, h, c, feed)\n"
    << "      -> (log_probs[N,V], attention[N,S] or [N,0], h, c, feed)   (BOS at the first step)\n"
    << "  translate_greedy(src[B,S] int64, max_len) -> tokens[B,T] int64 (up to EOS, then PAD)\n\n"
    << twin_readme_python_footer();
  return s.str();
}

void export_seq2seq(const std::string& out_path, Seq2SeqImpl& model,
                    const std::map<std::string, std::string>& extra_files) {
  export_twin(out_path, seq2seq_spec(model), extra_files, seq2seq_export_readme(model.options()), "export_seq2seq");
}

// ---------------------------------------------------------------------------------------

ScriptedSeq2Seq::ScriptedSeq2Seq(torch::jit::Module module) : module_(std::move(module)) {
  require_twin_members(module_, {"encode", "step", "translate_greedy"},
                       {"tgt_vocab_size", "cell", "attention", "input_feeding"}, "seq2seq");
  tgt_vocab_size_ = module_.attr("tgt_vocab_size").toInt();
  has_keys_ = module_.attr("attention").toStringRef() != "none";
  has_c_ = module_.attr("cell").toStringRef() == "lstm";
  has_feed_ = module_.attr("input_feeding").toBool();
}

DecoderState ScriptedSeq2Seq::init(const torch::Tensor& src) {
  TORCH_CHECK(src.dim() == 2, "src must be [B, S] int64, got ", src.sizes());
  auto out = module_.get_method("encode")({src});
  const auto e = twin_tuple(out, 7, "encode", "seq2seq");
  DecoderState st;
  st.tensors["states"] = e[0].toTensor();
  st.tensors["mask"] = e[1].toTensor();
  if (has_keys_) st.tensors["keys"] = e[2].toTensor();
  st.tensors["summary"] = e[3].toTensor();
  st.tensors["h"] = e[4].toTensor();
  if (has_c_) st.tensors["c"] = e[5].toTensor();
  if (has_feed_) st.tensors["feed"] = e[6].toTensor();
  return st;
}

DecoderStep ScriptedSeq2Seq::step(const DecoderState& state, const torch::Tensor& prev_tokens) {
  const auto& t = state.tensors;
  const auto& states = t.at("states");
  const int64_t N = states.size(0);
  // The twin's step has one signature for every configuration; unused tensors travel as
  // zero-width placeholders, built here so that the DecoderState holds what the eager one does.
  auto or_empty = [&](const char* name, bool used, std::vector<int64_t> shape) {
    return used ? t.at(name) : torch::zeros(shape, states.options());
  };
  auto out = module_.get_method("step")({prev_tokens, states, t.at("mask"),
                                         or_empty("keys", has_keys_, {N, states.size(1), 0}), t.at("summary"),
                                         t.at("h"), or_empty("c", has_c_, {N, 0}), or_empty("feed", has_feed_, {N, 0})});
  const auto e = twin_tuple(out, 5, "step", "seq2seq");
  DecoderStep step;
  step.log_probs = e[0].toTensor();
  if (has_keys_) step.attention = e[1].toTensor();
  step.state = state;
  step.state.tensors["h"] = e[2].toTensor();
  if (has_c_) step.state.tensors["c"] = e[3].toTensor();
  if (has_feed_) step.state.tensors["feed"] = e[4].toTensor();
  return step;
}

}  // namespace nlpzoo
