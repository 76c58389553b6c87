// The Bible corpora: OSIS markup stripping on hand-written snippets shaped like diatheke's
// real output, reference parsing, the stable split, verse alignment, the parallel corpus
// reader, and (Regression*) the real export through diatheke and the CLI.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "datasets/bible.h"
#include "tests/test_util.h"
#include "core/io.h"
#include "datasets/parallel_corpus.h"

namespace nlpzoo {
namespace {

namespace fs = std::filesystem;

const auto& error_of = test::user_error_of;

// ---- strip_osis_markup ----

TEST(OsisMarkup, StrongsTagsVanish) {
  EXPECT_EQ(strip_osis_markup("In the beginning<H7225> God<H430> created<H1254> the heaven"),
            "In the beginning God created the heaven");
  EXPECT_EQ(strip_osis_markup("<w lemma=\"strong:G1520\">one</w><G1520> body"), "one body");
}

TEST(OsisMarkup, AdjacentWordElementsKeepASpace) {
  // KJV Genesis 4:1 and WEB Genesis 1:1 as diatheke prints them.
  EXPECT_EQ(strip_osis_markup("<w>Adam</w> <w>knew</w><w>Eve</w> his <w>wife</w>;"),
            "Adam knew Eve his wife;");
  EXPECT_EQ(strip_osis_markup("<w>In</w> <w>the</w> <w>beginning</w>, <w>God</w><w>created</w>"),
            "In the beginning, God created");
  // WEB Genesis 4:1: a clause-ending comma glued to the next word.
  EXPECT_EQ(strip_osis_markup("She <w>conceived</w>,<w>and</w> <w>gave</w> birth"),
            "She conceived, and gave birth");
}

TEST(OsisMarkup, PunctuationThatOpensOrJoinsStaysAttached) {
  EXPECT_EQ(strip_osis_markup("<w>God</w> <w>said</w>, “<w>Let</w> <w>there</w> <w>be</w>"),
            "God said, “Let there be");
  EXPECT_EQ(strip_osis_markup("<w>the</w> <w>ground</w>—<w>man</w>, <w>along</w>"),
            "the ground—man, along");
  EXPECT_EQ(strip_osis_markup("<w>Y dijo</w> <w>Dios</w>: ¿<w>Quién</w> <w>eres</w>?"),
            "Y dijo Dios: ¿Quién eres?");
  EXPECT_EQ(strip_osis_markup("<w>God’s</w> <w>Spirit</w>"), "God’s Spirit");
}

TEST(OsisMarkup, UntaggedWordsGluedOnBothSidesAreSeparated) {
  // RV1909 Genesis 7:4 and 5:3: words outside <w> elements with no spaces around them.
  EXPECT_EQ(strip_osis_markup("<w>Porque</w>pasados<w>aún</w> <w>siete</w>"),
            "Porque pasados aún siete");
  EXPECT_EQ(strip_osis_markup("<w>y engendró</w>un hijo<w>á su semejanza</w>"),
            "y engendró un hijo á su semejanza");
  // A suffix split off a word by the markup, followed by a space, stays on its word.
  EXPECT_EQ(strip_osis_markup("<w>sáca</w>lo <w>de</w> <w>este</w>"), "sácalo de este");
  EXPECT_EQ(strip_osis_markup("<w>than</w> <w>Moses</w>, <w>in</w>asmuch <w>as</w>"),
            "than Moses, inasmuch as");
}

TEST(OsisMarkup, NotesAndTitlesAreDroppedWithTheirContent) {
  EXPECT_EQ(strip_osis_markup("<w>God</w><note type=\"study\" n=\"a\">Or, <hi type=\"italic\">"
                              "gods</hi></note> <w>said</w>"),
            "God said");
  EXPECT_EQ(strip_osis_markup("the <note>outer <note>inner</note> still note</note>earth"),
            "the earth");
  EXPECT_EQ(strip_osis_markup("<title type=\"psalm\" canonical=\"true\">A Psalm of David."
                              "</title><w>LORD</w>, how"),
            "LORD, how");
  EXPECT_EQ(strip_osis_markup("<title type=\"x\"/>kept"), "kept");
}

TEST(OsisMarkup, EntitiesPilcrowsAndWhitespace) {
  EXPECT_EQ(strip_osis_markup("a &amp; b &lt;c&gt; &quot;d&quot; &apos;e&apos; &#233;&#xE9;"),
            "a & b <c> \"d\" 'e' éé");
  EXPECT_EQ(strip_osis_markup("&bogus; & alone &#xZZ; &#0;"), "&bogus; & alone &#xZZ; &#0;");
  EXPECT_EQ(strip_osis_markup("¶ And <w>God</w> said"), "And God said");
  EXPECT_EQ(strip_osis_markup("  a \t b&nbsp;c <milestone type=\"line\"/>d<lb/>e  "),
            "a b c d e");
  EXPECT_EQ(strip_osis_markup("poetry<l level=\"1\" sID=\"x\"/>line"), "poetry line");
  EXPECT_EQ(strip_osis_markup(""), "");
  EXPECT_EQ(strip_osis_markup("unclosed <w"), "unclosed <w");
}

// ---- parse_diatheke_osis ----

TEST(DiathekeOutput, ReferencesHeadingsContinuationsAndTrailer) {
  const std::string out =
      "Genesis 1:1: <w>In</w> <w>the</w> <w>beginning</w>.<milestone type=\"line\"/>\n"
      // diatheke repeats a psalm heading in front of later references.
      "A <w>Psalm</w> of <w>David</w>.   Psalms 3:2: <w>Many</w> there be<milestone/>\r\n"
      "<title canonical=\"true\">A praise psalm by David.</title> <lg sID=\"g1\"/> "
      "<l level=\"1\"/>Tobit 6:18: <milestone type=\"line\"/>\n"
      "I John 4:8: <w>God</w> <w>is</w> <w>love</w>.\n"
      "Song of Solomon 1:1: The song of songs,\n"
      "which is Solomon's.\n"
      "Esther (Greek) 10:4: Mardocheus said\n"
      "Revelation of John 22:21: <w>Amen</w>.            The following words used in the "
      "World English Bible are not very common.\n"
      "(engWEB2015eb)\n";
  const auto verses = parse_diatheke_osis(out);
  ASSERT_EQ(verses.size(), 7u);
  EXPECT_EQ(verses[0].reference, "Genesis 1:1");
  EXPECT_EQ(verses[0].text, "In the beginning.");
  EXPECT_EQ(verses[1].reference, "Psalms 3:2");
  EXPECT_EQ(verses[1].text, "Many there be");
  EXPECT_EQ(verses[2].reference, "Tobit 6:18");
  EXPECT_EQ(verses[2].text, "");
  EXPECT_EQ(verses[3].reference, "I John 4:8");  // not "John 4:8"
  EXPECT_EQ(verses[3].text, "God is love.");
  EXPECT_EQ(verses[4].reference, "Song of Solomon 1:1");
  EXPECT_EQ(verses[4].text, "The song of songs, which is Solomon's.");
  EXPECT_EQ(verses[5].reference, "Esther (Greek) 10:4");
  EXPECT_EQ(verses[6].reference, "Revelation of John 22:21");
  EXPECT_EQ(verses[6].text, "Amen.");  // the appended glossary is cut
}

TEST(DiathekeOutput, NothingRecognisable) {
  EXPECT_TRUE(parse_diatheke_osis("").empty());
  EXPECT_TRUE(parse_diatheke_osis("(spaRV1909eb)\n").empty());
  EXPECT_TRUE(parse_diatheke_osis("no reference here\nNotABook 1:1: x\n").empty());
}

// ---- the split ----

TEST(BibleSplit, Fnv1a64KnownVectors) {
  // The FNV-1a reference values (offset basis, "a", "foobar").
  EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ULL);
  EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cULL);
  EXPECT_EQ(fnv1a64("foobar"), 0x85944171f73967e8ULL);
  EXPECT_EQ(fnv1a64("Genesis 1:1"), 0x0b08c04b1250f4c7ULL);
}

TEST(BibleSplit, SameReferenceSameSplitAndPinnedExamples) {
  // Buckets (hash % 1000) computed independently: 167, 15, 49, 926.
  EXPECT_EQ(bible_split_of("Genesis 1:1"), BibleSplit::kTrain);
  EXPECT_EQ(bible_split_of("Genesis 1:12"), BibleSplit::kTest);
  EXPECT_EQ(bible_split_of("Genesis 1:29"), BibleSplit::kValid);
  EXPECT_EQ(bible_split_of("John 3:16"), BibleSplit::kTrain);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(bible_split_of("Genesis 1:12"), BibleSplit::kTest);
  EXPECT_STREQ(bible_split_name(BibleSplit::kValid), "valid");
}

TEST(BibleSplit, FractionsOverManyReferences) {
  size_t counts[3] = {0, 0, 0};
  for (int c = 1; c <= 150; ++c)
    for (int v = 1; v <= 200; ++v)
      ++counts[static_cast<int>(bible_split_of("Psalms " + std::to_string(c) + ":" +
                                               std::to_string(v)))];
  // 30,000 references at 3.2% each: 960 expected, binomial sd about 30.
  EXPECT_GT(counts[static_cast<int>(BibleSplit::kTest)], 840u);
  EXPECT_LT(counts[static_cast<int>(BibleSplit::kTest)], 1080u);
  EXPECT_GT(counts[static_cast<int>(BibleSplit::kValid)], 840u);
  EXPECT_LT(counts[static_cast<int>(BibleSplit::kValid)], 1080u);
}

// ---- align_verses ----

TEST(AlignVerses, DropsEmptySidesAndRenumberedChapters) {
  // RV1909 leaves Jonah 1:17 empty because it numbers that verse 2:1, so all of Jonah 2
  // is one verse off against the WEB; Acts 8:37 is empty in the WEB, which omits it.
  const std::vector<Verse> es = {
      {"Jonah 1:16", "temieron"}, {"Jonah 1:17", ""},        {"Jonah 2:1", "MAS Jehová"},
      {"Jonah 2:2", "Y oró"},     {"Jonah 3:1", "Y FUÉ"},    {"Acts 8:36", "Y yendo"},
      {"Acts 8:37", "Y Felipe"},  {"Acts 8:38", "Y mandó"},  {"Acts 9:1", "Y SAULO"},
      {"Jude 1:26", "solo es"}};
  const std::vector<Verse> en = {
      {"Jonah 1:16", "feared"},  {"Jonah 1:17", "a huge fish"}, {"Jonah 2:1", "Then Jonah"},
      {"Jonah 2:2", "He said"},  {"Jonah 3:1", "came"},         {"Acts 8:36", "As they"},
      {"Acts 8:37", ""},         {"Acts 8:38", "He commanded"}, {"Acts 9:1", "But Saul"}};
  const VersePairs p = align_verses(es, en);
  EXPECT_EQ(p.references, (std::vector<std::string>{"Jonah 3:1", "Acts 8:36", "Acts 8:38",
                                                    "Acts 9:1"}));
  EXPECT_EQ(p.src, (std::vector<std::string>{"Y FUÉ", "Y yendo", "Y mandó", "Y SAULO"}));
  EXPECT_EQ(p.tgt, (std::vector<std::string>{"came", "As they", "He commanded", "But Saul"}));
  EXPECT_EQ(p.dropped_empty, 3u);       // Jonah 1:17, Acts 8:37, Jude 1:26 (not in en)
  EXPECT_EQ(p.dropped_renumbered, 3u);  // Jonah 1:16, 2:1, 2:2
}

// ---- read_parallel_corpus ----

class ParallelCorpusTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("nlpzoo_parallel_" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    const auto path = (dir_ / name).string();
    atomic_write_text(path, text);
    return path;
  }
  fs::path dir_;
};

TEST_F(ParallelCorpusTest, ReadsAlignedLinesAndStripsCarriageReturns) {
  const auto src = write("a.es", "EN el principio\r\nY la tierra\r\n");
  const auto tgt = write("a.en", "In the beginning\nThe earth\n");
  const auto c = read_parallel_corpus(src, tgt);
  EXPECT_EQ(c.src, (std::vector<std::string>{"EN el principio", "Y la tierra"}));
  EXPECT_EQ(c.tgt, (std::vector<std::string>{"In the beginning", "The earth"}));
}

TEST_F(ParallelCorpusTest, MismatchedCountsNameBothFiles) {
  const auto src = write("b.es", "uno\ndos\ntres\n");
  const auto tgt = write("b.en", "one\ntwo\n");
  const auto err = error_of([&] { read_parallel_corpus(src, tgt); });
  EXPECT_NE(err.find("mismatched line counts (3 vs 2)"), std::string::npos) << err;
  EXPECT_NE(err.find(src), std::string::npos) << err;
  EXPECT_NE(err.find(tgt), std::string::npos) << err;
}

TEST_F(ParallelCorpusTest, EmptyAndMissingFiles) {
  const auto src = write("c.es", ""), tgt = write("c.en", "");
  auto err = error_of([&] { read_parallel_corpus(src, tgt); });
  EXPECT_NE(err.find("empty corpus"), std::string::npos) << err;
  const auto missing = (dir_ / "missing.en").string();
  err = error_of([&] { read_parallel_corpus(src, missing); });
  EXPECT_NE(err.find(missing), std::string::npos) << err;
  EXPECT_NE(err.find("no such file"), std::string::npos) << err;
}

// ---- the real export (diatheke + SWORD modules) ----

std::vector<std::string> lines_of(const fs::path& p) { return read_lines(p.string()); }

class RegressionBibleExport : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("nlpzoo_bible_" + std::to_string(getpid()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(RegressionBibleExport, WritesAlignedSplitsAndEnglishText) {
  const auto s = export_bible((dir_ / "bible").string());
  const auto d = dir_ / "bible";
  EXPECT_GT(s.train, 25000u);
  EXPECT_GE(s.valid, 800u);
  EXPECT_LE(s.valid, 1200u);
  EXPECT_GE(s.test, 800u);
  EXPECT_LE(s.test, 1200u);
  EXPECT_GT(s.english, 60000u);  // WEB (with deuterocanon) + KJV
  EXPECT_LT(s.dropped_empty + s.dropped_renumbered, 1000u);

  const std::pair<const char*, size_t> splits[] = {
      {"train", s.train}, {"valid", s.valid}, {"test", s.test}};
  for (const auto& [name, count] : splits) {
    const auto es = lines_of(d / (std::string(name) + ".es"));
    const auto en = lines_of(d / (std::string(name) + ".en"));
    EXPECT_EQ(es.size(), count) << name;
    EXPECT_EQ(en.size(), count) << name;
    for (const auto* side : {&es, &en})
      for (const auto& line : *side) {
        ASSERT_FALSE(line.empty()) << name;
        ASSERT_EQ(line.find_first_of("<>"), std::string::npos) << name << ": " << line;
        ASSERT_EQ(line.find("  "), std::string::npos) << name << ": " << line;
      }
  }

  // Genesis 1:1 lands in the split its hash says, at the same line on both sides.
  const std::string split = bible_split_name(bible_split_of("Genesis 1:1"));
  const auto es = lines_of(d / (split + ".es"));
  const auto en = lines_of(d / (split + ".en"));
  const auto it = std::find(es.begin(), es.end(), "EN el principio crió Dios los cielos y la tierra.");
  ASSERT_NE(it, es.end());
  EXPECT_EQ(en[it - es.begin()], "In the beginning, God created the heavens and the earth.");
  const auto test_es = lines_of(d / "test.es");
  EXPECT_NE(std::find(test_es.begin(), test_es.end(),
                      "Y produjo la tierra hierba verde, hierba que da simiente según su "
                      "naturaleza, y árbol que da fruto, cuya simiente está en él, según su "
                      "género: y vió Dios que era bueno."),
            test_es.end());  // Genesis 1:12

  // Jonah 2 is numbered differently in RV1909: none of its WEB verses may be paired.
  for (const char* name : {"train.en", "valid.en", "test.en"}) {
    const auto lines = lines_of(d / name);
    EXPECT_EQ(std::find(lines.begin(), lines.end(),
                        "Then Jonah prayed to Yahweh, his God, out of the fish’s belly."),
              lines.end());
  }

  const auto english = lines_of(d / "english.txt");
  EXPECT_EQ(english.size(), s.english);
  const auto has = [&](const std::string& l) {
    return std::find(english.begin(), english.end(), l) != english.end();
  };
  EXPECT_TRUE(has("In the beginning, God created the heavens and the earth."));  // WEB
  EXPECT_TRUE(has("In the beginning God created the heaven and the earth."));     // KJV
  EXPECT_TRUE(has("The man knew Eve his wife. She conceived, and gave birth to Cain, and "
                  "said, “I have gotten a man with Yahweh’s help.”"));
  EXPECT_TRUE(has("The grace of the Lord Jesus Christ be with all the saints. Amen."));
  EXPECT_TRUE(has("The grace of our Lord Jesus Christ be with you all. Amen."));  // KJV
}

TEST(RegressionBibleErrors, MissingModuleOrDiathekeNamesTheFix) {
  auto err = error_of([] { export_sword_module("noSuchModule2024"); });
  EXPECT_NE(err.find("noSuchModule2024"), std::string::npos) << err;
  EXPECT_NE(err.find("sudo apt-get install"), std::string::npos) << err;

  // The CLI with a diatheke that does not exist.
  const auto dir = fs::temp_directory_path() / ("nlpzoo_bible_cli_" + std::to_string(getpid()));
  const auto r = test::run_command("NLPZOO_DIATHEKE=/nonexistent/diatheke " + std::string(NLPZOO_CLI) +
                                   " data bible --out " + dir.string() + " 2>&1");
  const std::string& out = r.out;
  EXPECT_EQ(r.status, 1) << out;
  EXPECT_NE(out.find("diatheke not found"), std::string::npos) << out;
  EXPECT_NE(out.find("sudo apt-get install diatheke sword-text-web sword-text-kjv "
                     "sword-text-sparv"),
            std::string::npos)
      << out;
  EXPECT_FALSE(fs::exists(dir / "train.es"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace nlpzoo
