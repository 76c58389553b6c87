#include "datasets/word_vectors.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <stdexcept>
#include <unordered_set>

#include "core/io.h"

// The binary format stores little-endian floats; they are copied byte for byte.
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "word2vec binary I/O assumes a little-endian host"
#endif

namespace nlpzoo {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f'; }

std::vector<std::string> split_fields(const std::string& line) {
  std::vector<std::string> fields;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && is_space(line[i])) ++i;
    size_t j = i;
    while (j < line.size() && !is_space(line[j])) ++j;
    if (j > i) fields.push_back(line.substr(i, j - i));
    i = j;
  }
  return fields;
}

// std::from_chars is locale-independent (strtof is not) but rejects a leading '+'.
bool parse_float(const std::string& text, float& value) {
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  if (begin != end && *begin == '+') ++begin;
  auto [ptr, ec] = std::from_chars(begin, end, value);
  return ec == std::errc() && ptr == end && begin != end;
}

bool parse_count(const std::string& text, int64_t& value) {
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && ptr == text.data() + text.size() && value > 0;
}

// Bytes from the read position to the end of `in`, which stays where it was.
int64_t bytes_left(std::istream& in) {
  const auto here = in.tellg();
  in.seekg(0, std::ios::end);
  const auto bytes = static_cast<int64_t>(in.tellg() - here);
  in.seekg(here);
  return bytes;
}

// Reads the header line; leaves `in` at the first byte after its '\n'.
WordVectorsHeader read_header(std::istream& in, const std::string& path) {
  std::string line;
  if (!std::getline(in, line)) throw UserError(path + ":1: empty file (expected a header line 'N D')");
  strip_utf8_bom(line);
  const auto fields = split_fields(line);
  WordVectorsHeader h;
  if (fields.size() != 2 || !parse_count(fields[0], h.count) || !parse_count(fields[1], h.dim))
    throw UserError(path + ":1: expected a header 'N D' (word count and dimension, positive integers), found '" +
                    line.substr(0, 80) + "'");
  // D sizes every row: a dimension no record of this file can have (at least a 1-byte word and
  // D one-character values each after a space: 2*D+1 bytes) is refused before anything is allocated.
  const int64_t bytes = bytes_left(in);
  if (bytes == 0)
    throw UserError(path + ": the header (line 1) counts " + fields[0] + " vectors but the file holds 0");
  if (h.dim > bytes / 2)
    throw UserError(path + ":1: the header's dimension " + fields[1] + " is more than the " + std::to_string(bytes) +
                    " bytes after it can hold (a vector takes at least 2*D+1 bytes); the header or the file is wrong");
  return h;
}

// The first vector of a word wins, as in gensim's load_word2vec_format; a later one is
// dropped with one warning per file, so that no query lists the word twice.
class RepeatedWords {
 public:
  explicit RepeatedWords(const std::string& path) : path_(path) {}
  bool first_time(const std::string& word, const std::string& where) {
    if (seen_.insert(word).second) return true;
    if (repeats_++ == 0) first_ = where + ": '" + word.substr(0, 80) + "'";
    return false;
  }
  ~RepeatedWords() {
    if (repeats_ > 0)
      std::cerr << "warning: " << first_ << " appears again; the first vector of a word is kept (" << repeats_
                << " repeated word(s) dropped from " << path_ << ")" << std::endl;
  }

 private:
  std::string path_, first_;
  std::unordered_set<std::string> seen_;
  int64_t repeats_ = 0;
};

// A text record is D+1 fields of which the last D are numbers; a binary record's raw float
// bytes almost never are, and almost always contain control bytes (0.0f alone is four NULs).
bool looks_binary(const std::string& probe, int64_t dim) {
  const std::string first_line = probe.substr(0, probe.find('\n'));
  const auto fields = split_fields(first_line);
  if (static_cast<int64_t>(fields.size()) == dim + 1) {
    bool numbers = true;
    float v;
    for (size_t i = 1; i < fields.size() && numbers; ++i) numbers = parse_float(fields[i], v);
    if (numbers) return false;
  }
  const size_t space = probe.find(' ');
  if (space == std::string::npos) return false;
  for (size_t i = space + 1; i < probe.size(); ++i) {
    const auto c = static_cast<unsigned char>(probe[i]);
    if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f) return true;
  }
  return false;
}

// The rows to allocate for the header's count: no more than the rest of the file can hold, so a
// header claiming 2^63 words is reported as a count mismatch instead of failing to allocate.
int64_t row_capacity(std::istream& in, const WordVectorsHeader& h) {
  return std::min(h.count, bytes_left(in) / (2 * h.dim + 1));
}

WordVectors read_text(std::istream& in, const std::string& path, const WordVectorsHeader& h) {
  std::vector<std::string> words;
  const int64_t capacity = row_capacity(in, h);
  words.reserve(capacity);
  auto vectors = torch::empty({capacity, h.dim}, torch::kFloat32);
  float* out = vectors.data_ptr<float>();
  RepeatedWords repeated(path);
  int64_t records = 0;
  std::string line;
  int64_t line_no = 1;
  while (std::getline(in, line)) {
    ++line_no;
    const auto fields = split_fields(line);
    if (fields.empty()) continue;  // a stray blank line carries no vector
    if (records++ == h.count || static_cast<int64_t>(words.size()) == capacity)
      throw UserError(path + ":" + std::to_string(line_no) + ": more vectors than the header's count (" +
                      std::to_string(h.count) + ")");
    if (static_cast<int64_t>(fields.size()) != h.dim + 1)
      throw UserError(path + ":" + std::to_string(line_no) + ": expected a word and " + std::to_string(h.dim) +
                      " values (the header's dimension), found " + std::to_string(fields.size() - 1) + " values");
    float* row = out + words.size() * h.dim;
    for (int64_t d = 0; d < h.dim; ++d)
      if (!parse_float(fields[d + 1], row[d]))
        throw UserError(path + ":" + std::to_string(line_no) + ": value " + std::to_string(d + 1) + " ('" +
                        fields[d + 1].substr(0, 40) + "') is not a number");
    if (repeated.first_time(fields[0], path + ":" + std::to_string(line_no))) words.push_back(fields[0]);
  }
  if (in.bad()) throw UserError(path + ": read error");
  if (records != h.count)
    throw UserError(path + ": the header (line 1) counts " + std::to_string(h.count) + " vectors but the file holds " +
                    std::to_string(records));
  const auto kept = static_cast<int64_t>(words.size());
  return WordVectors(std::move(words), vectors.narrow(0, 0, kept));
}

WordVectors read_binary(std::istream& in, const std::string& path, const WordVectorsHeader& h) {
  std::vector<std::string> words;
  const int64_t capacity = row_capacity(in, h);
  words.reserve(capacity);
  auto vectors = torch::empty({capacity, h.dim}, torch::kFloat32);
  char* out = reinterpret_cast<char*>(vectors.data_ptr<float>());
  const std::streamsize row_bytes = h.dim * static_cast<std::streamsize>(sizeof(float));
  constexpr size_t kLongestWord = 10000;  // word2vec.c's own limit is 100 bytes
  RepeatedWords repeated(path);
  for (int64_t i = 0; i < h.count; ++i) {
    const std::string where = path + ": word " + std::to_string(i + 1) + " of " + std::to_string(h.count);
    std::string word;
    int c = in.get();
    while (c == '\n' || c == '\r') c = in.get();  // the newline word2vec.c writes after a vector
    while (c != EOF && c != ' ') {
      word.push_back(static_cast<char>(c));
      if (word.size() > kLongestWord) throw UserError(where + ": no space after " + std::to_string(kLongestWord) +
                                                      " bytes (not a word2vec binary file?)");
      c = in.get();
    }
    if (c == EOF) throw UserError(where + ": the file ends here (truncated binary file?)");
    if (word.empty()) throw UserError(where + ": empty word");
    if (!in.read(out + static_cast<int64_t>(words.size()) * row_bytes, row_bytes))
      throw UserError(where + " ('" + word + "'): the file ends inside its vector (truncated binary file?)");
    if (repeated.first_time(word, path + ": word " + std::to_string(i + 1))) words.push_back(std::move(word));
  }
  for (int c = in.get(); c != EOF; c = in.get())
    if (!is_space(static_cast<char>(c)))
      throw UserError(path + ": more data after the " + std::to_string(h.count) + " vectors the header counts");
  const auto kept = static_cast<int64_t>(words.size());
  return WordVectors(std::move(words), vectors.narrow(0, 0, kept));
}

std::string format_float(float v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(v));
  return buf;
}

}  // namespace

WordVectors::WordVectors(std::vector<std::string> words, torch::Tensor vectors)
    : words_(std::move(words)), vectors_(std::move(vectors)) {
  if (!vectors_.defined() || vectors_.dim() != 2 || vectors_.scalar_type() != torch::kFloat32 ||
      vectors_.size(0) != static_cast<int64_t>(words_.size()))
    throw std::invalid_argument("WordVectors: vectors must be [N, D] float32 with N = " +
                                std::to_string(words_.size()) + " words");
  vectors_ = vectors_.to(torch::kCPU).contiguous();
  index_.reserve(words_.size());
  for (size_t i = 0; i < words_.size(); ++i) index_.emplace(words_[i], static_cast<int64_t>(i));
}

int64_t WordVectors::find(const std::string& word) const {
  const auto it = index_.find(word);
  return it == index_.end() ? -1 : it->second;
}

WordVectorsHeader read_word_vectors_header(const std::string& path) {
  require_file(path, "word vectors");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(path + ": cannot open for reading");
  return read_header(in, path);
}

WordVectors read_word_vectors(const std::string& path) {
  require_file(path, "word vectors");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(path + ": cannot open for reading");
  const auto header = read_header(in, path);
  const auto body = in.tellg();
  std::string probe(static_cast<size_t>(4 * header.dim + 4096), '\0');
  in.read(probe.data(), static_cast<std::streamsize>(probe.size()));
  probe.resize(static_cast<size_t>(in.gcount()));
  in.clear();
  in.seekg(body);
  return looks_binary(probe, header.dim) ? read_binary(in, path, header) : read_text(in, path, header);
}

void write_word_vectors(const std::string& path, const WordVectors& wv, bool binary) {
  for (int64_t i = 0; i < wv.size(); ++i) {
    const auto& w = wv.words()[i];
    if (w.empty() || std::any_of(w.begin(), w.end(), is_space))
      throw UserError(path + ": word " + std::to_string(i + 1) + " ('" + w +
                      "') is empty or contains whitespace, which the word2vec format cannot hold");
  }
  atomic_write(path, [&](const std::string& tmp) {
    std::ofstream out(tmp, std::ios::binary);
    if (!out) throw UserError(path + ": cannot open for writing");
    const int64_t D = wv.dim();
    out << wv.size() << " " << D << "\n";
    const float* data = wv.size() > 0 ? wv.vectors().data_ptr<float>() : nullptr;
    for (int64_t i = 0; i < wv.size(); ++i) {
      const float* row = data + i * D;
      out << wv.words()[i];
      if (binary) {
        out << ' ';
        out.write(reinterpret_cast<const char*>(row), D * static_cast<std::streamsize>(sizeof(float)));
      } else {
        for (int64_t d = 0; d < D; ++d) out << ' ' << format_float(row[d]);
      }
      out << '\n';
    }
    out.flush();
    if (!out) throw UserError(path + ": write failed (disk full?)");
  });
}

int64_t copy_vectors_into_rows(const WordVectors& vectors, const std::vector<std::string>& names,
                               torch::Tensor weight) {
  if (weight.dim() != 2 || weight.size(0) < static_cast<int64_t>(names.size()) || weight.size(1) != vectors.dim())
    throw std::invalid_argument("copy_vectors_into_rows: weight must be [V >= " + std::to_string(names.size()) +
                                ", " + std::to_string(vectors.dim()) + "]");
  static const std::string kWordStart = "\xE2\x96\x81";  // "▁"
  std::vector<int64_t> rows, sources;
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i].empty()) continue;
    std::string bare = names[i].rfind(kWordStart, 0) == 0 ? names[i].substr(kWordStart.size()) : names[i];
    std::string lower = bare;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (const std::string& candidate : {names[i], bare, lower}) {
      if (candidate.empty()) continue;
      const int64_t row = vectors.find(candidate);
      if (row >= 0) {
        rows.push_back(static_cast<int64_t>(i));
        sources.push_back(row);
        break;
      }
    }
  }
  if (rows.empty()) return 0;
  torch::NoGradGuard no_grad;
  auto index = torch::tensor(rows, torch::kInt64).to(weight.device());
  auto values = vectors.vectors().index_select(0, torch::tensor(sources, torch::kInt64));
  weight.index_copy_(0, index, values.to(weight.device(), weight.scalar_type()));
  return static_cast<int64_t>(rows.size());
}

}  // namespace nlpzoo
