#pragma once
// A c10d process group for data-parallel training (ARCHITECTURE.md, "Scaling out"): joining it
// from the environment a launcher sets, its collectives, and the error a failed collective
// becomes. LibTorch's C++ frontend has no DistributedDataParallel, so the Trainer's part
// (train/data_parallel.h) sits on these few collectives.
//
// Launchers: torchrun (and `nlpzoo train --nproc N`, which imitates it) set RANK, WORLD_SIZE,
// LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT and TORCHELASTIC_USE_AGENT_STORE=True:
// the launcher then serves the TCP store at MASTER_ADDR:MASTER_PORT and every worker connects as
// a client. Without that variable (a Slurm script setting the others by hand), rank 0 serves it.
//
// A rank that fails writes its error into the store; a rank whose collective fails (a peer's
// connection closed, or no answer within the timeout) names the rank that wrote an error or,
// failing that, the ranks that did not report in, instead of hanging.
//
// Before the first collective on parameters the ranks agree on a fingerprint of the run (its
// config, data and code: train/tasks/train_run.cpp makes it); a rank started otherwise would
// otherwise fail inside a collective far from its cause, or silently train another run.
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/torch.h>
#include <torch/version.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace c10d {
class ProcessGroup;
class Backend;
}  // namespace c10d

namespace nlpzoo {

/// How a worker joins its group (`nlpzoo train --dist-backend --dist-timeout`).
struct DistributedOptions {
  std::string backend = "auto";  // auto | gloo | nccl; auto: NCCL for a CUDA model when LibTorch has it, else Gloo
  double timeout_s = 1800;       // a rendezvous or collective waiting longer fails, naming the rank (torch's default)
};

/// The variables a launcher sets. rank in [0, world_size); local_* describe this machine.
struct LaunchEnvironment {
  int rank = 0, world_size = 1, local_rank = 0, local_world_size = 1;
  std::string master_addr;
  int master_port = 0;
  bool agent_store = false;  // TORCHELASTIC_USE_AGENT_STORE=True: the launcher serves the store
  int restart_count = 0;     // TORCHELASTIC_RESTART_COUNT: torchrun's attempt (keys are kept apart per attempt)
};

/// The environment's launch variables, or nullopt when neither RANK nor WORLD_SIZE is set
/// (single-process training). Throws UserError naming the variable that is missing (RANK,
/// WORLD_SIZE, MASTER_ADDR, MASTER_PORT once one of the first two is set) or malformed.
std::optional<LaunchEnvironment> launch_environment();

/// The backend `options.backend` means for a model on `device`: "gloo" or "nccl". Throws
/// UserError for an unknown name, NCCL without CUDA support in this LibTorch or on a CPU
/// model, and Gloo in a build without it.
std::string resolve_backend(const std::string& backend, const torch::Device& device);

class DataParallelGroup {
 public:
  /// Joins the group `env` describes over a TCP store (see the top of this file). Throws
  /// UserError when the store or the peers cannot be reached within the timeout.
  static std::unique_ptr<DataParallelGroup> join(const LaunchEnvironment& env, const DistributedOptions& options,
                                                 const torch::Device& device);

  /// Rank `rank` of `world_size` over `store` (tests: a FileStore shared by threads).
  /// `loopback`: Gloo talks over 127.0.0.1 (else the interface GLOO_SOCKET_IFNAME names, or the
  /// host name's address).
  DataParallelGroup(c10::intrusive_ptr<c10d::Store> store, int rank, int world_size, const DistributedOptions& options,
                    const torch::Device& device, bool loopback);
  /// After a failed collective the process group is left unfreed: its destructor could wait on
  /// a peer that hangs, and the process is about to exit with the error anyway.
  ~DataParallelGroup();
  DataParallelGroup(const DataParallelGroup&) = delete;
  DataParallelGroup& operator=(const DataParallelGroup&) = delete;

  int rank() const { return rank_; }
  int world_size() const { return world_size_; }
  const std::string& backend() const { return backend_; }
  double timeout_s() const { return timeout_s_; }

  /// Sums every tensor (dense, contiguous, on the group's device) over the ranks, in place. The
  /// collectives are started together and then awaited. `what` names them in an error.
  /// Throws UserError (see the top of this file) when a rank fails or does not answer.
  void all_reduce(std::vector<torch::Tensor>& tensors, const std::string& what);
  /// Rank 0's values of every tensor, in place, on every rank. Throws as all_reduce.
  void broadcast(std::vector<torch::Tensor>& tensors, const std::string& what);

  /// Runs `f` on rank 0, then (once it has returned) on the other ranks: the task's setup,
  /// whose first run writes the tokenizers that the others then read. If rank 0's `f` throws,
  /// the others throw UserError saying so instead of running it.
  void rank0_first(const std::function<void()>& f);

  /// Checks that every rank holds the same `fingerprint`: "section.key" -> value, e.g.
  /// "config.lr" -> "0.001". Each rank publishes its own, compares it with rank 0's and
  /// publishes its verdict; each then reads every rank's verdict, so that all ranks stop alike.
  /// Throws UserError on every rank when one differs, naming the lowest such rank, the first
  /// key that differs (a key one side lacks is "(none)") and both values; when a rank failed
  /// instead (its error); or when one has not answered within the timeout.
  void agree(const std::map<std::string, std::string>& fingerprint);

  /// Records this rank's error in the store, so that the other ranks name it in theirs.
  /// Never throws (the store may be gone).
  void report_failure(const std::string& what) noexcept;

 private:
  // The UserError a failed collective becomes: which rank failed or stopped answering.
  [[noreturn]] void fail(const std::string& what, const std::exception& error);
  // all_reduce (`reduce`) or broadcast: each tensor's collective started, then all awaited.
  void collective(std::vector<torch::Tensor>& tensors, const std::string& what, bool reduce);

  c10::intrusive_ptr<c10d::Store> store_;  // this group's keys, kept apart from the launcher's
  // LibTorch 2 split the process group: ProcessGroupGloo and ProcessGroupNCCL became Backends.
  using Collectives = std::conditional_t<TORCH_VERSION_MAJOR >= 2, c10d::Backend, c10d::ProcessGroup>;
  c10::intrusive_ptr<Collectives> group_;
  int rank_, world_size_;
  std::string backend_;
  double timeout_s_;
  bool failed_ = false;
};

}  // namespace nlpzoo
