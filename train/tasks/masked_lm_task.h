#pragma once
// MaskedLmTask: BERT's masked-LM pre-training (Devlin et al. 2019, sec. 3.1) with RoBERTa's
// dynamic masking and FULL-SENTENCES packing (Liu et al. 2019, sec. 4.1-4.2).
//
// Data: <data_dir>/<train_file> (default english.txt, as `nlpzoo data english --out DIR` writes
// it), one sentence per line. Line i (0-based) with (i + 1) % valid_every == 0 is held out as
// the valid split (the word-vector tasks' rule, train/tasks/word_corpus.h); there is no test split.
// Tokenizer: a SentencePiece model trained on the train split's lines (<run_dir>/spm.model, stored
// in every checkpoint as "spm.model") with [CLS] [SEP] [MASK] at ids 4, 5, 6 (datasets/special_ids.h).
// Sequences: each split's sentences packed in file order into [CLS] s_i s_i+1 ... [SEP] of at most
// max_positions pieces (datasets/masked_lm.h), segment ids 0. Batches: batch_size sequences;
// epoch e visits the train sequences in a permutation drawn from (seed, e), the valid ones in order.
// Masking (dynamic): sequence k of the train split is masked in epoch e by a generator seeded
// from (seed, e, k), so every epoch masks differently and any batch can be remade alone
// (--resume is exact); the valid split has one fixed mask (seeded from k alone), the same for
// every run. mask_prob of the non-special positions are predicted (80% [MASK], 10% random, 10% kept).
// NSP (nsp = true; Devlin et al. sec. 3.1, task #2): instead of packed sequences, the split's
// sentences are grouped in file order into chunks of at most max_positions - 3 pieces, and
// chunk k becomes [CLS] A [SEP] B [SEP] (segments 0/1), B the text that follows A or, half of
// the time, a span of another chunk (datasets/masked_lm.h next_sentence_pair), drawn like the
// mask from (seed, epoch, k) for train and from k alone for valid.
// Loss: cross-entropy at the masked positions, summed; the unit is one masked position (also
// what num_examples counts, so that validation's "accuracy" is top-1 accuracy per masked position).
// With NSP, BERT's sum of the two mean losses: the batch's NSP cross-entropy mean is added once
// per masked position (N / B times its sum), so loss / N = MLM mean + NSP mean.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "datasets/masked_lm.h"
#include "datasets/tokenizer.h"
#include "models/bert/bert.h"
#include "train/tasks/component_schemas.h"
#include "train/task.h"
#include "train/tasks/mask_filler.h"

namespace nlpzoo {

/// The size keys of a BERT encoder (Devlin et al. 2019), the masked_lm run's and the
/// fine-tuned classifier's: a Transformer stack (positions learned, the only kind BERT takes),
/// num_layers, max_positions and type_vocab_size. Reading also checks positions = learned.
struct BertKeys {
  TransformerStackOptions stack = bert_stack();
  int64_t num_layers = 4;       // encoder layers L
  int64_t max_positions = 128;  // position table rows, [CLS] and [SEP] included
  int64_t type_vocab_size = 2;  // segment embeddings
  double layer_norm_eps = 1e-5;  // LibTorch's default; Google's published checkpoints use 1e-12
  void bind(OptionBinder& b);
  /// BertOptions of these sizes over `vocab_size` pieces (nsp false).
  BertOptions options(int64_t vocab_size) const;
  /// BERT's defaults of the stack: GELU, learned positions, attention dropout 0.1.
  static TransformerStackOptions bert_stack();
};

/// The masked_lm task's own keys (corpus, vocabulary, masking, batching).
struct MaskedLmOptions {
  std::string train_file = "english.txt";
  int64_t valid_every = 200;  // line i with (i+1) % valid_every == 0 is held out
  int64_t vocab_size = 8000;  // at most; the tokenizer's, once it is trained
  bool nsp = false;
  double mask_prob = 0.15;
  bool whole_word_masking = false;
  int64_t batch_size = 32;
  bool normalize_words = true;
  void bind(OptionBinder& b);
};

/// The masked_lm task's config keys (corpus, tokenizer, BERT sizes, masking, batch_size).
ConfigSchema masked_lm_schema();

/// The parameters AdamW should not decay (BERT's exclude_from_weight_decay: biases and LayerNorm
/// weights, i.e. every parameter of fewer than 2 dimensions), by their names in `model`.
std::vector<std::string> parameters_without_weight_decay(const torch::nn::Module& model);

class MaskedLmTask : public Task, public MaskFiller {
 public:
  void setup(Config& config, const TaskContext& context) override;
  std::shared_ptr<torch::nn::Module> model() override { return model_.ptr(); }
  /// ceil(sequences / batch_size).
  int64_t num_batches(Split split, int64_t epoch) override;
  /// tensors: "input" [B, S] int64 (masked; padded with pad id 0), "segments" [B, S] int64,
  /// "masked" [B, S] bool (positions to predict), "targets" [N] int64 (their original ids, in
  /// row-major order), with NSP "nsp_labels" [B] int64 (0: B follows A, 1: random, as BERT's
  /// next_sentence_labels); num_tokens = num_examples = N.
  Batch make_batch(Split split, int64_t epoch, int64_t index) override;
  /// Summed cross-entropy of the N masked positions (plus N times the NSP mean with NSP); in
  /// eval mode also metric_sums "accuracy" (top-1 hits), with NSP "mlm_loss" (the MLM part)
  /// and "nsp" [2] (correct next-sentence predictions, sequences).
  LossOutput loss(const Batch& batch) override;
  /// "accuracy" per masked position; with NSP also "mlm_loss", "mlm_perplexity" and
  /// "nsp_accuracy" (per sequence).
  std::map<std::string, double> validation_metrics(const std::map<std::string, torch::Tensor>& sums,
                                                   int64_t examples) const override;
  TrainingProfile training_profile() const override;
  /// "spm.model": the SentencePiece model's bytes.
  std::map<std::string, std::string> artifacts() const override;
  void restore_artifacts(const std::map<std::string, std::string>& blobs) override;
  /// "loss" (nats per masked position), "perplexity", "accuracy" (top-1 at masked positions)
  /// and "masked" (their count), with the split's fixed mask; with NSP "loss" is MLM + NSP and
  /// "mlm_loss", "mlm_perplexity" and "nsp_accuracy" follow.
  Metrics evaluate(Split split, const EvaluationOptions& options) override;
  Split default_evaluation_split() const override { return Split::kValid; }
  /// The twin of infer/export_bert.h (encode, mlm_logits) with "config.ini" and "spm.model".
  std::vector<std::string> export_torchscript(const std::string& path, const std::string& config_ini) override;
  /// [CLS] pieces(line) [SEP] (cut to max_positions with a warning on stderr) through the MLM
  /// head at every [MASK] (datasets/special_ids.h kMaskId). The line is first brought to the
  /// corpus's form (input_pieces).
  std::vector<std::vector<MaskCandidate>> fill_mask(const std::string& line, int64_t k,
                                                    const torch::Device& device) override;
  MaskFiller* mask_filler() override { return this; }
  /// The pieces of a typed line as the model saw its corpus: with normalize_words (the form of
  /// `nlpzoo data english`) the text around each literal [MASK] is lowercased, accents folded
  /// and punctuation dropped (datasets/english_corpus.h normalize_words); and a bare "▁" piece
  /// before a [MASK] is dropped, because a masked word's own piece carried its "▁" in training
  /// (RoBERTa's <mask> strips the space before it alike).
  std::vector<int64_t> input_pieces(const std::string& line) const;

  BertForPreTraining& bert() { return model_; }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  /// The packed sequences of a split (each [CLS] ... [SEP]); empty with NSP. Throws UserError
  /// if not read.
  const std::vector<TokenIds>& sequences(Split split) const;
  /// Example k of a split in epoch e, unmasked: its packed sequence, or with NSP its
  /// next-sentence pair. Throws UserError if the split was not read.
  NextSentencePair example(Split split, int64_t epoch, int64_t k) const;
  const MaskingOptions& masking() const { return masking_; }

 private:
  int64_t num_examples(Split split) const;  // sequences, or NSP chunks

  BertForPreTraining model_{nullptr};
  std::optional<Tokenizer> tokenizer_;
  std::string restored_spm_;
  std::map<Split, std::vector<TokenIds>> sequences_;  // read-only after setup (empty with NSP)
  std::map<Split, std::vector<std::vector<TokenIds>>> chunks_;  // NSP only: sentences grouped
  int64_t max_positions_ = 128;
  bool nsp_ = false;
  bool normalize_words_ = true;
  MaskingOptions masking_;
  int64_t batch_size_ = 32;
  uint64_t seed_ = 0;
};

}  // namespace nlpzoo
