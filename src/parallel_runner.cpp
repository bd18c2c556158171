#include "parallel_runner.hpp"

namespace redbloom {

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
    const std::function<void(unsigned)>* task = nullptr;
    {
      std::unique_lock lock(mutex_);
      start_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
      task = task_;
    }
    std::exception_ptr error;
    try {
      (*task)(index);
    } catch (...) {
      error = std::current_exception();
    }
    std::lock_guard lock(mutex_);
    if (error && !error_) error_ = error;
    if (--pending_ == 0) done_.notify_one();
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
  std::unique_lock lock(mutex_);
  done_.wait(lock, [&] { return pending_ == 0; });
  if (!error) error = error_;
  task_ = nullptr;
  if (error) std::rethrow_exception(error);
}

}  // namespace redbloom
