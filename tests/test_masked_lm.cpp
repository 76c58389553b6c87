// Masked-LM data (datasets/masked_lm.h) and the masked_lm task (train/tasks/masked_lm_task.h):
// masking statistics on a large sample, specials and padding never masked, whole-word groups,
// FULL-SENTENCES packing, pair inputs and segment ids, the task's batches and its
// weight-decay groups. (Exact resume is in test_resume.cpp.)
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <numeric>
#include <random>
#include <set>

#include <torch/script.h>

#include "datasets/masked_lm.h"
#include "datasets/special_ids.h"
#include "models/bert/bert.h"
#include "tests/test_util.h"
#include "core/config.h"
#include "core/io.h"
#include "train/tasks/masked_lm_task.h"
#include "train/tasks/registry.h"
#include "train/flat_parameters.h"
#include "train/trainer.h"

using namespace nlpzoo;
namespace fs = std::filesystem;

namespace {

// A sequence [CLS] 7.. [SEP] [CLS] ... as packing makes them, plus trailing pads.
TokenIds sample_sequence(int64_t length, int64_t vocab, std::mt19937_64& rng) {
  TokenIds s{kClsId};
  std::uniform_int_distribution<int64_t> piece(7, vocab - 1);
  for (int64_t t = 0; t < length; ++t) s.push_back(piece(rng));
  s.push_back(kSepId);
  s.insert(s.end(), {kPadId, kPadId, kPadId});
  return s;
}

}  // namespace

// BERT's recipe on 2,000 sequences of 100 maskable pieces: 15 predictions per sequence, of which
// 80% [MASK], 10% a random piece, 10% the original; [CLS], [SEP] and padding never chosen.
TEST(MaskedLmMasking, FifteenPercentSplit80_10_10AndSpecialsNeverMasked) {
  MaskingOptions o;
  o.vocab_size = 1000;
  std::mt19937_64 rng(7);
  int64_t maskable = 0, chosen = 0, as_mask = 0, as_random = 0, kept = 0;
  for (int k = 0; k < 2000; ++k) {
    const auto seq = sample_sequence(100, o.vocab_size, rng);
    const auto m = mask_sequence(seq, o, mix_seed({1, static_cast<uint64_t>(k)}));
    ASSERT_EQ(m.input.size(), seq.size());
    ASSERT_EQ(m.positions.size(), m.targets.size());
    EXPECT_EQ(m.positions.size(), 15u);  // round(0.15 * 100)
    maskable += 100;
    chosen += static_cast<int64_t>(m.positions.size());
    std::set<int64_t> at(m.positions.begin(), m.positions.end());
    for (size_t t = 0; t < seq.size(); ++t) {
      if (!at.count(static_cast<int64_t>(t))) {
        EXPECT_EQ(m.input[t], seq[t]) << "an unchosen position changed";
        continue;
      }
      EXPECT_FALSE(is_special_for_masking(seq[t])) << "position " << t << " holds a special id";
      if (m.input[t] == kMaskId) ++as_mask;
      else if (m.input[t] == seq[t]) ++kept;
      else ++as_random;
      EXPECT_GE(m.input[t], 6);  // [MASK] or a real piece, never pad/[CLS]/[SEP]
    }
    for (size_t i = 0; i < m.positions.size(); ++i) EXPECT_EQ(m.targets[i], seq[m.positions[i]]);
  }
  EXPECT_NEAR(static_cast<double>(chosen) / maskable, 0.15, 1e-9);
  // 30,000 predictions: the binomial standard deviation of each share is below 0.0025.
  EXPECT_NEAR(static_cast<double>(as_mask) / chosen, 0.8, 0.01);
  // A random piece equals the original 1 time in 993: "kept" absorbs those.
  EXPECT_NEAR(static_cast<double>(as_random) / chosen, 0.1, 0.01);
  EXPECT_NEAR(static_cast<double>(kept) / chosen, 0.1, 0.01);
}

TEST(MaskedLmMasking, DeterministicBySeedAndOnlySpecialsGiveNothing) {
  MaskingOptions o;
  o.vocab_size = 50;
  std::mt19937_64 rng(3);
  const auto seq = sample_sequence(40, o.vocab_size, rng);
  const auto a = mask_sequence(seq, o, 11), b = mask_sequence(seq, o, 11), c = mask_sequence(seq, o, 12);
  EXPECT_EQ(a.input, b.input);
  EXPECT_EQ(a.positions, b.positions);
  EXPECT_NE(a.positions, c.positions);  // another epoch, another mask
  EXPECT_EQ(a.positions.size(), 6u);    // round(0.15 * 40)
  // Nothing maskable: nothing predicted; a short sequence still predicts one piece.
  EXPECT_TRUE(mask_sequence({kClsId, kSepId, kPadId}, o, 1).positions.empty());
  EXPECT_EQ(mask_sequence({kClsId, 9, 10, kSepId}, o, 1).positions.size(), 1u);
  o.vocab_size = 7;
  EXPECT_THROW(mask_sequence(seq, o, 1), std::invalid_argument);
}

// Whole-word masking: pieces after a word-initial one (no "▁") go with it, all or none.
TEST(MaskedLmMasking, WholeWordGroupsAreMaskedTogether) {
  MaskingOptions o;
  o.vocab_size = 40;
  o.word_start.assign(40, true);
  for (int64_t id = 30; id < 40; ++id) o.word_start[id] = false;  // continuation pieces
  // Words: [10 30 31] [11] [12 32] [13] ... each sequence 8 words, 14 pieces.
  const TokenIds seq = {kClsId, 10, 30, 31, 11, 12, 32, 13, 14, 33, 34, 15, 16, 35, 17, 36, kSepId, kPadId};
  const std::vector<std::vector<int64_t>> words = {{1, 2, 3}, {4}, {5, 6}, {7}, {8, 9, 10}, {11}, {12, 13}, {14, 15}};
  o.mask_prob = 0.3;  // round(0.3 * 15) = 5 pieces
  int64_t total = 0;
  for (uint64_t k = 0; k < 500; ++k) {
    const auto m = mask_sequence(seq, o, k);
    const std::set<int64_t> at(m.positions.begin(), m.positions.end());
    for (const auto& w : words) {
      const auto hits = std::count_if(w.begin(), w.end(), [&](int64_t t) { return at.count(t) > 0; });
      EXPECT_TRUE(hits == 0 || hits == static_cast<int64_t>(w.size())) << "a word was split, seed " << k;
    }
    EXPECT_LE(m.positions.size(), 5u);
    EXPECT_FALSE(at.count(0) || at.count(16) || at.count(17));
    total += static_cast<int64_t>(m.positions.size());
  }
  EXPECT_GT(total, 500 * 4);  // the budget is nearly always filled
}

TEST(MaskedLmPacking, FullSentencesFillSequencesAndAreNeverSplit) {
  // Sentences of 3..12 pieces; each piece id says its sentence (100 + s) so a split shows.
  std::vector<TokenIds> sentences;
  for (int64_t s = 0; s < 200; ++s) sentences.push_back(TokenIds(3 + s % 10, 100 + s));
  sentences.insert(sentences.begin() + 5, TokenIds{});  // empty lines are skipped
  const int64_t max_positions = 32;
  const auto packed = pack_sentences(sentences, max_positions);
  EXPECT_EQ(packed.truncated, 0);
  int64_t total = 0, pieces = 0;
  int64_t last_sentence = 99;
  for (const auto& seq : packed.sequences) {
    ASSERT_GE(seq.size(), 3u);
    ASSERT_LE(static_cast<int64_t>(seq.size()), max_positions);
    EXPECT_EQ(seq.front(), kClsId);
    EXPECT_EQ(seq.back(), kSepId);
    // Whole sentences, in order: every run of one id is that sentence's full length.
    for (size_t t = 1; t + 1 < seq.size();) {
      const int64_t id = seq[t];
      size_t run = 0;
      while (t + run + 1 < seq.size() && seq[t + run] == id) ++run;
      EXPECT_EQ(static_cast<int64_t>(run), 3 + (id - 100) % 10) << "sentence " << id - 100 << " split";
      EXPECT_EQ(id, last_sentence + 1);
      last_sentence = id;
      t += run;
    }
    total += static_cast<int64_t>(seq.size());
    pieces += static_cast<int64_t>(seq.size()) - 2;
  }
  EXPECT_EQ(last_sentence, 299);
  EXPECT_EQ(pieces, 200 * 3 + 20 * (0 + 1 + 2 + 3 + 4 + 5 + 6 + 7 + 8 + 9));
  // Full: a sequence is flushed only when the next sentence (at most 12 pieces) does not fit.
  for (size_t i = 0; i + 1 < packed.sequences.size(); ++i)
    EXPECT_GT(static_cast<int64_t>(packed.sequences[i].size()) + 12, max_positions) << "sequence " << i;
  EXPECT_GT(static_cast<double>(total) / (packed.sequences.size() * max_positions), 0.8);

  // A sentence longer than max_positions - 2 is cut to fit and counted.
  const auto cut = pack_sentences({TokenIds(5, 9), TokenIds(40, 8), TokenIds(2, 7)}, 10);
  ASSERT_EQ(cut.sequences.size(), 3u);
  EXPECT_EQ(cut.truncated, 1);
  EXPECT_EQ(cut.sequences[1], (TokenIds{kClsId, 8, 8, 8, 8, 8, 8, 8, 8, kSepId}));
  EXPECT_THROW(pack_sentences(sentences, 2), std::invalid_argument);
}

TEST(MaskedLmPairs, SegmentIdsAndLongerSideTruncatedFirst) {
  auto p = pair_input({10, 11, 12}, {20, 21}, 16);
  EXPECT_EQ(p.tokens, (TokenIds{kClsId, 10, 11, 12, kSepId, 20, 21, kSepId}));
  EXPECT_EQ(p.segments, (TokenIds{0, 0, 0, 0, 0, 1, 1, 1}));
  EXPECT_FALSE(p.truncated);
  auto single = pair_input({10, 11}, {}, 16);
  EXPECT_EQ(single.tokens, (TokenIds{kClsId, 10, 11, kSepId}));
  EXPECT_EQ(single.segments, (TokenIds{0, 0, 0, 0}));
  // 6 + 2 pieces into 8 positions: A loses pieces from its end until it is no longer longer.
  auto cut = pair_input({10, 11, 12, 13, 14, 15}, {20, 21}, 8);
  EXPECT_EQ(cut.tokens, (TokenIds{kClsId, 10, 11, 12, kSepId, 20, 21, kSepId}));
  EXPECT_TRUE(cut.truncated);
  auto both = pair_input({10, 11, 12, 13}, {20, 21, 22, 23, 24}, 9);  // 6 pieces: 3 + 3
  EXPECT_EQ(both.tokens, (TokenIds{kClsId, 10, 11, 12, kSepId, 20, 21, 22, kSepId}));
  EXPECT_EQ(both.segments, (TokenIds{0, 0, 0, 0, 0, 1, 1, 1, 1}));
  EXPECT_THROW(pair_input({1}, {2}, 4), std::invalid_argument);
}

// Sentences whose pieces all carry their sentence's number (100 + s) show where text came from.
std::vector<std::vector<TokenIds>> numbered_chunks(int64_t sentences, int64_t room) {
  std::vector<TokenIds> text;
  for (int64_t s = 0; s < sentences; ++s) text.push_back(TokenIds(2 + s % 5, 100 + s));
  return chunk_sentences(text, room).chunks;
}

TEST(MaskedLmPairs, NextSentenceIsTheFollowingTextHalfTheTime) {
  const int64_t max_positions = 23;
  const auto chunks = numbered_chunks(300, max_positions - 3);
  ASSERT_GT(chunks.size(), 40u);
  int64_t multi = 0, next = 0;
  for (size_t k = 0; k < chunks.size(); ++k) {
    std::set<int64_t> own;
    for (const auto& s : chunks[k]) own.insert(s.front());
    for (uint64_t seed = 0; seed < 20; ++seed) {
      const auto pair = next_sentence_pair(chunks, k, max_positions, mix_seed({seed, k}));
      const auto& t = pair.input.tokens;
      ASSERT_LE(static_cast<int64_t>(t.size()), max_positions);
      ASSERT_EQ(t.front(), kClsId);
      ASSERT_EQ(t.back(), kSepId);
      const auto sep = std::find(t.begin() + 1, t.end(), kSepId) - t.begin();
      ASSERT_GT(sep, 1);
      ASSERT_LT(sep + 2, static_cast<int64_t>(t.size())) << "B is empty";
      for (size_t i = 0; i < t.size(); ++i) EXPECT_EQ(pair.input.segments[i], static_cast<int64_t>(i) > sep ? 1 : 0);
      // A is the chunk's first sentences, whole.
      EXPECT_EQ(t[1], chunks[k].front().front());
      const int64_t a_last = t[sep - 1], b_first = t[sep + 1];
      EXPECT_TRUE(own.count(a_last));
      if (chunks[k].size() > 1) {
        ++multi;
        next += pair.is_next;
      } else {
        EXPECT_FALSE(pair.is_next) << "a one-sentence chunk has no next text of its own";
      }
      if (pair.is_next) {
        // B is the text right after A, to the chunk's end, uncut.
        EXPECT_EQ(b_first, a_last + 1);
        EXPECT_EQ(t[t.size() - 2], chunks[k].back().back());
        EXPECT_FALSE(pair.input.truncated);
      } else {
        for (int64_t i = sep + 1; i + 1 < static_cast<int64_t>(t.size()); ++i)
          EXPECT_FALSE(own.count(t[i])) << "random B drew from its own chunk " << k;
      }
    }
  }
  EXPECT_NEAR(static_cast<double>(next) / multi, 0.5, 0.05) << next << " of " << multi;
  EXPECT_EQ(next_sentence_pair(chunks, 3, max_positions, 9).input.tokens,
            next_sentence_pair(chunks, 3, max_positions, 9).input.tokens);
  EXPECT_THROW(next_sentence_pair({chunks[0]}, 0, max_positions, 1), std::invalid_argument);
  EXPECT_THROW(next_sentence_pair(chunks, chunks.size(), max_positions, 1), std::invalid_argument);
  EXPECT_THROW(next_sentence_pair(chunks, 0, 4, 1), std::invalid_argument);
}

// The task on a small corpus: batches hold packed, masked sequences; the valid mask is fixed,
// the train mask changes with the epoch; biases and LayerNorm weights do not decay.
class MaskedLmTaskTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(test::fresh_temp_dir("masked_lm_task"));
    test::write_topic_corpus(*dir_ / "data" / "english.txt", 400);
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
  }
  static Config tiny_config() {
    return Config::resolve(task_schema("masked_lm"), "",
                           {"--task", "masked_lm", "--vocab_size", "40", "--d_model", "16", "--num_heads", "2",
                            "--num_layers", "1", "--ffn_dim", "32", "--max_positions", "24", "--batch_size", "4",
                            "--valid_every", "20", "--spm_normalization", "identity", "--optimizer", "adamw",
                            "--weight_decay", "0.01"});
  }
  static fs::path* dir_;
};
fs::path* MaskedLmTaskTest::dir_ = nullptr;

TEST_F(MaskedLmTaskTest, BatchesAreMaskedPackedSequences) {
  auto config = tiny_config();
  MaskedLmTask task;
  task.setup(config, {(*dir_ / "data").string(), (*dir_ / "run").string(), {Split::kTrain, Split::kValid}});
  EXPECT_EQ(task.tokenizer().id_to_piece(kMaskId), "[MASK]");
  EXPECT_EQ(config.get("vocab_size"), std::to_string(task.tokenizer().vocab_size()));
  EXPECT_FALSE(fs::exists(*dir_ / "run" / "spm_input.txt"));
  const auto& train = task.sequences(Split::kTrain);
  for (const auto& s : train) {
    EXPECT_LE(s.size(), 24u);
    EXPECT_EQ(s.front(), kClsId);
    EXPECT_EQ(s.back(), kSepId);
  }
  ASSERT_EQ(task.num_batches(Split::kTrain, 0), static_cast<int64_t>((train.size() + 3) / 4));

  auto b = task.make_batch(Split::kTrain, 0, 1);
  const auto& input = b.tensors.at("input");
  const auto& masked = b.tensors.at("masked");
  ASSERT_EQ(input.size(0), 4);
  EXPECT_EQ(b.num_tokens, masked.sum().item<int64_t>());
  EXPECT_EQ(b.tensors.at("targets").size(0), b.num_tokens);
  EXPECT_EQ(b.tensors.at("segments").abs().sum().item<int64_t>(), 0);
  // Never at padding, [CLS] or [SEP].
  EXPECT_EQ(masked.logical_and(input == kPadId).sum().item<int64_t>(), 0);
  EXPECT_FALSE(masked.select(1, 0).any().item<bool>());
  // Remade alike (resume); another epoch masks (and orders) differently; valid is fixed.
  EXPECT_TRUE(torch::equal(task.make_batch(Split::kTrain, 0, 1).tensors.at("input"), input));
  EXPECT_FALSE(torch::equal(task.make_batch(Split::kTrain, 1, 1).tensors.at("masked"), masked));
  EXPECT_TRUE(torch::equal(task.make_batch(Split::kValid, 0, 0).tensors.at("masked"),
                           task.make_batch(Split::kValid, 3, 0).tensors.at("masked")));

  auto loss = task.loss(b);
  EXPECT_GT(loss.loss_sum.item<float>() / b.num_tokens, 1.0f);
  task.model()->eval();
  EXPECT_EQ(task.loss(b).metric_sums.count("accuracy"), 1u);
}

// nlpzoo export of a masked_lm run: the twin carries the run's tokenizer and config, and its
// mlm_logits at a [MASK] rank the pieces as fill-mask does.
TEST_F(MaskedLmTaskTest, ExportCarriesTheTokenizerAndFillsMasksAsFillMask) {
  auto config = tiny_config();
  MaskedLmTask task;
  task.setup(config, {(*dir_ / "data").string(), (*dir_ / "run").string(), {Split::kTrain, Split::kValid}});
  const auto path = (*dir_ / "bert.pt").string();
  EXPECT_EQ(task.export_torchscript(path, "[model]\n"), (std::vector<std::string>{"config.ini", "spm.model"}));
  torch::jit::ExtraFilesMap files{{"config.ini", ""}, {"spm.model", ""}};
  auto twin = torch::jit::load(path, torch::kCPU, files);
  fs::remove(path);
  EXPECT_EQ(files["config.ini"], "[model]\n");
  EXPECT_EQ(files["spm.model"], task.tokenizer().serialized());

  const std::string line = "the [MASK] and the";
  const auto filled = task.fill_mask(line, 3, torch::kCPU);
  ASSERT_EQ(filled.size(), 1u);
  auto ids = task.input_pieces(line);  // fill-mask's pieces: no bare space piece before [MASK]
  ids.insert(ids.begin(), kClsId);
  ids.push_back(kSepId);
  auto tokens = torch::tensor(ids, torch::kLong).unsqueeze(0);
  auto logits = twin.get_method("mlm_logits")({tokens, torch::zeros_like(tokens)}).toTensor();
  auto probs = torch::softmax(logits.index({tokens == kMaskId}), -1)[0];
  auto [top, top_ids] = probs.topk(3);
  for (int64_t j = 0; j < 3; ++j) {
    EXPECT_EQ(task.tokenizer().id_to_piece(top_ids[j].item<int64_t>()), filled[0][j].piece);
    EXPECT_NEAR(top[j].item<double>(), filled[0][j].probability, 1e-5);
  }
}

// BERT's exclude_from_weight_decay: biases and LayerNorm weights in a group of their own with
// weight_decay 0, every matrix (embeddings included) decayed.
TEST_F(MaskedLmTaskTest, WeightDecaySkipsBiasesAndLayerNorms) {
  BertForPreTraining model(BertOptions().vocab_size(30).d_model(16).num_heads(2).num_layers(1).ffn_dim(32));
  const auto exempt = parameters_without_weight_decay(*model);
  const std::set<std::string> names(exempt.begin(), exempt.end());
  EXPECT_TRUE(names.count("mlm.bias"));
  EXPECT_TRUE(names.count("bert.embeddings.norm.weight"));
  EXPECT_TRUE(names.count("bert.encoder.layers.0.norm1.weight"));
  EXPECT_TRUE(names.count("bert.encoder.layers.0.self_attn.W_Q.bias"));
  EXPECT_FALSE(names.count("bert.embeddings.token.weight"));
  EXPECT_FALSE(names.count("bert.encoder.layers.0.ffn.linear1.weight"));
  for (const auto& p : model->named_parameters())
    EXPECT_EQ(names.count(p.key()) > 0, p.key().find("bias") != std::string::npos ||
                                            p.key().find("norm") != std::string::npos) << p.key();

  auto config = tiny_config();
  config.set("lr", "0.1");
  auto optimizer = make_optimizer(config, *model, exempt);
  ASSERT_EQ(optimizer->param_groups().size(), 2u);
  EXPECT_EQ(optimizer->param_groups()[0].options().get_lr(), 0.1);
  EXPECT_EQ(static_cast<torch::optim::AdamWOptions&>(optimizer->param_groups()[0].options()).weight_decay(), 0.01);
  EXPECT_EQ(static_cast<torch::optim::AdamWOptions&>(optimizer->param_groups()[1].options()).weight_decay(), 0.0);
  EXPECT_EQ(optimizer->param_groups()[1].params().size(), exempt.size());
  // One step with zero gradients: AdamW's decoupled decay alone moves a parameter, by lr * wd * p.
  const auto before_w = model->bert->embeddings->token->weight.clone();
  const auto before_g = model->bert->embeddings->norm->weight.clone();
  for (auto& p : model->parameters()) p.mutable_grad() = torch::zeros_like(p);
  optimizer->step();
  EXPECT_TRUE(torch::allclose(model->bert->embeddings->token->weight, before_w * (1 - 0.1 * 0.01)));
  EXPECT_TRUE(torch::equal(model->bert->embeddings->norm->weight, before_g));
  // Without decay (or without names) there is one group, as for every other task.
  config.set("weight_decay", "0");
  EXPECT_EQ(make_optimizer(config, *model, exempt)->param_groups().size(), 1u);
}

// The layout `nlpzoo bench optimizer --flat` times (one flat tensor per group) makes the same
// AdamW updates as the per-tensor one the Trainer uses: same groups (decay and no decay), same
// values after a few steps with the same gradients.
TEST_F(MaskedLmTaskTest, FlatParameterGroupsStepAsPerTensorAdamW) {
  auto config = tiny_config();
  config.set("lr", "0.01");
  torch::manual_seed(3);
  BertForPreTraining model(BertOptions().vocab_size(30).d_model(16).num_heads(2).num_layers(1).ffn_dim(32));
  torch::manual_seed(3);
  BertForPreTraining twin(BertOptions().vocab_size(30).d_model(16).num_heads(2).num_layers(1).ffn_dim(32));
  const auto exempt = parameters_without_weight_decay(*model);
  auto plain = make_optimizer(config, *model, exempt);
  auto flat = make_optimizer(config, *twin, exempt);
  for (auto& p : twin->parameters()) p.mutable_grad() = torch::zeros_like(p);
  flatten_parameter_groups(*flat);
  const auto& groups = plain->param_groups();
  ASSERT_EQ(groups.size(), 2u);
  ASSERT_EQ(flat->param_groups().size(), 2u);
  const auto start = groups[0].params()[0].detach().clone().reshape(-1);
  for (int step = 0; step < 4; ++step) {
    for (size_t j = 0; j < groups.size(); ++j) {
      std::vector<torch::Tensor> grads;
      for (auto p : groups[j].params()) {
        p.mutable_grad() = torch::randn_like(p);
        grads.push_back(p.grad().reshape(-1));
      }
      ASSERT_EQ(flat->param_groups()[j].params().size(), 1u);
      flat->param_groups()[j].params()[0].mutable_grad().copy_(torch::cat(grads));
    }
    plain->step();
    flat->step();
  }
  for (size_t j = 0; j < groups.size(); ++j) {
    std::vector<torch::Tensor> values;
    for (const auto& p : groups[j].params()) values.push_back(p.detach().reshape(-1));
    const auto diff = (torch::cat(values) - flat->param_groups()[j].params()[0].detach()).abs().max().item<double>();
    EXPECT_LE(diff, 1e-6) << "group " << j;
  }
  // The steps did move the parameters (4 steps of up to lr each).
  EXPECT_GT((groups[0].params()[0].detach().reshape(-1) - start).abs().max().item<double>(), 0.01);
  auto no_grad = make_optimizer(config, *twin, exempt);
  for (auto& p : twin->parameters()) p.mutable_grad() = torch::Tensor();
  EXPECT_THROW(flatten_parameter_groups(*no_grad), std::invalid_argument);
}

// fill-mask input is brought to the corpus's form: case, accents and punctuation as
// `nlpzoo data english` writes them, [MASK] kept, and no bare space piece before a [MASK] (a
// masked word's piece held its space in training). normalize_words = false keeps the text.
TEST_F(MaskedLmTaskTest, FillMaskInputTakesTheCorpusForm) {
  auto config = tiny_config();
  MaskedLmTask task;
  task.setup(config, {(*dir_ / "data").string(), (*dir_ / "run_form").string(), {Split::kTrain}});
  const auto& spm = task.tokenizer();
  auto expected = spm.encode("the cat");
  expected.push_back(kMaskId);
  for (auto id : spm.encode("dog")) expected.push_back(id);
  EXPECT_EQ(task.input_pieces("The CAT, [MASK] dog!"), expected);
  EXPECT_EQ(task.input_pieces("the cat [MASK] dog"), expected);
  const int64_t space = spm.piece_to_id("\xE2\x96\x81");
  ASSERT_NE(space, kUnkId) << "the topic corpus's model has a bare space piece";
  const auto raw = spm.encode("the cat [MASK] dog");
  EXPECT_EQ(std::count(raw.begin(), raw.end(), space), std::count(expected.begin(), expected.end(), space) + 1)
      << "SentencePiece puts one before [MASK]";

  config.set("normalize_words", "false");
  MaskedLmTask cased;
  cased.setup(config, {(*dir_ / "data").string(), (*dir_ / "run_form_cased").string(), {Split::kTrain}});
  auto kept = cased.tokenizer().encode("The CAT,");
  kept.push_back(kMaskId);
  EXPECT_EQ(cased.input_pieces("The CAT, [MASK]"), kept);
}

// nsp = true: each example is [CLS] A [SEP] B [SEP] with segment ids and a label; masking never
// touches the specials; the loss adds the NSP mean once per masked position; validation reports
// MLM loss and NSP accuracy; a short run trains both heads.
TEST_F(MaskedLmTaskTest, NspBatchesArePairsWithLabelsAndTrainBothHeads) {
  auto config = tiny_config();
  config.set("nsp", "true");
  config.set("max_positions", "64");  // a line is ~25 pieces at vocab_size 40: 2 lines per chunk
  MaskedLmTask task;
  task.setup(config, {(*dir_ / "data").string(), (*dir_ / "run_nsp").string(), {Split::kTrain, Split::kValid}});
  ASSERT_TRUE(task.sequences(Split::kTrain).empty());
  int64_t is_next = 0, rows = 0;
  for (int64_t i = 0; i < task.num_batches(Split::kTrain, 0); ++i) {
    const auto b = task.make_batch(Split::kTrain, 0, i);
    const auto& input = b.tensors.at("input");
    const auto& segments = b.tensors.at("segments");
    const auto& labels = b.tensors.at("nsp_labels");
    ASSERT_EQ(labels.size(0), input.size(0));
    for (int64_t r = 0; r < input.size(0); ++r) {
      // Two [SEP] stay in every row: specials are never masked or drawn as random pieces.
      EXPECT_EQ((input[r] == kSepId).sum().item<int64_t>(), 2);
      EXPECT_EQ(input[r][0].item<int64_t>(), kClsId);
      EXPECT_GT(segments[r].sum().item<int64_t>(), 0) << "B has segment id 1";
      EXPECT_EQ(segments[r].masked_select(input[r] == kPadId).sum().item<int64_t>(), 0);
    }
    EXPECT_EQ(b.tensors.at("masked").logical_and(input == kSepId).sum().item<int64_t>(), 0);
    is_next += (labels == 0).sum().item<int64_t>();
    rows += labels.size(0);
  }
  EXPECT_GT(is_next, rows / 4);
  EXPECT_LT(is_next, rows * 3 / 4);
  // Remade alike; another epoch pairs differently; valid pairs are fixed.
  const auto b = task.make_batch(Split::kTrain, 0, 1);
  EXPECT_TRUE(torch::equal(task.make_batch(Split::kTrain, 0, 1).tensors.at("input"), b.tensors.at("input")));
  EXPECT_TRUE(torch::equal(task.make_batch(Split::kValid, 0, 0).tensors.at("nsp_labels"),
                           task.make_batch(Split::kValid, 2, 0).tensors.at("nsp_labels")));

  // loss / N = MLM mean + NSP mean.
  task.model()->eval();
  torch::NoGradGuard no_grad;
  const auto out = task.bert()(b.tensors.at("input"), b.tensors.at("segments"), b.tensors.at("masked"));
  const double mlm = torch::cross_entropy_loss(out.mlm_logits, b.tensors.at("targets")).item<double>();
  const double nsp = torch::cross_entropy_loss(out.nsp_logits, b.tensors.at("nsp_labels")).item<double>();
  const auto loss = task.loss(b);
  EXPECT_NEAR(loss.loss_sum.item<double>() / b.num_tokens, mlm + nsp, 1e-4);
  const auto metrics = task.validation_metrics(
      {{"accuracy", loss.metric_sums.at("accuracy").to(torch::kDouble)},
       {"mlm_loss", loss.metric_sums.at("mlm_loss").to(torch::kDouble)},
       {"nsp", loss.metric_sums.at("nsp").to(torch::kDouble)}},
      b.num_tokens);
  EXPECT_NEAR(metrics.at("mlm_loss"), mlm, 1e-4);
  EXPECT_NEAR(metrics.at("mlm_perplexity"), std::exp(mlm), 1e-3 * std::exp(mlm));
  const double correct = (out.nsp_logits.argmax(-1) == b.tensors.at("nsp_labels")).sum().item<double>();
  EXPECT_DOUBLE_EQ(metrics.at("nsp_accuracy"), correct / b.tensors.at("nsp_labels").size(0));
}

// Both heads learn: on one batch holding both labels, 150 Adam updates bring the NSP loss near 0
// and its accuracy to 1, and evaluate reports the NSP and MLM parts.
TEST_F(MaskedLmTaskTest, NspAndMlmHeadsOverfitABatch) {
  auto config = tiny_config();
  for (auto [key, value] : {std::pair{"nsp", "true"}, {"max_positions", "64"}, {"dropout", "0"}, {"attention_dropout", "0"}})
    config.set(key, value);
  torch::manual_seed(5);
  MaskedLmTask task;
  task.setup(config, {(*dir_ / "data").string(), (*dir_ / "nsp_overfit").string(), {Split::kTrain, Split::kValid}});
  Batch b;
  for (int64_t i = 0; i < task.num_batches(Split::kTrain, 0) && !b.num_tokens; ++i) {
    auto candidate = task.make_batch(Split::kTrain, 0, i);
    const auto next = (candidate.tensors.at("nsp_labels") == 0).sum().item<int64_t>();
    if (next > 0 && next < candidate.tensors.at("nsp_labels").size(0)) b = candidate;
  }
  ASSERT_GT(b.num_tokens, 0) << "no batch holds both labels";
  torch::optim::Adam adam(task.model()->parameters(), torch::optim::AdamOptions(0.01));
  for (int step = 0; step < 150; ++step) {
    adam.zero_grad();
    (task.loss(b).loss_sum / b.num_tokens).backward();
    adam.step();
  }
  task.model()->eval();
  torch::NoGradGuard no_grad;
  const auto out = task.bert()(b.tensors.at("input"), b.tensors.at("segments"), b.tensors.at("masked"));
  EXPECT_LT(torch::cross_entropy_loss(out.nsp_logits, b.tensors.at("nsp_labels")).item<double>(), 0.05);
  EXPECT_TRUE(torch::equal(out.nsp_logits.argmax(-1), b.tensors.at("nsp_labels")));
  EXPECT_LT(torch::cross_entropy_loss(out.mlm_logits, b.tensors.at("targets")).item<double>(), 0.1);
  const auto m = task.evaluate(Split::kValid, {});
  EXPECT_GE(m.at("nsp_accuracy").value, 0.0);
  EXPECT_LT(m.at("mlm_loss").value, m.at("loss").value);
}

// Task-adaptive pre-training (Gururangan et al. 2020): a masked_lm run continues another's on a
// task's labelled train.tsv. It reads the sentences (both of a pair) and never the labels, and
// refuses a dev file; it starts from the run's tokenizer, sizes and weights (this config's own
// sizes give way, a size given on the command line does not) and trains on.
TEST_F(MaskedLmTaskTest, TaskAdaptivePretrainingContinuesARunOnATasksTrainingText) {
  const auto base_run = (*dir_ / "tapt_base").string();
  {
    auto base = tiny_config();
    for (auto [key, value] : {std::pair{"max_steps", "2"}, {"valid_interval", "100"}, {"log_interval", "100"}})
      base.set(key, value);
    torch::manual_seed(3);
    MaskedLmTask task;
    task.setup(base, {(*dir_ / "data").string(), base_run, {Split::kTrain, Split::kValid}});
    ASSERT_EQ(Trainer(task, base, "masked_lm", base_run).train(false), 0);
  }
  auto base = load_run(base_run + "/checkpoint_last.pt", torch::kCPU);
  const auto& base_task = dynamic_cast<MaskedLmTask&>(*base.task);

  // Pairs with labels; the label words appear nowhere in the sentences.
  const auto tsv = *dir_ / "tsv";
  fs::create_directories(tsv);
  std::string train = "index\tsentence1\tsentence2\tlabel\n";
  for (int i = 0; i < 60; ++i)
    train += std::to_string(i) + "\tthe king went to the city " + std::to_string(i % 7) + "\tand the people saw him\t" +
             (i % 2 ? "entailment" : "not_entailment") + "\n";
  atomic_write_text((tsv / "train.tsv").string(), train);
  atomic_write_text((tsv / "dev.tsv").string(), train);
  const std::vector<std::string> tapt = {"--task", "masked_lm", "--init_from", base_run, "--corpus_format", "tsv",
                                         "--train_file", "train.tsv", "--tsv_columns", "4", "--text_column", "sentence1",
                                         "--text_b_column", "sentence2", "--label_column", "label", "--valid_every", "5",
                                         "--max_steps", "4", "--valid_interval", "2", "--log_interval", "100"};
  auto config = Config::resolve(task_schema("masked_lm"), "", tapt);
  const auto tapt_run = (*dir_ / "tapt").string();
  MaskedLmTask task;
  testing::internal::CaptureStdout();
  task.setup(config, {tsv.string(), tapt_run, {Split::kTrain, Split::kValid}});
  const auto out = testing::internal::GetCapturedStdout();
  EXPECT_NE(out.find("init_from " + base_run + "/checkpoint_last.pt (masked_lm, step 2): loaded"), std::string::npos) << out;
  EXPECT_EQ(task.tokenizer().serialized(), base_task.tokenizer().serialized());
  for (const auto* key : {"d_model", "num_heads", "num_layers", "ffn_dim", "max_positions", "vocab_size"})
    EXPECT_EQ(config.get(key), base.config.get(key)) << key;
  auto theirs = base.task->model()->named_parameters();
  for (const auto& p : task.model()->named_parameters())
    EXPECT_TRUE(torch::equal(p.value(), theirs[p.key()])) << p.key();
  // The corpus: 60 rows x 2 sentences, every 5th held out; no label was read as text.
  int64_t train_pieces = 0;
  for (const auto& s : task.sequences(Split::kTrain)) train_pieces += static_cast<int64_t>(s.size());
  EXPECT_GT(train_pieces, 0);
  for (const auto& s : task.sequences(Split::kTrain))
    EXPECT_EQ(task.tokenizer().decode(s).find("entailment"), std::string::npos);
  ASSERT_EQ(Trainer(task, config, "masked_lm", tapt_run).train(false), 0);
  auto continued = load_run(tapt_run + "/checkpoint_last.pt", torch::kCPU);
  EXPECT_EQ(continued.header.state.step, 4);
  EXPECT_FALSE(torch::equal(continued.task->model()->named_parameters()["bert.embeddings.token.weight"],
                            theirs["bert.embeddings.token.weight"]));

  // A dev file, a size chosen against the run's, and a run of another task are refused by name.
  auto dev = tapt;
  dev[7] = "dev.tsv";
  auto e = test::user_error_of([&] {
    auto c = Config::resolve(task_schema("masked_lm"), "", dev);
    MaskedLmTask t;
    t.setup(c, {tsv.string(), (*dir_ / "tapt_dev").string(), {Split::kTrain, Split::kValid}});
  });
  EXPECT_NE(e.find("config key 'train_file': " + (tsv / "dev.tsv").string() + " looks like a dev file"), std::string::npos) << e;
  auto wider = tapt;
  wider.insert(wider.end(), {"--d_model", "32"});
  e = test::user_error_of([&] {
    auto c = Config::resolve(task_schema("masked_lm"), "", wider);
    MaskedLmTask t;
    t.setup(c, {tsv.string(), (*dir_ / "tapt_wider").string(), {Split::kTrain, Split::kValid}});
  });
  EXPECT_NE(e.find("config key 'd_model': is 32 but the init_from run " + base_run + " was pre-trained with d_model = 16"),
            std::string::npos) << e;
}
