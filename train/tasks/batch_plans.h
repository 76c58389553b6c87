#pragma once
// The token-budget batch plans of a task's splits, made once per (split, epoch) and shared by
// num_batches (main thread) and make_batch (prefetch thread).
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "datasets/batching.h"
#include "train/task.h"

namespace nlpzoo {

class BatchPlans {
 public:
  /// The batches (rows of the split) of `split` in `epoch`: make_token_batches over
  /// `lengths()` (called only when the plan is not cached), shuffled by seed and epoch for
  /// train, the same plan every epoch for the other splits. Thread-safe. Train plans older
  /// than the previous epoch are dropped, since only the running epoch needs its plan.
  const std::vector<std::vector<int64_t>>& get(Split split, int64_t epoch,
                                              const std::function<std::vector<int64_t>()>& lengths,
                                              int64_t max_tokens, int64_t max_sentences, uint64_t seed);

 private:
  std::mutex mutex_;
  std::map<std::pair<Split, int64_t>, std::vector<std::vector<int64_t>>> plans_;
};

}  // namespace nlpzoo
