#pragma once
// UTF-8 code points, decoded and encoded in one place. Readers of corpora and of BLEU's
// segments pass malformed bytes through rather than reject them, so decoding never fails: a
// byte that does not start a complete sequence decodes as itself, one byte long, not valid.
#include <cstddef>
#include <string>

namespace nlpzoo {

struct Utf8CodePoint {
  char32_t value = 0;  // the code point; the byte itself when !valid
  size_t length = 1;   // bytes taken from the string (1 when !valid)
  bool valid = true;   // false: a stray continuation byte, a bad lead byte or a truncated sequence
};

/// The code point starting at s[i] (i < s.size()). Lead bytes and continuation bytes are
/// checked; overlong forms and surrogates are not (they decode to their value).
Utf8CodePoint decode_utf8_at(const std::string& s, size_t i);

/// Appends the UTF-8 bytes of `cp` (at most U+10FFFF) to `out`.
void append_utf8(std::string& out, char32_t cp);

}  // namespace nlpzoo
