#pragma once
// ClassificationTask: sentence (or sentence-pair) classification and regression (SST-2
// sentiment, CoLA acceptability, RTE entailment, STS-B similarity and the like) with the
// average-of-embeddings baseline or a (bi)RNN / GRU / LSTM classifier (models/classifier).
//
// Data: <data_dir>/train.tsv, dev.tsv (the valid split) and optionally test.tsv, GLUE's files
// as they ship; the config keys tsv_columns, text_column, text_b_column, label_column and
// tsv_header name the layout (datasets/labeled_text.h: a 0-based field index or the header's
// column name), e.g. RTE: text_column = sentence1, text_b_column = sentence2, label_column =
// label; CoLA: tsv_columns = 4, text_column = 3, label_column = 1, tsv_header = false.
// Pairs: with text_b_column, the input is A <eos> B (the ids of both sentences joined by the
// end-of-sentence id; a BERT-like model will use [CLS] A [SEP] B [SEP] instead), the longer
// side cut first, one piece at a time, so that the whole fits max_positions (BERT's
// truncate_seq_pair); a warning per split says how many inputs were cut.
// objective = classification: labels are the train split's distinct labels, sorted
// (numerically when all are integers); class id i is labels()[i]. They are written to
// <run_dir>/labels.txt and stored in every checkpoint; a dev or test label outside them is an
// error naming file:line. Loss: cross-entropy; validation reports accuracy, macro_f1 and mcc
// (Matthews correlation), and best_metric = auto chooses by accuracy.
// objective = regression (STS-B): labels are numbers, the model has one output, the loss is
// the squared error (MSE per sentence); validation reports pearson and spearman, and
// best_metric = auto chooses by pearson. labels() is empty; predict gives scores.
// Text: every sentence (training, evaluation, predict) is normalized (lowercase,
// split_punctuation; datasets/text_normalization.h) so raw input looks like SST-2's
// lowercased, Penn-Treebank-tokenized text, then encoded by a SentencePiece model
// (<run_dir>/spm.model, trained on the normalized train sentences when the run starts).
// Pretrained vectors (word2vec text or binary) initialise the embedding rows of the pieces
// they hold, once, when a run starts.
// arch = bert (Devlin et al. 2019, sec. 4): BertForSequenceClassification (models/bert/bert.h),
// the pooled [CLS] state -> dropout -> linear. Inputs are [CLS] A [SEP] or [CLS] A [SEP] B [SEP]
// with segment ids 0 up to the first [SEP] and 1 after it (pair_segments), the longer side cut
// first to fit max_positions; a [CLS] [SEP] or [MASK] piece inside the text reads as <unk>, so
// the layout is always the task's. Its size keys are masked_lm's (d_model, num_heads,
// num_layers, ffn_dim, max_positions, activation, pre_norm, positions, type_vocab_size,
// dropout, attention_dropout). init_from = RUN_DIR fine-tunes a pre-trained masked_lm run (its
// encoder) or electra run (its discriminator), any run whose task offers PretrainedBertEncoder
// (train/tasks/pretrained_encoder.h): its SentencePiece model is the run's (<run_dir>/spm.model,
// no new one is trained) and its encoder weights start the model's bert.*, loaded once when the run starts
// (never again on --resume or when a checkpoint is loaded); the size keys are that run's (a
// key left at the classification default is taken from it, any other value must equal it).
// init_from empty: a random encoder (the ablation), with a new tokenizer that has [CLS] [SEP]
// [MASK] at ids 4-6.
#include <optional>

#include "datasets/labeled_text.h"
#include "datasets/text_normalization.h"
#include "datasets/tokenizer.h"
#include "models/bert/bert.h"
#include "models/classifier/text_classifier.h"
#include "train/task.h"
#include "train/tasks/architectures.h"
#include "train/tasks/batch_plans.h"
#include "train/tasks/classification_objective.h"
#include "train/tasks/elmo_features.h"
#include "train/tasks/sentence_classifier.h"

namespace nlpzoo {

/// The classification task's own keys; the architecture's are its (train/tasks/architectures.h).
struct ClassificationOptions {
  std::string objective = "classification";  // or regression
  int64_t vocab_size = 8000;                  // at most; the tokenizer's, once it is trained
  bool lowercase = true;
  bool split_punctuation = true;
  std::string normalize_words = "auto";  // auto | true | false; a run resolves auto once
  int64_t max_positions = 256;           // longest input in pieces, separators included
  std::string arch = "rnn";              // a registered classifier (classifier_architectures)
  std::string init_from;                 // a masked_lm or electra run folder (architectures that load one)
  std::string pretrained_vectors;        // word2vec file for the embedding rows
  bool freeze_embeddings = false;
  ElmoKeys elmo;                         // a bilm run's features (architectures that read them)
  int64_t max_tokens = 2000, max_sentences = 64;
  void bind(OptionBinder& b);
};

/// The classification task's config keys (corpus, tokenizer, every classifier's sizes, batching).
ConfigSchema classification_schema();

/// BERT segment ids of a batch of [CLS] A [SEP] (B [SEP]) inputs: 0 up to and including the
/// first [SEP] (kSepId), 1 after it, 0 at padding (kPadId). tokens: [B, S] int64 -> [B, S] int64
/// on tokens' device.
torch::Tensor pair_segments(const torch::Tensor& tokens);

/// The tensors of a pre-trained run (masked_lm, electra) that fine-tuning takes (ClassificationTask with
/// arch = bert and init_from), read with the checkpoint loader (load_run), so nothing in the
/// file runs.
struct PretrainedEncoder {
  std::string checkpoint;   // <dir>/checkpoint_last.pt
  std::string spm_model;    // the run's SentencePiece model (bytes)
  Config config;            // the run's resolved config
  int64_t step = 0;         // updates the run made
  std::map<std::string, torch::Tensor> tensors;  // its encoder's parameters, "bert.<name>"
  bool pooler_trained = false;  // only an NSP head trains the pooler
  std::string task;             // the run's task ("masked_lm", "electra")
  std::string encoder_role;     // PretrainedBertEncoder::encoder_role ("the discriminator")
  std::string untrained_pooler_reason;
};

/// Reads the pre-trained encoder of the run folder `dir` (a task offering PretrainedBertEncoder) and makes `config` (a
/// classification config with arch = bert) take the run's size keys: a key whose value equals
/// the classification default is set to the run's; another value must equal the run's.
/// Throws UserError naming `dir` (or the checkpoint) when it does not exist, is not a folder,
/// has no checkpoint_last.pt, holds a version-1 checkpoint (TorchScript: refused, as it could
/// run code; `nlpzoo checkpoint upgrade` rewrites it), is a run of another task, or its
/// checkpoint does not match its own config (load_run's error); and naming the key and both
/// values when the fine-tuning config contradicts the run's architecture.
/// With `with_weights` false, only the checks up to the run's task and the sizes: `spm_model`,
/// `step` and `tensors` stay empty.
PretrainedEncoder read_pretrained_encoder(const std::string& dir, Config& config, bool with_weights = true);

class ClassificationTask : public Task, public SentenceClassifier {
 public:
  void setup(Config& config, const TaskContext& context) override;
  std::shared_ptr<torch::nn::Module> model() override { return model_ ? model_->module() : nullptr; }
  int64_t num_batches(Split split, int64_t epoch) override;
  /// tensors: "tokens" [B, T] int64 (kPadId padding), "rows" [B] int64 (the examples' indices
  /// in the split), and "labels" [B] int64 (class ids) or, for regression, "targets" [B] float;
  /// arch = bert also "segments" [B, T] int64 (pair_segments);
  /// num_tokens = B (sentences), so the trainer's per-token loss is per sentence.
  Batch make_batch(Split split, int64_t epoch, int64_t index) override;
  /// Cross-entropy (or, for regression, the squared error) summed over the batch's sentences.
  /// metric_sums outside training: "confusion" [C, C] (gold x predicted counts) or, for
  /// regression, "prediction" and "target" [N] (each example's value at its row of the split).
  LossOutput loss(const Batch& batch) override;
  /// accuracy, macro_f1, mcc (infer/classification_metrics.h) from the confusion matrix; or
  /// pearson, spearman (pearson_r, spearman_rho of core/statistics.h; NaN while the
  /// predictions are constant).
  std::map<std::string, double> validation_metrics(const std::map<std::string, torch::Tensor>& sums,
                                                   int64_t examples) const override;
  /// Unit "sentences", no perplexity; the selection metrics above (best: accuracy or pearson).
  TrainingProfile training_profile() const override;
  /// "spm.model" (the SentencePiece model's bytes) and "labels.txt" (one label per line).
  std::map<std::string, std::string> artifacts() const override;
  void restore_artifacts(const std::map<std::string, std::string>& blobs) override;

  /// Class probabilities of raw sentences (normalized and encoded as training data was),
  /// in order, `batch_size` sentences per forward pass (grouped by length), in eval mode
  /// without gradients; the model must already be on `device`. Throws UserError if
  /// batch_size < 1.
  std::vector<ClassPrediction> predict(const std::vector<std::string>& sentences, const torch::Device& device,
                                       int64_t batch_size) override;

  /// Class names; class id i is labels()[i].
  const std::vector<std::string>& labels() const override { return labels_; }

  bool pair_input() const override { return pair_; }
  bool regression() const { return !objective_->classes(); }

  /// "loss" (nats/sentence; regression: squared error/sentence), "sentences", then the
  /// predictions' "accuracy", "macro_f1" and "mcc" (infer/classification_metrics.h; details:
  /// the per-label scores and the confusion matrix), or for regression "pearson" and "spearman".
  Metrics evaluate(Split split, const EvaluationOptions& options) override;
  /// The twin of infer/export_classifier.h (arch avg_emb or rnn) or of export_bert_classifier
  /// (infer/export_bert.h; arch = bert), for regression with predict giving the scores and
  /// labels empty, with config.ini, "spm.model" and "labels.txt" (empty for regression). UserError naming `path` if it cannot be written.
  std::vector<std::string> export_torchscript(const std::string& path, const std::string& config_ini) override;
  SentenceClassifier* sentence_classifier() override { return this; }
  /// Gold class ids of a split read by setup, in file order. Throws UserError if not loaded.
  const std::vector<int64_t>& gold(Split split) const;
  /// The raw split read by setup. Throws UserError if not loaded.
  const LabeledText& raw_split(Split split) const;
  /// The model when it is a word-embedding classifier (avg_emb, rnn). Throws UserError otherwise.
  TextClassifierImpl& classifier();
  /// The model when it is a BERT classifier. Throws UserError otherwise.
  BertForSequenceClassificationImpl& bert_classifier();
  /// Whether inputs are laid out as BERT's ([CLS] A [SEP] B [SEP], segment ids).
  bool bert_arch() const { return bert_layout_; }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  /// Token ids of a raw sentence: normalized, encoded, cut to max_positions; at least one id
  /// (kUnkId for a sentence without pieces). With `b` (a pair task's second sentence): A <eos>
  /// B, each side at least one id, the longer side cut first to fit max_positions. arch = bert:
  /// [CLS] A [SEP] and [CLS] A [SEP] B [SEP] (BERT's truncate_seq_pair), [CLS] [SEP] [MASK]
  /// pieces of the text read as kUnkId. `cut`, when given, is set to whether anything was cut.
  std::vector<int64_t> encode(const std::string& sentence, const std::string* b = nullptr, bool* cut = nullptr) const;

  /// The file a split is read from: train.tsv, dev.tsv, test.tsv in data_dir.
  static std::string split_path(const std::string& data_dir, Split split);

 private:
  // The run's SentencePiece model: the checkpoint's, the run folder's on resume, the
  // init_from run's (`pretrained_spm`, copied to <run_dir>/spm.model), or a new one.
  Tokenizer make_tokenizer(const Config& config, const TaskContext& context, const std::string& pretrained_spm);
  // Copies `source`'s encoder tensors into the model and prints what was loaded and what is fresh.
  void load_pretrained(const PretrainedEncoder& source);
  // Logits [B, C] of a padded batch (segments: arch = bert only, else undefined).
  torch::Tensor logits(const torch::Tensor& tokens, const torch::Tensor& segments);
  // What an input is, for messages: "a sentence", "a pair A <eos> B", "[CLS] A [SEP] B [SEP]", ...
  std::string input_layout() const;
  std::vector<std::string> make_labels(const TaskContext& context);
  void init_from_vectors(const std::string& path);
  const std::vector<std::vector<int64_t>>& plan(Split split, int64_t epoch);
  // Probabilities or scores of encoded inputs (predict's work).
  std::vector<ClassPrediction> predict_ids(const std::vector<std::vector<int64_t>>& encoded,
                                           const torch::Device& device, int64_t batch_size);

  std::unique_ptr<ClassifierModel> model_;
  std::optional<Tokenizer> tokenizer_;
  std::vector<std::string> labels_;
  std::map<std::string, std::string> restored_;
  TextNormalization normalization_;
  ClassificationOptions options_;
  std::shared_ptr<ClassificationObjective> objective_;
  bool pair_ = false, bert_layout_ = false;
  mutable bool warned_cut_ = false;  // predict warns once about inputs cut to max_positions
  uint64_t seed_ = 0;
  std::map<Split, LabeledText> raw_;
  std::map<Split, std::vector<std::vector<int64_t>>> tokens_;
  BatchPlans plans_;
};

}  // namespace nlpzoo
