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
#include <optional>

#include "datasets/labeled_text.h"
#include "datasets/text_normalization.h"
#include "datasets/tokenizer.h"
#include "models/classifier/text_classifier.h"
#include "train/task.h"
#include "train/tasks/batch_plans.h"
#include "train/tasks/sentence_classifier.h"

namespace nlpzoo {

/// The classification task's config keys (corpus, tokenizer, model sizes, batching).
ConfigSchema classification_schema();

/// Model options from a resolved config (vocab_size from the config, num_classes given).
/// Throws UserError naming the key for a bad value.
ClassifierOptions classifier_options(const Config& config, int64_t num_classes);

class ClassificationTask : public Task, public SentenceClassifier {
 public:
  void setup(Config& config, const TaskContext& context) override;
  std::shared_ptr<torch::nn::Module> model() override { return model_; }
  int64_t num_batches(Split split, int64_t epoch) override;
  /// tensors: "tokens" [B, T] int64 (kPadId padding), "rows" [B] int64 (the examples' indices
  /// in the split), and "labels" [B] int64 (class ids) or, for regression, "targets" [B] float;
  /// num_tokens = B (sentences), so the trainer's per-token loss is per sentence.
  Batch make_batch(Split split, int64_t epoch, int64_t index) override;
  /// Cross-entropy (or, for regression, the squared error) summed over the batch's sentences.
  /// metric_sums outside training: "confusion" [C, C] (gold x predicted counts) or, for
  /// regression, "prediction" and "target" [N] (each example's value at its row of the split).
  LossOutput loss(const Batch& batch) override;
  /// accuracy, macro_f1, mcc (infer/classification_metrics.h) from the confusion matrix; or
  /// pearson, spearman (pearson_r, spearman_rho of infer/embedding_eval.h; NaN while the
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
  bool regression() const { return regression_; }

  /// "loss" (nats/sentence; regression: squared error/sentence), "sentences", then the
  /// predictions' "accuracy", "macro_f1" and "mcc" (infer/classification_metrics.h; details:
  /// the per-label scores and the confusion matrix), or for regression "pearson" and "spearman".
  Metrics evaluate(Split split, const EvaluationOptions& options) override;
  /// The twin of infer/export_classifier.h (arch avg_emb or rnn; for regression predict gives
  /// the scores and labels is empty) with config.ini, "spm.model" and "labels.txt" (empty for
  /// regression). UserError naming `path` if it cannot be written.
  std::vector<std::string> export_torchscript(const std::string& path, const std::string& config_ini) override;
  SentenceClassifier* sentence_classifier() override { return this; }
  /// Gold class ids of a split read by setup, in file order. Throws UserError if not loaded.
  const std::vector<int64_t>& gold(Split split) const;
  /// The raw split read by setup. Throws UserError if not loaded.
  const LabeledText& raw_split(Split split) const;
  TextClassifierImpl& classifier() { return *model_; }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  /// Token ids of a raw sentence: normalized, encoded, cut to max_positions; at least one id
  /// (kUnkId for a sentence without pieces). With `b` (a pair task's second sentence): A <eos>
  /// B, each side at least one id, the longer side cut first to fit max_positions. `cut`, when
  /// given, is set to whether anything was cut.
  std::vector<int64_t> encode(const std::string& sentence, const std::string* b = nullptr, bool* cut = nullptr) const;

  /// The file a split is read from: train.tsv, dev.tsv, test.tsv in data_dir.
  static std::string split_path(const std::string& data_dir, Split split);

 private:
  Tokenizer make_tokenizer(const Config& config, const TaskContext& context);
  std::vector<std::string> make_labels(const TaskContext& context);
  void init_from_vectors(const std::string& path);
  const std::vector<std::vector<int64_t>>& plan(Split split, int64_t epoch);
  // Probabilities or scores of encoded inputs (predict's work).
  std::vector<ClassPrediction> predict_ids(const std::vector<std::vector<int64_t>>& encoded,
                                           const torch::Device& device, int64_t batch_size);

  std::shared_ptr<TextClassifierImpl> model_;
  std::optional<Tokenizer> tokenizer_;
  std::vector<std::string> labels_;
  std::map<std::string, std::string> restored_;
  TextNormalization normalization_;
  int64_t max_positions_ = 256, max_tokens_ = 2000, max_sentences_ = 64;
  bool pair_ = false, regression_ = false;
  mutable bool warned_cut_ = false;  // predict warns once about inputs cut to max_positions
  uint64_t seed_ = 0;
  std::map<Split, LabeledText> raw_;
  std::map<Split, std::vector<std::vector<int64_t>>> tokens_;
  std::map<Split, std::vector<int64_t>> gold_;     // class ids (classification)
  std::map<Split, std::vector<float>> targets_;    // gold values (regression)
  BatchPlans plans_;
};

}  // namespace nlpzoo
