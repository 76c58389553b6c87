#pragma once
// Light text normalization applied before SentencePiece, so that raw user input looks like
// corpora that were lowercased and Penn-Treebank tokenized (SST-2: "it 's a charming ,
// often affecting journey ."). Applied identically to training, evaluation and classify
// input; on text that is already in that form it changes nothing. A fine-tuned encoder instead
// reads text as its pre-training corpus was written (corpus_words).
#include <string>

namespace nlpzoo {

struct TextNormalization {
  /// ASCII A-Z -> a-z (other bytes, e.g. UTF-8 letters, are kept).
  bool lowercase = true;
  /// Penn-Treebank-like splitting: a run of one of . , ! ? ; : ( ) [ ] { } " becomes its own
  /// token (except '.' and ',' between digits: "3.5", "1,000"); the clitics 's 're 've 'll
  /// 'd 'm and n't are split from the word before ("doesn't" -> "does n't").
  bool split_punctuation = true;
  /// The form of `nlpzoo data english`'s corpus, which a BERT pre-trained on it has read: split
  /// clitics joined back to their word ("does n't" -> "doesn't", "it 's" -> "it's"), then
  /// datasets/english_corpus.h normalize_words (lowercase ASCII words; punctuation, hyphens and
  /// quotes dropped). Takes precedence over the two options above.
  bool corpus_words = false;
};

/// `text` normalized as `options` say, with runs of whitespace collapsed to one space and no
/// leading or trailing space.
std::string normalize_text(const std::string& text, const TextNormalization& options);

}  // namespace nlpzoo
