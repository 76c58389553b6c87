#include "tests/twin_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <vector>

#include "datasets/special_ids.h"
#include "infer/script_twin.h"
#include "tests/test_util.h"

namespace nlpzoo::test {

namespace {

// The same named tensors in both states, each within 1e-5.
void expect_states_agree(const DecoderState& eager, const DecoderState& twin, const std::string& where) {
  ASSERT_EQ(eager.tensors.size(), twin.tensors.size()) << where;
  for (const auto& [name, t] : eager.tensors) {
    ASSERT_TRUE(twin.tensors.count(name)) << where << ": " << name;
    EXPECT_LE(max_diff(t, twin.tensors.at(name)), 1e-5) << where << ": " << name;
  }
}

}  // namespace

void expect_decoders_agree(IncrementalDecoder& eager, IncrementalDecoder& twin, const torch::Tensor& src, int steps) {
  auto se = eager.init(src);
  auto st = twin.init(src);
  expect_states_agree(se, st, "init");
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
    const std::string where = "step " + std::to_string(i);
    EXPECT_LE(max_diff(e.log_probs, t.log_probs), 1e-5) << where;
    // Real probabilities, not just matching garbage.
    EXPECT_LE((t.log_probs.exp().sum(1) - 1).abs().max().item<float>(), 1e-5) << where;
    ASSERT_EQ(e.attention.defined(), t.attention.defined()) << where;
    if (e.attention.defined()) {
      EXPECT_LE(max_diff(e.attention, t.attention), 1e-5) << "attention " << where;
    }
    expect_states_agree(e.state, t.state, "state " + where);
    se = e.state;
    st = t.state;
    prev = torch::randint(1, eager.target_vocab_size(), {prev.size(0)}, torch::kLong);
  }
}

void expect_twin_holds_parameters(const torch::nn::Module& eager, const torch::jit::Module& twin) {
  size_t n = 0;
  for (const auto& p : twin.named_parameters(/*recurse=*/false)) {
    EXPECT_FALSE(p.value.requires_grad()) << p.name;
    ++n;
  }
  EXPECT_EQ(n, eager.named_parameters().size());
  EXPECT_EQ(twin_tensor_mismatch(eager, twin), "");
}

torch::jit::Module load_export_checking_extras(const std::string& path,
                                               const std::map<std::string, std::string>& extras,
                                               const std::string& readme) {
  torch::jit::ExtraFilesMap files{{"README.txt", ""}};
  for (const auto& [name, bytes] : extras) files[name] = "";
  auto loaded = torch::jit::load(path, torch::kCPU, files);
  std::filesystem::remove(path);
  for (const auto& [name, bytes] : extras) EXPECT_EQ(files.at(name), bytes) << name;
  EXPECT_EQ(files.at("README.txt"), readme);
  return loaded;
}

std::string sorted_scripted_names(const torch::nn::Module& model) {
  std::vector<std::string> names;
  for (const auto& p : model.named_parameters()) names.push_back(scripted_name(p.key()));
  std::sort(names.begin(), names.end());
  std::string joined;
  for (const auto& n : names) joined += (joined.empty() ? "" : " ") + n;
  return joined;
}

std::string readme_python(const std::string& readme, const std::string& path) {
  const auto start = readme.find("Python:\n");
  EXPECT_NE(start, std::string::npos) << readme;
  if (start == std::string::npos) return "";
  std::string code;
  std::istringstream in(readme.substr(start + 8));
  for (std::string line; std::getline(in, line) && line.rfind("  ", 0) == 0;) code += line.substr(2) + "\n";
  const std::string placeholder = "'model.pt'";
  const auto at = code.find(placeholder);
  EXPECT_NE(at, std::string::npos) << code;
  if (at != std::string::npos) code.replace(at, placeholder.size(), "'" + path + "'");
  return code;
}

std::string tokens_text(const torch::Tensor& tokens) {
  const auto t = tokens.to(torch::kCPU).contiguous();
  std::string text = std::to_string(t.size(0)) + " " + std::to_string(t.size(1));
  for (int64_t i = 0; i < t.numel(); ++i) text += " " + std::to_string(t.data_ptr<int64_t>()[i]);
  return text;
}

}  // namespace nlpzoo::test
