#pragma once
// Option enums <-> the names configs and flags use, from one table per enum, so parsing and
// printing cannot drift apart.
#include <array>
#include <stdexcept>
#include <string>
#include <utility>

namespace nlpzoo {

template <typename E, size_t N>
using EnumNames = std::array<std::pair<E, const char*>, N>;

/// The value named `name`. Throws std::invalid_argument("unknown <what> '<name>' (expected
/// a, b or c)").
template <typename E, size_t N>
E parse_enum(const std::string& name, const EnumNames<E, N>& names, const char* what) {
  std::string expected;
  for (size_t i = 0; i < N; ++i) {
    if (name == names[i].second) return names[i].first;
    expected += (i == 0 ? "" : i + 1 == N ? " or " : ", ") + std::string(names[i].second);
  }
  throw std::invalid_argument("unknown " + std::string(what) + " '" + name + "' (expected " + expected + ")");
}

/// The name of `value` ("?" if the table lacks it).
template <typename E, size_t N>
std::string enum_name(E value, const EnumNames<E, N>& names) {
  for (const auto& [v, n] : names)
    if (v == value) return n;
  return "?";
}

}  // namespace nlpzoo
