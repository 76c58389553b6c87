#include "train/tasks/masked_lm_task.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <numeric>
#include <random>

#include "datasets/english_corpus.h"
#include "core/io.h"
#include "datasets/special_ids.h"
#include "datasets/wordpiece_model.h"
#include "train/evaluation.h"
#include "train/tasks/component_schemas.h"
#include "train/tasks/run_tokenizer.h"
#include "train/tasks/word_corpus.h"
#include "train/trainer.h"

namespace fs = std::filesystem;

namespace nlpzoo {

TransformerStackOptions BertKeys::bert_stack() {
  TransformerStackOptions t;
  t.activation = Activation::kGelu;
  t.positions = PositionType::kLearned;
  t.attention_dropout = 0.1;
  return t;
}

void BertKeys::bind(OptionBinder& b) {
  stack.bind(b);
  b.field("num_layers", num_layers, "BERT: encoder layers L", positive());
  b.field("max_positions", max_positions,
          "BERT: longest sequence in pieces, [CLS] and [SEP] included (position table rows)", at_least(3));
  b.field("type_vocab_size", type_vocab_size, "BERT: segment (token type) embeddings", positive());
  b.field("layer_norm_eps", layer_norm_eps,
          "BERT: the epsilon of every LayerNorm (1e-12 in the published checkpoints nlpzoo import bert reads)", positive());
  if (stack.positions != PositionType::kLearned)
    throw UserError("config key 'positions': BERT uses learned absolute positions; it needs positions = learned, got " +
                    to_string(stack.positions));
}

BertOptions BertKeys::options(int64_t vocab_size) const {
  return BertOptions()
      .vocab_size(vocab_size)
      .d_model(stack.d_model)
      .num_heads(stack.num_heads)
      .num_layers(num_layers)
      .ffn_dim(stack.ffn_dim)
      .dropout(stack.dropout)
      .attention_dropout(stack.attention_dropout)
      .activation(stack.activation)
      .pre_norm(stack.pre_norm)
      .max_positions(max_positions)
      .type_vocab_size(type_vocab_size)
      .layer_norm_eps(layer_norm_eps)
      .pad_id(kPadId);
}

void MaskedLmOptions::bind(OptionBinder& b) {
  b.field("train_file", train_file, "corpus file in data_dir: one sentence per line");
  b.field("valid_every", valid_every, "line i (0-based) with (i+1) % valid_every == 0 is held out for validation",
          at_least(2));
  b.field("vocab_size", vocab_size, "SentencePiece vocabulary size, at most ([CLS] [SEP] [MASK] included)", at_least(8));
  b.field("nsp", nsp,
          "BERT: next-sentence prediction (pairs [CLS] A [SEP] B [SEP], B the following text or, half of the time, text "
          "from elsewhere; a pooler and a 2-way head; RoBERTa drops it)");
  b.field("mask_prob", mask_prob,
          "share of the non-special positions of a sequence that are predicted (BERT: 0.15); of those 80% become "
          "[MASK], 10% a random piece, 10% stay",
          {[](double x) -> std::string {
            if (!(x >= 0 && x < 1)) return "must be in [0, 1)";
            return x > 0 ? "" : "must be in (0, 1)";
          }});
  b.field("whole_word_masking", whole_word_masking,
          "mask all pieces of a word together (a word: a piece starting with the SentencePiece space mark and the "
          "pieces after it that do not)");
  b.field("batch_size", batch_size, "packed sequences per batch", positive());
  b.field("normalize_words", normalize_words,
          "the corpus is in the form `nlpzoo data english` writes (lowercase words, accents folded, no punctuation): "
          "corpus lines and fill-mask input are brought to it; false for a corpus that keeps case and punctuation");
}

ConfigSchema masked_lm_schema() {
  ConfigSchema s = schema_of<MaskedLmOptions>();
  s.merge(tokenizer_schema())
      .merge(schema_of<BertKeys>())
      .set_default("activation", "gelu", "BERT: feed-forward activation (GELU, Devlin et al. sec. 3)")
      .set_default("positions", "learned", "BERT: learned absolute positions (the only kind masked_lm takes)")
      .set_default("attention_dropout", "0.1", "BERT: dropout on attention weights");
  return s;
}

std::vector<std::string> parameters_without_weight_decay(const torch::nn::Module& model) {
  std::vector<std::string> names;
  for (const auto& p : model.named_parameters())
    if (p.value().dim() < 2) names.push_back(p.key());
  return names;
}

namespace {
// Salts of the mask and pair streams: train draws depend on (seed, epoch, example), valid on the
// example only.
constexpr uint64_t kTrainMask = 1, kValidMask = 2, kTrainPair = 3, kValidPair = 4;
}  // namespace

void MaskedLmTask::setup(Config& config, const TaskContext& context) {
  // Every bad value is reported before the slow work (tokenizer, corpus) starts.
  const auto bert = bind_options<BertKeys>(config);
  auto options = bind_options<MaskedLmOptions>(config);
  nsp_ = options.nsp;
  normalize_words_ = options.normalize_words;
  batch_size_ = options.batch_size;
  const int64_t valid_every = options.valid_every;
  const double mask_prob = options.mask_prob;
  seed_ = static_cast<uint64_t>(run_keys(config).seed);
  if (context.splits.count(Split::kTest))
    throw UserError("masked_lm has no test split, only valid (held out by valid_every): evaluate --split valid");

  const std::string path = context.data_dir + "/" + options.train_file;
  const bool need_tokenizer_text = restored_spm_.empty() && !context.resume;
  std::map<Split, std::vector<std::string>> lines;
  if (!context.splits.empty() || need_tokenizer_text) {
    require_file(path, "masked_lm corpus, one sentence per line (make one with: nlpzoo data english --out DIR)");
    auto all = read_lines(path);
    for (int64_t i = 0; i < static_cast<int64_t>(all.size()); ++i) {
      auto& line = all[i];
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (normalize_words_) line = normalize_words(line);  // a no-op on `nlpzoo data english`'s own lines
      lines[held_out_line(i, valid_every) ? Split::kValid : Split::kTrain].push_back(std::move(line));
    }
  }

  if (!context.run_dir.empty()) fs::create_directories(context.run_dir);
  // The tokenizer learns from the train split only, written out for SentencePiece's trainer.
  const std::string spm_input = context.run_dir + "/spm_input.txt";
  tokenizer_ = run_tokenizer(
      "spm",
      [&] {
        std::string text;
        for (const auto& line : lines[Split::kTrain]) text += line + "\n";
        atomic_write_text(spm_input, text);
        return std::vector<std::string>{spm_input};
      },
      restored_spm_, options.vocab_size, config, context, bert_special_pieces());
  if (!context.run_dir.empty()) fs::remove(spm_input);
  if (tokenizer_->id_to_piece(kMaskId) != "[MASK]")
    throw UserError("the run's SentencePiece model has no [CLS] [SEP] [MASK] at ids 4-6 (not made by masked_lm)");
  // The model's size is the tokenizer's (a soft SentencePiece limit may give fewer pieces).
  options.vocab_size = tokenizer_->vocab_size();
  write_options(options, config);
  model_ = BertForPreTraining(bert.options(options.vocab_size).nsp(nsp_));
  max_positions_ = bert.max_positions;
  if (nsp_ && max_positions_ < 5)
    throw UserError("config key 'max_positions': nsp = true needs room for [CLS] A [SEP] B [SEP], at least 5, got " +
                    std::to_string(max_positions_));

  masking_ = MaskingOptions{};
  masking_.mask_prob = mask_prob;
  masking_.vocab_size = tokenizer_->vocab_size();
  masking_.first_random_id = kMaskId + 1;
  if (options.whole_word_masking) {
    // SentencePiece marks a word's first piece with "▁"; WordPiece marks the others with "##".
    const bool wordpiece = is_wordpiece_bytes(tokenizer_->serialized());
    const auto starts_word = [&](const std::string& piece) {
      return wordpiece ? piece.rfind("##", 0) != 0 : piece.rfind("\xE2\x96\x81", 0) == 0;
    };
    masking_.word_start.resize(masking_.vocab_size);
    for (int64_t id = 0; id < masking_.vocab_size; ++id)
      masking_.word_start[id] = id == kUnkId || starts_word(tokenizer_->id_to_piece(id));
  }

  for (Split split : context.splits) {
    std::vector<TokenIds> encoded;
    encoded.reserve(lines[split].size());
    for (const auto& line : lines[split]) encoded.push_back(tokenizer_->encode(line));
    // Sequences hold [CLS] ... [SEP] (2 specials), pairs [CLS] A [SEP] B [SEP] (3).
    const int64_t specials = nsp_ ? 3 : 2;
    int64_t truncated = 0;
    size_t count = 0;
    if (nsp_) {
      auto grouped = chunk_sentences(std::move(encoded), max_positions_ - specials);
      truncated = grouped.truncated;
      count = grouped.chunks.size();
      chunks_[split] = std::move(grouped.chunks);
      sequences_[split].clear();
    } else {
      auto packed = pack_sentences(std::move(encoded), max_positions_);
      truncated = packed.truncated;
      count = packed.sequences.size();
      sequences_[split] = std::move(packed.sequences);
    }
    if (truncated > 0)
      std::cout << "warning: " << truncated << " sentences of the " << to_string(split) << " split in " << path
                << " are longer than max_positions - " << specials << " = " << max_positions_ - specials
                << " pieces and were truncated" << std::endl;
    if (count < (nsp_ ? 2u : 1u))
      throw UserError(path + ": the " + to_string(split) + " split has " +
                      (count == 0 ? std::string("no text") : "one sequence of text, and nsp = true needs two") + " (" +
                      (split == Split::kValid ? "line i with (i+1) % valid_every=" + std::to_string(valid_every) +
                                                    " == 0; lower valid_every or use a larger corpus"
                                              : std::string("the lines not held out")) + ")");
  }
}

const std::vector<TokenIds>& MaskedLmTask::sequences(Split split) const { return loaded_split(sequences_, split); }

NextSentencePair MaskedLmTask::example(Split split, int64_t epoch, int64_t k) const {
  if (!nsp_) {
    const auto& seq = sequences(split).at(k);
    return {{seq, TokenIds(seq.size(), 0), false}, false};
  }
  const uint64_t pair_seed = split == Split::kTrain
                                 ? mix_seed({kTrainPair, seed_, static_cast<uint64_t>(epoch), static_cast<uint64_t>(k)})
                                 : mix_seed({kValidPair, static_cast<uint64_t>(k)});
  return next_sentence_pair(loaded_split(chunks_, split), static_cast<size_t>(k), max_positions_, pair_seed);
}

int64_t MaskedLmTask::num_examples(Split split) const {
  return static_cast<int64_t>(nsp_ ? loaded_split(chunks_, split).size() : sequences(split).size());
}

int64_t MaskedLmTask::num_batches(Split split, int64_t /*epoch*/) {
  const auto n = num_examples(split);
  return (n + batch_size_ - 1) / batch_size_;
}

Batch MaskedLmTask::make_batch(Split split, int64_t epoch, int64_t index) {
  const int64_t n = num_examples(split);
  const int64_t begin = index * batch_size_, end = std::min(n, begin + batch_size_);
  if (index < 0 || begin >= n)
    throw std::out_of_range("masked_lm batch " + std::to_string(index) + " of the " + to_string(split) +
                            " split does not exist");
  // The train order of epoch e: a permutation drawn from (seed, e), the same on every remake.
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  if (split == Split::kTrain) {
    std::mt19937_64 rng(mix_seed({seed_, static_cast<uint64_t>(epoch)}));
    std::shuffle(order.begin(), order.end(), rng);
  }
  const int64_t B = end - begin;
  std::vector<NextSentencePair> examples;
  examples.reserve(B);
  int64_t S = 0;
  for (int64_t r = 0; r < B; ++r) {
    examples.push_back(example(split, epoch, order[begin + r]));
    S = std::max<int64_t>(S, static_cast<int64_t>(examples.back().input.tokens.size()));
  }
  auto input = torch::full({B, S}, kPadId, torch::kLong);  // [B, S]
  auto segments = torch::zeros({B, S}, torch::kLong);      // [B, S]
  auto masked = torch::zeros({B, S}, torch::kBool);         // [B, S]
  auto nsp_labels = torch::zeros({B}, torch::kLong);        // [B]
  std::vector<int64_t> targets;
  auto in = input.accessor<int64_t, 2>();
  auto seg = segments.accessor<int64_t, 2>();
  auto m = masked.accessor<bool, 2>();
  auto labels = nsp_labels.accessor<int64_t, 1>();
  for (int64_t r = 0; r < B; ++r) {
    const int64_t k = order[begin + r];
    const uint64_t mask_seed = split == Split::kTrain
                                   ? mix_seed({kTrainMask, seed_, static_cast<uint64_t>(epoch), static_cast<uint64_t>(k)})
                                   : mix_seed({kValidMask, static_cast<uint64_t>(k)});
    const auto& pair = examples[r].input;
    const auto sample = mask_sequence(pair.tokens, masking_, mask_seed);
    for (size_t t = 0; t < sample.input.size(); ++t) {
      in[r][t] = sample.input[t];
      seg[r][t] = pair.segments[t];
    }
    for (int64_t t : sample.positions) m[r][t] = true;
    targets.insert(targets.end(), sample.targets.begin(), sample.targets.end());
    labels[r] = examples[r].is_next ? 0 : 1;
  }
  Batch batch;
  const auto N = static_cast<int64_t>(targets.size());
  batch.tensors = {{"input", input},
                   {"segments", segments},
                   {"masked", masked},
                   {"targets", torch::from_blob(targets.data(), {N}, torch::kLong).clone()}};  // [N]
  if (nsp_) batch.tensors["nsp_labels"] = nsp_labels;
  batch.split = split;
  batch.index = index;
  batch.num_examples = N;
  batch.num_tokens = N;
  return batch;
}

LossOutput MaskedLmTask::loss(const Batch& batch) {
  const auto& targets = batch.tensors.at("targets");
  auto out = model_(batch.tensors.at("input"), batch.tensors.at("segments"), batch.tensors.at("masked"));
  const auto summed = torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum);
  const auto mlm = torch::nn::functional::cross_entropy(out.mlm_logits, targets, summed);
  LossOutput result;
  result.loss_sum = mlm;
  result.num_tokens = batch.num_tokens;
  const bool eval = !model_->is_training();
  if (eval) result.metric_sums["accuracy"] = (out.mlm_logits.argmax(-1) == targets).sum();
  if (out.nsp_logits.defined() && batch.tensors.count("nsp_labels")) {
    const auto& labels = batch.tensors.at("nsp_labels");
    const auto nsp = torch::nn::functional::cross_entropy(out.nsp_logits, labels, summed);
    result.loss_sum = mlm + nsp * (static_cast<double>(batch.num_tokens) / static_cast<double>(labels.size(0)));
    if (eval) {
      result.metric_sums["mlm_loss"] = mlm.detach();
      result.metric_sums["nsp"] = torch::stack({(out.nsp_logits.argmax(-1) == labels).sum().to(torch::kDouble),
                                                torch::tensor(static_cast<double>(labels.size(0)),
                                                              torch::TensorOptions(torch::kDouble).device(labels.device()))});
    }
  }
  return result;
}

std::map<std::string, double> MaskedLmTask::validation_metrics(const std::map<std::string, torch::Tensor>& sums,
                                                               int64_t examples) const {
  std::map<std::string, double> out;
  for (const auto& [name, sum] : sums) {
    if (name == "nsp") {
      out["nsp_accuracy"] = sum[0].item<double>() / std::max(1.0, sum[1].item<double>());
    } else {
      out[name] = sum.item<double>() / static_cast<double>(examples);
      if (name == "mlm_loss") out["mlm_perplexity"] = std::exp(out[name]);
    }
  }
  return out;
}

Task::TrainingProfile MaskedLmTask::training_profile() const {
  TrainingProfile p;
  p.unit = "masked";
  p.perplexity = true;
  p.loss_unit = "nats/masked token";
  p.d_model = model_ ? model_->bert->options().d_model() : 0;
  if (model_) p.no_weight_decay = parameters_without_weight_decay(*model_);
  return p;
}

std::map<std::string, std::string> MaskedLmTask::artifacts() const { return {{"spm.model", tokenizer_->serialized()}}; }

void MaskedLmTask::restore_artifacts(const std::map<std::string, std::string>& blobs) {
  auto spm = blobs.find("spm.model");
  if (spm != blobs.end()) restored_spm_ = spm->second;
}

Metrics MaskedLmTask::evaluate(Split split, const EvaluationOptions& options) {
  SplitLoss split_loss;
  auto m = loss_metrics(*this, split, options.device, "", &split_loss);
  m.add({"accuracy", split_loss.metrics.at("accuracy"), Better::kHigher, 4, ""});
  if (nsp_) {
    m.add({"mlm_loss", split_loss.metrics.at("mlm_loss"), Better::kLower, 4, "nats/masked token"});
    m.add({"mlm_perplexity", split_loss.metrics.at("mlm_perplexity"), Better::kLower, 2, ""});
    m.add({"nsp_accuracy", split_loss.metrics.at("nsp_accuracy"), Better::kHigher, 4, ""});
  }
  return m;
}

}  // namespace nlpzoo
