#pragma once
// Word vectors in Mikolov's word2vec formats (word2vec.c, also fastText's .vec and gensim's
// save_word2vec_format), the exchange format for pretrained embeddings:
//   text:   a header line "N D", then N lines "word v1 v2 ... vD" (values separated by spaces;
//           a trailing space, as word2vec.c writes, is allowed);
//   binary: the same header line, then per word "word" + one space + D little-endian float32
//           (4*D bytes), optionally followed by '\n' (word2vec.c writes one).
// Words are whitespace-free byte strings (UTF-8 in practice).
#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace nlpzoo {

/// N words and their vectors. The index from word to row is built once, by the constructor,
/// so the words and vectors are read-only afterwards.
class WordVectors {
 public:
  WordVectors() = default;
  /// words: N distinct-or-not words (the first of duplicates is the one find() returns);
  /// vectors: [N, D] float32 (made contiguous, kept on CPU).
  /// Throws std::invalid_argument if vectors is not 2-D float32 with N rows.
  WordVectors(std::vector<std::string> words, torch::Tensor vectors);

  const std::vector<std::string>& words() const { return words_; }
  /// [N, D] float32 on CPU.
  const torch::Tensor& vectors() const { return vectors_; }
  int64_t size() const { return static_cast<int64_t>(words_.size()); }
  int64_t dim() const { return vectors_.defined() ? vectors_.size(1) : 0; }
  /// Row of `word`, or -1 if absent. Exact byte match (no case folding).
  int64_t find(const std::string& word) const;

 private:
  std::vector<std::string> words_;
  torch::Tensor vectors_;
  std::unordered_map<std::string, int64_t> index_;
};

/// The "N D" header of a word2vec file (text or binary), read without the vectors, so a
/// caller can check the dimension before any slow work. Throws UserError naming the file
/// (line 1) when the header is missing, not two positive integers, or claims more words than
/// the file's size can hold.
struct WordVectorsHeader {
  int64_t count = 0;  // N words
  int64_t dim = 0;    // D values per word
};
WordVectorsHeader read_word_vectors_header(const std::string& path);

/// Reads a word2vec text or binary file; which one is detected from the bytes after the
/// header (a first record that parses as D+1 text fields is text; raw control bytes there
/// mean binary). Throws UserError naming the file and line (text) or word number (binary):
/// a missing or bad header, a line with the wrong number of values, a value that is not a
/// float, fewer or more words than the header counts, a header claiming more than the file's
/// size can hold, a binary file cut short, a word that is empty. A word given twice keeps its
/// first vector (as gensim), with one warning on stderr: the result holds each word once.
WordVectors read_word_vectors(const std::string& path);

/// Writes `vectors` to `path` atomically, in the text format (values with 9 significant
/// digits, so float32 round-trips exactly) or the binary one (with word2vec.c's '\n' after
/// each vector). Throws UserError naming the file for an I/O failure or a word that is
/// empty or contains whitespace (it could not be read back).
void write_word_vectors(const std::string& path, const WordVectors& vectors, bool binary);

/// Copies, for every i with a non-empty names[i], the vector of the first found of names[i],
/// names[i] without a leading "▁" (SentencePiece's word-start mark) and that lowercased
/// (ASCII), into row i of `weight`. weight: [V, D] float (any device), V >= names.size(),
/// D = vectors.dim(); written in place without autograd. Returns the number of rows set.
/// Throws std::invalid_argument if the shapes do not fit.
int64_t copy_vectors_into_rows(const WordVectors& vectors, const std::vector<std::string>& names,
                               torch::Tensor weight);

}  // namespace nlpzoo
