// The zoo's rules in-process (train/zoo/): which models a command means
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
  std::map<std::string, std::string> verdicts;
  for (const auto& r : rows) verdicts[r["metric"].get<std::string>()] = r["verdict"].get<std::string>();
  EXPECT_EQ(verdicts, (std::map<std::string, std::string>{{"accuracy", "better"},
                                                          {"f1", "ok"},
                                                          {"loss", "REGRESSED"},
                                                          {"bleu", "no tolerance"},
                                                          {"sentences", "not in the manifest"}}));
  EXPECT_EQ(rows[0], check_row("m", "accuracy", expected["accuracy"], 0.85, "better"));
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
