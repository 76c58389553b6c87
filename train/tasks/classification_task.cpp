#include "train/tasks/classification_task.h"

#include <cmath>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "datasets/batching.h"
#include "core/io.h"
#include "datasets/special_ids.h"
#include "datasets/word_vectors.h"
#include "train/tasks/component_schemas.h"
#include "train/tasks/masked_lm_data.h"  // PretrainingCorpusOptions
#include "train/tasks/pretrained_encoder.h"
#include "train/tasks/registry.h"        // load_run
#include "train/tasks/run_tokenizer.h"

namespace fs = std::filesystem;

namespace nlpzoo {

void ClassificationOptions::bind(OptionBinder& b) {
  b.field("objective", objective,
          "classification (cross-entropy over the train split's labels) or regression (one output, squared error; "
          "numeric labels, e.g. STS-B)",
          objective_names());
  b.field("vocab_size", vocab_size,
          "SentencePiece vocabulary size, at most (the model takes the size the tokenizer reaches)", at_least(8));
  b.field("lowercase", lowercase, "lowercase (ASCII) every sentence before tokenizing (SST-2 is lowercased)");
  b.field("split_punctuation", split_punctuation,
          "split punctuation and clitics ('s, n't) from words, as SST-2's Penn-Treebank tokenization does, before "
          "tokenizing");
  b.field("normalize_words", normalize_words,
          "read text as `nlpzoo data english` writes its corpus: split clitics joined back (\"does n't\" -> "
          "\"doesn't\"), lowercase words, punctuation dropped (overrides lowercase and split_punctuation). auto = as "
          "the init_from run read its corpus (its normalize_words), else false",
          {"auto", "true", "false"});
  b.field("max_positions", max_positions,
          "longest input in pieces (a pair: A <eos> B; bert: [CLS] A [SEP] B [SEP], and the position table's rows); "
          "longer ones are cut, the longer side of a pair first, with a warning",
          positive());
  b.field("arch", arch,
          "model: avg_emb (mean of the word embeddings -> linear), rnn (recurrent encoder, keys cell..pooling, -> "
          "linear) or bert (BERT encoder, masked_lm's size keys, pooled [CLS] -> linear)",
          architecture_names(classifier_architectures()));
  b.field("init_from", init_from,
          "bert: a pre-trained masked_lm run folder (its encoder) or electra run folder (its discriminator) whose "
          "tokenizer and encoder weights start the model's bert.*, and whose size keys it takes (\"\" = random init)");
  b.field("pretrained_vectors", pretrained_vectors,
          "word2vec text or binary file whose vectors initialise the embedding rows of matching pieces when a run "
          "starts (\"\" = random init)");
  b.field("freeze_embeddings", freeze_embeddings, "keep the embeddings fixed (not trained)");
  elmo.bind(b);
  b.field("max_tokens", max_tokens, "tokens per batch, padding included", positive());
  b.field("max_sentences", max_sentences, "sentences per batch at most (0 = no limit)", at_least(0));
}

ConfigSchema classification_schema() {
  ConfigSchema s = schema_of<ClassificationOptions>();
  s.merge(tsv_layout_schema()).merge(tokenizer_schema());
  add_architecture_keys(s, classifier_architectures());
  s.set_default("activation", "gelu", "bert: feed-forward activation")
      .set_default("positions", "learned", "bert: learned absolute positions (the only kind BERT takes)")
      .set_default("attention_dropout", "0.1", "bert: dropout on attention weights")
      .set_default("type_vocab_size", "2", "bert: segment (token type) embeddings")
      .set_default("embed_dim", "128", "token embedding size (= the dimension of pretrained_vectors, if given)")
      .set_default("hidden_size", "128", "rnn: state size per direction")
      .set_default("dropout", "0.3", "dropout before the output layer (rnn: also on embeddings and between layers; "
                                     "bert: also on the embeddings and every sub-layer)")
      .set_default("num_layers", "1", "rnn: stacked recurrent layers; bert: encoder layers");
  return s;
}

std::string ClassificationTask::split_path(const std::string& data_dir, Split split) {
  return data_dir + "/" + (split == Split::kValid ? std::string("dev") : to_string(split)) + ".tsv";
}

void ClassificationTask::setup(Config& config, const TaskContext& context) {
  // Every bad value is reported before the slow work (tokenizer, corpus, vectors) starts.
  options_ = bind_options<ClassificationOptions>(config);
  const auto& arch = classifier_architecture(options_.arch);
  objective_ = make_objective(options_.objective);
  seed_ = static_cast<uint64_t>(run_keys(config).seed);
  const TsvLayout layout = tsv_layout(config);
  pair_ = !layout.text_b.empty();
  bert_layout_ = arch.layout == InputLayout::kBert;
  // Vectors and init_from initialise a new run only; a resumed or loaded run has its trained weights.
  const bool fresh = !context.resume && restored_.empty();
  const std::string vectors_path = fresh ? options_.pretrained_vectors : "";
  const std::string& init_from = options_.init_from;
  std::optional<PretrainedEncoder> pretrained;
  if (!arch.word_vectors) {
    if (!options_.pretrained_vectors.empty())
      throw UserError("config key 'pretrained_vectors': arch = " + arch.name + " takes no word vectors (init_from "
                      "loads a pre-trained encoder); leave it empty");
    if (options_.freeze_embeddings)
      throw UserError("config key 'freeze_embeddings': arch = " + arch.name + " fine-tunes every weight; set it to "
                      "false");
  }
  if (arch.pretrained_encoder) {
    if (fresh && !init_from.empty()) {
      pretrained = read_pretrained_encoder(init_from, config);
    } else if (context.resume && restored_.empty() && !init_from.empty() &&
               !fs::exists(context.run_dir + "/checkpoint_last.pt")) {
      // Reusing a run folder that has no checkpoint yet: a data-parallel rank other than 0 at the
      // start, which takes the sizes here and rank 0's loaded weights by broadcast. (A resumed
      // run's config holds the sizes already, and init_from is never read again.)
      read_pretrained_encoder(init_from, config, /*with_weights=*/false);
    }
    options_ = bind_options<ClassificationOptions>(config);  // the pre-trained run's sizes
  } else if (!init_from.empty()) {
    std::string loaders;
    for (const auto& a : classifier_architectures())
      if (a.pretrained_encoder) loaders += (loaders.empty() ? "" : " or ") + a.name;
    throw UserError("config key 'init_from': only arch = " + loaders + " loads a pre-trained run (arch is " +
                    arch.name + "); leave it empty");
  }
  std::optional<ElmoRun> elmo;
  if (!options_.elmo.elmo.empty()) {
    if (!arch.elmo_features) {
      std::string readers;
      for (const auto& a : classifier_architectures())
        if (a.elmo_features) readers += (readers.empty() ? "" : " or ") + a.name;
      throw UserError("config key 'elmo': only arch = " + readers + " reads ELMo features (arch is " + arch.name +
                      "); leave it empty");
    }
    if (fresh) {
      elmo = read_elmo_run(options_.elmo.elmo, config);
    } else if (context.resume && restored_.empty() && !fs::exists(context.run_dir + "/checkpoint_last.pt")) {
      read_elmo_run(options_.elmo.elmo, config, /*with_weights=*/false);  // as init_from above
    }
    options_ = bind_options<ClassificationOptions>(config);  // the elmo run's sizes and text form
  }
  arch.check(config, pair_);
  // A run resolves auto once (adopt_architecture, from init_from) and keeps the value in its config.
  if (options_.normalize_words == "auto") options_.normalize_words = "false";
  normalization_.lowercase = options_.lowercase;
  normalization_.split_punctuation = options_.split_punctuation;
  normalization_.corpus_words = options_.normalize_words == "true";
  // The fewest positions an input takes: one piece per sentence and the separators.
  const int64_t least = bert_layout_ ? (pair_ ? 5 : 3) : (pair_ ? 3 : 1);
  if (options_.max_positions < least)
    throw UserError("config key 'max_positions': " + input_layout() + " needs at least " + std::to_string(least) +
                    " positions, got " + std::to_string(options_.max_positions));
  if (!vectors_path.empty()) {
    const auto header = read_word_vectors_header(vectors_path);
    const int64_t embed_dim = rnn_config(config).embed_dim;
    if (header.dim != embed_dim)
      throw UserError("config key 'embed_dim': is " + std::to_string(embed_dim) + " but the pretrained_vectors " +
                      vectors_path + " have dimension " + std::to_string(header.dim) + "; they must be equal");
  }

  if (!context.run_dir.empty()) fs::create_directories(context.run_dir);
  std::set<Split> splits = context.splits;
  if (fresh) splits.insert(Split::kTrain);  // labels and tokenizer come from the train split
  for (Split split : splits) raw_[split] = read_labeled_text(split_path(context.data_dir, split), layout);
  labels_ = make_labels(context);
  tokenizer_ = make_tokenizer(config, context, pretrained ? pretrained->spm_model : elmo ? elmo->spm_model : "");
  // The model's size is the tokenizer's (a soft SentencePiece limit may give fewer pieces).
  options_.vocab_size = tokenizer_->vocab_size();
  write_options(options_, config);
  objective_->set_labels(labels_);
  const int64_t outputs = objective_->outputs();
  if (bert_layout_ && (tokenizer_->vocab_size() <= kSepId || tokenizer_->id_to_piece(kClsId) != "[CLS]" ||
                       tokenizer_->id_to_piece(kSepId) != "[SEP]"))
    throw UserError("the run's SentencePiece model has no [CLS] [SEP] at ids 4, 5 (arch = " + arch.name +
                    " needs a model made with them: by masked_lm or electra, or by an arch = " + arch.name + " run)");
  model_ = arch.build(config, {options_.vocab_size, outputs, options_.freeze_embeddings,
                               options_.elmo.bilm_options(options_.vocab_size)});
  if (elmo) {
    const auto report = load_parameters_with_prefix(*model(), elmo->tensors, "elmo.bilm.", elmo->checkpoint,
                                                    "the classifier's biLM", "elmo");
    std::cout << "elmo " << elmo->checkpoint << " (bilm, step " << elmo->step << "): loaded " << report.loaded.size()
              << " tensors (" << report.loaded_values << " parameters, frozen)" << std::endl;
  }
  if (pretrained) {
    load_pretrained(*pretrained);
  } else if (fresh && arch.pretrained_encoder) {
    std::cout << "arch = " << arch.name << " without init_from: the encoder starts at random (the ablation; "
              << "--init_from RUN_DIR fine-tunes a pre-trained masked_lm or electra run)" << std::endl;
  }
  if (!vectors_path.empty()) init_from_vectors(vectors_path);

  for (Split split : context.splits) {
    const auto& raw = raw_.at(split);
    if (pair_ != !raw.sentences_b.empty())  // a checkpoint's layout, files of another
      throw UserError(raw.path + ": read as " + (pair_ ? "sentence pairs" : "single sentences") +
                      " but holds the other (text_b_column)");
    auto& tokens = tokens_[split];
    int64_t cut = 0, first_cut = 0;
    for (size_t i = 0; i < raw.sentences.size(); ++i) {
      objective_->add_gold(split, raw.labels[i], raw.path + ":" + std::to_string(raw.lines[i]));
      bool was_cut = false;
      tokens.push_back(encode(raw.sentences[i], pair_ ? &raw.sentences_b[i] : nullptr, &was_cut));
      if (was_cut && cut++ == 0) first_cut = raw.lines[i];
    }
    std::cout << to_string(split) << ": " << raw.sentences.size() << (pair_ ? " sentence pairs" : " sentences")
              << " from " << raw.path << std::endl;
    if (cut > 0)
      std::cerr << "warning: " << raw.path << ": " << cut << " input(s) longer than max_positions (" << options_.max_positions
                << " pieces, " << input_layout() << ") were cut" << (pair_ ? ", the longer side first" : "")
                << "; the first at line " << first_cut << std::endl;
  }
}

std::vector<std::string> ClassificationTask::make_labels(const TaskContext& context) {
  std::vector<std::string> labels;
  if (!objective_->classes()) return labels;  // scores, no classes
  const std::string run_labels = context.run_dir + "/labels.txt";
  if (auto it = restored_.find("labels.txt"); it != restored_.end()) {
    std::istringstream in(it->second);
    for (std::string l; std::getline(in, l);) labels.push_back(l);
  } else if (context.run_dir.empty()) {
    throw UserError("no labels: the checkpoint holds none");
  } else if (context.resume) {
    labels = read_lines(run_labels);
  } else {
    const auto& train = raw_.at(Split::kTrain);
    labels = sorted_label_set(train.labels);
    if (labels.size() < 2)
      throw UserError(train.path + ": every sentence has the label '" + labels.front() +
                      "'; a classifier needs at least two labels");
    std::string text;
    for (const auto& l : labels) text += l + "\n";
    atomic_write_text(run_labels, text);
  }
  return labels;
}

Tokenizer ClassificationTask::make_tokenizer(const Config& config, const TaskContext& context,
                                             const std::string& pretrained_spm) {
  const auto restored = restored_.find("spm.model");
  if (restored == restored_.end() && !pretrained_spm.empty()) {
    // The pre-trained run's model, as it is: its pieces are the encoder's embedding rows.
    if (!context.run_dir.empty()) atomic_write_text(context.run_dir + "/spm.model", pretrained_spm);
    return Tokenizer::from_serialized(pretrained_spm);
  }
  // SentencePiece reads files; it learns from the sentences as the model will see them.
  const std::string text_path = context.run_dir + "/spm.train.txt";
  auto tokenizer = run_tokenizer(
      "spm",
      [&] {
        // Both sides of a pair: RTE's hypotheses and STS-B's second sentences are input too.
        const auto& train = raw_.at(Split::kTrain);
        std::string text;
        for (const auto* side : {&train.sentences, &train.sentences_b})
          for (const auto& s : *side) text += normalize_text(s, normalization_) + "\n";
        atomic_write_text(text_path, text);
        return std::vector<std::string>{text_path};
      },
      restored != restored_.end() ? restored->second : "", options_.vocab_size, config, context,
      bert_layout_ ? bert_special_pieces() : std::vector<std::string>{});
  if (!context.run_dir.empty()) fs::remove(text_path);
  return tokenizer;
}

void ClassificationTask::init_from_vectors(const std::string& path) {
  const auto vectors = read_word_vectors(path);
  // Special pieces keep their rows: the pad row must stay zero.
  std::vector<std::string> names(tokenizer_->vocab_size());
  for (int64_t id = kEosId + 1; id < tokenizer_->vocab_size(); ++id) names[id] = tokenizer_->id_to_piece(id);
  const int64_t n = copy_vectors_into_rows(vectors, names, model_->word_embeddings());
  std::cout << "initialised " << n << " of " << tokenizer_->vocab_size() << " embedding rows from " << path
            << std::endl;
}

std::vector<int64_t> ClassificationTask::encode(const std::string& sentence, const std::string* b, bool* cut) const {
  const auto pieces = [&](const std::string& text) {
    auto ids = tokenizer_->encode(normalize_text(text, normalization_));
    if (ids.empty()) ids.push_back(kUnkId);
    return ids;
  };
  const auto a = pieces(sentence);
  const auto ids_b = b != nullptr ? pieces(*b) : std::vector<int64_t>{};
  // Positions the separators take: <eos> between a pair; BERT's [CLS] first and [SEP] after each.
  const int64_t separators = bert_layout_ ? (b != nullptr ? 3 : 2) : (b != nullptr ? 1 : 0);
  const auto room = static_cast<size_t>(options_.max_positions - separators);
  // BERT's truncate_seq_pair: one piece at a time off the longer side (B on a tie).
  size_t na = a.size(), nb = ids_b.size();
  const bool was_cut = na + nb > room;
  while (na + nb > room) (na > nb || b == nullptr ? na : nb) -= 1;
  std::vector<int64_t> ids;
  ids.reserve(na + nb + separators);
  // BERT's layout belongs to the task: a special piece inside the text reads as <unk>.
  const auto text = [&](const std::vector<int64_t>& from, size_t n) {
    for (size_t i = 0; i < n; ++i)
      ids.push_back(bert_layout_ && from[i] >= kClsId && from[i] <= kMaskId ? kUnkId : from[i]);
  };
  if (bert_layout_) ids.push_back(kClsId);
  text(a, na);
  if (bert_layout_) ids.push_back(kSepId);
  if (b != nullptr) {
    if (!bert_layout_) ids.push_back(kEosId);
    text(ids_b, nb);
    if (bert_layout_) ids.push_back(kSepId);
  }
  if (cut != nullptr) *cut = was_cut;
  return ids;
}

const LabeledText& ClassificationTask::raw_split(Split split) const {
  return loaded_split(raw_, split);
}

const std::vector<int64_t>& ClassificationTask::gold(Split split) const {
  return objective_->class_ids(split);
}

const std::vector<std::vector<int64_t>>& ClassificationTask::plan(Split split, int64_t epoch) {
  return plans_.get(
      split, epoch,
      [&] {
        const auto& tokens = loaded_split(tokens_, split);
        std::vector<int64_t> lengths;
        lengths.reserve(tokens.size());
        for (const auto& t : tokens) lengths.push_back(static_cast<int64_t>(t.size()));
        return lengths;
      },
      options_.max_tokens, options_.max_sentences, seed_);
}

int64_t ClassificationTask::num_batches(Split split, int64_t epoch) { return plan(split, epoch).size(); }

Batch ClassificationTask::make_batch(Split split, int64_t epoch, int64_t index) {
  const auto& rows = plan(split, epoch).at(index);
  const auto& tokens = tokens_.at(split);
  std::vector<std::vector<int64_t>> sequences;
  for (int64_t i : rows) sequences.push_back(tokens[i]);
  Batch batch;
  batch.split = split;
  batch.index = index;
  batch.num_examples = batch.num_tokens = static_cast<int64_t>(rows.size());
  batch.tensors = {{"tokens", pad_sequences(sequences, kPadId)}, {"rows", torch::tensor(rows, torch::kInt64)}};
  if (bert_layout_) batch.tensors["segments"] = pair_segments(batch.tensors.at("tokens"));
  objective_->add_targets(batch, rows);
  return batch;
}

LossOutput ClassificationTask::loss(const Batch& batch) {
  const auto segments = batch.tensors.find("segments");
  auto logits = this->logits(batch.tensors.at("tokens"),
                             segments != batch.tensors.end() ? segments->second : torch::Tensor());  // [B, C] (regression: C = 1)
  // Validation statistics cost nothing worth keeping during training.
  const bool statistics = !model()->is_training();
  return objective_->loss(logits, batch, static_cast<int64_t>(tokens_.at(batch.split).size()), statistics);
}

std::map<std::string, double> ClassificationTask::validation_metrics(const std::map<std::string, torch::Tensor>& sums,
                                                                     int64_t /*examples*/) const {
  return objective_->validation_metrics(sums);
}

Task::TrainingProfile ClassificationTask::training_profile() const {
  TrainingProfile p;
  p.unit = "sentences";
  p.perplexity = false;  // a per-sentence cross-entropy: exp of it measures nothing
  model_->describe(p);
  objective_->describe(p);
  return p;
}

std::vector<ClassPrediction> ClassificationTask::predict(const std::vector<std::string>& sentences,
                                                         const torch::Device& device, int64_t batch_size) {
  if (batch_size < 1) throw UserError("--batch-size: must be at least 1");
  std::vector<std::vector<int64_t>> encoded;
  for (size_t i = 0; i < sentences.size(); ++i) {
    const auto& s = sentences[i];
    bool cut = false;
    if (pair_) {
      const size_t tab = s.find('\t');
      if (tab == std::string::npos || s.find('\t', tab + 1) != std::string::npos)
        throw UserError("input " + std::to_string(i + 1) + ": a sentence-pair model takes two sentences separated by "
                        "one tab, got '" + s.substr(0, 80) + "'");
      const std::string b = s.substr(tab + 1);
      encoded.push_back(encode(s.substr(0, tab), &b, &cut));
    } else {
      encoded.push_back(encode(s, nullptr, &cut));
    }
    if (cut && !warned_cut_) {
      warned_cut_ = true;
      std::cerr << "warning: input " << i + 1 << " is longer than max_positions (" << options_.max_positions
                << " pieces, " << input_layout() << ") and was cut" << (pair_ ? ", the longer side first" : "")
                << " (said once)" << std::endl;
    }
  }
  return predict_ids(encoded, device, batch_size);
}

std::vector<ClassPrediction> ClassificationTask::predict_ids(const std::vector<std::vector<int64_t>>& encoded,
                                                             const torch::Device& device, int64_t batch_size) {
  if (batch_size < 1) throw UserError("--batch-size: must be at least 1");
  std::vector<int64_t> lengths;
  for (const auto& ids : encoded) lengths.push_back(static_cast<int64_t>(ids.size()));
  // Sorted by length (no shuffle), so a batch holds little padding.
  const auto batches = make_token_batches(lengths, /*max_tokens=*/batch_size * options_.max_positions,
                                          /*max_sentences=*/batch_size, /*shuffle=*/false, /*seed=*/0);
  const auto model = this->model();
  const bool was_training = model->is_training();
  model->eval();
  torch::NoGradGuard no_grad;
  std::vector<ClassPrediction> out(encoded.size());
  for (const auto& rows : batches) {
    std::vector<std::vector<int64_t>> sequences;
    for (int64_t i : rows) sequences.push_back(encoded[i]);
    const auto tokens = pad_sequences(sequences, kPadId);  // [B, T]
    auto logits = this->logits(tokens.to(device), bert_layout_ ? pair_segments(tokens).to(device) : torch::Tensor());  // [B, C]
    objective_->predict(logits, rows, out);
  }
  model->train(was_training);
  return out;
}

torch::Tensor ClassificationTask::logits(const torch::Tensor& tokens, const torch::Tensor& segments) {
  return model_->logits(tokens, segments);
}

std::string ClassificationTask::input_layout() const {
  if (bert_layout_) return pair_ ? "[CLS] A [SEP] B [SEP]" : "[CLS] A [SEP]";
  return pair_ ? "a pair A <eos> B" : "a sentence";
}

TextClassifierImpl& ClassificationTask::classifier() {
  auto* m = dynamic_cast<TextClassifierImpl*>(model().get());
  if (m == nullptr) throw UserError("arch = " + options_.arch + ": the model is not a word-embedding classifier");
  return *m;
}

BertForSequenceClassificationImpl& ClassificationTask::bert_classifier() {
  auto* m = dynamic_cast<BertForSequenceClassificationImpl*>(model().get());
  if (m == nullptr) throw UserError("arch = " + options_.arch + ": the model is not a BERT classifier");
  return *m;
}

torch::Tensor pair_segments(const torch::Tensor& tokens) {
  const auto sep = (tokens == kSepId).to(torch::kLong);  // [B, S]
  const auto before = sep.cumsum(/*dim=*/1) - sep;       // [SEP]s strictly before each position
  return ((before > 0) & (tokens != kPadId)).to(torch::kLong);
}

namespace {
// Makes `config` take the size keys of the pre-trained run `dir` (its resolved config `source`).
void adopt_architecture(const std::string& dir, const Config& source, Config& config);
}  // namespace

PretrainedEncoder read_pretrained_encoder(const std::string& dir, Config& config, bool with_weights) {
  const std::string what = "config key 'init_from': ";
  // The tasks whose runs hold an encoder to fine-tune: asked of the registry, not listed here.
  std::string pretraining_tasks;
  for (const auto& name : task_names())
    if (dynamic_cast<PretrainedBertEncoder*>(make_task(name).get()))
      pretraining_tasks += (pretraining_tasks.empty() ? "" : " or ") + name;
  const std::string expected = " (init_from names the folder of a pre-trained " + pretraining_tasks +
                               " run, e.g. checkpoints/bert-mini-english)";
  PretrainedEncoder source;
  source.checkpoint = run_to_start_from(dir, "init_from", expected);
  const auto header = read_checkpoint_header(source.checkpoint);
  if (!dynamic_cast<PretrainedBertEncoder*>(make_task(header.task).get()))
    throw UserError(what + dir + " is a run of task '" + header.task + "', not of " + pretraining_tasks +
                    ": fine-tuning starts from a pre-trained run's BERT encoder and tokenizer");
  source.config = Config::from_ini_text(task_schema(header.task), header.config, source.checkpoint + " (config)");
  adopt_architecture(dir, source.config, config);
  if (!with_weights) return source;
  // The checkpoint loader: the run's own config rebuilds its model, whose tensors must all fit.
  auto run = load_run(source.checkpoint, torch::kCPU);
  source.step = run.header.state.step;
  source.spm_model = run.header.artifacts.at("spm.model");
  auto& pretrained = dynamic_cast<PretrainedBertEncoder&>(*run.task);
  source.task = header.task;
  source.pooler_trained = pretrained.pooler_trained();
  source.encoder_role = pretrained.encoder_role();
  source.untrained_pooler_reason = pretrained.untrained_pooler_reason();
  for (const auto& p : pretrained.pretrained_encoder().named_parameters())
    source.tensors["bert." + p.key()] = p.value().detach();
  return source;
}

namespace {
void adopt_architecture(const std::string& dir, const Config& source, Config& config) {
  adopt_bert_keys(dir, source, config);
  const auto run = bind_options<PretrainingCorpusOptions>(source);
  auto options = bind_options<ClassificationOptions>(config);
  options.vocab_size = run.vocab_size;
  // The text as the encoder read it in pre-training: pieces it never saw (punctuation, when its
  // corpus had none) would reach it as <unk>. Hugging Face's tokenizers carry do_lower_case so.
  if (options.normalize_words == "auto") options.normalize_words = run.normalize_words ? "true" : "false";
  write_options(options, config);
}
}  // namespace

void ClassificationTask::load_pretrained(const PretrainedEncoder& source) {
  // The encoder is BERT's: the head, and a pooler that only NSP pre-training trains, start fresh.
  const auto report = load_parameters_with_prefix(
      *model(), source.tensors, "bert.", source.checkpoint, "the fine-tuned encoder", "init_from",
      [&](const std::string& name) { return !source.pooler_trained && name.rfind("bert.pooler.", 0) == 0; });
  std::cout << "init_from " << source.checkpoint << " (" << source.task << ", step " << source.step << "): loaded "
            << (source.encoder_role.empty() ? "" : source.encoder_role + ", ") << report.loaded.size() << " tensors ("
            << report.loaded_values << " parameters) of bert.embeddings and bert.encoder"
            << (source.pooler_trained ? " and bert.pooler" : "") << "; fresh (" << report.fresh_values
            << " parameters): head"
            << (source.pooler_trained ? "" : ", bert.pooler (" + source.untrained_pooler_reason + ")") << std::endl;
}

std::map<std::string, std::string> ClassificationTask::artifacts() const {
  std::string labels;
  for (const auto& l : labels_) labels += l + "\n";
  return {{"spm.model", tokenizer_->serialized()}, {"labels.txt", labels}};
}

void ClassificationTask::restore_artifacts(const std::map<std::string, std::string>& blobs) { restored_ = blobs; }

}  // namespace nlpzoo
