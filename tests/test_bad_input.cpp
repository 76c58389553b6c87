// (Regression) Bad input to every command, as a table: each case writes its files, runs the
// nlpzoo binary, and must exit with a status in 1..125 (not a crash by signal, not success),
// print a message naming the file, line, option or key at fault, and leave no output file
// (the `absent` paths) and no temporary file behind. A new bad-input bug becomes one row.
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "tests/test_util.h"

namespace fs = std::filesystem;
using namespace nlpzoo;

namespace {

struct BadInput {
  std::string name;                          // what is wrong
  std::map<std::string, std::string> files;  // path under the scratch folder -> contents
  std::string args;                          // nlpzoo arguments; {root} = the scratch folder
  std::string stdin_text;
  std::vector<std::string> expected;  // each must appear in stderr ({root} expanded)
  std::vector<std::string> absent;    // paths under the scratch folder that must not exist afterwards
};

std::string expand(std::string s, const std::string& root) {
  for (size_t at; (at = s.find("{root}")) != std::string::npos;) s.replace(at, 6, root);
  return s;
}

const std::string kSeq2seq = std::string(NLPZOO_SOURCE_DIR) + "/configs/seq2seq-bahdanau-es-en.ini";
const std::string kSst2 = std::string(NLPZOO_SOURCE_DIR) + "/configs/sst2-avgemb.ini";
const std::string kTinyTranslation =
    " --src_vocab_size 40 --tgt_vocab_size 40 --embed_dim 8 --hidden_size 8 --attention_dim 8 --device cpu"
    " --max-steps 1";

// Parallel text: `n` lines of the numbers corpus are enough to reach each check.
std::map<std::string, std::string> numbers_corpus(const std::string& dir) {
  std::string es, en;
  for (int i = 0; i < 40; ++i) {
    es += "el uno y el dos numero " + std::to_string(i % 7) + "\n";
    en += "the one and the two number " + std::to_string(i % 7) + "\n";
  }
  std::map<std::string, std::string> files;
  for (const char* split : {"train", "valid", "test"}) {
    files[dir + "/" + split + ".es"] = es;
    files[dir + "/" + split + ".en"] = en;
  }
  return files;
}

std::map<std::string, std::string> with(std::map<std::string, std::string> files,
                                        const std::map<std::string, std::string>& more) {
  for (const auto& [path, text] : more) files[path] = text;
  return files;
}

std::string sst_lines(int n, const std::string& sep = "\t") {
  std::string text = "sentence" + sep + "label\n";
  for (int i = 0; i < n; ++i) text += (i % 2 ? "a fine good film" : "a dull bad film") + sep + std::to_string(i % 2) + "\n";
  return text;
}

std::string train_translation(const std::string& extra) {
  return "train --config " + test::shell_quote(kSeq2seq) + " --data-dir {root}/data --run-dir {root}/run" +
         kTinyTranslation + " " + extra;
}

// configs/sst2-bert.ini at a tiny size.
std::string train_bert(const std::string& extra) {
  return "train --config " + test::shell_quote(std::string(NLPZOO_SOURCE_DIR) + "/configs/sst2-bert.ini") +
         " --data-dir {root}/sst --run-dir {root}/run --device cpu --max-steps 1 " + extra;
}

std::string train_classifier(const std::string& extra = "") {
  return "train --config " + test::shell_quote(kSst2) + " --data-dir {root}/sst --run-dir {root}/run --device cpu "
         "--vocab_size 30 --max-steps 1 " + extra;
}

std::vector<BadInput> cases() {
  const auto corpus = numbers_corpus("data");
  const std::string vectors = "3 2\nparis 1 0\nfrance 0 1\nberlin 1 1\n";
  std::string many_labels = "sentence\tlabel\n";
  for (int i = 0; i < 3000; ++i) many_labels += "some words\tlabel number " + std::to_string(i) + "\n";
  return {
      // The command line and config files.
      {"unknown command", {}, "frobnicate", "", {"frobnicate"}, {}},
      {"unknown option", {}, "bleu --ref x --smoothing exp", "", {"smoothing"}, {}},
      {"missing config", {}, "train --config {root}/none.ini --run-dir {root}/run", "", {"{root}/none.ini"}, {"run"}},
      {"unknown config key", {{"c.ini", "task = translation\nhiden_size = 8\n"}},
       "train --config {root}/c.ini --run-dir {root}/run", "", {"{root}/c.ini", "hiden_size"}, {"run"}},
      {"config key given twice",
       {{"c.ini", "task = translation\nhidden_size = 8\n# a comment\nhidden_size = 16\n"}},
       "train --config {root}/c.ini --run-dir {root}/run", "", {"{root}/c.ini:4", "hidden_size", "line 2"}, {"run"}},
      {"negative lr", corpus, train_translation("--lr -1"), "", {"'lr'"}, {"run/spm.es.model"}},
      {"NaN lr", corpus, train_translation("--lr nan"), "", {"'lr'"}, {"run/spm.es.model"}},
      {"infinite clip_norm", corpus, train_translation("--clip_norm inf"), "", {"'clip_norm'"}, {"run/spm.es.model"}},
      {"update_freq 0", corpus, train_translation("--update_freq 0"), "", {"'update_freq'"}, {"run/spm.es.model"}},
      {"negative valid_interval", corpus, train_translation("--valid_interval -1"), "", {"'valid_interval'"},
       {"run/spm.es.model"}},
      {"negative max_sentences", corpus, train_translation("--max_sentences -1"), "", {"'max_sentences'"},
       {"run/checkpoint_last.pt"}},
      {"non-numeric value", corpus, train_translation("--hidden_size many"), "", {"hidden_size"}, {"run/spm.es.model"}},
      {"missing corpus", {}, train_translation(""), "", {"{root}/data/train.es"}, {"run/spm.es.model"}},
      {"empty corpus", with(corpus, {{"data/train.es", ""}, {"data/train.en", ""}}), train_translation(""), "",
       {"train.es"}, {"run/spm.es.model"}},
      {"misaligned corpus", with(corpus, {{"data/valid.en", "the one\n"}}), train_translation(""), "",
       {"valid.es", "valid.en"}, {"run/spm.es.model", "run/spm.en.model"}},
      // Classification TSVs.
      {"TSV with a third column", {{"sst/train.tsv", sst_lines(20) + "x\t1\textra\n"}, {"sst/dev.tsv", sst_lines(4)}},
       train_classifier(), "", {"{root}/sst/train.tsv:22", "tsv_columns"}, {"run/spm.model"}},
      {"TSV header with a third column",
       {{"sst/train.tsv", "sentence\tlabel\tnote\n" + sst_lines(20).substr(15)}, {"sst/dev.tsv", sst_lines(4)}},
       train_classifier(), "", {"{root}/sst/train.tsv:1", "3 tab-separated"}, {"run/spm.model"}},
      {"TSV without tabs", {{"sst/train.tsv", sst_lines(20, " ")}, {"sst/dev.tsv", sst_lines(4)}}, train_classifier(),
       "", {"{root}/sst/train.tsv:1"}, {"run/spm.model"}},
      {"dev label unseen in training", {{"sst/train.tsv", sst_lines(20)}, {"sst/dev.tsv", sst_lines(4) + "odd\t7\n"}},
       train_classifier(), "", {"{root}/sst/dev.tsv:6", "'7'"}, {"run/checkpoint_last.pt"}},
      {"text column out of range", {{"sst/train.tsv", sst_lines(20)}, {"sst/dev.tsv", sst_lines(4)}},
       train_classifier("--text_column 2"), "", {"text_column"}, {"run/spm.model"}},
      {"one label only", {{"sst/train.tsv", "sentence\tlabel\na film\t1\nthe film\t1\n"}, {"sst/dev.tsv", sst_lines(4)}},
       train_classifier(), "", {"{root}/sst/train.tsv", "two labels"}, {"run/checkpoint_last.pt"}},
      // Fine-tuning BERT (arch = bert): init_from must be a pre-trained masked_lm run folder.
      {"init_from missing", {{"sst/train.tsv", sst_lines(20)}, {"sst/dev.tsv", sst_lines(4)}},
       train_bert("--init_from {root}/nowhere"), "", {"'init_from'", "{root}/nowhere does not exist"}, {"run/spm.model"}},
      {"init_from not a run", {{"sst/train.tsv", sst_lines(20)}, {"sst/dev.tsv", sst_lines(4)}, {"notrun/x.txt", "x"}},
       train_bert("--init_from {root}/notrun"), "", {"{root}/notrun is not a run folder", "checkpoint_last.pt"},
       {"run/spm.model"}},
      {"init_from a corrupt checkpoint",
       {{"sst/train.tsv", sst_lines(20)}, {"sst/dev.tsv", sst_lines(4)}, {"bad/checkpoint_last.pt", "not a checkpoint"}},
       train_bert("--init_from {root}/bad"), "", {"{root}/bad/checkpoint_last.pt"}, {"run/spm.model"}},
      {"init_from with arch rnn", {{"sst/train.tsv", sst_lines(20)}, {"sst/dev.tsv", sst_lines(4)}},
       train_classifier("--init_from {root}/sst"), "", {"'init_from'", "arch = bert"}, {"run/spm.model"}},
      // BLEU.
      {"negative smoothing value", {{"h.txt", "a b c\n"}, {"r.txt", "a b d\n"}},
       "bleu --ref {root}/r.txt --hyp {root}/h.txt --smooth floor --smooth-value -5", "", {"--smooth-value"}, {}},
      {"NaN smoothing value", {{"h.txt", "a b c\n"}, {"r.txt", "a b d\n"}},
       "bleu --ref {root}/r.txt --hyp {root}/h.txt --smooth add-k --smooth-value nan", "", {"--smooth-value"}, {}},
      {"missing reference", {{"h.txt", "a\n"}}, "bleu --ref {root}/r.txt --hyp {root}/h.txt", "", {"{root}/r.txt"}, {}},
      {"reference of another length", {{"h.txt", "a\nb\n"}, {"r.txt", "a\n"}},
       "bleu --ref {root}/r.txt --hyp {root}/h.txt", "", {"{root}/r.txt"}, {}},
      // Word vectors.
      {"vector header beyond the file", {{"v.txt", "9223372036854775807 2\nparis 1 0\n"}},
       "embed similar paris --vectors {root}/v.txt", "", {"{root}/v.txt", "header (line 1) counts"}, {}},
      {"vector dimension beyond the file", {{"v.txt", "1 9223372036854775807\nparis 1 0\n"}},
       "embed similar paris --vectors {root}/v.txt", "", {"{root}/v.txt:1", "header"}, {}},
      {"vector line with a missing value", {{"v.txt", "2 2\nparis 1 0\nfrance 1\n"}},
       "embed similar paris --vectors {root}/v.txt", "", {"{root}/v.txt:3"}, {}},
      {"vector value not a number", {{"v.txt", "2 2\nparis 1 0\nfrance 1 x\n"}},
       "embed similar paris --vectors {root}/v.txt", "", {"{root}/v.txt:3", "'x'"}, {}},
      {"out-of-vocabulary query", {{"v.txt", vectors}}, "embed similar rome --vectors {root}/v.txt", "", {"'rome'"},
       {}},
      {"export to a missing folder", {{"v.txt", vectors}},
       "embed export --vectors {root}/v.txt --format text --out {root}/no/such/dir/v.txt", "", {"{root}/no/such/dir"},
       {"no"}},
      // Tokenizer and checkpoints.
      {"missing tokenizer model", {}, "tokenize encode --model {root}/spm.model", "hola\n", {"{root}/spm.model"}, {}},
      {"corrupt checkpoint", {{"run/checkpoint_best.pt", "garbage"}}, "translate --run-dir {root}/run", "hola\n",
       {"{root}/run/checkpoint_best.pt"}, {}},
      {"evaluate without a run", {}, "evaluate --run-dir {root}/run", "", {"{root}/run"}, {}},
      {"upgrade of a missing run folder", {}, "checkpoint upgrade {root}/none", "", {"{root}/none"}, {}},
      {"upgrade of a file that is no checkpoint", {{"run/checkpoint_last.pt", "garbage"}},
       "checkpoint upgrade {root}/run", "", {"{root}/run/checkpoint_last.pt"}, {}},
      {"a run folder holding only a best checkpoint", with(corpus, {{"run/checkpoint_best.pt", "hours of work"}}),
       train_translation(""), "", {"checkpoint_best.pt", "--resume"}, {"run/spm.es.model"}},
      {"resume without a checkpoint", corpus, "train --run-dir {root}/run --resume", "", {"checkpoint_last.pt"},
       {"run/checkpoint_last.pt"}},
      {"many unseen labels stay short", {{"sst/train.tsv", many_labels}, {"sst/dev.tsv", "w\tnew label\n"}},
       train_classifier("--tsv_header false"), "", {"{root}/sst/dev.tsv:1", "in all"}, {"run/checkpoint_last.pt"}},
  };
}

class BadInput_ : public ::testing::TestWithParam<size_t> {};

TEST_P(BadInput_, FailsCleanlyAndNamesTheCulprit) {
  const BadInput c = cases().at(GetParam());
  SCOPED_TRACE(c.name);
  const fs::path root = test::fresh_temp_dir("bad_input_" + std::to_string(GetParam()));
  for (const auto& [path, text] : c.files) {
    fs::create_directories((root / path).parent_path());
    std::ofstream(root / path, std::ios::binary) << text;
  }
  const auto r = test::run_cli(expand(c.args, test::shell_quote(root.string())), c.stdin_text);
  EXPECT_GE(r.status, 1) << r.err;
  EXPECT_LE(r.status, 125) << r.err;
  EXPECT_NE(r.err.find("error"), std::string::npos) << r.err;
  for (const auto& what : c.expected)
    EXPECT_NE(r.err.find(expand(what, root.string())), std::string::npos)
        << "the message should name '" << expand(what, root.string()) << "':\n" << r.err;
  EXPECT_LT(r.err.size(), 2000u) << "a one-line message, not a dump";
  for (const auto& path : c.absent) EXPECT_FALSE(fs::exists(root / path)) << path << " was written";
  for (const auto& entry : fs::recursive_directory_iterator(root))
    EXPECT_EQ(entry.path().filename().string().find(".tmp."), std::string::npos) << entry.path() << " left behind";
  fs::remove_all(root);
}

// The "Regression" prefix files the cases with the other end-to-end tests (CMakeLists.txt).
INSTANTIATE_TEST_SUITE_P(Regression, BadInput_, ::testing::Range<size_t>(0, cases().size()),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           std::string name = cases().at(info.param).name;
                           for (char& ch : name) ch = std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
                           return name;
                         });

}  // namespace
