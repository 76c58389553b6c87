#pragma once
// Runs a producer on a background thread and hands its items over through a bounded
// queue, so that the training step never waits for batching and padding.
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

namespace nlpzoo {

template <class T>
class Prefetcher {
 public:
  /// `produce` returns the next item or nullopt at the end; it runs on the worker thread.
  /// An exception it throws is rethrown by next().
  Prefetcher(std::function<std::optional<T>()> produce, size_t capacity)
      : produce_(std::move(produce)), capacity_(capacity), worker_([this] { run(); }) {}

  ~Prefetcher() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    worker_.join();
  }

  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;

  /// Blocks until an item is ready; nullopt once the producer is exhausted.
  std::optional<T> next() {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [this] { return !queue_.empty() || done_; });
    if (!queue_.empty()) {
      T item = std::move(queue_.front());
      queue_.pop_front();
      cv_.notify_all();
      return item;
    }
    if (error_) std::rethrow_exception(error_);
    return std::nullopt;
  }

  /// While a Pause lives the worker makes no item (it first finishes the one it is making), so
  /// the producer's source may be used by another thread meanwhile.
  class Pause {
   public:
    explicit Pause(Prefetcher& p) : p_(p) {
      std::unique_lock<std::mutex> lock(p_.mutex_);
      p_.paused_ = true;
      p_.cv_.wait(lock, [this] { return !p_.producing_; });
    }
    ~Pause() {
      {
        std::lock_guard<std::mutex> lock(p_.mutex_);
        p_.paused_ = false;
      }
      p_.cv_.notify_all();
    }
    Pause(const Pause&) = delete;
    Pause& operator=(const Pause&) = delete;

   private:
    Prefetcher& p_;
  };

 private:
  void run() {
    try {
      while (true) {
        {
          std::unique_lock<std::mutex> lock(mutex_);
          cv_.wait(lock, [this] { return (queue_.size() < capacity_ && !paused_) || stop_; });
          if (stop_) break;
          producing_ = true;
        }
        auto item = produce_();
        std::lock_guard<std::mutex> lock(mutex_);
        producing_ = false;
        cv_.notify_all();
        if (!item) break;
        queue_.push_back(std::move(*item));
        cv_.notify_all();
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      producing_ = false;
      error_ = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(mutex_);
    done_ = true;
    cv_.notify_all();
  }

  std::function<std::optional<T>()> produce_;
  size_t capacity_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<T> queue_;
  bool stop_ = false;
  bool done_ = false;
  bool paused_ = false;
  bool producing_ = false;  // the worker is inside produce_
  std::exception_ptr error_;
  std::thread worker_;  // last: starts after every other member exists
};

}  // namespace nlpzoo
