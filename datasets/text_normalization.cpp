#include "datasets/text_normalization.h"

#include <cctype>
#include <cstring>
#include <sstream>

#include "datasets/english_corpus.h"

namespace nlpzoo {

namespace {

bool is_alpha(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; }
bool is_digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }
bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f'; }

bool matches_ignoring_case(const std::string& s, size_t at, const char* what) {
  const size_t n = std::strlen(what);
  if (at + n > s.size()) return false;
  for (size_t k = 0; k < n; ++k)
    if (std::tolower(static_cast<unsigned char>(s[at + k])) != what[k]) return false;
  return at + n == s.size() || !is_alpha(s[at + n]);  // the clitic ends the word
}

// Length of the clitic starting at s[at] (after a letter), 0 if none.
size_t clitic_length(const std::string& s, size_t at) {
  for (const char* c : {"n't", "'s", "'re", "'ve", "'ll", "'d", "'m"})
    if (matches_ignoring_case(s, at, c)) return std::strlen(c);
  return 0;
}

// "does n't" -> "doesn't": a whitespace-separated clitic after a letter rejoins its word.
std::string join_clitics(const std::string& text) {
  std::istringstream in(text);
  std::string out, token;
  while (in >> token) {
    const bool clitic = !out.empty() && is_alpha(out.back()) && clitic_length(token, 0) == token.size();
    if (!out.empty() && !clitic) out += ' ';
    out += token;
  }
  return out;
}

}  // namespace

std::string normalize_text(const std::string& text, const TextNormalization& options) {
  if (options.corpus_words) return normalize_words(join_clitics(text));
  std::string s = text;
  if (options.lowercase)
    for (char& c : s)
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  std::string spaced;
  if (options.split_punctuation) {
    static const std::string kPunctuation = ".,!?;:()[]{}\"";
    for (size_t i = 0; i < s.size();) {
      const char c = s[i];
      const bool in_number = (c == '.' || c == ',') && i > 0 && is_digit(s[i - 1]) && i + 1 < s.size() &&
                             is_digit(s[i + 1]);
      size_t n = 0;
      if (kPunctuation.find(c) != std::string::npos && !in_number) {
        while (i + n < s.size() && s[i + n] == c) ++n;  // "..." and "!!" stay one token
      } else if (i > 0 && is_alpha(s[i - 1])) {
        n = clitic_length(s, i);
      }
      if (n > 0) {
        spaced += ' ';
        spaced.append(s, i, n);
        spaced += ' ';
        i += n;
      } else {
        spaced += c;
        ++i;
      }
    }
  } else {
    spaced = std::move(s);
  }
  std::string out;
  out.reserve(spaced.size());
  for (char c : spaced) {
    if (is_space(c)) {
      if (!out.empty() && out.back() != ' ') out += ' ';
    } else {
      out += c;
    }
  }
  if (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

}  // namespace nlpzoo
