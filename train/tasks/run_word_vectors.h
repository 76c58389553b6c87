#pragma once
// The word vectors of a trained run: a checkpoint of any task that offers them
// (Task::word_vector_source), for `nlpzoo embed ... --run-dir RUN`.
#include <string>

#include "datasets/word_vectors.h"
#include "infer/embedding_queries.h"

namespace nlpzoo {

/// The vectors of the run whose checkpoint is `checkpoint_path` (loaded on the CPU). `oov`, when
/// given, receives the run's vectors for words outside the table (it keeps the run alive; it
/// answers std::nullopt for a run that cannot make them). Throws UserError "<source>: this run
/// trains task '<task>', which has no word vectors (...)" for a task without them, and
/// load_run's errors.
WordVectors run_word_vectors(const std::string& checkpoint_path, const std::string& source, OovVectors* oov = nullptr);

}  // namespace nlpzoo
