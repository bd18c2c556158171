#include "local/parallel_runner.hpp"

#include <chrono>

namespace redbloom {
namespace {

// True once ready() is, false if it was not within the spin time.
template <class Ready>
bool spin_until(Ready ready) {
  constexpr auto kSpin = std::chrono::microseconds(100);
  const auto deadline = std::chrono::steady_clock::now() + kSpin;
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (ready()) return true;
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    }
    if (std::chrono::steady_clock::now() > deadline) return false;
  }
}

}  // namespace

ParallelRunner::ParallelRunner(unsigned threads) : threads_(threads < 1 ? 1 : threads) {
  helpers_.reserve(threads_ - 1);
  for (unsigned t = 1; t < threads_; ++t) helpers_.emplace_back([this, t] { helper_loop(t); });
}

ParallelRunner::~ParallelRunner() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  start_.notify_all();
  for (std::thread& helper : helpers_) helper.join();
}

void ParallelRunner::helper_loop(unsigned index) {
  std::uint64_t seen = 0;
  for (;;) {
    const auto started = [&] { return stopping_.load() || generation_.load() != seen; };
    if (!spin_until(started)) {
      std::unique_lock lock(mutex_);
      start_.wait(lock, started);
    }
    if (stopping_) return;
    seen = generation_.load();
    const std::function<void(unsigned)>* task = task_;
    try {
      (*task)(index);
    } catch (...) {
      std::lock_guard lock(mutex_);
      if (!error_) error_ = std::current_exception();
    }
    if (pending_.fetch_sub(1) == 1) {
      // Under the mutex, so that a caller between checking pending_ and sleeping gets it.
      std::lock_guard lock(mutex_);
      done_.notify_one();
    }
  }
}

void ParallelRunner::run(const std::function<void(unsigned)>& task) {
  std::lock_guard turn(run_mutex_);
  {
    std::lock_guard lock(mutex_);
    task_ = &task;
    pending_ = threads_ - 1;
    error_ = nullptr;
    ++generation_;
  }
  start_.notify_all();
  std::exception_ptr error;
  try {
    task(0);
  } catch (...) {
    error = std::current_exception();
  }
  const auto finished = [&] { return pending_.load() == 0; };
  if (!spin_until(finished)) {
    std::unique_lock lock(mutex_);
    done_.wait(lock, finished);
  }
  std::lock_guard lock(mutex_);
  if (!error) error = error_;
  task_ = nullptr;
  if (error) std::rethrow_exception(error);
}

}  // namespace redbloom
