// BERT's tokenizer (datasets/bert_basic_tokenizer.h, datasets/wordpiece.h) on tricky inputs.
// Every expected token below is derived by hand from the published algorithm (Google's
// tokenization.py as Hugging Face's BertTokenizer runs it); the comment next to each case says
// which rule gives it. Python's `transformers` is not in Debian, so there is no live comparison.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "core/io.h"
#include "datasets/bert_basic_tokenizer.h"
#include "datasets/wordpiece.h"
#include "tests/test_util.h"

using namespace nlpzoo;
using Tokens = std::vector<std::string>;

namespace {

struct Case {
  const char* why;
  std::string text;
  Tokens expected;
};

const auto kUncased = BertBasicTokenizerOptions::for_lower_case(true);
const auto kCased = BertBasicTokenizerOptions::for_lower_case(false);

}  // namespace

TEST(BertBasicTokenizer, UncasedTable) {
  const std::vector<Case> cases = {
      {"empty text has no words", "", {}},
      {"an empty line: \\n is whitespace", "\n", {}},
      {"whitespace runs (\\t \\n \\r) split once", "  \tmany\n\nspaces\r ", {"many", "spaces"}},
      {"lower-cased; ',' and '!' are punctuation", "Hello, World!", {"hello", ",", "world", "!"}},
      {"NFD splits é into e + U+0301 (Mn), dropped", "Héllo WÖRLD", {"hello", "world"}},
      {"precomposed and decomposed accents agree", "résumé re\u0301sume\u0301", {"resume", "resume"}},
      {"a punctuation run: every mark its own word", "Wait...what?!", {"wait", ".", ".", ".", "what", "?", "!"}},
      {"apostrophe is ASCII punctuation", "don't", {"don", "'", "t"}},
      {"$ (Sc) + (Sm) ^ ` | ~ (Sk/Sm) are punctuation by BERT's ASCII ranges", "$100+5% a^b`c|d~e",
       {"$", "100", "+", "5", "%", "a", "^", "b", "`", "c", "|", "d", "~", "e"}},
      {"non-ASCII P*: « » (Pi/Pf), — (Pd), ¿ (Po)", "«quote»—¿qué", {"«", "quote", "»", "—", "¿", "que"}},
      {"CJK ideographs each a word, even inside a Latin run", "我爱NLP和BERT", {"我", "爱", "nlp", "和", "bert"}},
      {"CJK punctuation 、。 is P* (split); kana are not ideographs (kept together)", "日本語、テスト。",
       {"日", "本", "語", "、", "テスト", "。"}},
      {"が = か + U+3099 (Mn) under NFD: the voicing mark is stripped", "がっこう", {"かっこう"}},
      {"Hangul is not CJK-split; NFD decomposes syllables into conjoining jamo (Lo, kept)", "한국어",
       {"\u1112\u1161\u11ab\u1100\u116e\u11a8\u110b\u1165"}},
      {"İ lower-cases to i + U+0307 (Mn), stripped", "İstanbul", {"istanbul"}},
      {"Σ at a word's end lower-cases to final ς (Final_Sigma)", "ΟΔΟΣ", {"οδος"}},
      {"fullwidth letters only lower-case: NFD is canonical, not NFKC", "ＡＢＣ", {"ａｂｃ"}},
      {"U+0000, U+FFFD, U+0007 (Cc), U+200B (Cf) are dropped, joining the word", std::string("a\0b", 3) +
       "\xEF\xBF\xBD" "c\x07" "d\u200Be", {"abcde"}},
      {"a byte that is not UTF-8 is dropped like U+FFFD", "ab\xFF" "cd", {"abcd"}},
      {"NBSP (Zs) is whitespace; U+2028 (Zl) splits as Python's str.split()", "a\u00A0b\u2028c", {"a", "b", "c"}},
      {"U+FE0F (variation selector) is Mn: stripped; ❤ and 😀 are So, not punctuation", "I ❤\uFE0F NLP 😀",
       {"i", "❤", "nlp", "😀"}},
      {"[MASK] alone is not special to the basic tokenizer: [ and ] are punctuation", "a [MASK]",
       {"a", "[", "mask", "]"}},
      {"digits with separators split at the punctuation", "3.14 1,000", {"3", ".", "14", "1", ",", "000"}},
  };
  for (const auto& c : cases) EXPECT_EQ(bert_basic_tokenize(c.text, kUncased), c.expected) << c.why;
}

TEST(BertBasicTokenizer, CasedKeepsCaseAndAccents) {
  const std::vector<Case> cases = {
      {"no lower-casing, no accent stripping", "Héllo WÖRLD", {"Héllo", "WÖRLD"}},
      {"punctuation and CJK still split", "Hello,世界!", {"Hello", ",", "世", "界", "!"}},
      {"combining marks stay when accents are kept", "re\u0301sume\u0301", {"re\u0301sume\u0301"}},
      {"İ stays İ", "İstanbul", {"İstanbul"}},
  };
  for (const auto& c : cases) EXPECT_EQ(bert_basic_tokenize(c.text, kCased), c.expected) << c.why;
  // strip_accents without lower-casing (Hugging Face's strip_accents=True on a cased model).
  auto strip_only = kCased;
  strip_only.strip_accents = true;
  EXPECT_EQ(bert_basic_tokenize("Héllo", strip_only), Tokens{"Hello"});
  // tokenize_chinese_chars=False leaves a CJK run whole.
  auto no_cjk = kUncased;
  no_cjk.split_cjk = false;
  EXPECT_EQ(bert_basic_tokenize("我爱NLP", no_cjk), Tokens{"我爱nlp"});
}

TEST(BertBasicTokenizer, CjkRangesAreBertsBlocks) {
  // The first and last code point of each of _is_chinese_char's eight blocks, and neighbours outside.
  for (char32_t cp : {0x4E00, 0x9FFF, 0x3400, 0x4DBF, 0x20000, 0x2A6DF, 0x2A700, 0x2B73F, 0x2B740, 0x2B81F, 0x2B820,
                      0x2CEAF, 0xF900, 0xFAFF, 0x2F800, 0x2FA1F})
    EXPECT_TRUE(is_cjk_ideograph(cp)) << std::hex << static_cast<uint32_t>(cp);
  for (char32_t cp : {0x4DFF, 0xA000, 0x33FF, 0x2A6E0, 0x2CEB0, 0xF8FF, 0xFB00, 0x2F7FF, 0x2FA20, 0x3042, 0xAC00})
    EXPECT_FALSE(is_cjk_ideograph(cp)) << std::hex << static_cast<uint32_t>(cp);
}

namespace {

// A vocabulary in the layout of Google's vocab.txt: specials first, then words and "##" pieces.
std::vector<std::string> tiny_vocab() {
  return {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "un",  "##aff", "##able", "the",  "hello", "world",
          ",",     "!",     ".",     "a",     "ab",     "##b", "##c",   "##bc",   "я",    "##я",   "我",
          "?",     "[",     "]",     "mask",  "##s",    "##ing", "play", "e",     "##e"};
}

WordPieceTokenizer tiny(bool lower_case = true) {
  WordPieceOptions o;
  o.basic = BertBasicTokenizerOptions::for_lower_case(lower_case);
  return WordPieceTokenizer(tiny_vocab(), o);
}

}  // namespace

TEST(WordPiece, TrickyInputs) {
  const auto wp = tiny();
  const std::vector<Case> cases = {
      {"the docstring's example: longest prefix 'un', then '##aff', '##able'", "unaffable", {"un", "##aff", "##able"}},
      {"a word whose tail has no piece is [UNK] as a whole (not un ##aff ##able [UNK])", "unaffablex", {"[UNK]"}},
      {"greedy longest-first: 'ab' then '##c', never the alternative a ##bc", "abc", {"ab", "##c"}},
      {"the first piece is never '##'-prefixed: '##bc' cannot start a word", "bc", {"[UNK]"}},
      {"specials typed in text are kept whole, even glued to words", "[CLS] Hello[MASK]world! [SEP]",
       {"[CLS]", "hello", "[MASK]", "world", "!", "[SEP]"}},
      {"specials match case-sensitively: '[mask]' is text: [ mask ]", "[mask]", {"[", "mask", "]"}},
      {"an unknown special-looking token is text: [ + unknown 'foo' + ]", "[FOO]", {"[", "[UNK]", "]"}},
      {"accents stripped before matching", "Hélló", {"hello"}},
      {"CJK split then matched; an unknown ideograph is [UNK]", "我你", {"我", "[UNK]"}},
      {"empty line: no tokens", "\n", {}},
      {"punctuation runs are single-character words", "hello?!.", {"hello", "?", "!", "."}},
      {"continuation pieces repeat", "playings", {"play", "##ing", "##s"}},
  };
  for (const auto& c : cases) EXPECT_EQ(wp.tokenize(c.text), c.expected) << c.why;
  // Cased: "Hello" is not in this lower-case vocabulary.
  EXPECT_EQ(tiny(/*lower_case=*/false).tokenize("Hello world"), (Tokens{"[UNK]", "world"}));
}

TEST(WordPiece, WordsOverMaxInputCharsAreUnknown) {
  const auto wp = tiny();
  // 100 code points (200 bytes of Cyrillic я) still match: я then 99 × ##я; 101 are [UNK].
  std::string word;
  for (int i = 0; i < 100; ++i) word += "я";
  Tokens expected = {"я"};
  expected.insert(expected.end(), 99, "##я");
  EXPECT_EQ(wp.tokenize(word), expected);
  EXPECT_EQ(wp.tokenize(word + "я"), Tokens{"[UNK]"});
  // The limit counts the word after basic tokenization: punctuation splits it first.
  EXPECT_EQ(wp.tokenize(std::string(60, 'e') + "." + std::string(60, 'e')).size(), 60u + 1 + 60);
}

TEST(WordPiece, EncodeAndDecode) {
  const auto wp = tiny();
  // [CLS]=2 un=5 ##aff=6 ##able=7 ,=11 hello=9 [MASK]=4 [SEP]=3
  const auto ids = wp.encode("[CLS] unaffable, hello [MASK] [SEP]");
  EXPECT_EQ(ids, (std::vector<int64_t>{2, 5, 6, 7, 11, 9, 4, 3}));
  EXPECT_EQ(wp.decode(ids), "[CLS] unaffable , hello [MASK] [SEP]");
  EXPECT_EQ(wp.decode(ids, /*skip_special=*/true), "unaffable , hello [MASK]");
  EXPECT_EQ(wp.decode({0, 9, 0}, true), "hello");
  EXPECT_EQ(wp.token_to_id("nope"), wp.unk_id());
  EXPECT_EQ(wp.id_to_token(10), "world");
  EXPECT_NE(test::user_error_of([&] { wp.id_to_token(31); }).find("outside the WordPiece vocabulary"),
            std::string::npos);
}

TEST(WordPiece, LoadsVocabTxt) {
  const auto dir = test::fresh_temp_dir("wordpiece_vocab");
  const auto path = (dir / "vocab.txt").string();
  {
    // Windows line ends and a byte-order mark, which Python's text mode / utf-8-sig also drop.
    std::ofstream out(path, std::ios::binary);
    out << "\xEF\xBB\xBF[PAD]\r\n[UNK]\r\nhello\r\n##s\r\n";
  }
  const auto wp = WordPieceTokenizer::load(path, WordPieceOptions{});
  EXPECT_EQ(wp.vocab_size(), 4);
  EXPECT_EQ(wp.encode("Hellos"), (std::vector<int64_t>{2, 3}));
  {
    std::ofstream out(path, std::ios::binary);
    out << "[PAD]\nhello\n";
  }
  EXPECT_NE(test::user_error_of([&] { WordPieceTokenizer::load(path, WordPieceOptions{}); }).find("no [UNK]"),
            std::string::npos);
  EXPECT_NE(test::user_error_of([&] { WordPieceTokenizer::load((dir / "missing.txt").string(), WordPieceOptions{}); })
                .find("missing.txt"),
            std::string::npos);
}
