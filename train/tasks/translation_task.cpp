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
#include "train/tasks/component_schemas.h"
#include "train/tasks/run_tokenizer.h"

namespace fs = std::filesystem;

namespace nlpzoo {

ConfigSchema translation_schema() {
  std::ostringstream length_penalty;  // the search's own default, written once
  length_penalty << SearchOptions{}.length_penalty;
  ConfigSchema s;
  s.add("src_lang", "es", "source language: reads <data_dir>/<split>.<src_lang> for the splits train and valid "
                          "(training) and test (evaluate), e.g. train.es valid.es test.es")
      .add("tgt_lang", "en", "target language: reads <data_dir>/<split>.<tgt_lang>, aligned by line with the source")
      .add("src_vocab_size", "8000", "source SentencePiece vocabulary size, at most (the model takes the size the tokenizer reaches)")
      .add("tgt_vocab_size", "8000", "target SentencePiece vocabulary size, at most (= output classes)")
      .merge(tokenizer_schema())
      .add("max_positions", "64", "longest sequence in pieces, EOS/BOS included; longer training pairs are skipped, "
                                  "longer valid/test sources are cut (translate: see --max-positions)")
      .add("arch", "rnn", "model: rnn (attention encoder-decoder, keys cell..input_feeding) or transformer "
                          "(Vaswani et al. 2017, keys d_model..share_embeddings)", {"rnn", "transformer"})
      .merge(rnn_schema())
      .add("bidirectional", "true", "bidirectional encoder")
      .add("attention", "additive", "score(s, h): additive v^T tanh(W_s s + W_h h) (Bahdanau), "
                                    "dot s^T h, general s^T W h (Luong), none (fixed context)",
           {"none", "additive", "dot", "general"})
      .add("attention_dim", "512", "inner size of additive attention")
      .add("input_feeding", "false", "feed the previous attentional state into the decoder input (Luong)")
      .add("param_init", "0", "rnn: every parameter starts uniform in [-param_init, param_init] (OpenNMT-py's "
                              "param_init; Luong et al. 2015: 0.1); 0 keeps LibTorch's per-layer defaults")
      .merge(transformer_schema())
      .add("num_encoder_layers", "3", "transformer: encoder layers")
      .add("num_decoder_layers", "3", "transformer: decoder layers")
      .add("share_embeddings", "false", "transformer: one joint SentencePiece model over both languages (spm.joint.model, "
                                        "tgt_vocab_size pieces) and one embedding matrix for source, target and output")
      .add("label_smoothing", "0", "label smoothing epsilon of the training loss (0 = plain cross-entropy)")
      .add("length_penalty", length_penalty.str(),
           "this model's decoding default for evaluate and translate (their --length-penalty overrides it): alpha of "
           "beam search's score log P / length^alpha")
      .add("max_tokens", "3000", "tokens per batch, padding included (source or target, the longer)")
      .add("max_sentences", "0", "sentence pairs per batch at most (0 = no limit)");
  // After both merges: the two components share `dropout`.
  s.set_default("cell", "gru", "recurrent cell of encoder and decoder")
      .set_default("embed_dim", "256", "token embedding size (source and target)")
      .set_default("hidden_size", "512", "decoder state size; a bidirectional encoder uses hidden_size/2 per direction")
      .set_default("num_layers", "1", "stacked recurrent layers in encoder and decoder")
      .set_default("dropout", "0.2");
  return s;
}

Seq2SeqOptions seq2seq_options(const Config& c) {
  const RnnConfig rnn = rnn_config(c);
  Seq2SeqOptions o;
  o.src_vocab_size(c.get_int("src_vocab_size"))
      .tgt_vocab_size(c.get_int("tgt_vocab_size"))
      .embed_dim(rnn.embed_dim)
      .cell(rnn.cell)
      .hidden_size(rnn.hidden_size)
      .num_layers(rnn.num_layers)
      .bidirectional(c.get_bool("bidirectional"))
      .attention(parse_attention_type(c.get("attention")))
      .attention_dim(config_int_at_least(c, "attention_dim"))
      .input_feeding(c.get_bool("input_feeding"))
      .pad_id(kPadId)
      .dropout(rnn.dropout);
  if (o.bidirectional() && o.hidden_size() % 2 != 0)
    throw UserError("config key 'hidden_size': must be even with a bidirectional encoder (got " +
                    std::to_string(o.hidden_size()) + ")");
  return o;
}

TransformerOptions transformer_options(const Config& c) {
  const TransformerConfig t = transformer_config(c);
  TransformerOptions o;
  o.src_vocab_size(c.get_int("src_vocab_size"))
      .tgt_vocab_size(c.get_int("tgt_vocab_size"))
      .d_model(t.layer.d_model())
      .num_heads(t.layer.num_heads())
      .num_encoder_layers(config_int_at_least(c, "num_encoder_layers"))
      .num_decoder_layers(config_int_at_least(c, "num_decoder_layers"))
      .ffn_dim(t.layer.ffn_dim())
      .dropout(t.layer.dropout())
      .attention_dropout(t.layer.attention_dropout())
      .activation(t.layer.activation())
      .pre_norm(t.layer.pre_norm())
      .positions(t.positions)
      // Learned positions must cover the longest output search may produce (1.5 S + 10).
      .max_positions(std::max<int64_t>(256, 2 * c.get_int("max_positions") + 16))
      .relative_k(t.relative_k)
      .share_embeddings(c.get_bool("share_embeddings"))
      .pad_id(kPadId);
  return o;
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
  const bool transformer = config.get("arch") == "transformer";
  // Every bad value is reported before the slow work (tokenizers, corpus) starts.
  if (transformer) {
    transformer_options(config);
  } else {
    seq2seq_options(config);
    if (config.get_bool("share_embeddings"))
      throw UserError("config key 'share_embeddings': only arch = transformer shares embeddings");
  }
  max_positions_ = config_int_at_least(config, "max_positions", 2);
  max_tokens_ = config_int_at_least(config, "max_tokens");
  max_sentences_ = config_int_at_least(config, "max_sentences", 0);
  label_smoothing_ = config_rate(config, "label_smoothing");
  length_penalty_ = config.get_double("length_penalty");
  if (!std::isfinite(length_penalty_))
    throw UserError("config key 'length_penalty': must be a finite number, got " + config.get("length_penalty"));
  seed_ = static_cast<uint64_t>(config.get_int("seed"));
  for (const char* key : {"src_vocab_size", "tgt_vocab_size"}) config_int_at_least(config, key, 8);

  const std::string src_lang = config.get("src_lang"), tgt_lang = config.get("tgt_lang");
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
  if (transformer && config.get_bool("share_embeddings")) {
    // One vocabulary for both sides (Press & Wolf 2017), stored under both artifact names so
    // that loading, translation and export need no special case.
    tgt_tok_ = tokenizer_for({src_lang, tgt_lang}, "tgt", config.get_int("tgt_vocab_size"), config, context);
    src_tok_ = tgt_tok_;
  } else {
    src_tok_ = tokenizer_for({src_lang}, "src", config.get_int("src_vocab_size"), config, context);
    tgt_tok_ = tokenizer_for({tgt_lang}, "tgt", config.get_int("tgt_vocab_size"), config, context);
  }
  // The model's sizes are the tokenizers' (a soft SentencePiece limit may give fewer pieces).
  config.set("src_vocab_size", std::to_string(src_tok_->vocab_size()));
  config.set("tgt_vocab_size", std::to_string(tgt_tok_->vocab_size()));
  if (transformer) {
    transformer_ = TransformerSeq2Seq(transformer_options(config));
    module_ = transformer_.ptr();
    decoder_ = transformer_.get();
  } else {
    rnn_ = Seq2Seq(seq2seq_options(config));
    if (const double a = config_double_at_least(config, "param_init"); a > 0) rnn_->init_uniform(a);
    module_ = rnn_.ptr();
    decoder_ = rnn_.get();
  }

  for (Split split : context.splits) {
    auto& out = examples_[split];
    int64_t skipped = 0;
    for (size_t i = 0; i < raw_[split].src.size(); ++i) {
      Example e{src_tok_->encode(raw_[split].src[i]), tgt_tok_->encode(raw_[split].tgt[i])};
      const bool too_long = static_cast<int64_t>(std::max(e.src.size(), e.tgt.size())) + 1 > max_positions_;
      if (split == Split::kTrain && too_long) {
        ++skipped;
        continue;
      }
      out.push_back(std::move(e));
    }
    if (skipped > 0)
      std::cout << to_string(split) << ": skipped " << skipped << " of " << raw_[split].src.size()
                << " pairs longer than max_positions=" << max_positions_ << std::endl;
    if (split == Split::kTrain && out.empty())
      throw UserError(context.data_dir + "/" + to_string(split) + "." + src_lang + ": no training pair fits max_positions=" + std::to_string(max_positions_));
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
          lengths.push_back(std::min<int64_t>(max_positions_, std::max(e.src.size(), e.tgt.size()) + 1));
        return lengths;
      },
      max_tokens_, max_sentences_, seed_);
}

int64_t TranslationTask::num_batches(Split split, int64_t epoch) { return plan(split, epoch).size(); }

Batch TranslationTask::make_batch(Split split, int64_t epoch, int64_t index) {
  const auto& rows = plan(split, epoch).at(index);
  const auto& examples = loaded_split(examples_, split);
  std::vector<std::vector<int64_t>> src, tgt_in, tgt_out;
  Batch batch;
  for (int64_t i : rows) {
    const auto& e = examples[i];
    src.push_back(append_eos(e.src, max_positions_));
    tgt_out.push_back(append_eos(e.tgt, max_positions_));
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
  auto logits = rnn_ ? rnn_->forward(src, tgt_in) : transformer_->forward(src, tgt_in);
  auto loss = sequence_cross_entropy(logits, batch.tensors.at("tgt_out"), kPadId,
                                     module_->is_training() ? label_smoothing_ : 0.0);
  return {loss, batch.num_tokens};
}

int64_t TranslationTask::max_positions() const {
  return transformer_ && transformer_->options().positions() == PositionType::kLearned ? max_positions_ : 0;
}

Task::TrainingProfile TranslationTask::training_profile() const {
  TrainingProfile p;
  if (transformer_) p.d_model = transformer_->options().d_model();
  return p;
}

std::map<std::string, std::string> TranslationTask::artifacts() const {
  return {{"spm.src.model", src_tok_->serialized()}, {"spm.tgt.model", tgt_tok_->serialized()}};
}

void TranslationTask::restore_artifacts(const std::map<std::string, std::string>& blobs) { restored_ = blobs; }

}  // namespace nlpzoo
