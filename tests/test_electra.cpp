// ELECTRA's replaced-token detection (models/bert/electra.h, train/tasks/electra_task.h): the
// sample drawn by inverting the generator's softmax, the corruption and its labels (a sampled
// original counts as original), the loss MLM + λ·BCE from its equations on hand-made logits,
// the gradient stop at the sample, the embeddings shared with the generator, the task's batches
// (masked_lm's, plus seeded sampling noise), a short run whose loss falls, exact resume,
// fine-tuning from the discriminator, fill-mask through the generator and the TorchScript twin.
#include <gtest/gtest.h>
#include <torch/script.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "core/io.h"
#include "core/safetensors.h"
#include "datasets/special_ids.h"
#include "infer/script_twin.h"
#include "models/bert/electra.h"
#include "tests/test_util.h"
#include "train/tasks/classification_task.h"
#include "train/tasks/electra_task.h"
#include "train/tasks/masked_lm_task.h"
#include "train/tasks/registry.h"
#include "train/tasks/train_run.h"
#include "train/trainer.h"

using namespace nlpzoo;
namespace fs = std::filesystem;

namespace {

BertOptions tiny_bert() {
  return BertOptions().vocab_size(30).d_model(16).num_heads(2).num_layers(1).ffn_dim(32).max_positions(12);
}

// Ids as an int64 tensor of `rows` rows.
torch::Tensor ids(const std::vector<int64_t>& values, int64_t rows = 1) {
  return torch::tensor(values, torch::kLong).reshape({rows, -1});
}

// Two rows of 6 with masked positions (1, 3) and (2), the second row padded after 4.
struct ToyBatch {
  torch::Tensor tokens = ids({kClsId, kMaskId, 9, 10, 11, kSepId, kClsId, 12, kMaskId, kSepId, kPadId, kPadId}, 2);
  torch::Tensor masked = torch::tensor({{false, true, false, true, false, false}, {false, false, true, false, false, false}});
  torch::Tensor targets = ids({20, 10, 14}).flatten();  // the originals at (0,1), (0,3), (1,2)
  torch::Tensor uniform = torch::tensor({0.1f, 0.5f, 0.9f});
};

double sigmoid(double z) { return 1.0 / (1.0 + std::exp(-z)); }

}  // namespace

// Inversion of the CDF: p = (0.1, 0.2, 0.3, 0.4) has cumulative (0.1, 0.3, 0.6, 1.0), so u picks
// the first id whose cumulative probability exceeds it; over many draws the shares are p.
TEST(ElectraSampling, SampleFromSoftmaxInvertsTheCumulativeProbabilities) {
  const auto logits = torch::log(torch::tensor({0.1f, 0.2f, 0.3f, 0.4f})).expand({6, 4});  // [6, 4]
  const auto u = torch::tensor({0.0f, 0.05f, 0.15f, 0.35f, 0.65f, 0.999f});
  const auto drawn = sample_from_softmax(logits + 3.0, u);  // a shift changes no probability
  EXPECT_EQ(drawn.scalar_type(), torch::kLong);
  EXPECT_TRUE(torch::equal(drawn, torch::tensor({0, 0, 1, 2, 3, 3}, torch::kLong))) << drawn;

  const int64_t n = 20000;
  const auto many = sample_from_softmax(logits.slice(0, 0, 1).expand({n, 4}), torch::rand({n}));
  const auto shares = torch::bincount(many, {}, 4).to(torch::kDouble) / static_cast<double>(n);
  for (int64_t i = 0; i < 4; ++i) EXPECT_NEAR(shares[i].item<double>(), 0.1 * (i + 1), 0.015) << "id " << i;
}

// The corruption puts the sample at the masked positions; a sampled original is no replacement.
TEST(ElectraSampling, ReplacedTokensLabelASampledOriginalAsOriginal) {
  ToyBatch b;
  const auto sampled = ids({20, 17, 14}).flatten();  // (0,1) and (1,2) drew the original, (0,3) did not
  const auto r = replace_tokens(b.tokens, b.masked, sampled, b.targets);
  EXPECT_TRUE(torch::equal(r.corrupted, ids({kClsId, 20, 9, 17, 11, kSepId, kClsId, 12, 14, kSepId, kPadId, kPadId}, 2)))
      << r.corrupted;
  const auto expected = torch::zeros({2, 6}, torch::kBool);
  expected[0][3] = true;
  EXPECT_TRUE(torch::equal(r.replaced, expected)) << r.replaced;
  EXPECT_TRUE(torch::equal(b.tokens.select(1, 1), ids({kMaskId, 12}).flatten())) << "the input was changed";
}

// loss_sum = Σ CE(generator) + λ·N·mean_real BCE(discriminator), from hand-made logits.
TEST(ElectraLoss, MlmPlusLambdaTimesBceFromTheEquations) {
  ToyBatch b;
  ElectraOutput out;
  out.mlm_logits = torch::tensor({{2.0f, 0.0f, -1.0f}, {0.5f, 0.5f, 1.5f}});  // [N = 2, V = 3]
  const auto targets = ids({0, 2}).flatten();
  // Rows of 3 real positions and 1 pad; position (0, 1) replaced, (1, 0) a sampled original.
  out.disc_logits = torch::tensor({{1.0f, 2.0f, -1.0f, 9.0f}, {-0.5f, 0.0f, 3.0f, -9.0f}});
  out.replaced = torch::tensor({{false, true, false, false}, {false, false, false, false}});
  const auto real = torch::tensor({{true, true, true, false}, {true, true, true, false}});

  const auto log_softmax = [](std::vector<double> z, int t) {
    double norm = 0;
    for (double x : z) norm += std::exp(x);
    return z[t] - std::log(norm);
  };
  const double mlm = -log_softmax({2, 0, -1}, 0) - log_softmax({0.5, 0.5, 1.5}, 2);
  const auto bce = [](double z, double y) { return -(y * std::log(sigmoid(z)) + (1 - y) * std::log(1 - sigmoid(z))); };
  const double disc = (bce(1, 0) + bce(2, 1) + bce(-1, 0) + bce(-0.5, 0) + bce(0, 0) + bce(3, 0)) / 6;
  for (double lambda : {0.0, 1.0, 50.0}) {
    const auto l = electra_losses(out, targets, real, lambda);
    EXPECT_NEAR(l.mlm_sum.item<double>(), mlm, 1e-5);
    EXPECT_NEAR(l.disc_mean.item<double>(), disc, 1e-5);
    EXPECT_NEAR(l.loss_sum.item<double>(), mlm + lambda * 2 * disc, 1e-4 * (1 + lambda)) << "lambda " << lambda;
  }
}

// The sample stops the gradient: the discriminator's loss reaches no generator-only parameter
// (the shared embeddings, the discriminator's too, do get one), and the generator's loss reaches
// no discriminator-only one.
TEST(ElectraModel, DiscriminatorLossGivesTheGeneratorNoGradient) {
  torch::manual_seed(1);
  ElectraForPreTraining model(tiny_bert(), 4);
  ToyBatch b;
  auto out = model(b.tokens, torch::Tensor(), b.masked, b.targets, b.uniform);
  electra_losses(out, b.targets, b.tokens != kPadId, 50.0).disc_mean.backward();
  int64_t generator_only = 0;
  for (const auto& p : model->named_parameters()) {
    const auto& g = p.value().grad();
    if (p.key().rfind("generator.", 0) == 0) {
      ++generator_only;
      EXPECT_TRUE(!g.defined() || g.abs().sum().item<double>() == 0) << p.key();
    } else if (p.key().rfind("bert.pooler.", 0) != 0) {
      ASSERT_TRUE(g.defined()) << p.key();
    }
  }
  EXPECT_GE(generator_only, 10);
  EXPECT_GT(model->bert->embeddings->token->weight.grad().abs().sum().item<double>(), 0);
  EXPECT_GT(model->discriminator_predictions->output->weight.grad().abs().sum().item<double>(), 0);

  model->zero_grad();
  out = model(b.tokens, torch::Tensor(), b.masked, b.targets, b.uniform);
  electra_losses(out, b.targets, b.tokens != kPadId, 50.0).mlm_sum.backward();
  EXPECT_GT(model->generator->predictions->dense->weight.grad().abs().sum().item<double>(), 0);
  EXPECT_GT(model->bert->embeddings->token->weight.grad().abs().sum().item<double>(), 0);
  for (const auto& p : model->named_parameters()) {
    const bool discriminator_only = p.key().rfind("discriminator_predictions.", 0) == 0 ||
                                    p.key().rfind("bert.encoder.", 0) == 0;
    if (discriminator_only) {
      const auto& g = p.value().grad();
      EXPECT_TRUE(!g.defined() || g.abs().sum().item<double>() == 0) << p.key();
    }
  }
}

// One embedding module: the generator holds the discriminator's (the same storage), lists none
// of its own, projects it to its width (16 -> 4) and scores against the shared token table.
TEST(ElectraModel, GeneratorSharesTheDiscriminatorsEmbeddings) {
  ElectraForPreTraining model(tiny_bert(), 4);
  const auto& mine = model->generator->embeddings;
  const auto& theirs = model->bert->embeddings;
  EXPECT_EQ(mine->token->weight.data_ptr(), theirs->token->weight.data_ptr());
  EXPECT_EQ(mine->position->weight.data_ptr(), theirs->position->weight.data_ptr());
  EXPECT_EQ(mine->segment->weight.data_ptr(), theirs->segment->weight.data_ptr());
  EXPECT_EQ(mine->norm->weight.data_ptr(), theirs->norm->weight.data_ptr());
  std::set<void*> storages;
  for (const auto& p : model->named_parameters()) {
    EXPECT_NE(p.key().rfind("generator.embeddings.", 0), 0u) << p.key();
    storages.insert(p.value().data_ptr());
  }
  EXPECT_EQ(storages.size(), model->named_parameters().size()) << "a tensor is listed twice";
  // Sizes as ELECTRA's get_generator_config: width, heads, feed-forward divided by 4.
  const auto& g = model->generator->options();
  EXPECT_EQ(g.d_model(), 4);
  EXPECT_EQ(g.num_heads(), 1);
  EXPECT_EQ(g.ffn_dim(), 8);
  EXPECT_EQ(g.num_layers(), 1);
  EXPECT_EQ(model->generator->embeddings_project->weight.sizes().vec(), (std::vector<int64_t>{4, 16}));
  EXPECT_EQ(model->generator->predictions->dense->weight.sizes().vec(), (std::vector<int64_t>{16, 4}));
  // An update through the generator's loss moves the table both models read.
  torch::optim::SGD sgd(model->parameters(), 0.1);
  ToyBatch b;
  const auto before = theirs->token->weight.clone();
  model(b.tokens, torch::Tensor(), b.masked, b.targets, b.uniform).mlm_logits.sum().backward();
  sgd.step();
  EXPECT_FALSE(torch::equal(theirs->token->weight, before));
  EXPECT_TRUE(torch::equal(mine->token->weight, theirs->token->weight));
  // Divisor 1: the same width, no projection.
  EXPECT_FALSE(ElectraForPreTraining(tiny_bert(), 1)->generator->embeddings_project);
  EXPECT_THROW(ElectraForPreTraining(tiny_bert(), 3), c10::Error);  // 16 is not a multiple of 3
}

// The task on the masked_lm tests' topic corpus.
class ElectraTaskTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(test::fresh_temp_dir("electra_task"));
    test::write_topic_corpus(*dir_ / "data" / "english.txt", 400);
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
  }
  static std::vector<std::string> tiny_flags(const std::string& task) {
    return {"--task", task, "--vocab_size", "40", "--d_model", "16", "--num_heads", "2", "--num_layers", "1",
            "--ffn_dim", "32", "--max_positions", "24", "--batch_size", "4", "--valid_every", "20",
            "--spm_normalization", "identity", "--optimizer", "adamw", "--weight_decay", "0.01", "--device", "cpu"};
  }
  static Config tiny_config(std::vector<std::string> more = {}) {
    auto flags = tiny_flags("electra");
    flags.insert(flags.end(), more.begin(), more.end());
    return Config::resolve(task_schema("electra"), "", flags);
  }
  static std::string path(const std::string& name) { return (*dir_ / name).string(); }
  static fs::path* dir_;
};
fs::path* ElectraTaskTest::dir_ = nullptr;

// electra's batches are masked_lm's (the one data code: same sequences, masks and targets for the
// same config) plus one U[0, 1) draw per masked position, remade alike, another in another
// epoch, fixed for valid.
TEST_F(ElectraTaskTest, BatchesAreMaskedLmsWithSeededSamplingNoise) {
  auto config = tiny_config();
  ElectraTask task;
  task.setup(config, {path("data"), path("run_batches"), {Split::kTrain, Split::kValid}});
  EXPECT_EQ(config.get("vocab_size"), std::to_string(task.tokenizer().vocab_size()));
  auto mlm_config = Config::resolve(task_schema("masked_lm"), "", tiny_flags("masked_lm"));
  MaskedLmTask mlm;
  mlm.setup(mlm_config, {path("data"), path("run_batches_mlm"), {Split::kTrain, Split::kValid}});
  ASSERT_EQ(task.tokenizer().serialized(), mlm.tokenizer().serialized());
  ASSERT_EQ(task.num_batches(Split::kTrain, 0), mlm.num_batches(Split::kTrain, 0));

  const auto b = task.make_batch(Split::kTrain, 1, 2);
  const auto m = mlm.make_batch(Split::kTrain, 1, 2);
  for (const char* name : {"input", "segments", "masked", "targets"})
    EXPECT_TRUE(torch::equal(b.tensors.at(name), m.tensors.at(name))) << name;
  EXPECT_EQ(b.num_tokens, m.num_tokens);
  const auto& u = b.tensors.at("uniform");
  ASSERT_EQ(u.size(0), b.num_tokens);
  EXPECT_GE(u.min().item<float>(), 0.0f);
  EXPECT_LT(u.max().item<float>(), 1.0f);
  EXPECT_TRUE(torch::equal(task.make_batch(Split::kTrain, 1, 2).tensors.at("uniform"), u));
  EXPECT_FALSE(torch::equal(task.make_batch(Split::kTrain, 2, 2).tensors.at("masked"), b.tensors.at("masked")));
  const auto v = task.make_batch(Split::kValid, 0, 0).tensors.at("uniform");
  EXPECT_TRUE(torch::equal(task.make_batch(Split::kValid, 5, 0).tensors.at("uniform"), v));
  EXPECT_THROW(task.make_batch(Split::kTrain, 0, task.num_batches(Split::kTrain, 0)), std::out_of_range);
}

// The task's loss per masked position is the generator's MLM mean plus λ times the mean BCE over
// the real positions; its validation scores count the discriminator's calls.
TEST_F(ElectraTaskTest, LossPerUnitAndValidationScoresFollowTheirDefinitions) {
  auto config = tiny_config({"--disc_weight", "7"});
  torch::manual_seed(3);
  ElectraTask task;
  task.setup(config, {path("data"), path("run_loss"), {Split::kTrain, Split::kValid}});
  ASSERT_DOUBLE_EQ(task.disc_weight(), 7.0);
  const auto b = task.make_batch(Split::kValid, 0, 0);
  task.model()->eval();
  torch::NoGradGuard no_grad;
  const auto& input = b.tensors.at("input");
  const auto& targets = b.tensors.at("targets");
  const auto out = task.electra()(input, b.tensors.at("segments"), b.tensors.at("masked"), targets,
                                  b.tensors.at("uniform"));
  const auto real = input != kPadId;
  const double mlm = torch::cross_entropy_loss(out.mlm_logits, targets).item<double>();
  const auto z = out.disc_logits.index({real}).to(torch::kDouble);
  const auto y = out.replaced.index({real}).to(torch::kDouble);
  const double bce = -(y * torch::log(torch::sigmoid(z)) + (1 - y) * torch::log(1 - torch::sigmoid(z))).mean().item<double>();
  const auto loss = task.loss(b);
  EXPECT_NEAR(loss.loss_sum.item<double>() / b.num_tokens, mlm + 7.0 * bce, 1e-4);
  // Some sampled tokens replace the original; every label sits at a masked position.
  EXPECT_TRUE(out.replaced.logical_and(b.tensors.at("masked").logical_not()).sum().item<int64_t>() == 0);

  std::map<std::string, torch::Tensor> sums;
  for (const auto& [name, t] : loss.metric_sums) sums[name] = t.to(torch::kDouble);
  const auto metrics = task.validation_metrics(sums, b.num_tokens);
  const auto called = (z > 0), truth = y > 0.5;
  const double tp = called.logical_and(truth).sum().item<double>();
  const double fp = called.logical_and(truth.logical_not()).sum().item<double>();
  const double fn = called.logical_not().logical_and(truth).sum().item<double>();
  const double n_real = static_cast<double>(z.size(0));
  EXPECT_NEAR(metrics.at("discriminator_accuracy"), (called == truth).sum().item<double>() / n_real, 1e-12);
  EXPECT_NEAR(metrics.at("replaced_f1"), tp + fp + fn > 0 ? 2 * tp / (2 * tp + fp + fn) : 0.0, 1e-12);
  EXPECT_NEAR(metrics.at("disc_loss"), bce, 1e-5);
  EXPECT_NEAR(metrics.at("mlm_loss"), mlm, 1e-5);
  EXPECT_NEAR(metrics.at("generator_accuracy"),
              (out.mlm_logits.argmax(-1) == targets).sum().item<double>() / b.num_tokens, 1e-12);
  // F1 of the positive class "replaced" by hand: 2 hits, 1 false alarm, 1 miss.
  EXPECT_NEAR(task.validation_metrics({{"disc", torch::tensor({1.0, 5.0, 7.0, 2.0, 1.0, 1.0}, torch::kDouble)}}, 1)
                  .at("replaced_f1"),
              4.0 / 6.0, 1e-12);
}

// A short run learns: 60 AdamW updates over the train batches lower the loss of a fixed valid
// batch (fixed mask and sample), and evaluate reports every score.
TEST_F(ElectraTaskTest, ShortRunLowersTheLoss) {
  auto config = tiny_config({"--dropout", "0", "--attention_dropout", "0"});
  torch::manual_seed(5);
  ElectraTask task;
  task.setup(config, {path("data"), path("run_learns"), {Split::kTrain, Split::kValid}});
  const auto valid = task.make_batch(Split::kValid, 0, 0);
  const auto valid_loss = [&] {
    task.model()->eval();
    torch::NoGradGuard no_grad;
    const double l = task.loss(valid).loss_sum.item<double>() / valid.num_tokens;
    task.model()->train();
    return l;
  };
  const double before = valid_loss();
  torch::optim::AdamW adam(task.model()->parameters(), torch::optim::AdamWOptions(1e-2));
  test::run_updates(task, adam, 60);
  const double after = valid_loss();
  EXPECT_LT(after, 0.7 * before) << before << " -> " << after;
  const auto m = task.evaluate(Split::kValid, {});
  for (const char* name : {"loss", "generator_accuracy", "mlm_loss", "disc_loss", "discriminator_accuracy", "replaced_f1"})
    EXPECT_NE(m.find(name), nullptr) << name;
  // Most real tokens stay original, and the discriminator has learnt at least that.
  EXPECT_GT(m.at("discriminator_accuracy").value, 0.8);
  EXPECT_LT(m.at("mlm_loss").value, m.at("loss").value);
}

// --resume is exact: 3 updates, resume, 3 more end with the checkpoint of 6 straight updates,
// bit for bit (dropout on, so the RNG must be restored; the samples come with the batches).
TEST_F(ElectraTaskTest, ResumeEqualsTheUninterruptedRun) {
  std::string ini = "task = electra\ndata_dir = " + path("data") + "\n";
  const auto flags = tiny_flags("electra");
  for (size_t i = 2; i + 1 < flags.size(); i += 2) ini += flags[i].substr(2) + " = " + flags[i + 1] + "\n";
  ini += "valid_interval = 2\nlog_interval = 1\nlr = 0.003\n";
  atomic_write_text(path("electra.ini"), ini);
  const auto train = [&](const std::string& run, int64_t steps, bool resume) {
    TrainRequest request{path(run), resume, resume ? "" : path("electra.ini"), "",
                         {"--max_steps", std::to_string(steps)}};
    testing::internal::CaptureStdout();
    const int status = train_in_process(prepare_train_run(request), std::nullopt, DistributedOptions{});
    testing::internal::GetCapturedStdout();
    return status;
  };
  ASSERT_EQ(train("straight", 6, false), 0);
  ASSERT_EQ(train("split", 3, false), 0);
  ASSERT_EQ(train("split", 6, true), 0);
  const auto a = read_safetensors(path("straight/checkpoint_last.pt"));
  const auto b = read_safetensors(path("split/checkpoint_last.pt"));
  const std::map<std::string, torch::Tensor> resumed(b.tensors.begin(), b.tensors.end());
  ASSERT_EQ(resumed.size(), a.tensors.size());
  int64_t generator = 0;
  for (const auto& [name, tensor] : a.tensors) {
    ASSERT_TRUE(resumed.count(name)) << name;
    EXPECT_TRUE(torch::equal(resumed.at(name), tensor)) << name << " differs after the resume";
    generator += name.find("generator.") != std::string::npos;
  }
  EXPECT_GT(generator, 0) << "the generator is checkpointed";
  EXPECT_EQ(read_checkpoint_header(path("split/checkpoint_last.pt")).state.step, 6);
}

// From a trained electra run: classification's init_from loads the discriminator (bert.*, equal
// to the run's), says so, and leaves head and pooler fresh; fill-mask goes through the generator,
// also from the checkpoint alone.
TEST_F(ElectraTaskTest, FineTuneLoadsTheDiscriminatorAndFillMaskUsesTheGenerator) {
  auto config = tiny_config({"--max_steps", "4", "--valid_interval", "100", "--log_interval", "100"});
  torch::manual_seed(7);
  const auto run = path("pretrained");
  {
    ElectraTask task;
    task.setup(config, {path("data"), run, {Split::kTrain, Split::kValid}});
    testing::internal::CaptureStdout();
    ASSERT_EQ(Trainer(task, config, "electra", run).train(false), 0);
    testing::internal::GetCapturedStdout();
  }
  auto loaded = load_run(run + "/checkpoint_last.pt", torch::kCPU);
  std::map<std::string, torch::Tensor> discriminator;
  for (const auto& p : loaded.task->model()->named_parameters())
    if (p.key().rfind("bert.", 0) == 0) discriminator[p.key()] = p.value().detach().clone();

  fs::create_directories(path("glue"));
  const std::string tsv = "sentence\tlabel\none two six\tnumbers\ncat dog cow\tanimals\nten nine\tnumbers\n"
                          "pig hen fox\tanimals\n";
  atomic_write_text(path("glue/train.tsv"), tsv);
  atomic_write_text(path("glue/dev.tsv"), tsv);
  auto fine = Config::resolve(task_schema("classification"), "",
                              {"--task", "classification", "--arch", "bert", "--init_from", run, "--text_column",
                               "sentence", "--label_column", "label", "--tsv_columns", "2", "--device", "cpu"});
  ClassificationTask classifier;
  testing::internal::CaptureStdout();
  classifier.setup(fine, {path("glue"), path("finetune"), {Split::kTrain, Split::kValid}});
  const std::string out = testing::internal::GetCapturedStdout();
  EXPECT_NE(out.find("init_from " + run + "/checkpoint_last.pt (electra, step 4): loaded the discriminator, "),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("bert.pooler (electra never trains it)"), std::string::npos) << out;
  EXPECT_EQ(fine.get("d_model"), "16");
  int64_t equal = 0;
  for (const auto& p : classifier.bert_classifier().named_parameters()) {
    const auto& name = p.key();
    if (name.rfind("bert.", 0) != 0 || name.rfind("bert.pooler.", 0) == 0) continue;
    ASSERT_TRUE(discriminator.count(name)) << name;
    EXPECT_TRUE(torch::equal(p.value(), discriminator.at(name))) << name;
    ++equal;
  }
  EXPECT_GT(equal, 10);

  auto* filler = loaded.task->mask_filler();
  ASSERT_NE(filler, nullptr);
  const auto filled = filler->fill_mask("the [MASK] and the", 3, torch::kCPU);
  ASSERT_EQ(filled.size(), 1u);
  ASSERT_EQ(filled[0].size(), 3u);
  auto& electra = dynamic_cast<ElectraTask&>(*loaded.task);
  auto pieces = electra.data().input_pieces("the [MASK] and the");
  pieces.insert(pieces.begin(), kClsId);
  pieces.push_back(kSepId);
  const auto tokens = ids(pieces);
  torch::NoGradGuard no_grad;
  const auto probs = torch::softmax(electra.electra()->generator->mlm_all(tokens).index({tokens == kMaskId}), -1)[0];
  const auto [top, top_ids] = probs.topk(3);
  for (int64_t j = 0; j < 3; ++j) {
    EXPECT_EQ(electra.tokenizer().id_to_piece(top_ids[j].item<int64_t>()), filled[0][j].piece);
    EXPECT_NEAR(top[j].item<double>(), filled[0][j].probability, 1e-5);
  }
}

// nlpzoo export of an electra run: the twin holds every tensor once, carries the tokenizer and
// config, and its three methods agree with the eager discriminator, its head and the generator.
TEST_F(ElectraTaskTest, ExportTwinAgreesWithTheEagerModel) {
  auto config = tiny_config();
  torch::manual_seed(11);
  ElectraTask task;
  task.setup(config, {path("data"), path("run_export"), {Split::kValid}});
  const auto file = path("electra.pt");
  EXPECT_EQ(task.export_torchscript(file, "[model]\n"), (std::vector<std::string>{"config.ini", "spm.model"}));
  torch::jit::ExtraFilesMap files{{"config.ini", ""}, {"spm.model", ""}};
  auto twin = torch::jit::load(file, torch::kCPU, files);
  EXPECT_EQ(files["config.ini"], "[model]\n");
  EXPECT_EQ(files["spm.model"], task.tokenizer().serialized());
  auto& model = *task.electra();
  EXPECT_EQ(twin_tensor_mismatch(model, twin), "");
  EXPECT_EQ(twin.attr("generator_d_model").toInt(), 4);

  model.eval();
  torch::NoGradGuard no_grad;
  const auto b = task.make_batch(Split::kValid, 0, 0);
  const auto& tokens = b.tensors.at("input");
  const auto& segments = b.tensors.at("segments");
  const auto h = model.bert(tokens, segments);  // [B, S, D]
  EXPECT_LE(test::max_diff(twin.get_method("encode")({tokens, segments}).toTensor(), h), 1e-5);
  const auto replaced = twin.get_method("replaced_logits")({tokens, segments}).toTensor();
  ASSERT_EQ(replaced.sizes(), tokens.sizes());
  EXPECT_LE(test::max_diff(replaced, model.discriminator_predictions(h)), 1e-5);
  const auto mlm = twin.get_method("mlm_logits")({tokens, segments}).toTensor();
  EXPECT_EQ(mlm.size(2), task.tokenizer().vocab_size());
  EXPECT_LE(test::max_diff(mlm, model.generator->mlm_all(tokens, segments)), 1e-5);
  fs::remove(file);
}

// Bad generator sizes name the key before any slow work.
TEST_F(ElectraTaskTest, GeneratorSizesThatDoNotDivideNameTheKey) {
  for (const auto& [divisor, words] : {std::pair<std::string, std::string>{"3", "not a multiple of 3"},
                                       {"0", "must be positive"}}) {
    auto config = tiny_config({"--generator_size_divisor", divisor});
    ElectraTask task;
    const auto e = test::user_error_of([&] { task.setup(config, {path("data"), path("run_bad"), {Split::kTrain}}); });
    EXPECT_NE(e.find("config key 'generator_size_divisor'"), std::string::npos) << e;
    EXPECT_NE(e.find(words), std::string::npos) << e;
  }
  // The generator's heads are num_heads / divisor, at least 1: d_model 48 with 4 heads gives a
  // 12-wide generator with 1 head; d_model 56 with 14 heads a 14-wide one with 3, which fails.
  auto config = tiny_config({"--num_heads", "4", "--d_model", "48", "--generator_size_divisor", "4"});
  ElectraTask task;
  EXPECT_EQ(test::user_error_of([&] { task.setup(config, {path("data"), path("run_bad"), {Split::kTrain}}); }),
            "(no UserError thrown)");
  EXPECT_EQ(task.electra()->generator->options().d_model(), 12);
  config = tiny_config({"--num_heads", "14", "--d_model", "56", "--generator_size_divisor", "4"});
  ElectraTask heads;
  const auto h = test::user_error_of([&] { heads.setup(config, {path("data"), path("run_bad2"), {Split::kTrain}}); });
  EXPECT_NE(h.find("config key 'generator_size_divisor'"), std::string::npos) << h;
  EXPECT_NE(h.find("num_heads 3"), std::string::npos) << h;
}
