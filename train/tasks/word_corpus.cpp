#include "train/tasks/word_corpus.h"

#include <malloc.h>

#include <filesystem>

#include "core/io.h"
#include "datasets/word2vec_corpus.h"

namespace fs = std::filesystem;

namespace nlpzoo {

void WordCorpusOptions::bind(OptionBinder& b) {
  b.field("min_count", min_count, "words seen fewer times in the train split are dropped from the vocabulary and the text",
          at_least(1));
  b.field("train_file", train_file, "corpus file in data_dir: one sentence per line, words separated by spaces");
}

WordCorpus load_word_corpus(const WordCorpusOptions& o, const TaskContext& context, const std::string& restored_vocab) {
  if (context.splits.count(Split::kTest))
    throw UserError(o.task + " has no test split, only valid (held out by valid_every): evaluate --split valid, or "
                    "score the vectors with nlpzoo embed eval --analogy FILE / --similarity FILE");
  const std::string path = context.data_dir + "/" + o.train_file;
  const std::string vocab_path = context.run_dir.empty() ? "" : context.run_dir + "/vocab.txt";
  const bool vocab_known = !restored_vocab.empty() || (context.resume && !vocab_path.empty() && fs::exists(vocab_path));
  // The file is streamed twice, never held whole (its text was ~60 MB of the English corpus's
  // setup peak): once to count the train split's words, once to encode the splits.
  if (!context.splits.empty() || !vocab_known)
    require_file(path, o.task + " corpus, one sentence per line (make one with: nlpzoo data english --out DIR)");
  const auto split_of = [&](int64_t i) { return held_out_line(i, o.valid_every) ? Split::kValid : Split::kTrain; };

  WordCorpus corpus;
  int64_t num_lines = 0, train_words = 0, train_lines = 0;
  if (!restored_vocab.empty()) {
    corpus.vocab = WordVocabulary::from_text(restored_vocab, "checkpoint artifact 'vocab.txt'");
  } else if (vocab_known) {
    corpus.vocab = WordVocabulary::from_text(read_file(vocab_path), vocab_path);
  } else {
    WordCounter counter;
    for_each_line(path, [&](std::string& line) {
      if (split_of(num_lines++) != Split::kTrain) return;
      counter.add(line);
      ++train_lines;
    });
    train_words = counter.words();
    corpus.vocab = counter.vocabulary(o.min_count);
    if (corpus.vocab.size() == 0)
      throw UserError(path + ": no word occurs min_count=" + std::to_string(o.min_count) + " times in the " +
                      std::to_string(train_lines) + " training lines" +
                      (num_lines == 0 ? " (the file is empty)" : "; lower min_count or use a larger corpus"));
    if (!vocab_path.empty()) {
      fs::create_directories(context.run_dir);
      atomic_write_text(vocab_path, corpus.vocab.to_text());
    }
  }
  // The count's table of every distinct word (192k on the English corpus, ~14 MB) is freed; glibc
  // keeps freed small blocks in the process unless asked to return them.
  malloc_trim(0);
  if (corpus.vocab.size() == 0) throw UserError(o.task + ": the vocabulary is empty");

  if (!context.splits.empty()) {
    for (Split split : context.splits) corpus.lines[split];
    // Known from the count: at most this many ids and lines, reserved so that growing the vectors
    // does not hold two copies at once.
    if (context.splits.count(Split::kTrain)) {
      corpus.lines[Split::kTrain].ids.reserve(train_words);
      corpus.lines[Split::kTrain].offsets.reserve(train_lines + 1);
    }
    num_lines = 0;
    for_each_line(path, [&](std::string& line) {
      auto it = corpus.lines.find(split_of(num_lines++));
      if (it != corpus.lines.end()) it->second.add(line, corpus.vocab);
    });
  }
  for (Split split : context.splits) {
    const auto& lines = corpus.lines[split];
    if (lines.ids.empty())
      throw UserError(path + ": the " + to_string(split) + " split (" +
                      (split == Split::kValid ? "line i with (i+1) % valid_every=" + std::to_string(o.valid_every) + " == 0"
                                              : std::string("the lines not held out")) +
                      ") holds no vocabulary word; the file has " + std::to_string(num_lines) + " lines" +
                      (split == Split::kValid ? "; lower valid_every" : ""));
  }
  return corpus;
}

void restore_vocab_artifact(const std::map<std::string, std::string>& blobs, const WordVocabulary* vocab_in_use,
                            std::string& restored) {
  auto it = blobs.find("vocab.txt");
  if (it == blobs.end()) return;
  if (vocab_in_use == nullptr) {
    restored = it->second;
  } else if (it->second != vocab_in_use->to_text()) {
    throw UserError("checkpoint artifact 'vocab.txt': the checkpoint's vocabulary differs from the run's vocab.txt");
  }
}

}  // namespace nlpzoo
