#include "train/tasks/word_corpus.h"

#include <filesystem>

#include "datasets/io.h"

namespace fs = std::filesystem;

namespace nlpzoo {

WordCorpus load_word_corpus(const WordCorpusOptions& o, const TaskContext& context, const std::string& restored_vocab) {
  if (context.splits.count(Split::kTest))
    throw UserError(o.task + " has no test split, only valid (held out by valid_every): evaluate --split valid, or "
                    "score the vectors with nlpzoo embed eval --analogy FILE / --similarity FILE");
  const std::string path = context.data_dir + "/" + o.train_file;
  const std::string vocab_path = context.run_dir.empty() ? "" : context.run_dir + "/vocab.txt";
  const bool vocab_known = !restored_vocab.empty() || (context.resume && !vocab_path.empty() && fs::exists(vocab_path));
  std::vector<std::string> train_lines, valid_lines;
  int64_t num_lines = 0;
  if (!context.splits.empty() || !vocab_known) {
    require_file(path, o.task + " corpus, one sentence per line (make one with: nlpzoo data english --out DIR)");
    auto lines = read_lines(path);
    num_lines = static_cast<int64_t>(lines.size());
    for (int64_t i = 0; i < num_lines; ++i)
      (held_out_line(i, o.valid_every) ? valid_lines : train_lines).push_back(std::move(lines[i]));
  }

  WordCorpus corpus;
  if (!restored_vocab.empty()) {
    corpus.vocab = WordVocabulary::from_text(restored_vocab, "checkpoint artifact 'vocab.txt'");
  } else if (vocab_known) {
    corpus.vocab = WordVocabulary::from_text(read_file(vocab_path), vocab_path);
  } else {
    corpus.vocab = count_words(train_lines, o.min_count);
    if (corpus.vocab.size() == 0)
      throw UserError(path + ": no word occurs min_count=" + std::to_string(o.min_count) + " times in the " +
                      std::to_string(train_lines.size()) + " training lines" +
                      (num_lines == 0 ? " (the file is empty)" : "; lower min_count or use a larger corpus"));
    if (!vocab_path.empty()) {
      fs::create_directories(context.run_dir);
      atomic_write_text(vocab_path, corpus.vocab.to_text());
    }
  }
  if (corpus.vocab.size() == 0) throw UserError(o.task + ": the vocabulary is empty");

  for (Split split : context.splits) {
    auto& lines = corpus.lines[split];
    for (const auto& line : split == Split::kTrain ? train_lines : valid_lines) lines.add(line, corpus.vocab);
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
