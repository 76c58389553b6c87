// Exact resume for every trainable family (tests/data/golden/families.tsv: every config, each
// attention kind, both Transformer layouts), through the CLI as a user runs it: 6 updates in one
// go, and 3 updates, `--resume`, 3 more, must log the same losses (training, validation, the
// learning rate and gradient norm) and end with the same checkpoint tensors (parameters,
// optimizer state, RNG, a language model's carried state), bit for bit. The families train on the synthetic corpora of
// test::write_task_corpora with their golden model sizes and dropout on, so that the
// data position, the optimizer moments and the RNG must all be restored.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "core/io.h"
#include "tests/golden.h"
#include "tests/test_util.h"
#include "core/cpu_features.h"
#include "core/safetensors.h"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace nlpzoo;
using test::GoldenFamily;
using test::run_cli;
using test::shell_quote;

namespace {

class RegressionResume : public ::testing::TestWithParam<GoldenFamily> {
 protected:
  static void SetUpTestSuite() {
    root_ = new fs::path(test::fresh_temp_dir("resume"));
    test::write_task_corpora(*root_ / "data");
  }
  static void TearDownTestSuite() {
    fs::remove_all(*root_);
    delete root_;
  }
  std::string run_dir(const std::string& which) const {
    return shell_quote((*root_ / (test::golden_test_name(GetParam().name) + "_" + which)).string());
  }
  test::CommandResult train(const std::string& which, int64_t steps) const {
    const auto& f = GetParam();
    return run_cli("train --config " + shell_quote(std::string(NLPZOO_SOURCE_DIR) + "/configs/" + f.config) +
                   " --data-dir " + shell_quote((*root_ / "data").string()) + " --run-dir " + run_dir(which) + " " +
                   f.flags + " --max-steps " + std::to_string(steps) +
                   // linear_decay with decay_steps 0 decays over the invocation's own budget, so
                   // the 3-update run would follow another schedule than the 6-update one.
                   " --decay_steps 6 --valid_interval 2 --log_interval 1 --device cpu");
  }
  // metrics.jsonl without what depends on the clock (elapsed_s, the speeds).
  std::vector<json> logged(const std::string& which) const {
    std::vector<json> out;
    for (const auto& line : read_lines((*root_ / (test::golden_test_name(GetParam().name) + "_" + which) /
                                        "metrics.jsonl").string())) {
      auto j = json::parse(line);
      for (auto it = j.begin(); it != j.end();) {
        const auto& key = it.key();
        if (key == "elapsed_s" || (key.size() > 6 && key.compare(key.size() - 6, 6, "_per_s") == 0))
          it = j.erase(it);
        else
          ++it;
      }
      out.push_back(j);
    }
    return out;
  }
  static fs::path* root_;
};
fs::path* RegressionResume::root_ = nullptr;

TEST_P(RegressionResume, LossAfterResumeEqualsTheUninterruptedRun) {
  auto r = train("straight", 6);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  r = train("split", 3);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  r = run_cli("train --run-dir " + run_dir("split") + " --resume --max-steps 6 --device cpu");
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  ASSERT_NE(r.out.find("resumed from"), std::string::npos) << r.out;

  const auto straight = logged("straight");
  // The interrupted invocation validated at its budget's end (step 3), which the straight run
  // did not: that line is the interruption's own.
  // That validation may itself be the best (a classifier's accuracy at step 3 equal to step
  // 4's, say), so the "best" flags of the validations after it are the interruption's too.
  std::vector<json> split;
  for (auto& line : logged("split"))
    if (!(line.contains("valid_loss") && line.value("step", 0) == 3)) split.push_back(line);
  auto straight_lines = straight;
  for (auto* lines : {&split, &straight_lines})
    for (auto& line : *lines)
      if (line.contains("valid_loss") && line.value("step", 0) > 3) line.erase("best");
  ASSERT_EQ(split.size(), straight.size()) << "metrics.jsonl lines";
  bool after_resume = false;
  for (size_t i = 0; i < straight.size(); ++i) {
    EXPECT_EQ(split[i], straight_lines[i]) << GetParam().name << ": metrics.jsonl line " << i + 1 << " differs";
    after_resume = after_resume || straight[i].value("step", 0) > 3;
  }
  EXPECT_TRUE(after_resume) << "no line logged after the resume";

  const auto a = read_safetensors((*root_ / (test::golden_test_name(GetParam().name) + "_straight") /
                                   "checkpoint_last.pt").string());
  const auto b = read_safetensors((*root_ / (test::golden_test_name(GetParam().name) + "_split") /
                                   "checkpoint_last.pt").string());
  const std::map<std::string, torch::Tensor> resumed(b.tensors.begin(), b.tensors.end());
  ASSERT_EQ(resumed.size(), a.tensors.size());
  for (const auto& [name, tensor] : a.tensors) {
    ASSERT_TRUE(resumed.count(name)) << name;
    EXPECT_TRUE(torch::equal(resumed.at(name), tensor)) << GetParam().name << ": checkpoint tensor '" << name
                                                         << "' differs after the resume";
  }
}

// Every family's inference runs in bf16 through the CLI (`evaluate --precision bf16` converts the
// weights, tools/run_flags.cpp), on the model the suite's corpora train: a bf16 weight that meets
// an op without bf16 support (LibTorch 1.13's embedding_bag for CBOW's and the subword model's
// bags did) fails here, naming the family.
TEST_P(RegressionResume, EvaluateRunsInBf16) {
  if (!cpu_features().bf16()) GTEST_SKIP() << "this CPU has no bf16 arithmetic (" << cpu_features().to_string() << ")";
  auto r = train("bf16", 2);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  r = run_cli("evaluate --run-dir " + run_dir("bf16") + " --checkpoint last --precision bf16 --max-sentences 20 --device cpu");
  EXPECT_EQ(r.status, 0) << GetParam().name << ": " << r.out << r.err;
  EXPECT_EQ(r.err.find("error"), std::string::npos) << GetParam().name << ": " << r.err;
}

INSTANTIATE_TEST_SUITE_P(Regression, RegressionResume, ::testing::ValuesIn(test::golden_families_or_none()),
                         [](const auto& info) { return test::golden_test_name(info.param.name); });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(RegressionResume);

}  // namespace
