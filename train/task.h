#pragma once
// The seam between models and the training loop (ARCHITECTURE.md). A Task builds its model
// from the config, cuts its data into batches, computes the loss and exports. The Trainer
// sees only this interface.
#include <torch/torch.h>

#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/config.h"
#include "train/metrics.h"

namespace nlpzoo {

struct SearchOptions;  // infer/search.h
// The capabilities a task may offer the CLI (train/tasks/*.h): asked for through Task's
// accessors, which return nullptr when the task does not offer one.
class TranslationModel;
class TextGenerator;
class SentenceClassifier;
class WordVectorSource;
class MaskFiller;

enum class Split { kTrain, kValid, kTest };
std::string to_string(Split split);
/// "train" | "valid" | "test" (also "dev" for valid); throws UserError otherwise.
Split parse_split(const std::string& name);

/// Throws UserError("the <split> split was not loaded (no --data-dir?)"): a task asked for a
/// split that its setup did not read.
[[noreturn]] void throw_split_not_loaded(Split split);

/// by_split.at(split) for a task's per-split data (a map keyed by Split), or the UserError of
/// throw_split_not_loaded when the task did not read that split.
template <class SplitMap>
const typename SplitMap::mapped_type& loaded_split(const SplitMap& by_split, Split split) {
  auto it = by_split.find(split);
  if (it == by_split.end()) throw_split_not_loaded(split);
  return it->second;
}

/// One batch: named tensors (task-specific) on CPU or on the device.
struct Batch {
  std::map<std::string, torch::Tensor> tensors;
  int64_t num_examples = 0;
  int64_t num_tokens = 0;  // units the loss is summed over (Task::TrainingProfile::unit; per-unit loss, units/s)
  // Where the batch comes from (make_batch's arguments), for a loss that depends on it (a
  // language model's carried TBPTT state) without a tensor read back from the device.
  Split split = Split::kTrain;
  int64_t index = 0;

  Batch to(const torch::Device& device) const;
};

struct LossOutput {
  torch::Tensor loss_sum;  // scalar float: summed over the batch's num_tokens tokens
  int64_t num_tokens = 0;
  /// Optional validation statistics: quantities summed over the batch, as tensors on the
  /// batch's device, each name with one shape in every batch of a split: mostly scalars (e.g.
  /// "accuracy": 1 per correct prediction), or e.g. a [C, C] confusion matrix, or an [N] vector
  /// holding each example's prediction at its index in the split (zeros elsewhere), so that
  /// sums over batches and over data-parallel shards stay exact. evaluate_loss sums each over
  /// the split and turns the sums into scores with Task::validation_metrics.
  std::map<std::string, torch::Tensor> metric_sums{};
};

/// Where a task finds its inputs and keeps what it makes (tokenizer models).
struct TaskContext {
  std::string data_dir;     // corpus folder given by --data-dir (may be empty on load)
  std::string run_dir;      // the run folder ("" when rebuilding from a checkpoint alone)
  std::set<Split> splits;   // the splits to read from data_dir (none: build the model only)
  bool resume = false;      // continuing a run: reuse what it made (tokenizers) instead of remaking it
};

/// How Task::evaluate scores a split.
struct EvaluationOptions {
  torch::Device device = torch::kCPU;  // where the model is (load_run moved it there)
  int64_t batch_size = 32;             // sentences decoded or classified together
  bool decode = true;                  // false: the loss-based scores only (no decoding, no BLEU)
  const SearchOptions* search = nullptr;  // how to decode; null = SearchOptions{} with the run's length_penalty
  std::string output_prefix;  // tasks that decode write their outputs to "<prefix>.<what>.txt"; "" = nowhere
  int64_t max_decoded = 0;    // decode (BLEU) only the split's first N sentences; 0 = all (loss scores: all)
};

class Task {
 public:
  virtual ~Task() = default;

  /// Reads context.splits and builds the model for `config`. May fill derived keys into
  /// `config` (e.g. vocabulary sizes) so that the resolved config alone rebuilds the model.
  /// Throws UserError for a bad config value (before any slow work) and for a missing or
  /// malformed corpus.
  virtual void setup(Config& config, const TaskContext& context) = 0;

  virtual std::shared_ptr<torch::nn::Module> model() = 0;

  /// Batches of `split` in `epoch`: a deterministic plan (shuffled by seed and epoch for
  /// train). num_batches and make_batch run on one thread at a time (a prefetch thread; the
  /// Trainer pauses its training prefetcher while it validates), each split's batches in index
  /// order; they may run while loss() runs on the main thread, so they must not touch state
  /// that loss() changes.
  virtual int64_t num_batches(Split split, int64_t epoch) = 0;
  virtual Batch make_batch(Split split, int64_t epoch, int64_t index) = 0;

  /// Summed loss of a batch already on the model's device.
  virtual LossOutput loss(const Batch& batch) = 0;

  /// How the Trainer turns the summed loss's gradient into an update. kMean (the default)
  /// divides it by the update's num_tokens, a per-token mean. kSum steps with the sum itself,
  /// as per-example SGD does: word2vec applies the full rate to every pair's gradient
  /// (Mikolov et al. 2013), so its rate (0.025) means the same for any batch size.
  enum class GradientReduction { kMean, kSum };
  virtual GradientReduction gradient_reduction() const { return GradientReduction::kMean; }

  /// Optional: a task that updates its parameters itself, in place, instead of returning a loss
  /// for autograd (word2vec's per-example SGD, models/embeddings/word2vec_sgd.h). When
  /// updates_in_place() is true, the Trainer calls train_in_place(batch, lr) for each training
  /// batch with the schedule's rate for the update and skips zero_grad, backward, gradient
  /// reduction, clipping and the optimizer step; the rest (schedule, logging, validation with
  /// loss(), checkpoints, resume, Ctrl-C) is unchanged. train_in_place returns the batch's summed
  /// loss as loss() would (computed before or during the updates, without a graph).
  virtual bool updates_in_place() const { return false; }
  virtual LossOutput train_in_place(const Batch& batch, double lr) {
    throw std::logic_error("Task::train_in_place called on a task that does not update in place");
  }

  /// Whether loss() carries state from one batch of a split to the next (a language model's
  /// TBPTT state): data-parallel training, whose ranks each take every N-th batch, refuses it.
  virtual bool carries_state_across_batches() const { return false; }

  /// What the Trainer needs to know of a task beyond batches and losses: the unit its
  /// Batch::num_tokens counts and which statistics mean something (progress line, ETA,
  /// metrics.jsonl), and what its model and update rule ask of the Trainer's keys. Valid after setup.
  struct TrainingProfile {
    std::string unit = "tokens";  // what num_tokens counts: tokens, words, sentences, entries
    bool perplexity = true;       // exp(loss per unit) is a perplexity (language-model-like losses)
    std::string loss_unit = "nats/token";  // how evaluate prints the loss per unit
    int64_t d_model = 0;          // the model width the noam schedule scales by (0: none)
    // The optimizers the task's updates work with (empty: any), with momentum = weight_decay = 0,
    // and why (naming the task's key), for the error the Trainer gives otherwise.
    std::vector<std::string> optimizers;
    std::string optimizers_reason;
    // Parameters (names in model()->named_parameters()) that weight_decay must not touch: the
    // optimizer puts them in a second parameter group with weight_decay 0 (BERT's
    // exclude_from_weight_decay: biases and LayerNorm weights). Empty: one group, as before.
    std::vector<std::string> no_weight_decay;
    // The validation scores (validation_metrics' names) that may choose checkpoint_best.pt and
    // count patience (config key best_metric), with the way each improves (kHigher or kLower);
    // "loss" (lower) is always one. `best_metric`: the one best_metric = auto chooses.
    std::vector<std::pair<std::string, Better>> selection_metrics;
    std::string best_metric = "loss";
  };
  virtual TrainingProfile training_profile() const { return {}; }

  /// The validation scores of a split from its LossOutput::metric_sums summed over the split
  /// (float64 CPU tensors of the batches' shapes) and its number of examples (>= 1). The
  /// default: each scalar sum divided by `examples` (a mean of per-example quantities, e.g.
  /// accuracy); a task whose scores are not such means (macro-F1 or MCC from a confusion
  /// matrix, Pearson's r from predictions) overrides it. Throws std::logic_error for a
  /// non-scalar sum in the default.
  virtual std::map<std::string, double> validation_metrics(const std::map<std::string, torch::Tensor>& sums,
                                                           int64_t examples) const;

  /// Blobs stored in every checkpoint beside the parameters (e.g. tokenizer models), so a
  /// checkpoint alone can rebuild and use its model. restore_artifacts is called before setup
  /// when a checkpoint rebuilds its model (load_run), and after setup when the Trainer resumes.
  virtual std::map<std::string, std::string> artifacts() const { return {}; }
  virtual void restore_artifacts(const std::map<std::string, std::string>& blobs) {}

  // ---- What a trained run offers the CLI (ARCHITECTURE.md: capabilities, not casts). ----

  /// Scores of `split` (read by setup) for the model as it is (load_run leaves it in eval mode
  /// on options.device): "loss" and the count it is averaged over, then the task's own scores
  /// (perplexity, BLEU, accuracy, ...). The default: "loss" (nats per Batch::num_tokens unit)
  /// and "tokens". Throws UserError for a split the task has not got or did not read.
  virtual Metrics evaluate(Split split, const EvaluationOptions& options);
  /// The split `nlpzoo evaluate` scores when none is named: test, or valid for a task without
  /// a test split.
  virtual Split default_evaluation_split() const { return Split::kTest; }

  /// Writes the model's scripted twin (ARCHITECTURE.md, "TorchScript export") to `path`
  /// atomically, with `config_ini` as the extra file "config.ini" and the task's own files
  /// (tokenizers, labels) beside it. Returns the names of the extra files stored. Throws
  /// UserError if the task has no TorchScript export (the default) or `path` cannot be written.
  virtual std::vector<std::string> export_torchscript(const std::string& path, const std::string& config_ini);

  /// The capabilities: this task as the interface a command needs, or nullptr if it has not got it.
  virtual TranslationModel* translation_model() { return nullptr; }       // nlpzoo translate
  virtual TextGenerator* text_generator() { return nullptr; }             // nlpzoo generate
  virtual SentenceClassifier* sentence_classifier() { return nullptr; }   // nlpzoo classify
  virtual const WordVectorSource* word_vector_source() const { return nullptr; }  // nlpzoo embed
  virtual MaskFiller* mask_filler() { return nullptr; }                   // nlpzoo fill-mask
};

}  // namespace nlpzoo
