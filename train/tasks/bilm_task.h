#pragma once
// BiLmTask (`task = bilm`): pre-trains ELMo's bidirectional language model (Peters et al. 2018;
// the model: models/rnn/bilm.h), whose frozen layers a classifier mixes into its input
// (classification's `elmo = RUN_DIR`, models/rnn/elmo.h).
//
// Data: masked_lm's, shared (train/tasks/masked_lm_data.h): `nlpzoo data english`'s corpus (or a
// task's training TSV), its tokenizer with [CLS] [SEP] [MASK] at ids 4-6, and its sequences packed
// as [CLS] s_i s_i+1 ... [SEP] of at most max_positions pieces, in a permutation drawn from
// (seed, epoch) for train and in order for valid (so --resume is exact). Nothing is masked: the
// forward LM reads each sequence left to right and the backward LM right to left.
// Loss: the two directions' cross-entropies summed; the unit is one prediction of one direction
// (N + 1 per direction for a sequence of N pieces between [CLS] and [SEP]), so loss and
// perplexity are the mean over both directions, and validation also reports each direction's.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "models/rnn/bilm.h"
#include "train/task.h"
#include "train/tasks/masked_lm_data.h"

namespace nlpzoo {

/// The bilm task's keys: the corpus (masked_lm's, masking aside) and the biLM's sizes.
struct BiLmOptions {
  PretrainingCorpusOptions corpus;
  int64_t embed_dim = 256;
  int64_t hidden_size = 1024;
  int64_t num_layers = 2;
  double dropout = 0.1;
  int64_t max_positions = 128;  // packed sequence length, [CLS] and [SEP] included
  void bind(OptionBinder& b);
  /// The model's options over `vocab_size` pieces.
  BiLanguageModelOptions model(int64_t vocab_size) const;
};

/// The bilm task's config keys (corpus, tokenizer, biLM sizes, batch_size).
ConfigSchema bilm_schema();

class BiLmTask : public Task {
 public:
  void setup(Config& config, const TaskContext& context) override;
  std::shared_ptr<torch::nn::Module> model() override { return model_.ptr(); }
  int64_t num_batches(Split split, int64_t /*epoch*/) override { return data_.num_batches(split); }
  /// tensors: "sequences" [B, S] int64 ([CLS] ... [SEP], then pad id 0), "lengths" [B] int64;
  /// num_tokens = num_examples = the predictions of both directions.
  Batch make_batch(Split split, int64_t epoch, int64_t index) override;
  /// The forward and backward cross-entropies summed; in eval mode also metric_sums
  /// "forward_nll", "backward_nll" and "predictions" (per direction).
  LossOutput loss(const Batch& batch) override;
  /// "forward_loss", "backward_loss" (nats per prediction of that direction) and their
  /// perplexities.
  std::map<std::string, double> validation_metrics(const std::map<std::string, torch::Tensor>& sums,
                                                   int64_t examples) const override;
  std::map<std::string, std::string> artifacts() const override { return data_.artifacts(); }
  void restore_artifacts(const std::map<std::string, std::string>& blobs) override { data_.restore_artifacts(blobs); }
  /// "loss", "perplexity" (both directions), then validation_metrics' scores.
  Metrics evaluate(Split split, const EvaluationOptions& options) override;
  Split default_evaluation_split() const override { return Split::kValid; }
  /// The twin of infer/export_lm.h's script_bilm (the L + 1 layers of each piece) with
  /// "config.ini" and "spm.model".
  std::vector<std::string> export_torchscript(const std::string& path, const std::string& config_ini) override;

  BiLanguageModelImpl& bilm() { return *model_; }
  const Tokenizer& tokenizer() const { return data_.tokenizer(); }
  /// Whether the corpus was read as `nlpzoo data english` writes it (a task reading the biLM's
  /// features must bring its text to that form).
  bool normalize_words() const { return options_.corpus.normalize_words; }

 private:
  BiLanguageModel model_{nullptr};
  MaskedLmData data_;
  BiLmOptions options_;
};

}  // namespace nlpzoo
