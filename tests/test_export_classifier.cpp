// The TorchScript twin of the average-of-embeddings classifier (infer/export_classifier.h):
// equal to the eager model on padded batches, a snapshot, saved with its extra files, and run by
// Debian's python3-torch. (`nlpzoo export` of a trained run: tests/test_evaluate_cli.cpp.)
#include <gtest/gtest.h>

#include <torch/script.h>

#include <filesystem>
#include <sstream>

#include "datasets/io.h"
#include "infer/export_classifier.h"
#include "tests/test_util.h"

namespace fs = std::filesystem;
using namespace nlpzoo;
using test::shell_quote;

namespace {

constexpr int64_t kVocab = 30, kClasses = 3;

AverageEmbeddingClassifier trained_classifier() {
  torch::manual_seed(7);
  AverageEmbeddingClassifier model(ClassifierOptions(kVocab, kClasses).embed_dim(8).dropout(0.3));
  model->eval();
  return model;
}

// [5, 7] int64: rows of lengths 7, 1, 4, 3 padded with pad 0, and a row of padding only.
torch::Tensor padded_batch() {
  auto tokens = torch::randint(1, kVocab, {5, 7}, torch::kLong);
  tokens.index_put_({1, torch::indexing::Slice(1)}, 0);
  tokens.index_put_({2, torch::indexing::Slice(4)}, 0);
  tokens.index_put_({3, torch::indexing::Slice(3)}, 0);
  tokens[4].fill_(0);
  return tokens;
}

const std::vector<std::string> kLabels = {"neg", "neutral", "pos"};

}  // namespace

TEST(ExportClassifier, TwinMatchesEagerOnPaddedBatches) {
  auto model = trained_classifier();
  auto twin = script_average_embedding_classifier(*model, kLabels);
  torch::NoGradGuard no_grad;
  const auto tokens = padded_batch();
  const auto eager = model->forward(tokens);  // [5, 3]
  const auto logits = twin.forward({tokens}).toTensor();
  EXPECT_LE(test::max_diff(logits, eager), 1e-5);
  const auto probabilities = twin.get_method("predict")({tokens}).toTensor();
  EXPECT_LE(test::max_diff(probabilities, torch::softmax(eager, -1)), 1e-5);
  // A row padded further is the same sentence.
  const auto longer = torch::cat({tokens, torch::zeros({5, 3}, torch::kLong)}, 1);
  EXPECT_LE(test::max_diff(twin.forward({longer}).toTensor(), eager), 1e-5);
  EXPECT_EQ(twin.attr("num_classes").toInt(), kClasses);
  EXPECT_EQ(twin.attr("labels").toListRef().at(2).toStringRef(), "pos");
  EXPECT_THROW(script_average_embedding_classifier(*model, {"a", "b"}), std::invalid_argument);
}

TEST(ExportClassifier, TwinIsASnapshot) {
  auto model = trained_classifier();
  auto twin = script_average_embedding_classifier(*model, kLabels);
  torch::NoGradGuard no_grad;
  const auto tokens = padded_batch();
  const auto before = model->forward(tokens);
  model->output->bias.add_(1.0);
  EXPECT_LE(test::max_diff(twin.forward({tokens}).toTensor(), before), 1e-6);
}

TEST(ExportClassifier, SavedFileLoadsWithItsExtraFiles) {
  const auto dir = test::fresh_temp_dir("export_classifier");
  const auto path = (dir / "c.pt").string();
  auto model = trained_classifier();
  export_average_embedding_classifier(path, *model, kLabels, {{"config.ini", "task = classification\n"}});
  torch::jit::ExtraFilesMap files{{"config.ini", ""}, {"README.txt", ""}};
  auto loaded = torch::jit::load(path, torch::kCPU, files);
  EXPECT_EQ(files["config.ini"], "task = classification\n");
  EXPECT_NE(files["README.txt"].find("predict(tokens"), std::string::npos) << files["README.txt"];
  torch::NoGradGuard no_grad;
  const auto tokens = padded_batch();
  EXPECT_LE(test::max_diff(loaded.forward({tokens}).toTensor(), model->forward(tokens)), 1e-5);
  EXPECT_THROW(export_average_embedding_classifier((dir / "no/such/dir/c.pt").string(), *model, kLabels, {}),
               UserError);
  EXPECT_THROW(export_average_embedding_classifier(path, *model, kLabels, {{"README.txt", ""}}),
               std::invalid_argument);
  fs::remove_all(dir);
}

TEST(RegressionExportClassifierPython, PythonTorchRunsTheExportedClassifier) {
  if (std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "/usr/bin/python3 cannot import torch (install python3-torch)";
  const auto dir = test::fresh_temp_dir("export_classifier_py");
  const auto path = (dir / "c.pt").string();
  auto model = trained_classifier();
  export_average_embedding_classifier(path, *model, kLabels, {});
  auto py = test::run_command("OMP_NUM_THREADS=1 /usr/bin/python3 -c " +
                              shell_quote("import sys, torch\n"
                                          "m = torch.jit.load(sys.argv[1])\n"
                                          "p = m.predict(torch.tensor([[5, 6, 7, 0], [9, 0, 0, 0]]))\n"
                                          "print(m.labels[2], tuple(p.shape), ' '.join('%.9g' % x for x in p.flatten().tolist()))\n") +
                              " " + shell_quote(path));
  ASSERT_EQ(py.status, 0) << py.out << py.err;
  torch::NoGradGuard no_grad;
  const auto expected = torch::softmax(model->forward(torch::tensor({5, 6, 7, 0, 9, 0, 0, 0}, torch::kLong).view({2, 4})), -1);
  std::istringstream in(py.out);
  std::string label, shape0, shape1;
  in >> label >> shape0 >> shape1;
  EXPECT_EQ(label, "pos");
  EXPECT_EQ(shape0 + shape1, "(2,3)");
  for (int64_t i = 0; i < 6; ++i) {
    float x = -1;
    in >> x;
    EXPECT_NEAR(x, expected.flatten()[i].item<float>(), 1e-6) << i << ": " << py.out;
  }
  fs::remove_all(dir);
}
