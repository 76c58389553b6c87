#include "train/tasks/word2vec_task.h"

#include <iostream>
#include <stdexcept>

#include "core/io.h"
#include "models/embeddings/word2vec_sgd.h"

namespace nlpzoo {

ConfigSchema word2vec_schema() {
  ConfigSchema s;
  s.add("model", "skipgram", "skipgram: every (centre, context) pair of a window is an example, the context word's "
                             "vector predicting the centre word as word2vec.c and gensim update (with subwords the "
                             "centre word's n-grams predict the context word, as fastText); cbow: predict the centre "
                             "word from the mean of its context's vectors", {"skipgram", "cbow"})
      .add("objective", "ns", "output layer: softmax (full, O(V) per example), ns (negative sampling), hs "
                              "(hierarchical softmax over a Huffman tree of the counts)", {"softmax", "ns", "hs"})
      .add("dim", "100", "word vector size D")
      .add("window", "5", "maximum window: each centre word sees b ~ U{1..window} words on each side")
      .add("negative", "5", "ns: noise words per example, K")
      .add("ns_exponent", "0.75", "ns: noise distribution P_n(w) proportional to count(w)^ns_exponent")
      .add("sample", "1e-3", "subsampling threshold s: a word seen f times of T is kept with probability "
                             "min(1, (sqrt(f/(s*T)) + 1) * s*T/f); 0 = keep every word")
      .add("min_count", "5", "words seen fewer times in the train split are dropped from the vocabulary and the text")
      .add("batch_size", "10000", "corpus words (before subsampling, whole lines) per batch; the rate decays once "
                                   "per batch (word2vec.c: every 10000 words). With inplace_sgd the examples are "
                                   "sequential SGD steps, so any size is sound; with inplace_sgd = false the "
                                   "gradient is the sum over the batch's examples from the same parameters: keep "
                                   "it near 250 there (10000 diverges at lr 0.025, 1000 spikes)")
      .add("inplace_sgd", "true", "ns and hs: train with per-example SGD on the parameter rows in place, threads "
                                  "without locks (Hogwild), as word2vec.c; needs optimizer = sgd, ignores clip_norm. "
                                  "false: autograd and the optimizer (the reference path). softmax always uses autograd")
      .add("train_file", "english.txt", "corpus file in data_dir: one sentence per line, words separated by spaces")
      .add("valid_every", "500", "line i (0-based) with (i+1) % valid_every == 0 is held out for validation")
      .add("shuffle", "true", "visit the train batches in a different order every epoch (a stride permutation); "
                              "false: file order, as word2vec.c")
      .add("sparse", "true", "sparse gradients for the embedding matrices (only the rows a batch uses; needs "
                             "optimizer = sgd)")
      .add("minn", "3", "subwords: shortest character n-gram of '<word>' (UTF-8 characters), as fastText's -minn")
      .add("maxn", "0", "subwords: longest character n-gram; 0 = no subwords (plain word2vec), as fastText's -maxn 0; "
                        "fastText's default 6 with minn 3")
      .add("bucket", "2000000", "subwords: n-gram hash buckets, extra input rows after the words (FNV-1a mod "
                                "bucket); memory bucket * dim * 4 bytes");
  return s;
}

namespace {

// Line index where each batch starts (batches of whole lines holding >= batch_size words), then
// the number of lines.
std::vector<int64_t> plan_batches(const EncodedLines& lines, int64_t batch_size) {
  std::vector<int64_t> starts{0};
  int64_t words = 0;
  for (int64_t s = 0; s < lines.num_lines(); ++s) {
    words += lines.offsets[s + 1] - lines.offsets[s];
    if (words >= batch_size) {
      starts.push_back(s + 1);
      words = 0;
    }
  }
  if (starts.back() != lines.num_lines()) starts.push_back(lines.num_lines());
  return starts;
}

torch::Tensor to_tensor(std::vector<int64_t>& v) {
  return torch::from_blob(v.data(), {static_cast<int64_t>(v.size())}, torch::kLong).clone();
}

}  // namespace

void Word2VecTask::setup(Config& config, const TaskContext& context) {
  // Every bad value is reported before the corpus is read.
  Word2VecOptions options(1, config_int_at_least(config, "dim"));
  try {
    kind_ = parse_word2vec_model(config.get("model"));
    options.objective(parse_word2vec_objective(config.get("objective")));
  } catch (const std::invalid_argument& e) {
    throw UserError(std::string("config key 'model' or 'objective': ") + e.what());
  }
  options.model(kind_).sparse(config.get_bool("sparse")).ns_exponent(config.get_double("ns_exponent"));
  window_ = config_int_at_least(config, "window");
  const bool ns = options.objective() == Word2VecObjective::kNegativeSampling;
  negative_ = ns ? config_int_at_least(config, "negative") : 0;
  if (ns) options.negative(negative_);
  if (options.ns_exponent() < 0) throw UserError("config key 'ns_exponent': must not be negative");
  minn_ = config_int_at_least(config, "minn");
  maxn_ = config.get_int("maxn");
  if (maxn_ != 0 && maxn_ < minn_)
    throw UserError("config key 'maxn': must be 0 (no subwords) or at least minn = " + std::to_string(minn_) + ", got " +
                    config.get("maxn"));
  bucket_ = maxn_ > 0 ? config_int_at_least(config, "bucket") : 0;
  options.bucket(bucket_);
  const double sample = config.get_double("sample");
  if (sample < 0) throw UserError("config key 'sample': must be 0 (no subsampling) or positive, got " + config.get("sample"));
  const int64_t min_count = config_int_at_least(config, "min_count");
  batch_size_ = config_int_at_least(config, "batch_size");
  const int64_t valid_every = config_int_at_least(config, "valid_every", 2);
  seed_ = config.get_int("seed");
  shuffle_ = config.get_bool("shuffle");
  sparse_ = options.sparse();
  in_place_ = config.get_bool("inplace_sgd") && options.objective() != Word2VecObjective::kSoftmax;
  // The corpus, split into train and held-out lines, and its vocabulary.
  auto corpus = load_word_corpus({"word2vec", config.get("train_file"), min_count, valid_every}, context, restored_vocab_);
  vocab_ = std::move(corpus.vocab);
  restored_vocab_.clear();

  options.vocab_size(vocab_.size());
  model_ = Word2Vec(options, vocab_.counts());
  if (maxn_ > 0) subwords_ = subword_rows(vocab_.words(), minn_, maxn_, bucket_);
  sampler_ = ns ? &std::dynamic_pointer_cast<NegativeSamplingObjectiveImpl>(model_->objective)->sampler() : nullptr;
  keep_.resize(vocab_.size());
  for (int64_t w = 0; w < vocab_.size(); ++w) keep_[w] = keep_probability(vocab_.counts()[w], vocab_.total(), sample);

  for (auto& [split, lines] : corpus.lines) {
    auto& d = splits_[split];
    d.lines = std::move(lines);
    d.batch_starts = plan_batches(d.lines, batch_size_);
  }
  if (splits_.count(Split::kTrain)) {
    const auto& t = splits_.at(Split::kTrain);
    std::cout << "word2vec: " << vocab_.size() << " words seen >= " << min_count << " times cover "
              << vocab_.total() << " of the train split's words; train " << t.lines.num_lines() << " lines, "
              << t.batch_starts.size() - 1 << " batches per epoch" << std::endl;
  }
}

Task::TrainingProfile Word2VecTask::training_profile() const {
  TrainingProfile p;
  p.unit = "words";  // corpus words before subsampling, as word2vec.c counts its progress
  p.perplexity = false;
  p.loss_unit = "nats/word";
  // LibTorch's SGD adds weight decay as sparse + dense (unsupported) and would grow a sparse
  // momentum buffer by every step's rows; Adam's moments are dense.
  if (sparse_ || in_place_) p.optimizers = {"sgd"};
  p.optimizers_reason = sparse_ ? "sparse gradients (config key 'sparse' = true)"
                                : "in-place SGD (config key 'inplace_sgd' = true)";
  return p;
}

const Word2VecTask::SplitData& Word2VecTask::split_data(Split split) const {
  return loaded_split(splits_, split);
}

const EncodedLines& Word2VecTask::lines(Split split) const { return split_data(split).lines; }

int64_t Word2VecTask::num_batches(Split split, int64_t /*epoch*/) {
  return static_cast<int64_t>(split_data(split).batch_starts.size()) - 1;
}

Batch Word2VecTask::make_batch(Split split, int64_t epoch, int64_t index) {
  const auto& d = split_data(split);
  if (index < 0 || index + 1 >= static_cast<int64_t>(d.batch_starts.size()))
    throw std::out_of_range("word2vec batch " + std::to_string(index) + " of the " + to_string(split) + " split does not exist");
  // The valid split is the same sample at every validation.
  const uint64_t e = split == Split::kTrain ? static_cast<uint64_t>(epoch) : 0;
  const uint64_t s = static_cast<uint64_t>(seed_);
  std::seed_seq seq{static_cast<uint32_t>(s), static_cast<uint32_t>(s >> 32), static_cast<uint32_t>(split),
                    static_cast<uint32_t>(e), static_cast<uint32_t>(e >> 32), static_cast<uint32_t>(index),
                    static_cast<uint32_t>(static_cast<uint64_t>(index) >> 32)};
  std::mt19937_64 rng(seq);
  // The corpus is a concatenation of sources (Bible, dictionary, WordNet), and at a high rate
  // the vectors drift towards whichever source is being read; visiting the batches in the order
  // (a * index + b) mod n with a coprime to n interleaves the sources without any per-epoch state.
  const int64_t n = static_cast<int64_t>(d.batch_starts.size()) - 1;
  const int64_t planned = split == Split::kTrain && shuffle_ ? stride_permutation(index, n, s, e) : index;

  std::vector<int32_t> kept;
  std::vector<int64_t> centre, context, offsets;
  int64_t words = 0;
  for (int64_t line = d.batch_starts[planned]; line < d.batch_starts[planned + 1]; ++line) {
    kept.clear();
    for (int64_t k = d.lines.offsets[line]; k < d.lines.offsets[line + 1]; ++k) {
      const int32_t id = d.lines.ids[k];
      ++words;
      if (keep_[id] >= 1.0 || uniform01(rng) < keep_[id]) kept.push_back(id);
    }
    if (kind_ == Word2VecModel::kSkipGram) {
      skip_gram_pairs(kept, window_, rng, centre, context);
      if (maxn_ > 0)  // one bag per pair, the centre word alone, predicting the context word
        while (offsets.size() < centre.size()) offsets.push_back(static_cast<int64_t>(offsets.size()));
    } else {
      for_each_window(static_cast<int64_t>(kept.size()), window_, rng, [&](int64_t i, int64_t first, int64_t last) {
        offsets.push_back(static_cast<int64_t>(context.size()));
        for (int64_t j = first; j <= last; ++j)
          if (j != i) context.push_back(kept[j]);
        centre.push_back(kept[i]);
      });
    }
  }
  if (maxn_ > 0) {
    // Bags of words -> bags of rows; Skip-Gram's inputs are its centre words.
    if (kind_ == Word2VecModel::kSkipGram) centre.swap(context);
    subwords_.expand_bags(context, offsets);
  }
  Batch batch;
  const int64_t examples = static_cast<int64_t>(centre.size());
  batch.tensors["centre"] = to_tensor(centre);    // [N] or [B]
  batch.tensors["context"] = to_tensor(context);  // [N] or [M]
  if (kind_ == Word2VecModel::kCbow || maxn_ > 0) batch.tensors["offsets"] = to_tensor(offsets);  // [B]
  if (sampler_ != nullptr) batch.tensors["negatives"] = sampler_->sample(examples, negative_, rng);  // [N, K]
  batch.num_examples = examples;
  batch.num_tokens = words;
  return batch;
}

namespace {

// The batch as word2vec_sgd's examples: the layout is told by "offsets" (bags), not by the model.
SgdExamples sgd_examples(const Batch& batch) {
  const auto& t = batch.tensors;
  auto get = [&](const char* key) {
    auto it = t.find(key);
    return it == t.end() ? torch::Tensor() : it->second;
  };
  if (t.count("offsets")) return {get("context"), get("offsets"), get("centre"), get("negatives")};
  // Pairs: the context word's vector predicts the centre word, the order in which word2vec.c and
  // gensim update (centre -> context scored 0.60 analogy points lower over 12 seeds, README
  // "Word2vec: the order of Skip-Gram's updates").
  return {get("context"), torch::Tensor(), get("centre"), get("negatives")};
}

}  // namespace

LossOutput Word2VecTask::loss(const Batch& batch) {
  const auto ex = sgd_examples(batch);
  // Validation (no graph wanted) of ns and hs on the CPU: the in-place kernel's own loss at
  // rate 0, which needs O(D) memory where the autograd loss gathers [N, K or path, D] tensors
  // (1.5 GB peak for Skip-Gram hs on the English corpus).
  const auto& weight = model_->input_vectors->weight;
  if (!torch::GradMode::is_enabled() && model_->options().objective() != Word2VecObjective::kSoftmax && weight.device().is_cpu() &&
      weight.scalar_type() == torch::kFloat)
    return {torch::tensor(word2vec_sgd(weight, *model_->objective, ex, 0.0, torch::get_num_threads()), torch::kDouble),
            batch.num_tokens};
  torch::Tensor loss;
  if (!ex.offsets.defined() || ex.targets.numel() == 0)
    // An empty bag batch takes the pair path: embedding_bag wants at least one bag.
    loss = model_->skip_gram_loss(ex.inputs, ex.targets, ex.negatives);
  else
    loss = model_->cbow_loss(ex.inputs, ex.offsets, ex.targets, ex.negatives);
  return {loss, batch.num_tokens};
}

LossOutput Word2VecTask::train_in_place(const Batch& batch, double lr) {
  if (!model_->input_vectors->weight.device().is_cpu())
    throw UserError("config key 'inplace_sgd': in-place SGD runs on the CPU, the model is on " +
                    model_->input_vectors->weight.device().str() + "; set device = cpu or inplace_sgd = false");
  const double loss = word2vec_sgd(model_->input_vectors->weight, *model_->objective, sgd_examples(batch), lr,
                                   torch::get_num_threads());
  return {torch::tensor(loss, torch::kDouble), batch.num_tokens};
}

std::map<std::string, std::string> Word2VecTask::artifacts() const { return {{"vocab.txt", vocab_.to_text()}}; }

void Word2VecTask::restore_artifacts(const std::map<std::string, std::string>& blobs) {
  restore_vocab_artifact(blobs, model_.is_empty() ? nullptr : &vocab_, restored_vocab_);
}

WordVectors Word2VecTask::word_vectors() const {
  if (model_.is_empty()) throw std::logic_error("Word2VecTask::word_vectors before setup");
  torch::NoGradGuard no_grad;
  const auto& weight = model_->input_vectors->weight;  // [V + bucket, D]
  torch::Tensor vectors;
  if (maxn_ > 0) {
    const auto rows = torch::tensor(subwords_.rows, torch::kLong).to(weight.device());
    const auto starts = torch::tensor(subwords_.offsets, torch::kLong).slice(0, 0, vocab_.size()).to(weight.device());
    vectors = torch::nn::functional::embedding_bag(
        rows, weight, torch::nn::functional::EmbeddingBagFuncOptions().offsets(starts).mode(torch::kMean));  // [V, D]
  } else {
    vectors = weight.slice(0, 0, vocab_.size());
  }
  return WordVectors(vocab_.words(), vectors.detach().to(torch::kCPU, torch::kFloat).clone());
}

std::optional<torch::Tensor> Word2VecTask::oov_vector(const std::string& word) const {
  if (model_.is_empty()) throw std::logic_error("Word2VecTask::oov_vector before setup");
  if (maxn_ == 0) return std::nullopt;
  auto rows = ngram_buckets(word, minn_, maxn_, bucket_);
  if (rows.empty()) return std::nullopt;
  for (auto& r : rows) r += vocab_.size();
  torch::NoGradGuard no_grad;
  const auto& weight = model_->input_vectors->weight;
  return weight.index_select(0, torch::tensor(rows, torch::kLong).to(weight.device())).mean(0).to(torch::kCPU, torch::kFloat);
}

}  // namespace nlpzoo
