// The scripted twin of the seq2seq model agrees with the eager model (in memory, after a
// save/load round trip, and in Debian's python3-torch).
#include <gtest/gtest.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "core/io.h"
#include "datasets/special_ids.h"
#include "tests/test_util.h"
#include "tests/twin_util.h"
#include "infer/export_seq2seq.h"
#include "models/seq2seq/seq2seq.h"

using namespace nlpzoo;
namespace fs = std::filesystem;

namespace {

struct Variant {
  CellType cell;
  AttentionType attention;
  int64_t layers;
  bool input_feeding;
  bool bidirectional;
};

std::string variant_name(const Variant& v) {
  return to_string(v.cell) + "_" + to_string(v.attention) + "_L" + std::to_string(v.layers) +
         (v.input_feeding ? "_feed" : "") + (v.bidirectional ? "_bi" : "_uni");
}

std::ostream& operator<<(std::ostream& os, const Variant& v) { return os << variant_name(v); }

// Every RNN seq2seq configuration: gru/lstm x 1-2 layers x uni/bi x four attentions x
// input feeding off/on (64), plus the tanh RNN cell in a few shapes.
std::vector<Variant> all_variants() {
  std::vector<Variant> out;
  for (auto cell : {CellType::kGru, CellType::kLstm})
    for (int64_t layers : {1, 2})
      for (bool bi : {false, true})
        for (auto att : {AttentionType::kNone, AttentionType::kAdditive, AttentionType::kDot, AttentionType::kGeneral})
          for (bool feed : {false, true}) out.push_back({cell, att, layers, feed, bi});
  out.push_back({CellType::kRnn, AttentionType::kGeneral, 2, false, false});
  out.push_back({CellType::kRnn, AttentionType::kAdditive, 1, true, true});
  out.push_back({CellType::kRnn, AttentionType::kNone, 2, true, true});
  return out;
}

constexpr int64_t kSrcVocab = 17, kTgtVocab = 13;

// Dropout is set (and ignored in eval mode) so that a twin which applied it would fail.
Seq2SeqOptions small(const Variant& v) {
  return Seq2SeqOptions().src_vocab_size(kSrcVocab).tgt_vocab_size(kTgtVocab).embed_dim(8).hidden_size(12)
      .num_layers(v.layers).cell(v.cell).attention(v.attention).attention_dim(7)
      .input_feeding(v.input_feeding).bidirectional(v.bidirectional).dropout(0.1);
}

torch::Tensor random_src(int64_t B, int64_t S) { return test::random_source_batch(B, S, kSrcVocab); }
using test::max_diff;

using test::eager_greedy;

std::string temp_path(const std::string& name) {
  return (fs::temp_directory_path() / ("nlpzoo_export_" + std::to_string(::getpid()) + "_" + name)).string();
}

std::map<std::string, std::string> extras() {
  return {{"config.ini", "[model]\ncell = gru\n"}, {"spm.src.model", std::string("\0\x01" "binary", 8)}};
}

}  // namespace

class ExportSeq2Seq : public ::testing::TestWithParam<Variant> {};

TEST_P(ExportSeq2Seq, TwinMatchesEagerOnPaddedBatches) {
  torch::manual_seed(11);
  Seq2Seq model(small(GetParam()));
  model->eval();
  torch::NoGradGuard ng;
  ScriptedSeq2Seq twin(script_seq2seq(*model));
  EXPECT_EQ(twin.target_vocab_size(), kTgtVocab);
  for (int trial = 0; trial < 3; ++trial) test::expect_decoders_agree(*model, twin, random_src(5, 7), 4);
  // One sentence alone, no padding at all.
  test::expect_decoders_agree(*model, twin, random_src(1, 4), 4);
}

TEST_P(ExportSeq2Seq, TwinHoldsEveryParameterUnderItsMappedName) {
  const Variant v = GetParam();
  Seq2Seq model(small(v));
  auto twin = script_seq2seq(*model);
  test::expect_twin_holds_parameters(*model, twin);
  EXPECT_EQ(twin.attr("cell").toStringRef(), to_string(v.cell));
  EXPECT_EQ(twin.attr("attention").toStringRef(), to_string(v.attention));
  EXPECT_EQ(twin.attr("num_layers").toInt(), v.layers);
  EXPECT_EQ(twin.attr("bidirectional").toBool(), v.bidirectional);
  EXPECT_EQ(twin.attr("input_feeding").toBool(), v.input_feeding);
  EXPECT_EQ(twin.attr("hidden_size").toInt(), 12);
  EXPECT_EQ(twin.attr("src_vocab_size").toInt(), kSrcVocab);
  EXPECT_EQ(twin.attr("tgt_vocab_size").toInt(), kTgtVocab);
  EXPECT_EQ(twin.attr("pad_id").toInt(), kPadId);
  EXPECT_EQ(twin.attr("bos_id").toInt(), kBosId);
  EXPECT_EQ(twin.attr("eos_id").toInt(), kEosId);
}

TEST_P(ExportSeq2Seq, SavedFileLoadsAndMatches) {
  torch::manual_seed(12);
  Seq2Seq model(small(GetParam()));
  model->eval();
  torch::NoGradGuard ng;
  const auto path = temp_path("roundtrip.pt");
  export_seq2seq(path, *model, extras());
  auto loaded = test::load_export_checking_extras(path, extras(), seq2seq_export_readme(model->options()));
  ScriptedSeq2Seq twin(loaded);
  test::expect_decoders_agree(*model, twin, random_src(4, 6), 4);
  auto src = random_src(3, 5);
  EXPECT_TRUE(loaded.get_method("translate_greedy")({src, int64_t{6}}).toTensor().equal(eager_greedy(*model, src, 6)));
}

TEST_P(ExportSeq2Seq, TranslateGreedyMatchesEagerGreedy) {
  torch::manual_seed(13);
  Seq2Seq model(small(GetParam()));
  model->eval();
  torch::NoGradGuard ng;
  // A larger EOS bias makes some rows end early, so the PAD-after-EOS path runs as well.
  for (double eos_bias : {0.0, 1.5}) {
    model->output->bias[kEosId].add_(eos_bias);
    auto twin = script_seq2seq(*model);
    auto src = random_src(6, 5);
    for (int64_t max_len : {0, 1, 9}) {
      auto expected = eager_greedy(*model, src, max_len);
      auto got = twin.get_method("translate_greedy")({src, max_len}).toTensor();
      EXPECT_TRUE(got.equal(expected)) << "eos_bias " << eos_bias << " max_len " << max_len << "\n"
                                       << got << "\nvs\n" << expected;
    }
  }
}

// Parameters are copied, not shared: training the eager model later leaves the twin alone.
TEST_P(ExportSeq2Seq, TwinIsASnapshot) {
  Seq2Seq model(small(GetParam()));
  auto twin = script_seq2seq(*model);
  auto before = twin.attr("output__weight").toTensor().clone();
  {
    torch::NoGradGuard ng;
    model->output->weight.fill_(7.0);
  }
  EXPECT_TRUE(twin.attr("output__weight").toTensor().equal(before));
}

INSTANTIATE_TEST_SUITE_P(Variants, ExportSeq2Seq, ::testing::ValuesIn(all_variants()),
                         [](const ::testing::TestParamInfo<Variant>& info) { return variant_name(info.param); });

TEST(ExportSeq2SeqGreedy, StopsWhenEveryRowHasEndedAndPadsAfterEos) {
  torch::manual_seed(14);
  Seq2Seq model(small({CellType::kGru, AttentionType::kAdditive, 1, false, true}));
  model->eval();
  torch::NoGradGuard ng;
  auto src = random_src(4, 5);
  // EOS always wins: one step, then every row has ended.
  model->output->bias.fill_(0.0);
  model->output->bias[kEosId] = 1e4;
  auto got = script_seq2seq(*model).get_method("translate_greedy")({src, int64_t{10}}).toTensor();
  EXPECT_TRUE(got.equal(torch::full({4, 1}, kEosId, torch::kLong))) << got;
  // EOS never wins: runs to max_len without a single EOS or PAD.
  model->output->bias[kEosId] = -1e4;
  model->output->bias[kPadId] = -1e4;
  got = script_seq2seq(*model).get_method("translate_greedy")({src, int64_t{7}}).toTensor();
  EXPECT_EQ(got.sizes(), (std::vector<int64_t>{4, 7}));
  EXPECT_EQ(got.eq(kEosId).sum().item<int64_t>(), 0);
  EXPECT_EQ(got.eq(kPadId).sum().item<int64_t>(), 0);
}

// Rows that end at different steps: the twin pads each row after its own EOS and goes on
// with the others, exactly as the eager loop. The EOS bias is raised until such a batch turns up.
TEST(ExportSeq2SeqGreedy, RowsEndingAtDifferentStepsMatchEager) {
  torch::manual_seed(15);
  Seq2Seq model(small({CellType::kLstm, AttentionType::kGeneral, 1, true, true}));
  model->eval();
  torch::NoGradGuard ng;
  // Sharper logits, so that rows (and steps) disagree about EOS.
  model->output->weight.mul_(8.0);
  auto src = random_src(6, 5);
  bool mixed = false;
  for (int i = 0; i < 40 && !mixed; ++i) {
    model->output->bias[kEosId].add_(0.25);
    auto expected = eager_greedy(*model, src, 12);
    auto got = script_seq2seq(*model).get_method("translate_greedy")({src, int64_t{12}}).toTensor();
    ASSERT_TRUE(got.equal(expected)) << got << "\nvs\n" << expected;
    const auto padded_rows = got.eq(kPadId).any(1).sum().item<int64_t>();
    mixed = padded_rows > 0 && padded_rows < got.size(0);
  }
  EXPECT_TRUE(mixed) << "no EOS bias gave rows of different lengths";
}

TEST(ExportSeq2SeqErrors, RejectsAReservedExtraFileName) {
  Seq2Seq model(small({CellType::kGru, AttentionType::kDot, 1, false, true}));
  const auto path = temp_path("x.pt");
  EXPECT_THROW(export_seq2seq(path, *model, {{"README.txt", "mine"}}), std::invalid_argument);
  EXPECT_FALSE(fs::exists(path));
}

TEST(ExportSeq2SeqErrors, UnwritablePathIsAUserErrorNamingIt) {
  Seq2Seq model(small({CellType::kGru, AttentionType::kDot, 1, false, true}));
  try {
    export_seq2seq("/nonexistent_dir_nlpzoo/x.pt", *model, {});
    FAIL() << "no exception";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent_dir_nlpzoo/x.pt"), std::string::npos) << e.what();
  }
}

TEST(ExportSeq2SeqErrors, WrongSourceRankThrowsAsTheEagerModel) {
  Seq2Seq model(small({CellType::kGru, AttentionType::kAdditive, 1, false, true}));
  ScriptedSeq2Seq twin(script_seq2seq(*model));
  auto flat = torch::tensor({4, 5, 3}, torch::kLong);
  EXPECT_THROW(model->init(flat), c10::Error);
  EXPECT_THROW(twin.init(flat), c10::Error);
  // The bare method fails inside the interpreter.
  EXPECT_THROW(twin.module().get_method("encode")({flat}), std::runtime_error);
}

TEST(ExportSeq2SeqErrors, ForeignModuleIsAUserError) {
  torch::jit::Module m("other");
  EXPECT_THROW(ScriptedSeq2Seq{m}, UserError);
}

// Debian's python3-torch loads exported files of several configurations, reads their extra
// files and parameter names, and computes the same log-probs, attention and greedy tokens as
// the eager C++ models. One python process checks every file (importing torch is slow).
TEST(RegressionExportPython, PythonTorchRunsTheExportedFiles) {
  NLPZOO_REQUIRE_PYTHON_MODULE("torch", "python3-torch");
  // Between them: every cell, every attention, uni/bi, 1/2 layers, input feeding on/off.
  const std::vector<Variant> variants = {{CellType::kLstm, AttentionType::kAdditive, 2, true, true},
                                         {CellType::kGru, AttentionType::kNone, 1, false, false},
                                         {CellType::kGru, AttentionType::kDot, 2, false, true},
                                         {CellType::kRnn, AttentionType::kGeneral, 1, true, false}};
  torch::manual_seed(21);
  std::vector<Seq2Seq> models;
  std::vector<std::string> paths;
  for (size_t i = 0; i < variants.size(); ++i) {
    models.emplace_back(small(variants[i]));
    models.back()->eval();
    paths.push_back(temp_path("py" + std::to_string(i) + ".pt"));
    export_seq2seq(paths.back(), *models.back(), extras());
  }
  const auto py = test::run_python(R"PY(
import sys, torch
torch.set_num_threads(1)
src = torch.tensor([[5, 6, 7, 8, 3], [9, 4, 3, 0, 0], [3, 0, 0, 0, 0]])
for i, path in enumerate(sys.argv[1:]):
    files = {'config.ini': '', 'spm.src.model': '', 'README.txt': ''}
    m = torch.jit.load(path, _extra_files=files)
    assert files['config.ini'] == b'[model]\ncell = gru\n', files['config.ini']
    assert files['spm.src.model'] == b'\x00\x01binary', files['spm.src.model']
    assert b'translate_greedy' in files['README.txt'], files['README.txt']
    print('params', i, ' '.join(sorted(n for n, _ in m.named_parameters())))
    print('attrs', i, m.cell, m.attention, m.num_layers, m.bidirectional, m.input_feeding)
    with torch.no_grad():
        states, mask, keys, summary, h, c, feed = m.encode(src)
        prev = torch.tensor([2, 2, 2])
        for t, nxt in enumerate([[4, 7, 5], [5, 8, 6], [6, 9, 7]]):
            log_probs, attn, h, c, feed = m.step(prev, states, mask, keys, summary, h, c, feed)
            print('logp', i, t, ' '.join('%.9g' % v for v in log_probs.flatten().tolist()))
            print('attn', i, t, ' '.join('%.9g' % v for v in attn.flatten().tolist()))
            prev = torch.tensor(nxt)
        g = m.translate_greedy(src, 8)
        print('greedy', i, g.size(0), g.size(1), ' '.join(str(v) for v in g.flatten().tolist()))
print('done')
)PY", paths);
  for (const auto& path : paths) fs::remove(path);
  ASSERT_EQ(py.status, 0) << py.out << py.err;

  // The same computations in eager C++, keyed like python's lines.
  torch::NoGradGuard ng;
  auto src = torch::tensor({5, 6, 7, 8, 3, 9, 4, 3, 0, 0, 3, 0, 0, 0, 0}, torch::kLong).view({3, 5});
  const std::vector<std::vector<int64_t>> next = {{4, 7, 5}, {5, 8, 6}, {6, 9, 7}};
  std::map<std::string, torch::Tensor> expected_values;
  std::map<std::string, std::string> expected_text;
  for (size_t i = 0; i < variants.size(); ++i) {
    auto& model = *models[i];
    const std::string id = std::to_string(i);
    expected_text["params " + id] = test::sorted_scripted_names(model);
    const Variant& v = variants[i];
    expected_text["attrs " + id] = to_string(v.cell) + " " + to_string(v.attention) + " " + std::to_string(v.layers) +
                                   (v.bidirectional ? " True" : " False") + (v.input_feeding ? " True" : " False");
    auto state = model.init(src);
    auto prev = torch::full({3}, kBosId, torch::kLong);
    for (int t = 0; t < 3; ++t) {
      auto step = model.step(state, prev);
      const std::string key = id + " " + std::to_string(t);
      expected_values["logp " + key] = step.log_probs.flatten();
      expected_values["attn " + key] =
          step.attention.defined() ? step.attention.flatten() : torch::zeros({0}, torch::kFloat);
      state = step.state;
      prev = torch::tensor(next[t], torch::kLong);
    }
    expected_text["greedy " + id] = test::tokens_text(eager_greedy(model, src, 8));
  }

  test::expect_python_report(py.out, expected_values, expected_text);
}
