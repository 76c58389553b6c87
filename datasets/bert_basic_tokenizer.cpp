#include "datasets/bert_basic_tokenizer.h"

#include <unicode/uchar.h>
#include <unicode/unorm2.h>
#include <unicode/ustring.h>
#include <unicode/utf16.h>

#include <stdexcept>

#include "core/utf8.h"

namespace nlpzoo {

namespace {

bool in_category(char32_t cp, uint32_t mask) { return (U_GET_GC_MASK(static_cast<UChar32>(cp)) & mask) != 0; }

// tokenization.py _is_whitespace: \t \n \r are categorised Cc but count as whitespace.
bool is_whitespace(char32_t cp) {
  return cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r' || in_category(cp, U_GC_ZS_MASK);
}

// Hugging Face's _is_control: every category C* (Cc, Cf, Cs, Co, Cn); Google's original lists
// only Cc and Cf, which differs on private-use and unassigned code points.
bool is_control(char32_t cp) {
  if (cp == '\t' || cp == '\n' || cp == '\r') return false;
  return in_category(cp, U_GC_C_MASK);
}

// _is_punctuation: all non-letter/number ASCII is punctuation for BERT, whatever its Unicode
// category ('$' is Sc, '^' Sk, '+' Sm), plus every P* character.
bool is_punctuation(char32_t cp) {
  if ((cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) || (cp >= 123 && cp <= 126))
    return true;
  return in_category(cp, U_GC_P_MASK);
}

// What Python's str.split() splits on among the characters that cleaning leaves: cleaning maps
// every Zs and \t \n \r to ' ' and drops the other Cc separators (\x0b \x0c \x1c-\x1f \x85),
// which leaves the line and paragraph separators (Zl, Zp).
bool is_split_space(char32_t cp) { return cp == ' ' || cp == 0x2028 || cp == 0x2029; }

std::u16string to_utf16(const std::u32string& s) {
  std::u16string out;
  out.reserve(s.size());
  for (char32_t cp : s) {
    if (U16_LENGTH(cp) == 1) {
      out.push_back(static_cast<char16_t>(cp));
    } else {
      out.push_back(U16_LEAD(cp));
      out.push_back(U16_TRAIL(cp));
    }
  }
  return out;
}

// ICU's preflighting convention: call with a guess, and again with the size it asks for.
template <class F>
std::u16string icu_transform(const std::u16string& src, F&& f) {
  std::u16string out(src.size() + 8, u'\0');
  UErrorCode err = U_ZERO_ERROR;
  int32_t n = f(src, out.data(), static_cast<int32_t>(out.size()), &err);
  if (err == U_BUFFER_OVERFLOW_ERROR) {
    out.assign(n, u'\0');
    err = U_ZERO_ERROR;
    n = f(src, out.data(), n, &err);
  }
  if (U_FAILURE(err)) throw std::runtime_error(std::string("ICU: ") + u_errorName(err));
  out.resize(n);
  return out;
}

// Step 4: lower-casing (root locale: no Turkish dotless i, as Python's str.lower) and accent
// stripping on one word.
std::u32string normalize_word(const std::u32string& word, const BertBasicTokenizerOptions& o) {
  std::u16string s = to_utf16(word);
  if (o.lower_case)
    s = icu_transform(s, [](const std::u16string& in, UChar* out, int32_t cap, UErrorCode* err) {
      return u_strToLower(out, cap, in.data(), static_cast<int32_t>(in.size()), "", err);
    });
  if (o.strip_accents) {
    UErrorCode err = U_ZERO_ERROR;
    const UNormalizer2* nfd = unorm2_getNFDInstance(&err);
    if (U_FAILURE(err)) throw std::runtime_error(std::string("ICU NFD: ") + u_errorName(err));
    s = icu_transform(s, [nfd](const std::u16string& in, UChar* out, int32_t cap, UErrorCode* e) {
      return unorm2_normalize(nfd, in.data(), static_cast<int32_t>(in.size()), out, cap, e);
    });
  }
  std::u32string out;
  for (int32_t i = 0; i < static_cast<int32_t>(s.size());) {
    UChar32 cp;
    U16_NEXT(s.data(), i, static_cast<int32_t>(s.size()), cp);
    if (o.strip_accents && in_category(cp, U_GC_MN_MASK)) continue;
    out.push_back(static_cast<char32_t>(cp));
  }
  return out;
}

std::string to_utf8(const std::u32string& s) {
  std::string out;
  for (char32_t cp : s) append_utf8(out, cp);
  return out;
}

}  // namespace

bool is_cjk_ideograph(char32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x20000 && cp <= 0x2A6DF) ||
         (cp >= 0x2A700 && cp <= 0x2B73F) || (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B820 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

std::vector<std::string> bert_basic_tokenize(const std::string& text, const BertBasicTokenizerOptions& options) {
  // Steps 1-2 in one pass over the code points.
  std::u32string cleaned;
  cleaned.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const Utf8CodePoint c = decode_utf8_at(text, i);
    i += c.length;
    const char32_t cp = c.value;
    if (!c.valid || cp == 0 || cp == 0xFFFD || is_control(cp)) continue;
    if (is_whitespace(cp)) {
      cleaned.push_back(' ');
    } else if (options.split_cjk && is_cjk_ideograph(cp)) {
      cleaned += U' ';
      cleaned.push_back(cp);
      cleaned += U' ';
    } else {
      cleaned.push_back(cp);
    }
  }
  // Steps 3-5.
  std::vector<std::string> words;
  std::u32string word;
  auto flush_word = [&] {
    if (word.empty()) return;
    std::u32string piece;  // the run of non-punctuation since the last punctuation mark
    for (char32_t cp : normalize_word(word, options)) {
      if (is_punctuation(cp)) {
        if (!piece.empty()) words.push_back(to_utf8(piece));
        piece.clear();
        words.push_back(to_utf8(std::u32string(1, cp)));
      } else {
        piece.push_back(cp);
      }
    }
    if (!piece.empty()) words.push_back(to_utf8(piece));
    word.clear();
  };
  for (char32_t cp : cleaned) {
    if (is_split_space(cp)) {
      flush_word();
    } else {
      word.push_back(cp);
    }
  }
  flush_word();
  return words;
}

}  // namespace nlpzoo
