// End to end through the nlpzoo binary: a tiny translation run (train, resume, evaluate,
// translate, export) and every kind of bad input the issue names, each giving a one-line
// error that names the file/line/option, a non-zero exit, and no partial output.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "datasets/io.h"
#include "tests/test_util.h"

namespace fs = std::filesystem;
using namespace nlpzoo;

namespace {

using test::run_cli;
using test::shell_quote;
const auto& quote = shell_quote;
using Result = test::CommandResult;

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

const char* kTiny =
    "--src_vocab_size 60 --tgt_vocab_size 60 --embed_dim 16 --hidden_size 32 --attention_dim 16 "
    "--dropout 0 --lr 0.01 --max_tokens 400 --valid_interval 20 --log_interval 10 --device cpu";

class RegressionCli : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = test::fresh_temp_dir("cli");
    test::write_numbers_corpus(root_ / "data");
  }
  void TearDown() override { fs::remove_all(root_); }
  std::string config() const { return quote(std::string(NLPZOO_SOURCE_DIR) + "/configs/seq2seq-bahdanau-es-en.ini"); }
  std::string train(const std::string& run, const std::string& extra = "") {
    return "train --config " + config() + " --data-dir " + quote((root_ / "data").string()) + " --run-dir " +
           quote((root_ / run).string()) + " " + kTiny + " " + extra;
  }
  fs::path root_;
};

// The one-line error contract: status 1, "nlpzoo COMMAND: error: ..." naming `what`.
void expect_error(const Result& r, const std::string& what) {
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_NE(r.err.find(": error: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(what), std::string::npos) << "error should name '" << what << "': " << r.err;
}

TEST_F(RegressionCli, TrainResumeEvaluateTranslateExport) {
  auto r = run_cli(train("run", "--max-steps 40"));
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  for (const char* f : {"config.ini", "spm.es.model", "spm.en.model", "checkpoint_last.pt", "checkpoint_best.pt",
                        "metrics.jsonl"})
    EXPECT_TRUE(fs::exists(root_ / "run" / f)) << f;
  // Training again into the same folder without --resume would overwrite it: refused.
  expect_error(run_cli(train("run", "--max-steps 40")), "--resume");
  r = run_cli("train --run-dir " + quote((root_ / "run").string()) + " --resume --max-steps 60 --device cpu");
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("resumed from"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("done: 60 updates"), std::string::npos) << r.out;

  r = run_cli("evaluate --run-dir " + quote((root_ / "run").string()) + " --split valid --beam-size 2 --device cpu");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("perplexity"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("BLEU greedy: BLEU = "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("BLEU beam 2: BLEU = "), std::string::npos) << r.out;

  // An empty line translates to an empty line, in place; n-best prints k lines per sentence.
  r = run_cli("translate --run-dir " + quote((root_ / "run").string()) + " --beam-size 3 --device cpu",
              "el uno y el dos\n\nel rojo y el azul\n");
  ASSERT_EQ(r.status, 0) << r.err;
  std::vector<std::string> lines;
  std::istringstream out(r.out);
  for (std::string l; std::getline(out, l);) lines.push_back(l);
  ASSERT_EQ(lines.size(), 3u) << r.out;
  EXPECT_EQ(lines[1], "");
  EXPECT_FALSE(lines[0].empty());
  r = run_cli("translate --run-dir " + quote((root_ / "run").string()) + " --beam-size 3 --n-best 3 --device cpu",
              "el uno y el dos\n");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 3) << r.out;
  EXPECT_EQ(r.out.rfind("0 ||| ", 0), 0u) << r.out;

  // A sentence longer than max_positions is cut with a warning naming its line.
  std::string long_line;
  for (int i = 0; i < 80; ++i) long_line += "el uno y el dos ";
  r = run_cli("translate --run-dir " + quote((root_ / "run").string()) + " --device cpu", "el tres\n" + long_line + "\n");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("stdin line 2: longer than max_positions=64"), std::string::npos) << r.err;

  const auto png = (root_ / "attention.png").string();
  r = run_cli("translate --run-dir " + quote((root_ / "run").string()) + " --device cpu --attention-png " + quote(png),
              "el uno y el dos\n");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_GT(fs::file_size(png), 1000u);

  const auto pt = (root_ / "model.pt").string();
  r = run_cli("export --run-dir " + quote((root_ / "run").string()) + " --out " + quote(pt));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_GT(fs::file_size(pt), 10000u);
}

TEST_F(RegressionCli, MissingCorpusNamesTheFile) {
  auto r = run_cli("train --config " + config() + " --data-dir " + quote((root_ / "nowhere").string()) +
                   " --run-dir " + quote((root_ / "run").string()) + " " + kTiny);
  expect_error(r, (root_ / "nowhere" / "train.es").string());
  EXPECT_FALSE(fs::exists(root_ / "run" / "checkpoint_last.pt"));
}

TEST_F(RegressionCli, MismatchedLineCountsNameBothFiles) {
  write(root_ / "data" / "valid.en", "the one\n");
  auto r = run_cli(train("run"));
  expect_error(r, "valid.es");
  EXPECT_NE(r.err.find("valid.en"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(root_ / "run" / "checkpoint_last.pt"));
}

TEST_F(RegressionCli, EmptyCorpusIsAnError) {
  write(root_ / "data" / "train.es", "");
  write(root_ / "data" / "train.en", "");
  expect_error(run_cli(train("run")), "train.es");
  EXPECT_FALSE(fs::exists(root_ / "run" / "checkpoint_last.pt"));
}

TEST_F(RegressionCli, UnknownKeyAndBadValueNameTheKey) {
  expect_error(run_cli(train("run", "--hiden_size 8")), "hiden_size");
  expect_error(run_cli(train("run", "--cell transformer")), "cell");
  expect_error(run_cli(train("run", "--hidden_size many")), "hidden_size");
  expect_error(run_cli(train("run", "--bogus-flag 1")), "bogus-flag");  // not a config key either
  expect_error(run_cli("translate --run-dir x --beam-width 3"), "beam-width");
}

TEST_F(RegressionCli, CorruptAndForeignCheckpointsNameTheFile) {
  write(root_ / "run" / "checkpoint_best.pt", "garbage, not a checkpoint");
  expect_error(run_cli("translate --run-dir " + quote((root_ / "run").string()), "hola\n"),
               (root_ / "run" / "checkpoint_best.pt").string());
  expect_error(run_cli("translate --run-dir " + quote((root_ / "empty").string()), "hola\n"), "checkpoint_best.pt");
  // Resuming with a config that builds another model: the parameters do not fit.
  ASSERT_EQ(run_cli(train("run2", "--max-steps 2")).status, 0);
  const auto before = read_file((root_ / "run2" / "checkpoint_last.pt").string());
  auto r = run_cli("train --run-dir " + quote((root_ / "run2").string()) + " --resume --hidden_size 48 --device cpu");
  expect_error(r, "checkpoint_last.pt");
  EXPECT_NE(r.err.find("shape"), std::string::npos) << r.err;
  EXPECT_EQ(read_file((root_ / "run2" / "checkpoint_last.pt").string()), before) << "the checkpoint was touched";
}

}  // namespace

namespace {

TEST_F(RegressionCli, TransformerTrainsTranslatesAndDrawsOneHead) {
  const std::string cfg = quote(std::string(NLPZOO_SOURCE_DIR) + "/configs/transformer-base-es-en.ini");
  auto r = run_cli("train --config " + cfg + " --data-dir " + quote((root_ / "data").string()) + " --run-dir " +
                   quote((root_ / "tf").string()) +
                   " --src_vocab_size 60 --tgt_vocab_size 60 --d_model 16 --num_heads 2 --ffn_dim 32"
                   " --num_encoder_layers 1 --num_decoder_layers 1 --warmup_steps 10 --max_tokens 400"
                   " --max-steps 30 --valid_interval 30 --device cpu");
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  const auto png = (root_ / "tf.png").string();
  r = run_cli("translate --run-dir " + quote((root_ / "tf").string()) + " --beam-size 4 --attention-head 1 --device cpu"
              " --attention-png " + quote(png), "el uno y el dos\n\n");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 2) << r.out;
  EXPECT_GT(fs::file_size(png), 1000u);
  expect_error(run_cli("translate --run-dir " + quote((root_ / "tf").string()) + " --attention-head 2", "uno\n"),
               "--attention-head");
  const auto pt = (root_ / "tf.pt").string();
  r = run_cli("export --run-dir " + quote((root_ / "tf").string()) + " --out " + quote(pt));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_GT(fs::file_size(pt), 10000u);
}

// share_embeddings: one joint tokenizer over both languages and one embedding matrix, which
// a checkpoint alone brings back for translation; the RNN refuses the key.
TEST_F(RegressionCli, TransformerSharesOneJointVocabulary) {
  const std::string cfg = quote(std::string(NLPZOO_SOURCE_DIR) + "/configs/transformer-base-es-en.ini");
  const auto run = root_ / "joint";
  auto r = run_cli("train --config " + cfg + " --data-dir " + quote((root_ / "data").string()) + " --run-dir " +
                   quote(run.string()) +
                   " --share_embeddings true --src_vocab_size 70 --tgt_vocab_size 70 --d_model 16 --num_heads 2"
                   " --ffn_dim 32 --num_encoder_layers 1 --num_decoder_layers 1 --max_tokens 400 --max-steps 3"
                   " --valid_interval 3 --device cpu");
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_TRUE(fs::exists(run / "spm.joint.model"));
  EXPECT_FALSE(fs::exists(run / "spm.es.model"));
  EXPECT_FALSE(fs::exists(run / "spm.en.model"));
  // Spanish and English words are pieces of one vocabulary.
  r = run_cli("tokenize encode --model " + quote((run / "spm.joint.model").string()), "el uno y el dos\nthe one and the two\n");
  ASSERT_EQ(r.status, 0) << r.err;
  std::istringstream ids(r.out);
  for (std::string id; ids >> id;) EXPECT_NE(id, "1") << "unknown piece in: " << r.out;  // 1 = <unk>
  r = run_cli("translate --run-dir " + quote(run.string()) + " --device cpu", "el uno y el dos\n");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  expect_error(run_cli(train("rnn", "--share_embeddings true --max-steps 1")), "share_embeddings");
}

}  // namespace

namespace {

// Ctrl-C during training: the run stops with status 130 after saving a checkpoint that
// --resume continues from.
TEST_F(RegressionCli, InterruptSavesAResumableCheckpoint) {
  const auto run = quote((root_ / "run").string());
  const auto metrics = quote((root_ / "run" / "metrics.jsonl").string());
  const std::string script = std::string("NLPZOO_THREADS=1 ") + quote(NLPZOO_CLI) + " " + train("run", "--max-steps 100000 --log_interval 1") +
                             " >/dev/null & pid=$!; "
                             "for i in $(seq 1 300); do [ -s " + metrics + " ] && break; sleep 0.1; done; "
                             "kill -INT $pid; wait $pid; echo status=$?";
  auto r = test::run_command(script);
  EXPECT_NE(r.out.find("status=130"), std::string::npos) << r.out << r.err;
  ASSERT_TRUE(fs::exists(root_ / "run" / "checkpoint_last.pt"));
  r = run_cli("train --run-dir " + run + " --resume --max-steps 3 --device cpu");
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("resumed from"), std::string::npos) << r.out;
}

}  // namespace

namespace {

// A bad value fails before any slow work, so no tokenizer is left behind to be mistaken for
// the next run's; the next run trains its own at the size it asks for.
TEST_F(RegressionCli, BadValueFailsFirstAndLeavesNothingBehind) {
  expect_error(run_cli(train("run", "--hidden_size abc")), "hidden_size");
  expect_error(run_cli(train("run", "--hidden_size -4")), "must be positive");
  expect_error(run_cli("train --config " + config() + " --data-dir " + quote((root_ / "data").string()) +
                       " --run-dir " + quote((root_ / "run").string()) + " --device gpu"),
               "--device gpu");
  EXPECT_FALSE(fs::exists(root_ / "run" / "spm.es.model"));
  ASSERT_EQ(run_cli(train("run", "--max-steps 2 --tgt_vocab_size 30")).status, 0);
  const auto config = read_file((root_ / "run" / "config.ini").string());
  const auto at = config.find("tgt_vocab_size = ");
  ASSERT_NE(at, std::string::npos);
  EXPECT_LE(std::stoi(config.substr(at + 17)), 30) << config;
}

TEST_F(RegressionCli, BudgetsDoNotStickAndAReachedBudgetChangesNothing) {
  const auto run = quote((root_ / "run").string());
  ASSERT_EQ(run_cli(train("run", "--max-steps 4 --max-time 5")).status, 0);
  const auto config = read_file((root_ / "run" / "config.ini").string());
  EXPECT_NE(config.find("max_time = 0\n"), std::string::npos) << config;
  const auto checkpoint = read_file((root_ / "run" / "checkpoint_last.pt").string());
  const auto metrics = read_file((root_ / "run" / "metrics.jsonl").string());
  auto r = run_cli("train --run-dir " + run + " --resume --device cpu");  // max_steps 4 is reached
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("nothing to train"), std::string::npos) << r.out;
  EXPECT_EQ(read_file((root_ / "run" / "checkpoint_last.pt").string()), checkpoint);
  EXPECT_EQ(read_file((root_ / "run" / "metrics.jsonl").string()), metrics);
  // Evaluating needs only the split it scores.
  for (const char* f : {"train.es", "train.en", "test.es", "test.en"}) fs::remove(root_ / "data" / f);
  r = run_cli("evaluate --run-dir " + run + " --split valid --no-bleu --device cpu");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.find("skipped"), std::string::npos) << r.out;
}

TEST_F(RegressionCli, ResumeWithAnotherModelNamesTheChangedKey) {
  const auto run = quote((root_ / "run").string());
  ASSERT_EQ(run_cli(train("run", "--max-steps 2")).status, 0);
  auto r = run_cli("train --run-dir " + run + " --resume --hidden_size 48 --max-steps 4 --device cpu");
  expect_error(r, "hidden_size (32 -> 48)");
}

TEST_F(RegressionCli, TranslateEdgeCases) {
  const auto run = quote((root_ / "run").string());
  // Stopped before its first validation: only checkpoint_last.pt, and the error says so.
  ASSERT_EQ(run_cli(train("run", "--max-steps 2 --valid_interval 100")).status, 0);
  fs::remove(root_ / "run" / "checkpoint_best.pt");
  expect_error(run_cli("translate --run-dir " + run, "uno\n"), "--checkpoint last");
  // n-best output keeps its format for an empty line.
  auto r = run_cli("translate --run-dir " + run + " --checkpoint last --beam-size 2 --n-best 2 --device cpu",
                   "el uno\n\n");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("\n1 |||  ||| 0\n"), std::string::npos) << r.out;
  // An attention plot that cannot be written fails before any translation is printed.
  r = run_cli("translate --run-dir " + run + " --checkpoint last --attention-png /nonexistent/dir/a.png", "uno\n");
  expect_error(r, "/nonexistent/dir");
  EXPECT_EQ(r.out, "");
}

}  // namespace
