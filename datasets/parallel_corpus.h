#pragma once
// Sentence-aligned bilingual text: line i of the source file translates line i of the target.
#include <string>
#include <vector>

namespace nlpzoo {

struct ParallelCorpus {
  std::vector<std::string> src, tgt;  // same length; src[i] and tgt[i] are translations
};

/// Reads two line-aligned UTF-8 files (one sentence per line, a trailing '\r' stripped).
/// Throws UserError naming the file when either is missing or unreadable, naming both files
/// with "mismatched line counts (N vs M)" when their line counts differ, and naming both
/// when they hold no lines.
ParallelCorpus read_parallel_corpus(const std::string& src_path, const std::string& tgt_path);

/// Checks, before any slow work, that <data_dir>/<split>.<lang> exists for every split in
/// `splits` (train, valid, test) and language in `langs`. Throws UserError naming the first
/// missing file, the file names expected, the split names, and the files data_dir holds.
void require_parallel_corpus(const std::string& data_dir, const std::vector<std::string>& splits,
                             const std::vector<std::string>& langs);

}  // namespace nlpzoo
