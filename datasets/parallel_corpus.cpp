#include "datasets/parallel_corpus.h"

#include "datasets/io.h"

namespace nlpzoo {

namespace {
std::vector<std::string> read_stripped(const std::string& path) {
  auto lines = read_lines(path);
  // Files edited on Windows keep '\r'; it would otherwise become part of the last token.
  for (auto& line : lines)
    if (!line.empty() && line.back() == '\r') line.pop_back();
  return lines;
}
}  // namespace

ParallelCorpus read_parallel_corpus(const std::string& src_path, const std::string& tgt_path) {
  ParallelCorpus corpus;
  corpus.src = read_stripped(src_path);
  corpus.tgt = read_stripped(tgt_path);
  if (corpus.src.size() != corpus.tgt.size())
    throw UserError("parallel corpus " + src_path + " and " + tgt_path +
                    ": mismatched line counts (" + std::to_string(corpus.src.size()) + " vs " +
                    std::to_string(corpus.tgt.size()) + ")");
  if (corpus.src.empty())
    throw UserError("parallel corpus " + src_path + " and " + tgt_path + ": empty corpus (no lines)");
  return corpus;
}

}  // namespace nlpzoo
