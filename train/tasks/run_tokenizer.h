#pragma once
// The SentencePiece model of a run, shared by every task that reads text: which model a run
// uses when it starts, resumes, or is rebuilt from a checkpoint alone.
#include <functional>
#include <string>
#include <vector>

#include "datasets/tokenizer.h"
#include "core/config.h"
#include "core/options.h"
#include "train/task.h"

namespace nlpzoo {

/// The keys run_tokenizer reads when it trains a model. (The vocabulary size is the task's key:
/// one per language for translation.)
struct TokenizerOptions {
  std::string spm_model_type = "unigram";
  double character_coverage = 1.0;
  std::string spm_normalization = "nmt_nfkc";
  bool spm_add_dummy_prefix = true;
  bool spm_remove_extra_whitespaces = true;
  void bind(OptionBinder& b);
};
ConfigSchema tokenizer_schema();

/// The tokenizer <run_dir>/<stem>.model of a task being set up, in this order:
///   1. `checkpoint_bytes` (not empty): the model stored in the checkpoint being loaded; it wins
///      because the model's embedding rows are its pieces;
///   2. context.resume: <run_dir>/<stem>.model, made when the run started;
///   3. otherwise a new model trained on the files `training_inputs()` returns (called only
///      here, so a task may write them first), with config keys spm_model_type,
///      character_coverage, spm_normalization, spm_add_dummy_prefix and spm_remove_extra_whitespaces; `vocab_size` is an upper bound, so a small corpus gets fewer
///      pieces. A model left by an earlier failed start never stands in for the vocabulary
///      this config asks for. `user_defined_symbols` become pieces 4, 5, ... of a new model
///      (BERT's [CLS] [SEP] [MASK]; empty for the other tasks, whose models stay as they were).
/// Throws UserError with no checkpoint bytes and no run_dir, for a missing model file (named),
/// and for any SentencePiece training failure (missing input file included).
Tokenizer run_tokenizer(const std::string& stem, const std::function<std::vector<std::string>()>& training_inputs,
                        const std::string& checkpoint_bytes, int64_t vocab_size, const Config& config,
                        const TaskContext& context, const std::vector<std::string>& user_defined_symbols = {});

/// <data_dir>/train.<lang> for every lang, each checked to exist (UserError naming the file
/// and `what` it is for).
std::vector<std::string> training_files(const TaskContext& context, const std::vector<std::string>& langs,
                                        const std::string& what);

}  // namespace nlpzoo
