#include "train/tasks/glove_task.h"

#include <chrono>
#include <iostream>
#include <stdexcept>

#include "core/io.h"
#include "models/embeddings/glove_sgd.h"
#include "train/trainer.h"

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

void GloveTaskOptions::bind(OptionBinder& b) {
  b.field("dim", dim, "word vector size D", at_least(1));
  b.field("window", window,
          "symmetric context window: words up to this distance d on each side, each adding 1/d to X_ij (GloVe's "
          "cooccur.c -window-size)",
          at_least(1));
  b.field("x_max", x_max, "weighting function f(x) = min(1, (x/x_max)^alpha): counts from x_max on weigh 1",
          NumberCheck{[](double x) -> std::string { return x > 0 ? "" : "must be positive"; }});
  b.field("alpha", alpha, "exponent of the weighting function f",
          NumberCheck{[](double x) -> std::string { return x >= 0 ? "" : "must not be negative"; }});
  corpus.bind(b);
  b.field("batch_size", batch_size,
          "co-occurrence entries (i, j, X_ij) per batch (the in-place path steps per entry whatever the batch; the "
          "autograd path sums a batch into one step)",
          at_least(1));
  b.field("inplace_adagrad", inplace_adagrad,
          "true: one AdaGrad step per entry, in place, Hogwild threads, as glove.c (models/embeddings/glove_sgd.h; "
          "uses lr and adagrad_initial_accumulator, not the torch optimizer); false: autograd and the torch optimizer "
          "per batch (reference)");
  b.field("valid_every", corpus.valid_every,
          "validation: about one word pair {i, j} in valid_every (by a hash of the pair) is held out of the "
          "co-occurrences; line i with (i+1) % valid_every == 0 is left out of the vocabulary count",
          at_least(2));
  b.field("shuffle", shuffle,
          "visit the entries in a different order every epoch (a stride permutation); false: sorted by (i, j)");
}

ConfigSchema glove_schema() { return schema_of<GloveTaskOptions>(); }

void GloveTask::setup(Config& config, const TaskContext& context) {
  // Every bad value is reported before the corpus is read.
  const auto o = bind_options<GloveTaskOptions>(config);
  const auto trainer = bind_options<TrainerOptions>(config);
  GloveOptions options(1, o.dim);
  options.x_max(o.x_max).alpha(o.alpha);
  const int64_t window = o.window;
  const int64_t min_count = o.corpus.min_count;
  batch_size_ = o.batch_size;
  const int64_t valid_every = o.corpus.valid_every;
  seed_ = trainer.seed;
  shuffle_ = o.shuffle;
  in_place_ = o.inplace_adagrad;
  const double accumulator = trainer.optimizer.adagrad_initial_accumulator;
  if (in_place_ && !(accumulator > 0))
    throw UserError("config key 'adagrad_initial_accumulator': the in-place AdaGrad divides by its square root, so it "
                    "must be positive (glove.c: 1), got " + format_number(accumulator));
  options.initial_accumulator(accumulator > 0 ? accumulator : 1.0);  // unused by the autograd path

  // Both line splits are read whenever data is: every word pair's counts come from all lines,
  // and the held-out pairs make the valid split (see the header).
  TaskContext read = context;
  if (!read.splits.empty() && !read.splits.count(Split::kTest)) read.splits = {Split::kTrain, Split::kValid};
  auto corpus = load_word_corpus(o.corpus, read, restored_vocab_);
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
    throw UserError(context.data_dir + "/" + o.corpus.train_file + ": " + std::to_string(x.nnz()) +
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
