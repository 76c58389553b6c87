#pragma once
// ELMo features for a task (Peters et al. 2018, sec. 3.3): `elmo = RUN_DIR` names a bilm run
// (train/tasks/bilm_task.h) whose biLM, frozen, feeds a classifier's recurrent stack beside its
// own embeddings (models/classifier/rnn_classifier.h). The run lends its tokenizer (the task's
// pieces are the biLM's) and its text form (normalize_words); its sizes are copied into the
// task's config (elmo_embed_dim, elmo_hidden_size, elmo_num_layers) and its weights into the
// model once, when a run starts, so the classifier's checkpoints hold all they need and
// RUN_DIR is never read again (--resume, evaluate, classify, export).
#include <map>
#include <optional>
#include <string>

#include "core/config.h"
#include "core/options.h"
#include "models/rnn/bilm.h"

namespace nlpzoo {

struct ElmoKeys {
  std::string elmo;  // a bilm run folder; "" = no ELMo features
  int64_t elmo_embed_dim = 0, elmo_hidden_size = 0, elmo_num_layers = 0;  // the run's (0 until a run starts)
  void bind(OptionBinder& b);
  /// The biLM's options over `vocab_size` pieces, or none without `elmo`. Throws UserError when
  /// `elmo` is set and the sizes are not (a config written by hand instead of by a run).
  std::optional<BiLanguageModelOptions> bilm_options(int64_t vocab_size) const;
};

/// What a starting run takes from the bilm run.
struct ElmoRun {
  std::string checkpoint;  // <dir>/checkpoint_last.pt
  std::string spm_model;   // its SentencePiece model (bytes)
  int64_t step = 0;        // updates it made
  std::map<std::string, torch::Tensor> tensors;  // its biLM's parameters, "elmo.bilm.<name>"
};

/// Reads the bilm run folder that config key 'elmo' names (with the checkpoint loader: nothing in
/// the file runs), writes its sizes into `config`'s elmo_* keys and, when normalize_words is
/// auto, the run's text form. With `with_weights` false, only that (a data-parallel rank
/// starting beside rank 0, which broadcasts the loaded weights). Throws UserError naming the key
/// and folder when it holds no checkpoint or is a run of another task.
ElmoRun read_elmo_run(const std::string& dir, Config& config, bool with_weights = true);

}  // namespace nlpzoo
