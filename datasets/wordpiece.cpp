#include "datasets/wordpiece.h"


#include "core/io.h"
#include "core/utf8.h"

namespace nlpzoo {

namespace {
const char* const kUnk = "[UNK]";
// Hugging Face's BertTokenizer special tokens; decode(skip_special) leaves out the first three.
const std::vector<std::string> kSpecials = {"[PAD]", "[CLS]", "[SEP]", "[UNK]", "[MASK]"};
}  // namespace

WordPieceTokenizer::WordPieceTokenizer(std::vector<std::string> vocab, WordPieceOptions options,
                                       const std::string& where)
    : vocab_(std::move(vocab)), options_(options) {
  if (vocab_.empty()) throw UserError(where + ": the WordPiece vocabulary is empty");
  if (options_.max_input_chars_per_word < 1)
    throw UserError(where + ": max_input_chars_per_word must be >= 1");
  for (size_t i = 0; i < vocab_.size(); ++i) ids_[vocab_[i]] = static_cast<int64_t>(i);
  auto unk = ids_.find(kUnk);
  if (unk == ids_.end()) throw UserError(where + ": the WordPiece vocabulary has no [UNK] token");
  unk_id_ = unk->second;
  for (const auto& s : kSpecials)
    if (contains(s)) specials_.push_back(s);
}

WordPieceTokenizer WordPieceTokenizer::load(const std::string& vocab_path, const WordPieceOptions& options) {
  std::vector<std::string> lines = read_lines(vocab_path);
  // Python's text mode (load_vocab) reads "\r\n" as a line end.
  for (auto& line : lines)
    if (!line.empty() && line.back() == '\r') line.pop_back();
  return WordPieceTokenizer(std::move(lines), options, vocab_path);
}

void WordPieceTokenizer::wordpiece(const std::string& word, std::vector<std::string>& out) const {
  // Byte offset of every code point, and the end: lengths and matches count code points.
  std::vector<size_t> at;
  for (size_t i = 0; i < word.size(); i += decode_utf8_at(word, i).length) at.push_back(i);
  const size_t n = at.size();
  at.push_back(word.size());
  if (static_cast<int64_t>(n) > options_.max_input_chars_per_word) {
    out.push_back(kUnk);
    return;
  }
  std::vector<std::string> pieces;
  for (size_t start = 0; start < n;) {
    // The longest piece [start, end) in the vocabulary, "##"-prefixed after the first.
    size_t end = n;
    std::string match;
    for (; end > start; --end) {
      std::string piece = (start > 0 ? "##" : "") + word.substr(at[start], at[end] - at[start]);
      if (contains(piece)) {
        match = std::move(piece);
        break;
      }
    }
    if (end == start) {  // nothing matches here: the whole word is unknown
      out.push_back(kUnk);
      return;
    }
    pieces.push_back(std::move(match));
    start = end;
  }
  out.insert(out.end(), pieces.begin(), pieces.end());
}

std::vector<std::string> WordPieceTokenizer::tokenize(const std::string& text) const {
  std::vector<std::string> out;
  auto words_of = [&](const std::string& segment) {
    for (const auto& word : bert_basic_tokenize(segment, options_.basic)) wordpiece(word, out);
  };
  // Step 1: at each position the longest special token that starts there (Hugging Face's trie).
  size_t segment_start = 0;
  for (size_t i = 0; i < text.size();) {
    const std::string* found = nullptr;
    for (const auto& s : specials_)
      if (text.compare(i, s.size(), s) == 0 && (!found || s.size() > found->size())) found = &s;
    if (!found) {
      ++i;
      continue;
    }
    words_of(text.substr(segment_start, i - segment_start));
    out.push_back(*found);
    i += found->size();
    segment_start = i;
  }
  words_of(text.substr(segment_start));
  return out;
}

std::vector<int64_t> WordPieceTokenizer::encode(const std::string& text) const {
  std::vector<int64_t> ids;
  for (const auto& token : tokenize(text)) ids.push_back(token_to_id(token));
  return ids;
}

std::string WordPieceTokenizer::decode(const std::vector<int64_t>& ids, bool skip_special) const {
  std::string text;
  for (int64_t id : ids) {
    const std::string& token = id_to_token(id);
    if (skip_special && (token == "[PAD]" || token == "[CLS]" || token == "[SEP]")) continue;
    // " ".join(tokens).replace(" ##", ""): a continuation joins the token before it.
    if (!text.empty() && token.rfind("##", 0) == 0) {
      text += token.substr(2);
    } else {
      if (!text.empty()) text += ' ';
      text += token;
    }
  }
  return text;
}

int64_t WordPieceTokenizer::token_to_id(const std::string& token) const {
  auto it = ids_.find(token);
  return it == ids_.end() ? unk_id_ : it->second;
}

const std::string& WordPieceTokenizer::id_to_token(int64_t id) const {
  if (id < 0 || id >= vocab_size())
    throw UserError("token id " + std::to_string(id) + " is outside the WordPiece vocabulary of " +
                    std::to_string(vocab_size()));
  return vocab_[static_cast<size_t>(id)];
}

}  // namespace nlpzoo
