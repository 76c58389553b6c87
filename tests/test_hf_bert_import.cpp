// Importing a Hugging Face BERT folder (train/hf_bert_import.h, models/bert/hf_bert.h): no
// published checkpoint can be downloaded here, so tests/make_hf_bert.py writes a tiny one in the
// published layout with HF's parameter names, and BertModel's outputs on a padded batch computed
// from its equations; our encoder must reproduce them within 1e-5.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "core/io.h"
#include "core/safetensors.h"
#include "datasets/special_ids.h"
#include "datasets/tokenizer.h"
#include "datasets/wordpiece_model.h"
#include "models/bert/hf_bert.h"
#include "train/hf_bert_import.h"
#include "train/tasks/import_bert.h"
#include "train/tasks/masked_lm_task.h"
#include "train/tasks/registry.h"
#include "tests/test_util.h"

using namespace nlpzoo;
namespace fs = std::filesystem;
using Tensors = std::vector<std::pair<std::string, torch::Tensor>>;

namespace {

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

torch::Tensor named(const Tensors& tensors, const std::string& name) {
  for (const auto& [n, t] : tensors)
    if (n == name) return t;
  ADD_FAILURE() << "no tensor " << name;
  return {};
}

// The folder make_hf_bert.py writes, made once for the whole suite.
class HfBertFolder : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!test::missing_python_module("torch", "python3-torch").empty()) return;  // each test skips
    dir_ = test::fresh_temp_dir("hf_bert_import") / "checkpoint";
    const std::string script = read_file(std::string(NLPZOO_SOURCE_DIR) + "/tests/make_hf_bert.py");
    const auto r = test::run_python(script, {dir_.string(), "7"});
    ASSERT_EQ(r.status, 0) << r.out << r.err;
  }
  void SetUp() override { NLPZOO_REQUIRE_PYTHON_MODULE("torch", "python3-torch"); }

  // A copy of the checkpoint folder whose model.safetensors holds `tensors`.
  static std::string variant(const std::string& name, const Tensors& tensors) {
    const fs::path out = dir_.parent_path() / name;
    fs::create_directories(out);
    for (const char* f : {"config.json", "vocab.txt", "tokenizer_config.json"})
      fs::copy_file(dir_ / f, out / f, fs::copy_options::overwrite_existing);
    write_safetensors((out / "model.safetensors").string(), SafetensorsFile{tensors, {}, {}});
    return out.string();
  }
  static Tensors checkpoint_tensors() { return read_safetensors((dir_ / "model.safetensors").string()).tensors; }

  static fs::path dir_;
};
fs::path HfBertFolder::dir_;

struct Outputs {
  torch::Tensor hidden, pooled, logits;
};

Outputs run(BertForPreTraining& model, const Tensors& reference) {
  torch::NoGradGuard ng;
  model->eval();
  const auto ids = named(reference, "input_ids"), segments = named(reference, "token_type_ids");
  auto hidden = model->bert(ids, segments);  // [B, S, H]
  return {hidden, model->bert->pooler(hidden), model->mlm_all(ids, segments)};
}

}  // namespace

TEST_F(HfBertFolder, EncoderMatchesBertModelsEquations) {
  auto imported = import_hf_bert(dir_.string());
  EXPECT_EQ(imported.options.layer_norm_eps(), 1e-12);
  EXPECT_EQ(imported.options.d_model(), 32);
  EXPECT_EQ(imported.options.num_layers(), 2);
  const auto reference = read_safetensors((dir_ / "reference.safetensors").string()).tensors;
  // Our padding mask is the ids' [PAD]s; the reference took HF's attention_mask.
  ASSERT_TRUE(torch::equal(named(reference, "attention_mask"), (named(reference, "input_ids") != 0).to(torch::kLong)));
  const auto out = run(imported.model, reference);
  const float hidden = test::max_diff(out.hidden, named(reference, "last_hidden_state").to(torch::kFloat));
  const float pooled = test::max_diff(out.pooled, named(reference, "pooler_output").to(torch::kFloat));
  const float logits = test::max_diff(out.logits, named(reference, "mlm_logits").to(torch::kFloat));
  std::cout << "max abs diff vs BertModel's equations: last_hidden_state " << hidden << ", pooler_output " << pooled
            << ", mlm_logits " << logits << "\n";
  EXPECT_LE(hidden, 1e-5);  // every position, pads included (HF computes them the same way)
  EXPECT_LE(pooled, 1e-5);
  EXPECT_LE(logits, 1e-5);

  // 16 per layer x 2 + 5 embedding + 2 pooler + 5 MLM-head + 2 NSP-head tensors (the decoder is
  // tied, not stored); the checkpoint's NSP head gives the import one.
  EXPECT_TRUE(imported.options.nsp());
  EXPECT_EQ(imported.report.loaded.size(), 46u);
  EXPECT_EQ(imported.report.ignored, std::vector<std::string>{"bert.embeddings.position_ids"});
  EXPECT_TRUE(imported.report.unexpected.empty());
  EXPECT_TRUE(imported.report.missing.empty());
  EXPECT_TRUE(imported.report.tied.empty());
  // The vocabulary and tokenizer_config.json's do_lower_case.
  EXPECT_EQ(imported.tokenizer.vocab_size(), 37);
  EXPECT_EQ(imported.tokenizer.tokenize("[CLS] The Cat playing, UNAFFABLE! [SEP]"),
            (std::vector<std::string>{"[CLS]", "the", "cat", "play", "##ing", ",", "un", "##aff", "##able", "!", "[SEP]"}));

  // The same weights with LibTorch's LayerNorm eps (1e-5) miss by far more: the eps option matters.
  BertForPreTraining eps5(BertOptions(imported.options).layer_norm_eps(1e-5));
  load_hf_bert_weights(*eps5, checkpoint_tensors(), "model.safetensors");
  EXPECT_GT(test::max_diff(run(eps5, reference).hidden, out.hidden), 1e-4);
}

// Checkpoints converted from TensorFlow say gamma/beta; BertModel saves without "bert."; some
// files keep the tied decoder (equal to the word embeddings) and its bias.
TEST_F(HfBertFolder, OlderNamesPrefixlessAndTiedDecoderLoadTheSame) {
  Tensors renamed;
  for (auto [name, t] : checkpoint_tensors()) {
    if (name.rfind("bert.", 0) == 0) name = name.substr(5);
    if (name.size() > 16 && name.compare(name.size() - 16, 16, "LayerNorm.weight") == 0)
      name = name.substr(0, name.size() - 6) + "gamma";
    if (name.size() > 14 && name.compare(name.size() - 14, 14, "LayerNorm.bias") == 0)
      name = name.substr(0, name.size() - 4) + "beta";
    renamed.emplace_back(name, t);
  }
  renamed.emplace_back("cls.predictions.decoder.weight", named(renamed, "embeddings.word_embeddings.weight").clone());
  renamed.emplace_back("cls.predictions.decoder.bias", named(renamed, "cls.predictions.bias").clone());
  EXPECT_EQ(hf_bert_parameter_name("encoder.layer.1.attention.output.LayerNorm.gamma"),
            "bert.encoder.layers.1.norm1.weight");
  auto old = import_hf_bert(variant("old_names", renamed));
  auto now = import_hf_bert(dir_.string());
  const auto reference = read_safetensors((dir_ / "reference.safetensors").string()).tensors;
  EXPECT_EQ(test::max_diff(run(old.model, reference).logits, run(now.model, reference).logits), 0.f);
  EXPECT_EQ(old.report.tied,
            (std::vector<std::string>{"cls.predictions.decoder.weight", "cls.predictions.decoder.bias"}));
  EXPECT_EQ(old.report.ignored, std::vector<std::string>{"embeddings.position_ids"});
}

TEST_F(HfBertFolder, PytorchModelBinIsRefusedWithTheConversion) {
  const fs::path out = dir_.parent_path() / "pickle";
  fs::create_directories(out);
  fs::copy_file(dir_ / "config.json", out / "config.json", fs::copy_options::overwrite_existing);
  fs::copy_file(dir_ / "vocab.txt", out / "vocab.txt", fs::copy_options::overwrite_existing);
  std::ofstream(out / "pytorch_model.bin") << "PK\x03\x04 not read";
  const auto message = test::user_error_of([&] { import_hf_bert(out.string()); });
  EXPECT_TRUE(contains(message, "pytorch_model.bin is a Python pickle")) << message;
  EXPECT_TRUE(contains(message, "Convert it to model.safetensors")) << message;
  EXPECT_TRUE(contains(message, "save_file(")) << message;
  fs::remove(out / "pytorch_model.bin");
  EXPECT_TRUE(contains(test::user_error_of([&] { import_hf_bert(out.string()); }), "model.safetensors: no such file"));
}

TEST_F(HfBertFolder, ShapesAndMissingTensorsAreReportedByName) {
  Tensors broken;
  for (auto [name, t] : checkpoint_tensors()) {
    if (name == "bert.encoder.layer.1.output.dense.weight" || name == "bert.pooler.dense.bias") continue;
    if (name == "bert.encoder.layer.0.intermediate.dense.weight") t = t.t().contiguous();  // [64, 32] -> [32, 64]
    broken.emplace_back(name, t);
  }
  const auto message = test::user_error_of([&] { import_hf_bert(variant("broken", broken)); });
  EXPECT_TRUE(contains(message, "bert.encoder.layer.0.intermediate.dense.weight has shape [32, 64] but "
                                "bert.encoder.layers.0.ffn.linear1.weight is [64, 32]"))
      << message;
  EXPECT_TRUE(contains(message, "missing bert.encoder.layer.1.output.dense.weight (for "
                                "bert.encoder.layers.1.ffn.linear2.weight)"))
      << message;
  EXPECT_FALSE(contains(message, "pooler")) << message;  // a head may be missing: reported, not refused

  Tensors headless;
  for (auto [name, t] : checkpoint_tensors())
    if (name.rfind("bert.pooler.", 0) != 0) headless.emplace_back(name, t);
  EXPECT_EQ(import_hf_bert(variant("no_pooler", headless)).report.missing,
            (std::vector<std::string>{"bert.pooler.dense.weight", "bert.pooler.dense.bias"}));

  // An output layer that is not the word embeddings cannot be represented.
  Tensors untied = checkpoint_tensors();
  untied.emplace_back("cls.predictions.decoder.weight", torch::zeros({37, 32}));
  EXPECT_TRUE(contains(test::user_error_of([&] { import_hf_bert(variant("untied", untied)); }),
                       "cls.predictions.decoder.weight differs from bert.embeddings.word_embeddings.weight"));
}

TEST(HfBertConfig, UnsupportedValuesAreRefusedByName) {
  const auto base = nlohmann::json::parse(R"({"model_type": "bert", "hidden_size": 32, "num_hidden_layers": 2,
      "num_attention_heads": 4, "intermediate_size": 64, "hidden_act": "gelu", "vocab_size": 40,
      "max_position_embeddings": 16, "type_vocab_size": 2, "layer_norm_eps": 1e-12})");
  const auto o = bert_options_from_hf_config(base, "config.json");
  EXPECT_EQ(o.vocab_size(), 40);
  EXPECT_EQ(o.ffn_dim(), 64);
  EXPECT_FALSE(o.pre_norm());
  auto refused = [&](const char* key, const nlohmann::json& value) {
    auto config = base;
    config[key] = value;
    return test::user_error_of([&] { bert_options_from_hf_config(config, "config.json"); });
  };
  EXPECT_TRUE(contains(refused("hidden_act", "gelu_new"), "hidden_act \"gelu_new\" is not supported"));
  EXPECT_TRUE(contains(refused("model_type", "roberta"), "model_type \"roberta\" is not BERT"));
  EXPECT_TRUE(contains(refused("position_embedding_type", "relative_key"), "position_embedding_type"));
  EXPECT_TRUE(contains(refused("hidden_size", 30), "not a multiple of num_attention_heads"));
  EXPECT_TRUE(contains(refused("num_hidden_layers", 0), "num_hidden_layers must be a positive integer"));
  EXPECT_TRUE(contains(refused("is_decoder", true), "is_decoder"));
  EXPECT_TRUE(contains(refused("pad_token_id", 40), "pad_token_id"));
}

// Fine-tuning starts from the imported encoder: a classifier whose "bert.*" is the import's
// reproduces its states, then fits a tiny labelled set.
TEST_F(HfBertFolder, ClassifierFineTunesFromTheImport) {
  auto imported = import_hf_bert(dir_.string());
  torch::manual_seed(0);
  BertForSequenceClassification classifier(BertOptions(imported.options).dropout(0.0).attention_dropout(0.0), 2);
  {
    torch::NoGradGuard ng;
    auto source = imported.model->named_parameters();
    for (auto& p : classifier->named_parameters())
      if (p.key().rfind("bert.", 0) == 0) p.value().copy_(source[p.key()]);
  }
  const std::vector<std::pair<std::string, int64_t>> data = {
      {"the cat is very good", 1}, {"the dog was bad", 0}, {"it is good", 1}, {"the mat is not good", 0}};
  std::vector<std::vector<int64_t>> rows;
  int64_t S = 0;
  for (const auto& [text, label] : data) {
    auto ids = imported.tokenizer.encode("[CLS] " + text + " [SEP]");
    S = std::max<int64_t>(S, ids.size());
    rows.push_back(ids);
  }
  auto tokens = torch::zeros({4, S}, torch::kLong);  // [B, S], [PAD] = 0
  for (int64_t b = 0; b < 4; ++b)
    tokens[b].slice(0, 0, rows[b].size()).copy_(torch::tensor(rows[b], torch::kLong));
  auto labels = torch::tensor({1, 0, 1, 0}, torch::kLong);
  {
    torch::NoGradGuard ng;
    imported.model->eval();
    classifier->eval();
    EXPECT_LE(test::max_diff(classifier->bert(tokens), imported.model->bert(tokens)), 1e-6);
  }
  classifier->train();
  torch::optim::Adam adam(classifier->parameters(), torch::optim::AdamOptions(1e-3));
  double first = 0, last = 0;
  for (int step = 0; step < 80; ++step) {
    adam.zero_grad();
    auto loss = torch::cross_entropy_loss(classifier(tokens), labels);
    loss.backward();
    adam.step();
    (step == 0 ? first : last) = loss.item<double>();
  }
  EXPECT_LT(last, 0.1 * first) << "first " << first << " last " << last;
}

// WordPiece in the one tokenizer pipeline: nlpzoo's special ids first ([PAD] [UNK], two
// [unusedN] as <s> </s>, [CLS] [SEP] [MASK]), every other token after them in file order.
TEST_F(HfBertFolder, WordPieceTokenizerKeepsNlpzoosSpecialIds) {
  auto imported = import_hf_bert(dir_.string());
  const auto bytes = serialize_wordpiece(imported.tokenizer);
  const Tokenizer tokenizer = Tokenizer::from_serialized(bytes);
  EXPECT_EQ(tokenizer.serialized(), bytes);
  ASSERT_EQ(tokenizer.vocab_size(), 37);
  const std::vector<std::string> first = {"[PAD]", "[UNK]", "[unused0]", "[unused1]", "[CLS]", "[SEP]", "[MASK]", "the"};
  for (size_t id = 0; id < first.size(); ++id) EXPECT_EQ(tokenizer.id_to_piece(id), first[id]) << id;
  // vocab.txt: [PAD] [UNK] [CLS] [SEP] [MASK] the a cat ... ##ly [unused0] [unused1].
  const auto order = nlpzoo_row_order(imported.tokenizer, "vocab.txt");
  EXPECT_EQ(order, (std::vector<int64_t>{0, 1, 35, 36, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19,
                                         20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34}));
  const std::string text = "[CLS] The Cat playing, UNAFFABLE! [SEP] [MASK] zebra";
  std::vector<int64_t> expected;
  for (const auto& token : imported.tokenizer.tokenize(text))
    expected.push_back(tokenizer.piece_to_id(token));
  EXPECT_EQ(tokenizer.encode(text), expected);
  EXPECT_EQ(tokenizer.encode("[CLS] the zebra [MASK] [SEP]"),
            (std::vector<int64_t>{kClsId, 7, kUnkId, kMaskId, kSepId}));
  EXPECT_EQ(tokenizer.encode_pieces("playing"), (std::vector<std::string>{"play", "##ing"}));
  EXPECT_EQ(tokenizer.piece_to_id("zebra"), kUnkId);
  EXPECT_EQ(tokenizer.decode({kPadId, kBosId, 7, 9, tokenizer.piece_to_id("##s"), kEosId}), "the cats");
  // A vocabulary without two [unusedN] has no ids for <s> and </s>.
  WordPieceTokenizer bare({"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "[unused7]", "x"}, {});
  EXPECT_TRUE(contains(test::user_error_of([&] { nlpzoo_row_order(bare, "vocab.txt"); }), "fewer than two [unusedN]"));
  EXPECT_TRUE(contains(test::user_error_of([&] { Tokenizer::from_serialized(bytes.substr(0, 19) + "{\n[PAD]\n"); }),
                       "malformed options line"));
}

// `nlpzoo import bert` writes a masked_lm run folder whose model, rebuilt from its config like any
// run's, computes what BertModel's equations give on the checkpoint (the vocabulary relabelled).
TEST_F(HfBertFolder, ImportedRunFolderReproducesTheCheckpoint) {
  const auto run_dir = (dir_.parent_path() / "imported_run").string();
  const auto imported = import_bert_run(dir_.string(), run_dir);
  EXPECT_TRUE(imported.nsp);
  EXPECT_EQ(imported.vocab_size, 37);
  for (const char* f : {"config.ini", "spm.model", "checkpoint_last.pt", "checkpoint_best.pt"})
    EXPECT_TRUE(fs::exists(fs::path(run_dir) / f)) << f;
  auto run = load_run(imported.checkpoint, torch::kCPU);
  auto& task = dynamic_cast<MaskedLmTask&>(*run.task);
  const auto order = nlpzoo_row_order(import_hf_bert(dir_.string()).tokenizer, "vocab.txt");
  std::vector<int64_t> ours(order.size());
  for (size_t i = 0; i < order.size(); ++i) ours[order[i]] = static_cast<int64_t>(i);
  const auto reference = read_safetensors((dir_ / "reference.safetensors").string()).tensors;
  const auto hf_ids = named(reference, "input_ids");
  const auto ids = torch::tensor(ours, torch::kLong).index_select(0, hf_ids.flatten()).view_as(hf_ids);
  torch::NoGradGuard ng;
  task.bert()->eval();
  const auto hidden = task.bert()->bert(ids, named(reference, "token_type_ids"));
  EXPECT_LE(test::max_diff(hidden, named(reference, "last_hidden_state").to(torch::kFloat)), 1e-5);
  // MLM logits: column j of ours is column order[j] of the checkpoint's.
  const auto logits = task.bert()->mlm_all(ids, named(reference, "token_type_ids"));
  const auto expected = named(reference, "mlm_logits").to(torch::kFloat).index_select(-1, torch::tensor(order, torch::kLong));
  EXPECT_LE(test::max_diff(logits, expected), 1e-5);
  EXPECT_EQ(bind_options<BertKeys>(run.config).layer_norm_eps, 1e-12);

  // A second import into the same folder is refused; so is a folder without the weights' file.
  EXPECT_TRUE(contains(test::user_error_of([&] { import_bert_run(dir_.string(), run_dir); }), "checkpoint"));
}

// The command line: import, fill-mask from the import, fine-tune a classifier from it.
TEST_F(HfBertFolder, RegressionImportFillMaskAndFineTuneFromTheCommandLine) {
  const auto root = dir_.parent_path() / "cli";
  fs::create_directories(root / "data");
  const std::string run_dir = (root / "bert").string();
  auto r = test::run_cli("import bert " + test::shell_quote(dir_.string()) + " --run-dir " + test::shell_quote(run_dir));
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "2 layers, d_model 32, 37 WordPiece tokens, with its NSP head")) << r.out;
  r = test::run_cli("import bert " + test::shell_quote(dir_.string()) + " --run-dir " + test::shell_quote(run_dir));
  EXPECT_NE(r.status, 0);

  r = test::run_cli("fill-mask --run-dir " + test::shell_quote(run_dir) + " -k 2 --device cpu", "The cat [MASK] on the mat.\n");
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  // The top two pieces are those of the checkpoint's own MLM head at that position.
  auto imported = import_hf_bert(dir_.string());
  imported.model->eval();
  const auto hf = imported.tokenizer.encode("[CLS] The cat [MASK] on the mat. [SEP]");
  const auto logits = imported.model->mlm_all(torch::tensor(hf, torch::kLong).unsqueeze(0)).detach();  // [1, S, V]
  const auto top = std::get<1>(logits[0][3].topk(2));
  for (int j = 0; j < 2; ++j)
    EXPECT_TRUE(contains(r.out, imported.tokenizer.id_to_token(top[j].item<int64_t>()))) << r.out;

  // The export ships the vocabulary in the model's id order, for Hugging Face's BertTokenizer.
  r = test::run_cli("export --run-dir " + test::shell_quote(run_dir) + " --out " + test::shell_quote((root / "bert.pt").string()));
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "extra files config.ini, spm.model, vocab.txt, README.txt")) << r.out;

  std::string train = "sentence\tlabel\n", dev = train;
  const std::vector<std::string> texts = {"the cat is very good", "the dog was bad", "it is good", "the mat is not good"};
  for (int i = 0; i < 8; ++i) train += texts[i % 4] + "\t" + (i % 4 == 0 || i % 4 == 2 ? "1" : "0") + "\n";
  for (int i = 0; i < 4; ++i) dev += texts[i] + "\t" + (i % 2 == 0 ? "1" : "0") + "\n";
  atomic_write_text((root / "data" / "train.tsv").string(), train);
  atomic_write_text((root / "data" / "dev.tsv").string(), dev);
  r = test::run_cli("train --config " + test::shell_quote(std::string(NLPZOO_SOURCE_DIR) + "/configs/sst2-bert.ini") +
                    " --data-dir " + test::shell_quote((root / "data").string()) + " --run-dir " +
                    test::shell_quote((root / "cls").string()) + " --init_from " + test::shell_quote(run_dir) +
                    " --device cpu");  // 3 epochs of one batch
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "and bert.pooler; fresh")) << r.out;  // the NSP-trained pooler is loaded
}
