#include "train/tasks/translation_task.h"

#include <cmath>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "datasets/batching.h"
#include "core/io.h"
#include "datasets/special_ids.h"
#include "infer/search.h"
#include "train/losses.h"
#include "train/tasks/run_tokenizer.h"

namespace fs = std::filesystem;

namespace nlpzoo {

TranslationOptions::TranslationOptions() : length_penalty(SearchOptions{}.length_penalty) {}

void TranslationOptions::bind(OptionBinder& b) {
  b.field("src_lang", src_lang, "source language: reads <data_dir>/<split>.<src_lang> for the splits train and "
                                "valid (training) and test (evaluate), e.g. train.es valid.es test.es");
  b.field("tgt_lang", tgt_lang, "target language: reads <data_dir>/<split>.<tgt_lang>, aligned by line with the source");
  b.field("src_vocab_size", src_vocab_size,
          "source SentencePiece vocabulary size, at most (the model takes the size the tokenizer reaches)", at_least(8));
  b.field("tgt_vocab_size", tgt_vocab_size, "target SentencePiece vocabulary size, at most (= output classes)",
          at_least(8));
  b.field("max_positions", max_positions,
          "longest sequence in pieces, EOS/BOS included; longer training pairs are skipped, longer valid/test "
          "sources are cut (translate: see --max-positions)",
          at_least(2));
  b.field("arch", arch, "model: rnn (attention encoder-decoder, keys cell..input_feeding) or transformer "
                        "(Vaswani et al. 2017, keys d_model..share_embeddings)",
          architecture_names(seq2seq_architectures()));
  b.field("label_smoothing", label_smoothing, "label smoothing epsilon of the training loss (0 = plain cross-entropy)",
          rate());
  b.field("length_penalty", length_penalty,
          "this model's decoding default for evaluate and translate (their --length-penalty overrides it): alpha of "
          "beam search's score log P / length^alpha",
          {[](double x) -> std::string { return std::isfinite(x) ? "" : "must be a finite number"; }});
  b.field("max_tokens", max_tokens, "tokens per batch, padding included (source or target, the longer)", positive());
  b.field("max_sentences", max_sentences, "sentence pairs per batch at most (0 = no limit)", at_least(0));
}

ConfigSchema translation_schema() {
  ConfigSchema s = schema_of<TranslationOptions>();
  s.merge(tokenizer_schema());
  add_architecture_keys(s, seq2seq_architectures());
  s.set_default("cell", "gru", "recurrent cell of encoder and decoder")
      .set_default("embed_dim", "256", "token embedding size (source and target)")
      .set_default("hidden_size", "512", "decoder state size; a bidirectional encoder uses hidden_size/2 per direction")
      .set_default("num_layers", "1", "stacked recurrent layers in encoder and decoder")
      .set_default("dropout", "0.2");
  return s;
}

Tokenizer TranslationTask::tokenizer_for(const std::vector<std::string>& langs, const std::string& which,
                                         int64_t vocab_size, const Config& config, const TaskContext& context) {
  const auto restored = restored_.find("spm." + which + ".model");
  const std::string name = langs.size() == 1 ? langs[0] : "joint";
  return run_tokenizer(
      "spm." + name, [&] { return training_files(context, langs, "training text for the " + name + " tokenizer"); },
      restored != restored_.end() ? restored->second : "", vocab_size, config, context);
}

void TranslationTask::setup(Config& config, const TaskContext& context) {
  // Every bad value is reported before the slow work (tokenizers, corpus) starts.
  options_ = bind_options<TranslationOptions>(config);
  const auto& arch = seq2seq_architecture(options_.arch);
  const bool shared_vocabulary = arch.check(config);
  seed_ = static_cast<uint64_t>(run_keys(config).seed);

  const std::string src_lang = options_.src_lang, tgt_lang = options_.tgt_lang;
  // A corpus named otherwise (val.de) fails here, not after the tokenizers are trained.
  std::vector<std::string> split_names;
  for (Split split : context.splits) split_names.push_back(to_string(split));
  require_parallel_corpus(context.data_dir, split_names, {src_lang, tgt_lang});
  // Read (and the line counts compared) before the tokenizers train, for the same reason.
  for (Split split : context.splits) {
    const std::string base = context.data_dir + "/" + to_string(split) + ".";
    raw_[split] = read_parallel_corpus(base + src_lang, base + tgt_lang);
  }
  if (!context.run_dir.empty()) fs::create_directories(context.run_dir);
  if (shared_vocabulary) {
    // One vocabulary for both sides (Press & Wolf 2017), stored under both artifact names so
    // that loading, translation and export need no special case.
    tgt_tok_ = tokenizer_for({src_lang, tgt_lang}, "tgt", options_.tgt_vocab_size, config, context);
    src_tok_ = tgt_tok_;
  } else {
    src_tok_ = tokenizer_for({src_lang}, "src", options_.src_vocab_size, config, context);
    tgt_tok_ = tokenizer_for({tgt_lang}, "tgt", options_.tgt_vocab_size, config, context);
  }
  // The model's sizes are the tokenizers' (a soft SentencePiece limit may give fewer pieces).
  options_.src_vocab_size = src_tok_->vocab_size();
  options_.tgt_vocab_size = tgt_tok_->vocab_size();
  write_options(options_, config);
  model_ = arch.build(config, {options_.src_vocab_size, options_.tgt_vocab_size, options_.max_positions});

  for (Split split : context.splits) {
    auto& out = examples_[split];
    int64_t skipped = 0;
    for (size_t i = 0; i < raw_[split].src.size(); ++i) {
      Example e{src_tok_->encode(raw_[split].src[i]), tgt_tok_->encode(raw_[split].tgt[i])};
      const bool too_long = static_cast<int64_t>(std::max(e.src.size(), e.tgt.size())) + 1 > options_.max_positions;
      if (split == Split::kTrain && too_long) {
        ++skipped;
        continue;
      }
      out.push_back(std::move(e));
    }
    if (skipped > 0)
      std::cout << to_string(split) << ": skipped " << skipped << " of " << raw_[split].src.size()
                << " pairs longer than max_positions=" << options_.max_positions << std::endl;
    if (split == Split::kTrain && out.empty())
      throw UserError(context.data_dir + "/" + to_string(split) + "." + src_lang + ": no training pair fits max_positions=" + std::to_string(options_.max_positions));
  }
}

const ParallelCorpus& TranslationTask::raw_split(Split split) const {
  return loaded_split(raw_, split);
}

const std::vector<std::vector<int64_t>>& TranslationTask::plan(Split split, int64_t epoch) {
  return plans_.get(
      split, epoch,
      [&] {
        const auto& examples = loaded_split(examples_, split);
        std::vector<int64_t> lengths;
        lengths.reserve(examples.size());
        for (const auto& e : examples)
          lengths.push_back(std::min<int64_t>(options_.max_positions, std::max(e.src.size(), e.tgt.size()) + 1));
        return lengths;
      },
      options_.max_tokens, options_.max_sentences, seed_);
}

int64_t TranslationTask::num_batches(Split split, int64_t epoch) { return plan(split, epoch).size(); }

Batch TranslationTask::make_batch(Split split, int64_t epoch, int64_t index) {
  const auto& rows = plan(split, epoch).at(index);
  const auto& examples = loaded_split(examples_, split);
  std::vector<std::vector<int64_t>> src, tgt_in, tgt_out;
  Batch batch;
  for (int64_t i : rows) {
    const auto& e = examples[i];
    src.push_back(append_eos(e.src, options_.max_positions));
    tgt_out.push_back(append_eos(e.tgt, options_.max_positions));
    std::vector<int64_t> in{kBosId};
    in.insert(in.end(), e.tgt.begin(), e.tgt.begin() + (tgt_out.back().size() - 1));
    tgt_in.push_back(std::move(in));
    batch.num_tokens += tgt_out.back().size();
  }
  batch.num_examples = rows.size();
  batch.tensors = {{"src", pad_sequences(src, kPadId)},
                   {"tgt_in", pad_sequences(tgt_in, kPadId)},
                   {"tgt_out", pad_sequences(tgt_out, kPadId)}};
  return batch;
}

LossOutput TranslationTask::loss(const Batch& batch) {
  const auto& src = batch.tensors.at("src");
  const auto& tgt_in = batch.tensors.at("tgt_in");
  auto logits = model_->forward(src, tgt_in);  // [B, T, V]
  auto loss = sequence_cross_entropy(logits, batch.tensors.at("tgt_out"), kPadId,
                                     model()->is_training() ? options_.label_smoothing : 0.0);
  return {loss, batch.num_tokens};
}

int64_t TranslationTask::max_positions() const {
  return model_->bounded_positions() ? options_.max_positions : 0;
}

Task::TrainingProfile TranslationTask::training_profile() const {
  TrainingProfile p;
  p.d_model = model_->d_model();
  return p;
}

std::map<std::string, std::string> TranslationTask::artifacts() const {
  return {{"spm.src.model", src_tok_->serialized()}, {"spm.tgt.model", tgt_tok_->serialized()}};
}

void TranslationTask::restore_artifacts(const std::map<std::string, std::string>& blobs) { restored_ = blobs; }

}  // namespace nlpzoo
