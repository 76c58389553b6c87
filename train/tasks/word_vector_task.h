#pragma once
// What every word-vector task (word2vec, GloVe, ...) offers the CLI alike: its vectors to
// `nlpzoo embed` (WordVectorSource), their TorchScript export, and evaluate on the split it has.
// A new word-vector task derives from WordVectorTask and implements Task and word_vectors().
#include <string>
#include <vector>

#include "train/task.h"
#include "train/tasks/word_vector_source.h"

namespace nlpzoo {

class WordVectorTask : public Task, public WordVectorSource {
 public:
  /// "loss" per unit on the held-out split and its count. details: the loss says how well the
  /// model fits unseen text, not how good the vectors are, and which command measures that
  /// (nlpzoo embed eval: analogies, similarity). There is no test split (UserError).
  Metrics evaluate(Split split, const EvaluationOptions& options) override;
  /// Word-vector runs hold out a valid split only.
  Split default_evaluation_split() const override { return Split::kValid; }
  /// The vectors' twin (infer/export_word_vectors.h) with config.ini.
  std::vector<std::string> export_torchscript(const std::string& path, const std::string& config_ini) override;
  const WordVectorSource* word_vector_source() const override { return this; }
};

}  // namespace nlpzoo
