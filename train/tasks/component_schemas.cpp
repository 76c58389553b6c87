#include "train/tasks/component_schemas.h"

#include "core/io.h"

namespace nlpzoo {

namespace {
// Both components declare it; a task with both (translation) gets one key.
const char* kDropoutHelp = "dropout on embeddings, between layers and before the output layer";
}  // namespace

ConfigSchema rnn_schema() {
  ConfigSchema s;
  s.add("cell", "lstm", "recurrent cell: rnn (tanh), gru or lstm", {"rnn", "gru", "lstm"})
      .add("embed_dim", "256", "token embedding size")
      .add("hidden_size", "256", "recurrent state size of each layer")
      .add("num_layers", "1", "stacked recurrent layers")
      .add("dropout", "0.1", kDropoutHelp);
  return s;
}

RnnConfig rnn_config(const Config& c) {
  RnnConfig r;
  r.cell = parse_cell_type(c.get("cell"));
  r.embed_dim = config_int_at_least(c, "embed_dim");
  r.hidden_size = config_int_at_least(c, "hidden_size");
  r.num_layers = config_int_at_least(c, "num_layers");
  r.dropout = config_rate(c, "dropout");
  return r;
}

ConfigSchema transformer_schema() {
  ConfigSchema s;
  s.add("d_model", "256", "transformer: model width (embeddings, attention, residual stream)")
      .add("num_heads", "4", "transformer: attention heads (d_k = d_model / num_heads)")
      .add("ffn_dim", "1024", "transformer: inner size of the position-wise feed-forward layer")
      .add("activation", "relu", "transformer: feed-forward activation", {"relu", "gelu"})
      .add("pre_norm", "false", "transformer: LayerNorm before each sub-layer (pre-LN) instead of after (post-LN, the paper)")
      .add("positions", "sinusoidal", "transformer: position information", {"sinusoidal", "learned", "relative"})
      .add("relative_k", "16", "transformer: clipping distance of relative positions (Shaw et al. 2018)")
      .add("attention_dropout", "0", "transformer: dropout on attention weights")
      .add("dropout", "0.1", kDropoutHelp);
  return s;
}

TransformerConfig transformer_config(const Config& c) {
  TransformerConfig t;
  const int64_t d_model = config_int_at_least(c, "d_model");
  const int64_t num_heads = config_int_at_least(c, "num_heads");
  if (d_model % num_heads != 0)
    throw UserError("config key 'num_heads': must divide d_model (" + std::to_string(d_model) + "), got " +
                    std::to_string(num_heads));
  t.positions = parse_position_type(c.get("positions"));
  t.relative_k = config_int_at_least(c, "relative_k");
  t.layer = TransformerLayerOptions(d_model, num_heads, config_int_at_least(c, "ffn_dim"))
                .dropout(config_rate(c, "dropout"))
                .attention_dropout(config_rate(c, "attention_dropout"))
                .activation(parse_activation(c.get("activation")))
                .pre_norm(c.get_bool("pre_norm"))
                .relative_k(t.positions == PositionType::kRelative ? t.relative_k : 0);
  return t;
}

}  // namespace nlpzoo
