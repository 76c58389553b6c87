#include "datasets/tokenizer.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "core/io.h"
#include "datasets/sentencepiece_shim/spm_shim.h"
#include "datasets/special_ids.h"
#include "datasets/wordpiece_model.h"

namespace nlpzoo {

namespace {

// The shim's entry points, resolved once per process.
struct Shim {
  decltype(&nlpzoo_spm_load) load;
  decltype(&nlpzoo_spm_free) free_model;
  decltype(&nlpzoo_spm_encode_ids) encode_ids;
  decltype(&nlpzoo_spm_encode_pieces) encode_pieces;
  decltype(&nlpzoo_spm_decode_ids) decode_ids;
  decltype(&nlpzoo_spm_vocab_size) vocab_size;
  decltype(&nlpzoo_spm_id_to_piece) id_to_piece;
  decltype(&nlpzoo_spm_piece_to_id) piece_to_id;
  decltype(&nlpzoo_spm_score) score;
  decltype(&nlpzoo_spm_train) train;
  decltype(&nlpzoo_spm_free_buffer) free_buffer;
};

constexpr const char* kShimName = "libnlpzoo_spm.so";

std::vector<std::string> shim_candidates() {
  std::vector<std::string> paths;
  if (const char* env = std::getenv("NLPZOO_SPM_SHIM"); env != nullptr && *env != '\0') {
    paths.push_back(env);
    return paths;  // an explicit choice must not be silently replaced by another copy
  }
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) paths.push_back((exe.parent_path() / kShimName).string());
#ifdef NLPZOO_SPM_SHIM
  paths.push_back(NLPZOO_SPM_SHIM);
#endif
  return paths;
}

template <typename F>
void resolve(void* handle, const char* name, F& fn, const std::string& path) {
  fn = reinterpret_cast<F>(dlsym(handle, name));
  if (fn == nullptr)
    throw UserError(path + ": not an nlpzoo SentencePiece module (symbol " + name +
                    " missing); rebuild nlpzoo");
}

Shim open_shim() {
  std::string tried;
  for (const auto& path : shim_candidates()) {
    // RTLD_LOCAL + RTLD_DEEPBIND: the shim and libsentencepiece resolve protobuf symbols in
    // their own scope first, so torch's protobuf 3.21 and SentencePiece's 3.14 never mix.
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    if (handle == nullptr) {
      const char* err = dlerror();
      tried += "\n  " + path + ": " + (err != nullptr ? err : "dlopen failed");
      continue;
    }
    decltype(&nlpzoo_spm_abi) abi = nullptr;
    resolve(handle, "nlpzoo_spm_abi", abi, path);
    if (abi() != NLPZOO_SPM_ABI)
      throw UserError(path + ": SentencePiece module of another nlpzoo version; rebuild nlpzoo");
    Shim s{};
    resolve(handle, "nlpzoo_spm_load", s.load, path);
    resolve(handle, "nlpzoo_spm_free", s.free_model, path);
    resolve(handle, "nlpzoo_spm_encode_ids", s.encode_ids, path);
    resolve(handle, "nlpzoo_spm_encode_pieces", s.encode_pieces, path);
    resolve(handle, "nlpzoo_spm_decode_ids", s.decode_ids, path);
    resolve(handle, "nlpzoo_spm_vocab_size", s.vocab_size, path);
    resolve(handle, "nlpzoo_spm_id_to_piece", s.id_to_piece, path);
    resolve(handle, "nlpzoo_spm_piece_to_id", s.piece_to_id, path);
    resolve(handle, "nlpzoo_spm_score", s.score, path);
    resolve(handle, "nlpzoo_spm_train", s.train, path);
    resolve(handle, "nlpzoo_spm_free_buffer", s.free_buffer, path);
    return s;  // never dlclose'd: models may outlive any owner we could name
  }
  throw UserError("cannot load the SentencePiece module " + std::string(kShimName) +
                  " (build the nlpzoo_spm target, keep it next to the nlpzoo binary, or set "
                  "NLPZOO_SPM_SHIM to its path; needs libsentencepiece0: sudo apt-get install "
                  "libsentencepiece0). Tried:" + tried);
}

const Shim& shim() {
  // A failed load throws out of the initializer, so the next call tries again.
  static const Shim s = open_shim();
  return s;
}

// Owns a buffer the shim malloc'ed.
struct ShimBuffer {
  void* p = nullptr;
  ~ShimBuffer() {
    if (p != nullptr) shim().free_buffer(p);
  }
};

// Takes ownership of the shim's error message and returns it as a string.
std::string take_error(char* error) {
  ShimBuffer owner{error};
  return error != nullptr ? std::string(error) : std::string("unknown SentencePiece error");
}

int32_t checked_id(int64_t id, int64_t vocab) {
  if (id < 0 || id >= vocab)
    throw UserError("token id " + std::to_string(id) + " is out of range [0, " +
                    std::to_string(vocab) + ")");
  return static_cast<int32_t>(id);
}

std::string format_score(float score) {
  // The default stream format, as spm_train writes its .vocab files.
  std::ostringstream os;
  os << score;
  return os.str();
}

}  // namespace

// One of the two kinds: a SentencePiece model through the shim, or WordPiece (wordpiece not null).
struct Tokenizer::Model {
  nlpzoo_spm* handle = nullptr;
  std::shared_ptr<const WordPieceModel> wordpiece;
  std::string bytes;
  int64_t vocab = 0;
  ~Model() {
    if (handle != nullptr) shim().free_model(handle);
  }
};

Tokenizer::Tokenizer(std::shared_ptr<const Model> model) : model_(std::move(model)) {}

Tokenizer Tokenizer::from_serialized(const std::string& model_bytes) {
  if (is_wordpiece_bytes(model_bytes)) {
    auto model = std::make_shared<Model>();
    model->wordpiece = parse_wordpiece(model_bytes);
    model->bytes = model_bytes;
    model->vocab = model->wordpiece->tokenizer.vocab_size();
    return Tokenizer(std::move(model));
  }
  const Shim& s = shim();
  if (model_bytes.empty()) throw UserError("not a SentencePiece model: no bytes");
  char* error = nullptr;
  nlpzoo_spm* handle = s.load(model_bytes.data(), model_bytes.size(), &error);
  if (handle == nullptr) throw UserError("not a SentencePiece model: " + take_error(error));
  auto model = std::make_shared<Model>();
  model->handle = handle;
  model->bytes = model_bytes;
  model->vocab = s.vocab_size(handle);
  // Everything downstream assumes the fixed special ids; a foreign model would silently
  // pad with a real word, so reject it here.
  const char* expected[] = {"<pad>", "<unk>", "<s>", "</s>"};
  const int64_t special[] = {kPadId, kUnkId, kBosId, kEosId};
  for (int i = 0; i < 4; ++i) {
    const char* piece = special[i] < model->vocab ? s.id_to_piece(handle, special[i]) : nullptr;
    if (piece == nullptr || std::string(piece) != expected[i])
      throw UserError("SentencePiece model does not use nlpzoo's special ids (id " +
                      std::to_string(special[i]) + " must be " + expected[i] + ", found " +
                      (piece != nullptr ? std::string(piece) : std::string("nothing")) +
                      "); train it with nlpzoo tokenize train");
  }
  return Tokenizer(std::move(model));
}

Tokenizer Tokenizer::load(const std::string& model_path) {
  shim();  // a missing module is not the model file's fault: report it unprefixed
  const std::string bytes = read_file(model_path);
  try {
    return from_serialized(bytes);
  } catch (const UserError& e) {
    throw UserError(model_path + ": " + e.what());
  }
}

void Tokenizer::train(const TokenizerTrainOptions& o) {
  if (o.inputs.empty()) throw UserError("tokenizer training: no input files given");
  if (o.model_prefix.empty()) throw UserError("tokenizer training: empty model prefix");
  if (o.model_type != "unigram" && o.model_type != "bpe" && o.model_type != "word" &&
      o.model_type != "char")
    throw UserError("tokenizer training: unknown model type '" + o.model_type +
                    "' (expected unigram, bpe, word or char)");
  // Four ids are reserved for <pad> <unk> <s> </s>; a model needs at least one more.
  if (o.vocab_size < 5)
    throw UserError("tokenizer training: vocab size must be at least 5 (got " +
                    std::to_string(o.vocab_size) + ")");
  if (!(o.character_coverage > 0.0 && o.character_coverage <= 1.0))
    throw UserError("tokenizer training: character coverage must be in (0, 1] (got " +
                    std::to_string(o.character_coverage) + ")");
  // SentencePiece itself rejects samples of 1..100 sentences.
  if (o.input_sentence_size < 0 || (o.input_sentence_size > 0 && o.input_sentence_size <= 100))
    throw UserError("tokenizer training: input sentence size must be 0 (all) or more than 100 "
                    "(got " + std::to_string(o.input_sentence_size) + ")");

  std::vector<std::string> sentences;
  for (const auto& path : o.inputs) {
    for (auto& line : read_lines(path)) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.find_first_not_of(" \t") == std::string::npos) continue;
      sentences.push_back(std::move(line));
    }
  }
  if (sentences.empty()) {
    std::string names;
    for (const auto& p : o.inputs) names += (names.empty() ? "" : ", ") + p;
    throw UserError("tokenizer training: empty corpus (no text in " + names + ")");
  }

  std::ostringstream args;
  args << "--model_type=" << o.model_type << " --vocab_size=" << o.vocab_size
       << " --character_coverage=" << o.character_coverage
       << " --normalization_rule_name=" << o.normalization_rule_name
       << " --hard_vocab_limit=" << (o.hard_vocab_limit ? "true" : "false")
       << " --input_sentence_size=" << o.input_sentence_size
       // Sampling is then "the first N sentences", with no random choice involved.
       << " --shuffle_input_sentence=false"
       << " --pad_id=" << kPadId << " --unk_id=" << kUnkId << " --bos_id=" << kBosId
       << " --eos_id=" << kEosId
       << " --pad_piece=<pad> --unk_piece=<unk> --bos_piece=<s> --eos_piece=</s>"
       << " --num_threads=2 --minloglevel=1";
  // Only when not SentencePiece's defaults, so that existing models are reproduced byte for byte.
  if (!o.add_dummy_prefix) args << " --add_dummy_prefix=false";
  if (!o.remove_extra_whitespaces) args << " --remove_extra_whitespaces=false";
  if (!o.user_defined_symbols.empty()) {
    args << " --user_defined_symbols=";
    for (size_t i = 0; i < o.user_defined_symbols.size(); ++i) {
      const auto& symbol = o.user_defined_symbols[i];
      // The flag is one comma-separated, space-delimited word.
      if (symbol.empty() || symbol.find_first_of(", \t\n") != std::string::npos)
        throw UserError("tokenizer training: user-defined symbol '" + symbol + "' is empty or holds a comma or space");
      args << (i ? "," : "") << symbol;
    }
  }
  // SentencePiece keeps its own 4,192-byte default; longer lines are skipped, not split.
  std::vector<const char*> ptrs;
  std::vector<size_t> lengths;
  ptrs.reserve(sentences.size());
  lengths.reserve(sentences.size());
  for (const auto& line : sentences) {
    ptrs.push_back(line.data());
    lengths.push_back(line.size());
  }

  const Shim& s = shim();
  char* out = nullptr;
  size_t out_len = 0;
  char* error = nullptr;
  if (s.train(args.str().c_str(), ptrs.data(), lengths.data(), ptrs.size(), &out, &out_len,
              &error) != 0) {
    const std::string message = take_error(error);
    std::string hint;
    if (message.find("Vocabulary size") != std::string::npos)
      hint = " (lower the vocab size, or make it a soft limit)";
    throw UserError("tokenizer training on " + std::to_string(sentences.size()) +
                    " lines failed: " + message + hint);
  }
  std::string bytes;
  {
    ShimBuffer owner{out};
    bytes.assign(out, out_len);
  }
  const Tokenizer tok = from_serialized(bytes);

  std::string vocab;
  for (int64_t id = 0; id < tok.vocab_size(); ++id)
    vocab += tok.id_to_piece(id) + "\t" +
             format_score(s.score(tok.model_->handle, static_cast<int32_t>(id))) + "\n";

  const std::filesystem::path prefix(o.model_prefix);
  if (prefix.has_parent_path()) {
    std::error_code ec;
    std::filesystem::create_directories(prefix.parent_path(), ec);
    if (ec)
      throw UserError(prefix.parent_path().string() + ": cannot create directory (" +
                      ec.message() + ")");
  }
  atomic_write_text(o.model_prefix + ".model", bytes);
  atomic_write_text(o.model_prefix + ".vocab", vocab);
}

std::vector<int64_t> Tokenizer::encode(const std::string& text) const {
  if (const auto& wp = model_->wordpiece) {
    auto ids = wp->tokenizer.encode(text);
    for (auto& id : ids) id = wp->our_id[id];
    return ids;
  }
  int32_t* out = nullptr;
  size_t n = 0;
  char* error = nullptr;
  if (shim().encode_ids(model_->handle, text.data(), text.size(), &out, &n, &error) != 0)
    throw UserError("tokenizer: cannot encode text: " + take_error(error));
  ShimBuffer owner{out};
  return std::vector<int64_t>(out, out + n);
}

std::vector<std::string> Tokenizer::encode_pieces(const std::string& text) const {
  if (model_->wordpiece) return model_->wordpiece->tokenizer.tokenize(text);
  char* out = nullptr;
  size_t len = 0, n = 0;
  char* error = nullptr;
  if (shim().encode_pieces(model_->handle, text.data(), text.size(), &out, &len, &n, &error) != 0)
    throw UserError("tokenizer: cannot encode text: " + take_error(error));
  ShimBuffer owner{out};
  std::vector<std::string> pieces;
  pieces.reserve(n);
  for (size_t pos = 0; pos + sizeof(uint64_t) <= len && pieces.size() < n;) {
    uint64_t size = 0;
    std::memcpy(&size, out + pos, sizeof size);
    pos += sizeof size;
    pieces.emplace_back(out + pos, std::min<uint64_t>(size, len - pos));
    pos += pieces.back().size();
  }
  return pieces;
}

std::string Tokenizer::decode(const std::vector<int64_t>& ids) const {
  std::vector<int32_t> kept;
  kept.reserve(ids.size());
  for (const int64_t id : ids) {
    if (id == kPadId || id == kBosId || id == kEosId) continue;
    kept.push_back(checked_id(id, model_->vocab));
  }
  if (const auto& wp = model_->wordpiece) {
    std::vector<int64_t> lines;
    for (const int32_t id : kept) lines.push_back(wp->file_id[id]);
    return wp->tokenizer.decode(lines);
  }
  char* out = nullptr;
  size_t len = 0;
  char* error = nullptr;
  if (shim().decode_ids(model_->handle, kept.data(), kept.size(), &out, &len, &error) != 0)
    throw UserError("tokenizer: cannot decode ids: " + take_error(error));
  ShimBuffer owner{out};
  return std::string(out, len);
}

std::string Tokenizer::id_to_piece(int64_t id) const {
  if (const auto& wp = model_->wordpiece) return wp->tokenizer.id_to_token(wp->file_id[checked_id(id, model_->vocab)]);
  return shim().id_to_piece(model_->handle, checked_id(id, model_->vocab));
}

int64_t Tokenizer::piece_to_id(const std::string& piece) const {
  if (const auto& wp = model_->wordpiece) return wp->tokenizer.contains(piece) ? wp->our_id[wp->tokenizer.token_to_id(piece)] : kUnkId;
  return shim().piece_to_id(model_->handle, piece.data(), piece.size());
}

int64_t Tokenizer::vocab_size() const { return model_->vocab; }

const std::string& Tokenizer::serialized() const { return model_->bytes; }

std::vector<int64_t> encode_lines(const Tokenizer& tokenizer, const std::string& text) {
  std::vector<int64_t> ids;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = text.find('\n', start);
    std::string line = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) {
      const auto pieces = tokenizer.encode(line);
      ids.insert(ids.end(), pieces.begin(), pieces.end());
    }
    if (end == std::string::npos) break;
    ids.push_back(kEosId);
    start = end + 1;
  }
  return ids;
}

std::string decode_lines(const Tokenizer& tokenizer, const std::vector<int64_t>& ids) {
  std::string text;
  auto line_start = ids.begin();
  for (auto it = ids.begin();; ++it) {
    if (it == ids.end() || *it == kEosId) {
      text += tokenizer.decode(std::vector<int64_t>(line_start, it));
      if (it == ids.end()) break;
      text += "\n";
      line_start = it + 1;
    }
  }
  return text;
}

}  // namespace nlpzoo
