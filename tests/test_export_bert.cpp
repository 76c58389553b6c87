// The scripted twins of BERT (infer/export_bert.h), masked-LM pre-trained and fine-tuned as a
// classifier or regressor, agree with the eager model (in memory, after a save/load round
// trip, and in Debian's python3-torch, the README's own lines included).
#include <gtest/gtest.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <unistd.h>

#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "datasets/special_ids.h"
#include "datasets/tokenizer.h"
#include "infer/export_bert.h"
#include "models/bert/bert.h"
#include "tests/test_util.h"
#include "tests/twin_util.h"

using namespace nlpzoo;
namespace fs = std::filesystem;

namespace {

struct Variant {
  bool pre_norm;
  Activation activation;
  int64_t num_layers;
};

std::ostream& operator<<(std::ostream& os, const Variant& v) {
  return os << (v.pre_norm ? "pre_" : "post_") << to_string(v.activation) << "_L" << v.num_layers;
}

// BERT's post-LN GELU, and pre-LN (with its final LayerNorm) with each activation.
std::vector<Variant> variants() {
  return {{false, Activation::kGelu, 2}, {true, Activation::kGelu, 2}, {true, Activation::kRelu, 1}};
}

constexpr int64_t kVocab = 23, kMaxPositions = 12;

// A random model in eval mode; LayerNorm gains and biases perturbed so that a wrong parameter
// in the twin would show.
BertForPreTraining eval_model(const Variant& v, int64_t vocab_size = kVocab, int64_t max_positions = kMaxPositions,
                              double layer_norm_eps = 1e-5) {
  BertForPreTraining model(BertOptions()
                               .layer_norm_eps(layer_norm_eps)
                               .vocab_size(vocab_size)
                               .d_model(16)
                               .num_heads(2)
                               .num_layers(v.num_layers)
                               .ffn_dim(32)
                               .max_positions(max_positions)
                               .pre_norm(v.pre_norm)
                               .activation(v.activation));
  torch::NoGradGuard ng;
  for (auto& p : model->named_parameters())
    if (p.key().find("norm") != std::string::npos || p.key().find("bias") != std::string::npos)
      p.value().add_(torch::randn_like(p.value()) * 0.1);
  model->eval();
  return model;
}

// Four rows of lengths 10, 7, 3, 1 ([CLS] first, a [MASK] inside the longer ones), padded with
// pad id 0 to 10 positions; segments 0 then 1 in the second half of each real row, 0 at pads.
std::pair<torch::Tensor, torch::Tensor> padded_batch() {
  const std::vector<int64_t> lengths = {10, 7, 3, 1};
  auto tokens = torch::zeros({4, 10}, torch::kLong), segments = torch::zeros({4, 10}, torch::kLong);
  for (int64_t b = 0; b < 4; ++b) {
    const int64_t n = lengths[b];
    tokens[b].slice(0, 0, n).copy_(torch::randint(7, kVocab, {n}, torch::kLong));
    tokens[b][0] = kClsId;
    if (n > 2) tokens[b][n / 2] = kMaskId;
    segments[b].slice(0, n / 2, n).fill_(1);
  }
  return {tokens, segments};
}

std::string temp_path(const std::string& name) {
  return (fs::temp_directory_path() / ("nlpzoo_bertexport_" + std::to_string(::getpid()) + "_" + name)).string();
}

std::map<std::string, std::string> extras() {
  return {{"config.ini", "[model]\ntask = masked_lm\n"}, {"spm.model", std::string("\0\x01" "spm", 5)}};
}

torch::Tensor run(torch::jit::Module& twin, const std::string& method, const torch::Tensor& tokens,
                  const torch::Tensor& segments) {
  return twin.get_method(method)({tokens, segments}).toTensor();
}

}  // namespace

class ExportBert : public ::testing::TestWithParam<Variant> {};

TEST_P(ExportBert, TwinMatchesEagerOnPaddedBatches) {
  torch::manual_seed(3);
  auto model = eval_model(GetParam());
  auto twin = script_bert(*model);
  torch::NoGradGuard ng;
  for (int trial = 0; trial < 3; ++trial) {
    auto [tokens, segments] = padded_batch();
    auto hidden = run(twin, "encode", tokens, segments);
    ASSERT_EQ(hidden.sizes(), (std::vector<int64_t>{4, 10, 16}));
    EXPECT_LE(test::max_diff(hidden, model->bert(tokens, segments)), 1e-5);
    auto logits = run(twin, "mlm_logits", tokens, segments);
    ASSERT_EQ(logits.sizes(), (std::vector<int64_t>{4, 10, kVocab}));
    EXPECT_LE(test::max_diff(logits, model->mlm_all(tokens, segments)), 1e-5);
    // At the [MASK] positions also what training computes (the head on gathered rows only).
    auto masked = tokens == kMaskId;
    EXPECT_LE(test::max_diff(logits.index({masked}), model(tokens, segments, masked).mlm_logits), 1e-5);
  }
  // Padding is masked as in eager: the real positions of a row do not see its pads.
  auto [tokens, segments] = padded_batch();
  auto short_row = run(twin, "encode", tokens.slice(0, 2, 3).slice(1, 0, 3), segments.slice(0, 2, 3).slice(1, 0, 3));
  EXPECT_LE(test::max_diff(short_row, run(twin, "encode", tokens, segments).slice(0, 2, 3).slice(1, 0, 3)), 1e-5);
}

// Google's checkpoints' ε = 1e-12: on embedding sums of variance ~1e-3 it moves outputs by
// ~1e-3 from LibTorch's 1e-5, so a twin that kept 1e-5 would fail here.
TEST(ExportBertEps, TwinUsesTheModelsLayerNormEps) {
  torch::manual_seed(4);
  auto model = eval_model(variants()[0], kVocab, kMaxPositions, /*layer_norm_eps=*/1e-12);
  auto twin = script_bert(*model);
  torch::NoGradGuard ng;
  auto [tokens, segments] = padded_batch();
  EXPECT_LE(test::max_diff(run(twin, "mlm_logits", tokens, segments), model->mlm_all(tokens, segments)), 1e-5);
}

TEST_P(ExportBert, TwinHoldsEveryParameterUnderItsMappedName) {
  auto model = eval_model(GetParam());
  auto twin = script_bert(*model);
  test::expect_twin_holds_parameters(*model, twin);
  // The MLM output matrix is the token embedding, held once.
  EXPECT_FALSE(twin.hasattr("mlm__weight"));
  EXPECT_TRUE(twin.hasattr("bert__embeddings__token__weight"));
  EXPECT_EQ(twin.attr("mask_id").toInt(), kMaskId);
  EXPECT_EQ(twin.attr("cls_id").toInt(), kClsId);
  EXPECT_EQ(twin.attr("sep_id").toInt(), kSepId);
  EXPECT_EQ(twin.attr("pad_id").toInt(), 0);
  EXPECT_EQ(twin.attr("pre_norm").toBool(), GetParam().pre_norm);
}

TEST_P(ExportBert, SavedFileLoadsAndMatches) {
  torch::manual_seed(5);
  auto model = eval_model(GetParam());
  const auto path = temp_path("roundtrip.pt");
  export_bert(path, *model, extras());
  auto loaded = test::load_export_checking_extras(path, extras(), bert_export_readme(model->bert->options()));
  torch::NoGradGuard ng;
  auto [tokens, segments] = padded_batch();
  EXPECT_LE(test::max_diff(run(loaded, "mlm_logits", tokens, segments), model->mlm_all(tokens, segments)), 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Variants, ExportBert, ::testing::ValuesIn(variants()));

TEST(ExportBertReadme, DocumentsIdsAndMethods) {
  const auto readme = bert_export_readme(BertOptions());
  for (const char* s : {"[CLS]=4", "[SEP]=5", "[MASK]=6", "PAD=0", "encode(tokens[B,S] int64, segments[B,S] int64)",
                        "mlm_logits(", "'spm.model'", "norm=post"})
    EXPECT_NE(readme.find(s), std::string::npos) << s << "\n" << readme;
}

TEST(ExportBertErrors, SequencesPastMaxPositionsThrowAsTheEagerModel) {
  auto model = eval_model(variants()[0]);
  auto twin = script_bert(*model);
  auto tokens = torch::full({1, kMaxPositions + 1}, 7, torch::kLong);
  EXPECT_THROW(run(twin, "encode", tokens, torch::zeros_like(tokens)), std::runtime_error);
  EXPECT_THROW(model->bert(tokens, torch::zeros_like(tokens)), c10::Error);
  EXPECT_THROW(run(twin, "encode", tokens, torch::zeros({1, 2}, torch::kLong)), std::runtime_error);
}

// Debian's python3-torch loads the exported files, reads their extra files and attributes, and
// fills the [MASK]s of a padded batch: the same logits and the same top-5 ids as eager C++.
TEST(RegressionExportBertPython, PythonTorchFillsAMask) {
  NLPZOO_REQUIRE_PYTHON_MODULE("torch", "python3-torch");
  torch::manual_seed(43);
  std::vector<BertForPreTraining> models;
  std::vector<std::string> paths;
  for (size_t i = 0; i < 2; ++i) {  // post-LN GELU and pre-LN GELU
    models.push_back(eval_model(variants()[i]));
    paths.push_back(temp_path("py" + std::to_string(i) + ".pt"));
    export_bert(paths.back(), *models.back(), extras());
  }
  const auto py = test::run_python(R"PY(
import sys, torch
torch.set_num_threads(1)
tokens = torch.tensor([[4, 9, 6, 11, 5], [4, 6, 5, 0, 0]])
segments = torch.tensor([[0, 0, 0, 1, 1], [0, 0, 0, 0, 0]])
def show(*fields):
    print(' '.join(str(f) for f in fields))
def values(t):
    return ' '.join('%.9g' % v for v in t.flatten().tolist())
for i, path in enumerate(sys.argv[1:]):
    files = {'config.ini': '', 'spm.model': '', 'README.txt': ''}
    m = torch.jit.load(path, _extra_files=files)
    assert files['config.ini'] == b'[model]\ntask = masked_lm\n', files['config.ini']
    assert files['spm.model'] == b'\x00\x01spm', files['spm.model']
    assert b'mlm_logits' in files['README.txt'] and b'[MASK]=6' in files['README.txt'], files['README.txt']
    show('params', i, ' '.join(sorted(n for n, _ in m.named_parameters())))
    show('attrs', i, m.mask_id, m.cls_id, m.sep_id, m.pad_id, m.pre_norm, m.activation)
    with torch.no_grad():
        logits = m.mlm_logits(tokens, segments)
        at_mask = logits[tokens == m.mask_id]
        show('mask_logits', i, 0, values(at_mask))
        show('fill', i, 0, values(at_mask.topk(5, -1).indices.float()))
        show('hidden', i, 0, values(m.encode(tokens, segments)))
print('done')
)PY", paths);
  for (const auto& path : paths) fs::remove(path);
  ASSERT_EQ(py.status, 0) << py.out << py.err;

  torch::NoGradGuard ng;
  auto tokens = torch::tensor({4, 9, 6, 11, 5, 4, 6, 5, 0, 0}, torch::kLong).view({2, 5});
  auto segments = torch::tensor({0, 0, 0, 1, 1, 0, 0, 0, 0, 0}, torch::kLong).view({2, 5});
  std::map<std::string, torch::Tensor> expected_values;
  std::map<std::string, std::string> expected_text;
  for (size_t i = 0; i < models.size(); ++i) {
    auto& model = *models[i];
    const std::string id = std::to_string(i);
    expected_text["params " + id] = test::sorted_scripted_names(model);
    expected_text["attrs " + id] = std::string("6 4 5 0 ") + (variants()[i].pre_norm ? "True" : "False") + " gelu";
    auto at_mask = model.forward(tokens, segments, tokens == kMaskId).mlm_logits;  // [2, V]
    expected_values["mask_logits " + id + " 0"] = at_mask;
    expected_values["fill " + id + " 0"] = std::get<1>(at_mask.topk(5, -1)).to(torch::kFloat);
    expected_values["hidden " + id + " 0"] = model.bert(tokens, segments);
  }
  test::expect_python_report(py.out, expected_values, expected_text);
}

// ---- the fine-tuned classifier's twin (script_bert_classifier) -------------------------------------

namespace {

// BertModel + BertClassificationHead as the classification task holds them (children "bert"
// and "head"), random, in eval mode (head dropout 0.3, so eval matters).
struct BertClassifierPair : torch::nn::Module {
  BertClassifierPair(const Variant& v, int64_t num_labels, int64_t vocab_size = kVocab,
                     int64_t max_positions = kMaxPositions) {
    BertForPreTraining source = eval_model(v, vocab_size, max_positions);  // its perturbed encoder
    bert = register_module("bert", source->bert);
    head = register_module("head", BertClassificationHead(16, num_labels, 0.3));
    torch::NoGradGuard ng;
    head->output->bias.add_(torch::randn_like(head->output->bias) * 0.1);
    eval();
  }
  torch::Tensor logits(const torch::Tensor& tokens, const torch::Tensor& segments) {
    return head(bert->pooler(bert(tokens, segments)));
  }
  BertModel bert{nullptr};
  BertClassificationHead head{nullptr};
};

const std::vector<std::string> kBertLabels = {"contradiction", "entailment", "neutral"};

}  // namespace

class ExportBertClassifier : public ::testing::TestWithParam<Variant> {};

TEST_P(ExportBertClassifier, TwinMatchesEagerOnPaddedBatches) {
  torch::manual_seed(9);
  BertClassifierPair model(GetParam(), 3);
  auto twin = script_bert_classifier(*model.bert, *model.head, kBertLabels);
  test::expect_twin_holds_parameters(model, twin);  // bert__..., head__output__weight, ...
  EXPECT_TRUE(twin.hasattr("head__output__weight"));
  EXPECT_TRUE(twin.hasattr("bert__pooler__dense__weight"));
  EXPECT_EQ(twin.attr("labels").toListRef().at(1).toStringRef(), "entailment");
  EXPECT_FALSE(twin.attr("regression").toBool());
  EXPECT_EQ(twin.attr("cls_id").toInt(), kClsId);
  torch::NoGradGuard ng;
  for (int trial = 0; trial < 3; ++trial) {
    auto [tokens, segments] = padded_batch();
    const auto eager = model.logits(tokens, segments);  // [4, 3]
    const auto logits = run(twin, "forward", tokens, segments);
    ASSERT_EQ(logits.sizes(), (std::vector<int64_t>{4, 3}));
    EXPECT_LE(test::max_diff(logits, eager), 1e-5);
    EXPECT_LE(test::max_diff(run(twin, "predict", tokens, segments), torch::softmax(eager, -1)), 1e-5);
    EXPECT_LE(test::max_diff(run(twin, "encode", tokens, segments), model.bert(tokens, segments)), 1e-5);
    // A row alone at its own length is the same sentence.
    EXPECT_LE(test::max_diff(run(twin, "forward", tokens.slice(0, 2, 3).slice(1, 0, 3), segments.slice(0, 2, 3).slice(1, 0, 3)),
                             eager.slice(0, 2, 3)),
              1e-5);
  }
  EXPECT_THROW(script_bert_classifier(*model.bert, *model.head, {"a", "b"}), std::invalid_argument);
  EXPECT_THROW(script_bert_classifier(*model.bert, *model.head, {}), std::invalid_argument);
  BertClassificationHead narrow(8, 3, 0.0);
  EXPECT_THROW(script_bert_classifier(*model.bert, *narrow, kBertLabels), std::invalid_argument);
}

TEST_P(ExportBertClassifier, RegressionTwinPredictsTheScore) {
  torch::manual_seed(10);
  BertClassifierPair model(GetParam(), 1);
  auto twin = script_bert_classifier(*model.bert, *model.head, {});
  EXPECT_TRUE(twin.attr("regression").toBool());
  EXPECT_EQ(twin.attr("labels").toListRef().size(), 0u);
  torch::NoGradGuard ng;
  auto [tokens, segments] = padded_batch();
  const auto scores = run(twin, "predict", tokens, segments);
  ASSERT_EQ(scores.sizes(), (std::vector<int64_t>{4}));
  EXPECT_LE(test::max_diff(scores, model.logits(tokens, segments).select(1, 0)), 1e-5);
}

TEST_P(ExportBertClassifier, SavedFileLoadsAndMatches) {
  torch::manual_seed(12);
  BertClassifierPair model(GetParam(), 3);
  const auto path = temp_path("classifier.pt");
  auto extra = extras();
  extra["labels.txt"] = "contradiction\nentailment\nneutral\n";
  export_bert_classifier(path, *model.bert, *model.head, kBertLabels, extra);
  auto loaded = test::load_export_checking_extras(
      path, extra, bert_classifier_export_readme(model.bert->options(), kBertLabels));
  torch::NoGradGuard ng;
  auto [tokens, segments] = padded_batch();
  EXPECT_LE(test::max_diff(run(loaded, "predict", tokens, segments), torch::softmax(model.logits(tokens, segments), -1)),
            1e-5);
  EXPECT_THROW(export_bert_classifier(path, *model.bert, *model.head, kBertLabels, {{"README.txt", ""}}),
               std::invalid_argument);
  EXPECT_FALSE(fs::exists(path));
}

INSTANTIATE_TEST_SUITE_P(Variants, ExportBertClassifier, ::testing::ValuesIn(variants()));

TEST(ExportBertReadme, ClassifierReadmeDocumentsInputsAndOutputs) {
  const auto readme = bert_classifier_export_readme(BertOptions(), {"0", "1"});
  for (const char* s : {"[CLS]=4", "[SEP]=5", "fine-tuned classifier", "labels (class id i is labels[i]): 0 1",
                        "forward(tokens[B,S] int64, segments[B,S] int64) -> logits[B,C]",
                        "predict(tokens[B,S] int64, segments[B,S] int64) -> probabilities[B,C]",
                        "tokens = torch.tensor([[4] + sp.encode(text) + [5]])", "m.predict(tokens, segments)"})
    EXPECT_NE(readme.find(s), std::string::npos) << s << "\n" << readme;
  const auto regression = bert_classifier_export_readme(BertOptions(), {});
  EXPECT_NE(regression.find("-> scores[B]"), std::string::npos) << regression;
}

// Debian's python3-torch runs the exported classifier on a padded batch of pairs, and the
// README's own lines (with a real SentencePiece model in the file) classify their sentence as
// the eager model does.
TEST(RegressionExportBertPython, PythonTorchClassifiesASentence) {
  NLPZOO_REQUIRE_PYTHON_MODULE("torch", "python3-torch");
  NLPZOO_REQUIRE_PYTHON_MODULE("sentencepiece", "python3-sentencepiece");
  const auto dir = test::fresh_temp_dir("export_bert_classifier_py");
  TokenizerTrainOptions spm;
  spm.inputs = {std::string(NLPZOO_SOURCE_DIR) + "/tests/data/kjv_genesis_1_8.txt"};
  spm.model_prefix = (dir / "spm").string();
  spm.vocab_size = 100;
  spm.hard_vocab_limit = false;
  spm.user_defined_symbols = bert_special_pieces();
  Tokenizer::train(spm);
  const auto tokenizer = Tokenizer::load(spm.model_prefix + ".model");
  torch::manual_seed(13);
  // Vocabulary and positions for the README's sentence in the pieces of a 100-piece model.
  BertClassifierPair classifier(variants()[0], 3, 100, 64), regressor(variants()[1], 1, 100, 64);
  const std::vector<std::string> paths = {(dir / "c.pt").string(), (dir / "r.pt").string()};
  export_bert_classifier(paths[0], *classifier.bert, *classifier.head, kBertLabels,
                         {{"spm.model", tokenizer.serialized()}, {"config.ini", ""}});
  export_bert_classifier(paths[1], *regressor.bert, *regressor.head, {},
                         {{"spm.model", tokenizer.serialized()}, {"config.ini", ""}});
  const auto py = test::run_python(R"PY(
import sys, torch
torch.set_num_threads(1)
tokens = torch.tensor([[4, 9, 5, 11, 5], [4, 12, 5, 0, 0]])
segments = torch.tensor([[0, 0, 0, 1, 1], [0, 0, 0, 0, 0]])
for i, path in enumerate(sys.argv[1:]):
    m = torch.jit.load(path)
    with torch.no_grad():
        p = m.predict(tokens, segments)
    print('attrs', i, m.regression, len(m.labels), tuple(p.shape))
    print('predict', i, 0, ' '.join('%.9g' % x for x in p.flatten().tolist()))
print('done')
)PY", paths);
  ASSERT_EQ(py.status, 0) << py.out << py.err;
  torch::NoGradGuard ng;
  const auto tokens = torch::tensor({4, 9, 5, 11, 5, 4, 12, 5, 0, 0}, torch::kLong).view({2, 5});
  const auto segments = torch::tensor({0, 0, 0, 1, 1, 0, 0, 0, 0, 0}, torch::kLong).view({2, 5});
  test::expect_python_report(py.out,
                             {{"predict 0 0", torch::softmax(classifier.logits(tokens, segments), -1)},
                              {"predict 1 0", regressor.logits(tokens, segments).select(1, 0)}},
                             {{"attrs 0", "False 3 (2, 3)"}, {"attrs 1", "True 0 (2,)"}});

  // The README's lines as they stand: [CLS] + pieces of their sentence + [SEP], segments 0.
  const std::string sentence = "a charming and often affecting journey.";
  auto ids = tokenizer.encode(sentence);
  ids.insert(ids.begin(), kClsId);
  ids.push_back(kSepId);
  const auto one = torch::tensor(ids, torch::kLong).unsqueeze(0);
  const auto expected = torch::softmax(classifier.logits(one, torch::zeros_like(one)), -1)[0];
  const auto readme = bert_classifier_export_readme(classifier.bert->options(), kBertLabels);
  ASSERT_NE(readme.find("'" + sentence + "'"), std::string::npos) << readme;
  const auto run_readme = test::run_python(test::readme_python(readme, paths[0]));
  ASSERT_EQ(run_readme.status, 0) << readme << run_readme.out << run_readme.err;
  std::istringstream out(run_readme.out);
  std::string label;
  double p = 0;
  out >> label >> p;
  const int64_t best = expected.argmax().item<int64_t>();
  EXPECT_EQ(label, kBertLabels[best]) << run_readme.out;
  EXPECT_NEAR(p, expected[best].item<double>(), 1e-5) << run_readme.out;
  const auto run_regression = test::run_python(test::readme_python(bert_classifier_export_readme(regressor.bert->options(), {}), paths[1]));
  ASSERT_EQ(run_regression.status, 0) << run_regression.out << run_regression.err;
  const auto score = regressor.logits(one, torch::zeros_like(one))[0][0].item<double>();
  EXPECT_NEAR(std::stod(run_regression.out), score, 1e-5) << run_regression.out;
  fs::remove_all(dir);
}
