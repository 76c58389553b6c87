// Golden checkpoints: for every family of tests/data/golden/families.tsv, a tiny
// checkpoint trained on a slice of real data, in today's format (version 2) and the old one
// (version 1), and the outputs it gave when it was written (expected.json). Today's code must
// load both and give the same outputs: numbers within 1e-4, text exactly. A change of numerics,
// search or checkpoint loading fails here, naming the family, the output and the first
// differing value. scripts/make_golden.sh rewrites the expected outputs (deliberately, as
// torchvision's accept flag) by running these tests with NLPZOO_GOLDEN_ACCEPT=1, and with
// NLPZOO_GOLDEN_RUNS=DIR also rewrites the checkpoints from the runs DIR/<family> it trained.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>

#include "core/io.h"
#include "tests/golden.h"
#include "tests/test_util.h"
#include "train/checkpoint.h"
#include "train/checkpoint_v1.h"
#include "core/cpu_features.h"
#include "core/precision.h"
#include "core/safetensors.h"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace nlpzoo;
using test::GoldenFamily;

namespace {

// Every family is held to 1e-4: the models are tiny and run on one thread, so the outputs of
// one machine differ from another's only by BLAS rounding (~1e-6).
constexpr double kTolerance = 1e-4;
constexpr uintmax_t kMaxCheckpointBytes = 400 * 1000;
constexpr uintmax_t kMaxTotalBytes = 5 * 1000 * 1000;

bool accepting() {
  const char* v = std::getenv("NLPZOO_GOLDEN_ACCEPT");
  return v != nullptr && std::string(v) == "1";
}

// Rewrites <dir>/checkpoint_v2.pt and checkpoint_v1.pt from a trained run's checkpoint, without
// its optimizer state (a few times the model's size) and with the parts that vary between two
// identical trainings fixed (wall time, the RNG state at saving), so that retraining on the
// same machine gives the same bytes.
void write_golden_checkpoints(const fs::path& trained, const fs::path& dir) {
  auto run = load_run(trained.string(), torch::kCPU);
  CheckpointContents contents = run.header;
  contents.state.elapsed_s = 0;
  // Version 1 always chose by the loss and cannot record another best_metric: both files hold
  // the loss-chosen state, so that the upgraded version-1 file equals the version-2 one.
  contents.state.best_metric = "loss";
  contents.state.best_value = contents.state.best_valid_loss;
  fs::create_directories(dir);
  torch::manual_seed(0);
  save_checkpoint((dir / "checkpoint_v2.pt").string(), *run.task->model(), nullptr, contents);
  torch::manual_seed(0);
  save_checkpoint_v1((dir / "checkpoint_v1.pt").string(), *run.task->model(), nullptr, contents);
  std::cout << "wrote " << (dir / "checkpoint_v2.pt").string() << " and checkpoint_v1.pt from " << trained.string()
            << std::endl;
}

class RegressionGoldenFamily : public ::testing::TestWithParam<GoldenFamily> {
 protected:
  void SetUp() override { torch::set_num_threads(1); }
  fs::path dir() const { return test::golden_dir() / GetParam().name; }
  fs::path v2() const { return dir() / "checkpoint_v2.pt"; }
  fs::path v1() const { return dir() / "checkpoint_v1.pt"; }
  fs::path expected_file() const { return dir() / "expected.json"; }

  // The outputs of `run` against expected.json: one failure naming the family, the checkpoint
  // file, the output and its first differing value.
  void expect_expected_outputs(LoadedRun& run, const fs::path& checkpoint) const {
    ASSERT_TRUE(fs::exists(expected_file())) << expected_file() << " is missing: run scripts/make_golden.sh";
    const auto expected = json::parse(read_file(expected_file().string()));
    const auto actual = test::golden_outputs(run);
    json pinned;
    for (const char* key : {"task", "inputs", "outputs"}) pinned[key] = expected.value(key, json());
    const auto difference = test::first_difference(pinned, actual, kTolerance);
    EXPECT_TRUE(difference.empty()) << "golden family " << GetParam().name << ", " << checkpoint.filename().string()
                                    << ": " << difference
                                    << "\n(if the change is deliberate, rewrite the expected outputs with "
                                       "scripts/make_golden.sh and review the diff)";
  }
};

TEST_P(RegressionGoldenFamily, VersionTwoGivesTheExpectedOutputs) {
  if (accepting()) {
    if (const char* runs = std::getenv("NLPZOO_GOLDEN_RUNS")) {
      const auto trained = fs::path(runs) / GetParam().name / "checkpoint_last.pt";
      if (fs::exists(trained)) write_golden_checkpoints(trained, dir());
    }
    ASSERT_TRUE(fs::exists(v2())) << v2() << " is missing: run scripts/make_golden.sh --retrain " << GetParam().name;
    auto run = load_run(v2().string(), torch::kCPU);
    auto outputs = test::golden_outputs(run);
    outputs["family"] = GetParam().name;
    outputs["note"] = "written by scripts/make_golden.sh; tests/test_golden.cpp compares (numbers within 1e-4)";
    atomic_write_text(expected_file().string(), outputs.dump(1) + "\n");
    std::cout << "wrote " << expected_file().string() << std::endl;
  }
  ASSERT_TRUE(fs::exists(v2())) << v2() << " is missing: run scripts/make_golden.sh --retrain " << GetParam().name;
  EXPECT_FALSE(is_checkpoint_v1(v2().string())) << v2();
  auto run = load_run(v2().string(), torch::kCPU);
  expect_expected_outputs(run, v2());
}

// A checkpoint written before version 2 loads with a warning, gives the same outputs, and
// `checkpoint upgrade` turns it into exactly the version-2 file's tensors and metadata.
TEST_P(RegressionGoldenFamily, VersionOneLoadsWithAWarningGivesTheSameOutputsAndUpgrades) {
  ASSERT_TRUE(fs::exists(v1())) << v1() << " is missing: run scripts/make_golden.sh --retrain " << GetParam().name;
  ASSERT_TRUE(is_checkpoint_v1(v1().string())) << v1() << " is not a version-1 (zip) checkpoint";
  testing::internal::CaptureStderr();
  auto run = [&] {
    try {
      return load_run(v1().string(), torch::kCPU);
    } catch (...) {
      testing::internal::GetCapturedStderr();
      throw;
    }
  }();
  const std::string warning = testing::internal::GetCapturedStderr();
  EXPECT_NE(warning.find("is a version-1 checkpoint"), std::string::npos) << warning;
  expect_expected_outputs(run, v1());

  const auto tmp = test::fresh_temp_dir("golden_upgrade_" + test::golden_test_name(GetParam().name));
  const auto copy = tmp / "checkpoint_last.pt";
  fs::copy_file(v1(), copy);
  testing::internal::CaptureStderr();
  const bool upgraded = upgrade_checkpoint(copy.string());
  testing::internal::GetCapturedStderr();
  EXPECT_TRUE(upgraded);
  const auto from_v1 = read_safetensors(copy.string());
  const auto golden = read_safetensors(v2().string());
  EXPECT_EQ(from_v1.metadata, golden.metadata) << GetParam().name;
  const std::map<std::string, torch::Tensor> upgraded_tensors(from_v1.tensors.begin(), from_v1.tensors.end());
  for (const auto& [name, tensor] : golden.tensors) {
    const auto it = upgraded_tensors.find(name);
    if (it == upgraded_tensors.end()) {
      ADD_FAILURE() << "golden family " << GetParam().name << ": the upgraded version-1 file has no tensor '" << name << "'";
      continue;
    }
    EXPECT_TRUE(torch::equal(it->second, tensor))
        << "golden family " << GetParam().name << ": upgraded version-1 tensor '" << name
        << "' differs from the version-2 file's";
  }
  EXPECT_EQ(upgraded_tensors.size(), golden.tensors.size()) << GetParam().name;
  fs::remove_all(tmp);
}

// The numbers a forward pass gives under teacher forcing or on fixed inputs (log-probs,
// probabilities), in output order; searched text and scores are left out, as bf16 may change them.
void collect_forced_numbers(const json& node, bool inside, std::vector<double>& out) {
  static const std::set<std::string> kKeys = {"reference_log_probs", "first_step_log_probs", "log_probs", "probabilities", "scores"};
  if (node.is_number()) {
    if (inside) out.push_back(node.get<double>());
  } else if (node.is_array()) {
    for (const auto& item : node) collect_forced_numbers(item, inside, out);
  } else if (node.is_object()) {
    for (const auto& [key, value] : node.items()) collect_forced_numbers(value, inside || kKeys.count(key) > 0, out);
  }
}

// The inference commands' bf16 (cast_for_inference, then autocast, as tools/run_flags.cpp does)
// runs every family they serve (a dtype mismatch between a bf16 weight and a float32 tensor
// would throw here) and stays near fp32. bf16 keeps 8 bits of mantissa: measured differences
// are up to 0.04 in a log-prob (transformer-relative-prenorm); the tolerance is 2.5 times that.
TEST_P(RegressionGoldenFamily, Bf16InferenceRunsWithBf16WeightsAndStaysNearFp32) {
  if (!cpu_features().bf16()) GTEST_SKIP() << "this CPU has no bf16 arithmetic (" << cpu_features().to_string() << ")";
  auto run = load_run(v2().string(), torch::kCPU);
  const auto fp32 = test::golden_outputs(run);
  std::vector<double> expected;
  collect_forced_numbers(fp32.at("outputs"), false, expected);
  if (expected.empty())  // word vectors: no forward-pass outputs here (RegressionResume.EvaluateRunsInBf16 runs theirs)
    GTEST_SKIP() << GetParam().name << " (" << fp32.at("task") << "): word vectors keep float32 tables";
  cast_for_inference(*run.task->model(), Precision::kBf16);
  for (const auto& p : run.task->model()->named_parameters())
    EXPECT_EQ(p.value().scalar_type(), torch::kBFloat16) << GetParam().name << ": " << p.key();
  const AutocastGuard autocast(Precision::kBf16, torch::kCPU);
  std::vector<double> actual;
  collect_forced_numbers(test::golden_outputs(run).at("outputs"), false, actual);
  ASSERT_EQ(actual.size(), expected.size()) << GetParam().name;
  double worst = 0;
  for (size_t i = 0; i < expected.size(); ++i) worst = std::max(worst, std::abs(actual[i] - expected[i]));
  EXPECT_LT(worst, 0.1) << GetParam().name << ": largest difference to fp32 over " << expected.size() << " numbers";
  EXPECT_GT(worst, 0.0) << GetParam().name << ": bf16 gave fp32's numbers exactly, so it did not run in bf16";
  std::cout << GetParam().name << ": " << expected.size() << " numbers, largest bf16 - fp32 difference " << worst << std::endl;
}

INSTANTIATE_TEST_SUITE_P(RegressionGolden, RegressionGoldenFamily, ::testing::ValuesIn(test::golden_families_or_none()),
                         [](const auto& info) { return test::golden_test_name(info.param.name); });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(RegressionGoldenFamily);

// A new config or task cannot skip the golden suite, and no family's folder is left over.
TEST(RegressionGoldenSuite, FamiliesFileCoversEveryTaskAndConfig) {
  std::vector<GoldenFamily> families;
  ASSERT_NO_THROW(families = test::read_golden_families());
  ASSERT_FALSE(families.empty()) << test::golden_dir() / "families.tsv" << " is missing or empty";
  std::set<std::string> configs, tasks, names;
  for (const auto& f : families) {
    configs.insert(f.config);
    names.insert(f.name);
    const auto v2 = test::golden_dir() / f.name / "checkpoint_v2.pt";
    if (fs::exists(v2)) tasks.insert(read_checkpoint_header(v2.string()).task);
  }
  for (const auto& entry : fs::directory_iterator(fs::path(NLPZOO_SOURCE_DIR) / "configs")) {
    const auto name = entry.path().filename().string();
    if (entry.path().extension() == ".ini") {
      EXPECT_TRUE(configs.count(name)) << "configs/" << name << " has no golden family in families.tsv";
    }
  }
  for (const auto& config : configs)
    EXPECT_TRUE(fs::exists(fs::path(NLPZOO_SOURCE_DIR) / "configs" / config)) << "families.tsv names configs/" << config;
  for (const auto& task : task_names())
    EXPECT_TRUE(tasks.count(task)) << "task '" << task << "' has no golden checkpoint";
  for (const auto& entry : fs::directory_iterator(test::golden_dir())) {
    if (entry.is_directory()) {
      EXPECT_TRUE(names.count(entry.path().filename().string()))
          << entry.path() << " is not a family of families.tsv (left over?)";
    }
  }
}

TEST(RegressionGoldenSuite, FilesStaySmall) {
  uintmax_t total = 0;
  for (const auto& entry : fs::recursive_directory_iterator(test::golden_dir())) {
    if (!entry.is_regular_file()) continue;
    total += entry.file_size();
    if (entry.path().extension() == ".pt") {
      EXPECT_LE(entry.file_size(), kMaxCheckpointBytes) << entry.path();
    }
  }
  EXPECT_LE(total, kMaxTotalBytes) << test::golden_dir();
  std::cout << "golden files: " << total << " bytes" << std::endl;
}

TEST(GoldenCompare, NamesTheFirstDifference) {
  const auto e = json::parse(R"({"outputs": {"beam5": ["the lord", "god"], "log_probs": [[-1.0, -2.0]]}})");
  EXPECT_EQ(test::first_difference(e, e, 1e-4), "");
  auto a = e;
  a["outputs"]["log_probs"][0][1] = -2.00005;
  EXPECT_EQ(test::first_difference(e, a, 1e-4), "");
  a["outputs"]["log_probs"][0][1] = -2.0002;
  EXPECT_EQ(test::first_difference(e, a, 1e-4),
            "outputs.log_probs[0][1]: expected -2, got -2.0002 (|difference| 0.0002 > 0.0001)");
  a = e;
  a["outputs"]["beam5"][0] = "the lard";
  EXPECT_EQ(test::first_difference(e, a, 1e-4),
            "outputs.beam5[0]: expected \"the lord\", got \"the lard\" (they differ from character 5)");
  a = e;
  a["outputs"]["beam5"].push_back("x");
  EXPECT_EQ(test::first_difference(e, a, 1e-4), "outputs.beam5: expected 2 elements, got 3");
  a = e;
  a["outputs"].erase("beam5");
  EXPECT_EQ(test::first_difference(e, a, 1e-4).rfind("outputs.beam5: expected", 0), 0u);
  a = e;
  a["outputs"]["greedy"] = "x";
  EXPECT_EQ(test::first_difference(e, a, 1e-4), "outputs.greedy: an output that the expected file does not have");
  a = e;
  a["outputs"]["beam5"] = 3;
  EXPECT_NE(test::first_difference(e, a, 1e-4).find("(another type)"), std::string::npos);
}

}  // namespace
