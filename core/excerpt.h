#pragma once
// Quoting user input in messages: a 1.5 MB line must not become a 1.5 MB error.
#include <string>

namespace nlpzoo {

/// `text` when it has at most `max_bytes` bytes; else its first bytes up to a UTF-8 character
/// boundary at or below `max_bytes`, then "... (N bytes in all)".
inline std::string excerpt(const std::string& text, size_t max_bytes = 200) {
  if (text.size() <= max_bytes) return text;
  size_t end = max_bytes;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;  // a continuation byte
  return text.substr(0, end) + "... (" + std::to_string(text.size()) + " bytes in all)";
}

}  // namespace nlpzoo
