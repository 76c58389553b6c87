#include "train/data_parallel.h"

#include <chrono>
#include <csignal>
#include <iomanip>
#include <sstream>

#include "core/io.h"

namespace nlpzoo {

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// SplitMix64's finaliser (Steele et al. 2014): well-spread seeds from (seed, step, rank).
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// The name of a module whose embedding table has sparse gradients ("" when none has).
std::string sparse_embedding(torch::nn::Module& model) {
  for (const auto& item : model.named_modules()) {
    const auto* table = dynamic_cast<const torch::nn::EmbeddingImpl*>(item.value().get());
    const auto* bag = dynamic_cast<const torch::nn::EmbeddingBagImpl*>(item.value().get());
    if ((table && table->options.sparse()) || (bag && bag->options.sparse())) return item.key().empty() ? "(model)" : item.key();
  }
  return "";
}

// Tensors copied into flat buckets of one dtype and device and at most `max_bytes` (a tensor
// larger than that has a bucket of its own), and back: a few large collectives instead of one
// per parameter.
struct Buckets {
  std::vector<torch::Tensor> flat;
  std::vector<std::vector<size_t>> members;  // indices of the tensors each bucket holds, in order

  Buckets(const std::vector<torch::Tensor>& tensors, int64_t max_bytes) {
    int64_t bytes = 0;
    for (size_t i = 0; i < tensors.size(); ++i) {
      const auto& t = tensors[i];
      const int64_t size = t.numel() * static_cast<int64_t>(t.element_size());
      const bool fits = !members.empty() && bytes + size <= max_bytes &&
                        tensors[members.back().front()].scalar_type() == t.scalar_type() &&
                        tensors[members.back().front()].device() == t.device();
      if (!fits) {
        members.emplace_back();
        bytes = 0;
      }
      members.back().push_back(i);
      bytes += size;
    }
    for (const auto& bucket : members) {
      std::vector<torch::Tensor> parts;
      for (size_t i : bucket) parts.push_back(tensors[i].reshape({-1}));
      flat.push_back(torch::cat(parts));
    }
  }

  void copy_back(std::vector<torch::Tensor>& tensors) const {
    for (size_t b = 0; b < members.size(); ++b) {
      int64_t offset = 0;
      for (size_t i : members[b]) {
        auto& t = tensors[i];
        t.copy_(flat[b].narrow(0, offset, t.numel()).view_as(t));
        offset += t.numel();
      }
    }
  }
};

// The per-update reduction's layout (float64): the update's sums, the stop flags, then one
// "has a gradient" count per parameter.
enum Slot : int64_t { kLossSum, kUnits, kExamples, kSigint, kSigterm, kRank0Time, kRank0TimeUp, kHasGrad };

}  // namespace

DataParallelTrainer::DataParallelTrainer(Task& task, Config config, std::string task_name, std::string run_dir,
                                         DataParallelGroup& group)
    : Trainer(task, std::move(config), std::move(task_name), std::move(run_dir),
              Shard{group.rank(), group.world_size()}),
      group_(group) {
  const std::string refused = "data-parallel training (torchrun, --nproc) cannot train this task: ";
  if (task.updates_in_place())
    throw UserError(refused + "it updates its parameters in place (Hogwild threads), so there are no gradients to "
                              "all-reduce; train it in one process with threads (NLPZOO_THREADS=N), or switch the "
                              "task's in-place updates off (its inplace_* config key)");
  if (const auto name = sparse_embedding(model()); !name.empty())
    throw UserError(refused + "its embedding '" + name + "' has sparse gradients, which are not all-reduced; set the "
                              "task's sparse config key to false, or train in one process with threads");
  if (task.carries_state_across_batches())
    throw UserError(refused + "it carries state from batch to batch (truncated backpropagation through time), but each "
                              "rank takes every " + std::to_string(group.world_size()) +
                    "th batch; train it in one process with threads");
}

Trainer::StepOutput DataParallelTrainer::step() {
  const auto start = std::chrono::steady_clock::now();
  const int64_t rank = group_.rank();
  // Dropout's masks are a function of (seed, step, rank), so that a resumed run goes on exactly.
  torch::manual_seed(mix(mix(mix(static_cast<uint64_t>(options().seed)) ^ training_state().step) ^
                         static_cast<uint64_t>(rank)));
  auto out = accumulate(/*lr=*/0);  // the rate is only used by in-place updates, which are refused
  const auto reduce_start = std::chrono::steady_clock::now();

  std::vector<torch::Tensor> params;  // frozen ones never have a gradient
  for (const auto& p : model().parameters())
    if (p.requires_grad()) params.push_back(p);
  const int signal = received_signal();
  std::vector<double> counts = {0,
                                static_cast<double>(out.units),
                                static_cast<double>(out.examples),
                                signal == SIGINT ? 1.0 : 0.0,
                                signal == SIGTERM ? 1.0 : 0.0,
                                rank == 0 ? training_time_s() : 0.0,
                                rank == 0 && time_up() ? 1.0 : 0.0};
  // A parameter without a gradient on this rank (unused by its batches) takes part with zeros;
  // one without a gradient on every rank keeps none, as in one process.
  std::vector<torch::Tensor> grads;
  for (auto& p : params) {
    if (p.grad().defined() && p.grad().is_sparse())
      throw UserError("data-parallel training: a parameter has a sparse gradient, which is not all-reduced; train in one "
                      "process with threads");
    counts.push_back(p.grad().defined() ? 1.0 : 0.0);
    grads.push_back(p.grad().defined() ? p.grad() : torch::zeros_like(p));
  }
  auto sums = torch::tensor(counts, torch::kDouble).to(device());
  if (out.loss_sum.defined()) sums[kLossSum] = out.loss_sum.to(torch::kDouble);
  const Buckets buckets(grads, kBucketBytes);
  std::vector<torch::Tensor> tensors = {sums};
  tensors.insert(tensors.end(), buckets.flat.begin(), buckets.flat.end());
  group_.all_reduce(tensors, "all-reduce of the gradients");
  buckets.copy_back(grads);
  sums = sums.cpu();
  const auto v = sums.accessor<double, 1>();
  for (size_t i = 0; i < params.size(); ++i)
    if (!params[i].grad().defined() && v[kHasGrad + i] > 0) params[i].mutable_grad() = grads[i];
  signal_ = v[kSigterm] > 0 ? SIGTERM : v[kSigint] > 0 ? SIGINT : 0;
  time_up_ = v[kRank0TimeUp] > 0;
  comm_s_ += seconds_since(reduce_start);
  gradient_bytes_ = 0;
  for (const auto& flat : buckets.flat) gradient_bytes_ += flat.numel() * static_cast<int64_t>(flat.element_size());
  buckets_ = static_cast<int64_t>(buckets.flat.size());

  StepOutput reduced;
  reduced.units = static_cast<int64_t>(v[kUnits]);
  if (reduced.units == 0) return reduced;  // the training data ran out on every rank
  reduced.examples = static_cast<int64_t>(v[kExamples]);
  reduced.loss_sum = torch::tensor(v[kLossSum], torch::kDouble);
  // Rank 0's clock sets the rate of time-based schedules, so that every rank steps alike.
  const double lr = next_lr(v[kRank0Time]);
  reduced.grad_norm = apply(reduced.units, lr);
  count_update(lr);
  update_s_ += seconds_since(start);
  ++updates_;
  return reduced;
}

Trainer::Stop DataParallelTrainer::stop_reason() const { return stop_rule(signal_ != 0, time_up_); }

SplitLoss DataParallelTrainer::validation_loss() {
  // A split of fewer batches than ranks is read whole by every rank (each gets the same result).
  if (task().num_batches(Split::kValid, 0) < group_.world_size()) return Trainer::validation_loss();
  EvaluationShard shard{group_.rank(), group_.world_size(), [this](torch::Tensor& sums) {
                          std::vector<torch::Tensor> one{sums};
                          group_.all_reduce(one, "all-reduce of the validation sums");
                        }};
  return evaluate_loss(task(), Split::kValid, device(), shard);
}

void DataParallelTrainer::on_begin(bool /*resumed*/) {
  {
    torch::NoGradGuard no_grad;
    std::vector<torch::Tensor> state = model().parameters();
    for (const auto& b : model().buffers()) state.push_back(b);
    const Buckets buckets(state, kBucketBytes);
    std::vector<torch::Tensor> flat = buckets.flat;
    group_.broadcast(flat, "broadcast of rank 0's parameters");
    buckets.copy_back(state);
  }
  const int64_t world = group_.world_size(), per_rank = options().update_freq;
  message("data-parallel: " + std::to_string(world) + " ranks (" + group_.backend() + "); each update takes " +
          std::to_string(world * per_rank) + " batches (" + std::to_string(per_rank) + " per rank)");
}

void DataParallelTrainer::on_end() {
  if (updates_ == 0) return;
  std::ostringstream line;
  line << std::fixed << std::setprecision(1) << "data-parallel: " << updates_ << " updates of "
       << 1000 * update_s_ / updates_ << " ms, " << 100 * comm_s_ / update_s_ << "% of it in all-reduce ("
       << 1000 * comm_s_ / updates_ << " ms per update: " << gradient_bytes_ << " bytes of gradients in " << buckets_
       << " bucket(s), with the wait for the slowest rank)";
  message(line.str());
}

}  // namespace nlpzoo
