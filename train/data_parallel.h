#pragma once
// Data-parallel training: the Trainer on every rank of a DataParallelGroup (train/distributed.h),
// N processes making the updates one process makes with N times the batches. LibTorch's C++
// frontend has no DistributedDataParallel; this is its part, on c10d's collectives:
//  - rank 0's parameters and buffers go to every rank before the first update (also after
//    --resume, where every rank also loads the checkpoint's optimizer state);
//  - every rank follows the one deterministic batch plan and takes the rank-th batch of every
//    world_size consecutive batches, update_freq of them per update;
//  - after backward, the summed gradients go through all-reduce in flattened buckets of at most
//    kBucketBytes, with the unit count (tokens) all-reduced beside them, and the Trainer divides
//    by the global count: the update of one process fed all N ranks' batches. Clipping then sees
//    the global norm;
//  - validation is sharded over the ranks and its sums all-reduced;
//  - all ranks stop together: SIGINT/SIGTERM on any rank and rank 0's clock (max_time) travel
//    in the per-update reduction; early stopping and the step/epoch budgets follow from values
//    every rank shares;
//  - only rank 0 writes (checkpoints, config.ini, metrics.jsonl) and prints progress;
//  - dropout's generator is reseeded before each update from (seed, step, rank), so a resumed
//    run continues exactly without storing each rank's generator.
// Refused: tasks that update in place (word2vec's and GloVe's Hogwild threads), sparse embedding
// gradients, and tasks that carry state from batch to batch (TBPTT): each needs its own scheme.
#include <string>

#include "train/distributed.h"
#include "train/trainer.h"

namespace nlpzoo {

class DataParallelTrainer : public Trainer {
 public:
  /// The most bytes of gradient one all-reduce carries (DistributedDataParallel's bucket_cap_mb, 25 MiB).
  static constexpr int64_t kBucketBytes = 25 << 20;

  /// As Trainer's, for rank group.rank() of group.world_size(). Throws UserError for a task
  /// that updates in place, carries state across batches, or has an embedding with sparse
  /// gradients, saying what to use instead.
  DataParallelTrainer(Task& task, Config config, std::string task_name, std::string run_dir, DataParallelGroup& group);

 protected:
  StepOutput step() override;
  Stop stop_reason() const override;
  int stop_signal() const override { return signal_; }
  SplitLoss validation_loss() override;
  void on_begin(bool resumed) override;
  void on_end() override;

 private:
  // Each tensor's values summed over the ranks (all_reduce) or rank 0's (broadcast), in place,
  // through flattened buckets of one dtype and at most kBucketBytes.
  void synchronize(const std::vector<torch::Tensor>& tensors, bool reduce, const std::string& what);

  DataParallelGroup& group_;
  int signal_ = 0;        // the signal some rank received, as of the last update's reduction
  bool time_up_ = false;  // rank 0's max_time, as of the last update's reduction
  // This invocation's communication share: seconds in all-reduce, in updates, and sizes.
  double comm_s_ = 0, update_s_ = 0;
  int64_t updates_ = 0, gradient_bytes_ = 0, buckets_ = 0;
};

}  // namespace nlpzoo
