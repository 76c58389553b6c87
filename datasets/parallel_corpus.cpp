#include "datasets/parallel_corpus.h"

#include <algorithm>
#include <filesystem>

#include "core/io.h"

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

void require_parallel_corpus(const std::string& data_dir, const std::vector<std::string>& splits,
                             const std::vector<std::string>& langs) {
  namespace fs = std::filesystem;
  std::string expected, missing;
  for (const auto& split : splits)
    for (const auto& lang : langs) {
      const std::string name = split + "." + lang;
      expected += (expected.empty() ? "" : ", ") + name;
      if (missing.empty() && !fs::is_regular_file(fs::path(data_dir) / name)) missing = name;
    }
  if (missing.empty()) return;
  std::string message = (fs::path(data_dir) / missing).string() + ": no such file. A parallel corpus is " +
                        "<data_dir>/<split>.<lang>, one sentence per line, aligned by line, for the splits train, " +
                        "valid and test; this command reads " + expected + ". ";
  std::vector<std::string> held;
  std::error_code error;
  if (fs::is_directory(data_dir, error))
    for (const auto& entry : fs::directory_iterator(data_dir, error))
      if (entry.is_regular_file()) held.push_back(entry.path().filename().string());
  std::sort(held.begin(), held.end());
  if (!fs::is_directory(data_dir, error)) {
    message += data_dir + " is not a folder";
  } else if (held.empty()) {
    message += data_dir + " holds no files";
  } else {
    message += data_dir + " holds:";
    const size_t shown = std::min<size_t>(held.size(), 12);
    for (size_t i = 0; i < shown; ++i) message += " " + held[i];
    if (held.size() > shown) message += " ... (" + std::to_string(held.size()) + " files)";
  }
  throw UserError(message);
}

}  // namespace nlpzoo
