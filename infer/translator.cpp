#include "infer/translator.h"

#include <malloc.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <numeric>

#include "datasets/batching.h"
#include "datasets/special_ids.h"
#include "core/precision.h"

namespace nlpzoo {

namespace {

// glibc serves a block above M_MMAP_THRESHOLD with its own mmap and hands the top of the heap
// back once M_TRIM_THRESHOLD is free, so a tensor of a few MB made and freed at every step
// (additive attention's [N, S, A] scores: 26 MB at beam 5, batch 64) comes back as fresh
// pages each time: 2.09M page faults in 500 sentences of beam-5 decoding, 0.16M with these
// settings, and 10-20% of the wall time. Blocks up to 32 MiB (glibc's ceiling for its own
// adaptive threshold) then come from the heap, which keeps up to 256 MiB free. Set when
// decoding starts, not for every command: word2vec's peak RSS grew 9 MB with it.
// glibc's own variables (MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_, GLIBC_TUNABLES) win.
void keep_freed_step_memory() {
  static const bool done = [] {
    const char* tunables = std::getenv("GLIBC_TUNABLES");
    if (std::getenv("MALLOC_MMAP_THRESHOLD_") != nullptr || std::getenv("MALLOC_TRIM_THRESHOLD_") != nullptr ||
        (tunables != nullptr && std::strstr(tunables, "glibc.malloc.") != nullptr))
      return false;
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
    return true;
  }();
  (void)done;
}

// bf16 products run in oneDNN on LibTorch's OpenMP threads, which sleep between operators
// (OMP_WAIT_POLICY=PASSIVE, tools/main.cpp) and are woken for each one. With a handful of rows
// per step the wake-ups cost more than a second thread gains: beam 5 one sentence at a time on
// the GRU model made 28-31 sentences/s on one thread against 14-16 on two (README, Decoding in
// bf16). At 64 rows (greedy, batch 64) one and two threads tie; at 320 (beam 5, batch 64) the
// second thread pays: 67-82 against 57 sent/s.
// float32 products run in OpenBLAS's own threads, where two threads are faster at every size.
constexpr int64_t kMaxRowsForOneThread = 16;

// Runs its scope on one intra-op thread when `one` is true, then restores the count.
class OneThreadIf {
 public:
  explicit OneThreadIf(bool one) : previous_(one ? torch::get_num_threads() : 0) {
    if (one) torch::set_num_threads(1);
  }
  ~OneThreadIf() {
    if (previous_ > 1) torch::set_num_threads(previous_);
  }
  OneThreadIf(const OneThreadIf&) = delete;
  OneThreadIf& operator=(const OneThreadIf&) = delete;

 private:
  int previous_;
};

}  // namespace

Translator::Translator(IncrementalDecoder& model, const Tokenizer& source, const Tokenizer& target,
                       int64_t max_positions, torch::Device device)
    : model_(model), source_(source), target_(target), max_positions_(max_positions), device_(device) {}

std::vector<std::vector<int64_t>> Translator::source_ids(const std::vector<std::string>& lines,
                                                        std::vector<Translation>* out) const {
  std::vector<std::vector<int64_t>> ids(lines.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].find_first_not_of(" \t\r\n") == std::string::npos) continue;
    bool truncated = false;
    ids[i] = append_eos(source_.encode(lines[i]), max_positions_ > 0 ? max_positions_ : std::numeric_limits<int64_t>::max(), &truncated);
    if (out == nullptr) continue;
    (*out)[i].truncated = truncated;
    for (int64_t id : ids[i]) (*out)[i].source_pieces.push_back(source_.id_to_piece(id));
  }
  return ids;
}

void Translator::for_each_batch(const std::vector<std::vector<int64_t>>& ids, int64_t batch_size,
                                const std::function<void(const torch::Tensor&, const std::vector<size_t>&)>& f) const {
  std::vector<size_t> order;
  for (size_t i = 0; i < ids.size(); ++i)
    if (!ids[i].empty()) order.push_back(i);
  // Similar lengths share a batch, so little decoding is spent on padding.
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ids[a].size() < ids[b].size(); });
  const size_t step = static_cast<size_t>(std::max<int64_t>(1, batch_size));
  for (size_t start = 0; start < order.size(); start += step) {
    const std::vector<size_t> lines(order.begin() + start, order.begin() + std::min(order.size(), start + step));
    std::vector<std::vector<int64_t>> rows;
    for (size_t i : lines) rows.push_back(ids[i]);
    f(pad_sequences(rows, kPadId).to(device_), lines);
  }
}

std::vector<Translation> Translator::translate(const std::vector<std::string>& lines, const SearchOptions& options,
                                               int64_t batch_size) const {
  torch::NoGradGuard no_grad;
  keep_freed_step_memory();
  const OneThreadIf one_thread(device_.is_cpu() && active_precision(device_) == Precision::kBf16 &&
                               std::max<int64_t>(1, batch_size) * options.beam_size <= kMaxRowsForOneThread);
  std::vector<Translation> out(lines.size());
  for_each_batch(source_ids(lines, &out), batch_size, [&](const torch::Tensor& src, const std::vector<size_t>& rows) {
    if (options.beam_size == 1) {
      auto best = greedy_search(model_, src, options);
      for (size_t k = 0; k < rows.size(); ++k) out[rows[k]].hypotheses = {best[k]};
    } else {
      auto all = beam_search(model_, src, options);
      for (size_t k = 0; k < rows.size(); ++k) out[rows[k]].hypotheses = std::move(all[k]);
    }
  });
  return out;
}

std::vector<std::vector<double>> Translator::force(const std::vector<std::string>& lines,
                                                   const std::vector<std::vector<int64_t>>& targets,
                                                   int64_t batch_size) const {
  TORCH_CHECK(lines.size() == targets.size(), "Translator::force: one target per line");
  std::vector<std::vector<double>> out(lines.size());
  for_each_batch(source_ids(lines, nullptr), batch_size, [&](const torch::Tensor& src, const std::vector<size_t>& rows) {
    std::vector<std::vector<int64_t>> batch;
    for (size_t i : rows) batch.push_back(targets[i]);
    auto scores = forced_log_probs(model_, src, batch);
    for (size_t k = 0; k < rows.size(); ++k) out[rows[k]] = std::move(scores[k]);
  });
  return out;
}

std::string Translator::text(const Hypothesis& hypothesis) const { return target_.decode(hypothesis.tokens); }

std::vector<std::string> Translator::target_pieces(const Hypothesis& hypothesis) const {
  std::vector<std::string> pieces;
  for (int64_t id : hypothesis.tokens) pieces.push_back(target_.id_to_piece(id));
  if (hypothesis.finished) pieces.push_back(target_.id_to_piece(kEosId));
  return pieces;
}

}  // namespace nlpzoo
