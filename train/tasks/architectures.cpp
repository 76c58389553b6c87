#include "train/tasks/architectures.h"

#include "core/io.h"
#include "core/options.h"
#include "datasets/special_ids.h"
#include "infer/export_bert.h"
#include "infer/export_classifier.h"
#include "infer/export_seq2seq.h"
#include "infer/export_transformer.h"
#include "models/bert/bert.h"
#include "models/classifier/average_embedding.h"
#include "models/classifier/rnn_classifier.h"
#include "models/seq2seq/seq2seq.h"
#include "models/transformer/transformer.h"
#include "train/tasks/component_schemas.h"
#include "train/tasks/masked_lm_data.h"  // BertKeys, parameters_without_weight_decay

namespace nlpzoo {

void TextClassifierKeys::bind(OptionBinder& b) {
  rnn.bind(b);
  b.field("bidirectional", bidirectional, "rnn: read the sentence in both directions");
  b.field("pooling", pooling, "rnn: sentence vector = final states (last), or max or mean over positions",
          kPoolingNames);
}

void RnnSeq2SeqKeys::bind(OptionBinder& b) {
  rnn.bind(b);
  b.field("bidirectional", bidirectional, "bidirectional encoder");
  b.field("attention", attention,
          "score(s, h): additive v^T tanh(W_s s + W_h h) (Bahdanau), dot s^T h, general s^T W h (Luong), none "
          "(fixed context)",
          kAttentionNames);
  b.field("attention_dim", attention_dim, "inner size of additive attention", positive());
  b.field("input_feeding", input_feeding, "feed the previous attentional state into the decoder input (Luong)");
  b.field("param_init", param_init,
          "rnn: every parameter starts uniform in [-param_init, param_init] (OpenNMT-py's param_init; Luong et al. "
          "2015: 0.1); 0 keeps LibTorch's per-layer defaults",
          finite_at_least(0));
  if (bidirectional && rnn.hidden_size % 2 != 0)
    throw UserError("config key 'hidden_size': must be even with a bidirectional encoder (got " +
                    std::to_string(rnn.hidden_size) + ")");
}

void SharedEmbeddingsKey::bind(OptionBinder& b) {
  b.field("share_embeddings", share_embeddings,
          "transformer: one joint SentencePiece model over both languages (spm.joint.model, tgt_vocab_size pieces) "
          "and one embedding matrix for source, target and output");
}

void TransformerSeq2SeqKeys::bind(OptionBinder& b) {
  stack.bind(b);
  b.field("num_encoder_layers", num_encoder_layers, "transformer: encoder layers", positive());
  b.field("num_decoder_layers", num_decoder_layers, "transformer: decoder layers", positive());
  shared.bind(b);
}

namespace {

template <typename Architecture>
const Architecture& find_architecture(const std::vector<Architecture>& archs, const std::string& name,
                                      const std::string& what) {
  std::string known;
  for (const auto& a : archs) {
    if (a.name == name) return a;
    known += (known.empty() ? "" : ", ") + a.name;
  }
  throw UserError("unknown " + what + " architecture '" + name + "' (known: " + known + ")");
}

// ---- avg_emb, rnn: word embeddings -> (recurrent encoder, pooling) -> linear ----

class TextClassifierModel : public ClassifierModel {
 public:
  explicit TextClassifierModel(std::shared_ptr<TextClassifierImpl> model) : model_(std::move(model)) {}
  std::shared_ptr<torch::nn::Module> module() override { return model_; }
  torch::Tensor logits(const torch::Tensor& tokens, const torch::Tensor& /*segments*/) override {
    return model_->forward(tokens);
  }
  void export_twin(const std::string& path, const std::vector<std::string>& labels,
                   const std::map<std::string, std::string>& extra) override {
    export_text_classifier(path, *model_, labels, extra);
  }
  torch::Tensor word_embeddings() override { return model_->embedding->weight; }

 private:
  std::shared_ptr<TextClassifierImpl> model_;
};

template <typename Classifier>
ClassifierArchitecture text_classifier(const std::string& name) {
  ClassifierArchitecture a;
  a.name = name;
  a.schema = [] { return schema_of<TextClassifierKeys>(); };
  a.check = [](const Config& config, bool /*pair*/) { bind_options<TextClassifierKeys>(config); };
  a.build = [](const Config& config, const ClassifierSizes& sizes) -> std::unique_ptr<ClassifierModel> {
    const auto keys = bind_options<TextClassifierKeys>(config);
    ClassifierOptions o(sizes.vocab_size, sizes.outputs);
    o.embed_dim(keys.rnn.embed_dim)
        .pad_id(kPadId)
        .dropout(keys.rnn.dropout)
        .freeze_embeddings(sizes.freeze_embeddings)
        .cell(keys.rnn.cell)
        .hidden_size(keys.rnn.hidden_size)
        .num_layers(keys.rnn.num_layers)
        .bidirectional(keys.bidirectional)
        .pooling(keys.pooling);
    if constexpr (std::is_same_v<Classifier, RnnClassifier>) {
      return std::make_unique<TextClassifierModel>(Classifier(o, sizes.elmo).ptr());
    } else {
      return std::make_unique<TextClassifierModel>(Classifier(o).ptr());
    }
  };
  a.elmo_features = std::is_same_v<Classifier, RnnClassifier>;
  return a;
}

// ---- bert: BERT encoder -> pooled [CLS] -> linear ----

class BertClassifierModel : public ClassifierModel {
 public:
  explicit BertClassifierModel(BertForSequenceClassification model) : model_(std::move(model)) {}
  std::shared_ptr<torch::nn::Module> module() override { return model_.ptr(); }
  torch::Tensor logits(const torch::Tensor& tokens, const torch::Tensor& segments) override {
    return model_(tokens, segments);
  }
  void export_twin(const std::string& path, const std::vector<std::string>& labels,
                   const std::map<std::string, std::string>& extra) override {
    export_bert_classifier(path, *model_->bert, *model_->head, labels, extra);
  }
  void describe(Task::TrainingProfile& p) const override {
    // BERT's fine-tuning optimizer as its pre-training's: AdamW without decay on biases and LayerNorm weights.
    p.d_model = model_->bert->options().d_model();
    p.no_weight_decay = parameters_without_weight_decay(*model_);
  }

 private:
  BertForSequenceClassification model_;
};

ClassifierArchitecture bert_classifier() {
  ClassifierArchitecture a;
  a.name = "bert";
  a.layout = InputLayout::kBert;
  a.word_vectors = false;
  a.pretrained_encoder = true;
  a.schema = [] { return schema_of<BertKeys>(); };
  a.check = [](const Config& config, bool pair) {
    const auto keys = bind_options<BertKeys>(config);
    if (pair && keys.type_vocab_size < 2)
      throw UserError("config key 'type_vocab_size': a pair (text_b_column) needs 2 segments, got " +
                      std::to_string(keys.type_vocab_size));
  };
  a.build = [](const Config& config, const ClassifierSizes& sizes) -> std::unique_ptr<ClassifierModel> {
    return std::make_unique<BertClassifierModel>(
        BertForSequenceClassification(bind_options<BertKeys>(config).options(sizes.vocab_size), sizes.outputs));
  };
  return a;
}

// ---- rnn: the attention encoder-decoder (models/seq2seq) ----

class RnnSeq2SeqModel : public Seq2SeqModel {
 public:
  explicit RnnSeq2SeqModel(Seq2Seq model) : model_(std::move(model)) {}
  std::shared_ptr<torch::nn::Module> module() override { return model_.ptr(); }
  IncrementalDecoder& decoder() override { return *model_; }
  torch::Tensor forward(const torch::Tensor& src, const torch::Tensor& tgt_in) override {
    return model_->forward(src, tgt_in);
  }
  void export_twin(const std::string& path, const std::map<std::string, std::string>& extra) override {
    export_seq2seq(path, *model_, extra);
  }

 private:
  Seq2Seq model_;
};

Seq2SeqArchitecture rnn_seq2seq() {
  Seq2SeqArchitecture a;
  a.name = "rnn";
  a.schema = [] { return schema_of<RnnSeq2SeqKeys>(); };
  a.check = [](const Config& config) {
    bind_options<RnnSeq2SeqKeys>(config);
    if (bind_options<SharedEmbeddingsKey>(config).share_embeddings)
      throw UserError("config key 'share_embeddings': only arch = transformer shares embeddings");
    return false;
  };
  a.build = [](const Config& config, const Seq2SeqSizes& sizes) -> std::unique_ptr<Seq2SeqModel> {
    const auto keys = bind_options<RnnSeq2SeqKeys>(config);
    Seq2SeqOptions o;
    o.src_vocab_size(sizes.src_vocab_size)
        .tgt_vocab_size(sizes.tgt_vocab_size)
        .embed_dim(keys.rnn.embed_dim)
        .cell(keys.rnn.cell)
        .hidden_size(keys.rnn.hidden_size)
        .num_layers(keys.rnn.num_layers)
        .bidirectional(keys.bidirectional)
        .attention(keys.attention)
        .attention_dim(keys.attention_dim)
        .input_feeding(keys.input_feeding)
        .pad_id(kPadId)
        .dropout(keys.rnn.dropout);
    Seq2Seq model(o);
    if (keys.param_init > 0) model->init_uniform(keys.param_init);
    return std::make_unique<RnnSeq2SeqModel>(model);
  };
  return a;
}

// ---- transformer: Vaswani et al. 2017 (models/transformer) ----

class TransformerSeq2SeqModel : public Seq2SeqModel {
 public:
  explicit TransformerSeq2SeqModel(TransformerSeq2Seq model) : model_(std::move(model)) {}
  std::shared_ptr<torch::nn::Module> module() override { return model_.ptr(); }
  IncrementalDecoder& decoder() override { return *model_; }
  torch::Tensor forward(const torch::Tensor& src, const torch::Tensor& tgt_in) override {
    return model_->forward(src, tgt_in);
  }
  void export_twin(const std::string& path, const std::map<std::string, std::string>& extra) override {
    export_transformer(path, *model_, extra);
  }
  bool bounded_positions() const override { return model_->options().positions() == PositionType::kLearned; }
  int64_t attention_heads() const override { return model_->options().num_heads(); }
  void set_attention_head(int64_t head) override { model_->set_attention_head(head); }
  int64_t d_model() const override { return model_->options().d_model(); }

 private:
  TransformerSeq2Seq model_;
};

Seq2SeqArchitecture transformer_seq2seq() {
  Seq2SeqArchitecture a;
  a.name = "transformer";
  a.schema = [] { return schema_of<TransformerSeq2SeqKeys>(); };
  a.check = [](const Config& config) { return bind_options<TransformerSeq2SeqKeys>(config).shared.share_embeddings; };
  a.build = [](const Config& config, const Seq2SeqSizes& sizes) -> std::unique_ptr<Seq2SeqModel> {
    const auto keys = bind_options<TransformerSeq2SeqKeys>(config);
    const auto& t = keys.stack;
    TransformerOptions o;
    o.src_vocab_size(sizes.src_vocab_size)
        .tgt_vocab_size(sizes.tgt_vocab_size)
        .d_model(t.d_model)
        .num_heads(t.num_heads)
        .num_encoder_layers(keys.num_encoder_layers)
        .num_decoder_layers(keys.num_decoder_layers)
        .ffn_dim(t.ffn_dim)
        .dropout(t.dropout)
        .attention_dropout(t.attention_dropout)
        .activation(t.activation)
        .pre_norm(t.pre_norm)
        .positions(t.positions)
        // Learned positions must cover the longest output search may produce (1.5 S + 10).
        .max_positions(std::max<int64_t>(256, 2 * sizes.max_positions + 16))
        .relative_k(t.relative_k)
        .share_embeddings(keys.shared.share_embeddings)
        .pad_id(kPadId);
    return std::make_unique<TransformerSeq2SeqModel>(TransformerSeq2Seq(o));
  };
  return a;
}

}  // namespace

const std::vector<ClassifierArchitecture>& classifier_architectures() {
  static const std::vector<ClassifierArchitecture> archs = {
      text_classifier<AverageEmbeddingClassifier>("avg_emb"), text_classifier<RnnClassifier>("rnn"), bert_classifier()};
  return archs;
}

const ClassifierArchitecture& classifier_architecture(const std::string& name) {
  return find_architecture(classifier_architectures(), name, "classifier");
}

const std::vector<Seq2SeqArchitecture>& seq2seq_architectures() {
  static const std::vector<Seq2SeqArchitecture> archs = {rnn_seq2seq(), transformer_seq2seq()};
  return archs;
}

const Seq2SeqArchitecture& seq2seq_architecture(const std::string& name) {
  return find_architecture(seq2seq_architectures(), name, "encoder-decoder");
}

}  // namespace nlpzoo
