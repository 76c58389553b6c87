#pragma once
// The architectures a task can hold, registered once each: a name, the options it reads (a
// struct with bind(), core/options.h), how to build it from a resolved config and the sizes
// the task learns from its data, and its export (the scripted twin, infer/). A task keeps the
// built model behind the interface of its kind and never asks which architecture it is:
//   ClassifierModel  sentence (pair) classifiers: avg_emb, rnn, bert
//   Seq2SeqModel     encoder-decoders, searched through IncrementalDecoder: rnn, transformer
// Generative language models are read through CausalDecoder (models/causal_decoder.h).
#include <torch/torch.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/options.h"
#include "models/classifier/pooling.h"
#include "models/incremental_decoder.h"
#include "models/rnn/bilm.h"
#include "models/seq2seq/attention.h"
#include "train/task.h"
#include "train/tasks/component_schemas.h"

namespace nlpzoo {

// ---- sentence classifiers ----------------------------------------------------------------

/// How a classifier's input is laid out (the task encodes it so).
enum class InputLayout {
  kPlain,  // A, or A <eos> B
  kBert,   // [CLS] A [SEP] or [CLS] A [SEP] B [SEP], with segment ids (pair_segments)
};

class ClassifierModel {
 public:
  virtual ~ClassifierModel() = default;
  virtual std::shared_ptr<torch::nn::Module> module() = 0;
  /// tokens: [B, T] int64 (kPadId padding); segments: [B, T] int64 (InputLayout::kBert) or
  /// undefined. Returns [B, C] float logits (C = 1: a regression score).
  virtual torch::Tensor logits(const torch::Tensor& tokens, const torch::Tensor& segments) = 0;
  /// Saves the scripted twin to `path` with `extra` files; `labels` empty for regression.
  virtual void export_twin(const std::string& path, const std::vector<std::string>& labels,
                           const std::map<std::string, std::string>& extra) = 0;
  /// The embedding matrix pretrained word vectors initialise ([V, E]); undefined if none.
  virtual torch::Tensor word_embeddings() { return {}; }
  /// What the optimizer needs to know (d_model for noam, parameters without weight decay).
  virtual void describe(Task::TrainingProfile& /*profile*/) const {}
};

struct ClassifierSizes {
  int64_t vocab_size = 0;  // the tokenizer's
  int64_t outputs = 0;     // classes, or 1 for regression
  bool freeze_embeddings = false;  // the task's choice, for a word-embedding model
  std::optional<BiLanguageModelOptions> elmo;  // a frozen biLM whose features join the embeddings
};

/// The keys of avg_emb and rnn (avg_emb reads embed_dim and dropout of them).
struct TextClassifierKeys {
  RnnOptions rnn;
  bool bidirectional = true;
  Pooling pooling = Pooling::kLast;
  void bind(OptionBinder& b);
};

struct ClassifierArchitecture {
  std::string name;
  InputLayout layout = InputLayout::kPlain;
  /// Whether pretrained_vectors and freeze_embeddings apply (a word-embedding model).
  bool word_vectors = true;
  /// Whether init_from loads a pre-trained masked_lm encoder into it.
  bool pretrained_encoder = false;
  /// Whether it reads ELMo features (the task's elmo key).
  bool elmo_features = false;
  /// The keys it reads, with its own defaults (a task sets its own with set_default).
  std::function<ConfigSchema()> schema;
  /// Checks the keys it reads, before any slow work (`pair`: sentence pairs). Throws UserError
  /// naming the key.
  std::function<void(const Config& config, bool pair)> check;
  std::function<std::unique_ptr<ClassifierModel>(const Config& config, const ClassifierSizes& sizes)> build;
};

/// The registered classifiers, in registration order (the `arch` key's choices).
const std::vector<ClassifierArchitecture>& classifier_architectures();
/// Throws UserError listing the known names when `name` is unknown.
const ClassifierArchitecture& classifier_architecture(const std::string& name);

// ---- encoder-decoders --------------------------------------------------------------------

class Seq2SeqModel {
 public:
  virtual ~Seq2SeqModel() = default;
  virtual std::shared_ptr<torch::nn::Module> module() = 0;
  /// The model as search sees it.
  virtual IncrementalDecoder& decoder() = 0;
  /// Teacher forcing. src: [B, S], tgt_in: [B, T] int64 -> [B, T, V] float logits.
  virtual torch::Tensor forward(const torch::Tensor& src, const torch::Tensor& tgt_in) = 0;
  virtual void export_twin(const std::string& path, const std::map<std::string, std::string>& extra) = 0;
  /// Whether positions past the configured max_positions were never trained (learned positions).
  virtual bool bounded_positions() const { return false; }
  /// Heads of the cross-attention that can be shown one at a time (0: a single attention).
  virtual int64_t attention_heads() const { return 0; }
  /// Reports head `head` (or the mean, -1); the caller has checked the range.
  virtual void set_attention_head(int64_t /*head*/) {}
  /// The model width the noam schedule scales by (0: none).
  virtual int64_t d_model() const { return 0; }
};

/// The keys of the attention RNN. Also checks that hidden_size is even with a bidirectional encoder.
struct RnnSeq2SeqKeys {
  RnnOptions rnn;
  bool bidirectional = true;
  AttentionType attention = AttentionType::kAdditive;
  int64_t attention_dim = 512;
  bool input_feeding = false;
  double param_init = 0;  // uniform init in [-param_init, param_init]; 0 = LibTorch's defaults
  void bind(OptionBinder& b);
};

struct SharedEmbeddingsKey {
  bool share_embeddings = false;  // one joint vocabulary and embedding matrix (Press & Wolf 2017)
  void bind(OptionBinder& b);
};

/// The keys of the Transformer encoder-decoder.
struct TransformerSeq2SeqKeys {
  TransformerStackOptions stack;
  int64_t num_encoder_layers = 3;
  int64_t num_decoder_layers = 3;
  SharedEmbeddingsKey shared;
  void bind(OptionBinder& b);
};

struct Seq2SeqSizes {
  int64_t src_vocab_size = 0, tgt_vocab_size = 0;  // the tokenizers'
  int64_t max_positions = 0;                       // the task's longest sequence
};

struct Seq2SeqArchitecture {
  std::string name;
  /// The keys it reads, with its own defaults (a task sets its own with set_default).
  std::function<ConfigSchema()> schema;
  /// Checks the keys it reads, before any slow work; returns whether source and target share
  /// one vocabulary (one joint tokenizer). Throws UserError naming the key.
  std::function<bool(const Config& config)> check;
  std::function<std::unique_ptr<Seq2SeqModel>(const Config& config, const Seq2SeqSizes& sizes)> build;
};

const std::vector<Seq2SeqArchitecture>& seq2seq_architectures();
/// Throws UserError listing the known names when `name` is unknown.
const Seq2SeqArchitecture& seq2seq_architecture(const std::string& name);

/// Adds the keys of every architecture in `archs` that `schema` does not declare yet (the
/// first declaration of a shared key keeps its default; the task sets its own after).
template <typename Architecture>
void add_architecture_keys(ConfigSchema& schema, const std::vector<Architecture>& archs) {
  for (const auto& a : archs) {
    const ConfigSchema own = a.schema();
    for (const auto& k : own.keys())
      if (schema.find(k.key) == nullptr) schema.add(k.key, k.default_value, k.help, k.choices);
  }
}

/// The names of `archs`, in order (a config key's choices).
template <typename Architecture>
std::vector<std::string> architecture_names(const std::vector<Architecture>& archs) {
  std::vector<std::string> names;
  for (const auto& a : archs) names.push_back(a.name);
  return names;
}

}  // namespace nlpzoo
