#pragma once
// BERT's basic tokenization (Devlin et al. 2019; google-research/bert tokenization.py
// BasicTokenizer, as Hugging Face's BertTokenizer runs it), the step before WordPiece:
//   1. clean: drop U+0000, U+FFFD and control characters (general category C*, except \t \n \r);
//      whitespace (\t \n \r ' ' and category Zs) becomes ' '
//   2. CJK: a space either side of every CJK ideograph (_is_chinese_char's blocks), so each is a word
//   3. split on whitespace (Python's str.split(): after step 1 that is ' ', U+2028 and U+2029)
//   4. per word, when lower_case: full Unicode lower-casing (Python's str.lower()); when
//      strip_accents: NFD, then drop the nonspacing marks (category Mn)
//   5. per word, every punctuation character its own word: ASCII 33-47, 58-64, 91-96, 123-126
//      (so $ + < = > ^ ` | ~ too) and every character of category P*
// Unicode properties, case mapping and NFD come from ICU, not from tables of ours. Text is
// UTF-8; a byte that starts no valid sequence is dropped like U+FFFD (Python would refuse it).
// Known difference: Hugging Face (since 2023) NFC-normalises the text first, Google's reference
// does not; we follow Google's (it matters only for decomposed input to a cased vocabulary).
#include <string>
#include <vector>

namespace nlpzoo {

struct BertBasicTokenizerOptions {
  /// Lower-case every word (the checkpoint's do_lower_case: true for "uncased" models).
  bool lower_case = true;
  /// Strip accents (NFD, drop category Mn). Hugging Face's strip_accents=None follows
  /// lower_case, which is what for_lower_case() sets.
  bool strip_accents = true;
  /// Split CJK ideographs into single characters (tokenize_chinese_chars; on in every
  /// published BERT).
  bool split_cjk = true;

  /// The options of a checkpoint whose tokenizer says only do_lower_case.
  static BertBasicTokenizerOptions for_lower_case(bool lower_case) {
    BertBasicTokenizerOptions o;
    o.lower_case = o.strip_accents = lower_case;
    return o;
  }
};

/// The words of `text` (UTF-8) after steps 1-5, each non-empty, in order.
std::vector<std::string> bert_basic_tokenize(const std::string& text, const BertBasicTokenizerOptions& options);

/// BERT's _is_chinese_char: the CJK Unified Ideographs blocks (and Extensions A-E) and the
/// CJK Compatibility Ideographs (and Supplement). Not Hiragana, Katakana or Hangul, which
/// BERT leaves to whitespace and WordPiece.
bool is_cjk_ideograph(char32_t cp);

}  // namespace nlpzoo
