#include "train/tasks/glove_task.h"

#include <chrono>
#include <iostream>
#include <stdexcept>

#include "core/io.h"
#include "models/embeddings/glove_sgd.h"

namespace nlpzoo {

bool held_out_pair(int32_t i, int32_t j, int64_t valid_every) {
  // splitmix64's finaliser (Steele et al. 2014) of the unordered pair, so that X_ij and X_ji
  // fall on the same side and neighbouring ids do not.
  uint64_t z = (uint64_t{static_cast<uint32_t>(std::min(i, j))} << 32) | static_cast<uint32_t>(std::max(i, j));
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return z % static_cast<uint64_t>(valid_every) == 0;
}

ConfigSchema glove_schema() {
  ConfigSchema s;
  s.add("dim", "100", "word vector size D")
      .add("window", "10", "symmetric context window: words up to this distance d on each side, each adding 1/d "
                           "to X_ij (GloVe's cooccur.c -window-size)")
      .add("x_max", "100", "weighting function f(x) = min(1, (x/x_max)^alpha): counts from x_max on weigh 1")
      .add("alpha", "0.75", "exponent of the weighting function f")
      .add("min_count", "5", "words seen fewer times in the train split are dropped from the vocabulary and the text")
      .add("batch_size", "100000", "co-occurrence entries (i, j, X_ij) per batch (the in-place path steps per entry "
                                   "whatever the batch; the autograd path sums a batch into one step)")
      .add("inplace_adagrad", "true", "true: one AdaGrad step per entry, in place, Hogwild threads, as glove.c "
                                      "(models/embeddings/glove_sgd.h; uses lr and adagrad_initial_accumulator, not the "
                                      "torch optimizer); false: autograd and the torch optimizer per batch (reference)")
      .add("train_file", "english.txt", "corpus file in data_dir: one sentence per line, words separated by spaces")
      .add("valid_every", "100", "validation: about one word pair {i, j} in valid_every (by a hash of the pair) is "
                                 "held out of the co-occurrences; line i with (i+1) % valid_every == 0 is left out of "
                                 "the vocabulary count")
      .add("shuffle", "true", "visit the entries in a different order every epoch (a stride permutation); false: "
                              "sorted by (i, j)");
  return s;
}

void GloveTask::setup(Config& config, const TaskContext& context) {
  // Every bad value is reported before the corpus is read.
  GloveOptions options(1, config_int_at_least(config, "dim"));
  options.x_max(config.get_double("x_max")).alpha(config.get_double("alpha"));
  if (!(options.x_max() > 0)) throw UserError("config key 'x_max': must be positive, got " + config.get("x_max"));
  if (!(options.alpha() >= 0)) throw UserError("config key 'alpha': must not be negative, got " + config.get("alpha"));
  const int64_t window = config_int_at_least(config, "window");
  const int64_t min_count = config_int_at_least(config, "min_count");
  batch_size_ = config_int_at_least(config, "batch_size");
  const int64_t valid_every = config_int_at_least(config, "valid_every", 2);
  seed_ = config.get_int("seed");
  shuffle_ = config.get_bool("shuffle");
  in_place_ = config.get_bool("inplace_adagrad");
  const double accumulator = config.get_double("adagrad_initial_accumulator");
  if (in_place_ && !(accumulator > 0))
    throw UserError("config key 'adagrad_initial_accumulator': the in-place AdaGrad divides by its square root, so it "
                    "must be positive (glove.c: 1), got " + config.get("adagrad_initial_accumulator"));
  options.initial_accumulator(accumulator > 0 ? accumulator : 1.0);  // unused by the autograd path

  // Both line splits are read whenever data is: every word pair's counts come from all lines,
  // and the held-out pairs make the valid split (see the header).
  TaskContext read = context;
  if (!read.splits.empty() && !read.splits.count(Split::kTest)) read.splits = {Split::kTrain, Split::kValid};
  auto corpus = load_word_corpus({"glove", config.get("train_file"), min_count, valid_every}, read, restored_vocab_);
  vocab_ = std::move(corpus.vocab);
  restored_vocab_.clear();
  model_ = Glove(options.vocab_size(vocab_.size()));
  if (context.splits.empty()) return;

  EncodedLines all = std::move(corpus.lines.at(Split::kTrain));
  const auto& held = corpus.lines.at(Split::kValid);
  for (int64_t s = 0; s < held.num_lines(); ++s) {
    all.ids.insert(all.ids.end(), held.ids.begin() + held.offsets[s], held.ids.begin() + held.offsets[s + 1]);
    all.offsets.push_back(static_cast<int64_t>(all.ids.size()));
  }
  const auto start = std::chrono::steady_clock::now();
  const Cooccurrences x = count_cooccurrences(all, window);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  auto& train = splits_[Split::kTrain];
  auto& valid = splits_[Split::kValid];
  train.rows.reserve(x.nnz());
  train.cols.reserve(x.nnz());
  train.values.reserve(x.nnz());
  for (int64_t k = 0; k < x.nnz(); ++k) {
    auto& to = held_out_pair(x.rows[k], x.cols[k], valid_every) ? valid : train;
    to.rows.push_back(x.rows[k]);
    to.cols.push_back(x.cols[k]);
    to.values.push_back(x.values[k]);
  }
  std::cout << "glove: " << all.num_lines() << " lines, " << all.ids.size() << " words; co-occurrences (window "
            << window << "): " << x.nnz() << " non-zeros (" << x.nnz() * 12 / (1 << 20) << " MiB) counted in "
            << seconds << " s; " << valid.nnz() << " of them held out for validation" << std::endl;
  if (valid.nnz() == 0 || train.nnz() == 0)
    throw UserError(context.data_dir + "/" + config.get("train_file") + ": " + std::to_string(x.nnz()) +
                    " co-occurrence entries leave the " + (valid.nnz() == 0 ? "valid" : "train") +
                    " split empty (valid_every=" + std::to_string(valid_every) + "); use a larger corpus" +
                    (valid.nnz() == 0 ? " or lower valid_every" : ""));
  std::cout << "glove: " << vocab_.size() << " words seen >= " << min_count << " times; "
            << num_batches(Split::kTrain, 0) << " batches of " << batch_size_ << " entries per epoch" << std::endl;
}

const Cooccurrences& GloveTask::cooccurrences(Split split) const {
  return loaded_split(splits_, split);
}

int64_t GloveTask::num_batches(Split split, int64_t /*epoch*/) {
  return (cooccurrences(split).nnz() + batch_size_ - 1) / batch_size_;
}

Batch GloveTask::make_batch(Split split, int64_t epoch, int64_t index) {
  const auto& x = cooccurrences(split);
  const int64_t n = x.nnz();
  const int64_t first = index * batch_size_;
  if (index < 0 || first >= n)
    throw std::out_of_range("glove batch " + std::to_string(index) + " of the " + to_string(split) + " split does not exist");
  const int64_t size = std::min(batch_size_, n - first);
  // Position p of the epoch holds entry (a * p + b) mod n: a and b are read off the
  // permutation once (b = perm(0), a = perm(1) - perm(0)) instead of redrawn per entry.
  int64_t a = 1, b = 0;
  if (split == Split::kTrain && shuffle_ && n > 1) {
    const auto s = static_cast<uint64_t>(seed_), e = static_cast<uint64_t>(epoch);
    b = stride_permutation(0, n, s, e);
    a = (stride_permutation(1, n, s, e) - b + n) % n;
  }
  std::vector<int64_t> rows(size), cols(size);
  std::vector<float> values(size);
  for (int64_t k = 0; k < size; ++k) {
    const auto entry = static_cast<int64_t>((static_cast<unsigned __int128>(a) * static_cast<uint64_t>(first + k) + b) % n);
    rows[k] = x.rows[entry];
    cols[k] = x.cols[entry];
    values[k] = x.values[entry];
  }
  Batch batch;
  batch.tensors["rows"] = torch::tensor(rows, torch::kLong);      // [N]
  batch.tensors["cols"] = torch::tensor(cols, torch::kLong);      // [N]
  batch.tensors["x"] = torch::tensor(values, torch::kFloat);      // [N]
  batch.num_examples = batch.num_tokens = size;
  return batch;
}

Task::TrainingProfile GloveTask::training_profile() const {
  TrainingProfile p;
  p.unit = "entries";  // co-occurrence entries X_ij
  p.perplexity = false;
  p.loss_unit = "per entry";  // glove.c's weighted squared error, not a log-likelihood
  // The four tables have sparse gradients: Adam's moments are dense, and LibTorch's AdaGrad and
  // SGD refuse weight decay with them (SGD's momentum buffer would grow by every step's rows).
  p.optimizers = {"adagrad", "sgd"};
  p.optimizers_reason = "glove's sparse gradients";
  return p;
}

LossOutput GloveTask::loss(const Batch& batch) {
  return {model_->loss(batch.tensors.at("rows"), batch.tensors.at("cols"), batch.tensors.at("x")), batch.num_tokens};
}

LossOutput GloveTask::train_in_place(const Batch& batch, double lr) {
  const double loss = glove_adagrad(*model_, batch.tensors.at("rows"), batch.tensors.at("cols"), batch.tensors.at("x"),
                                    lr, torch::get_num_threads());
  return {torch::tensor(loss, torch::kDouble), batch.num_tokens};
}

std::map<std::string, std::string> GloveTask::artifacts() const { return {{"vocab.txt", vocab_.to_text()}}; }

void GloveTask::restore_artifacts(const std::map<std::string, std::string>& blobs) {
  restore_vocab_artifact(blobs, model_.is_empty() ? nullptr : &vocab_, restored_vocab_);
}

WordVectors GloveTask::word_vectors() const {
  if (model_.is_empty()) throw std::logic_error("GloveTask::word_vectors before setup");
  return WordVectors(vocab_.words(), model_->word_vectors().to(torch::kCPU, torch::kFloat).clone());  // [V, D]
}

}  // namespace nlpzoo
