#include "train/distributed.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef NLPZOO_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#ifdef NLPZOO_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <set>
#include <thread>

#include "core/io.h"

namespace nlpzoo {

namespace {

#ifdef NLPZOO_GLOO
constexpr bool kHaveGloo = true;
#else
constexpr bool kHaveGloo = false;
#endif
#ifdef NLPZOO_NCCL
constexpr bool kHaveNccl = true;
#else
constexpr bool kHaveNccl = false;
#endif

std::chrono::milliseconds milliseconds(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

std::vector<uint8_t> bytes(const std::string& s) { return {s.begin(), s.end()}; }
std::string text(const std::vector<uint8_t>& b) { return {b.begin(), b.end()}; }

// A fingerprint as the store holds it: key NUL value NUL ..., byte for byte (config values are
// the user's text, not necessarily UTF-8).
std::string serialize(const std::map<std::string, std::string>& fingerprint) {
  std::string out;
  for (const auto& [key, value] : fingerprint) out += key + '\0' + value + '\0';
  return out;
}

std::map<std::string, std::string> deserialize(const std::string& text) {
  std::map<std::string, std::string> out;
  for (size_t at = 0; at < text.size();) {
    const size_t key_end = text.find('\0', at), value_end = text.find('\0', key_end + 1);
    out[text.substr(at, key_end - at)] = text.substr(key_end + 1, value_end - key_end - 1);
    at = value_end + 1;
  }
  return out;
}

// c10::Error's what() carries a C++ backtrace: not for a user's eyes.
std::string reason(const std::exception& e) {
  if (const auto* c10 = dynamic_cast<const c10::Error*>(&e)) return c10->what_without_backtrace();
  return e.what();
}

// An integer environment variable in [low, high]; nullopt when unset.
std::optional<int> int_variable(const char* name, int low, int high) {
  const char* value = std::getenv(name);
  if (value == nullptr) return std::nullopt;
  char* end = nullptr;
  const long x = std::strtol(value, &end, 10);
  if (*value == '\0' || *end != '\0' || x < low || x > high)
    throw UserError(std::string("environment variable ") + name + ": expected an integer in [" + std::to_string(low) +
                    ", " + std::to_string(high) + "], got '" + value + "'");
  return static_cast<int>(x);
}

std::string required_variable(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0')
    throw UserError(std::string("environment variable ") + name +
                    " is not set: a data-parallel worker (RANK and WORLD_SIZE are set) needs RANK, WORLD_SIZE, "
                    "MASTER_ADDR and MASTER_PORT, as torchrun sets them");
  return value;
}

}  // namespace

std::optional<LaunchEnvironment> launch_environment() {
  if (std::getenv("RANK") == nullptr && std::getenv("WORLD_SIZE") == nullptr) return std::nullopt;
  required_variable("RANK");
  LaunchEnvironment e;
  required_variable("WORLD_SIZE");
  e.world_size = *int_variable("WORLD_SIZE", 1, 1 << 20);
  e.rank = *int_variable("RANK", 0, e.world_size - 1);
  e.local_world_size = int_variable("LOCAL_WORLD_SIZE", 1, e.world_size).value_or(1);
  e.local_rank = int_variable("LOCAL_RANK", 0, e.local_world_size - 1).value_or(0);
  e.master_addr = required_variable("MASTER_ADDR");
  required_variable("MASTER_PORT");
  e.master_port = *int_variable("MASTER_PORT", 1, 65535);
  const char* agent = std::getenv("TORCHELASTIC_USE_AGENT_STORE");
  e.agent_store = agent != nullptr && std::string(agent) == "True";  // as torch.distributed reads it
  e.restart_count = int_variable("TORCHELASTIC_RESTART_COUNT", 0, 1 << 20).value_or(0);
  return e;
}

std::string resolve_backend(const std::string& backend, const torch::Device& device) {
  if (backend == "auto") return kHaveNccl && device.is_cuda() ? "nccl" : resolve_backend("gloo", device);
  if (backend == "gloo") {
    if (!kHaveGloo)
      throw UserError("--dist-backend gloo: this nlpzoo was built without Gloo (install libgloo-dev, then "
                      "reconfigure: cmake -S . -B build)");
    return backend;
  }
  if (backend == "nccl") {
    if (!kHaveNccl)
      throw UserError("--dist-backend nccl: this build has no NCCL (a CPU LibTorch, or built without -DNLPZOO_NCCL=ON); "
                      "use gloo");
    if (!device.is_cuda())
      throw UserError("--dist-backend nccl: the model is on the CPU and NCCL reduces CUDA tensors only; use gloo or "
                      "--device cuda");
    return backend;
  }
  throw UserError("--dist-backend " + backend + ": expected auto, gloo or nccl");
}

std::unique_ptr<DataParallelGroup> DataParallelGroup::join(const LaunchEnvironment& env,
                                                           const DistributedOptions& options,
                                                           const torch::Device& device) {
  c10d::TCPStoreOptions store_options;
  store_options.port = static_cast<std::uint16_t>(env.master_port);
  store_options.isServer = !env.agent_store && env.rank == 0;
  store_options.waitWorkers = false;
  store_options.timeout = milliseconds(options.timeout_s);
  c10::intrusive_ptr<c10d::Store> store;
  const std::string where = env.master_addr + ":" + std::to_string(env.master_port);
  try {
    store = c10::make_intrusive<c10d::TCPStore>(env.master_addr, store_options);
  } catch (const std::exception& e) {
    throw UserError("rank " + std::to_string(env.rank) + " of " + std::to_string(env.world_size) + ": " +
                    (store_options.isServer ? "cannot serve the TCP store at " + where
                                            : "cannot reach the TCP store at " + where + " within --dist-timeout") +
                    " (" + reason(e) + ")");
  }
  // torch.distributed's own prefix: each torchrun restart attempt has its own keys.
  if (env.agent_store)
    store = c10::make_intrusive<c10d::PrefixStore>("/worker/attempt_" + std::to_string(env.restart_count), store);
  const bool loopback = env.master_addr == "127.0.0.1" || env.master_addr == "localhost" || env.master_addr == "::1";
  return std::make_unique<DataParallelGroup>(store, env.rank, env.world_size, options, device, loopback);
}

DataParallelGroup::DataParallelGroup(c10::intrusive_ptr<c10d::Store> store, int rank, int world_size,
                                     const DistributedOptions& options, const torch::Device& device, bool loopback)
    : store_(c10::make_intrusive<c10d::PrefixStore>("nlpzoo", std::move(store))), rank_(rank),
      world_size_(world_size), backend_(resolve_backend(options.backend, device)), timeout_s_(options.timeout_s) {
  if (!(timeout_s_ > 0)) throw UserError("--dist-timeout: must be a positive number of seconds");
  const auto timeout = milliseconds(timeout_s_);
  store_->setTimeout(timeout);
  try {
#ifdef NLPZOO_GLOO
    if (backend_ == "gloo") {
      auto gloo = c10d::ProcessGroupGloo::Options::create(timeout);
      // Which network Gloo uses: as torch.distributed, GLOO_SOCKET_IFNAME names an interface.
      if (const char* interface = std::getenv("GLOO_SOCKET_IFNAME"))
        gloo->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(interface));
      else if (loopback)
        gloo->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
      else
        gloo->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
      group_ = c10::make_intrusive<c10d::ProcessGroupGloo>(store_, rank, world_size, gloo);
    }
#endif
#ifdef NLPZOO_NCCL
    if (backend_ == "nccl") {
      auto nccl = c10d::ProcessGroupNCCL::Options::create();
      nccl->timeout = timeout;
      group_ = c10::make_intrusive<c10d::ProcessGroupNCCL>(store_, rank, world_size, nccl);
    }
#endif
  } catch (const std::exception& e) {
    throw UserError("rank " + std::to_string(rank) + " of " + std::to_string(world_size) + ": cannot join the " +
                    backend_ + " process group within --dist-timeout " + std::to_string(timeout_s_) + " s (" +
                    reason(e) + ")");
  }
}

DataParallelGroup::~DataParallelGroup() {
  if (!failed_) return;
  (void)group_.release();
  (void)store_.release();
}

void DataParallelGroup::all_reduce(std::vector<torch::Tensor>& tensors, const std::string& what) {
  collective(tensors, what, /*reduce=*/true);
}

void DataParallelGroup::broadcast(std::vector<torch::Tensor>& tensors, const std::string& what) {
  collective(tensors, what, /*reduce=*/false);
}

void DataParallelGroup::collective(std::vector<torch::Tensor>& tensors, const std::string& what, bool reduce) {
  std::vector<c10::intrusive_ptr<c10d::Work>> works;
  try {
    for (auto& tensor : tensors) {
      std::vector<at::Tensor> one{tensor};  // c10d's list holds one tensor per device of this process
      works.push_back(reduce ? group_->allreduce(one) : group_->broadcast(one));
    }
    for (auto& work : works) work->wait();
  } catch (const std::exception& e) {
    fail(what, e);
  }
}

void DataParallelGroup::fail(const std::string& what, const std::exception& error) {
  failed_ = true;
  const std::string head = "data-parallel rank " + std::to_string(rank_) + " of " + std::to_string(world_size_) +
                           ": " + what + " failed: ";
  const std::string cause = " [" + reason(error) + "]";
  std::string who;
  try {
    // The living ranks say so ("lost/"), a rank that failed by itself left its error
    // ("failed/"); whoever has done neither after a few seconds died, was killed or hangs.
    store_->set("lost/" + std::to_string(rank_), bytes(reason(error)));
    const auto deadline = std::chrono::steady_clock::now() + milliseconds(std::min(5.0, timeout_s_));
    std::vector<int> silent;
    for (;;) {
      silent.clear();
      for (int q = 0; q < world_size_; ++q) {
        if (q == rank_) continue;
        const std::string failed = "failed/" + std::to_string(q);
        if (store_->check({failed}))
          throw UserError(head + "rank " + std::to_string(q) + " stopped with an error: " + text(store_->get(failed)));
        if (!store_->check({"lost/" + std::to_string(q)})) silent.push_back(q);
      }
      if (silent.empty() || std::chrono::steady_clock::now() >= deadline) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    for (size_t i = 0; i < silent.size(); ++i) who += (i == 0 ? "" : ", ") + std::to_string(silent[i]);
    who = silent.empty() ? "every rank is alive but the collective broke (network?)"
                         : (silent.size() == 1 ? "rank " : "ranks ") + who +
                               " stopped answering: died, killed or hung (--dist-timeout " +
                               std::to_string(static_cast<int64_t>(timeout_s_)) + " s)";
  } catch (const UserError&) {
    throw;
  } catch (const std::exception& e) {
    who = "the TCP store is unreachable too (" + reason(e) +
          "); without a launcher's store rank 0 serves it, so rank 0 may have died";
  }
  throw UserError(head + who + cause);
}

void DataParallelGroup::rank0_first(const std::function<void()>& f) {
  const std::string key = "setup";
  if (rank_ == 0) {
    try {
      f();
    } catch (...) {
      try {
        store_->set(key, bytes("failed"));
      } catch (const std::exception&) {
      }
      throw;
    }
    store_->set(key, bytes("ok"));
    return;
  }
  try {
    store_->wait({key}, milliseconds(timeout_s_));
  } catch (const std::exception& e) {
    failed_ = true;
    throw UserError("data-parallel rank " + std::to_string(rank_) + ": rank 0 did not finish setting up the task within "
                    "--dist-timeout " + std::to_string(static_cast<int64_t>(timeout_s_)) + " s (" + reason(e) + ")");
  }
  if (text(store_->get(key)) != "ok")
    throw UserError("data-parallel rank " + std::to_string(rank_) + ": rank 0 failed to set up the task (see its error)");
  f();
}

void DataParallelGroup::agree(const std::map<std::string, std::string>& fingerprint) {
  const std::string head = "data-parallel rank " + std::to_string(rank_) + " of " + std::to_string(world_size_) + ": ";
  const auto deadline = std::chrono::steady_clock::now() + milliseconds(timeout_s_);
  // Rank q's value of `key`; a rank that failed before it wrote it has written its error instead.
  const auto await = [&](const std::string& key, int q) {
    const std::string theirs = key + "/" + std::to_string(q), failed = "failed/" + std::to_string(q);
    for (;;) {
      if (store_->check({theirs})) return text(store_->get(theirs));
      if (store_->check({failed}))
        throw UserError(head + "rank " + std::to_string(q) + " stopped with an error: " + text(store_->get(failed)));
      if (std::chrono::steady_clock::now() >= deadline)
        throw UserError(head + "rank " + std::to_string(q) + " did not compare its run with the others' within "
                        "--dist-timeout " + std::to_string(static_cast<int64_t>(timeout_s_)) +
                        " s: died, killed or hung");
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  };
  try {
    store_->set("fingerprint/" + std::to_string(rank_), bytes(serialize(fingerprint)));
    std::string verdict;  // empty: as rank 0's
    if (rank_ != 0) {
      const auto first = deserialize(await("fingerprint", 0));
      std::set<std::string> keys;
      for (const auto* side : {&fingerprint, &first})
        for (const auto& entry : *side) keys.insert(entry.first);
      const auto value = [](const std::map<std::string, std::string>& of, const std::string& key) {
        const auto it = of.find(key);
        return it == of.end() ? std::string("(none)") : it->second;
      };
      for (const auto& key : keys) {
        const std::string mine = value(fingerprint, key), theirs = value(first, key);
        if (mine == theirs) continue;
        const auto dot = key.find('.');
        const std::string section = dot == std::string::npos ? "run" : key.substr(0, dot);
        verdict = "rank " + std::to_string(rank_) + "'s " + section + " differs from rank 0's at " +
                  key.substr(dot == std::string::npos ? 0 : dot + 1) + ": " + mine + " vs " + theirs +
                  "; start every rank with the same config, options and corpus, and the same nlpzoo executable";
        break;
      }
    }
    store_->set("verdict/" + std::to_string(rank_), bytes(verdict));
    // Every rank reads the verdicts in one order, so all of them name the same difference.
    for (int q = 0; q < world_size_; ++q) {
      const std::string theirs = q == rank_ ? verdict : await("verdict", q);
      if (!theirs.empty()) throw UserError(head + theirs);
    }
  } catch (const UserError&) {
    throw;
  } catch (const std::exception& e) {
    throw UserError(head + "cannot compare this rank's run with the others' through the TCP store (" + reason(e) + ")");
  }
}

void DataParallelGroup::report_failure(const std::string& what) noexcept {
  if (failed_) return;  // a failed collective has reported this rank as alive ("lost/")
  try {
    store_->set("failed/" + std::to_string(rank_), bytes(what));
  } catch (...) {
  }
}

}  // namespace nlpzoo
