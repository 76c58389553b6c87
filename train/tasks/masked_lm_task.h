#pragma once
// MaskedLmTask: BERT's masked-LM pre-training (Devlin et al. 2019, sec. 3.1) with RoBERTa's
// dynamic masking and FULL-SENTENCES packing (Liu et al. 2019, sec. 4.1-4.2).
//
// Data, tokenizer, packing, batches and dynamic masking: train/tasks/masked_lm_data.h (shared
// with electra).
// NSP (nsp = true; Devlin et al. sec. 3.1, task #2): the examples are next-sentence pairs
// [CLS] A [SEP] B [SEP] (masked_lm_data.h) and a 2-way head on the pooled [CLS] state learns them.
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
#include "train/task.h"
#include "train/tasks/mask_filler.h"
#include "train/tasks/masked_lm_data.h"
#include "train/tasks/pretrained_encoder.h"

namespace nlpzoo {

/// The masked_lm task's own keys: the pre-training corpus's (corpus, vocabulary, masking,
/// batching) and next-sentence prediction.
struct MaskedLmOptions : PretrainingCorpusOptions {
  bool nsp = false;
  std::string init_from;  // a masked_lm run to continue pre-training (its tokenizer, sizes, weights)
  void bind(OptionBinder& b);
};

/// The masked_lm task's config keys (corpus, tokenizer, BERT sizes, masking, batch_size).
ConfigSchema masked_lm_schema();

class MaskedLmTask : public Task, public MaskFiller, public PretrainedBertEncoder {
 public:
  void setup(Config& config, const TaskContext& context) override;
  std::shared_ptr<torch::nn::Module> model() override { return model_.ptr(); }
  /// ceil(sequences / batch_size).
  int64_t num_batches(Split split, int64_t /*epoch*/) override { return data_.num_batches(split); }
  /// tensors: "input" [B, S] int64 (masked; padded with pad id 0), "segments" [B, S] int64,
  /// "masked" [B, S] bool (positions to predict), "targets" [N] int64 (their original ids, in
  /// row-major order), with NSP "nsp_labels" [B] int64 (0: B follows A, 1: random, as BERT's
  /// next_sentence_labels); num_tokens = num_examples = N.
  Batch make_batch(Split split, int64_t epoch, int64_t index) override {
    return data_.make_batch(split, epoch, index);
  }
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
  std::map<std::string, std::string> artifacts() const override { return data_.artifacts(); }
  void restore_artifacts(const std::map<std::string, std::string>& blobs) override { data_.restore_artifacts(blobs); }
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
  /// The pieces of a typed line as the model saw its corpus (MaskedLmData::input_pieces).
  std::vector<int64_t> input_pieces(const std::string& line) const { return data_.input_pieces(line); }

  /// PretrainedBertEncoder: the encoder is the model's BertModel; only NSP trains its pooler.
  BertModelImpl& pretrained_encoder() override { return *model_->bert; }
  bool pooler_trained() const override { return nsp_; }
  std::string encoder_role() const override { return ""; }
  std::string untrained_pooler_reason() const override { return "masked_lm without nsp never trains it"; }

  BertForPreTraining& bert() { return model_; }
  const Tokenizer& tokenizer() const { return data_.tokenizer(); }
  /// The packed sequences of a split (each [CLS] ... [SEP]); empty with NSP. Throws UserError
  /// if not read.
  const std::vector<TokenIds>& sequences(Split split) const { return data_.sequences(split); }
  /// Example k of a split in epoch e, unmasked: its packed sequence, or with NSP its
  /// next-sentence pair. Throws UserError if the split was not read.
  NextSentencePair example(Split split, int64_t epoch, int64_t k) const { return data_.example(split, epoch, k); }
  const MaskingOptions& masking() const { return data_.masking(); }

 private:
  // Continued pre-training (init_from): the run's sizes and text form into `config`, its
  // tokenizer into data_; its tensors are returned, for the model once it is built.
  struct ContinuedRun {
    std::string checkpoint;
    int64_t step = 0;
    std::map<std::string, torch::Tensor> tensors;
  };
  ContinuedRun continue_from(const std::string& dir, Config& config, const TaskContext& context);

  BertForPreTraining model_{nullptr};
  MaskedLmData data_;
  bool nsp_ = false;
};

}  // namespace nlpzoo
