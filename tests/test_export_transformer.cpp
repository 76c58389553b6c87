// The scripted twin of the Transformer agrees with the eager model (in memory, after a
// save/load round trip, and in Debian's python3-torch).
#include <gtest/gtest.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "core/io.h"
#include "datasets/special_ids.h"
#include "tests/test_util.h"
#include "tests/twin_util.h"
#include "infer/export_seq2seq.h"
#include "infer/export_transformer.h"
#include "models/seq2seq/seq2seq.h"
#include "models/transformer/transformer.h"

using namespace nlpzoo;
namespace fs = std::filesystem;

namespace {

struct Variant {
  PositionType positions;
  bool pre_norm;
  Activation activation;
  int64_t encoder_layers, decoder_layers;
  bool share_embeddings;
  int64_t attention_head;
};

std::string variant_name(const Variant& v) {
  return to_string(v.positions) + (v.pre_norm ? "_pre_" : "_post_") + to_string(v.activation) + "_E" +
         std::to_string(v.encoder_layers) + "D" + std::to_string(v.decoder_layers) +
         (v.share_embeddings ? "_shared" : "") + (v.attention_head < 0 ? "_mean" : "_head" + std::to_string(v.attention_head));
}

std::ostream& operator<<(std::ostream& os, const Variant& v) { return os << variant_name(v); }

// Every position type with pre- and post-LN, each activation twice; layer counts, shared
// embeddings and the reported head vary along the way.
std::vector<Variant> variants() {
  return {{PositionType::kSinusoidal, false, Activation::kRelu, 2, 2, false, -1},
          {PositionType::kSinusoidal, true, Activation::kGelu, 1, 2, true, 1},
          {PositionType::kLearned, false, Activation::kGelu, 2, 1, false, 0},
          {PositionType::kLearned, true, Activation::kRelu, 1, 1, true, -1},
          {PositionType::kRelative, false, Activation::kRelu, 2, 2, false, 1},
          {PositionType::kRelative, true, Activation::kGelu, 1, 2, false, -1}};
}

constexpr int64_t kSrcVocab = 17, kTgtVocab = 13;

// Small sizes. Sinusoidal positions keep only 5 rows in their buffer, so that 7-token sources
// and later decoder steps take the on-the-fly path; relative positions clip at distance 2,
// so that clipping happens within a few steps. Dropout is set (and ignored in eval mode) so
// that a twin which applied it would fail.
TransformerOptions small(const Variant& v) {
  const int64_t tgt_vocab = v.share_embeddings ? kSrcVocab : kTgtVocab;
  return TransformerOptions().src_vocab_size(kSrcVocab).tgt_vocab_size(tgt_vocab).d_model(8).num_heads(2)
      .num_encoder_layers(v.encoder_layers).num_decoder_layers(v.decoder_layers).ffn_dim(12).dropout(0.1)
      .attention_dropout(0.1).activation(v.activation).pre_norm(v.pre_norm).positions(v.positions)
      .max_positions(v.positions == PositionType::kSinusoidal ? 5 : 16).relative_k(2)
      .share_embeddings(v.share_embeddings).attention_head(v.attention_head);
}

TransformerSeq2Seq eval_model(const Variant& v) {
  TransformerSeq2Seq model(small(v));
  model->eval();
  return model;
}

torch::Tensor random_src(int64_t B, int64_t S) { return test::random_source_batch(B, S, kSrcVocab); }
using test::max_diff;

// Encodes with both models (the twin's encode against the eager encode), then runs both
// through init and `steps` decoder steps (test::expect_decoders_agree).
void expect_twin_matches(TransformerSeq2SeqImpl& eager, ScriptedTransformer& twin, const torch::Tensor& src,
                         int steps = 7) {
  auto enc = eager.encode(src);
  const auto out = twin.module().get_method("encode")({src}).toTuple()->elements();
  EXPECT_LE(max_diff(enc.memory, out[0].toTensor()), 1e-5) << "encode: memory";
  EXPECT_TRUE(enc.mask.equal(out[1].toTensor())) << "encode: src_mask";

  test::expect_decoders_agree(eager, twin, src, steps);
}

using test::eager_greedy;

torch::Tensor twin_greedy(torch::jit::Module& twin, const torch::Tensor& src, int64_t max_len) {
  return twin.get_method("translate_greedy")({src, max_len}).toTensor();
}

// The LayerNorm whose output the tied projection scores: the decoder's final norm (pre-LN)
// or the last layer's norm after its FFN (post-LN).
torch::nn::LayerNorm& output_norm(TransformerSeq2SeqImpl& model) {
  return model.options().pre_norm() ? model.decoder->final_norm : model.decoder->typed_layers.back()->norm3;
}

// Points the decoder output towards EOS: the output norm's bias becomes u and EOS's row of the
// tied embedding s·u, so EOS's logit grows with s (by s·|u|² when the norm's gain is zero).
void bias_towards_eos(TransformerSeq2SeqImpl& model, const torch::Tensor& u, double s) {
  output_norm(model)->bias.copy_(u);
  model.tgt_embed->weight[kEosId].copy_(u * s);
}

std::string temp_path(const std::string& name) {
  return (fs::temp_directory_path() / ("nlpzoo_tfexport_" + std::to_string(::getpid()) + "_" + name)).string();
}

std::map<std::string, std::string> extras() {
  return {{"config.ini", "[model]\narch = transformer\n"}, {"spm.src.model", std::string("\0\x01" "binary", 8)}};
}

}  // namespace

class ExportTransformer : public ::testing::TestWithParam<Variant> {};

TEST_P(ExportTransformer, TwinMatchesEagerOnPaddedBatches) {
  torch::manual_seed(31);
  auto model = eval_model(GetParam());
  torch::NoGradGuard ng;
  ScriptedTransformer twin(script_transformer(*model));
  EXPECT_EQ(twin.target_vocab_size(), model->options().tgt_vocab_size());
  for (int trial = 0; trial < 2; ++trial) expect_twin_matches(*model, twin, random_src(5, 7));
  // One sentence alone, no padding at all.
  expect_twin_matches(*model, twin, random_src(1, 4), 3);
}

TEST_P(ExportTransformer, TwinHoldsEveryParameterAndBufferUnderItsMappedName) {
  const Variant v = GetParam();
  auto model = eval_model(v);
  auto twin = script_transformer(*model);
  test::expect_twin_holds_parameters(*model, twin);
  size_t buffers = 0;
  for (const auto& b : twin.named_buffers(/*recurse=*/false)) {
    (void)b;
    ++buffers;
  }
  EXPECT_EQ(buffers, model->named_buffers().size());
  EXPECT_EQ(buffers, v.positions == PositionType::kSinusoidal ? 1u : 0u);
  for (const auto& b : model->named_buffers())
    EXPECT_TRUE(twin.attr(scripted_name(b.key())).toTensor().equal(b.value())) << b.key();
  EXPECT_EQ(twin.hasattr("src_embed__weight"), !v.share_embeddings);
  EXPECT_EQ(twin.attr("positions").toStringRef(), to_string(v.positions));
  EXPECT_EQ(twin.attr("activation").toStringRef(), to_string(v.activation));
  EXPECT_EQ(twin.attr("pre_norm").toBool(), v.pre_norm);
  EXPECT_EQ(twin.attr("share_embeddings").toBool(), v.share_embeddings);
  EXPECT_EQ(twin.attr("num_encoder_layers").toInt(), v.encoder_layers);
  EXPECT_EQ(twin.attr("num_decoder_layers").toInt(), v.decoder_layers);
  EXPECT_EQ(twin.attr("attention_head").toInt(), v.attention_head);
  EXPECT_EQ(twin.attr("d_model").toInt(), 8);
  EXPECT_EQ(twin.attr("num_heads").toInt(), 2);
  EXPECT_EQ(twin.attr("ffn_dim").toInt(), 12);
  EXPECT_EQ(twin.attr("relative_k").toInt(), 2);
  EXPECT_EQ(twin.attr("max_positions").toInt(), model->options().max_positions());
  EXPECT_EQ(twin.attr("src_vocab_size").toInt(), kSrcVocab);
  EXPECT_EQ(twin.attr("tgt_vocab_size").toInt(), model->options().tgt_vocab_size());
  EXPECT_EQ(twin.attr("pad_id").toInt(), kPadId);
  EXPECT_EQ(twin.attr("bos_id").toInt(), kBosId);
  EXPECT_EQ(twin.attr("eos_id").toInt(), kEosId);
}

TEST_P(ExportTransformer, SavedFileLoadsAndMatches) {
  torch::manual_seed(32);
  auto model = eval_model(GetParam());
  torch::NoGradGuard ng;
  const auto path = temp_path("roundtrip.pt");
  export_transformer(path, *model, extras());
  auto loaded = test::load_export_checking_extras(path, extras(), transformer_export_readme(model->options()));
  ScriptedTransformer twin(loaded);
  expect_twin_matches(*model, twin, random_src(4, 6), 4);
  auto src = random_src(3, 5);
  EXPECT_TRUE(twin_greedy(loaded, src, 6).equal(eager_greedy(*model, src, 6)));
}

TEST_P(ExportTransformer, TranslateGreedyMatchesEagerGreedy) {
  torch::manual_seed(33);
  auto model = eval_model(GetParam());
  torch::NoGradGuard ng;
  auto u = torch::randn({8});
  // Towards EOS by more and more, so that rows also end early and the PAD-after-EOS path runs.
  for (double s : {0.0, 0.6}) {
    bias_towards_eos(*model, u, s);
    auto twin = script_transformer(*model);
    auto src = random_src(6, 5);
    for (int64_t max_len : {0, 1, 9}) {
      auto expected = eager_greedy(*model, src, max_len);
      auto got = twin_greedy(twin, src, max_len);
      EXPECT_TRUE(got.equal(expected)) << "s " << s << " max_len " << max_len << "\n" << got << "\nvs\n" << expected;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Variants, ExportTransformer, ::testing::ValuesIn(variants()),
                         [](const ::testing::TestParamInfo<Variant>& info) { return variant_name(info.param); });

// Parameters are copied, not shared: training the eager model later leaves the twin alone.
TEST(ExportTransformerTwin, IsASnapshot) {
  auto model = eval_model(variants()[0]);
  auto twin = script_transformer(*model);
  auto before = twin.attr("tgt_embed__weight").toTensor().clone();
  {
    torch::NoGradGuard ng;
    model->tgt_embed->weight.fill_(7.0);
  }
  EXPECT_TRUE(twin.attr("tgt_embed__weight").toTensor().equal(before));
}

TEST(ExportTransformerGreedy, StopsWhenEveryRowHasEndedAndPadsAfterEos) {
  torch::manual_seed(34);
  auto model = eval_model(variants()[4]);
  torch::NoGradGuard ng;
  auto src = random_src(4, 5);
  auto u = torch::randn({8});
  // A zero gain makes every decoder output exactly u, so EOS's logit is s·|u|².
  output_norm(*model)->weight.zero_();
  // EOS always wins: one step, then every row has ended.
  bias_towards_eos(*model, u, 1e3);
  auto twin = script_transformer(*model);
  auto got = twin_greedy(twin, src, 10);
  EXPECT_TRUE(got.equal(torch::full({4, 1}, kEosId, torch::kLong))) << got;
  // EOS (and PAD) never win: runs to max_len without a single EOS or PAD.
  bias_towards_eos(*model, u, -1e3);
  model->tgt_embed->weight[kPadId].copy_(u * -1e3);
  twin = script_transformer(*model);
  got = twin_greedy(twin, src, 7);
  EXPECT_EQ(got.sizes(), (std::vector<int64_t>{4, 7}));
  EXPECT_EQ(got.eq(kEosId).sum().item<int64_t>(), 0);
  EXPECT_EQ(got.eq(kPadId).sum().item<int64_t>(), 0);
}

// Rows that end at different steps: the twin pads each row after its own EOS and goes on
// with the others, exactly as the eager loop. The push towards EOS grows until such a batch
// turns up.
TEST(ExportTransformerGreedy, RowsEndingAtDifferentStepsMatchEager) {
  torch::manual_seed(35);
  auto model = eval_model(variants()[1]);
  torch::NoGradGuard ng;
  auto src = random_src(6, 5);
  auto u = torch::randn({8});
  bool mixed = false;
  for (int i = 1; i <= 40 && !mixed; ++i) {
    bias_towards_eos(*model, u, 0.1 * i);
    auto expected = eager_greedy(*model, src, 12);
    auto twin = script_transformer(*model);
    auto got = twin_greedy(twin, src, 12);
    ASSERT_TRUE(got.equal(expected)) << got << "\nvs\n" << expected;
    const auto padded_rows = got.eq(kPadId).any(1).sum().item<int64_t>();
    mixed = padded_rows > 0 && padded_rows < got.size(0);
  }
  EXPECT_TRUE(mixed) << "no push towards EOS gave rows of different lengths";
}

TEST(ExportTransformerErrors, RejectsAReservedExtraFileName) {
  auto model = eval_model(variants()[0]);
  const auto path = temp_path("x.pt");
  EXPECT_THROW(export_transformer(path, *model, {{"README.txt", "mine"}}), std::invalid_argument);
  EXPECT_FALSE(fs::exists(path));
}

TEST(ExportTransformerErrors, UnwritablePathIsAUserErrorNamingIt) {
  auto model = eval_model(variants()[0]);
  try {
    export_transformer("/nonexistent_dir_nlpzoo/x.pt", *model, {});
    FAIL() << "no exception";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent_dir_nlpzoo/x.pt"), std::string::npos) << e.what();
  }
}

TEST(ExportTransformerErrors, WrongSourceRankThrowsAsTheEagerModel) {
  auto model = eval_model(variants()[0]);
  ScriptedTransformer twin(script_transformer(*model));
  auto flat = torch::tensor({4, 5, 3}, torch::kLong);
  EXPECT_THROW(model->init(flat), c10::Error);
  EXPECT_THROW(twin.init(flat), c10::Error);
  // The bare method fails inside the interpreter.
  EXPECT_THROW(twin.module().get_method("encode")({flat}), std::runtime_error);
}

// step_index places the new token (absolute and relative positions); one that disagrees
// with the cache would silently decode at the wrong position, so the twin refuses it.
TEST(ExportTransformerErrors, StepIndexMustEqualTheCachedLength) {
  auto model = eval_model(variants()[4]);
  torch::NoGradGuard ng;
  auto twin = script_transformer(*model);
  auto src = random_src(2, 4);
  auto enc = twin.get_method("encode")({src}).toTuple()->elements();
  auto caches = twin.get_method("init_cache")({enc[0], enc[1]}).toTuple()->elements();
  auto bos = torch::full({2}, kBosId, torch::kLong);
  EXPECT_NO_THROW(twin.get_method("step")({bos, int64_t{0}, enc[1], caches[0], caches[1]}));
  try {
    twin.get_method("step")({bos, int64_t{1}, enc[1], caches[0], caches[1]});
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("step_index"), std::string::npos) << e.what();
  }
}

TEST(ExportTransformerErrors, LearnedPositionsPastTheTableThrowAsTheEagerModel) {
  auto model = eval_model(variants()[2]);  // learned, max_positions 16
  torch::NoGradGuard ng;
  auto twin = script_transformer(*model);
  auto src = random_src(2, 17);
  EXPECT_THROW(model->encode(src), c10::Error);
  try {
    twin.get_method("encode")({src});
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("max_positions 16"), std::string::npos) << e.what();
  }
}

TEST(ExportTransformerErrors, ForeignModuleIsAUserError) {
  torch::jit::Module m("other");
  EXPECT_THROW(ScriptedTransformer{m}, UserError);
  // An RNN seq2seq twin is not a Transformer twin either.
  Seq2Seq rnn(Seq2SeqOptions().src_vocab_size(7).tgt_vocab_size(7).embed_dim(4).hidden_size(4).attention_dim(4));
  EXPECT_THROW(ScriptedTransformer{script_seq2seq(*rnn)}, UserError);
}

// Debian's python3-torch loads exported files of several configurations, reads their extra
// files, attributes and parameter names, and computes the same memory, log-probs, attention
// and greedy tokens as the eager C++ models. One python process checks every file (importing
// torch is slow).
TEST(RegressionExportTransformerPython, PythonTorchRunsTheExportedFiles) {
  NLPZOO_REQUIRE_PYTHON_MODULE("torch", "python3-torch");
  // Between them: every position type, pre/post-LN, relu/gelu, shared embeddings, one head.
  const std::vector<Variant> chosen = {variants()[0], variants()[3], variants()[4], variants()[5]};
  torch::manual_seed(41);
  std::vector<TransformerSeq2Seq> models;
  std::vector<std::string> paths;
  for (size_t i = 0; i < chosen.size(); ++i) {
    models.push_back(eval_model(chosen[i]));
    paths.push_back(temp_path("py" + std::to_string(i) + ".pt"));
    export_transformer(paths.back(), *models.back(), extras());
  }
  const auto py = test::run_python(R"PY(
import sys, torch
torch.set_num_threads(1)
src = torch.tensor([[5, 6, 7, 8, 3], [9, 4, 3, 0, 0], [3, 0, 0, 0, 0]])
def show(*fields):
    print(' '.join(str(f) for f in fields))
def values(t):
    return ' '.join('%.9g' % v for v in t.flatten().tolist())
for i, path in enumerate(sys.argv[1:]):
    files = {'config.ini': '', 'spm.src.model': '', 'README.txt': ''}
    m = torch.jit.load(path, _extra_files=files)
    assert files['config.ini'] == b'[model]\narch = transformer\n', files['config.ini']
    assert files['spm.src.model'] == b'\x00\x01binary', files['spm.src.model']
    assert b'translate_greedy' in files['README.txt'], files['README.txt']
    show('params', i, ' '.join(sorted(n for n, _ in m.named_parameters())))
    show('attrs', i, m.positions, m.pre_norm, m.activation, m.num_decoder_layers, m.share_embeddings)
    with torch.no_grad():
        memory, src_mask = m.encode(src)
        show('memory', i, 0, values(memory))
        cross, cache = m.init_cache(memory, src_mask)
        prev = torch.tensor([2, 2, 2])
        for t, nxt in enumerate([[4, 7, 5], [5, 8, 6], [6, 9, 7], [7, 10, 8]]):
            log_probs, attn, cache = m.step(prev, t, src_mask, cross, cache)
            show('logp', i, t, values(log_probs))
            show('attn', i, t, values(attn))
            prev = torch.tensor(nxt)
        g = m.translate_greedy(src, 8)
        show('greedy', i, g.size(0), g.size(1), ' '.join(str(v) for v in g.flatten().tolist()))
print('done')
)PY", paths);
  for (const auto& path : paths) fs::remove(path);
  ASSERT_EQ(py.status, 0) << py.out << py.err;

  // The same computations in eager C++, keyed like python's lines.
  torch::NoGradGuard ng;
  auto src = torch::tensor({5, 6, 7, 8, 3, 9, 4, 3, 0, 0, 3, 0, 0, 0, 0}, torch::kLong).view({3, 5});
  const std::vector<std::vector<int64_t>> next = {{4, 7, 5}, {5, 8, 6}, {6, 9, 7}, {7, 10, 8}};
  std::map<std::string, torch::Tensor> expected_values;
  std::map<std::string, std::string> expected_text;
  for (size_t i = 0; i < chosen.size(); ++i) {
    auto& model = *models[i];
    const std::string id = std::to_string(i);
    expected_text["params " + id] = test::sorted_scripted_names(model);
    const Variant& v = chosen[i];
    expected_text["attrs " + id] = to_string(v.positions) + (v.pre_norm ? " True " : " False ") +
                                   to_string(v.activation) + " " + std::to_string(v.decoder_layers) +
                                   (v.share_embeddings ? " True" : " False");
    expected_values["memory " + id + " 0"] = model.encode(src).memory.flatten();
    auto state = model.init(src);
    auto prev = torch::full({3}, kBosId, torch::kLong);
    for (size_t t = 0; t < next.size(); ++t) {
      auto step = model.step(state, prev);
      const std::string key = id + " " + std::to_string(t);
      expected_values["logp " + key] = step.log_probs.flatten();
      expected_values["attn " + key] = step.attention.flatten();
      state = step.state;
      prev = torch::tensor(next[t], torch::kLong);
    }
    expected_text["greedy " + id] = test::tokens_text(eager_greedy(model, src, 8));
  }

  test::expect_python_report(py.out, expected_values, expected_text);
}
