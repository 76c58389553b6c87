#include "train/tasks/masked_lm_data.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <numeric>
#include <random>

#include "core/excerpt.h"
#include "core/io.h"
#include "datasets/english_corpus.h"
#include "datasets/labeled_text.h"
#include "datasets/special_ids.h"
#include "datasets/wordpiece_model.h"
#include "train/tasks/run_tokenizer.h"
#include "train/tasks/word_corpus.h"

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

void adopt_bert_keys(const std::string& dir, const Config& source, Config& config) {
  // The keys as the binder writes them, so that equal values compare equal (1 and 01, true and 1).
  const auto canonical = [](const Config& c) {
    Config texts;
    write_options(bind_options<BertKeys>(c), texts);
    return texts;
  };
  const Config theirs = canonical(source), ours = canonical(config);
  for (const auto& [key, pretrained] : theirs.values()) {
    const std::string& mine = ours.get(key);
    if (mine == pretrained || key == "dropout" || key == "attention_dropout") continue;  // dropout is the new run's
    // A preset's sizes (presets/bert-finetune: bert-mini-english's) give way to the run's, as
    // Hugging Face's from_pretrained reads the checkpoint's config; a size the user chose does not.
    if (config.chosen(key))
      throw UserError("config key '" + key + "': is " + mine + " but the init_from run " + dir + " was pre-trained with " +
                      key + " = " + pretrained + "; a model started from it keeps its architecture (leave the key out "
                      "or set it to " + pretrained + ")");
    config.set(key, pretrained);
  }
}

void PretrainingCorpusOptions::bind(OptionBinder& b) { bind_keys(b, /*masking=*/true); }

void PretrainingCorpusOptions::bind_keys(OptionBinder& b, bool masking) {
  b.field("train_file", train_file,
          "corpus file in data_dir: one sentence per line, or with corpus_format = tsv a task's labelled training TSV");
  b.field("corpus_format", corpus_format,
          "text: train_file holds one sentence per line; tsv: train_file is a task's training file laid out as the "
          "keys tsv_columns, text_column, text_b_column, label_column and tsv_header say (as classification reads it), "
          "whose sentences (both of a pair) are the corpus and whose labels are never used: task-adaptive pre-training "
          "(Gururangan et al. 2020), with init_from",
          {"text", "tsv"});
  b.field("valid_every", valid_every, "line i (0-based) with (i+1) % valid_every == 0 is held out for validation",
          at_least(2));
  b.field("vocab_size", vocab_size, "SentencePiece vocabulary size, at most ([CLS] [SEP] [MASK] included)", at_least(8));
  if (masking) bind_masking(b);
  b.field("batch_size", batch_size, "packed sequences per batch", positive());
  b.field("normalize_words", normalize_words,
          "the corpus is in the form `nlpzoo data english` writes (lowercase words, accents folded, no punctuation): "
          "corpus lines and fill-mask input are brought to it; false for a corpus that keeps case and punctuation");
}

void PretrainingCorpusOptions::bind_masking(OptionBinder& b) {
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
}

ConfigSchema pretraining_corpus_schema() {
  ConfigSchema s = schema_of<PretrainingCorpusOptions>();
  s.merge(tokenizer_schema())
      .merge(tsv_layout_schema())
      .merge(schema_of<BertKeys>())
      .set_default("activation", "gelu", "BERT: feed-forward activation (GELU, Devlin et al. sec. 3)")
      .set_default("positions", "learned", "BERT: learned absolute positions (the only kind BERT takes)")
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
// Salts of the mask, pair and sampling-noise streams: train draws depend on (seed, epoch,
// example), valid on the example only.
constexpr uint64_t kTrainMask = 1, kValidMask = 2, kTrainPair = 3, kValidPair = 4, kTrainNoise = 5, kValidNoise = 6;
// The sentences of a task's labelled training file, a pair's two in turn (its labels are read,
// for the layout's check, and dropped). Pre-training on a dev or test file would leak the
// sentences the fine-tuned model is scored on.
std::vector<std::string> task_sentences(const std::string& path, const TsvLayout& layout, const std::string& task_name) {
  const std::string stem = fs::path(path).stem().string();
  for (const std::string held : {"dev", "test", "valid"})
    if (stem.rfind(held, 0) == 0)
      throw UserError("config key 'train_file': " + path + " looks like a " + held + " file; " + task_name +
                      " with corpus_format = tsv reads a task's training file only (train.tsv), never the text it "
                      "is evaluated on");
  const auto examples = read_labeled_text(path, layout);
  std::vector<std::string> out;
  for (size_t i = 0; i < examples.sentences.size(); ++i) {
    out.push_back(examples.sentences[i]);
    if (!examples.sentences_b.empty()) out.push_back(examples.sentences_b[i]);
  }
  return out;
}
}  // namespace

void MaskedLmData::setup(PretrainingCorpusOptions& options, bool nsp, int64_t max_positions, uint64_t seed,
                         const Config& config, const TaskContext& context, const std::string& task_name) {
  nsp_ = nsp;
  normalize_words_ = options.normalize_words;
  batch_size_ = options.batch_size;
  max_positions_ = max_positions;
  seed_ = seed;
  const int64_t valid_every = options.valid_every;
  if (context.splits.count(Split::kTest))
    throw UserError(task_name + " has no test split, only valid (held out by valid_every): evaluate --split valid");

  const std::string path = context.data_dir + "/" + options.train_file;
  const bool need_tokenizer_text = restored_spm_.empty() && !context.resume;
  std::map<Split, std::vector<std::string>> lines;
  if (!context.splits.empty() || need_tokenizer_text) {
    auto all = options.corpus_format == "tsv" ? task_sentences(path, tsv_layout(config), task_name) : [&] {
      require_file(path, task_name + " corpus, one sentence per line (make one with: nlpzoo data english --out DIR)");
      return read_lines(path);
    }();
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
    throw UserError("the run's SentencePiece model has no [CLS] [SEP] [MASK] at ids 4-6 (not made by " + task_name +
                    ")");
  // The model's size is the tokenizer's (a soft SentencePiece limit may give fewer pieces).
  options.vocab_size = tokenizer_->vocab_size();

  masking_ = MaskingOptions{};
  masking_.mask_prob = options.mask_prob;
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

void MaskedLmData::restore_artifacts(const std::map<std::string, std::string>& blobs) {
  auto spm = blobs.find("spm.model");
  if (spm != blobs.end()) restored_spm_ = spm->second;
}

const std::vector<TokenIds>& MaskedLmData::sequences(Split split) const { return loaded_split(sequences_, split); }

uint64_t MaskedLmData::example_seed(uint64_t train_salt, uint64_t valid_salt, Split split, int64_t epoch,
                                    int64_t k) const {
  return split == Split::kTrain
             ? mix_seed({train_salt, seed_, static_cast<uint64_t>(epoch), static_cast<uint64_t>(k)})
             : mix_seed({valid_salt, static_cast<uint64_t>(k)});
}

NextSentencePair MaskedLmData::example(Split split, int64_t epoch, int64_t k) const {
  if (!nsp_) {
    const auto& seq = sequences(split).at(k);
    return {{seq, TokenIds(seq.size(), 0), false}, false};
  }
  return next_sentence_pair(loaded_split(chunks_, split), static_cast<size_t>(k), max_positions_,
                            example_seed(kTrainPair, kValidPair, split, epoch, k));
}

int64_t MaskedLmData::num_examples(Split split) const {
  return static_cast<int64_t>(nsp_ ? loaded_split(chunks_, split).size() : sequences(split).size());
}

int64_t MaskedLmData::num_batches(Split split) const {
  const auto n = num_examples(split);
  return (n + batch_size_ - 1) / batch_size_;
}

std::vector<int64_t> MaskedLmData::batch_examples(Split split, int64_t epoch, int64_t index) const {
  const int64_t n = num_examples(split);
  const int64_t begin = index * batch_size_, end = std::min(n, begin + batch_size_);
  if (index < 0 || begin >= n)
    throw std::out_of_range("masked-LM batch " + std::to_string(index) + " of the " + to_string(split) +
                            " split does not exist");
  // The train order of epoch e: a permutation drawn from (seed, e), the same on every remake.
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  if (split == Split::kTrain) {
    std::mt19937_64 rng(mix_seed({seed_, static_cast<uint64_t>(epoch)}));
    std::shuffle(order.begin(), order.end(), rng);
  }
  return std::vector<int64_t>(order.begin() + begin, order.begin() + end);
}

Batch MaskedLmData::make_batch(Split split, int64_t epoch, int64_t index, bool sampling_noise) const {
  const auto order = batch_examples(split, epoch, index);
  const auto B = static_cast<int64_t>(order.size());
  std::vector<NextSentencePair> examples;
  examples.reserve(B);
  int64_t S = 0;
  for (int64_t r = 0; r < B; ++r) {
    examples.push_back(example(split, epoch, order[r]));
    S = std::max<int64_t>(S, static_cast<int64_t>(examples.back().input.tokens.size()));
  }
  auto input = torch::full({B, S}, kPadId, torch::kLong);  // [B, S]
  auto segments = torch::zeros({B, S}, torch::kLong);      // [B, S]
  auto masked = torch::zeros({B, S}, torch::kBool);         // [B, S]
  auto nsp_labels = torch::zeros({B}, torch::kLong);        // [B]
  std::vector<int64_t> targets;
  std::vector<float> uniform;
  auto in = input.accessor<int64_t, 2>();
  auto seg = segments.accessor<int64_t, 2>();
  auto m = masked.accessor<bool, 2>();
  auto labels = nsp_labels.accessor<int64_t, 1>();
  for (int64_t r = 0; r < B; ++r) {
    const int64_t k = order[r];
    const auto& pair = examples[r].input;
    const auto sample = mask_sequence(pair.tokens, masking_, example_seed(kTrainMask, kValidMask, split, epoch, k));
    for (size_t t = 0; t < sample.input.size(); ++t) {
      in[r][t] = sample.input[t];
      seg[r][t] = pair.segments[t];
    }
    for (int64_t t : sample.positions) m[r][t] = true;
    targets.insert(targets.end(), sample.targets.begin(), sample.targets.end());
    labels[r] = examples[r].is_next ? 0 : 1;
    if (sampling_noise) {
      std::mt19937_64 rng(example_seed(kTrainNoise, kValidNoise, split, epoch, k));
      std::uniform_real_distribution<double> u(0.0, 1.0);
      for (size_t i = 0; i < sample.positions.size(); ++i)
        uniform.push_back(std::min(static_cast<float>(u(rng)), std::nextafter(1.0f, 0.0f)));
    }
  }
  Batch batch;
  const auto N = static_cast<int64_t>(targets.size());
  batch.tensors = {{"input", input},
                   {"segments", segments},
                   {"masked", masked},
                   {"targets", torch::from_blob(targets.data(), {N}, torch::kLong).clone()}};  // [N]
  if (nsp_) batch.tensors["nsp_labels"] = nsp_labels;
  if (sampling_noise) batch.tensors["uniform"] = torch::from_blob(uniform.data(), {N}, torch::kFloat).clone();  // [N]
  batch.split = split;
  batch.index = index;
  batch.num_examples = N;
  batch.num_tokens = N;
  return batch;
}

std::map<std::string, std::string> MaskedLmData::export_files(const std::string& config_ini) const {
  auto files = tokenizer_export_files(*tokenizer_);
  files["config.ini"] = config_ini;
  return files;
}

std::vector<std::string> MaskedLmData::names(const std::map<std::string, std::string>& files) {
  std::vector<std::string> out;
  for (const auto& [name, bytes] : files) out.push_back(name);
  return out;
}

std::vector<int64_t> MaskedLmData::input_pieces(const std::string& line) const {
  std::string text = line;
  if (normalize_words_) {
    static const std::string kMask = "[MASK]";
    text.clear();
    for (size_t from = 0;;) {
      const size_t at = line.find(kMask, from);
      text += normalize_words(line.substr(from, at == std::string::npos ? std::string::npos : at - from));
      if (at == std::string::npos) break;
      text += " " + kMask + " ";
      from = at + kMask.size();
    }
  }
  const auto pieces = tokenizer_->encode(text);
  const std::string bare_space = "\xE2\x96\x81";
  // A WordPiece vocabulary has no "▁": piece_to_id then gives [UNK], which must stay.
  int64_t space = tokenizer_->piece_to_id(bare_space);
  if (tokenizer_->id_to_piece(space) != bare_space) space = -1;
  std::vector<int64_t> out;
  for (size_t i = 0; i < pieces.size(); ++i)
    if (!(pieces[i] == space && i + 1 < pieces.size() && pieces[i + 1] == kMaskId)) out.push_back(pieces[i]);
  return out;
}

std::vector<std::vector<MaskCandidate>> MaskedLmData::fill_mask(const std::string& line, int64_t k,
                                                                const torch::Device& device,
                                                                const MlmLogits& mlm_logits) const {
  if (k < 1) throw UserError("fill-mask: -k must be at least 1, got " + std::to_string(k));
  const auto pieces = input_pieces(line);
  if (std::find(pieces.begin(), pieces.end(), kMaskId) == pieces.end())
    throw UserError("fill-mask: no [MASK] in the line \"" + excerpt(line) +
                    "\" (write [MASK] where a piece should be guessed)");
  auto input = pair_input(pieces, {}, max_positions_);
  const auto masks_in = [](const std::vector<int64_t>& ids) { return std::count(ids.begin(), ids.end(), kMaskId); };
  const int64_t asked = masks_in(pieces), seen = masks_in(input.tokens);
  if (input.truncated)
    std::cerr << "warning: the line has " << pieces.size() + 2 << " pieces with [CLS] and [SEP], more than max_positions = "
              << max_positions_ << ", and was cut"
              << (seen < asked ? "; [MASK] " + std::to_string(seen + 1) + (asked > seen + 1 ? "-" + std::to_string(asked) : "") +
                                     " of " + std::to_string(asked) + " fall beyond it and get no answer"
                               : "")
              << ": \"" << excerpt(line) << "\"" << std::endl;
  torch::NoGradGuard no_grad;
  auto tokens = torch::tensor(input.tokens, torch::kLong).unsqueeze(0).to(device);  // [1, S]
  auto masked = tokens == kMaskId;                                                   // [1, S]
  auto logits = mlm_logits(tokens, torch::zeros_like(tokens), masked);              // [M, V]
  const int64_t top = std::min<int64_t>(k, logits.size(1));
  auto [probs, ids] = torch::softmax(logits.to(torch::kFloat), -1).topk(top, -1);    // [M, top]
  probs = probs.cpu();
  ids = ids.cpu();
  std::vector<std::vector<MaskCandidate>> out(static_cast<size_t>(asked));  // the cut masks' rows stay empty
  for (int64_t m = 0; m < logits.size(0); ++m)
    for (int64_t j = 0; j < top; ++j)
      out[m].push_back({tokenizer_->id_to_piece(ids[m][j].item<int64_t>()), probs[m][j].item<double>()});
  return out;
}

}  // namespace nlpzoo
