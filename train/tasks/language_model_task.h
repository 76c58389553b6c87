#pragma once
// LanguageModelTask: a recurrent language model over one continuous token stream, trained
// with truncated backpropagation through time (Williams & Peng 1990), as PyTorch's
// word_language_model example and Zaremba et al. 2014 do it.
//
// Data: <data_dir>/{train,valid,test}.<lang>, one sentence per line (as `nlpzoo data bible`
// writes them). Each line is encoded with the run's SentencePiece model (<run_dir>/spm.<lang>.model,
// trained on the train split when the run starts; model type `spm_model_type`: unigram, bpe,
// char, ...) and followed by EOS; the lines are concatenated into one stream per split (empty
// lines carry no text and are skipped). A split too short for one batch (fewer than
// 2 * batch_size tokens) is a UserError naming its file.
// The stream is cut into `batch_size` parallel rows ([B, N/B], the remainder dropped) and
// batch i holds columns [i*bptt, (i+1)*bptt): input = stream[t], target = stream[t+1].
// Batches run in order in every epoch; the recurrent state is carried from batch i to i+1
// of the same split, detached (no gradient flows into the previous segment), and reset to
// zeros at batch 0 (and whenever batches are not taken in order). The training state is saved
// in checkpoints, so a resumed run continues with exactly the state it had.
#include <map>
#include <optional>
#include <string>

#include "datasets/tokenizer.h"
#include "models/rnn/language_model.h"
#include "train/task.h"
#include "train/tasks/component_schemas.h"
#include "train/tasks/text_generator.h"

namespace nlpzoo {

/// The language-model task's keys: the corpus, the recurrent model's sizes, TBPTT.
struct LanguageModelTaskOptions {
  std::string lang = "en";
  int64_t vocab_size = 8000;  // at most; the tokenizer's, once it is trained
  RnnOptions rnn = lm_rnn();
  bool tie_embeddings = false;  // needs embed_dim = hidden_size
  int64_t bptt = 35;
  int64_t batch_size = 32;
  /// Also checks that tied embeddings have embed_dim = hidden_size.
  void bind(OptionBinder& b);
  /// The model's options (vocab_size as it is here).
  LanguageModelOptions model() const;
  /// The language model's defaults of the recurrent keys (512 wide, 2 layers, dropout 0.2).
  static RnnOptions lm_rnn();
};

/// The language-model task's config keys (corpus, tokenizer, model sizes, bptt, batch_size).
ConfigSchema language_model_schema();

class LanguageModelTask : public Task, public TextGenerator {
 public:
  void setup(Config& config, const TaskContext& context) override;
  std::shared_ptr<torch::nn::Module> model() override { return model_.ptr(); }
  /// ceil((N/B - 1) / bptt), the same in every epoch: TBPTT needs the stream in order.
  int64_t num_batches(Split split, int64_t epoch) override;
  /// tensors: "input" [B, T] int64, "target" [B, T] int64 (T = bptt, shorter at the end of the
  /// stream); Batch::split and Batch::index say where it comes from; num_tokens = B * T.
  Batch make_batch(Split split, int64_t epoch, int64_t index) override;
  /// Cross-entropy summed over the batch's tokens, starting from the state the previous batch
  /// of the same split left (zeros at index 0); keeps the new state, detached.
  LossOutput loss(const Batch& batch) override;
  bool carries_state_across_batches() const override { return true; }  // the TBPTT state
  /// "spm.model" (the SentencePiece model's bytes) and "tbptt_state" (the carried training
  /// state, a torch-serialized tensor list; absent before the first step).
  std::map<std::string, std::string> artifacts() const override;
  void restore_artifacts(const std::map<std::string, std::string>& blobs) override;

  /// "loss" (nats/token), "perplexity", "tokens" of the split's stream, read as training
  /// reads it (the state carried from batch to batch, zeros at the start).
  Metrics evaluate(Split split, const EvaluationOptions& options) override;
  /// The twin of infer/export_lm.h with config.ini and "spm.model" (not the carried TBPTT
  /// state: that is training state).
  std::vector<std::string> export_torchscript(const std::string& path, const std::string& config_ini) override;
  TextGenerator* text_generator() override { return this; }

  CausalDecoder& causal_decoder() override { return *model_; }
  /// The recurrent model itself (training reads it with the carried TBPTT state).
  LanguageModelImpl& language_model() { return *model_; }
  const Tokenizer& tokenizer() const override { return *tokenizer_; }
  /// The state the next batch of `split` starts from (h, c: [num_layers, B, hidden_size],
  /// detached); undefined before the first batch of the split.
  RecurrentState carried_state(Split split) const;
  /// The split's token stream, [batch_size, N/batch_size] int64. Throws UserError if setup
  /// did not read the split.
  const torch::Tensor& stream(Split split) const;

 private:
  struct Carried {
    RecurrentState state;
    int64_t next_index = 0;  // the batch this state is the start of
  };
  LanguageModel model_{nullptr};
  std::optional<Tokenizer> tokenizer_;
  std::string restored_spm_;  // the checkpoint's SentencePiece model ("" when training anew)
  int64_t bptt_ = 35, batch_size_ = 32;
  std::map<Split, torch::Tensor> streams_;  // [B, N] int64 per split; read-only after setup
  std::map<Split, Carried> carried_;        // touched by loss() and checkpoints only (main thread)
};

}  // namespace nlpzoo
