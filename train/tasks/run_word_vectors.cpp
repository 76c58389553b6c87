#include "train/tasks/run_word_vectors.h"

#include <memory>

#include "core/io.h"
#include "train/tasks/registry.h"
#include "train/tasks/word_vector_source.h"

namespace nlpzoo {

WordVectors run_word_vectors(const std::string& checkpoint_path, const std::string& source_name, OovVectors* oov) {
  auto loaded = load_run(checkpoint_path, torch::kCPU);
  const auto* source = loaded.task->word_vector_source();
  if (source == nullptr)
    throw UserError(source_name + ": this run trains task '" + loaded.header.task +
                    "', which has no word vectors (train a word-vector model, or pass --vectors FILE)");
  if (oov != nullptr) {
    std::shared_ptr<Task> task = std::move(loaded.task);  // kept alive by the lookup
    *oov = [task, source](const std::string& word) { return source->oov_vector(word); };
  }
  return source->word_vectors();
}

}  // namespace nlpzoo
