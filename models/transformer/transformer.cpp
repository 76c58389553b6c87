#include "models/transformer/transformer.h"

#include <cmath>
#include <string>

#include "models/linear.h"

namespace nlpzoo {

namespace {
torch::nn::Embedding make_embedding(int64_t vocab, int64_t d_model, int64_t pad_id) {
  torch::nn::Embedding e(torch::nn::EmbeddingOptions(vocab, d_model).padding_idx(pad_id));
  // N(0, d^-1/2): after the √d_model scale the inputs have unit variance, and as the tied
  // output projection the initial logits stay O(1) (LibTorch's N(0, 1) would give √d).
  torch::NoGradGuard ng;
  e->weight.normal_(0.0, 1.0 / std::sqrt(static_cast<double>(d_model)));
  e->weight[pad_id].zero_();
  return e;
}

std::string layer_key(const char* kind, size_t l) { return std::string(kind) + "_" + std::to_string(l); }
}  // namespace

namespace {
void check_attention_head(int64_t head, int64_t num_heads) {
  TORCH_CHECK(head >= -1 && head < num_heads, "attention_head must be -1 (mean) or in [0, ", num_heads, "), got ", head);
}
}  // namespace

void TransformerSeq2SeqImpl::set_attention_head(int64_t head) {
  check_attention_head(head, options_.num_heads());
  options_.attention_head(head);
}

TransformerSeq2SeqImpl::TransformerSeq2SeqImpl(const TransformerOptions& o) : options_(o) {
  TORCH_CHECK(o.d_model() % o.num_heads() == 0, "d_model (", o.d_model(), ") must be a multiple of num_heads (",
              o.num_heads(), ")");
  TORCH_CHECK(!o.share_embeddings() || o.src_vocab_size() == o.tgt_vocab_size(),
              "share_embeddings needs one vocabulary, got src_vocab_size ", o.src_vocab_size(),
              " and tgt_vocab_size ", o.tgt_vocab_size());
  check_attention_head(o.attention_head(), o.num_heads());
  TORCH_CHECK(o.max_positions() >= 1, "max_positions must be >= 1, got ", o.max_positions());
  tgt_embed = register_module("tgt_embed", make_embedding(o.tgt_vocab_size(), o.d_model(), o.pad_id()));
  // Registered once when shared, so the optimiser sees the table once.
  src_embed = o.share_embeddings()
                  ? tgt_embed
                  : register_module("src_embed", make_embedding(o.src_vocab_size(), o.d_model(), o.pad_id()));
  switch (o.positions()) {
    case PositionType::kSinusoidal:
      sinusoidal = register_module("sinusoidal", SinusoidalPositionalEncoding(o.d_model(), o.max_positions()));
      break;
    case PositionType::kLearned:
      src_positions = register_module("src_positions", LearnedPositionalEmbedding(o.max_positions(), o.d_model()));
      tgt_positions = register_module("tgt_positions", LearnedPositionalEmbedding(o.max_positions(), o.d_model()));
      break;
    case PositionType::kRelative: break;
  }
  auto layer = TransformerLayerOptions(o.d_model(), o.num_heads(), o.ffn_dim())
                   .dropout(o.dropout())
                   .attention_dropout(o.attention_dropout())
                   .activation(o.activation())
                   .pre_norm(o.pre_norm())
                   .relative_k(o.positions() == PositionType::kRelative ? o.relative_k() : 0);
  encoder = register_module("encoder", TransformerEncoder(layer, o.num_encoder_layers()));
  decoder = register_module("decoder", TransformerDecoder(layer, o.num_decoder_layers()));
  dropout = register_module("dropout", torch::nn::Dropout(o.dropout()));
}

torch::Tensor TransformerSeq2SeqImpl::embed(torch::nn::Embedding& table, LearnedPositionalEmbedding& learned,
                                            const torch::Tensor& x, int64_t offset) {
  auto e = table(x) * std::sqrt(static_cast<double>(options_.d_model()));  // [B, T, D]
  const int64_t T = x.size(1);
  if (sinusoidal) e = e + sinusoidal(T, offset);
  else if (learned) e = e + learned(T, offset);
  return dropout(e);
}

torch::Tensor TransformerSeq2SeqImpl::project(const torch::Tensor& h) {
  return nlpzoo::linear(h, tgt_embed->weight);
}

TransformerEncoding TransformerSeq2SeqImpl::encode(const torch::Tensor& src) {
  TORCH_CHECK(src.dim() == 2, "src must be [B, S] int64, got ", src.sizes());
  TransformerEncoding enc;
  enc.mask = src.ne(options_.pad_id());
  enc.memory = encoder(embed(src_embed, src_positions, src, 0), enc.mask.unsqueeze(1));
  return enc;
}

TransformerDecoding TransformerSeq2SeqImpl::decode(const torch::Tensor& tgt_in, const TransformerEncoding& enc,
                                                   bool need_attention) {
  TORCH_CHECK(tgt_in.dim() == 2, "tgt_in must be [B, T] int64, got ", tgt_in.sizes());
  // Target padding needs no mask: it only ever sits after the real tokens, which the causal
  // mask already hides from them, and the loss ignores the padded positions' outputs.
  auto out = decoder(embed(tgt_embed, tgt_positions, tgt_in, 0), enc.memory, enc.mask.unsqueeze(1), need_attention);
  TransformerDecoding dec;
  dec.logits = project(out.output);
  dec.attention = out.cross_weights;
  return dec;
}

torch::Tensor TransformerSeq2SeqImpl::forward(const torch::Tensor& src, const torch::Tensor& tgt_in) {
  return decode(tgt_in, encode(src)).logits;
}

DecoderState TransformerSeq2SeqImpl::init(const torch::Tensor& src) {
  auto enc = encode(src);
  const int64_t N = src.size(0), H = options_.num_heads(), d_k = options_.d_model() / H;
  DecoderState st;
  st.tensors["src_mask"] = enc.mask;
  st.per_sentence.insert("src_mask");
  auto memory = decoder->project_memory(enc.memory);
  auto empty = torch::empty({N, H, 0, d_k}, enc.memory.options());
  for (size_t l = 0; l < memory.size(); ++l) {
    st.tensors[layer_key("k_cross", l)] = memory[l].k;
    st.tensors[layer_key("v_cross", l)] = memory[l].v;
    st.per_sentence.insert({layer_key("k_cross", l), layer_key("v_cross", l)});
    st.tensors[layer_key("k_self", l)] = empty;
    st.tensors[layer_key("v_self", l)] = empty;
  }
  return st;
}

DecoderStep TransformerSeq2SeqImpl::step(const DecoderState& state, const torch::Tensor& prev_tokens) {
  TORCH_CHECK(prev_tokens.dim() == 1, "prev_tokens must be [N] int64, got ", prev_tokens.sizes());
  const auto& t = state.tensors;
  const size_t L = decoder->typed_layers.size();
  std::vector<KeyValue> self(L), memory(L);
  for (size_t l = 0; l < L; ++l) {
    self[l] = {t.at(layer_key("k_self", l)), t.at(layer_key("v_self", l))};
    memory[l] = {t.at(layer_key("k_cross", l)), t.at(layer_key("v_cross", l))};
  }
  const auto& src_mask = t.at("src_mask");
  const int64_t offset = self[0].length();
  auto x = embed(tgt_embed, tgt_positions, prev_tokens.unsqueeze(1), offset);  // [N, 1, D]
  auto out = decoder->step(x, self, memory, src_mask.unsqueeze(1), /*need_weights=*/true);
  DecoderStep step;
  step.log_probs = torch::log_softmax(project(out.output).squeeze(1), -1);  // [N, V]
  auto w = out.cross_weights.squeeze(2);                                     // [N, H, S]
  step.attention = options_.attention_head() < 0 ? w.mean(1) : w.select(1, options_.attention_head());
  step.state = state;
  for (size_t l = 0; l < L; ++l) {
    step.state.tensors[layer_key("k_self", l)] = self[l].k;
    step.state.tensors[layer_key("v_self", l)] = self[l].v;
  }
  return step;
}

}  // namespace nlpzoo
