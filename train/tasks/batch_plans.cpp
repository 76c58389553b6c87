#include "train/tasks/batch_plans.h"

namespace nlpzoo {

const std::vector<std::vector<int64_t>>& BatchPlans::get(Split split, int64_t epoch,
                                                         const std::function<std::vector<int64_t>()>& lengths,
                                                         int64_t max_tokens, int64_t max_sentences, uint64_t seed) {
  std::lock_guard<std::mutex> lock(mutex_);
  const bool train = split == Split::kTrain;
  const auto key = std::make_pair(split, train ? epoch : 0);
  if (auto it = plans_.find(key); it != plans_.end()) return it->second;
  if (train) {
    for (auto p = plans_.begin(); p != plans_.end();)
      p = (p->first.first == Split::kTrain && p->first.second < epoch - 1) ? plans_.erase(p) : std::next(p);
  }
  return plans_[key] = make_token_batches(lengths(), max_tokens, max_sentences, train,
                                          seed * 1000003ULL + static_cast<uint64_t>(epoch));
}

}  // namespace nlpzoo
