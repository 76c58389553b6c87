// The scripted twin of the seq2seq model agrees with the eager model (in memory, after a
// save/load round trip, and in Debian's python3-torch).
#include <gtest/gtest.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "datasets/io.h"
#include "datasets/special_ids.h"
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

std::ostream& operator<<(std::ostream& os, const Variant& v) {
  return os << to_string(v.cell) << "/" << to_string(v.attention) << "/L" << v.layers
            << (v.input_feeding ? "/feed" : "") << (v.bidirectional ? "/bi" : "/uni");
}

constexpr int64_t kSrcVocab = 17, kTgtVocab = 13;

Seq2SeqOptions small(const Variant& v) {
  return Seq2SeqOptions().src_vocab_size(kSrcVocab).tgt_vocab_size(kTgtVocab).embed_dim(8).hidden_size(12)
      .num_layers(v.layers).cell(v.cell).attention(v.attention).attention_dim(7)
      .input_feeding(v.input_feeding).bidirectional(v.bidirectional).dropout(0.1);
}

// [B, S] source batch: random lengths (one row full, one of length 1), real tokens in
// [4, V), EOS at each row's end, PAD after it.
torch::Tensor random_src(int64_t B, int64_t S) {
  auto src = torch::zeros({B, S}, torch::kLong);
  auto lengths = torch::randint(1, S + 1, {B}, torch::kLong);
  lengths[0] = S;
  if (B > 1) lengths[1] = 1;
  for (int64_t b = 0; b < B; ++b) {
    const int64_t len = lengths[b].item<int64_t>();
    if (len > 1) src[b].slice(0, 0, len - 1).copy_(torch::randint(4, kSrcVocab, {len - 1}, torch::kLong));
    src[b][len - 1] = kEosId;
  }
  return src;
}

float max_diff(const torch::Tensor& a, const torch::Tensor& b) {
  EXPECT_EQ(a.sizes(), b.sizes());
  if (a.sizes() != b.sizes()) return 1e9f;
  if (a.numel() == 0) return 0.f;
  return (a.to(torch::kFloat) - b.to(torch::kFloat)).abs().max().item<float>();
}

// Encodes and runs `steps` decoder steps through both seams with the same random tokens
// (BOS first), checking every state tensor, log-prob and attention row.
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
    auto e = eager.step(se, prev);
    auto t = twin.step(st, prev);
    EXPECT_LE(max_diff(e.log_probs, t.log_probs), 1e-5) << "step " << i;
    ASSERT_EQ(e.attention.defined(), t.attention.defined());
    if (e.attention.defined()) EXPECT_LE(max_diff(e.attention, t.attention), 1e-5) << "attention step " << i;
    for (const auto& [name, x] : e.state.tensors)
      EXPECT_LE(max_diff(x, t.state.tensors.at(name)), 1e-5) << "state " << name << " step " << i;
    se = e.state;
    st = t.state;
    prev = torch::randint(4, kTgtVocab, {src.size(0)}, torch::kLong);
  }
}

// Greedy decoding with the eager model through its IncrementalDecoder seam, as the twin's
// translate_greedy defines it: tokens up to EOS, then PAD; stops when every row has ended.
torch::Tensor eager_greedy(Seq2SeqImpl& model, const torch::Tensor& src, int64_t max_len) {
  auto state = model.init(src);
  const int64_t B = src.size(0);
  auto prev = torch::full({B}, kBosId, torch::kLong);
  auto done = torch::zeros({B}, torch::kBool);
  std::vector<torch::Tensor> out;
  for (int64_t t = 0; t < max_len; ++t) {
    auto step = model.step(state, prev);
    auto tok = step.log_probs.argmax(1);
    tok = torch::where(done, torch::full_like(tok, kPadId), tok);
    out.push_back(tok);
    done = done.logical_or(tok.eq(kEosId));
    prev = tok;
    state = step.state;
    if (done.all().item<bool>()) break;
  }
  return torch::stack(out, 1);
}

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
  for (int trial = 0; trial < 3; ++trial) expect_twin_matches(*model, twin, random_src(5, 7));
}

TEST_P(ExportSeq2Seq, TwinHoldsEveryParameterUnderItsMappedName) {
  Seq2Seq model(small(GetParam()));
  auto twin = script_seq2seq(*model);
  size_t n = 0;
  for (const auto& p : twin.named_parameters(/*recurse=*/false)) {
    (void)p;
    ++n;
  }
  EXPECT_EQ(n, model->named_parameters().size());
  for (const auto& p : model->named_parameters()) {
    auto name = scripted_name(p.key());
    ASSERT_TRUE(twin.hasattr(name)) << name;
    EXPECT_TRUE(twin.attr(name).toTensor().equal(p.value())) << name;
  }
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
  EXPECT_NE(files.at("README.txt").find("translate_greedy"), std::string::npos);
  ScriptedSeq2Seq twin(loaded);
  expect_twin_matches(*model, twin, random_src(4, 6));
}

TEST_P(ExportSeq2Seq, TranslateGreedyMatchesEagerGreedy) {
  torch::manual_seed(13);
  Seq2Seq model(small(GetParam()));
  model->eval();
  torch::NoGradGuard ng;
  auto twin = script_seq2seq(*model);
  auto src = random_src(6, 5);
  auto expected = eager_greedy(*model, src, 9);
  auto got = twin.get_method("translate_greedy")({src, int64_t{9}}).toTensor();
  EXPECT_TRUE(got.equal(expected)) << got << "\nvs\n" << expected;
}

INSTANTIATE_TEST_SUITE_P(
    Variants, ExportSeq2Seq,
    ::testing::Values(Variant{CellType::kGru, AttentionType::kAdditive, 1, false, true},
                      Variant{CellType::kLstm, AttentionType::kGeneral, 2, false, true},
                      Variant{CellType::kGru, AttentionType::kDot, 1, true, true},
                      Variant{CellType::kGru, AttentionType::kNone, 1, false, true},
                      Variant{CellType::kLstm, AttentionType::kAdditive, 2, true, true},
                      Variant{CellType::kRnn, AttentionType::kGeneral, 2, false, false}));

TEST(ExportSeq2SeqErrors, RejectsAReservedExtraFileName) {
  Seq2Seq model(small({CellType::kGru, AttentionType::kDot, 1, false, true}));
  EXPECT_THROW(export_seq2seq(temp_path("x.pt"), *model, {{"README.txt", "mine"}}), std::invalid_argument);
}

TEST(ExportSeq2SeqErrors, UnwritablePathIsAUserError) {
  Seq2Seq model(small({CellType::kGru, AttentionType::kDot, 1, false, true}));
  EXPECT_THROW(export_seq2seq("/nonexistent_dir_nlpzoo/x.pt", *model, {}), UserError);
}

TEST(ExportSeq2SeqErrors, ForeignModuleIsAUserError) {
  torch::jit::Module m("other");
  EXPECT_THROW(ScriptedSeq2Seq{m}, UserError);
}

// Debian's python3-torch loads the exported file, reads its extra files, and computes the
// same log-probs, attention and greedy tokens as the eager C++ model.
TEST(RegressionExportPython, PythonTorchRunsTheExportedFile) {
  if (std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "/usr/bin/python3 cannot import torch (install python3-torch)";
  torch::manual_seed(21);
  Seq2Seq model(small({CellType::kLstm, AttentionType::kAdditive, 2, true, true}));
  model->eval();
  torch::NoGradGuard ng;
  const auto model_path = temp_path("py.pt"), script_path = temp_path("check.py"), out_path = temp_path("py.out");
  export_seq2seq(model_path, *model, extras());
  atomic_write_text(script_path, R"PY(
import sys, torch
files = {'config.ini': '', 'spm.src.model': '', 'README.txt': ''}
m = torch.jit.load(sys.argv[1], _extra_files=files)
assert files['config.ini'] == b'[model]\ncell = gru\n', files['config.ini']
assert files['spm.src.model'] == b'\x00\x01binary', files['spm.src.model']
assert b'translate_greedy' in files['README.txt']
src = torch.tensor([[5, 6, 7, 8, 3], [9, 4, 3, 0, 0], [3, 0, 0, 0, 0]])
with torch.no_grad():
    states, mask, keys, summary, h, c, feed = m.encode(src)
    prev = torch.tensor([2, 2, 2])
    for t, nxt in enumerate([[4, 7, 5], [5, 8, 6], [6, 9, 7]]):
        log_probs, attn, h, c, feed = m.step(prev, states, mask, keys, summary, h, c, feed)
        print('logp', t, ' '.join('%.9g' % v for v in log_probs.flatten().tolist()))
        print('attn', t, ' '.join('%.9g' % v for v in attn.flatten().tolist()))
        prev = torch.tensor(nxt)
    print('greedy', ' '.join(str(v) for v in m.translate_greedy(src, 8).flatten().tolist()))
)PY");
  const std::string cmd = "/usr/bin/python3 " + script_path + " " + model_path + " > " + out_path + " 2>&1";
  const int rc = std::system(cmd.c_str());
  std::string output = read_file(out_path);
  fs::remove(model_path);
  fs::remove(script_path);
  fs::remove(out_path);
  ASSERT_EQ(rc, 0) << output;

  // The same computation in eager C++.
  auto src = torch::tensor({5, 6, 7, 8, 3, 9, 4, 3, 0, 0, 3, 0, 0, 0, 0}, torch::kLong).view({3, 5});
  auto state = model->init(src);
  auto prev = torch::full({3}, kBosId, torch::kLong);
  const std::vector<std::vector<int64_t>> next = {{4, 7, 5}, {5, 8, 6}, {6, 9, 7}};
  std::map<std::string, torch::Tensor> expected;
  for (int t = 0; t < 3; ++t) {
    auto step = model->step(state, prev);
    expected["logp " + std::to_string(t)] = step.log_probs.flatten();
    expected["attn " + std::to_string(t)] = step.attention.flatten();
    state = step.state;
    prev = torch::tensor(next[t], torch::kLong);
  }
  auto greedy = eager_greedy(*model, src, 8).flatten();

  std::istringstream lines(output);
  std::string line;
  int checked = 0;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string kind;
    fields >> kind;
    if (kind == "greedy") {
      std::vector<int64_t> toks;
      for (int64_t v; fields >> v;) toks.push_back(v);
      EXPECT_TRUE(torch::tensor(toks, torch::kLong).equal(greedy)) << line << "\nvs\n" << greedy;
      ++checked;
      continue;
    }
    std::string t;
    fields >> t;
    std::vector<float> values;
    for (float v; fields >> v;) values.push_back(v);
    auto it = expected.find(kind + " " + t);
    ASSERT_NE(it, expected.end()) << "unexpected python output line: " << line;
    EXPECT_LE(max_diff(torch::tensor(values), it->second), 1e-5) << line;
    ++checked;
  }
  EXPECT_EQ(checked, 7) << output;
}
