#pragma once
// What the word-vector tasks (word2vec, GloVe) share about their corpus: one text file of
// sentences, every valid_every-th line held out, a vocabulary of the train split's words seen
// min_count times kept in <run_dir>/vocab.txt and in every checkpoint (artifact "vocab.txt").
#include <map>
#include <string>

#include "core/options.h"
#include "datasets/word2vec_corpus.h"
#include "train/task.h"

namespace nlpzoo {

struct WordCorpusOptions {
  std::string task;        // names the task in errors ("word2vec", "glove"); not a config key
  std::string train_file = "english.txt";  // file name in context.data_dir
  int64_t min_count = 5;   // >= 1
  int64_t valid_every = 500;  // >= 2: line i (0-based) with (i + 1) % valid_every == 0 is valid
  /// Binds train_file and min_count; valid_every means another split in each task, whose
  /// bind() declares it.
  void bind(OptionBinder& b);
};

struct WordCorpus {
  WordVocabulary vocab;
  std::map<Split, EncodedLines> lines;  // every split of context.splits, as word ids
};

/// The held-out rule of the one-sentence-per-line corpora (word vectors, masked_lm): line i
/// (0-based) is in the valid split when (i + 1) % valid_every == 0, else in the train split.
inline bool held_out_line(int64_t i, int64_t valid_every) { return (i + 1) % valid_every == 0; }

/// The vocabulary and the splits context.splits asks for. The vocabulary is, in this order:
/// `restored_vocab` (a checkpoint's artifact text) if not empty; <run_dir>/vocab.txt when
/// resuming; else counted on the train split and written to <run_dir>/vocab.txt (if run_dir
/// is set). The file is only read when a split is asked for or the vocabulary must be counted,
/// so a checkpoint alone rebuilds a model. Throws UserError naming the file when it is missing,
/// empty, has no word seen min_count times or a split without a vocabulary word, and when the
/// test split is asked for (there is none).
WordCorpus load_word_corpus(const WordCorpusOptions& options, const TaskContext& context,
                            const std::string& restored_vocab);

/// Task::restore_artifacts for a task whose artifact is "vocab.txt": before setup
/// (`vocab_in_use` null) keeps the text in `restored` for setup; after setup it must equal the
/// vocabulary in use (UserError otherwise).
void restore_vocab_artifact(const std::map<std::string, std::string>& blobs, const WordVocabulary* vocab_in_use,
                            std::string& restored);

}  // namespace nlpzoo
