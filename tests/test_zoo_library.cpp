// The zoo's rules in-process (train/zoo/): the manifest's schema, which models a command means
// and in which order, tolerances from a seed spread, verdicts, and the update rules.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "core/io.h"
#include "tests/test_util.h"
#include "train/zoo/manifest.h"
#include "train/zoo/tolerance.h"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace nlpzoo;
using namespace nlpzoo::zoo;

namespace {

json entry() {
  return {{"config", "configs/x.ini"},
          {"data", {{"dir", "data/x"}, {"files", {"train.txt"}}, {"command", "make"}}},
          {"budget_steps", 10},
          {"seed", 1},
          {"threads", 2}};
}

json manifest_of(const json& e) { return {{"about", "test"}, {"models", {{"tiny", e}}}}; }

// The UserError validate_manifest throws, or "" when it accepts.
std::string schema_error(const json& m) {
  try {
    validate_manifest(m, "M.json");
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

TEST(ZooSchema, AcceptsAFullEntry) {
  json e = entry();
  e["evaluate"] = {"--split", "dev"};
  e["embed_eval"] = {{"analogy", "a.txt"}, {"similarity", "s.tsv"}};
  e["export"] = false;
  e["fingerprint"] = {{"configs/x.ini", nullptr}, {"data/x/train.txt", std::string(64, 'a')}};
  e["expected"] = {{"accuracy", {{"value", 0.5}, {"tolerance", nullptr}}},
                   {"loss", {{"value", 1.5},
                             {"tolerance", 0.1},
                             {"spread", {{"seeds", {1, 2, 3}}, {"values", {1.4, 1.5, 1.6}}, {"budget_steps", 10}}}}}};
  e["cost"] = {{"wall_s", 12.0}, {"peak_rss_mb", 300}, {"libtorch", "1.13.1"}};
  EXPECT_EQ(schema_error(manifest_of(e)), "");
}

// Every error names the manifest, the model and the key.
TEST(ZooSchema, ErrorsNameTheManifestTheModelAndTheKey) {
  const auto expect = [](const json& e, const std::string& message) {
    const auto error = schema_error(manifest_of(e));
    EXPECT_NE(error.find(message), std::string::npos) << "got: " << error << "\nwanted: " << message;
  };
  json e = entry();
  e["expected"] = "oops";
  expect(e, "M.json: model 'tiny': \"expected\" must be an object");
  expect(e, "got \"oops\"");
  e = entry();
  e["budget_steps"] = nullptr;
  expect(e, "M.json: model 'tiny': \"budget_steps\" must be a positive integer, got null");
  e = entry();
  e["budget_steps"] = 0;
  expect(e, "\"budget_steps\" must be a positive integer, got 0");
  e = entry();
  e.erase("seed");
  expect(e, "M.json: model 'tiny' has no \"seed\"");
  e = entry();
  e["threads"] = "2";
  expect(e, "M.json: model 'tiny': \"threads\" must be an integer >= 1, got \"2\"");
  e = entry();
  e["expected"] = {{"accuracy", {{"value", nullptr}, {"tolerance", 0.1}}}};
  expect(e, "M.json: model 'tiny': \"expected.accuracy.value\" must be a number, got null");
  e = entry();
  e["expected"] = {{"accuracy", {{"tolerance", 0.1}}}};
  expect(e, "M.json: model 'tiny' has no \"expected.accuracy.value\"");
  e = entry();
  e["expected"] = {{"accuracy", {{"value", 0.5}, {"tolerance", -1}}}};
  expect(e, "\"expected.accuracy.tolerance\" must be a number >= 0 or null, got -1");
  e = entry();
  e["expected"] = {{"accuracy", {{"value", 0.5}, {"tolerance", 0.1}, {"spread", {{"seeds", {1, 2}}, {"values", {0.5}},
                                                                                 {"budget_steps", 10}}}}}};
  expect(e, "\"expected.accuracy.spread.values\" must be an array of numbers, one per seed");
  e = entry();
  e["budget_step"] = 10;  // a typo
  expect(e, "M.json: model 'tiny': unknown key \"budget_step\"");
  e = entry();
  e["data"]["files"] = {"a.txt", 3};
  expect(e, "\"data.files\" must be an array of strings");
  e = entry();
  e["data"].erase("dir");
  expect(e, "M.json: model 'tiny' has no \"data.dir\"");
  e = entry();
  e["export"] = "no";
  expect(e, "\"export\" must be true or false");
  e = entry();
  e["fingerprint"] = {{"configs/x.ini", 5}};
  expect(e, "\"fingerprint.configs/x.ini\" must be a sha256 string or null");
  e = entry();
  e["embed_eval"] = {{"analogy", "a.txt"}};
  expect(e, "has no \"embed_eval.similarity\"");
  e = entry();
  e["init_from"] = "tiny";
  expect(e, "M.json: model 'tiny': \"init_from\" must name another model of the manifest, got \"tiny\"");
  EXPECT_NE(schema_error({{"models", json::object()}}).find("M.json: no \"models\" object"), std::string::npos);
  EXPECT_NE(schema_error({{"models", {{"tiny", entry()}}}, {"model", 1}}).find("M.json: unknown key \"model\""),
            std::string::npos);
  EXPECT_NE(schema_error({{"models", {{"tiny", 3}}}}).find("M.json: model 'tiny' must be an object, got 3"),
            std::string::npos);
}

TEST(ZooSchema, ReadManifestNamesTheFile) {
  const auto dir = test::fresh_temp_dir("zoo_schema");
  const auto path = (dir / "MANIFEST.json").string();
  atomic_write_text(path, "{\"models\": ");
  try {
    read_manifest(path);
    ADD_FAILURE() << "accepted broken JSON";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find(path + ": not valid JSON"), std::string::npos) << e.what();
  }
  json m = manifest_of(entry());
  m["models"]["tiny"]["expected"] = {{"accuracy", {{"value", nullptr}}}};
  atomic_write_text(path, m.dump());
  try {
    read_manifest(path);
    ADD_FAILURE() << "accepted a null value";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find(path + ": model 'tiny': \"expected.accuracy.value\""), std::string::npos)
        << e.what();
  }
  fs::remove_all(dir);
}

TEST(ZooManifestRules, ChosenModelsAndTrainingOrder) {
  json m = {{"models", {{"pre", entry()}, {"ft", entry()}, {"other", entry()}}}};
  m["models"]["ft"]["init_from"] = "pre";
  EXPECT_EQ(chosen_models(m, {}, "M.json"), (std::vector<std::string>{"ft", "other", "pre"}));
  EXPECT_EQ(chosen_models(m, {"other"}, "M.json"), (std::vector<std::string>{"other"}));
  try {
    chosen_models(m, {"nonesuch"}, "M.json");
    ADD_FAILURE();
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()), "'nonesuch' is not a model of M.json (ft, other, pre)");
  }
  // A fine-tuned model's pre-trained model first, when it is asked for too.
  EXPECT_EQ(training_order(m, {"ft", "other", "pre"}), (std::vector<std::string>{"pre", "ft", "other"}));
  EXPECT_EQ(training_order(m, {"ft"}), (std::vector<std::string>{"ft"}));
  EXPECT_EQ(input_files(entry()), (std::vector<std::string>{"configs/x.ini", "data/x/train.txt"}));
  EXPECT_EQ(copy_dir("runs", "tiny"), "runs/tiny");
}

TEST(ZooManifestRules, FingerprintsCompareTheRecordedOnes) {
  const auto dir = test::fresh_temp_dir("zoo_fingerprint");
  const auto config = (dir / "c.ini").string(), data = (dir / "d.txt").string();
  atomic_write_text(config, "abc");
  atomic_write_text(data, "");
  // sha256("abc") and sha256("") are the standard's test vectors.
  EXPECT_EQ(sha256_of_file(config), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_of_file(data), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  json e = {{"config", config}, {"data", {{"dir", dir.string()}, {"files", {"d.txt"}}}}};
  e["fingerprint"] = {{config, sha256_of_file(config)}, {data, nullptr}};  // null: not measured, not compared
  EXPECT_EQ(fingerprint_mismatch(e), "");
  atomic_write_text(data, "changed");
  EXPECT_EQ(fingerprint_mismatch(e), "");
  e["fingerprint"][data] = std::string(64, '0');
  EXPECT_EQ(fingerprint_mismatch(e), data + " differs from the manifest's");
  fs::remove(data);
  EXPECT_EQ(fingerprint_mismatch(e), data + " is missing");
  fs::remove_all(dir);
}

// Three sample standard deviations, at least 0.1% of the reference (and 1e-6), rounded up to 3
// significant digits.
TEST(ZooTolerance, SpreadToleranceKnownAnswers) {
  EXPECT_DOUBLE_EQ(spread_tolerance({0.5, 0.6, 0.7}, 0.5), 0.3);        // sd 0.1
  EXPECT_DOUBLE_EQ(spread_tolerance({1.0, 2.0}, 1.0), 2.13);            // 3 * 0.7071 = 2.1213 -> 2.13
  EXPECT_DOUBLE_EQ(spread_tolerance({25.1, 25.4, 24.9}, 25.1), 0.755);  // 3 * 0.25166 = 0.75498
  EXPECT_DOUBLE_EQ(spread_tolerance({2.0, 2.0, 2.0}, 2.0), 0.002);      // no spread: 0.1% of the value
  // 0.1% of 0.8 is 0.0008000000000000001 in binary, which rounds up to the next third digit.
  EXPECT_DOUBLE_EQ(spread_tolerance({0.8, 0.8, 0.8}, 0.8), 0.000801);
  EXPECT_DOUBLE_EQ(spread_tolerance({0.0, 0.0}, 0.0), 1e-6);  // nothing at all: the floor
}

TEST(ZooVerdicts, CompareMetrics) {
  const json expected = {{"accuracy", {{"value", 0.80}, {"tolerance", 0.01}}},
                         {"f1", {{"value", 0.70}, {"tolerance", 0.05}}},
                         {"loss", {{"value", 1.00}, {"tolerance", 0.10}}},
                         {"bleu", {{"value", 20.0}, {"tolerance", nullptr}}}};
  const json measured = {{"accuracy", {{"value", 0.85}, {"better", "higher"}}},  // better by more than 0.01
                         {"f1", {{"value", 0.72}, {"better", "higher"}}},        // within
                         {"loss", {{"value", 1.20}, {"better", "lower"}}},       // worse by more than 0.1
                         {"bleu", {{"value", 25.0}, {"better", "higher"}}},      // no tolerance
                         {"sentences", {{"value", 100}}}};                       // not in the manifest
  json rows = json::array();
  auto c = compare_metrics("m", expected, measured, "", rows);
  EXPECT_EQ(c.compared, 3);
  EXPECT_TRUE(c.regressed);
  EXPECT_FALSE(c.not_checked);
  std::map<std::string, std::string> verdicts;
  for (const auto& r : rows) verdicts[r["metric"].get<std::string>()] = r["verdict"].get<std::string>();
  EXPECT_EQ(verdicts, (std::map<std::string, std::string>{{"accuracy", "better"},
                                                          {"f1", "ok"},
                                                          {"loss", "REGRESSED"},
                                                          {"bleu", "no tolerance"},
                                                          {"sentences", "not in the manifest"}}));
  EXPECT_EQ(rows[0], check_row("m", "accuracy", expected["accuracy"], 0.85, "better"));
}

// A check that compared nothing fails, saying why; an update is not required to compare.
TEST(ZooVerdicts, ComparingNothingIsNotChecked) {
  const json expected = {{"accuracy", {{"value", 0.80}, {"tolerance", 0.01}}}};
  const json measured = {{"accuracy", {{"value", 0.80}, {"better", "higher"}}}};
  json rows = json::array();
  auto c = compare_metrics("m", expected, measured, "trained 3 of 2100 steps", rows);
  EXPECT_EQ(c.compared, 0);
  EXPECT_TRUE(c.not_checked);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0]["verdict"], "not comparable: trained 3 of 2100 steps");
  EXPECT_EQ(rows[1], check_row("m", "", nullptr, nullptr, "NOT CHECKED: not comparable: trained 3 of 2100 steps"));
  rows = json::array();
  c = compare_metrics("m", json::object(), measured, "", rows);  // nothing expected yet
  EXPECT_TRUE(c.not_checked);
  EXPECT_EQ(rows.back()["verdict"],
            "NOT CHECKED: no expected metric with a tolerance (measure them: nlpzoo zoo check m --update --spread DIR DIR)");
  rows = json::array();
  c = compare_metrics("m", json::object(), measured, "", rows, /*require_comparison=*/false);
  EXPECT_FALSE(c.not_checked);
  EXPECT_EQ(rows.size(), 1u);
  rows = json::array();
  c = compare_metrics("m", expected, measured, "", rows);
  EXPECT_EQ(c.compared, 1);
  EXPECT_FALSE(c.not_checked);
  EXPECT_FALSE(c.regressed);
}

TEST(ZooUpdate, TolerancesFromTheSpreadKeptOrDropped) {
  const json spread_7_8_9 = {{"seeds", {7, 8, 9}}, {"values", {0.5, 0.6, 0.7}}, {"budget_steps", 10}};
  json e = entry();
  e["expected"] = {
      {"accuracy", {{"value", 0.4}, {"tolerance", 0.2}, {"spread", spread_7_8_9}}},  // spread of this budget
      {"loss", {{"value", 1.0}, {"tolerance", 0.5}}},                                  // set by hand
      {"f1", {{"value", 0.3}, {"tolerance", 0.1}, {"spread", spread_7_8_9}}}};
  const json measured = {{"accuracy", {{"value", 0.55}, {"better", "higher"}}},
                         {"loss", {{"value", 0.9}, {"better", "lower"}}},
                         {"f1", {{"value", 0.35}, {"better", "higher"}}},
                         {"bleu", {{"value", 12.0}, {"better", "higher"}}},
                         {"sentences", {{"value", 100}}}};
  // A new spread for f1 only; the others keep theirs (same budget, same inputs).
  const json spread = {{"f1", {{"seeds", {1, 2, 3}}, {"values", {0.35, 0.45, 0.55}}, {"budget_steps", 10}}}};
  json u = e;
  auto notes = update_expected(u, "tiny", measured, 10, spread, "");
  EXPECT_TRUE(notes.empty());
  EXPECT_EQ(u["expected"]["accuracy"], json({{"value", 0.55}, {"tolerance", 0.2}, {"spread", spread_7_8_9}}));
  EXPECT_EQ(u["expected"]["loss"], json({{"value", 0.9}, {"tolerance", 0.5}}));
  // 3 sample sds of 0.35, 0.45, 0.55: 0.3000000000000001, rounded up to 3 digits.
  EXPECT_EQ(u["expected"]["f1"]["tolerance"], 0.301);
  EXPECT_EQ(u["expected"]["f1"]["spread"], spread["f1"]);
  EXPECT_EQ(u["expected"]["bleu"], json({{"value", 12.0}, {"tolerance", nullptr}}));  // new: no tolerance yet
  EXPECT_FALSE(u["expected"].contains("sentences"));                                   // a count

  // Another budget: the spreads of the old one go, the hand-set tolerance stays.
  u = e;
  notes = update_expected(u, "tiny", measured, 12, json::object(), "");
  EXPECT_EQ(notes, (std::vector<std::string>{
                       "tiny: the tolerance of accuracy came from seeds trained 10 steps, the copy 12: dropped; "
                       "measure it anew with --update --spread",
                       "tiny: the tolerance of f1 came from seeds trained 10 steps, the copy 12: dropped; "
                       "measure it anew with --update --spread"}));
  EXPECT_EQ(u["expected"]["accuracy"], json({{"value", 0.55}, {"tolerance", nullptr}}));
  EXPECT_EQ(u["expected"]["loss"]["tolerance"], 0.5);

  // Other inputs at the same budget: likewise.
  u = e;
  notes = update_expected(u, "tiny", measured, 10, json::object(), "data/x/train.txt differs from the manifest's");
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_EQ(notes[0],
            "tiny: the tolerance of accuracy came from seeds of other inputs (data/x/train.txt differs from the "
            "manifest's): dropped; measure it anew with --update --spread");
  EXPECT_TRUE(u["expected"]["f1"]["tolerance"].is_null());
  EXPECT_EQ(u["expected"]["loss"]["tolerance"], 0.5);
}

}  // namespace
