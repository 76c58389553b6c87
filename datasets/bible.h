#pragma once
// The Bible corpora: Spanish-English verse pairs (Reina-Valera 1909 / World English Bible)
// and English monolingual text (WEB + King James), exported from the SWORD modules Debian
// packages (sword-text-sparv, sword-text-web, sword-text-kjv) through diatheke.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace nlpzoo {

/// One verse: its reference as diatheke prints it ("Genesis 1:1", "I John 4:8",
/// "Revelation of John 22:21") and its plain text.
struct Verse {
  std::string reference;
  std::string text;
};

/// Plain text of one verse of diatheke's OSIS output: removes every tag, drops the content
/// of <note> and <title> elements, keeps a space between words that the markup glued
/// together (`knew</w><w>Eve` -> "knew Eve", `conceived</w>,<w>and` -> "conceived, and"),
/// unescapes XML entities (&amp; &lt; &gt; &quot; &apos; &nbsp; &#N; &#xH;), drops the KJV's
/// paragraph sign (¶), collapses whitespace runs to one space and trims. Never throws.
std::string strip_osis_markup(const std::string& osis);

/// Parses the output of `diatheke -f osis -k RANGE`: each verse is a line
/// "[leaked heading] Book C:V: text". The reference is found by its book name (English
/// SWORD names, deuterocanon included); anything before it (headings diatheke repeats) is
/// dropped, a line without a reference continues the previous verse, and a final
/// "(module)" trailer line is ignored. Verse text is passed through strip_osis_markup;
/// verses may be empty. Never throws.
std::vector<Verse> parse_diatheke_osis(const std::string& output);

/// 64-bit FNV-1a of `s`'s bytes: a hash that, unlike std::hash, is the same on every
/// platform and run, so splits made from it never move.
uint64_t fnv1a64(const std::string& s);

enum class BibleSplit { kTrain, kValid, kTest };

/// The split a verse belongs to, from fnv1a64(reference) % 1000: [0, 32) test,
/// [32, 64) valid, the rest train (about 3.2% each: ~1,000 of the ~31,000 verse pairs).
BibleSplit bible_split_of(const std::string& reference);

/// "train", "valid" or "test".
const char* bible_split_name(BibleSplit split);

/// Runs `diatheke -b MODULE -f osis -l en -k "Genesis 1:1-Revelation 22:21"` and parses
/// it. The program is $NLPZOO_DIATHEKE if set, else `diatheke` on PATH. Throws UserError
/// naming the install command when diatheke is missing, fails, or the module exports no
/// verse (i.e. it is not installed).
std::vector<Verse> export_sword_module(const std::string& module);

/// Verse pairs aligned by reference, in the order of the source side.
struct VersePairs {
  std::vector<std::string> references, src, tgt;
  size_t dropped_empty = 0;          // source references with no text on one side (or absent)
  size_t dropped_renumbered = 0;     // non-empty pairs dropped with their chapter, see below
};

/// Pairs `src` and `tgt` verses that share a reference. Drops pairs where either side is
/// empty or missing, and every pair of a chapter in which the source leaves a verse empty
/// that the target has, and of the chapter after it: that is how a module with another
/// versification shows (RV1909 numbers Jonah 1:17 as 2:1, so the rest of Jonah 2 is off by
/// one verse against the WEB), and the shift does not reach beyond the next chapter.
/// Never throws.
VersePairs align_verses(const std::vector<Verse>& src, const std::vector<Verse>& tgt);

struct BibleExportSummary {
  size_t train = 0, valid = 0, test = 0;  // aligned Spanish-English pairs per split
  size_t english = 0;                     // lines of english.txt
  size_t dropped_empty = 0;               // as in VersePairs
  size_t dropped_renumbered = 0;          // as in VersePairs
  double seconds = 0;                     // wall time of the whole export
};

/// Exports the three modules (in parallel) and writes, each atomically, into `out_dir`
/// (created if needed): {train,valid,test}.{es,en}, line-aligned Spanish (RV1909) and
/// English (WEB) verses from align_verses, in Bible order; and english.txt,
/// every non-empty WEB verse (deuterocanon included) then every non-empty KJV verse.
/// Throws UserError as export_sword_module does, or naming a file that cannot be written.
BibleExportSummary export_bible(const std::string& out_dir);

}  // namespace nlpzoo
