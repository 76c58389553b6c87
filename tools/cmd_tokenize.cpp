// nlpzoo tokenize train|encode|decode: SentencePiece models with nlpzoo's special ids.
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "core/io.h"
#include "datasets/tokenizer.h"
#include "tools/command.h"
#include "tools/options.h"

namespace nlpzoo::cli {
namespace {

int run_tokenize_train(const std::vector<std::string>& args) {
  const TokenizerTrainOptions defaults;
  po::options_description desc("Options");
  desc.add_options()
      ("input", po::value<std::vector<std::string>>()->required()->composing(),
       "training text, one sentence per line; repeat for several files (required)")
      ("model-prefix", po::value<std::string>()->required(),
       "writes PREFIX.model and PREFIX.vocab (required)")
      ("vocab-size", po::value<int64_t>()->default_value(defaults.vocab_size),
       "number of pieces, including <pad> <unk> <s> </s> (ids 0-3)")
      ("model-type", po::value<std::string>()->default_value(defaults.model_type),
       "unigram, bpe, word or char")
      ("character-coverage",
       po::value<double>()->default_value(defaults.character_coverage, "1.0"),
       "fraction of characters the pieces must cover; rarer ones become <unk> "
       "(0.9995 suits large alphabets)")
      ("soft-vocab-limit", po::bool_switch(),
       "treat --vocab-size as an upper bound instead of an exact size (for small corpora; "
       "default: off)")
      ("input-sentence-size",
       po::value<int64_t>()->default_value(defaults.input_sentence_size),
       "train on the first N non-empty lines only (0: all; otherwise more than 100)");
  auto vm = parse_args(args, desc,
                       "tokenize train --input FILE [--input FILE ...] --model-prefix PREFIX "
                       "[OPTIONS]");
  if (!vm) return 0;
  TokenizerTrainOptions o;
  o.inputs = (*vm)["input"].as<std::vector<std::string>>();
  o.model_prefix = (*vm)["model-prefix"].as<std::string>();
  o.vocab_size = (*vm)["vocab-size"].as<int64_t>();
  o.model_type = (*vm)["model-type"].as<std::string>();
  o.character_coverage = (*vm)["character-coverage"].as<double>();
  o.hard_vocab_limit = !(*vm)["soft-vocab-limit"].as<bool>();
  o.input_sentence_size = (*vm)["input-sentence-size"].as<int64_t>();
  Tokenizer::train(o);
  const Tokenizer tok = Tokenizer::load(o.model_prefix + ".model");
  std::cout << "Wrote " << o.model_prefix << ".model and " << o.model_prefix << ".vocab ("
            << o.model_type << ", " << tok.vocab_size() << " pieces)\n";
  return 0;
}

po::options_description model_option() {
  po::options_description desc("Options");
  desc.add_options()("model", po::value<std::string>()->required(),
                     "SentencePiece model, PREFIX.model from nlpzoo tokenize train (required)");
  return desc;
}

// A piece may hold a control byte of the input (a NUL, a tab): printed raw it would split or
// hide the piece, so it is written as SentencePiece writes byte pieces, <0xNN>.
std::string printable_piece(const std::string& piece) {
  std::string out;
  for (const char ch : piece) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "<0x%02X>", c);
      out += buf;
    } else {
      out += ch;
    }
  }
  return out;
}

int run_tokenize_encode(const std::vector<std::string>& args) {
  auto desc = model_option();
  desc.add_options()("pieces", po::bool_switch(),
                     "print pieces instead of ids (default: off, print ids); a control byte inside a piece "
                     "is printed as <0xNN>");
  auto vm = parse_args(args, desc, "tokenize encode --model PREFIX.model [--pieces] < TEXT");
  if (!vm) return 0;
  const Tokenizer tok = Tokenizer::load((*vm)["model"].as<std::string>());
  const bool pieces = (*vm)["pieces"].as<bool>();
  std::string out;
  for (const auto& line : read_stdin_lines()) {
    if (pieces) {
      const auto ps = tok.encode_pieces(line);
      for (size_t i = 0; i < ps.size(); ++i) out += (i ? " " : "") + printable_piece(ps[i]);
    } else {
      const auto ids = tok.encode(line);
      for (size_t i = 0; i < ids.size(); ++i) out += (i ? " " : "") + std::to_string(ids[i]);
    }
    out += '\n';
  }
  std::cout << out << std::flush;
  return 0;
}

// Parses one line of space-separated ids; throws UserError naming the line (1-based).
std::vector<int64_t> parse_ids(const std::string& line, size_t line_no, int64_t vocab) {
  std::vector<int64_t> ids;
  for (size_t s = 0; s < line.size();) {
    if (line[s] == ' ' || line[s] == '\t') {
      ++s;
      continue;
    }
    size_t e = line.find_first_of(" \t", s);
    if (e == std::string::npos) e = line.size();
    const std::string tok = line.substr(s, e - s);
    const bool digits = tok.find_first_not_of("0123456789") == std::string::npos;
    if (!digits || tok.size() > 18)
      throw UserError("line " + std::to_string(line_no) + ": '" + tok +
                      "' is not a token id (expected non-negative integers separated by spaces)");
    const int64_t id = std::stoll(tok);
    if (id >= vocab)
      throw UserError("line " + std::to_string(line_no) + ": token id " + tok +
                      " is out of range [0, " + std::to_string(vocab) + ")");
    ids.push_back(id);
    s = e;
  }
  return ids;
}

int run_tokenize_decode(const std::vector<std::string>& args) {
  auto desc = model_option();
  auto vm = parse_args(args, desc, "tokenize decode --model PREFIX.model < IDS");
  if (!vm) return 0;
  const Tokenizer tok = Tokenizer::load((*vm)["model"].as<std::string>());
  // Everything is decoded before anything is printed, so a bad line leaves no partial output.
  std::string out;
  size_t line_no = 0;
  for (const auto& line : read_stdin_lines())
    out += tok.decode(parse_ids(line, ++line_no, tok.vocab_size())) + "\n";
  std::cout << out << std::flush;
  return 0;
}

}  // namespace

NLPZOO_REGISTER_COMMAND(tokenize_train, "tokenize train",
                        "train a SentencePiece model (ids 0-3: <pad> <unk> <s> </s>)",
                        run_tokenize_train);
NLPZOO_REGISTER_COMMAND(tokenize_encode, "tokenize encode",
                        "text lines on stdin to token ids (or --pieces) on stdout",
                        run_tokenize_encode);
NLPZOO_REGISTER_COMMAND(tokenize_decode, "tokenize decode",
                        "token id lines on stdin to text on stdout", run_tokenize_decode);

}  // namespace nlpzoo::cli
