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

#include "datasets/io.h"
#include "datasets/special_ids.h"
#include "tests/test_util.h"
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

// Every configuration the issue names: gru/lstm x 1-2 layers x uni/bi x four attentions x
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

// Encodes and runs `steps` decoder steps through both seams with the same tokens (BOS, then
// random), checking every state tensor, log-prob and attention row. Before the third step
// both states are reordered and grown by the same random rows, as beam search does, so the
// twin's zero-width placeholders must survive index_select too.
void expect_twin_matches(Seq2SeqImpl& eager, IncrementalDecoder& twin, const torch::Tensor& src, int steps = 4) {
  auto se = eager.init(src);
  auto st = twin.init(src);
  ASSERT_EQ(se.tensors.size(), st.tensors.size());
  for (const auto& [name, t] : se.tensors) {
    ASSERT_TRUE(st.tensors.count(name)) << name;
    EXPECT_LE(max_diff(t, st.tensors.at(name)), 1e-5) << "encode: " << name;
  }
  auto prev = torch::full({src.size(0)}, kBosId, torch::kLong);
  for (int i = 0; i < steps; ++i) {
    if (i == 2) {
      auto rows = torch::randint(0, prev.size(0), {prev.size(0) + 3}, torch::kLong);
      se = se.index_select(rows);
      st = st.index_select(rows);
      prev = prev.index_select(0, rows);
    }
    auto e = eager.step(se, prev);
    auto t = twin.step(st, prev);
    EXPECT_LE(max_diff(e.log_probs, t.log_probs), 1e-5) << "step " << i;
    // Real probabilities, not just matching garbage.
    EXPECT_LE((t.log_probs.exp().sum(1) - 1).abs().max().item<float>(), 1e-5) << "step " << i;
    ASSERT_EQ(e.attention.defined(), t.attention.defined());
    if (e.attention.defined()) {
      EXPECT_LE(max_diff(e.attention, t.attention), 1e-5) << "attention step " << i;
    }
    ASSERT_EQ(e.state.tensors.size(), t.state.tensors.size());
    for (const auto& [name, x] : e.state.tensors) {
      ASSERT_TRUE(t.state.tensors.count(name)) << name;
      EXPECT_LE(max_diff(x, t.state.tensors.at(name)), 1e-5) << "state " << name << " step " << i;
    }
    se = e.state;
    st = t.state;
    prev = torch::randint(1, kTgtVocab, {prev.size(0)}, torch::kLong);
  }
}

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
  for (int trial = 0; trial < 3; ++trial) expect_twin_matches(*model, twin, random_src(5, 7));
  // One sentence alone, no padding at all.
  expect_twin_matches(*model, twin, random_src(1, 4));
}

TEST_P(ExportSeq2Seq, TwinHoldsEveryParameterUnderItsMappedName) {
  const Variant v = GetParam();
  Seq2Seq model(small(v));
  auto twin = script_seq2seq(*model);
  size_t n = 0;
  for (const auto& p : twin.named_parameters(/*recurse=*/false)) {
    EXPECT_FALSE(p.value.requires_grad()) << p.name;
    ++n;
  }
  EXPECT_EQ(n, model->named_parameters().size());
  for (const auto& p : model->named_parameters()) {
    auto name = scripted_name(p.key());
    ASSERT_TRUE(twin.hasattr(name)) << name;
    EXPECT_TRUE(twin.attr(name).toTensor().equal(p.value())) << name;
  }
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
  torch::jit::ExtraFilesMap files{{"config.ini", ""}, {"spm.src.model", ""}, {"README.txt", ""}};
  auto loaded = torch::jit::load(path, torch::kCPU, files);
  fs::remove(path);
  EXPECT_EQ(files.at("config.ini"), extras().at("config.ini"));
  EXPECT_EQ(files.at("spm.src.model"), extras().at("spm.src.model"));
  EXPECT_EQ(files.at("README.txt"), seq2seq_export_readme(model->options()));
  ScriptedSeq2Seq twin(loaded);
  expect_twin_matches(*model, twin, random_src(4, 6));
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
  if (std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "/usr/bin/python3 cannot import torch (install python3-torch)";
  // Between them: every cell, every attention, uni/bi, 1/2 layers, input feeding on/off.
  const std::vector<Variant> variants = {{CellType::kLstm, AttentionType::kAdditive, 2, true, true},
                                         {CellType::kGru, AttentionType::kNone, 1, false, false},
                                         {CellType::kGru, AttentionType::kDot, 2, false, true},
                                         {CellType::kRnn, AttentionType::kGeneral, 1, true, false}};
  torch::manual_seed(21);
  std::vector<Seq2Seq> models;
  std::string paths;
  for (size_t i = 0; i < variants.size(); ++i) {
    models.emplace_back(small(variants[i]));
    models.back()->eval();
    const auto path = temp_path("py" + std::to_string(i) + ".pt");
    export_seq2seq(path, *models.back(), extras());
    paths += " " + path;
  }
  const auto script_path = temp_path("check.py"), out_path = temp_path("py.out");
  atomic_write_text(script_path, R"PY(
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
)PY");
  const std::string cmd =
      "OMP_NUM_THREADS=1 /usr/bin/python3 " + script_path + paths + " > " + out_path + " 2>&1";
  const int rc = std::system(cmd.c_str());
  std::string output = read_file(out_path);
  for (size_t i = 0; i < variants.size(); ++i) fs::remove(temp_path("py" + std::to_string(i) + ".pt"));
  fs::remove(script_path);
  fs::remove(out_path);
  ASSERT_EQ(rc, 0) << output;

  // The same computations in eager C++, keyed like python's lines.
  torch::NoGradGuard ng;
  auto src = torch::tensor({5, 6, 7, 8, 3, 9, 4, 3, 0, 0, 3, 0, 0, 0, 0}, torch::kLong).view({3, 5});
  const std::vector<std::vector<int64_t>> next = {{4, 7, 5}, {5, 8, 6}, {6, 9, 7}};
  std::map<std::string, torch::Tensor> expected_values;
  std::map<std::string, std::string> expected_text;
  for (size_t i = 0; i < variants.size(); ++i) {
    auto& model = *models[i];
    const std::string id = std::to_string(i);
    std::vector<std::string> names;
    for (const auto& p : model.named_parameters()) names.push_back(scripted_name(p.key()));
    std::sort(names.begin(), names.end());
    std::string joined;
    for (const auto& n : names) joined += (joined.empty() ? "" : " ") + n;
    expected_text["params " + id] = joined;
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
    auto greedy = eager_greedy(model, src, 8);
    std::string g = std::to_string(greedy.size(0)) + " " + std::to_string(greedy.size(1));
    for (int64_t x : std::vector<int64_t>(greedy.data_ptr<int64_t>(), greedy.data_ptr<int64_t>() + greedy.numel()))
      g += " " + std::to_string(x);
    expected_text["greedy " + id] = g;
  }

  test::expect_python_report(output, expected_values, expected_text);
}
