// `nlpzoo evaluate` (human and --json), `export` and the prediction commands asked of every
// registered task through its capabilities (Task::evaluate, export_torchscript,
// translation_model, ...), each on a tiny run of the task trained here; and the Metrics type.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <regex>
#include <sstream>

#include "core/io.h"
#include "tests/test_util.h"
#include "train/metrics.h"
#include "train/tasks/registry.h"

namespace fs = std::filesystem;
using namespace nlpzoo;
using test::run_cli;
using test::shell_quote;

namespace {

std::vector<std::string> read_lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// ---- Metrics ---------------------------------------------------------------------------------

TEST(Metrics, LineAndJsonSayValueDirectionAndUnit) {
  Metrics m;
  m.add({"loss", 2.302585, Better::kLower, 4, "nats/token"})
      .add({"perplexity", 10.0, Better::kLower, 2, ""})
      .add({"target_tokens", 1234, Better::kNeither, 0, ""})
      .add({"bleu_greedy", 12.3456, Better::kHigher, 2, ""});
  EXPECT_EQ(m.line(), "loss 2.3026 nats/token | perplexity 10.00 | target_tokens 1234 | bleu_greedy 12.35");
  EXPECT_EQ(m.to_json().dump(),
            R"({"bleu_greedy":{"better":"higher","value":12.3456},)"
            R"("loss":{"better":"lower","unit":"nats/token","value":2.302585},)"
            R"("perplexity":{"better":"lower","value":10.0},"target_tokens":{"value":1234}})");
  EXPECT_EQ(m.at("perplexity").value, 10.0);
  EXPECT_EQ(m.find("accuracy"), nullptr);
  EXPECT_THROW(m.at("accuracy"), std::out_of_range);
  EXPECT_THROW(m.add({"loss", 1, Better::kLower, 4, ""}), std::invalid_argument);
  EXPECT_THROW(m.add({"", 1, Better::kLower, 4, ""}), std::invalid_argument);
  Metrics nan;
  nan.add({"loss", std::numeric_limits<double>::quiet_NaN(), Better::kLower, 4, ""});
  EXPECT_EQ(nan.to_json().dump(), R"({"loss":{"better":"lower","value":null}})");
  Metrics more;
  more.add({"accuracy", 0.5, Better::kHigher, 4, ""}).details = "b\n";
  m.details = "a\n";
  m.add(more);
  EXPECT_EQ(m.all().back().name, "accuracy");
  EXPECT_EQ(m.details, "a\nb\n");
}

// A task that declares nothing beyond Task's pure methods: two batches of 4 tokens whose
// summed loss is 8 each.
class BareTask : public Task {
 public:
  void setup(Config&, const TaskContext&) override {}
  std::shared_ptr<torch::nn::Module> model() override { return model_.ptr(); }
  int64_t num_batches(Split, int64_t) override { return 2; }
  Batch make_batch(Split, int64_t, int64_t) override {
    Batch b;
    b.num_examples = 1;
    b.num_tokens = 4;
    return b;
  }
  LossOutput loss(const Batch& b) override { return {torch::tensor(8.0), b.num_tokens}; }

 private:
  torch::nn::Linear model_{1, 1};
};

TEST(TaskDefaults, EvaluateIsTheLossPerTokenAndNoCapabilityIsOffered) {
  BareTask task;
  const auto m = task.evaluate(Split::kValid, EvaluationOptions{});
  // The default profile: loss per token, a perplexity, the token count.
  EXPECT_EQ(m.line(), "loss 2.0000 nats/token | perplexity 7.39 | tokens 8");
  EXPECT_EQ(task.default_evaluation_split(), Split::kTest);
  EXPECT_NE(test::user_error_of([&] { task.export_torchscript("/tmp/x.pt", ""); }).find("has no TorchScript export"),
            std::string::npos);
  EXPECT_EQ(task.translation_model(), nullptr);
  EXPECT_EQ(task.text_generator(), nullptr);
  EXPECT_EQ(task.sentence_classifier(), nullptr);
  EXPECT_EQ(task.word_vector_source(), nullptr);
  EXPECT_EQ(task.mask_filler(), nullptr);
}

// ---- every task through the CLI ----------------------------------------------------------------

struct Recipe {
  std::string config;  // in configs/
  std::string flags;   // what makes the run tiny
  Split default_split;
  std::vector<std::string> metrics;  // the names evaluate --json reports
  std::string count;                 // the one counting what the loss is averaged over
};

// A tiny run of every registered task. A task registered without one here fails
// EveryTaskEvaluates: each task must be walked through evaluate.
const std::map<std::string, Recipe>& recipes() {
  static const std::map<std::string, Recipe> r = {
      {"translation",
       {"seq2seq-bahdanau-es-en.ini",
        "--src_vocab_size 60 --tgt_vocab_size 60 --embed_dim 16 --hidden_size 32 --attention_dim 16 --dropout 0 "
        "--lr 0.01 --max_tokens 400 --max-steps 6 --valid_interval 3",
        Split::kTest,
        {"loss", "perplexity", "target_tokens", "bleu_greedy", "bleu_beam2"},
        "target_tokens"}},
      {"language_model",
       {"lm-lstm-bible.ini",
        "--vocab_size 40 --embed_dim 16 --hidden_size 16 --num_layers 1 --dropout 0 --bptt 8 --batch_size 4 "
        "--max-steps 6 --valid_interval 3",
        Split::kTest,
        {"loss", "perplexity", "tokens"},
        "tokens"}},
      {"gpt",
       {"gpt-char-shakespeare.ini",
        "--text_file '' --d_model 16 --num_heads 2 --num_layers 1 --ffn_dim 32 --block_size 16 --batch_size 4 "
        "--max-steps 6 --valid_interval 3",
        Split::kTest,
        {"loss", "perplexity", "tokens", "bits_per_character", "loss_per_character"},
        "tokens"}},
      {"classification",
       {"sst2-avgemb.ini", "--vocab_size 40 --embed_dim 16 --max_tokens 400 --max-steps 6 --valid_interval 3",
        Split::kTest,
        {"loss", "sentences", "accuracy", "macro_f1", "mcc", "f1"},  // labels 0 and 1: "1" is positive
        "sentences"}},
      {"word2vec",
       {"skipgram-ns.ini", "--max_epochs 2 --batch_size 200 --valid_every 10 --dim 8 --min_count 1", Split::kValid,
        {"loss", "words"},
        "words"}},
      {"glove",
       {"glove.ini", "--max_epochs 2 --batch_size 200 --valid_every 5 --dim 8 --min_count 1 --window 3",
        Split::kValid,
        {"loss", "entries"},
        "entries"}},
      {"masked_lm",
       {"bert-mini-english.ini",
        "--vocab_size 40 --d_model 16 --num_heads 2 --num_layers 1 --ffn_dim 32 --max_positions 24 --batch_size 4 "
        "--valid_every 20 --spm_normalization identity --max-steps 6 --valid_interval 3",
        Split::kValid,
        {"loss", "perplexity", "masked", "accuracy"},
        "masked"}},
      {"bilm",
       {"elmo-bilm-english.ini",
        "--vocab_size 40 --embed_dim 8 --hidden_size 12 --max_positions 24 --batch_size 4 --valid_every 20 "
        "--spm_normalization identity --max-steps 6 --valid_interval 3",
        Split::kValid,
        {"loss", "perplexity", "tokens", "forward_loss", "forward_perplexity", "backward_loss", "backward_perplexity"},
        "tokens"}},
      {"electra",
       {"electra-small-english.ini",
        "--vocab_size 40 --d_model 16 --num_heads 2 --num_layers 1 --ffn_dim 32 --max_positions 24 --batch_size 4 "
        "--valid_every 20 --spm_normalization identity --max-steps 6 --valid_interval 3",
        Split::kValid,
        {"loss", "masked", "generator_accuracy", "mlm_loss", "mlm_perplexity", "disc_loss", "discriminator_accuracy",
         "replaced_f1"},
        "masked"}},
  };
  return r;
}

class RegressionEvaluateCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = new fs::path(test::fresh_temp_dir("evaluate_cli"));
    test::write_task_corpora(*root_ / "data");
  }
  static void TearDownTestSuite() {
    fs::remove_all(*root_);
    delete root_;
  }
  static std::string run(const std::string& task) { return shell_quote((*root_ / task).string()); }
  // Trains the task's tiny run once for the whole suite; the result of that training.
  static const test::CommandResult& train(const std::string& task) {
    static std::map<std::string, test::CommandResult> trained;
    if (!trained.count(task)) trained[task] = train_now(task, recipes().at(task));
    return trained.at(task);
  }
  static test::CommandResult train_now(const std::string& task, const Recipe& r) {
    return run_cli("train --config " + shell_quote(std::string(NLPZOO_SOURCE_DIR) + "/configs/" + r.config) +
                   " --data-dir " + shell_quote((*root_ / "data").string()) + " --run-dir " + run(task) + " " +
                   r.flags + " --log_interval 1 --device cpu");
  }
  // The lowest valid loss the Trainer logged: the one checkpoint_best.pt was saved at.
  // The valid loss logged at the last validation marked best (by the run's best_metric).
  static double best_logged_valid_loss(const std::string& task) {
    double best = std::numeric_limits<double>::infinity();
    for (const auto& line : read_lines((*root_ / task / "metrics.jsonl").string())) {
      const auto j = nlohmann::json::parse(line);
      if (j.contains("valid_loss") && j.at("best").get<bool>()) best = j.at("valid_loss").get<double>();
    }
    return best;
  }
  static fs::path* root_;
};
fs::path* RegressionEvaluateCli::root_ = nullptr;

void expect_error(const test::CommandResult& r, const std::string& what) {
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_NE(r.err.find(": error: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(what), std::string::npos) << "error should say '" << what << "': " << r.err;
}

TEST_F(RegressionEvaluateCli, EveryTaskEvaluatesExportsAndAnswersEachCommand) {
  for (const auto& task : task_names()) {
    SCOPED_TRACE(task);
    const auto it = recipes().find(task);
    ASSERT_NE(it, recipes().end()) << "task '" << task << "' has no tiny run in " << __FILE__;
    const Recipe& recipe = it->second;
    auto r = train(task);
    ASSERT_EQ(r.status, 0) << r.out << r.err;

    // --json: one object on stdout (what the task prints while loading goes to stderr).
    r = run_cli("evaluate --run-dir " + run(task) + " --split valid --beam-size 2 --json --device cpu");
    ASSERT_EQ(r.status, 0) << r.out << r.err;
    nlohmann::json j;
    ASSERT_NO_THROW(j = nlohmann::json::parse(r.out)) << r.out;
    EXPECT_EQ(j["task"], task);
    EXPECT_EQ(j["split"], "valid");
    EXPECT_EQ(j["checkpoint"], (*root_ / task / "checkpoint_best.pt").string());
    EXPECT_GT(j["step"].get<int64_t>(), 0);
    const auto& metrics = j["metrics"];
    std::vector<std::string> names;
    for (const auto& [name, m] : metrics.items()) names.push_back(name);
    auto expected = recipe.metrics;
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(names, expected) << metrics.dump();
    // checkpoint_best.pt is the parameters of the last validation the Trainer logged as best
    // (the lowest valid loss, or for classification the highest accuracy: best_metric auto).
    const double loss = metrics.at("loss").at("value").get<double>();
    EXPECT_NEAR(loss, best_logged_valid_loss(task), 1e-4 * std::abs(loss) + 1e-6) << metrics.dump();
    EXPECT_EQ(metrics.at("loss").at("better"), "lower");
    const auto& count = metrics.at(recipe.count);
    EXPECT_GT(count.at("value").get<int64_t>(), 0);
    EXPECT_FALSE(count.contains("better"));
    if (metrics.contains("perplexity")) {
      EXPECT_NEAR(metrics.at("perplexity").at("value").get<double>(), std::exp(loss), 1e-9 * std::exp(loss));
    }

    // The human report: the same numbers on one line, then the task's details.
    auto human = run_cli("evaluate --run-dir " + run(task) + " --split valid --beam-size 2 --device cpu");
    ASSERT_EQ(human.status, 0) << human.err;
    char loss_text[64];
    std::snprintf(loss_text, sizeof loss_text, "): loss %.4f ", loss);
    EXPECT_NE(human.out.find(loss_text), std::string::npos) << human.out;

    // Without --split: the task's default (test, or valid when there is no test split).
    r = run_cli("evaluate --run-dir " + run(task) + " --json --no-bleu --device cpu");
    ASSERT_EQ(r.status, 0) << r.out << r.err;
    EXPECT_EQ(nlohmann::json::parse(r.out)["split"], to_string(recipe.default_split));

    // export: the twin, or an error saying the task has none.
    const auto pt = (*root_ / (task + ".pt")).string();
    r = run_cli("export --run-dir " + run(task) + " --out " + shell_quote(pt));
    if (r.status == 0) {
      EXPECT_GT(fs::file_size(pt), 1000u) << task;
      EXPECT_NE(r.out.find("config.ini"), std::string::npos) << r.out;
    } else {
      expect_error(r, "has no TorchScript export");
    }

    // Every prediction command either serves the run or names what the task is not.
    const std::map<std::string, std::pair<std::string, std::string>> commands = {
        {"translation", {"translate --device cpu", "which does not translate"}},
        {"language_model", {"generate --device cpu --seed 1 --max-new-tokens 3", "which does not generate text"}},
        {"classification", {"classify --device cpu", "which does not classify"}},
        {"word2vec", {"embed similar one -k 1", "which has no word vectors"}},
        {"masked_lm", {"fill-mask --device cpu -k 2", "which does not fill in [MASK]"}},
    };
    for (const auto& [serving, command] : commands) {
      const auto c = run_cli(command.first + " --run-dir " + run(task),
                             serving == "masked_lm" ? "the [MASK] and the two\n" : "the one and the two\n");
      const bool serves = serving == task || (serving == "word2vec" && task == "glove") ||
                          (serving == "masked_lm" && task == "electra") ||  // through its generator
                          (serving == "language_model" && task == "gpt");
      if (serves) {
        EXPECT_EQ(c.status, 0) << command.first << ": " << c.err;
      } else {
        expect_error(c, "this run trains task '" + task + "', " + command.second);
      }
    }
  }
}

// Known answers of the task-specific scores: BLEU is the one the human report prints and the
// hypotheses it wrote; accuracy is that of `classify`'s labels against the gold ones.
TEST_F(RegressionEvaluateCli, ScoresAgreeWithTheirOtherReports) {
  ASSERT_EQ(train("translation").status, 0);
  auto r = run_cli("evaluate --run-dir " + run("translation") + " --split valid --beam-size 2 --json --device cpu");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out)["metrics"];
  r = run_cli("evaluate --run-dir " + run("translation") + " --split valid --beam-size 2 --device cpu");
  ASSERT_EQ(r.status, 0) << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex("BLEU greedy: BLEU = ([0-9.]+)"))) << r.out;
  EXPECT_NEAR(std::stod(m[1]), j.at("bleu_greedy").at("value").get<double>(), 0.006) << r.out;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex("BLEU beam 2: BLEU = ([0-9.]+)"))) << r.out;
  EXPECT_NEAR(std::stod(m[1]), j.at("bleu_beam2").at("value").get<double>(), 0.006) << r.out;
  EXPECT_EQ(read_lines((*root_ / "translation" / "hyp.valid.best.greedy.txt").string()).size(), 100u);

  ASSERT_EQ(train("classification").status, 0);
  r = run_cli("evaluate --run-dir " + run("classification") + " --split dev --json --device cpu");
  ASSERT_EQ(r.status, 0) << r.err;
  const double accuracy = nlohmann::json::parse(r.out)["metrics"]["accuracy"]["value"].get<double>();
  std::string sentences;
  std::vector<std::string> gold;
  for (const auto& line : read_lines((*root_ / "data" / "dev.tsv").string())) {
    sentences += line.substr(0, line.find('\t')) + "\n";
    gold.push_back(line.substr(line.find('\t') + 1));
  }
  r = run_cli("classify --run-dir " + run("classification") + " --device cpu", sentences);
  ASSERT_EQ(r.status, 0) << r.err;
  std::istringstream out(r.out);
  int correct = 0, n = 0;
  for (std::string line; std::getline(out, line); ++n) correct += line.substr(0, line.find('\t')) == gold.at(n);
  ASSERT_EQ(n, 100);
  EXPECT_DOUBLE_EQ(accuracy, correct / 100.0);
}

// fill-mask: one output line per [MASK] with k candidates whose probabilities fall; a line
// without [MASK] is an error that names and echoes it.
TEST_F(RegressionEvaluateCli, FillMaskGivesTopKPerMaskAndEchoesALineWithoutOne) {
  ASSERT_EQ(train("masked_lm").status, 0);
  auto r = run_cli("fill-mask --run-dir " + run("masked_lm") + " -k 3 --device cpu",
                   "the [MASK] and the [MASK]\n\nthe one [MASK]\n");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto lines = read_lines_of(r.out);
  ASSERT_EQ(lines.size(), 3u) << r.out;
  EXPECT_EQ(lines[0].rfind("1\t1\t", 0), 0u) << lines[0];
  EXPECT_EQ(lines[1].rfind("1\t2\t", 0), 0u) << lines[1];
  EXPECT_EQ(lines[2].rfind("3\t1\t", 0), 0u) << lines[2];
  std::smatch m;
  double previous = 1.0;
  std::string rest = lines[0].substr(4);
  int candidates = 0;
  for (; std::regex_search(rest, m, std::regex("(\\S+) ([01]\\.[0-9]{4})")); rest = m.suffix(), ++candidates) {
    const double p = std::stod(m[2]);
    EXPECT_LE(p, previous) << lines[0];
    previous = p;
  }
  EXPECT_EQ(candidates, 3) << lines[0];

  r = run_cli("fill-mask --run-dir " + run("masked_lm") + " --device cpu", "the [MASK] one\nno mask here\n");
  expect_error(r, "stdin line 2: fill-mask: no [MASK] in the line \"no mask here\"");

  // 100 masks in a model of 24 positions: 22 fit between [CLS] and [SEP]; the other 78 get a
  // row that says so, and the warning names them and quotes at most ~200 characters.
  std::string many;
  for (int i = 0; i < 100; ++i) many += "[MASK] ";
  r = run_cli("fill-mask --run-dir " + run("masked_lm") + " -k 2 --device cpu", many + "\n");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto rows = read_lines_of(r.out);
  ASSERT_EQ(rows.size(), 100u) << r.out;
  EXPECT_EQ(rows[21].find("none"), std::string::npos) << rows[21];
  EXPECT_EQ(rows[22], "1\t23\t(none: beyond max_positions)");
  EXPECT_EQ(rows[99], "1\t100\t(none: beyond max_positions)");
  EXPECT_NE(r.err.find("[MASK] 23-100 of 100 fall beyond it"), std::string::npos) << r.err;
  EXPECT_LT(r.err.size(), 500u) << r.err;
  EXPECT_NE(r.err.find("(700 bytes in all)"), std::string::npos) << r.err;
  r = run_cli("fill-mask --run-dir " + run("masked_lm") + " --device cpu", std::string(5000, 'x') + "\n");
  EXPECT_NE(r.status, 0);
  EXPECT_LT(r.err.size(), 500u) << r.err;
}

// Word-vector runs have no test split: evaluate scores their valid split by default, says what
// measures the vectors themselves, and names the missing split when asked for it.
TEST_F(RegressionEvaluateCli, WordVectorRunsEvaluateWhatTheyHave) {
  ASSERT_EQ(train("word2vec").status, 0);
  auto r = run_cli("evaluate --run-dir " + run("word2vec") + " --device cpu");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("valid ("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("nats/word"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("perplexity"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("nlpzoo embed eval --run-dir"), std::string::npos) << r.out;
  expect_error(run_cli("evaluate --run-dir " + run("word2vec") + " --split test --device cpu"), "no test split");
}

}  // namespace
