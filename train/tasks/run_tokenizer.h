#pragma once
// The SentencePiece model of a run, shared by every task that reads text: which model a run
// uses when it starts, resumes, or is rebuilt from a checkpoint alone.
#include <string>

#include "datasets/tokenizer.h"
#include "train/config.h"
#include "train/task.h"

namespace nlpzoo {

/// The tokenizer of `lang` for a task being set up, in this order:
///   1. `checkpoint_bytes` (not empty): the model stored in the checkpoint being loaded; it wins
///      because the model's embedding rows are its pieces;
///   2. context.resume: <run_dir>/spm.<lang>.model, made when the run started;
///   3. otherwise a new model trained on <data_dir>/train.<lang> into <run_dir>/spm.<lang>.model
///      (config keys spm_model_type and character_coverage; `vocab_size` is an upper bound, so a
///      small corpus gets fewer pieces), so a model left by an earlier failed start never
///      stands in for the vocabulary this config asks for.
/// Throws UserError with no checkpoint bytes and no run_dir, for a missing training file or
/// model file (named), and for any SentencePiece training failure.
Tokenizer run_tokenizer(const std::string& lang, const std::string& checkpoint_bytes, int64_t vocab_size,
                        const Config& config, const TaskContext& context);

}  // namespace nlpzoo
