// End to end through the nlpzoo binary: a tiny translation run (train, resume, evaluate,
// translate, export) and every kind of bad input we know of, each giving a one-line error
// that names the file/line/option, a non-zero exit, and no partial output.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/io.h"
#include "infer/search.h"
#include "tests/test_util.h"
#include "train/task.h"
#include "train/tasks/registry.h"

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

// "0 ||| text ||| score ||| lp lp ..." (translate --token-scores): the score, the summed
// log-probability and the number of scored pieces (EOS included).
struct ScoredLine {
  double score = 0, log_prob = 0;
  int pieces = 0;
};
ScoredLine scored_line(const std::string& line) {
  ScoredLine s;
  const auto field = [&](int k) {
    size_t at = 0;
    for (int i = 0; i < k; ++i) at = line.find(" ||| ", at) + 5;
    return line.substr(at, line.find(" ||| ", at) - at);
  };
  s.score = std::stod(field(2));
  std::istringstream lps(line.substr(line.rfind(" ||| ") + 5));
  for (double lp; lps >> lp; ++s.pieces) s.log_prob += lp;
  return s;
}

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
  EXPECT_NE(r.out.find("100 sentences in"), std::string::npos) << r.out;
  // --max-sentences bounds the decoding (and says so); the loss still covers the whole split.
  const std::string loss_line = r.out.substr(0, r.out.find('\n'));
  r = run_cli("evaluate --run-dir " + quote((root_ / "run").string()) +
              " --split valid --beam-size 2 --max-sentences 10 --device cpu");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("BLEU greedy (first 10 of 100 sentences): BLEU = "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("BLEU beam 2 (first 10 of 100 sentences): BLEU = "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("10 sentences in"), std::string::npos) << r.out;
  EXPECT_EQ(read_lines((root_ / "run" / "hyp.valid.best.greedy.txt").string()).size(), 10u);
  const auto loss_at = [](const std::string& text) { return text.substr(text.find("loss"), 30); };
  EXPECT_EQ(loss_at(r.out), loss_at(loss_line)) << r.out;
  expect_error(run_cli("evaluate --run-dir " + quote((root_ / "run").string()) + " --max-sentences -1"),
               "--max-sentences");

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
  // int8 linear layers: the same lines, and their scores near float32's (a 32-wide toy model).
  r = run_cli("translate --run-dir " + quote((root_ / "run").string()) + " --beam-size 3 --token-scores --device cpu",
              "el uno y el dos\nel rojo y el azul\n");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto int8 = run_cli("translate --run-dir " + quote((root_ / "run").string()) +
                                " --beam-size 3 --token-scores --quantize int8 --device cpu",
                            "el uno y el dos\nel rojo y el azul\n");
  ASSERT_EQ(int8.status, 0) << int8.err;
  EXPECT_NE(int8.out, r.out) << "the int8 path changes the scores a little";
  std::istringstream fp32_lines(r.out), int8_lines(int8.out);
  for (std::string a, b; std::getline(fp32_lines, a) && std::getline(int8_lines, b);)
    EXPECT_NEAR(scored_line(a).score, scored_line(b).score, 0.25) << a << "\n" << b;
  expect_error(run_cli("translate --run-dir " + quote((root_ / "run").string()) + " --quantize int4", "x\n"),
               "--quantize int4");
  r = run_cli("translate --run-dir " + quote((root_ / "run").string()) + " --beam-size 3 --n-best 3 --device cpu",
              "el uno y el dos\n");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 3) << r.out;
  EXPECT_EQ(r.out.rfind("0 ||| ", 0), 0u) << r.out;

  // The GRU reads a source longer than max_positions whole (no position table ends); asked
  // for a limit, translate cuts it with a warning naming its line.
  std::string long_line;
  for (int i = 0; i < 80; ++i) long_line += "el uno y el dos ";
  r = run_cli("translate --run-dir " + quote((root_ / "run").string()) + " --device cpu", "el tres\n" + long_line + "\n");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err.find("longer than max_positions"), std::string::npos) << r.err;
  r = run_cli("translate --run-dir " + quote((root_ / "run").string()) + " --max-positions 64 --device cpu",
              "el tres\n" + long_line + "\n");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("stdin line 2: longer than max_positions=64 pieces; translated its first 63"), std::string::npos)
      << r.err;
  expect_error(run_cli("translate --run-dir " + quote((root_ / "run").string()) + " --max-positions 1", "uno\n"),
               "--max-positions");

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

// A translation run's config key length_penalty is its decoding default (the GRU's and the
// Transformer's configs say 1.0, the LSTM's keeps the search's 0.7); --length-penalty overrides it. Read off translate's
// scores: score = summed log-probability / pieces^alpha.
// keep_last keeps the last N validations as checkpoint_<step>.pt; checkpoint average writes
// their mean (which evaluate reads as --checkpoint averaged); search-errors scores the
// reference and each beam's output by forced decoding: the reference's log-prob is
// --score-reference's, a beam output's is the one translate --token-scores reports, and the
// verdicts follow from the scores.
TEST_F(RegressionCli, KeepLastAverageAndSearchErrors) {
  const std::string run = quote((root_ / "run").string());
  auto r = run_cli(train("run", "--max-steps 60 --keep_last 2"));  // validations at 20, 40, 60
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_FALSE(fs::exists(root_ / "run" / "checkpoint_20.pt"));
  ASSERT_TRUE(fs::exists(root_ / "run" / "checkpoint_40.pt"));
  ASSERT_TRUE(fs::exists(root_ / "run" / "checkpoint_60.pt"));
  expect_error(run_cli("checkpoint average --run-dir " + run + " --last 3"), "2 periodic checkpoints");
  expect_error(run_cli("evaluate --run-dir " + run + " --checkpoint averaged --no-bleu"), "nlpzoo checkpoint average");
  expect_error(run_cli("evaluate --run-dir " + run + " --checkpoint 20 --no-bleu"), "the steps kept are 40, 60");
  // A file named for another step than it holds (copied in by hand) is not averaged as that step.
  fs::copy_file(root_ / "run" / "checkpoint_40.pt", root_ / "run" / "checkpoint_99.pt");
  expect_error(run_cli("checkpoint average --run-dir " + run), "named for step 99 but holds step 40");
  fs::remove(root_ / "run" / "checkpoint_99.pt");
  // Written elsewhere, it is read as a file.
  r = run_cli("checkpoint average --run-dir " + run + " --out " + quote((root_ / "avg.pt").string()));
  ASSERT_EQ(r.status, 0) << r.err;
  r = run_cli("evaluate --run-dir " + run + " --checkpoint " + quote((root_ / "avg.pt").string()) +
              " --split valid --no-bleu --device cpu");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("avg.pt, step 60"), std::string::npos) << r.out;
  r = run_cli("checkpoint average --run-dir " + run + " --last 2");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("the mean of 2 checkpoints (steps 40 to 60)"), std::string::npos) << r.out;
  auto a = load_run((root_ / "run" / "checkpoint_40.pt").string(), torch::kCPU);
  auto b = load_run((root_ / "run" / "checkpoint_60.pt").string(), torch::kCPU);
  auto mean = load_run((root_ / "run" / "checkpoint_averaged.pt").string(), torch::kCPU);
  const auto pa = a.task->model()->named_parameters(), pb = b.task->model()->named_parameters();
  for (const auto& p : mean.task->model()->named_parameters())
    EXPECT_TRUE(torch::allclose(p.value(), (pa[p.key()] + pb[p.key()]) / 2, 1e-6, 1e-7)) << p.key();
  r = run_cli("evaluate --run-dir " + run + " --checkpoint averaged --split valid --no-bleu --device cpu");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("checkpoint_averaged.pt, step 60"), std::string::npos) << r.out;

  expect_error(run_cli("search-errors --run-dir " + run + " --beam-sizes 1,3,1"), "1 is given twice");
  expect_error(run_cli("search-errors --run-dir " + run + " --beam-sizes 1,3 --beam-size 2"), "give one");
  r = run_cli("search-errors --run-dir " + run + " --split valid --beam-sizes 1,3 --max-sentences 12 --json --device cpu");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto report = nlohmann::json::parse(r.out);
  ASSERT_EQ(report["beams"].size(), 2u);
  for (const auto& beam : report["beams"]) {
    EXPECT_EQ(beam["sentences"], 12);
    EXPECT_EQ(beam["exact"].get<int>() + beam["search_errors"].get<int>() + beam["model_errors"].get<int>(), 12);
  }
  r = run_cli("search-errors --run-dir " + run + " --split valid --score-reference --max-sentences 12 --device cpu");
  ASSERT_EQ(r.status, 0) << r.err;
  std::istringstream reference_lines(r.out);
  std::string sources;
  for (const auto& sentence : report["sentences"]) {
    std::string line;
    ASSERT_TRUE(std::getline(reference_lines, line)) << r.out;
    std::vector<std::string> fields;
    std::istringstream tabs(line);
    for (std::string field; std::getline(tabs, field, '\t');) fields.push_back(field);
    EXPECT_EQ(std::stoi(fields.at(0)), sentence["line"].get<int>());
    EXPECT_NEAR(std::stod(fields.at(1)), sentence["reference"]["log_prob"].get<double>(), 1e-4) << line;
    for (const auto& output : sentence["outputs"]) {
      const double ours = output["score"], reference = sentence["reference"]["score"];
      const std::string verdict = output["verdict"];
      if (verdict != "exact") {
        EXPECT_EQ(verdict == "search_error", reference > ours) << sentence.dump();
      }
    }
  }
  const auto valid = read_lines((root_ / "data" / "valid.es").string());
  for (int i = 0; i < 12; ++i) sources += valid[i] + "\n";
  r = run_cli("translate --run-dir " + run + " --beam-size 3 --token-scores --device cpu", sources);
  ASSERT_EQ(r.status, 0) << r.err;
  std::istringstream translated(r.out);
  int compared = 0;
  for (const auto& sentence : report["sentences"]) {
    std::string line;
    ASSERT_TRUE(std::getline(translated, line));
    const auto& beam3 = sentence["outputs"][1];
    // Only finished outputs (pieces scored = tokens + EOS): a cut one is rescored with its EOS.
    const auto scored = scored_line(line);
    if (line.find(" ||| " + beam3["text"].get<std::string>() + " ||| ") == std::string::npos ||
        scored.pieces != beam3["length"].get<int>())
      continue;
    EXPECT_NEAR(scored.log_prob, beam3["log_prob"].get<double>(), 1e-4) << line;
    ++compared;
  }
  EXPECT_GT(compared, 6);
}

TEST_F(RegressionCli, LengthPenaltyDefaultIsTheRunsOwn) {
  auto r = run_cli(train("run", "--max-steps 2 --length_penalty 0"));
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  const std::string translate = "translate --run-dir " + quote((root_ / "run").string()) + " --beam-size 3 --token-scores";
  r = run_cli(translate, "el uno y el dos\n");
  ASSERT_EQ(r.status, 0) << r.err;
  auto s = scored_line(r.out);
  ASSERT_GT(s.pieces, 1) << r.out;
  EXPECT_NEAR(s.score, s.log_prob, 1e-3 * std::abs(s.log_prob)) << r.out;  // alpha 0: the raw log-probability
  r = run_cli(translate + " --length-penalty 1", "el uno y el dos\n");
  ASSERT_EQ(r.status, 0) << r.err;
  s = scored_line(r.out);
  EXPECT_NEAR(s.score, s.log_prob / s.pieces, 1e-3 * std::abs(s.log_prob / s.pieces)) << r.out;
  // Through the API too: evaluate given no search decodes with the run's alpha (it took 0.7).
  // Alpha 5 makes even this 2-step model's beam prefer long outputs.
  {
    r = run_cli(train("long", "--max-steps 2 --length_penalty 5"));
    ASSERT_EQ(r.status, 0) << r.out << r.err;
    auto run = load_run((root_ / "long" / "checkpoint_last.pt").string(), torch::kCPU, (root_ / "data").string(),
                        {Split::kValid});
    SearchOptions search;
    const auto beam_output = [&](const SearchOptions* with, const std::string& name) {
      EvaluationOptions options;
      options.search = with;
      options.max_decoded = 40;
      options.output_prefix = (root_ / name).string();
      run.task->evaluate(Split::kValid, options);
      return read_file((root_ / (name + ".beam5.txt")).string());
    };
    search.length_penalty = 0.7;
    const auto at_default = beam_output(&search, "alpha07");
    search.length_penalty = 5;
    const auto at_run = beam_output(&search, "alpha5");
    ASSERT_NE(at_default, at_run) << "alpha must change this model's beam output for the check below to mean anything";
    EXPECT_EQ(beam_output(nullptr, "none"), at_run);
  }
  // Old runs (no key) and configs without it: the search's default, 0.7.
  const auto luong = quote(std::string(NLPZOO_SOURCE_DIR) + "/configs/seq2seq-luong-es-en.ini");
  r = run_cli("train --config " + luong + " --data-dir " + quote((root_ / "data").string()) + " --run-dir " +
              quote((root_ / "plain").string()) + " " + kTiny + " --max-steps 2");
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  r = run_cli("translate --run-dir " + quote((root_ / "plain").string()) + " --token-scores", "el uno y el dos\n");
  ASSERT_EQ(r.status, 0) << r.err;
  s = scored_line(r.out);
  EXPECT_NEAR(s.score, s.log_prob / std::pow(s.pieces, 0.7), 1e-3 * std::abs(s.score)) << r.out;
  expect_error(run_cli(train("bad", "--max-steps 1 --length_penalty nan")), "length_penalty");
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
  // Found before the tokenizers train (it was found after, leaving spm.*.model behind).
  EXPECT_FALSE(fs::exists(root_ / "run" / "spm.es.model"));
  EXPECT_FALSE(fs::exists(root_ / "run" / "spm.en.model"));
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

// Budgets given on the command line (either spelling) bound that invocation only: the run's
// config.ini keeps the config file's (here none), a later --resume takes its own budget, and
// --resume without one uses the run's config. A reached budget changes nothing and names the
// epoch as the progress lines count it (3 batches per epoch: 6 updates end epoch 2, the run
// stands in epoch 3).
TEST_F(RegressionCli, BudgetsDoNotStickAndAReachedBudgetChangesNothing) {
  const auto run = quote((root_ / "run").string());
  ASSERT_EQ(run_cli(train("run", "--max-steps 4 --max-time 5 --max_epochs 9")).status, 0);
  auto config = read_file((root_ / "run" / "config.ini").string());
  for (const char* kept : {"max_time = 0\n", "max_steps = 0\n", "max_epochs = 0\n"})
    EXPECT_NE(config.find(kept), std::string::npos) << config;
  auto r = run_cli("train --run-dir " + run + " --resume --max-steps 6 --log_interval 1 --device cpu");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("done: 6 updates"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("step 6 | epoch 3 |"), std::string::npos) << r.out;
  EXPECT_NE(read_file((root_ / "run" / "config.ini").string()).find("max_steps = 0\n"), std::string::npos);
  // The run's own budget, as a config file would give it.
  config = read_file((root_ / "run" / "config.ini").string());
  config.replace(config.find("max_steps = 0\n"), 14, "max_steps = 6\n");
  atomic_write_text((root_ / "run" / "config.ini").string(), config);
  const auto checkpoint = read_file((root_ / "run" / "checkpoint_last.pt").string());
  const auto metrics = read_file((root_ / "run" / "metrics.jsonl").string());
  r = run_cli("train --run-dir " + run + " --resume --device cpu");  // max_steps 6 is reached
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("resumed from"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("at step 6, epoch 3\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("nothing to train: the run is at step 6, epoch 3 (2 done)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("max_steps 6,"), std::string::npos) << r.out;
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

namespace {

// Progress within seconds: the start line (parameters, batches, budget), the first update, and
// a line after every log_seconds however large log_interval is; log_seconds = 0 leaves only
// log_interval (and the first update). metrics.jsonl records only log_interval's reports.
TEST_F(RegressionCli, ProgressShowsWithinSecondsWhateverLogInterval) {
  auto r = run_cli(train("run", "--max-steps 5 --log_interval 1000 --log_seconds 1e-9"));
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  for (int step = 1; step <= 5; ++step)
    EXPECT_NE(r.out.find("step " + std::to_string(step) + " | epoch "), std::string::npos) << step << r.out;
  auto loaded = load_run((root_ / "run" / "checkpoint_last.pt").string(), torch::kCPU);
  int64_t parameters = 0;
  for (const auto& p : loaded.task->model()->parameters()) parameters += p.numel();
  EXPECT_NE(r.out.find("training translation: " + std::to_string(parameters) + " parameters on cpu (fp32) | 3 batches "
                       "per epoch, 1 per update | budget: max_steps 5 | progress every 1000 updates or 1e-09 s"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("first update: "), std::string::npos) << r.out;
  EXPECT_EQ(read_file((root_ / "run" / "metrics.jsonl").string()).find("\"loss\""), std::string::npos);

  r = run_cli(train("quiet", "--max-steps 5 --log_interval 1000 --log_seconds 0"));
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("step 1 | epoch 1"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("step 2 | epoch"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("budget: max_steps 5 | progress every 1000 updates\n"), std::string::npos) << r.out;
}

// Your own corpus with other split names (val.*): a clear error naming the missing file, the
// expected names and what the folder holds, before any tokenizer is trained.
TEST_F(RegressionCli, OwnCorpusWithOtherSplitNamesFailsBeforeTokenizers) {
  for (const char* split : {"train", "val", "test"})
    for (const char* lang : {"de", "en"}) write(root_ / "own" / (std::string(split) + "." + lang), "ein\none\n");
  auto r = run_cli("train --config " + config() + " --data-dir " + quote((root_ / "own").string()) + " --run-dir " +
                   quote((root_ / "run").string()) + " " + kTiny + " --src_lang de --tgt_lang en");
  expect_error(r, (root_ / "own" / "valid.de").string() + ": no such file");
  for (const char* named : {"train, valid and test", "train.de, train.en, valid.de, valid.en", "holds: test.de test.en "
                            "train.de train.en val.de val.en"})
    EXPECT_NE(r.err.find(named), std::string::npos) << named << r.err;
  EXPECT_EQ(r.out.find("SentencePiece"), std::string::npos) << r.out;
  for (const char* f : {"spm.de.model", "spm.en.model", "checkpoint_last.pt"}) EXPECT_FALSE(fs::exists(root_ / "run" / f)) << f;
}

// A Transformer with learned positions cuts sources to the run's max_positions (rows past it
// were never trained), and --max-positions may lower the limit but not raise it.
TEST_F(RegressionCli, TranslateCutsOnlyLearnedPositions) {
  const std::string cfg = quote(std::string(NLPZOO_SOURCE_DIR) + "/configs/transformer-base-es-en.ini");
  const auto run = quote((root_ / "tf").string());
  auto r = run_cli("train --config " + cfg + " --data-dir " + quote((root_ / "data").string()) + " --run-dir " + run +
                   " --src_vocab_size 60 --tgt_vocab_size 60 --d_model 16 --num_heads 2 --ffn_dim 32 --positions learned"
                   " --num_encoder_layers 1 --num_decoder_layers 1 --warmup_steps 10 --max_tokens 400 --max_positions 20"
                   " --max-steps 2 --device cpu");
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  std::string long_line;
  for (int i = 0; i < 10; ++i) long_line += "el uno y el dos ";
  r = run_cli("translate --run-dir " + run + " --checkpoint last --max-length 5 --device cpu", long_line + "\n");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("stdin line 1: longer than max_positions=20 pieces; translated its first 19"), std::string::npos)
      << r.err;
  r = run_cli("translate --run-dir " + run + " --checkpoint last --max-length 5 --max-positions 8 --device cpu",
              long_line + "\n");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("longer than max_positions=8 pieces"), std::string::npos) << r.err;
  expect_error(run_cli("translate --run-dir " + run + " --checkpoint last --max-positions 40", "uno\n"),
               "learned positions end at max_positions=20");
}

}  // namespace
