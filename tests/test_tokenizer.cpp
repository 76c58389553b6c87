// The SentencePiece tokenizer, trained on real text: tests/data/kjv_genesis_1_8.txt holds
// King James Genesis 1-8 (206 verses, public domain) as `nlpzoo data bible` exports it.
// Ids are checked against Debian's own spm_encode; the CLI is tested end to end.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "core/io.h"
#include "tests/test_util.h"
#include "datasets/special_ids.h"
#include "datasets/tokenizer.h"

namespace nlpzoo {
namespace {

namespace fs = std::filesystem;

const std::string kCorpus = std::string(NLPZOO_SOURCE_DIR) + "/tests/data/kjv_genesis_1_8.txt";

using test::run_command;
const auto& error_of = test::user_error_of;

bool have_program(const std::string& name) {
  return run_command("command -v " + name + " >/dev/null 2>&1").status == 0;
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

std::string join(const std::vector<int64_t>& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size(); ++i) s += (i ? " " : "") + std::to_string(ids[i]);
  return s;
}

class TokenizerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(fs::temp_directory_path() /
                        ("nlpzoo_tokenizer_" + std::to_string(getpid())));
    fs::create_directories(*dir_);
    TokenizerTrainOptions o;
    o.inputs = {kCorpus};
    o.model_prefix = (*dir_ / "kjv").string();
    o.vocab_size = 500;
    Tokenizer::train(o);
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
  }
  static std::string model_path() { return (*dir_ / "kjv.model").string(); }
  static fs::path* dir_;
};
fs::path* TokenizerTest::dir_ = nullptr;

TEST_F(TokenizerTest, SpecialIdsHaveFixedPieces) {
  const auto tok = Tokenizer::load(model_path());
  EXPECT_EQ(tok.vocab_size(), 500);
  EXPECT_EQ(tok.id_to_piece(kPadId), "<pad>");
  EXPECT_EQ(tok.id_to_piece(kUnkId), "<unk>");
  EXPECT_EQ(tok.id_to_piece(kBosId), "<s>");
  EXPECT_EQ(tok.id_to_piece(kEosId), "</s>");
  EXPECT_EQ(tok.piece_to_id("<pad>"), 0);
  EXPECT_EQ(tok.piece_to_id("<unk>"), 1);
  EXPECT_EQ(tok.piece_to_id("<s>"), 2);
  EXPECT_EQ(tok.piece_to_id("</s>"), 3);
  EXPECT_EQ(tok.piece_to_id("no-such-piece"), kUnkId);
  // The commonest words of Genesis are whole pieces.
  EXPECT_GT(tok.piece_to_id("▁the"), kEosId);
  EXPECT_GT(tok.piece_to_id("▁God"), kEosId);
  EXPECT_EQ(tok.id_to_piece(tok.piece_to_id("▁God")), "▁God");
}

TEST_F(TokenizerTest, VocabFileListsEveryPieceInIdOrder) {
  const auto tok = Tokenizer::load(model_path());
  const auto lines = read_lines((*dir_ / "kjv.vocab").string());
  ASSERT_EQ(static_cast<int64_t>(lines.size()), tok.vocab_size());
  EXPECT_EQ(lines[0], "<pad>\t0");
  EXPECT_EQ(lines[3], "</s>\t0");
  for (int64_t id = 0; id < tok.vocab_size(); ++id)
    EXPECT_EQ(lines[id].substr(0, lines[id].find('\t')), tok.id_to_piece(id));
}

TEST_F(TokenizerTest, RoundTripsEveryVerse) {
  const auto tok = Tokenizer::load(model_path());
  for (const auto& verse : read_lines(kCorpus)) {
    const auto ids = tok.encode(verse);
    ASSERT_FALSE(ids.empty());
    for (const auto id : ids) {
      EXPECT_GT(id, kEosId) << verse;  // no specials, and every character was seen
      EXPECT_LT(id, tok.vocab_size());
    }
    EXPECT_EQ(tok.decode(ids), verse);
    const auto pieces = tok.encode_pieces(verse);
    ASSERT_EQ(pieces.size(), ids.size());
    std::string joined;
    for (size_t i = 0; i < pieces.size(); ++i) {
      EXPECT_EQ(pieces[i], tok.id_to_piece(ids[i]));
      joined += pieces[i];
    }
    // "▁" (U+2581) stands for the space before a word, the first one included.
    std::string spaced;
    for (size_t pos = 0; pos < joined.size();) {
      if (joined.compare(pos, 3, "\xE2\x96\x81") == 0) {
        spaced += ' ';
        pos += 3;
      } else {
        spaced += joined[pos++];
      }
    }
    EXPECT_EQ(spaced, " " + verse);
  }
}

TEST_F(TokenizerTest, DecodeSkipsPadBosEosAndMarksUnknowns) {
  const auto tok = Tokenizer::load(model_path());
  const std::string verse = "And God saw the light, that it was good.";  // Genesis 1:4
  auto ids = tok.encode(verse);
  std::vector<int64_t> framed{kBosId};
  framed.insert(framed.end(), ids.begin(), ids.end());
  framed.insert(framed.end(), {kEosId, kPadId, kPadId});
  EXPECT_EQ(tok.decode(framed), verse);
  // "Q" never occurs in Genesis 1-8.
  const auto pieces = tok.encode_pieces("Quail");
  const auto unk = tok.encode("Quail");
  ASSERT_EQ(pieces.size(), unk.size());
  const auto q = std::find(pieces.begin(), pieces.end(), "Q");
  ASSERT_NE(q, pieces.end());
  EXPECT_EQ(unk[q - pieces.begin()], kUnkId);
  EXPECT_EQ(tok.decode({kUnkId}), " \xE2\x81\x87 ");  // SentencePiece's " ⁇ "
  EXPECT_EQ(tok.decode({}), "");
  auto err = error_of([&] { tok.decode({5, 500}); });
  EXPECT_NE(err.find("token id 500 is out of range [0, 500)"), std::string::npos) << err;
  err = error_of([&] { tok.id_to_piece(-1); });
  EXPECT_NE(err.find("out of range"), std::string::npos) << err;
}

TEST_F(TokenizerTest, IdsMatchDebianSpmEncode) {
  if (!have_program("spm_encode")) GTEST_SKIP() << "spm_encode not installed (apt-get install sentencepiece)";
  const auto tok = Tokenizer::load(model_path());
  // The first 40 verses plus text with characters the model never saw.
  auto lines = read_lines(kCorpus);
  lines.resize(40);
  lines.push_back("Quails & Zion: 12 tribes of Judah!");
  lines.push_back("  leading and   inner spaces ");
  std::string text;
  for (const auto& l : lines) text += l + "\n";
  const auto input = (*dir_ / "spm_input.txt").string();
  atomic_write_text(input, text);

  const auto ids = run_command("spm_encode --model " + model_path() + " --output_format=id < " + input);
  ASSERT_EQ(ids.status, 0);
  const auto id_lines = split_lines(ids.out);
  ASSERT_EQ(id_lines.size(), lines.size());
  const auto pieces =
      run_command("spm_encode --model " + model_path() + " --output_format=piece < " + input);
  ASSERT_EQ(pieces.status, 0);
  const auto piece_lines = split_lines(pieces.out);
  ASSERT_EQ(piece_lines.size(), lines.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    EXPECT_EQ(join(tok.encode(lines[i])), id_lines[i]) << lines[i];
    std::string ours;
    for (const auto& p : tok.encode_pieces(lines[i])) ours += (ours.empty() ? "" : " ") + p;
    EXPECT_EQ(ours, piece_lines[i]) << lines[i];
  }
}

TEST_F(TokenizerTest, TrainingMatchesDebianSpmTrain) {
  if (!have_program("spm_train")) GTEST_SKIP() << "spm_train not installed (apt-get install sentencepiece)";
  // The same options through spm_train's files: the same pieces, scores and order. (The
  // .model files differ only in the recorded trainer options, e.g. the input path.)
  const auto prefix = (*dir_ / "spm_train").string();
  ASSERT_EQ(run_command("spm_train --input=" + kCorpus + " --model_prefix=" + prefix +
                " --vocab_size=500 --character_coverage=1 --pad_id=0 --unk_id=1 --bos_id=2"
                " --eos_id=3 --pad_piece='<pad>' --num_threads=2 --minloglevel=2 >/dev/null 2>&1")
                .status,
            0);
  EXPECT_EQ(read_file(prefix + ".vocab"), read_file((*dir_ / "kjv.vocab").string()));
  const auto theirs = Tokenizer::load(prefix + ".model");
  const auto ours = Tokenizer::load(model_path());
  for (const auto& verse : read_lines(kCorpus)) EXPECT_EQ(theirs.encode(verse), ours.encode(verse));
}

// BERT's [CLS] [SEP] [MASK] (datasets/special_ids.h): user-defined symbols at ids 4, 5, 6, kept
// whole in raw text, with the ids Debian's spm_encode gives for the same model file.
TEST_F(TokenizerTest, BertSymbolsAtFixedIdsAndKeptWhole) {
  TokenizerTrainOptions o;
  o.inputs = {kCorpus};
  o.model_prefix = (*dir_ / "bert").string();
  o.vocab_size = 500;
  o.user_defined_symbols = bert_special_pieces();
  Tokenizer::train(o);
  const auto tok = Tokenizer::load(o.model_prefix + ".model");
  EXPECT_EQ(tok.vocab_size(), 500);
  EXPECT_EQ(tok.id_to_piece(kEosId), "</s>");
  EXPECT_EQ(tok.id_to_piece(kClsId), "[CLS]");
  EXPECT_EQ(tok.id_to_piece(kSepId), "[SEP]");
  EXPECT_EQ(tok.id_to_piece(kMaskId), "[MASK]");
  const std::string line = "In the beginning God created the [MASK] and the [MASK].";
  const auto ids = tok.encode(line);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), kMaskId), 2);
  const auto pieces = tok.encode_pieces(line);
  EXPECT_EQ(std::count(pieces.begin(), pieces.end(), "[MASK]"), 2);
  EXPECT_EQ(tok.decode(ids), line);
  // A symbol at the start of a line follows SentencePiece's dummy-prefix piece "▁".
  EXPECT_EQ(tok.encode_pieces("[CLS] God [SEP]"), (std::vector<std::string>{"▁", "[CLS]", "▁God", "▁", "[SEP]"}));
  // Models without the symbols are untouched: id 4 is an ordinary piece there.
  EXPECT_NE(Tokenizer::load(model_path()).id_to_piece(4), "[CLS]");
  EXPECT_NE(test::user_error_of([&] {
              auto bad = o;
              bad.user_defined_symbols = {"[A],[B]"};
              Tokenizer::train(bad);
            }).find("user-defined symbol"),
            std::string::npos);

  if (!have_program("spm_encode")) GTEST_SKIP() << "spm_encode not installed (apt-get install sentencepiece)";
  const std::vector<std::string> lines = {line, "[CLS] And God said [SEP] Let there be light [SEP]",
                                          "a[MASK]b [MASK][MASK] light"};
  std::string text;
  for (const auto& l : lines) text += l + "\n";
  const auto input = (*dir_ / "bert_input.txt").string();
  atomic_write_text(input, text);
  const auto theirs = run_command("spm_encode --model " + o.model_prefix + ".model --output_format=id < " + input);
  ASSERT_EQ(theirs.status, 0);
  const auto id_lines = split_lines(theirs.out);
  ASSERT_EQ(id_lines.size(), lines.size());
  for (size_t i = 0; i < lines.size(); ++i) EXPECT_EQ(join(tok.encode(lines[i])), id_lines[i]) << lines[i];
}

TEST_F(TokenizerTest, SerializedBytesAreTheModelFileAndCopiesShareIt) {
  std::optional<Tokenizer> copy;
  {
    const auto tok = Tokenizer::load(model_path());
    EXPECT_EQ(tok.serialized(), read_file(model_path()));
    copy = tok;  // the original goes away; the copy keeps the model alive
  }
  const auto again = Tokenizer::from_serialized(copy->serialized());
  const std::string verse = "And the evening and the morning were the first day.";
  EXPECT_EQ(copy->encode(verse), again.encode(verse));
  EXPECT_EQ(again.decode(again.encode(verse)), verse);
}

TEST_F(TokenizerTest, TrainingIsDeterministic) {
  TokenizerTrainOptions o;
  o.inputs = {kCorpus};
  o.model_prefix = (*dir_ / "again").string();
  o.vocab_size = 500;
  Tokenizer::train(o);
  EXPECT_EQ(read_file(o.model_prefix + ".model"), read_file(model_path()));
  EXPECT_EQ(read_file(o.model_prefix + ".vocab"), read_file((*dir_ / "kjv.vocab").string()));
}

TEST_F(TokenizerTest, EveryModelTypeTrainsAndRoundTrips) {
  const std::string verse = "And God said, Let there be light: and there was light.";
  for (const std::string type : {"bpe", "word", "char"}) {
    TokenizerTrainOptions o;
    o.inputs = {kCorpus};
    o.model_prefix = (*dir_ / ("m_" + type)).string();
    o.model_type = type;
    o.vocab_size = 300;
    Tokenizer::train(o);
    const auto tok = Tokenizer::load(o.model_prefix + ".model");
    EXPECT_EQ(tok.id_to_piece(kEosId), "</s>") << type;
    if (type == "bpe") {
      EXPECT_EQ(tok.vocab_size(), 300);
      EXPECT_EQ(tok.decode(tok.encode(verse)), verse);
    } else if (type == "word") {
      // Whitespace-separated words, punctuation included; rarer ones are unknown.
      EXPECT_EQ(tok.vocab_size(), 300);
      const std::string common = "And God said unto Noah, the earth";
      EXPECT_EQ(tok.encode_pieces(common),
                (std::vector<std::string>{"▁And", "▁God", "▁said", "▁unto", "▁Noah,", "▁the",
                                          "▁earth"}));
      EXPECT_EQ(tok.decode(tok.encode(common)), common);
    } else {
      // One piece per character (a space is "▁", and one "▁" is prefixed), whatever
      // vocab_size says: 54 characters, 55 pieces.
      EXPECT_LT(tok.vocab_size(), 100);
      EXPECT_EQ(tok.encode(verse).size(), 55u);
      EXPECT_EQ(tok.decode(tok.encode(verse)), verse);
    }
  }
}

TEST_F(TokenizerTest, SoftLimitAndInputSentenceSize) {
  TokenizerTrainOptions o;
  o.inputs = {kCorpus};
  o.model_prefix = (*dir_ / "big").string();
  o.vocab_size = 5000;
  const auto err = error_of([&] { Tokenizer::train(o); });
  EXPECT_NE(err.find("Vocabulary size too high (5000)"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(o.model_prefix + ".model"));
  o.hard_vocab_limit = false;
  Tokenizer::train(o);
  const auto soft = Tokenizer::load(o.model_prefix + ".model");
  EXPECT_GT(soft.vocab_size(), 500);
  EXPECT_LT(soft.vocab_size(), 5000);

  // Only the first 101 verses (to Genesis 4:21): Noah, named from Genesis 5:29 on, is
  // then no single piece.
  o.model_prefix = (*dir_ / "first101").string();
  o.input_sentence_size = 101;
  Tokenizer::train(o);
  const auto first = Tokenizer::load(o.model_prefix + ".model");
  EXPECT_LT(first.vocab_size(), soft.vocab_size());
  EXPECT_EQ(soft.encode_pieces("Noah"), (std::vector<std::string>{"▁Noah"}));
  EXPECT_NE(first.encode_pieces("Noah"), (std::vector<std::string>{"▁Noah"}));
  // SentencePiece refuses samples of 100 sentences or fewer.
  o.input_sentence_size = 100;
  EXPECT_NE(error_of([&] { Tokenizer::train(o); }).find("input sentence size"),
            std::string::npos);
}

TEST_F(TokenizerTest, TrainingErrors) {
  TokenizerTrainOptions o;
  o.model_prefix = (*dir_ / "bad").string();
  EXPECT_NE(error_of([&] { Tokenizer::train(o); }).find("no input files"), std::string::npos);

  const auto missing = (*dir_ / "missing.txt").string();
  o.inputs = {kCorpus, missing};
  auto err = error_of([&] { Tokenizer::train(o); });
  EXPECT_NE(err.find(missing), std::string::npos) << err;

  const auto blank = (*dir_ / "blank.txt").string();
  atomic_write_text(blank, "\n   \n\r\n");
  o.inputs = {blank};
  err = error_of([&] { Tokenizer::train(o); });
  EXPECT_NE(err.find("empty corpus"), std::string::npos) << err;
  EXPECT_NE(err.find(blank), std::string::npos) << err;

  o.inputs = {kCorpus};
  o.model_type = "wordpiece";
  err = error_of([&] { Tokenizer::train(o); });
  EXPECT_NE(err.find("unknown model type 'wordpiece'"), std::string::npos) << err;

  o.model_type = "unigram";
  o.vocab_size = 4;
  EXPECT_NE(error_of([&] { Tokenizer::train(o); }).find("at least 5"), std::string::npos);
  o.vocab_size = 100;
  o.character_coverage = 1.5;
  EXPECT_NE(error_of([&] { Tokenizer::train(o); }).find("character coverage"),
            std::string::npos);
  EXPECT_FALSE(fs::exists(o.model_prefix + ".model"));
}

TEST_F(TokenizerTest, BadModelFilesNameTheFile) {
  const auto missing = (*dir_ / "none.model").string();
  auto err = error_of([&] { Tokenizer::load(missing); });
  EXPECT_NE(err.find(missing), std::string::npos) << err;

  // A text file is not a model...
  err = error_of([&] { Tokenizer::load(kCorpus); });
  EXPECT_NE(err.find(kCorpus), std::string::npos) << err;
  EXPECT_NE(err.find("not a SentencePiece model"), std::string::npos) << err;
  // ... nor is a truncated one.
  const auto truncated = (*dir_ / "truncated.model").string();
  atomic_write_text(truncated, read_file(model_path()).substr(0, 1000));
  err = error_of([&] { Tokenizer::load(truncated); });
  EXPECT_NE(err.find(truncated), std::string::npos) << err;
  EXPECT_THROW(Tokenizer::from_serialized(""), UserError);
  EXPECT_THROW(Tokenizer::from_serialized("\x0a\x05hello"), UserError);
}

TEST_F(TokenizerTest, ModelsWithOtherSpecialIdsAreRejected) {
  if (!have_program("spm_train")) GTEST_SKIP() << "spm_train not installed (apt-get install sentencepiece)";
  // spm_train's defaults: unk=0 bos=1 eos=2, no pad.
  const auto prefix = (*dir_ / "foreign").string();
  ASSERT_EQ(run_command("spm_train --input=" + kCorpus + " --model_prefix=" + prefix +
                " --vocab_size=300 --minloglevel=2 >/dev/null 2>&1")
                .status,
            0);
  const auto err = error_of([&] { Tokenizer::load(prefix + ".model"); });
  EXPECT_NE(err.find("id 0 must be <pad>, found <unk>"), std::string::npos) << err;
}

// ---- nlpzoo tokenize, end to end ----

// The shim is loaded with RTLD_DEEPBIND, so any symbol it exports comes first when
// SentencePiece looks one up. It once exported the standard-library template instances GCC 13
// emitted in it (std::ostream::_M_insert<long>), and SentencePiece's static initialisers called
// the shim's copy and crashed (an Ubuntu 24.04 image, LibTorch 2.11). Only its C interface and
// the two streams of iostreams.cpp may be exported.
TEST(SentencePieceShim, ExportsOnlyItsInterface) {
  // nm comes with binutils, which the compiler itself needs.
  const auto shim = fs::read_symlink("/proc/self/exe").parent_path() / "libnlpzoo_spm.so";
  ASSERT_TRUE(fs::exists(shim)) << shim;
  const auto r = run_command("nm -D --defined-only " + shim.string());
  ASSERT_EQ(r.status, 0) << r.err;
  std::vector<std::string> names, stray;
  for (const auto& line : split_lines(r.out)) {
    const auto name = line.substr(line.rfind(' ') + 1);
    names.push_back(name);
    if (name.rfind("nlpzoo_spm_", 0) != 0 && name != "_ZSt4cout" && name != "_ZSt4cerr")
      stray.push_back(name);
  }
  EXPECT_TRUE(stray.empty()) << "exported beside the interface: " << testing::PrintToString(stray);
  EXPECT_NE(std::find(names.begin(), names.end(), "nlpzoo_spm_load"), names.end()) << r.out;
  EXPECT_NE(std::find(names.begin(), names.end(), "_ZSt4cerr"), names.end()) << r.out;
}

class RegressionTokenizeCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("nlpzoo_tokenize_cli_" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  test::CommandResult cli(const std::string& args) {
    auto r = test::run_cli("tokenize " + args);
    err_ = r.err;
    return r;
  }
  std::string err() { return err_; }
  std::string err_;
  fs::path dir_;
};

TEST_F(RegressionTokenizeCli, TrainEncodeDecode) {
  // Two inputs: the verses split in halves.
  const auto lines = read_lines(kCorpus);
  std::string a, b;
  for (size_t i = 0; i < lines.size(); ++i) (i < 100 ? a : b) += lines[i] + "\n";
  const auto fa = (dir_ / "a.txt").string(), fb = (dir_ / "b.txt").string();
  atomic_write_text(fa, a);
  atomic_write_text(fb, b);
  const auto prefix = (dir_ / "sub" / "m").string();
  auto r = cli("train --input " + fa + " --input " + fb + " --model-prefix " + prefix +
               " --vocab-size 400 --model-type bpe");
  ASSERT_EQ(r.status, 0) << err();
  EXPECT_EQ(r.out, "Wrote " + prefix + ".model and " + prefix + ".vocab (bpe, 400 pieces)\n");

  // The CLI's model equals the library's on the concatenated corpus.
  TokenizerTrainOptions o;
  o.inputs = {kCorpus};
  o.model_prefix = (dir_ / "lib").string();
  o.vocab_size = 400;
  o.model_type = "bpe";
  Tokenizer::train(o);
  EXPECT_EQ(read_file(prefix + ".model"), read_file(o.model_prefix + ".model"));

  const auto tok = Tokenizer::load(prefix + ".model");
  const auto in = (dir_ / "in.txt").string();
  atomic_write_text(in, lines[0] + "\n\n" + lines[1] + "\n");
  r = cli("encode --model " + prefix + ".model < " + in);
  ASSERT_EQ(r.status, 0) << err();
  EXPECT_EQ(r.out, join(tok.encode(lines[0])) + "\n\n" + join(tok.encode(lines[1])) + "\n");

  const auto ids = (dir_ / "ids.txt").string();
  atomic_write_text(ids, "2 " + r.out);  // a leading BOS is ignored
  r = cli("decode --model " + prefix + ".model < " + ids);
  ASSERT_EQ(r.status, 0) << err();
  EXPECT_EQ(r.out, lines[0] + "\n\n" + lines[1] + "\n");

  r = cli("encode --pieces --model " + prefix + ".model < " + in);
  ASSERT_EQ(r.status, 0) << err();
  std::string first;
  for (const auto& p : tok.encode_pieces(lines[0])) first += (first.empty() ? "" : " ") + p;
  EXPECT_EQ(split_lines(r.out).at(0), first);

  // A NUL byte of the text split its piece in two (the pieces crossed the shim NUL-separated),
  // so there were more pieces than ids, and a control byte was printed raw; now one piece per
  // id, and the CLI writes control bytes <0xNN>, as SentencePiece names byte pieces.
  const std::string nul_text("in the beginning\0God\x01 created", 29);
  atomic_write_text(in, nul_text + "\n");
  r = cli("encode --pieces --model " + prefix + ".model < " + in);
  ASSERT_EQ(r.status, 0) << err();
  const auto pieces = tok.encode_pieces(nul_text);
  EXPECT_EQ(pieces.size(), tok.encode(nul_text).size());
  const auto line = split_lines(r.out).at(0);
  EXPECT_EQ(std::count_if(line.begin(), line.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20; }), 0)
      << line;
  EXPECT_EQ(static_cast<size_t>(std::count(line.begin(), line.end(), ' ')) + 1, pieces.size()) << line;
  EXPECT_NE(line.find("<0x00>"), std::string::npos) << line;
}

TEST_F(RegressionTokenizeCli, ErrorsAndHelp) {
  // A command family asked for help lists its subcommands and succeeds; alone it is an error.
  auto help = run_command(std::string(NLPZOO_CLI) + " tokenize --help 2>&1");
  EXPECT_EQ(help.status, 0);
  EXPECT_NE(help.out.find("nlpzoo tokenize encode"), std::string::npos) << help.out;
  help = run_command(std::string(NLPZOO_CLI) + " tokenize 2>&1");
  EXPECT_EQ(help.status, 1);
  EXPECT_NE(help.out.find("needs a subcommand"), std::string::npos) << help.out;

  TokenizerTrainOptions o;
  o.inputs = {kCorpus};
  o.model_prefix = (dir_ / "m").string();
  o.vocab_size = 300;
  Tokenizer::train(o);
  const auto model = o.model_prefix + ".model";

  const auto bad = (dir_ / "bad_ids.txt").string();
  atomic_write_text(bad, "5 6\n7 x 8\n");
  auto r = cli("decode --model " + model + " < " + bad);
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(err().find("line 2: 'x' is not a token id"), std::string::npos) << err();
  atomic_write_text(bad, "5 6\n\n7 300\n");
  r = cli("decode --model " + model + " < " + bad);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(err().find("line 3: token id 300 is out of range [0, 300)"), std::string::npos)
      << err();

  r = cli("encode --model " + kCorpus + " < /dev/null");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(err().find(kCorpus + ": not a SentencePiece model"), std::string::npos) << err();

  r = cli("train --input " + kCorpus + " --model-prefix " + (dir_ / "x").string() +
          " --model-type wordpiece");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(err().find("unknown model type 'wordpiece'"), std::string::npos) << err();

  // An explicit NLPZOO_SPM_SHIM that does not exist is reported, not silently replaced.
  r = run_command("NLPZOO_SPM_SHIM=/nonexistent/libnlpzoo_spm.so " + std::string(NLPZOO_CLI) +
          " tokenize encode --model " + model + " < /dev/null 2>&1");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("cannot load the SentencePiece module"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("/nonexistent/libnlpzoo_spm.so"), std::string::npos) << r.out;

  r = cli("train --help");
  EXPECT_EQ(r.status, 0);
  for (const char* opt : {"--input arg", "--model-prefix arg", "--vocab-size arg (=8000)",
                          "--model-type arg (=unigram)", "--character-coverage arg (=1.0)",
                          "--soft-vocab-limit", "--input-sentence-size arg (=0)"})
    EXPECT_NE(r.out.find(opt), std::string::npos) << opt << "\n" << r.out;
  r = cli("encode --help");
  EXPECT_NE(r.out.find("--pieces"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--model arg"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace nlpzoo
