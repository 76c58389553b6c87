// ELMo: the bidirectional LM (each direction reads only its side, the objective from the
// equations, padding invisible), the scalar mix, the features a classifier reads (frozen, the
// biLM's input layout), the bilm task (learns, resumes exactly) and classification's elmo key
// (loads the run's biLM once, then needs the folder no more).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <filesystem>

#include "core/io.h"
#include "datasets/special_ids.h"
#include "infer/export_classifier.h"
#include "infer/export_lm.h"
#include "models/classifier/rnn_classifier.h"
#include "models/rnn/bilm.h"
#include "models/rnn/elmo.h"
#include "tests/test_util.h"
#include "train/checkpoint.h"
#include "core/safetensors.h"
#include "train/tasks/bilm_task.h"
#include "train/tasks/classification_task.h"
#include "train/tasks/registry.h"
#include "train/tasks/train_run.h"
#include "train/trainer.h"

using namespace nlpzoo;
namespace fs = std::filesystem;

namespace {

BiLanguageModelOptions tiny_bilm(int64_t layers = 2) {
  return BiLanguageModelOptions(13).embed_dim(4).hidden_size(6).num_layers(layers).dropout(0.0);
}

torch::Tensor longs(const std::vector<std::vector<int64_t>>& rows) {
  std::vector<int64_t> flat;
  for (const auto& r : rows) flat.insert(flat.end(), r.begin(), r.end());
  return torch::tensor(flat, torch::kLong).view({static_cast<int64_t>(rows.size()), -1});
}

}  // namespace

TEST(BiLm, ReversePaddedReversesEachRowsTokensOnly) {
  const auto x = longs({{1, 2, 3, 0}, {4, 5, 6, 7}, {8, 0, 0, 0}});
  const auto lengths = torch::tensor({3, 4, 1}, torch::kLong);
  EXPECT_TRUE(torch::equal(reverse_padded(x, lengths), longs({{3, 2, 1, 0}, {7, 6, 5, 4}, {8, 0, 0, 0}})));
  EXPECT_TRUE(torch::equal(reverse_padded(reverse_padded(x, lengths), lengths), x));
  // Trailing dimensions move with their position.
  const auto wide = x.unsqueeze(-1).repeat({1, 1, 2});
  EXPECT_TRUE(torch::equal(reverse_padded(wide, lengths).select(2, 1), reverse_padded(x, lengths)));
}

// The forward layers at position j read tokens 0..j only, the backward layers tokens j..n-1
// only: changing token k moves forward states from k on and backward states up to k.
TEST(BiLm, EachDirectionReadsOnlyItsSide) {
  torch::manual_seed(1);
  BiLanguageModel bilm(tiny_bilm());
  bilm->eval();
  const auto a = longs({{kClsId, 7, 8, 9, 10, kSepId}});
  auto b = a.clone();
  b[0][3] = 12;
  const auto n = torch::tensor({6}, torch::kLong);
  const auto la = bilm->layers(a, n), lb = bilm->layers(b, n);
  ASSERT_EQ(la.size(), 3u);
  for (size_t l = 1; l < la.size(); ++l) {
    for (int64_t j = 0; j < 6; ++j) {
      const bool forward_same = torch::equal(la[l][0][j].narrow(0, 0, 4), lb[l][0][j].narrow(0, 0, 4));
      const bool backward_same = torch::equal(la[l][0][j].narrow(0, 4, 4), lb[l][0][j].narrow(0, 4, 4));
      EXPECT_EQ(forward_same, j < 3) << "layer " << l << " position " << j;
      EXPECT_EQ(backward_same, j > 3) << "layer " << l << " position " << j;
    }
  }
  // Layer 0 is the token embedding, twice.
  EXPECT_TRUE(torch::equal(la[0][0], torch::cat({bilm->embedding->weight.index({a[0]}), bilm->embedding->weight.index({a[0]})}, -1)));
}

// The backward LM is a forward LM over the reversed tokens: a biLM whose forward weights are
// another's backward weights reads the reversed sequence as that one's backward direction.
TEST(BiLm, BackwardDirectionIsAForwardLmOverTheReversedTokens) {
  torch::manual_seed(2);
  BiLanguageModel bilm(tiny_bilm()), mirror(tiny_bilm());
  bilm->eval();
  mirror->eval();
  {
    torch::NoGradGuard no_grad;
    for (const auto& p : mirror->named_parameters()) {
      std::string name = p.key();
      if (name.rfind("forward_", 0) == 0) name = "backward_" + name.substr(8);
      p.value().copy_(bilm->named_parameters()[name]);
    }
  }
  const auto tokens = longs({{kClsId, 7, 8, 9, kSepId}});
  const auto n = torch::tensor({5}, torch::kLong);
  const auto ours = bilm->layers(tokens, n);
  const auto theirs = mirror->layers(tokens.flip(1), n);
  for (size_t l = 1; l < ours.size(); ++l)
    EXPECT_LT(test::max_diff(ours[l][0].narrow(1, 4, 4), theirs[l][0].flip(0).narrow(1, 0, 4)), 1e-6) << l;
}

// A row gives the same layers alone and padded in a batch beside a longer row.
TEST(BiLm, PaddingChangesNothing) {
  torch::manual_seed(3);
  BiLanguageModel bilm(tiny_bilm());
  bilm->eval();
  const auto batch = longs({{kClsId, 7, 8, kSepId, 0, 0}, {kClsId, 9, 10, 11, 12, kSepId}});
  const auto alone = bilm->layers(longs({{kClsId, 7, 8, kSepId}}), torch::tensor({4}, torch::kLong));
  const auto padded = bilm->layers(batch, torch::tensor({4, 6}, torch::kLong));
  for (size_t l = 0; l < alone.size(); ++l)
    EXPECT_LT(test::max_diff(alone[l][0], padded[l][0].narrow(0, 0, 4)), 1e-6) << l;
}

// The objective: sum_k log p(t_k | t_<k) + log p(t_k | t_>k), each direction through the shared
// softmax, over the N + 1 predictions of each row.
TEST(BiLm, LossIsBothDirectionsCrossEntropyFromTheEquations) {
  torch::manual_seed(4);
  BiLanguageModel bilm(tiny_bilm());
  bilm->eval();
  const auto tokens = longs({{kClsId, 7, 8, 9, kSepId}, {kClsId, 10, kSepId, 0, 0}});
  const auto n = torch::tensor({5, 3}, torch::kLong);
  const auto loss = bilm->loss(tokens, n);
  const auto top = bilm->layers(tokens, n).back();
  double forward = 0, backward = 0;
  for (int64_t b = 0; b < 2; ++b) {
    for (int64_t j = 0; j + 1 < n[b].item<int64_t>(); ++j) {
      const auto f = torch::log_softmax(bilm->output->forward(top[b][j].narrow(0, 0, 4)), 0);
      forward -= f[tokens[b][j + 1].item<int64_t>()].item<double>();
      const auto k = torch::log_softmax(bilm->output->forward(top[b][j + 1].narrow(0, 4, 4)), 0);
      backward -= k[tokens[b][j].item<int64_t>()].item<double>();
    }
  }
  EXPECT_EQ(loss.predictions, 4 + 2);
  EXPECT_NEAR(loss.forward_nll.item<double>(), forward, 1e-4);
  EXPECT_NEAR(loss.backward_nll.item<double>(), backward, 1e-4);
}

TEST(ScalarMix, GammaTimesSoftmaxWeightedSum) {
  ScalarMix mix(3);
  {
    torch::NoGradGuard no_grad;
    mix->scalar_parameters.copy_(torch::tensor({0.0, std::log(2.0), std::log(3.0)}));
    mix->gamma.fill_(2.0);
  }
  const auto h0 = torch::full({2}, 6.0), h1 = torch::full({2}, 12.0), h2 = torch::full({2}, -6.0);
  // 2 * (1/6 * 6 + 2/6 * 12 + 3/6 * -6) = 2 * (1 + 4 - 3) = 4
  EXPECT_TRUE(torch::allclose(mix->forward({h0, h1, h2}), torch::full({2}, 4.0)));
  EXPECT_THROW(mix->forward({h0, h1}), std::invalid_argument);
  // A fresh mix is an even average with gamma 1.
  ScalarMix fresh(2);
  EXPECT_TRUE(torch::allclose(fresh->forward({h0, h1}), torch::full({2}, 9.0)));
}

// The biLM reads a classifier's row as it read its corpus: [CLS] pieces [SEP], a pair's <eos> as [SEP].
TEST(Elmo, BiLmInputWrapsEachRowInClsAndSep) {
  const auto tokens = longs({{7, 8, 0}, {9, kEosId, 10}});
  const auto out = bilm_input(tokens, torch::tensor({2, 3}, torch::kLong));
  EXPECT_TRUE(torch::equal(out, longs({{kClsId, 7, 8, kSepId, 0}, {kClsId, 9, kSepId, 10, kSepId}})));
}

// The biLM is frozen and reads in eval mode; the mix learns; features are zero past a row's end.
TEST(Elmo, BiLmIsFrozenAndTheMixLearns) {
  torch::manual_seed(5);
  Elmo elmo(tiny_bilm().dropout(0.5));
  elmo->train();
  EXPECT_TRUE(elmo->is_training());
  EXPECT_FALSE(elmo->bilm->is_training());
  const auto tokens = longs({{7, 8, 9}, {10, 11, 0}});
  const auto lengths = torch::tensor({3, 2}, torch::kLong);
  const auto a = elmo->forward(tokens, lengths), b = elmo->forward(tokens, lengths);
  EXPECT_TRUE(torch::equal(a, b)) << "no dropout inside the biLM";
  EXPECT_EQ(a.sizes().vec(), (std::vector<int64_t>{2, 3, 8}));
  EXPECT_TRUE(torch::equal(a[1][2], torch::zeros({8})));
  // The features are the mix of the biLM's layers at the pieces' positions.
  const auto layers = elmo->bilm->layers(bilm_input(tokens, lengths), lengths + 2);
  const auto expected = elmo->mix->forward({layers[0].narrow(1, 1, 3), layers[1].narrow(1, 1, 3), layers[2].narrow(1, 1, 3)});
  EXPECT_LT(test::max_diff(a[0], expected[0]), 1e-6);
  a.sum().backward();
  for (const auto& p : elmo->bilm->parameters()) EXPECT_FALSE(p.grad().defined());
  EXPECT_TRUE(elmo->mix->scalar_parameters.grad().defined());
  EXPECT_TRUE(elmo->mix->gamma.grad().defined());
}

// A classifier with ELMo reads [E x; ELMo] and still gives a row the same logits alone or padded.
TEST(Elmo, ClassifierReadsTheFeaturesBesideItsEmbeddings) {
  torch::manual_seed(6);
  ClassifierOptions o(13, 2);
  o.embed_dim(3).hidden_size(5).dropout(0.0).pad_id(kPadId);
  RnnClassifier model(o, tiny_bilm());
  model->eval();
  EXPECT_EQ(model->rnn->options().input_size(), 3 + 8);
  const auto alone = model->forward(longs({{7, 8}}));
  const auto padded = model->forward(longs({{7, 8, 0, 0}, {9, 10, 11, 12}}));
  EXPECT_LT(test::max_diff(alone[0], padded[0]), 1e-6);
  // The biLM's weights matter: other weights, other logits.
  {
    torch::NoGradGuard no_grad;
    model->elmo->bilm->embedding->weight.add_(1.0);
  }
  EXPECT_GT(test::max_diff(model->forward(longs({{7, 8}}))[0], alone[0]), 1e-6);
}

// The twins: the biLM's layers and an ELMo classifier's logits equal the eager models', and
// python3-torch runs both files.
TEST(ElmoExport, TwinsAgreeWithTheEagerModels) {
  torch::manual_seed(8);
  ClassifierOptions o(13, 2);
  o.embed_dim(3).hidden_size(5).dropout(0.0).pad_id(kPadId);
  RnnClassifier model(o, tiny_bilm(3));
  {
    torch::NoGradGuard no_grad;
    model->elmo->mix->scalar_parameters.copy_(torch::tensor({0.3, -0.2, 0.5, 0.1}));
    model->elmo->mix->gamma.fill_(1.7);
  }
  model->eval();
  const auto tokens = longs({{7, 8, 9, 0}, {10, kEosId, 11, 12}, {5, 0, 0, 0}});
  const auto lengths = torch::tensor({3, 4, 1}, torch::kLong);
  torch::NoGradGuard no_grad;
  auto classifier = script_text_classifier(*model, {"a", "b"});
  EXPECT_LT(test::max_diff(classifier.forward({tokens}).toTensor(), model->forward(tokens)), 1e-5);
  auto& bilm = *model->elmo->bilm;
  auto twin = script_bilm(bilm);
  std::vector<torch::Tensor> eager;
  for (const auto& layer : bilm.layers(bilm_input(tokens, lengths), lengths + 2)) eager.push_back(layer.narrow(1, 1, 4));
  const auto layers = twin.forward({tokens}).toTensor();  // [L + 1, B, T, 2d]
  ASSERT_EQ(layers.sizes().vec(), (std::vector<int64_t>{4, 3, 4, 8}));
  for (int64_t b = 0; b < 3; ++b) {
    const int64_t n = lengths[b].item<int64_t>();
    EXPECT_LT(test::max_diff(layers.select(1, b).narrow(1, 0, n), torch::stack(eager).select(1, b).narrow(1, 0, n)), 1e-5);
  }

  NLPZOO_REQUIRE_PYTHON_MODULE("torch", "python3-torch");
  const auto dir = test::fresh_temp_dir("elmo_export_py");
  const std::vector<std::string> paths = {(dir / "clf.pt").string(), (dir / "bilm.pt").string()};
  export_text_classifier(paths[0], *model, {"a", "b"}, {});
  export_bilm(paths[1], bilm, {});
  const auto py = test::run_python(R"PY(
import sys, torch
torch.set_num_threads(1)
tokens = torch.tensor([[7, 8, 9, 0], [10, 3, 11, 12], [5, 0, 0, 0]])
with torch.no_grad():
    p = torch.jit.load(sys.argv[1]).predict(tokens)
    layers = torch.jit.load(sys.argv[2]).forward(tokens[1:2])
print('predict 0 0', ' '.join('%.9g' % x for x in p.flatten().tolist()))
print('layers 1 0', ' '.join('%.9g' % x for x in layers.flatten().tolist()))
print('done')
)PY", paths);
  ASSERT_EQ(py.status, 0) << py.out << py.err;
  test::expect_python_report(py.out,
                             {{"predict 0 0", torch::softmax(model->forward(tokens), -1)},
                              {"layers 1 0", layers.narrow(1, 1, 1)}},
                             {});
  fs::remove_all(dir);
}

// The tasks on a topic corpus and a tiny TSV.
class ElmoTaskTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(test::fresh_temp_dir("elmo_task"));
    test::write_topic_corpus(*dir_ / "data" / "english.txt", 400);
    fs::create_directories(*dir_ / "glue");
    const std::string tsv = "sentence\tlabel\none two six\tnumbers\ncat dog cow\tanimals\nten nine\tnumbers\n"
                            "pig hen fox\tanimals\n";
    atomic_write_text((*dir_ / "glue" / "train.tsv").string(), tsv);
    atomic_write_text((*dir_ / "glue" / "dev.tsv").string(), tsv);
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
  }
  static std::string path(const std::string& name) { return (*dir_ / name).string(); }
  static std::string bilm_ini(const std::string& dropout = "0.1") {
    return "task = bilm\ndata_dir = " + path("data") +
           "\nvocab_size = 40\nembed_dim = 8\nhidden_size = 12\nnum_layers = 2\nmax_positions = 24\nbatch_size = 4\n"
           "valid_every = 20\nspm_normalization = identity\ndropout = " + dropout + "\nlr = 0.01\nvalid_interval = 2\n"
           "log_interval = 1\ndevice = cpu\n";
  }
  static int train(const std::string& run, const std::string& ini, int64_t steps, bool resume,
                   std::vector<std::string> flags = {}) {
    if (!resume) atomic_write_text(path(run + ".ini"), ini);
    flags.insert(flags.end(), {"--max_steps", std::to_string(steps)});
    TrainRequest request{path(run), resume, resume ? "" : path(run + ".ini"), "", flags};
    testing::internal::CaptureStdout();
    const int status = train_in_process(prepare_train_run(request), std::nullopt, DistributedOptions{});
    testing::internal::GetCapturedStdout();
    return status;
  }
  static fs::path* dir_;
};
fs::path* ElmoTaskTest::dir_ = nullptr;

TEST_F(ElmoTaskTest, ShortRunLowersBothDirectionsLoss) {
  auto config = Config::from_ini_text(task_schema("bilm"), bilm_ini("0"), "test");
  torch::manual_seed(7);
  BiLmTask task;
  task.setup(config, {path("data"), path("learns"), {Split::kTrain, Split::kValid}});
  const auto before = task.evaluate(Split::kValid, {});
  torch::optim::Adam adam(task.model()->parameters(), torch::optim::AdamOptions(1e-2));
  test::run_updates(task, adam, 60);
  const auto after = task.evaluate(Split::kValid, {});
  for (const char* name : {"loss", "forward_loss", "backward_loss"})
    EXPECT_LT(after.at(name).value, 0.7 * before.at(name).value) << name;
  // loss is the mean over both directions' predictions, which are as many.
  EXPECT_NEAR(after.at("loss").value, (after.at("forward_loss").value + after.at("backward_loss").value) / 2, 1e-6);
  EXPECT_NEAR(after.at("forward_perplexity").value, std::exp(after.at("forward_loss").value), 1e-3);
}

// --resume is exact: 3 updates, resume, 3 more end with the checkpoint of 6 straight updates.
TEST_F(ElmoTaskTest, ResumeEqualsTheUninterruptedRun) {
  ASSERT_EQ(train("straight", bilm_ini(), 6, false), 0);
  ASSERT_EQ(train("split", bilm_ini(), 3, false), 0);
  ASSERT_EQ(train("split", bilm_ini(), 6, true), 0);
  const auto a = read_safetensors(path("straight/checkpoint_last.pt"));
  const auto b = read_safetensors(path("split/checkpoint_last.pt"));
  const std::map<std::string, torch::Tensor> resumed(b.tensors.begin(), b.tensors.end());
  ASSERT_EQ(resumed.size(), a.tensors.size());
  for (const auto& [name, tensor] : a.tensors) {
    ASSERT_TRUE(resumed.count(name)) << name;
    EXPECT_TRUE(torch::equal(resumed.at(name), tensor)) << name << " differs after the resume";
  }
}

// classification's elmo key: the run's tokenizer, text form and sizes become the classifier's,
// its biLM is loaded (and stays as it was through training); --resume and loading the checkpoint
// never read the bilm folder again. arch = avg_emb and a run of another task are refused.
TEST_F(ElmoTaskTest, ClassifierTakesTheRunsBiLmOnceAndKeepsItFrozen) {
  ASSERT_EQ(train("bilm", bilm_ini(), 4, false), 0);
  const auto bilm = load_run(path("bilm/checkpoint_last.pt"), torch::kCPU);
  auto& source = dynamic_cast<BiLmTask&>(*bilm.task);
  fs::copy(path("bilm"), path("bilm_copy"), fs::copy_options::recursive);
  const auto classifier_ini = [&](const std::string& arch, const std::string& elmo) {
    return "task = classification\ndata_dir = " + path("glue") +
           "\ntext_column = sentence\nlabel_column = label\ntsv_columns = 2\narch = " + arch + "\nelmo = " + elmo +
           "\nembed_dim = 4\nhidden_size = 6\nmax_tokens = 100\nlr = 0.01\n"
           "valid_interval = 2\nlog_interval = 1\ndevice = cpu\n";
  };
  const std::string ini = classifier_ini("rnn", path("bilm_copy"));
  ASSERT_EQ(train("clf", ini, 3, false), 0);
  fs::remove_all(path("bilm_copy"));
  ASSERT_EQ(train("clf", ini, 5, true), 0);
  auto loaded = load_run(path("clf/checkpoint_last.pt"), torch::kCPU);
  EXPECT_EQ(loaded.config.get("elmo_embed_dim"), "8");
  EXPECT_EQ(loaded.config.get("elmo_hidden_size"), "12");
  EXPECT_EQ(loaded.config.get("normalize_words"), "true");
  auto& classifier = dynamic_cast<ClassificationTask&>(*loaded.task);
  EXPECT_EQ(classifier.tokenizer().serialized(), source.tokenizer().serialized());
  const auto theirs = source.bilm().named_parameters();
  int64_t equal = 0;
  for (const auto& p : loaded.task->model()->named_parameters()) {
    if (p.key().rfind("elmo.bilm.", 0) != 0) continue;
    EXPECT_TRUE(torch::equal(p.value(), theirs[p.key().substr(10)])) << p.key();
    ++equal;
  }
  EXPECT_EQ(equal, static_cast<int64_t>(theirs.size()));
  const auto probabilities = classifier.predict({"cat dog", "one six"}, torch::kCPU, 2);
  ASSERT_EQ(probabilities.size(), 2u);

  auto refused = [&](const std::string& arch, const std::string& elmo) {
    auto config = Config::from_ini_text(task_schema("classification"), classifier_ini(arch, elmo), "test");
    ClassificationTask task;
    return test::user_error_of([&] { task.setup(config, {path("glue"), path("refused"), {Split::kTrain}}); });
  };
  EXPECT_NE(refused("avg_emb", path("bilm")).find("config key 'elmo': only arch = rnn"),
            std::string::npos);
  EXPECT_NE(refused("rnn", path("clf")).find("is a run of task 'classification'"), std::string::npos);
  EXPECT_NE(refused("rnn", path("nowhere")).find("config key 'elmo'"), std::string::npos);
}
