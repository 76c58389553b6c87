#pragma once
// GptTask: a decoder-only Transformer language model (models/transformer/gpt.h) trained on
// blocks of a token stream, as nanoGPT and fairseq's language_modeling task train GPT.
//
// Data, either
//   text_file = NAME: <data_dir>/NAME, any text; the first (1 - valid_fraction) of its
//     characters are the train split and the rest the valid split (nanoGPT's
//     shakespeare_char convention, cut at a character); there is no test split; or
//   text_file = "": <data_dir>/{train,valid,test}.<lang> (as `nlpzoo data bible` writes them).
// Each line is encoded with the run's SentencePiece model (spm.<lang>.model, trained on the
// train split) and followed by EOS for its line break, so EOS is a newline and a char model
// with spm_add_dummy_prefix = false and spm_remove_extra_whitespaces = false reads one token
// per character.
// Batches: `batch_size` blocks of `block_size` tokens, input = stream[o, o+T), target =
// stream[o+1, o+T+1]. Training blocks start at random offsets (sample_break = random,
// nanoGPT's get_batch; an epoch is N / (batch_size * block_size) batches) or are the stream's
// consecutive blocks in a shuffled order (sample_break = none, fairseq's
// --sample-break-mode none); either way batch i of epoch e depends only on (seed, e, i), so
// resumed runs are exact. Valid and test read their consecutive blocks in order, the last
// one padded, so every token of the split is scored exactly once.
#include <map>
#include <optional>
#include <string>

#include "core/enum_names.h"
#include "core/options.h"
#include "datasets/tokenizer.h"
#include "models/transformer/gpt.h"
#include "train/task.h"
#include "train/tasks/text_generator.h"

namespace nlpzoo {

enum class SampleBreak { kRandom, kNone };
inline constexpr EnumNames<SampleBreak, 2> kSampleBreakNames = {
    {{SampleBreak::kRandom, "random"}, {SampleBreak::kNone, "none"}}};

/// The GPT task's keys: the corpus, the model's sizes, the blocks.
struct GptTaskOptions {
  std::string text_file;       // "" = <data_dir>/<split>.<lang>
  double valid_fraction = 0.1;
  std::string lang = "en";
  int64_t vocab_size = 8000;   // at most; the tokenizer's, once it is trained
  int64_t d_model = 384, num_heads = 6, num_layers = 6;
  int64_t ffn_dim = 0;         // 0 = 4 d_model
  int64_t block_size = 256;
  double dropout = 0.2;
  int64_t batch_size = 64;
  SampleBreak sample_break = SampleBreak::kRandom;
  /// Also checks that num_heads divides d_model.
  void bind(OptionBinder& b);
  GptOptions model() const;
};

ConfigSchema gpt_schema();

class GptTask : public Task, public TextGenerator {
 public:
  void setup(Config& config, const TaskContext& context) override;
  std::shared_ptr<torch::nn::Module> model() override { return model_.ptr(); }
  int64_t num_batches(Split split, int64_t epoch) override;
  /// tensors: "input", "target" [B, T] int64 (targets kPadId past the end of a valid/test
  /// split); num_tokens = the targets that are not padding.
  Batch make_batch(Split split, int64_t epoch, int64_t index) override;
  LossOutput loss(const Batch& batch) override;
  TrainingProfile training_profile() const override;
  std::map<std::string, std::string> artifacts() const override;
  void restore_artifacts(const std::map<std::string, std::string>& blobs) override;

  /// "loss" (nats/token), "perplexity", "tokens", then "bits_per_character" and
  /// "loss_per_character" (nats): the split's summed loss over its characters (a line break
  /// counts as one), comparable across tokenizers and with nanoGPT's character-level loss.
  Metrics evaluate(Split split, const EvaluationOptions& options) override;
  Split default_evaluation_split() const override { return has_test_split() ? Split::kTest : Split::kValid; }
  std::vector<std::string> export_torchscript(const std::string& path, const std::string& config_ini) override;
  TextGenerator* text_generator() override { return this; }

  CausalDecoder& causal_decoder() override { return *model_; }
  const Tokenizer& tokenizer() const override { return *tokenizer_; }
  bool eos_ends_text() const override { return false; }  // EOS is a line break here
  GptImpl& gpt() { return *model_; }
  /// The split's tokens, [N] int64. Throws UserError if setup did not read the split.
  const torch::Tensor& stream(Split split) const;

 private:
  /// Whether the corpus is the split files (with a test split) rather than one text_file.
  bool has_test_split() const { return options_.text_file.empty(); }
  Gpt model_{nullptr};
  std::optional<Tokenizer> tokenizer_;
  std::string restored_spm_;
  GptTaskOptions options_;
  uint64_t seed_ = 0;
  std::map<Split, torch::Tensor> streams_;  // read-only after setup
  std::map<Split, int64_t> characters_;
};

}  // namespace nlpzoo
