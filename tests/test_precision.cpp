#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "datasets/batching.h"
#include "core/io.h"
#include "infer/translator.h"
#include "models/linear.h"
#include "models/bert/bert.h"
#include "models/transformer/transformer.h"
#include "tests/golden.h"
#include "tests/test_util.h"
#include "train/losses.h"
#include "core/precision.h"
#include "train/tasks/translation_model.h"
#include "train/trainer.h"

using namespace nlpzoo;

namespace {

// bf16 autocast needs a CPU with bf16 arithmetic; elsewhere parse_precision refuses it.
#define SKIP_WITHOUT_BF16()                                                                   \
  if (!cpu_features().bf16()) GTEST_SKIP() << "this CPU has no bf16 arithmetic (" << cpu_features().to_string() << ")"

// Copies sequences of 2-6 tokens with a one-layer Transformer, no dropout: fp32 and bf16 runs
// from the same seed see the same initial weights and batches.
class TransformerCopyTask : public Task {
 public:
  void setup(Config&, const TaskContext&) override {
    model_ = TransformerSeq2Seq(TransformerOptions().src_vocab_size(16).tgt_vocab_size(16).d_model(32).num_heads(2)
                                    .num_encoder_layers(1).num_decoder_layers(1).ffn_dim(64).dropout(0.0));
    std::mt19937 rng(7);
    for (int i = 0; i < 64; ++i) {
      std::vector<int64_t> s;
      for (int j = 0, n = 2 + rng() % 5; j < n; ++j) s.push_back(4 + rng() % 12);
      data_.push_back(s);
    }
  }
  std::shared_ptr<torch::nn::Module> model() override { return model_.ptr(); }
  int64_t num_batches(Split split, int64_t epoch) override {
    std::vector<int64_t> lengths;
    for (auto& d : data_) lengths.push_back(d.size() + 1);
    plan_ = make_token_batches(lengths, 64, 0, split == Split::kTrain, 99 + epoch);
    return plan_.size();
  }
  Batch make_batch(Split split, int64_t epoch, int64_t index) override {
    num_batches(split, epoch);
    return test::copy_task_batch(data_, plan_.at(index));
  }
  LossOutput loss(const Batch& b) override {
    auto logits = model_->forward(b.tensors.at("src"), b.tensors.at("in"));
    return {sequence_cross_entropy(logits, b.tensors.at("out"), 0, 0.1), b.num_tokens};
  }

 private:
  TransformerSeq2Seq model_{nullptr};
  std::vector<std::vector<int64_t>> data_;
  std::vector<std::vector<int64_t>> plan_;
};

struct CopyRun {
  std::vector<double> losses;  // per update
  double valid = NAN;          // after the last update
  bool float_weights = true;   // every parameter and gradient float32 at the end
};

CopyRun train_copy(const std::string& precision, int64_t steps) {
  const auto dir = test::fresh_temp_dir("precision_" + precision);
  Config config = Config::resolve(trainer_schema(), "",
                                  {"--max_steps", std::to_string(steps), "--valid_interval", std::to_string(steps),
                                   "--log_interval", "1", "--device", "cpu", "--lr", "0.003", "--precision", precision});
  torch::manual_seed(1234);
  TransformerCopyTask task;
  task.setup(config, {});
  EXPECT_EQ(Trainer(task, config, "translation", dir.string()).train(false), 0);
  CopyRun run;
  for (const auto& p : task.model()->parameters())
    run.float_weights &= p.scalar_type() == torch::kFloat && p.grad().scalar_type() == torch::kFloat;
  std::ifstream in(dir / "metrics.jsonl");
  for (std::string line; std::getline(in, line);) {
    const auto m = nlohmann::json::parse(line);
    if (m.contains("loss")) run.losses.push_back(m["loss"].get<double>());
    if (m.contains("valid_loss")) run.valid = m["valid_loss"].get<double>();
  }
  std::filesystem::remove_all(dir);
  return run;
}

}  // namespace

TEST(Precision, ParsesAndRefusesBf16WithoutHardwareSupport) {
  EXPECT_EQ(parse_precision("fp32", torch::kCPU, CpuFeatures{}), Precision::kFp32);
  const std::string err = test::user_error_of([] { parse_precision("bf16", torch::kCPU, CpuFeatures{}); });
  EXPECT_NE(err.find("precision bf16"), std::string::npos) << err;
  EXPECT_NE(err.find("AVX512_BF16"), std::string::npos) << err;
  CpuFeatures amx;
  amx.amx_bf16 = true;
  EXPECT_EQ(parse_precision("bf16", torch::kCPU, amx), Precision::kBf16);
  EXPECT_NE(test::user_error_of([] { parse_precision("fp16", torch::kCPU); }).find("expected fp32, bf16 or auto"),
            std::string::npos);
  // auto: bf16 exactly where bf16 would be accepted on a CPU, never an error; fp32 on CUDA.
  EXPECT_EQ(parse_precision("auto", torch::kCPU, CpuFeatures{}), Precision::kFp32);
  EXPECT_EQ(parse_precision("auto", torch::kCPU, amx), Precision::kBf16);
  CpuFeatures avx512_bf16;
  avx512_bf16.avx512_bf16 = true;
  EXPECT_EQ(parse_precision("auto", torch::kCPU, avx512_bf16), Precision::kBf16);
  EXPECT_EQ(parse_precision("auto", torch::Device(torch::kCUDA, 0), amx), Precision::kFp32);
  // The trainer's config knows the key, fp32 by default, and only the three values.
  EXPECT_EQ(Config::resolve(trainer_schema(), "", {}).get("precision"), "fp32");
  EXPECT_NE(test::user_error_of([] { Config::resolve(trainer_schema(), "", {"--precision", "fp8"}); }),
            "(no UserError thrown)");
}

TEST(Precision, AutocastGuardMakesBf16ProductsInsideOnly) {
  SKIP_WITHOUT_BF16();
  torch::manual_seed(0);
  auto a = torch::randn({8, 16}), b = torch::randn({16, 4});
  torch::nn::Linear linear(16, 4);
  const auto exact = torch::mm(a, b);
  EXPECT_EQ(exact.scalar_type(), torch::kFloat);
  {
    const AutocastGuard autocast(Precision::kBf16, torch::kCPU);
    const auto c = torch::mm(a, b);
    EXPECT_EQ(c.scalar_type(), torch::kBFloat16);
    EXPECT_EQ(linear(a).scalar_type(), torch::kBFloat16);
    // bf16 rounding of the inputs (8-bit mantissa), not garbage.
    EXPECT_TRUE(torch::allclose(c.to(torch::kFloat), exact, /*rtol=*/0.05, /*atol=*/0.1));
    EXPECT_FALSE(torch::equal(c.to(torch::kFloat), exact));
    {
      const AutocastGuard nested(Precision::kFp32, torch::kCPU);  // fp32 changes nothing
      EXPECT_EQ(torch::mm(a, b).scalar_type(), torch::kBFloat16);
    }
    EXPECT_EQ(torch::mm(a, b).scalar_type(), torch::kBFloat16);
    // The loss stays float32: cross-entropy is one of the ops autocast runs in float32.
    const auto loss = sequence_cross_entropy(linear(a).unsqueeze(0), torch::zeros({1, 8}, torch::kLong), -1, 0.1);
    EXPECT_EQ(loss.scalar_type(), torch::kFloat);
  }
  EXPECT_EQ(torch::mm(a, b).scalar_type(), torch::kFloat);
  EXPECT_EQ(linear(a).scalar_type(), torch::kFloat);
  {
    const AutocastGuard fp32(Precision::kFp32, torch::kCPU);
    EXPECT_EQ(torch::mm(a, b).scalar_type(), torch::kFloat);
  }
}

TEST(Precision, Bf16TrainingFollowsFp32) {
  SKIP_WITHOUT_BF16();
  torch::set_num_threads(1);
  const CopyRun fp32 = train_copy("fp32", 30), bf16 = train_copy("bf16", 30);
  ASSERT_EQ(fp32.losses.size(), 30u);
  ASSERT_EQ(bf16.losses.size(), 30u);
  EXPECT_NE(fp32.losses, bf16.losses);  // the forward pass really ran in bf16
  EXPECT_NEAR(bf16.losses.front(), fp32.losses.front(), 0.02 * fp32.losses.front());
  for (size_t i = 0; i < fp32.losses.size(); ++i)
    EXPECT_NEAR(bf16.losses[i], fp32.losses[i], 0.05 * fp32.losses[i]) << "update " << i + 1;
  EXPECT_LT(fp32.losses.back(), 0.8 * fp32.losses.front());  // it learns, so the comparison means something
  EXPECT_NEAR(bf16.valid, fp32.valid, 0.05 * fp32.valid);
  EXPECT_TRUE(bf16.float_weights);  // master weights and gradients stay float32
}

// Every BERT module (the MLM head, the pooler and the fine-tuning head) runs forward and backward
// under bf16 autocast with float32 weights, and its loss stays near fp32's. The MLM head used to
// throw "expected scalar type BFloat16 but found Float": its LayerNorm took a bf16 matmul output.
TEST(Precision, BertPreTrainingAndClassifierRunUnderBf16) {
  SKIP_WITHOUT_BF16();
  torch::manual_seed(3);
  const auto options = BertOptions().vocab_size(50).d_model(32).num_heads(2).num_layers(2).ffn_dim(64)
                           .max_positions(16).dropout(0.0).attention_dropout(0.0);
  BertForPreTraining mlm(options);
  BertForSequenceClassification classifier(options, 3);
  const auto tokens = torch::randint(5, 50, {4, 12}, torch::kLong);
  const auto segments = torch::cat({torch::zeros({4, 6}, torch::kLong), torch::ones({4, 6}, torch::kLong)}, 1);
  const auto masked = torch::rand({4, 12}) < 0.3;
  const auto labels = torch::tensor({0, 1, 2, 1}, torch::kLong);
  auto losses = [&](Precision precision) {
    const AutocastGuard guard(precision, torch::kCPU);
    const auto mlm_loss = torch::cross_entropy_loss(mlm->forward(tokens, segments, masked).mlm_logits.to(torch::kFloat),
                                                    tokens.masked_select(masked));
    const auto cls_loss = torch::cross_entropy_loss(classifier->forward(tokens, segments).to(torch::kFloat), labels);
    return std::make_pair(mlm_loss, cls_loss);
  };
  const auto [mlm32, cls32] = losses(Precision::kFp32);
  const auto [mlm16, cls16] = losses(Precision::kBf16);
  (mlm16 + cls16).backward();
  EXPECT_NEAR(mlm16.item<double>(), mlm32.item<double>(), 0.02 * mlm32.item<double>());
  EXPECT_NEAR(cls16.item<double>(), cls32.item<double>(), 0.02 * cls32.item<double>());
  for (auto* module : {static_cast<torch::nn::Module*>(mlm.get()), static_cast<torch::nn::Module*>(classifier.get())})
    for (const auto& p : module->named_parameters()) {
      if (!p.value().grad().defined()) continue;  // the pre-training model's unused pooler
      EXPECT_EQ(p.value().grad().scalar_type(), torch::kFloat) << p.key();
      EXPECT_TRUE(torch::isfinite(p.value().grad()).all().item<bool>()) << p.key();
    }
}

namespace {

// Passes every call through to `inner`, recording the intra-op thread count each step ran with.
class ThreadRecorder : public IncrementalDecoder {
 public:
  explicit ThreadRecorder(IncrementalDecoder& inner) : inner_(inner) {}
  DecoderState init(const torch::Tensor& src) override { return inner_.init(src); }
  DecoderStep step(const DecoderState& state, const torch::Tensor& prev_tokens) override {
    threads.insert(torch::get_num_threads());
    return inner_.step(state, prev_tokens);
  }
  int64_t target_vocab_size() const override { return inner_.target_vocab_size(); }
  std::set<int> threads;

 private:
  IncrementalDecoder& inner_;
};

}  // namespace

// bf16 decoding with at most 16 rows a step runs on one intra-op thread (infer/translator.cpp:
// waking the sleeping second thread for each small operator cost more than it gained) and
// gives the count back afterwards; more rows, and float32 at any size, keep every thread.
TEST(Precision, Bf16DecodingOfAFewRowsRunsOnOneThread) {
  SKIP_WITHOUT_BF16();
  const int threads_before = torch::get_num_threads();
  torch::set_num_threads(2);
  auto run = load_run((test::golden_dir() / "seq2seq-gru-additive" / "checkpoint_v2.pt").string(), torch::kCPU);
  auto& tm = *run.task->translation_model();
  ThreadRecorder recorder(tm.decoder());
  const Translator translator(recorder, tm.source_tokenizer(), tm.target_tokenizer(), tm.max_positions(), torch::kCPU);
  const std::vector<std::string> lines = {"en el principio", "y dijo dios"};
  SearchOptions beam5;
  beam5.beam_size = 5;
  auto threads_with = [&](int64_t batch_size) {
    recorder.threads.clear();
    translator.translate(lines, beam5, batch_size);
    return recorder.threads;
  };
  EXPECT_EQ(threads_with(1), std::set<int>{2});  // float32: OpenBLAS's threads pay at every size
  cast_for_inference(*run.task->model(), Precision::kBf16);
  {
    const AutocastGuard bf16(Precision::kBf16, torch::kCPU);
    EXPECT_EQ(threads_with(1), std::set<int>{1});  // 5 rows
    EXPECT_EQ(torch::get_num_threads(), 2);        // given back
    EXPECT_EQ(threads_with(3), std::set<int>{1});  // 15 rows
    EXPECT_EQ(threads_with(4), std::set<int>{2});  // 20 rows
  }
  torch::set_num_threads(threads_before);
}

// int8 linear layers on the golden translation models: the greedy output of each sentence is
// float32's, and its summed log-probability (over 30-64 steps of an untrained model, -100 to
// -170) moves by less than 0.5% (0.07-0.27 here).
TEST(Int8Inference, GoldenTranslationsKeepTheirGreedyOutput) {
  if (!int8_supported()) GTEST_SKIP() << "no int8 engine in this LibTorch";
  const std::vector<std::string> lines = {"En el principio crió Dios los cielos y la tierra.",
                                          "Y dijo Dios: Sea la luz: y fué la luz.", "Y lloró Jesús."};
  for (const char* family : {"seq2seq-gru-additive", "seq2seq-lstm-general", "transformer"}) {
    SCOPED_TRACE(family);
    auto run = load_run((test::golden_dir() / family / "checkpoint_v2.pt").string(), torch::kCPU);
    auto& tm = *run.task->translation_model();
    const Translator translator(tm.decoder(), tm.source_tokenizer(), tm.target_tokenizer(), tm.max_positions(),
                                torch::kCPU);
    SearchOptions greedy;
    greedy.beam_size = 1;
    const auto fp32 = translator.translate(lines, greedy);
    use_int8_weights(*run.task->model());
    const auto int8 = translator.translate(lines, greedy);
    for (size_t i = 0; i < lines.size(); ++i) {
      EXPECT_EQ(int8[i].hypotheses[0].tokens, fp32[i].hypotheses[0].tokens) << lines[i];
      EXPECT_NEAR(int8[i].hypotheses[0].log_prob, fp32[i].hypotheses[0].log_prob,
                  0.005 * std::abs(fp32[i].hypotheses[0].log_prob))
          << lines[i];
      EXPECT_NE(int8[i].hypotheses[0].log_prob, fp32[i].hypotheses[0].log_prob) << "the int8 path ran";
    }
  }
}
