#pragma once
// The config keys of the model components that several tasks build, declared once with their
// checks: a recurrent network (translation's attention RNN, the language model, the RNN
// classifier) and a Transformer stack (translation; the BERT encoder next). A task merges a
// component's schema into its own (ConfigSchema::merge), may give a key its own default
// (ConfigSchema::set_default), and reads the keys back through the component's reader, so
// every task checks them the same way. The tokenizer's keys are in run_tokenizer.h.
#include "models/rnn/recurrent.h"
#include "models/transformer/layers.h"
#include "models/transformer/positional.h"
#include "core/config.h"

namespace nlpzoo {

/// cell, embed_dim, hidden_size, num_layers and dropout.
ConfigSchema rnn_schema();

struct RnnConfig {
  CellType cell = CellType::kLstm;
  int64_t embed_dim = 0;    // token embedding size
  int64_t hidden_size = 0;  // recurrent state size (the task says per what)
  int64_t num_layers = 0;   // stacked recurrent layers
  double dropout = 0;       // in [0, 1)
};
/// The rnn_schema keys of a resolved config. Throws UserError naming the key when embed_dim,
/// hidden_size or num_layers is not positive or dropout is not in [0, 1).
RnnConfig rnn_config(const Config& config);

/// The keys of a Transformer stack (Vaswani et al. 2017): d_model, num_heads, ffn_dim,
/// activation, pre_norm, positions, relative_k, attention_dropout and dropout. The number of
/// layers is the task's (an encoder-decoder has two stacks).
ConfigSchema transformer_schema();

struct TransformerConfig {
  TransformerLayerOptions layer{1, 1, 1};  // relative_k = relative_k with relative positions, else 0
  PositionType positions = PositionType::kSinusoidal;
  int64_t relative_k = 0;  // Shaw et al.'s clipping distance k as configured (>= 1 even when unused)
};
/// The transformer_schema keys of a resolved config. Throws UserError naming the key when
/// d_model, num_heads, ffn_dim or relative_k is not positive, num_heads does not divide
/// d_model, or dropout or attention_dropout is not in [0, 1).
TransformerConfig transformer_config(const Config& config);

}  // namespace nlpzoo
