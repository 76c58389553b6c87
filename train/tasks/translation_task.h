#pragma once
// TranslationTask: a parallel corpus, two SentencePiece models and an encoder-decoder trained
// with teacher forcing: the attention RNN (models/seq2seq, arch = rnn) or the Transformer
// (models/transformer, arch = transformer).
//
// Data: <data_dir>/{train,valid,test}.<src_lang> and .<tgt_lang>, one sentence per line,
// aligned by line (as `nlpzoo data bible` writes them). Tokenizers: <run_dir>/spm.<lang>.model,
// trained on the train split when the run starts and stored in every checkpoint (with
// share_embeddings, one <run_dir>/spm.joint.model over both languages).
// Examples: src = pieces + EOS; tgt_in = BOS + pieces; tgt_out = pieces + EOS, each at most
// max_positions long. Training pairs longer than that are skipped (counted and reported);
// valid and test sentences are cut, so they are all scored.
#include <optional>

#include "datasets/parallel_corpus.h"
#include "datasets/tokenizer.h"
#include "train/task.h"
#include "train/tasks/architectures.h"
#include "train/tasks/batch_plans.h"
#include "train/tasks/translation_model.h"

namespace nlpzoo {

/// The translation task's own keys; the architecture's are its (train/tasks/architectures.h).
struct TranslationOptions {
  std::string src_lang = "es", tgt_lang = "en";
  int64_t src_vocab_size = 8000, tgt_vocab_size = 8000;  // at most; the tokenizers', once trained
  int64_t max_positions = 64;  // longest sequence in pieces, EOS/BOS included
  std::string arch = "rnn";    // a registered encoder-decoder (seq2seq_architectures)
  double label_smoothing = 0;
  double length_penalty;       // beam search's score log P / length^alpha: search's own default
  int64_t max_tokens = 3000, max_sentences = 0;
  TranslationOptions();
  void bind(OptionBinder& b);
};

/// The translation task's config keys (corpus, tokenizers, every encoder-decoder's sizes, loss).
ConfigSchema translation_schema();

class TranslationTask : public Task, public TranslationModel {
 public:
  void setup(Config& config, const TaskContext& context) override;
  std::shared_ptr<torch::nn::Module> model() override { return model_ ? model_->module() : nullptr; }
  int64_t num_batches(Split split, int64_t epoch) override;
  /// tensors: "src" [B, S] int64, "tgt_in" [B, T] int64, "tgt_out" [B, T] int64 (kPadId padding);
  /// num_tokens = real target tokens (EOS included).
  Batch make_batch(Split split, int64_t epoch, int64_t index) override;
  /// Cross-entropy summed over real target tokens; label smoothing (Szegedy et al. 2016) only
  /// while the model is in training mode, so evaluation reports the true perplexity.
  LossOutput loss(const Batch& batch) override;
  /// Tokens with perplexity; the model's d_model for noam (the Transformer's).
  TrainingProfile training_profile() const override;
  /// "spm.src.model", "spm.tgt.model": the SentencePiece model files' bytes.
  std::map<std::string, std::string> artifacts() const override;
  void restore_artifacts(const std::map<std::string, std::string>& blobs) override;

  /// "loss" (nats/token), "perplexity", "target_tokens"; with options.decode also "bleu_greedy"
  /// and, when options.search has beam_size > 1, "bleu_beam<k>" (sacreBLEU's corpus BLEU
  /// against the split's references; the outputs go to "<prefix>.greedy.txt" and
  /// "<prefix>.beam<k>.txt" when options.output_prefix is set).
  Metrics evaluate(Split split, const EvaluationOptions& options) override;
  /// The RNN's or the Transformer's twin (infer/export_seq2seq.h, infer/export_transformer.h)
  /// with config.ini and the tokenizers ("spm.src.model", "spm.tgt.model").
  std::vector<std::string> export_torchscript(const std::string& path, const std::string& config_ini) override;
  TranslationModel* translation_model() override { return this; }

  /// The model as search sees it.
  IncrementalDecoder& decoder() override { return model_->decoder(); }
  const Tokenizer& source_tokenizer() const override { return *src_tok_; }
  const Tokenizer& target_tokenizer() const override { return *tgt_tok_; }
  int64_t max_positions() const override;
  /// The model's cross-attention heads (the Transformer's num_heads); 0 for one attention (the RNN).
  int64_t attention_heads() const override;
  void set_attention_head(int64_t head) override;
  const ParallelCorpus& raw_split(Split split) const override;

 private:
  struct Example {
    std::vector<int64_t> src, tgt;  // pieces, without BOS/EOS
  };
  // The tokenizer artifact `which` ("src" | "tgt"): restored, or trained on the train split of
  // `langs` (two languages: one joint model, spm.joint.model).
  Tokenizer tokenizer_for(const std::vector<std::string>& langs, const std::string& which, int64_t vocab_size,
                          const Config& config, const TaskContext& context);
  const std::vector<std::vector<int64_t>>& plan(Split split, int64_t epoch);

  std::unique_ptr<Seq2SeqModel> model_;
  std::optional<Tokenizer> src_tok_, tgt_tok_;
  std::map<std::string, std::string> restored_;
  TranslationOptions options_;  // length_penalty: evaluate's default when given no search
  uint64_t seed_ = 0;
  std::map<Split, ParallelCorpus> raw_;
  std::map<Split, std::vector<Example>> examples_;
  BatchPlans plans_;
};

}  // namespace nlpzoo
