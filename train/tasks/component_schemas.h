#pragma once
// The options of the model components that several tasks build, each field declared once
// (core/options.h): a recurrent network (translation's attention RNN, the language model, the
// RNN classifier) and a Transformer stack (translation, the BERT encoder). A task merges a
// component's schema into its own (ConfigSchema::merge), may give a key its own default
// (ConfigSchema::set_default), and reads the keys back through the component's struct, so
// every task checks them the same way. The tokenizer's keys are in run_tokenizer.h.
#include <cstdint>

#include "core/config.h"
#include "core/options.h"
#include "models/rnn/recurrent.h"
#include "models/transformer/layers.h"
#include "models/transformer/positional.h"

namespace nlpzoo {

/// cell, embed_dim, hidden_size, num_layers and dropout.
struct RnnOptions {
  CellType cell = CellType::kLstm;
  int64_t embed_dim = 256;    // token embedding size
  int64_t hidden_size = 256;  // recurrent state size (the task says per what)
  int64_t num_layers = 1;     // stacked recurrent layers
  double dropout = 0.1;       // in [0, 1)
  void bind(OptionBinder& b);
};

ConfigSchema rnn_schema();
/// The rnn_schema keys of a resolved config. Throws UserError naming the key when embed_dim,
/// hidden_size or num_layers is not positive or dropout is not in [0, 1).
RnnOptions rnn_config(const Config& config);

/// The keys of a Transformer stack (Vaswani et al. 2017): d_model, num_heads, ffn_dim,
/// activation, pre_norm, positions, relative_k, attention_dropout and dropout. The number of
/// layers is the task's (an encoder-decoder has two stacks).
struct TransformerStackOptions {
  int64_t d_model = 256;    // width of embeddings, attention and the residual stream
  int64_t num_heads = 4;    // d_k = d_model / num_heads
  int64_t ffn_dim = 1024;   // inner size of the position-wise feed-forward layer
  Activation activation = Activation::kRelu;
  bool pre_norm = false;
  PositionType positions = PositionType::kSinusoidal;
  int64_t relative_k = 16;  // Shaw et al.'s clipping distance k as configured (>= 1 even when unused)
  double attention_dropout = 0;
  double dropout = 0.1;
  /// Also checks that num_heads divides d_model (after the fields, so each is checked alone first).
  void bind(OptionBinder& b);
  /// One layer's options; relative_k = relative_k with relative positions, else 0.
  TransformerLayerOptions layer() const;
};

ConfigSchema transformer_schema();
/// The transformer_schema keys of a resolved config. Throws UserError naming the key when
/// d_model, num_heads, ffn_dim or relative_k is not positive, num_heads does not divide
/// d_model, or dropout or attention_dropout is not in [0, 1).
TransformerStackOptions transformer_config(const Config& config);

/// The trainer's keys a task needs too (the seed of its batch order and masks, the corpus
/// folder), read through the binder but declared in the trainer's schema, not the task's.
struct RunKeys {
  int64_t seed = 0;
  std::string data_dir;
  void bind(OptionBinder& b);
};
/// The RunKeys of a resolved config (a task schema includes the trainer's keys).
RunKeys run_keys(const Config& config);

}  // namespace nlpzoo
