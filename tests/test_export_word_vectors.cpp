// The TorchScript export of word vectors (infer/export_word_vectors.h): lookups by id and by
// word, the saved file's round trip. (`nlpzoo export` of a trained run: tests/test_embed_trained.cpp.)
#include <gtest/gtest.h>

#include <torch/script.h>

#include <filesystem>
#include <fstream>

#include "core/io.h"
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
