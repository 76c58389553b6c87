// (Regression) What users do with vectors they trained from the CLI: one tiny Skip-Gram run,
// then `nlpzoo export` (TorchScript, read back in C++ and in Debian's python3-torch) and
// `nlpzoo embed debias --run-dir` (Bolukbasi et al. 2016: neutral words lose their component on
// the bias direction, equalized pairs end equidistant from every neutral word).
#include <gtest/gtest.h>

#include <torch/script.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/io.h"
#include "datasets/word_vectors.h"
#include "infer/debias.h"
#include "tests/test_util.h"

namespace fs = std::filesystem;
using namespace nlpzoo;
using test::shell_quote;

namespace {

class RegressionEmbedTrained : public ::testing::Test {
 protected:
  // One run for the whole suite: training is the slow part.
  static void SetUpTestSuite() {
    root_ = new fs::path(test::fresh_temp_dir("embed_trained"));
    fs::create_directories(*root_ / "data");
    std::ofstream out(*root_ / "data" / "english.txt");
    // Gendered words of the default definitional and equalize lists, and neutral words.
    const char* lines[] = {"he is a man and his father is a doctor", "she is a woman and her mother is a nurse",
                           "the boy and his grandfather read a book", "the girl and her grandmother read a book",
                           "a son and a daughter of the king and the queen", "the doctor and the nurse work in the city",
                           "he himself and she herself went to the city"};
    for (int i = 0; i < 700; ++i) out << lines[i % 7] << "\n";
    out.close();
    const std::string config = std::string(NLPZOO_SOURCE_DIR) + "/configs/skipgram-ns.ini";
    status_ = new test::CommandResult(test::run_cli(
        "train --config " + shell_quote(config) + " --data-dir " + shell_quote((*root_ / "data").string()) +
        " --run-dir " + shell_quote(run()) + " --device cpu --max_epochs 2 --valid_every 20 --dim 8 --sample 0"));
  }
  static void TearDownTestSuite() {
    fs::remove_all(*root_);
    delete root_;
    delete status_;
  }
  void SetUp() override { ASSERT_EQ(status_->status, 0) << status_->out << status_->err; }
  static std::string run() { return (*root_ / "run").string(); }
  static std::string path(const std::string& name) { return (*root_ / name).string(); }
  // The run's vectors as `embed export` writes them.
  static WordVectors exported() {
    auto r = test::run_cli("embed export --run-dir " + shell_quote(run()) + " --format text --out " +
                           shell_quote(path("v.txt")));
    EXPECT_EQ(r.status, 0) << r.out << r.err;
    return read_word_vectors(path("v.txt"));
  }
  static fs::path* root_;
  static test::CommandResult* status_;
};
fs::path* RegressionEmbedTrained::root_ = nullptr;
test::CommandResult* RegressionEmbedTrained::status_ = nullptr;

}  // namespace

TEST_F(RegressionEmbedTrained, ExportedTorchScriptHoldsTheVectorsAndLoadsInPython) {
  const auto pt = path("v.pt");
  auto r = test::run_cli("export --run-dir " + shell_quote(run()) + " --out " + shell_quote(pt));
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  const auto expected = exported();
  auto m = torch::jit::load(pt);
  EXPECT_TRUE(torch::equal(m.attr("vectors").toTensor(), expected.vectors()));

  NLPZOO_REQUIRE_PYTHON_MODULE("torch", "python3-torch");
  auto py = test::run_python("import sys, torch\n"
                             "m = torch.jit.load(sys.argv[1])\n"
                             "v = m(m.ids(['king', 'queen']))\n"
                             "print(m.words[0], m.dim, tuple(v.shape), ' '.join('%.9g' % x for x in v[0].tolist()))\n",
                             {pt});
  ASSERT_EQ(py.status, 0) << py.out << py.err;
  std::istringstream in(py.out);
  std::string first, shape0, shape1;
  int64_t dim = 0;
  in >> first >> dim >> shape0 >> shape1;
  EXPECT_EQ(first, expected.words()[0]);
  EXPECT_EQ(dim, 8);
  EXPECT_EQ(shape0 + shape1, "(2,8)");
  const auto king = expected.vectors()[expected.find("king")];
  for (int64_t i = 0; i < 8; ++i) {
    float x = 0;
    in >> x;
    EXPECT_NEAR(x, king[i].item<float>(), 1e-6) << i;
  }
}

TEST_F(RegressionEmbedTrained, DebiasNeutralizesAndEqualizesTrainedVectors) {
  auto r = test::run_cli("embed debias --run-dir " + shell_quote(run()) + " --out " + shell_quote(path("d.txt")));
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  const auto original = exported();
  const auto debiased = read_word_vectors(path("d.txt"));
  ASSERT_EQ(debiased.words(), original.words());
  const auto g = bias_direction(original, default_definitional_pairs(), BiasDirectionMethod::kPca);
  const auto row = [&](const std::string& w) {
    const int64_t i = debiased.find(w);
    EXPECT_GE(i, 0) << w;
    return debiased.vectors()[std::max<int64_t>(i, 0)];
  };
  const std::vector<std::string> neutral = {"doctor", "nurse", "book", "city", "read", "the"};
  // Before: trained vectors do lean on g (else the test would prove nothing).
  double before = 0;
  for (const auto& w : neutral) {
    const auto v = original.vectors()[original.find(w)];
    before = std::max(before, std::abs((v / v.norm()).dot(g).item<double>()));
  }
  EXPECT_GT(before, 0.05);
  for (const auto& w : neutral) {
    EXPECT_NEAR(row(w).dot(g).item<float>(), 0.f, 1e-5) << w;
    EXPECT_NEAR(row(w).norm().item<float>(), 1.f, 1e-5) << w;
  }
  for (const auto& w : neutral) {
    const float a = (row(w) - row("grandmother")).norm().item<float>();
    const float b = (row(w) - row("grandfather")).norm().item<float>();
    EXPECT_NEAR(a, b, 1e-5) << w;
  }
  // Gender-specific words keep their component.
  EXPECT_GT(std::abs(row("she").dot(g).item<float>()), 0.05f);
}
