// The TorchScript export of word vectors (infer/export_word_vectors.h): lookups by id and by
// word, the saved file's round trip, `nlpzoo export` on a word2vec run, and Debian's python3-torch.
#include <gtest/gtest.h>

#include <torch/script.h>

#include <filesystem>
#include <fstream>

#include "datasets/io.h"
#include "datasets/word_vectors.h"
#include "infer/export_word_vectors.h"
#include "tests/test_util.h"

namespace fs = std::filesystem;
using namespace nlpzoo;

namespace {

WordVectors three_words() {
  return WordVectors({"the", "king", "queen"}, torch::tensor({1.f, 2.f, 3.f, 4.f, 5.f, 6.f}).view({3, 2}));
}

}  // namespace

TEST(ExportWordVectors, ForwardLooksUpRowsOfAnyShape) {
  auto m = script_word_vectors(three_words());
  auto one = m.forward({torch::tensor({2, 0}, torch::kLong)}).toTensor();
  EXPECT_TRUE(torch::equal(one, torch::tensor({5.f, 6.f, 1.f, 2.f}).view({2, 2})));
  auto batch = m.forward({torch::tensor({1, 1, 2, 0}, torch::kLong).view({2, 2})}).toTensor();
  ASSERT_EQ(batch.sizes(), (std::vector<int64_t>{2, 2, 2}));
  EXPECT_EQ(batch[1][0][1].item<float>(), 6.f);
  EXPECT_EQ(m.attr("vocab_size").toInt(), 3);
  EXPECT_EQ(m.attr("dim").toInt(), 2);
}

TEST(ExportWordVectors, IdsMapWordsAndUnknownWordsRaise) {
  auto m = script_word_vectors(three_words());
  c10::List<std::string> words({"queen", "the"});
  auto ids = m.get_method("ids")({words}).toTensor();
  EXPECT_EQ(ids.scalar_type(), torch::kLong);
  EXPECT_TRUE(torch::equal(ids, torch::tensor({2, 0}, torch::kLong)));
  c10::List<std::string> unknown({"prince"});
  EXPECT_THROW(m.get_method("ids")({unknown}), std::exception);
  EXPECT_THROW(script_word_vectors(WordVectors()), std::invalid_argument);
}

TEST(ExportWordVectors, SavedFileLoadsWithItsExtraFilesAndIsASnapshot) {
  const auto dir = test::fresh_temp_dir("export_wv");
  const auto path = (dir / "v.pt").string();
  auto vectors = three_words();
  export_word_vectors(path, vectors, {{"config.ini", "task = word2vec\n"}});
  vectors.vectors().zero_();  // the file holds a copy
  torch::jit::ExtraFilesMap files{{"config.ini", ""}, {"README.txt", ""}};
  auto m = torch::jit::load(path, torch::kCPU, files);
  EXPECT_EQ(files["config.ini"], "task = word2vec\n");
  EXPECT_NE(files["README.txt"].find("ids(words"), std::string::npos);
  EXPECT_TRUE(torch::equal(m.attr("vectors").toTensor(), three_words().vectors()));
  EXPECT_EQ(m.attr("words").toListRef().at(1).toStringRef(), "king");
  EXPECT_THROW(export_word_vectors((dir / "no/such/dir/v.pt").string(), vectors, {}), UserError);
  fs::remove_all(dir);
}

// A word2vec run from the CLI exports to TorchScript, and python3-torch reads the same vectors
// that `nlpzoo embed export --format text` writes.
TEST(RegressionExportWordVectors, TrainedRunExportsAndLoadsInPython) {
  const auto root = test::fresh_temp_dir("export_wv_cli");
  fs::create_directories(root / "data");
  {
    std::ofstream out(root / "data" / "english.txt");
    const char* lines[] = {"the king rules the land", "the queen rules the land", "a man and a woman",
                           "the king and the queen", "a land of the man"};
    for (int i = 0; i < 400; ++i) out << lines[i % 5] << "\n";
  }
  const auto run = (root / "run").string(), pt = (root / "v.pt").string(), txt = (root / "v.txt").string();
  const std::string config = std::string(NLPZOO_SOURCE_DIR) + "/configs/skipgram-ns.ini";
  auto r = test::run_cli("train --config " + test::shell_quote(config) + " --data-dir " +
                         test::shell_quote((root / "data").string()) + " --run-dir " + test::shell_quote(run) +
                         " --device cpu --max_epochs 1 --valid_every 20 --dim 8");
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  r = test::run_cli("export --run-dir " + test::shell_quote(run) + " --out " + test::shell_quote(pt));
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  r = test::run_cli("embed export --run-dir " + test::shell_quote(run) + " --format text --out " +
                    test::shell_quote(txt));
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  const auto expected = read_word_vectors(txt);
  auto m = torch::jit::load(pt);
  EXPECT_TRUE(torch::equal(m.attr("vectors").toTensor(), expected.vectors()));

  if (std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "/usr/bin/python3 cannot import torch (install python3-torch)";
  auto py = test::run_command("OMP_NUM_THREADS=1 /usr/bin/python3 -c " +
                              test::shell_quote("import sys, torch\n"
                                                "m = torch.jit.load(sys.argv[1])\n"
                                                "v = m(m.ids(['king', 'queen']))\n"
                                                "print(m.words[0], m.dim, tuple(v.shape), ' '.join('%.9g' % x for x in v[0].tolist()))\n") +
                              " " + test::shell_quote(pt));
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
  fs::remove_all(root);
}
