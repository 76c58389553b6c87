// core/utf8.h: the one UTF-8 decoder and encoder that the corpus readers and BLEU share.
#include <gtest/gtest.h>

#include <string>

#include "core/utf8.h"

namespace nlpzoo {
namespace {

TEST(Utf8, DecodesEachSequenceLength) {
  const std::string s = "a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80";  // a é € 😀
  const auto a = decode_utf8_at(s, 0);
  EXPECT_EQ(a.value, U'a');
  EXPECT_EQ(a.length, 1u);
  const auto e = decode_utf8_at(s, 1);
  EXPECT_EQ(e.value, 0xE9u);
  EXPECT_EQ(e.length, 2u);
  const auto euro = decode_utf8_at(s, 3);
  EXPECT_EQ(euro.value, 0x20ACu);
  EXPECT_EQ(euro.length, 3u);
  const auto smile = decode_utf8_at(s, 6);
  EXPECT_EQ(smile.value, 0x1F600u);
  EXPECT_EQ(smile.length, 4u);
  EXPECT_TRUE(a.valid && e.valid && euro.valid && smile.valid);
}

TEST(Utf8, MalformedBytesDecodeAsThemselvesOneByteLong) {
  // A stray continuation byte, a lead byte of no sequence (0xFF), a truncated 3-byte sequence
  // and a lead byte followed by a non-continuation byte.
  for (const std::string s : {std::string("\x80"), std::string("\xFF"), std::string("\xE2\x82"),
                              std::string("\xC3" "a")}) {
    const auto u = decode_utf8_at(s, 0);
    EXPECT_FALSE(u.valid) << s;
    EXPECT_EQ(u.length, 1u) << s;
    EXPECT_EQ(u.value, static_cast<unsigned char>(s[0])) << s;
  }
}

TEST(Utf8, EncodingRoundTripsEveryLengthBoundary) {
  for (char32_t cp : {0x0u, 0x7Fu, 0x80u, 0x7FFu, 0x800u, 0xFFFFu, 0x10000u, 0x10FFFFu}) {
    std::string s;
    append_utf8(s, cp);
    const size_t expected_length = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    ASSERT_EQ(s.size(), expected_length) << cp;
    const auto u = decode_utf8_at(s, 0);
    EXPECT_TRUE(u.valid);
    EXPECT_EQ(u.value, cp);
    EXPECT_EQ(u.length, expected_length);
  }
}

}  // namespace
}  // namespace nlpzoo
