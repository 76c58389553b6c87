#include "train/tasks/word2vec_task.h"

#include <iostream>
#include <stdexcept>

#include "core/io.h"
#include "models/embeddings/word2vec_sgd.h"
#include "train/trainer.h"

namespace nlpzoo {

void Word2VecTaskOptions::bind(OptionBinder& b) {
  b.field("model", model,
          "skipgram: every (centre, context) pair of a window is an example, the context word's vector predicting the "
          "centre word as word2vec.c and gensim update (with subwords the centre word's n-grams predict the context "
          "word, as fastText); cbow: predict the centre word from the mean of its context's vectors",
          {"skipgram", "cbow"});
  b.field("objective", objective,
          "output layer: softmax (full, O(V) per example), ns (negative sampling), hs (hierarchical softmax over a "
          "Huffman tree of the counts)",
          {"softmax", "ns", "hs"});
  b.field("dim", dim, "word vector size D", at_least(1));
  b.field("window", window, "maximum window: each centre word sees b ~ U{1..window} words on each side", at_least(1));
  b.field("negative", negative, "ns: noise words per example, K");
  b.field("ns_exponent", ns_exponent, "ns: noise distribution P_n(w) proportional to count(w)^ns_exponent",
          NumberCheck{[](double x) -> std::string { return x >= 0 ? "" : "must not be negative"; }});
  b.field("sample", sample,
          "subsampling threshold s: a word seen f times of T is kept with probability min(1, (sqrt(f/(s*T)) + 1) * "
          "s*T/f); 0 = keep every word",
          NumberCheck{[](double x) -> std::string { return x >= 0 ? "" : "must be 0 (no subsampling) or positive"; }});
  corpus.bind(b);
  b.field("batch_size", batch_size,
          "corpus words (before subsampling, whole lines) per batch; the rate decays once per batch (word2vec.c: "
          "every 10000 words). With inplace_sgd the examples are sequential SGD steps, so any size is sound; with "
          "inplace_sgd = false the gradient is the sum over the batch's examples from the same parameters: keep it "
          "near 250 there (10000 diverges at lr 0.025, 1000 spikes)",
          at_least(1));
  b.field("inplace_sgd", inplace_sgd,
          "ns and hs: train with per-example SGD on the parameter rows in place, threads without locks (Hogwild), as "
          "word2vec.c; needs optimizer = sgd, ignores clip_norm. false: autograd and the optimizer (the reference "
          "path). softmax always uses autograd");
  b.field("valid_every", corpus.valid_every,
          "line i (0-based) with (i+1) % valid_every == 0 is held out for validation", at_least(2));
  b.field("shuffle", shuffle,
          "visit the train batches in a different order every epoch (a stride permutation); false: file order, as "
          "word2vec.c");
  b.field("sparse", sparse,
          "sparse gradients for the embedding matrices (only the rows a batch uses; needs optimizer = sgd)");
  b.field("minn", minn, "subwords: shortest character n-gram of '<word>' (UTF-8 characters), as fastText's -minn",
          at_least(1));
  b.field("maxn", maxn,
          "subwords: longest character n-gram; 0 = no subwords (plain word2vec), as fastText's -maxn 0; fastText's "
          "default 6 with minn 3");
  b.field("bucket", bucket,
          "subwords: n-gram hash buckets, extra input rows after the words (FNV-1a mod bucket); memory bucket * dim * "
          "4 bytes");
}

ConfigSchema word2vec_schema() { return schema_of<Word2VecTaskOptions>(); }

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
  const auto o = bind_options<Word2VecTaskOptions>(config);
  Word2VecOptions options(1, o.dim);
  try {
    kind_ = parse_word2vec_model(o.model);
    options.objective(parse_word2vec_objective(o.objective));
  } catch (const std::invalid_argument& e) {
    throw UserError(std::string("config key 'model' or 'objective': ") + e.what());
  }
  options.model(kind_).sparse(o.sparse).ns_exponent(o.ns_exponent);
  window_ = o.window;
  const bool ns = options.objective() == Word2VecObjective::kNegativeSampling;
  if (ns && o.negative < 1) throw UserError("config key 'negative': must be positive, got " + std::to_string(o.negative));
  negative_ = ns ? o.negative : 0;
  if (ns) options.negative(negative_);
  minn_ = o.minn;
  maxn_ = o.maxn;
  if (maxn_ != 0 && maxn_ < minn_)
    throw UserError("config key 'maxn': must be 0 (no subwords) or at least minn = " + std::to_string(minn_) + ", got " +
                    std::to_string(maxn_));
  if (maxn_ > 0 && o.bucket < 1) throw UserError("config key 'bucket': must be positive, got " + std::to_string(o.bucket));
  bucket_ = maxn_ > 0 ? o.bucket : 0;
  options.bucket(bucket_);
  const double sample = o.sample;
  const int64_t min_count = o.corpus.min_count;
  batch_size_ = o.batch_size;
  seed_ = bind_options<TrainerOptions>(config).seed;
  shuffle_ = o.shuffle;
  sparse_ = options.sparse();
  in_place_ = o.inplace_sgd && options.objective() != Word2VecObjective::kSoftmax;
  // The corpus, split into train and held-out lines, and its vocabulary.
  auto corpus = load_word_corpus(o.corpus, context, restored_vocab_);
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
