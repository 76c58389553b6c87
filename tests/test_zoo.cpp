// checkpoints/MANIFEST.json (the reference models) and `nlpzoo zoo list|train|check`.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <torch/version.h>
#include <regex>
#include <set>
#include <sstream>

#include "core/io.h"
#include "train/checkpoint.h"
#include "core/config.h"
#include "tests/test_util.h"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace nlpzoo;
using test::run_cli;
using test::shell_quote;

namespace {

json manifest() { return json::parse(read_file(std::string(NLPZOO_SOURCE_DIR) + "/checkpoints/MANIFEST.json")); }

// A config without an entry fails here, so a new model cannot skip the reference suite.
TEST(ZooManifest, EveryConfigHasACompleteEntry) {
  const auto m = manifest();
  ASSERT_TRUE(m.contains("models"));
  std::set<std::string> configs;
  for (const auto& entry : fs::directory_iterator(fs::path(NLPZOO_SOURCE_DIR) / "configs"))
    if (entry.path().extension() == ".ini") configs.insert(entry.path().stem().string());
  for (const auto& name : configs) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(m["models"].contains(name)) << "configs/" << name << ".ini has no entry in checkpoints/MANIFEST.json";
    const auto& e = m["models"][name];
    EXPECT_EQ(e.value("config", ""), "configs/" + name + ".ini");
    EXPECT_FALSE(e["data"].value("command", "").empty());
    EXPECT_FALSE(e["data"].value("dir", "").empty());
    EXPECT_FALSE(e["data"].value("files", json::array()).empty());
    EXPECT_GT(e.value("budget_steps", 0), 0);
    EXPECT_TRUE(e.contains("seed") && e["seed"].is_number_integer());
    EXPECT_GE(e.value("threads", 0), 1);
    // Every input has a fingerprint field: its sha256, or null until measured.
    const auto fingerprint = e.value("fingerprint", json::object());
    EXPECT_TRUE(fingerprint.contains(e.value("config", ""))) << "no fingerprint of the config";
    for (const auto& f : e["data"]["files"]) {
      const auto path = e["data"]["dir"].get<std::string>() + "/" + f.get<std::string>();
      EXPECT_TRUE(fingerprint.contains(path)) << "no fingerprint field for " << path;
    }
    for (const auto& [file, sha] : fingerprint.items()) {
      if (!sha.is_null()) {
        EXPECT_TRUE(std::regex_match(sha.get<std::string>(), std::regex("[0-9a-f]{64}"))) << file;
      }
    }
    // A named copy: items() of the temporary value() returns would dangle inside the loop.
    const json expected = e.value("expected", json::object());
    for (const auto& [metric, x] : expected.items()) {
      EXPECT_TRUE(x.contains("value") && x["value"].is_number()) << metric;
      EXPECT_TRUE(x.contains("tolerance") && (x["tolerance"].is_null() || x["tolerance"].get<double>() >= 0)) << metric;
    }
  }
  for (const auto& [name, e] : m["models"].items())
    EXPECT_TRUE(configs.count(name)) << "MANIFEST.json model '" << name << "' has no configs/" << name << ".ini";
}

// A fine-tuning config (arch = bert) has its pre-trained model named in the manifest
// ("init_from"), which `zoo train` resolves to that model's trained copy: a masked_lm model of
// the manifest, not itself fine-tuned.
TEST(ZooManifest, FineTuningEntriesNameTheirPreTrainedModel) {
  const auto m = manifest();
  // The key's value in the config or, when it has none, in its bases (presets).
  const auto config_value = [](const std::string& config, const std::string& key) {
    const std::regex line("^\\s*" + key + "\\s*=\\s*(.*?)\\s*$");
    std::smatch match;
    std::string value;
    for (const auto& file : preset_chain(std::string(NLPZOO_SOURCE_DIR) + "/" + config)) {
      std::istringstream text(file.text);
      for (std::string l; std::getline(text, l);)
        if (std::regex_match(l, match, line)) value = match[1].str();
    }
    return value;
  };
  int fine_tuned = 0;
  for (const auto& [name, e] : m["models"].items()) {
    SCOPED_TRACE(name);
    const auto config = e.value("config", "");
    const bool fine_tunes = config_value(config, "arch") == "bert";
    EXPECT_EQ(e.contains("init_from"), fine_tunes) << config << ": arch = bert <=> an \"init_from\" entry";
    if (!e.contains("init_from")) continue;
    ++fine_tuned;
    const auto from = e["init_from"].get<std::string>();
    ASSERT_TRUE(m["models"].contains(from)) << "init_from '" << from << "' is not a model of the manifest";
    EXPECT_FALSE(m["models"][from].contains("init_from"));
    EXPECT_EQ(read_task_name(std::string(NLPZOO_SOURCE_DIR) + "/" + m["models"][from]["config"].get<std::string>()),
              "masked_lm");
    // The config leaves init_from to the command line (zoo train gives ROOT/<init_from>).
    EXPECT_EQ(config_value(config, "init_from"), "");
  }
  EXPECT_EQ(fine_tuned, 4);  // sst2-bert, cola-bert, stsb-bert, rte-bert
}

// zoo train of a fine-tuning model alone, before its pre-trained model has a copy, says what to
// train first; an init_from that names no model of the manifest is refused when it is read.
TEST(ZooManifest, FineTuningWithoutThePreTrainedCopyNamesIt) {
  const auto root = test::fresh_temp_dir("zoo_init_from");
  const auto manifest_path = (root / "MANIFEST.json").string();
  const json data = {{"command", "test"}, {"dir", (root / "data").string()}, {"files", json::array()}};
  json m = {{"models",
             {{"pre", {{"config", std::string(NLPZOO_SOURCE_DIR) + "/configs/bert-mini-english.ini"}, {"data", data},
                       {"budget_steps", 1}, {"seed", 1}, {"threads", 1}}},
              {"ft", {{"config", std::string(NLPZOO_SOURCE_DIR) + "/configs/sst2-bert.ini"}, {"data", data},
                      {"init_from", "pre"}, {"budget_steps", 1}, {"seed", 1}, {"threads", 1}}}}}};
  atomic_write_text(manifest_path, m.dump(2));
  const std::string flags = " --manifest " + shell_quote(manifest_path) + " --root " + shell_quote((root / "runs").string());
  auto r = run_cli("zoo train ft" + flags);
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("ft: fine-tunes pre, which has no trained copy (" + (root / "runs" / "pre").string() +
                       "); train it first: nlpzoo zoo train pre"),
            std::string::npos)
      << r.err;
  // A value of the wrong type names the manifest, the model and the key (it was a JSON error
  // naming neither, or accepted).
  json bad = m;
  bad["models"]["ft"]["expected"] = "oops";
  atomic_write_text(manifest_path, bad.dump(2));
  r = run_cli("zoo check ft" + flags);
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_NE(r.err.find(manifest_path + ": model 'ft': \"expected\" must be an object"), std::string::npos) << r.err;
  bad = m;
  bad["models"]["pre"]["budget_steps"] = nullptr;
  atomic_write_text(manifest_path, bad.dump(2));
  r = run_cli("zoo list" + flags);
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_NE(r.err.find(manifest_path + ": model 'pre': \"budget_steps\" must be a positive integer, got null"),
            std::string::npos)
      << r.err;
  m["models"]["ft"]["init_from"] = "nonesuch";
  atomic_write_text(manifest_path, m.dump(2));
  r = run_cli("zoo list" + flags);
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("model 'ft': \"init_from\" must name another model of the manifest, got \"nonesuch\""),
            std::string::npos)
      << r.err;
  fs::remove_all(root);
}

// zoo train / check / check --update / list on a one-model manifest: a tiny classifier trained for
// 4 steps; the check passes against its own numbers, fails on a worse expected accuracy, and
// reports data that changed as not comparable.
TEST(RegressionZoo, TrainCheckUpdateAndList) {
  const auto root = test::fresh_temp_dir("zoo");
  test::write_task_corpora(root / "data");
  const auto manifest_path = (root / "MANIFEST.json").string();
  const auto data = (root / "data").string();
  json m = {{"models",
             {{"tiny",
               {{"config", std::string(NLPZOO_SOURCE_DIR) + "/configs/sst2-avgemb.ini"},
                {"data", {{"command", "test::write_task_corpora"}, {"dir", data}, {"files", {"train.tsv", "dev.tsv"}}}},
                {"budget_steps", 4},
                {"seed", 7},
                {"threads", 1},
                {"evaluate", {"--split", "dev"}},
                {"fingerprint", json::object()},
                {"expected", json::object()}}}}}};
  atomic_write_text(manifest_path, m.dump(2));
  const std::string flags = " --manifest " + shell_quote(manifest_path) + " --root " + shell_quote((root / "runs").string());

  auto r = run_cli("zoo train tiny" + flags);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("zoo: [1/1] tiny: 4 steps"), std::string::npos) << r.out;
  r = run_cli("zoo check" + flags);
  // Nothing expected yet: nothing regressed, but nothing was checked either, which fails.
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("not in the manifest"), std::string::npos) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("tiny +- +- +NOT CHECKED: no expected metric with a tolerance"))) << r.out;
  // The copy exports to a twin holding its tensors, and a scratch copy resumes for one update
  // (the run itself stays at its budget).
  EXPECT_TRUE(std::regex_search(r.out, std::regex("tiny +export +- +- +ok\n"))) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("tiny +resume 1 step +- +- +ok\n"))) << r.out;
  EXPECT_EQ(read_checkpoint_header((root / "runs/tiny/checkpoint_last.pt").string()).state.step, 4);
  // Early stopping off (sst2-avgemb.ini has patience 4): the budget is the work, on any machine
  // and seed; rte-bert's patience 6 ended its copy at step 360 of 390, and then its resume check.
  EXPECT_TRUE(std::regex_search(read_file((root / "runs/tiny/config.ini").string()), std::regex("\npatience = 0\n")));

  r = run_cli("zoo check tiny --update" + flags);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  m = json::parse(read_file(manifest_path));
  auto& tiny = m["models"]["tiny"];
  ASSERT_TRUE(tiny["expected"].contains("accuracy")) << tiny.dump(1);
  EXPECT_FALSE(tiny["expected"].contains("sentences"));  // a count, not a metric
  EXPECT_EQ(tiny["fingerprint"][data + "/train.tsv"].get<std::string>().size(), 64u);
  EXPECT_GT(tiny["cost"].value("wall_s", -1.0), -1.0);
  EXPECT_EQ(tiny["cost"].value("libtorch", ""), TORCH_VERSION);
  const double accuracy = tiny["expected"]["accuracy"]["value"].get<double>();
  EXPECT_TRUE(tiny["expected"]["accuracy"]["tolerance"].is_null());  // one seed has no spread

  // Tolerances from the spread over seeds: copies of the same budget with seeds 8 and 9.
  const auto other = [&](const std::string& dir) { return " --root " + shell_quote((root / dir).string()); };
  for (const std::string seed : {"8", "9"}) {
    r = run_cli("zoo train tiny --seed " + seed + " --manifest " + shell_quote(manifest_path) + other("seed" + seed));
    ASSERT_EQ(r.status, 0) << r.out << r.err;
  }
  r = run_cli("zoo check tiny --update --spread " + shell_quote((root / "seed8").string()) + flags);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("at least 2 other roots"), std::string::npos) << r.err;
  r = run_cli("zoo check tiny --update --spread " + shell_quote((root / "seed8").string()) + " " +
              shell_quote((root / "runs").string()) + flags);  // the reference copy again: seed 7 twice
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("was trained with seed 7, as another copy was"), std::string::npos) << r.err;
  r = run_cli("zoo check tiny --update --spread " + shell_quote((root / "seed8").string()) + " " +
              shell_quote((root / "seed9").string()) + flags);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  // The table checks the copy against what the update wrote (it showed the old entry: "no tolerance").
  EXPECT_TRUE(std::regex_search(r.out, std::regex("tiny +accuracy +[0-9.]+ ± [0-9.e-]+ +[0-9.]+ +ok\n"))) << r.out;
  const json spread = json::parse(read_file(manifest_path));
  const auto& x = spread["models"]["tiny"]["expected"]["accuracy"];
  EXPECT_EQ(x["spread"]["seeds"], json({7, 8, 9})) << x.dump();
  EXPECT_EQ(x["spread"]["budget_steps"], 4) << x.dump();
  ASSERT_EQ(x["spread"]["values"].size(), 3u);
  EXPECT_EQ(x["spread"]["values"][0].get<double>(), accuracy);
  double mean = 0, ss = 0;
  for (const auto& v : x["spread"]["values"]) mean += v.get<double>() / 3;
  for (const auto& v : x["spread"]["values"]) ss += (v.get<double>() - mean) * (v.get<double>() - mean);
  const double expected_tolerance = std::max(3 * std::sqrt(ss / 2), 1e-3 * accuracy);
  // Rounded up to 3 significant digits.
  EXPECT_GE(x["tolerance"].get<double>(), expected_tolerance - 1e-12) << x.dump();
  EXPECT_LE(x["tolerance"].get<double>(), expected_tolerance * 1.01 + 1e-9) << x.dump();
  r = run_cli("zoo check" + flags);
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("tiny +accuracy .*ok\n"))) << r.out;

  tiny["expected"]["accuracy"]["tolerance"] = 0.001;
  atomic_write_text(manifest_path, m.dump(2));
  r = run_cli("zoo check --json" + flags);
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  tiny["expected"]["accuracy"]["value"] = accuracy + 0.5;  // it used to be far better: a regression
  atomic_write_text(manifest_path, m.dump(2));
  r = run_cli("zoo check" + flags);
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("tiny +accuracy .*REGRESSED"))) << r.out;

  // Other data: not comparable, whatever the numbers.
  atomic_write_text(data + "/dev.tsv", read_file(data + "/dev.tsv") + "the one and the two\t0\n");
  r = run_cli("zoo check" + flags);
  EXPECT_NE(r.out.find("not comparable: " + data + "/dev.tsv differs"), std::string::npos) << r.out;
  // A check that compared nothing fails (it passed every such row before).
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("NOT CHECKED: not comparable: " + data + "/dev.tsv differs"), std::string::npos) << r.out;

  // A model without an export says so in the manifest; its check skips that row.
  tiny["export"] = false;
  atomic_write_text(manifest_path, m.dump(2));
  r = run_cli("zoo check" + flags);
  EXPECT_FALSE(std::regex_search(r.out, std::regex("tiny +export"))) << r.out;
  EXPECT_NE(r.out.find("resume 1 step"), std::string::npos) << r.out;

  r = run_cli("zoo list" + flags);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("tiny +4 +step 4 +accuracy"))) << r.out;
  // The project's own manifest lists every model.
  r = run_cli("zoo list --manifest " + shell_quote(std::string(NLPZOO_SOURCE_DIR) + "/checkpoints/MANIFEST.json") +
              " --root " + shell_quote((root / "none").string()));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("transformer-base-es-en"), std::string::npos) << r.out;
  // A new budget: the copy trained on, --update without --spread drops the tolerance that seeds
  // of the old budget gave (it kept it before, so a changed budget checked against a stale spread).
  m = json::parse(read_file(manifest_path));
  m["models"]["tiny"]["budget_steps"] = 5;
  m["models"]["tiny"]["expected"]["accuracy"] = x;
  m["models"]["tiny"]["expected"]["loss"] = {{"value", 1.0}, {"tolerance", 0.5}};  // hand-set: no spread, kept
  atomic_write_text(manifest_path, m.dump(2));
  // Numbers of a copy short of the budget are not the budget's: the update refuses, writing nothing.
  r = run_cli("zoo check tiny --update" + flags);
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("was trained 4 of 5 steps: --update records copies of the manifest's budget"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(json::parse(read_file(manifest_path)), m);
  // After such an update: accuracy's spread and tolerance are gone, loss's hand-set one stays.
  const auto expect_spread_dropped = [&] {
    m = json::parse(read_file(manifest_path));
    EXPECT_TRUE(m["models"]["tiny"]["expected"]["accuracy"]["tolerance"].is_null()) << m.dump(1);
    EXPECT_FALSE(m["models"]["tiny"]["expected"]["accuracy"].contains("spread")) << m.dump(1);
    EXPECT_EQ(m["models"]["tiny"]["expected"]["loss"]["tolerance"], 0.5) << m.dump(1);
  };
  r = run_cli("zoo train tiny" + flags);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  r = run_cli("zoo check tiny --update" + flags);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("tiny: the tolerance of accuracy came from seeds trained 4 steps, the copy 5: dropped"),
            std::string::npos)
      << r.out;
  expect_spread_dropped();
  // Changed inputs (here the data; a config likewise) at the same budget: a spread measured on
  // the old ones goes too, the hand-set tolerance stays.
  m["models"]["tiny"]["expected"]["accuracy"] = {
      {"value", 0.5}, {"tolerance", 0.01}, {"spread", {{"budget_steps", 5}, {"seeds", {7, 8, 9}}, {"values", {0.5, 0.5, 0.5}}}}};
  atomic_write_text(manifest_path, m.dump(2));
  atomic_write_text(data + "/dev.tsv", read_file(data + "/dev.tsv") + "the two and the one\t1\n");
  r = run_cli("zoo check tiny --update" + flags);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("tiny: the tolerance of accuracy came from seeds of other inputs (" + data +
                       "/dev.tsv differs from the manifest's): dropped"),
            std::string::npos)
      << r.out;
  expect_spread_dropped();

  r = run_cli("zoo check nonesuch" + flags);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("'nonesuch' is not a model of"), std::string::npos) << r.err;
  fs::remove_all(root);
}

// A word-vector model exports the vectors users query, not its tensors: the check compares those.
TEST(RegressionZoo, WordVectorExportIsCheckedAgainstItsVectors) {
  const auto root = test::fresh_temp_dir("zoo-vectors");
  fs::create_directories(root / "data");
  test::write_topic_corpus(root / "data" / "english.txt", 1500);  // valid_every 500: 3 valid lines
  const auto manifest_path = (root / "MANIFEST.json").string();
  const json m = {{"models",
                   {{"sgns",
                     {{"config", std::string(NLPZOO_SOURCE_DIR) + "/configs/skipgram-ns.ini"},
                      {"data", {{"dir", (root / "data").string()}, {"files", {"english.txt"}}}},
                      {"budget_steps", 2},
                      {"seed", 7},
                      {"threads", 1}}}}}};
  atomic_write_text(manifest_path, m.dump(2));
  const std::string flags = " --manifest " + shell_quote(manifest_path) + " --root " + shell_quote((root / "runs").string());
  auto r = run_cli("zoo train" + flags);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  r = run_cli("zoo check" + flags);
  // The export is checked; with no expected metric the model as a whole is not, which fails.
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("sgns +export +- +- +ok\n"))) << r.out;
  EXPECT_NE(r.out.find("NOT CHECKED: no expected metric with a tolerance"), std::string::npos) << r.out;
  fs::remove_all(root);
}

}  // namespace
