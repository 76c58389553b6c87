#include "models/seq2seq/seq2seq.h"
#include "models/linear.h"

namespace nlpzoo {

Seq2SeqImpl::Seq2SeqImpl(const Seq2SeqOptions& o) : options_(o) {
  TORCH_CHECK(!o.bidirectional() || o.hidden_size() % 2 == 0,
              "hidden_size must be even with a bidirectional encoder, got ", o.hidden_size());
  const int64_t dirs = o.bidirectional() ? 2 : 1;
  const int64_t H = o.hidden_size();
  src_embed = register_module("src_embed", torch::nn::Embedding(
      torch::nn::EmbeddingOptions(o.src_vocab_size(), o.embed_dim()).padding_idx(o.pad_id())));
  tgt_embed = register_module("tgt_embed", torch::nn::Embedding(
      torch::nn::EmbeddingOptions(o.tgt_vocab_size(), o.embed_dim()).padding_idx(o.pad_id())));
  encoder = register_module("encoder", Recurrent(RecurrentOptions(o.cell(), o.embed_dim(), H / dirs)
                                                     .num_layers(o.num_layers())
                                                     .dropout(o.num_layers() > 1 ? o.dropout() : 0.0)
                                                     .bidirectional(o.bidirectional())));
  const int64_t dec_in = o.embed_dim() + (o.input_feeding() ? H : 0);
  decoder = register_module("decoder", Recurrent(RecurrentOptions(o.cell(), dec_in, H)
                                                     .num_layers(o.num_layers())
                                                     .dropout(o.num_layers() > 1 ? o.dropout() : 0.0)));
  bridge_h = register_module("bridge_h", torch::nn::Linear(H, o.num_layers() * H));
  if (o.cell() == CellType::kLstm) bridge_c = register_module("bridge_c", torch::nn::Linear(H, o.num_layers() * H));
  attention = make_attention(o.attention(), H, H, o.attention_dim());
  if (attention) register_module("attention", attention);
  combine = register_module("combine", torch::nn::Linear(2 * H, H));
  output = register_module("output", torch::nn::Linear(H, o.tgt_vocab_size()));
  dropout = register_module("dropout", torch::nn::Dropout(o.dropout()));
}

void Seq2SeqImpl::init_uniform(double a) {
  torch::NoGradGuard no_grad;
  for (auto& p : parameters()) p.uniform_(-a, a);
  src_embed->weight[options_.pad_id()].zero_();
  tgt_embed->weight[options_.pad_id()].zero_();
}

EncoderOutput Seq2SeqImpl::encode(const torch::Tensor& src) {
  TORCH_CHECK(src.dim() == 2, "src must be [B, S] int64, got ", src.sizes());
  EncoderOutput enc;
  enc.mask = src.ne(options_.pad_id());
  auto lengths = enc.mask.sum(/*dim=*/1).clamp_min(1);  // [B]; clamp keeps packing valid
  auto [states, final_state] = encoder(dropout(src_embed(src)), lengths);
  enc.states = states;  // [B, S, H]
  const int64_t dirs = options_.bidirectional() ? 2 : 1;
  // Top layer's final states: forward ends at the last real token, backward at the first.
  auto top = final_state.h.slice(/*dim=*/0, final_state.h.size(0) - dirs);  // [dirs, B, H/dirs]
  enc.summary = top.transpose(0, 1).reshape({src.size(0), -1});             // [B, H]
  if (attention) enc.keys = attention->project_keys(enc.states);
  return enc;
}

RecurrentState Seq2SeqImpl::initial_state(const EncoderOutput& enc) {
  const int64_t B = enc.summary.size(0), L = options_.num_layers(), H = options_.hidden_size();
  RecurrentState s;
  s.h = torch::tanh(bridge_h(enc.summary)).view({B, L, H}).transpose(0, 1).contiguous();
  if (bridge_c) s.c = torch::tanh(bridge_c(enc.summary)).view({B, L, H}).transpose(0, 1).contiguous();
  return s;
}

DecoderOutput Seq2SeqImpl::attend_and_project(const torch::Tensor& s, const EncoderOutput& enc) {
  DecoderOutput out;
  torch::Tensor context;
  if (attention) {
    auto scores = attention->score(s, enc.keys);  // [B, T, S]
    std::tie(context, out.attention) = masked_attention(scores, enc.mask, enc.states);
  } else {
    context = enc.summary.unsqueeze(1).expand({-1, s.size(1), -1});  // [B, T, H]
  }
  out.attentional = torch::tanh(nlpzoo::linear(torch::cat({context, s}, /*dim=*/-1), combine));  // [B, T, H]
  out.logits = nlpzoo::linear(dropout(out.attentional), output);                              // [B, T, V]
  return out;
}

DecoderOutput Seq2SeqImpl::decode(const torch::Tensor& tgt_in, const EncoderOutput& enc,
                                  const RecurrentState& state, const torch::Tensor& prev_attentional) {
  auto emb = dropout(tgt_embed(tgt_in));  // [B, T, E]
  if (!options_.input_feeding()) {
    auto [s, final_state] = decoder(emb, /*lengths=*/torch::Tensor(), state);  // [B, T, H]
    auto out = attend_and_project(s, enc);
    out.state = final_state;
    return out;
  }
  // Input feeding makes step t depend on h̃_{t-1}: one step at a time.
  auto feed = prev_attentional.defined()
                  ? prev_attentional
                  : torch::zeros({tgt_in.size(0), options_.hidden_size()}, emb.options());
  RecurrentState st = state;
  std::vector<torch::Tensor> logits, attn, attentional;
  for (int64_t t = 0; t < tgt_in.size(1); ++t) {
    auto x = torch::cat({emb.select(1, t), feed}, /*dim=*/-1).unsqueeze(1);  // [B, 1, E+H]
    auto [s, next] = decoder(x, /*lengths=*/torch::Tensor(), st);
    auto o = attend_and_project(s, enc);
    st = next;
    feed = o.attentional.squeeze(1);
    logits.push_back(o.logits);
    attentional.push_back(o.attentional);
    if (o.attention.defined()) attn.push_back(o.attention);
  }
  DecoderOutput out;
  out.logits = torch::cat(logits, 1);
  out.attentional = torch::cat(attentional, 1);
  if (!attn.empty()) out.attention = torch::cat(attn, 1);
  out.state = st;
  return out;
}

torch::Tensor Seq2SeqImpl::forward(const torch::Tensor& src, const torch::Tensor& tgt_in) {
  auto enc = encode(src);
  return decode(tgt_in, enc, initial_state(enc)).logits;
}

DecoderState Seq2SeqImpl::init(const torch::Tensor& src) {
  auto enc = encode(src);
  auto s0 = initial_state(enc);
  DecoderState st;
  st.tensors["states"] = enc.states;
  st.tensors["mask"] = enc.mask;
  st.tensors["summary"] = enc.summary;
  if (enc.keys.defined()) st.tensors["keys"] = enc.keys;
  st.per_sentence = {"states", "mask", "summary", "keys"};
  st.tensors["h"] = s0.h_batch_major();
  if (s0.c.defined()) st.tensors["c"] = s0.c_batch_major();
  if (options_.input_feeding())
    st.tensors["feed"] = torch::zeros({src.size(0), options_.hidden_size()}, enc.states.options());
  return st;
}

DecoderStep Seq2SeqImpl::step(const DecoderState& state, const torch::Tensor& prev_tokens) {
  const auto& t = state.tensors;
  EncoderOutput enc;
  enc.states = t.at("states");
  enc.mask = t.at("mask");
  enc.summary = t.at("summary");
  if (t.count("keys")) enc.keys = t.at("keys");
  auto s0 = RecurrentState::from_batch_major(t.at("h"), t.count("c") ? t.at("c") : torch::Tensor());
  auto out = decode(prev_tokens.unsqueeze(1), enc, s0, t.count("feed") ? t.at("feed") : torch::Tensor());
  DecoderStep step;
  step.log_probs = torch::log_softmax(out.logits.squeeze(1), /*dim=*/-1);  // [N, V]
  if (out.attention.defined()) step.attention = out.attention.squeeze(1);  // [N, S]
  step.state = state;
  step.state.tensors["h"] = out.state.h_batch_major();
  if (out.state.c.defined()) step.state.tensors["c"] = out.state.c_batch_major();
  if (options_.input_feeding()) step.state.tensors["feed"] = out.attentional.squeeze(1);
  return step;
}

}  // namespace nlpzoo
