#include "datasets/wordpiece_model.h"

#include <nlohmann/json.hpp>

#include <regex>
#include <sstream>

#include "core/io.h"

namespace nlpzoo {

namespace {
const std::string kMagic = "nlpzoo-wordpiece 1\n";
}

std::vector<int64_t> nlpzoo_row_order(const WordPieceTokenizer& tokenizer, const std::string& where) {
  const int64_t n = tokenizer.vocab_size();
  const auto id_of = [&](const char* token) {
    if (!tokenizer.contains(token)) throw UserError(where + ": the WordPiece vocabulary has no " + std::string(token));
    return tokenizer.token_to_id(token);
  };
  std::vector<int64_t> unused;
  static const std::regex unused_token(R"(\[unused[0-9]+\])");
  for (int64_t id = 0; id < n && unused.size() < 2; ++id)
    if (std::regex_match(tokenizer.id_to_token(id), unused_token)) unused.push_back(id);
  if (unused.size() < 2)
    throw UserError(where + ": the WordPiece vocabulary has fewer than two [unusedN] tokens; nlpzoo gives two of them "
                    "the ids of its <s> and </s> (every BERT vocabulary Google published has ~100)");
  std::vector<int64_t> order = {id_of("[PAD]"), id_of("[UNK]"), unused[0], unused[1],
                                id_of("[CLS]"), id_of("[SEP]"), id_of("[MASK]")};
  std::vector<bool> taken(n, false);
  for (const int64_t id : order) taken[id] = true;
  for (int64_t id = 0; id < n; ++id)
    if (!taken[id]) order.push_back(id);
  // A token written twice in vocab.txt maps to its last line: an earlier line would be a row no
  // text reaches, harmless, but the lines must still be a permutation.
  if (static_cast<int64_t>(order.size()) != n)
    throw UserError(where + ": the WordPiece vocabulary repeats one of [PAD] [UNK] [CLS] [SEP] [MASK]");
  return order;
}

std::string serialize_wordpiece(const WordPieceTokenizer& tokenizer) {
  const auto& o = tokenizer.options();
  nlohmann::json options = {{"lower_case", o.basic.lower_case},
                            {"strip_accents", o.basic.strip_accents},
                            {"split_cjk", o.basic.split_cjk},
                            {"max_input_chars_per_word", o.max_input_chars_per_word}};
  std::string out = kMagic + options.dump() + "\n";
  for (int64_t id = 0; id < tokenizer.vocab_size(); ++id) out += tokenizer.id_to_token(id) + "\n";
  return out;
}

std::map<std::string, std::string> tokenizer_export_files(const Tokenizer& tokenizer) {
  std::map<std::string, std::string> files = {{"spm.model", tokenizer.serialized()}};
  if (!is_wordpiece_bytes(tokenizer.serialized())) return files;
  std::string vocab;
  for (int64_t id = 0; id < tokenizer.vocab_size(); ++id) vocab += tokenizer.id_to_piece(id) + "\n";
  files["vocab.txt"] = vocab;
  return files;
}

bool is_wordpiece_bytes(const std::string& bytes) { return bytes.compare(0, kMagic.size(), kMagic) == 0; }

std::shared_ptr<const WordPieceModel> parse_wordpiece(const std::string& bytes) {
  const std::string where = "WordPiece tokenizer";
  if (!is_wordpiece_bytes(bytes)) throw UserError(where + ": not nlpzoo's WordPiece bytes");
  std::istringstream in(bytes.substr(kMagic.size()));
  std::string header;
  std::getline(in, header);
  WordPieceOptions options;
  try {
    const auto j = nlohmann::json::parse(header);
    options.basic.lower_case = j.at("lower_case").get<bool>();
    options.basic.strip_accents = j.at("strip_accents").get<bool>();
    options.basic.split_cjk = j.at("split_cjk").get<bool>();
    options.max_input_chars_per_word = j.at("max_input_chars_per_word").get<int64_t>();
  } catch (const nlohmann::json::exception& e) {
    throw UserError(where + ": malformed options line (" + std::string(e.what()) + ")");
  }
  std::vector<std::string> vocab;
  for (std::string line; std::getline(in, line);) vocab.push_back(line);
  WordPieceTokenizer tokenizer(std::move(vocab), options, where);
  auto order = nlpzoo_row_order(tokenizer, where);
  std::vector<int64_t> ours(order.size());
  for (size_t i = 0; i < order.size(); ++i) ours[order[i]] = static_cast<int64_t>(i);
  return std::make_shared<const WordPieceModel>(WordPieceModel{std::move(tokenizer), std::move(order), std::move(ours)});
}

}  // namespace nlpzoo
