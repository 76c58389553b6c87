#pragma once
// SentencePiece tokenization: the one way text becomes ids anywhere in nlpzoo.
//
// SentencePiece itself lives in a separately loaded module (libnlpzoo_spm.so, see
// datasets/sentencepiece_shim/), found via $NLPZOO_SPM_SHIM, next to the executable, or in
// the build directory; a missing module is reported as a UserError on first use.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace nlpzoo {

struct TokenizerTrainOptions {
  std::vector<std::string> inputs;      // text files, one sentence per line
  std::string model_prefix;             // writes <prefix>.model and <prefix>.vocab (atomically)
  int64_t vocab_size = 8000;
  std::string model_type = "unigram";   // unigram | bpe | word | char
  double character_coverage = 1.0;
  // SentencePiece's --normalization_rule_name: nmt_nfkc | nfkc | nmt_nfkc_cf | nfkc_cf | identity.
  // The NFKC rules are stored in the model as a ~240 KB table; identity stores none.
  std::string normalization_rule_name = "nmt_nfkc";
  bool hard_vocab_limit = true;         // false: vocab_size is a soft limit (small corpora)
  // SentencePiece's whitespace handling: a "▁" before each line's first word, and runs of spaces
  // collapsed (leading and trailing ones dropped). Both off keep every character of the text
  // as one piece of a char model (nanoGPT's character vocabulary).
  bool add_dummy_prefix = true;
  bool remove_extra_whitespaces = true;
  int64_t input_sentence_size = 0;      // 0 = all sentences
  // Pieces kept whole wherever they occur in text, with ids 4, 5, ... in this order (right after
  // the four special ids; e.g. bert_special_pieces() of datasets/special_ids.h). Empty = none,
  // and the trainer's flags are then exactly as before, so existing models are reproduced byte for byte.
  std::vector<std::string> user_defined_symbols;
};

/// A trained SentencePiece model. Every model nlpzoo trains reserves the special ids of
/// datasets/special_ids.h: 0 "<pad>", 1 "<unk>", 2 "<s>", 3 "</s>". Copies share one
/// underlying model; all methods are const and safe to call from several threads.
/// A model trained with user-defined symbols (TokenizerTrainOptions) has them at ids 4, 5, ...
class Tokenizer {
 public:
  /// Loads `<prefix>.model` from `model_path`. Throws UserError naming the file when it is
  /// missing, unreadable or not a SentencePiece model, or when the SentencePiece module
  /// cannot be loaded.
  static Tokenizer load(const std::string& model_path);

  /// Loads a model from the bytes of a .model file (as kept in checkpoints). Throws
  /// UserError when the bytes are not a SentencePiece model.
  static Tokenizer from_serialized(const std::string& model_bytes);

  /// Trains a model on the non-empty lines of `options.inputs` ('\r' stripped) and writes
  /// `<model_prefix>.model` and `<model_prefix>.vocab` (tab-separated piece and score),
  /// each atomically, creating the prefix's directory if needed. Deterministic: the same
  /// inputs and options give byte-identical files. Throws UserError for a missing input
  /// file, a corpus with no text, an unknown model type, a vocab_size below 5 or larger than
  /// the corpus supports (with hard_vocab_limit), a character_coverage outside (0, 1], an
  /// input_sentence_size from 1 to 100 (SentencePiece's minimum sample is 101), or any
  /// other SentencePiece training failure (its message included). A char model has one
  /// piece per character (plus the four special ones) whatever vocab_size says.
  static void train(const TokenizerTrainOptions& options);

  /// Token ids of `text` (no BOS/EOS added). Throws UserError if SentencePiece rejects it.
  std::vector<int64_t> encode(const std::string& text) const;

  /// The pieces of `text` ("▁" marks a preceding space), one per id of encode(text).
  std::vector<std::string> encode_pieces(const std::string& text) const;

  /// Text of `ids`; pad, BOS and EOS ids are skipped, unknown ids decode to " ⁇ ".
  /// Throws UserError for an id outside [0, vocab_size()).
  std::string decode(const std::vector<int64_t>& ids) const;

  /// The piece of `id`. Throws UserError for an id outside [0, vocab_size()).
  std::string id_to_piece(int64_t id) const;

  /// The id of `piece`, kUnkId if it is not in the vocabulary.
  int64_t piece_to_id(const std::string& piece) const;

  /// Number of pieces, special ones included.
  int64_t vocab_size() const;

  /// The model file's bytes (stored in checkpoints; from_serialized() reads them back).
  const std::string& serialized() const;

 private:
  struct Model;
  explicit Tokenizer(std::shared_ptr<const Model> model);
  std::shared_ptr<const Model> model_;
};

/// A text of several lines as one token stream: each line's pieces, then EOS for its line
/// break (a last line without one gets none; "\r" before a break is dropped). How a text-file
/// language model reads its corpus and its prompts.
std::vector<int64_t> encode_lines(const Tokenizer& tokenizer, const std::string& text);

/// The inverse: each EOS a line break, the pieces between decoded.
std::string decode_lines(const Tokenizer& tokenizer, const std::vector<int64_t>& ids);

}  // namespace nlpzoo
