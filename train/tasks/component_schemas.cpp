#include "train/tasks/component_schemas.h"

#include "core/io.h"

namespace nlpzoo {

namespace {
// Both components declare it; a task with both (translation) gets one key.
const char* kDropoutHelp = "dropout on embeddings, between layers and before the output layer";
}  // namespace

void RnnOptions::bind(OptionBinder& b) {
  b.field("cell", cell, "recurrent cell: rnn (tanh), gru or lstm", kCellNames);
  b.field("embed_dim", embed_dim, "token embedding size", positive());
  b.field("hidden_size", hidden_size, "recurrent state size of each layer", positive());
  b.field("num_layers", num_layers, "stacked recurrent layers", positive());
  b.field("dropout", dropout, kDropoutHelp, rate());
}

ConfigSchema rnn_schema() { return schema_of<RnnOptions>(); }

RnnOptions rnn_config(const Config& c) { return bind_options<RnnOptions>(c); }

void TransformerStackOptions::bind(OptionBinder& b) {
  b.field("d_model", d_model, "transformer: model width (embeddings, attention, residual stream)", positive());
  b.field("num_heads", num_heads, "transformer: attention heads (d_k = d_model / num_heads)", positive());
  b.field("ffn_dim", ffn_dim, "transformer: inner size of the position-wise feed-forward layer", positive());
  b.field("activation", activation, "transformer: feed-forward activation", kActivationNames);
  b.field("pre_norm", pre_norm,
          "transformer: LayerNorm before each sub-layer (pre-LN) instead of after (post-LN, the paper)");
  b.field("positions", positions, "transformer: position information", kPositionNames);
  b.field("relative_k", relative_k, "transformer: clipping distance of relative positions (Shaw et al. 2018)",
          positive());
  b.field("attention_dropout", attention_dropout, "transformer: dropout on attention weights", rate());
  b.field("dropout", dropout, kDropoutHelp, rate());
  if (d_model % num_heads != 0)
    throw UserError("config key 'num_heads': must divide d_model (" + std::to_string(d_model) + "), got " +
                    std::to_string(num_heads));
}

TransformerLayerOptions TransformerStackOptions::layer() const {
  return TransformerLayerOptions(d_model, num_heads, ffn_dim)
      .dropout(dropout)
      .attention_dropout(attention_dropout)
      .activation(activation)
      .pre_norm(pre_norm)
      .relative_k(positions == PositionType::kRelative ? relative_k : 0);
}

ConfigSchema transformer_schema() { return schema_of<TransformerStackOptions>(); }

TransformerStackOptions transformer_config(const Config& c) { return bind_options<TransformerStackOptions>(c); }

void RunKeys::bind(OptionBinder& b) {
  b.field("seed", seed, "seed of parameter init, dropout and batch order");
  b.field("data_dir", data_dir, "corpus folder (the task says which files it reads there)");
}

RunKeys run_keys(const Config& config) { return bind_options<RunKeys>(config); }

}  // namespace nlpzoo
