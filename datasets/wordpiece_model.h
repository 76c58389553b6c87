#pragma once
// WordPiece as the second model of the one tokenizer pipeline (datasets/tokenizer.h): a published
// BERT vocabulary (vocab.txt) seen under nlpzoo's fixed special ids (datasets/special_ids.h), so
// that every task, batch and loss that works on a SentencePiece model works on it unchanged.
//
// Our ids are a permutation of the vocabulary's lines:
//   0 [PAD]  1 [UNK]  2, 3 the first two [unusedN] tokens (standing for <s> and </s>, which BERT
//   has not; Google's vocabularies reserve ~100 such tokens)  4 [CLS]  5 [SEP]  6 [MASK]
//   7... every other token, in file order.
// A model imported with this vocabulary has its token-embedding rows (and MLM output bias)
// permuted alike (nlpzoo_row_order), which changes no output: only the labels of the rows move.
//
// A checkpoint keeps the tokenizer as bytes (the "spm.model" artifact): for WordPiece a small
// text file, a magic line, the WordPieceOptions as JSON, then vocab.txt's lines in file order.
// Reading it is parsing data; nothing in it runs.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "datasets/tokenizer.h"
#include "datasets/wordpiece.h"

namespace nlpzoo {

struct WordPieceModel {
  WordPieceTokenizer tokenizer;    // ids = vocab.txt lines
  std::vector<int64_t> file_id;    // ours -> vocab.txt line
  std::vector<int64_t> our_id;     // vocab.txt line -> ours
};

/// The vocabulary lines in our id order (see above): row_order[our id] = vocab.txt line. Throws
/// UserError naming `where` when [PAD], [UNK], [CLS], [SEP], [MASK] or two [unusedN] tokens are
/// missing.
std::vector<int64_t> nlpzoo_row_order(const WordPieceTokenizer& tokenizer, const std::string& where);

/// The bytes a checkpoint keeps for `tokenizer` (see above).
std::string serialize_wordpiece(const WordPieceTokenizer& tokenizer);

/// True when `bytes` start with the WordPiece magic line (else they are a SentencePiece model).
bool is_wordpiece_bytes(const std::string& bytes);

/// The files an export ships for a run's tokenizer: "spm.model" (its bytes, as the checkpoint
/// keeps them) and, for WordPiece, "vocab.txt" in our id order, so that Hugging Face's
/// BertTokenizer(vocab_file="vocab.txt") gives the exported model's ids.
std::map<std::string, std::string> tokenizer_export_files(const Tokenizer& tokenizer);

/// The model of serialize_wordpiece's bytes. Throws UserError for malformed bytes or a vocabulary
/// nlpzoo_row_order refuses.
std::shared_ptr<const WordPieceModel> parse_wordpiece(const std::string& bytes);

}  // namespace nlpzoo
