#pragma once
// WordPiece (Wu et al. 2016, sec. 4.1; Devlin et al. 2019, sec. 3), the tokenizer of the
// published BERT checkpoints, as Hugging Face's BertTokenizer runs it:
//   1. the special tokens [PAD] [UNK] [CLS] [SEP] [MASK] (those in the vocabulary) typed anywhere
//      in the text are cut out and kept whole, case-sensitively ("[mask]" is ordinary text)
//   2. the text between them: BERT's basic tokenization (datasets/bert_basic_tokenizer.h)
//   3. each word: greedy longest-match-first over the vocabulary; the word's first piece as
//      is, every later piece with the "##" prefix; a word with more than
//      max_input_chars_per_word code points, or with a position where no piece matches,
//      becomes the one token [UNK]
// The vocabulary is vocab.txt: one token per line, id = line index (0-based).
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "datasets/bert_basic_tokenizer.h"

namespace nlpzoo {

struct WordPieceOptions {
  /// Step 2's options (lower-casing and accent stripping for "uncased" checkpoints).
  BertBasicTokenizerOptions basic;
  /// Longer words (in code points) become [UNK] without being matched.
  int64_t max_input_chars_per_word = 100;
};

class WordPieceTokenizer {
 public:
  /// The tokens of a vocab.txt, in line order ('\n' or "\r\n" line ends, as Python's text mode
  /// reads them). A vocabulary without "[UNK]" is refused (UserError naming `where`), since
  /// step 3 needs it; a repeated token keeps its last id, as Hugging Face's load_vocab.
  WordPieceTokenizer(std::vector<std::string> vocab, WordPieceOptions options, const std::string& where = "vocabulary");

  /// Reads `vocab_path` (vocab.txt). Throws UserError naming the file when it is missing,
  /// unreadable, empty or has no [UNK].
  static WordPieceTokenizer load(const std::string& vocab_path, const WordPieceOptions& options);

  /// The tokens of `text` (UTF-8): steps 1-3.
  std::vector<std::string> tokenize(const std::string& text) const;

  /// Their ids (no [CLS]/[SEP] added).
  std::vector<int64_t> encode(const std::string& text) const;

  /// Tokens joined by spaces with the "##" continuations glued back to their word (Hugging
  /// Face's convert_tokens_to_string); with skip_special, [PAD] [CLS] [SEP] are left out
  /// ([UNK] and [MASK] stand for text and stay). Throws UserError for an id outside the vocabulary.
  std::string decode(const std::vector<int64_t>& ids, bool skip_special = false) const;

  /// The id of `token`, the [UNK] id if it is not in the vocabulary.
  int64_t token_to_id(const std::string& token) const;
  /// The token of `id`. Throws UserError for an id outside [0, vocab_size()).
  const std::string& id_to_token(int64_t id) const;
  /// True when `token` is in the vocabulary.
  bool contains(const std::string& token) const { return ids_.count(token) != 0; }
  int64_t vocab_size() const { return static_cast<int64_t>(vocab_.size()); }
  int64_t unk_id() const { return unk_id_; }
  const WordPieceOptions& options() const { return options_; }

 private:
  // Step 3 on one word of step 2, appending to `out`.
  void wordpiece(const std::string& word, std::vector<std::string>& out) const;

  std::vector<std::string> vocab_;
  std::unordered_map<std::string, int64_t> ids_;
  std::vector<std::string> specials_;  // step 1's tokens that the vocabulary has
  WordPieceOptions options_;
  int64_t unk_id_ = -1;
};

}  // namespace nlpzoo
