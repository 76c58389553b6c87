#pragma once
// ElectraTask: ELECTRA's replaced-token-detection pre-training (Clark et al. 2020; the model:
// models/bert/electra.h). A small generator (d_model / generator_size_divisor wide, sharing the
// discriminator's embeddings) fills the masked positions by sampling from its softmax; the
// discriminator, a BERT encoder, tells at every real (non-pad) position whether the token is
// the original. The discriminator is the encoder users fine-tune (classification's init_from).
//
// Data: masked_lm's, shared (train/tasks/masked_lm_data.h): the same corpus, tokenizer,
// FULL-SENTENCES packing, batches and dynamic masks (80/10/10, from (seed, epoch, k); valid
// fixed), so --resume is exact; no NSP. Each masked position also carries one U[0, 1) draw from
// the same kind of seeded stream, which the generator's sample is drawn with, so a remade batch
// samples alike too.
// Loss (sec. 2, eq. min L_MLM + λ L_Disc): the unit is one masked position, as masked_lm's.
// loss_sum = Σ_masked CE(generator) + λ · N · mean_real BCE(discriminator), with N the batch's
// masked positions: loss / N = the generator's mean MLM loss + λ times the discriminator's mean
// BCE over the batch's real positions (ELECTRA's reference code means each over its batch),
// added per unit as masked_lm adds NSP. λ = disc_weight (50, the paper's).
#include <map>
#include <string>
#include <vector>

#include "models/bert/electra.h"
#include "train/task.h"
#include "train/tasks/mask_filler.h"
#include "train/tasks/masked_lm_data.h"
#include "train/tasks/pretrained_encoder.h"

namespace nlpzoo {

/// The electra task's own keys: the pre-training corpus's and the generator's size and the
/// discriminator loss's weight.
struct ElectraOptions : PretrainingCorpusOptions {
  int64_t generator_size_divisor = 4;  // generator d_model, num_heads, ffn_dim = the discriminator's / this
  double disc_weight = 50.0;           // λ in L_MLM + λ L_Disc
  void bind(OptionBinder& b);
};

/// The electra task's config keys (corpus, tokenizer, BERT sizes of the discriminator, masking,
/// batch_size, generator_size_divisor, disc_weight).
ConfigSchema electra_schema();

/// The two losses of a batch and their sum in the Trainer's convention (see the file comment).
struct ElectraLosses {
  torch::Tensor mlm_sum;    // scalar: Σ over the N masked positions of -log p_G(x_t)
  torch::Tensor disc_mean;  // scalar: mean over the real positions of BCE(D logit, replaced)
  torch::Tensor loss_sum;   // mlm_sum + disc_weight · N · disc_mean
};
/// From the model's output (mlm_logits, replaced, disc_logits), the original ids at the masked
/// positions `targets` [N] and the real positions `real` [B, S] bool.
ElectraLosses electra_losses(const ElectraOutput& out, const torch::Tensor& targets, const torch::Tensor& real,
                             double disc_weight);

class ElectraTask : public Task, public MaskFiller, public PretrainedBertEncoder {
 public:
  void setup(Config& config, const TaskContext& context) override;
  std::shared_ptr<torch::nn::Module> model() override { return model_.ptr(); }
  int64_t num_batches(Split split, int64_t /*epoch*/) override { return data_.num_batches(split); }
  /// MaskedLmData::make_batch with its sampling noise "uniform" [N]; num_tokens = N.
  Batch make_batch(Split split, int64_t epoch, int64_t index) override {
    return data_.make_batch(split, epoch, index, /*sampling_noise=*/true);
  }
  /// electra_losses' loss_sum; in eval mode also metric_sums "generator_accuracy" (top-1 hits
  /// at the masked positions), "mlm_loss" (the generator's summed CE) and "disc" [6] float64:
  /// the BCE summed over real positions, correct discriminator calls, real positions, and
  /// replaced tokens called replaced (tp), originals called replaced (fp), replaced called
  /// original (fn).
  LossOutput loss(const Batch& batch) override;
  /// "generator_accuracy", "mlm_loss" and "mlm_perplexity" per masked position;
  /// "discriminator_accuracy" and "disc_loss" per real position; "replaced_f1" = 2tp / (2tp +
  /// fp + fn), the positive class "replaced" (0 when there is none and none is called).
  std::map<std::string, double> validation_metrics(const std::map<std::string, torch::Tensor>& sums,
                                                   int64_t examples) const override;
  TrainingProfile training_profile() const override;
  std::map<std::string, std::string> artifacts() const override { return data_.artifacts(); }
  void restore_artifacts(const std::map<std::string, std::string>& blobs) override { data_.restore_artifacts(blobs); }
  /// "loss" (per masked position, as trained), "masked", then validation_metrics' scores, with
  /// the split's fixed masks and samples.
  Metrics evaluate(Split split, const EvaluationOptions& options) override;
  Split default_evaluation_split() const override { return Split::kValid; }
  /// The twin of infer/export_bert.h's script_electra (encode, replaced_logits, mlm_logits)
  /// with "config.ini" and "spm.model".
  std::vector<std::string> export_torchscript(const std::string& path, const std::string& config_ini) override;
  /// Through the generator (the run's masked LM): [CLS] pieces(line) [SEP], the k most probable
  /// pieces at every [MASK] (MaskedLmData::fill_mask).
  std::vector<std::vector<MaskCandidate>> fill_mask(const std::string& line, int64_t k,
                                                    const torch::Device& device) override;
  MaskFiller* mask_filler() override { return this; }

  /// PretrainedBertEncoder: the discriminator; no ELECTRA loss reaches its pooler.
  BertModelImpl& pretrained_encoder() override { return *model_->bert; }
  bool pooler_trained() const override { return false; }
  std::string encoder_role() const override { return "the discriminator"; }
  std::string untrained_pooler_reason() const override { return "electra never trains it"; }

  ElectraForPreTraining& electra() { return model_; }
  const MaskedLmData& data() const { return data_; }
  const Tokenizer& tokenizer() const { return data_.tokenizer(); }
  double disc_weight() const { return options_.disc_weight; }

 private:
  ElectraForPreTraining model_{nullptr};
  MaskedLmData data_;
  ElectraOptions options_;
};

}  // namespace nlpzoo
