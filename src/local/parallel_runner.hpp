// A fixed set of helper threads that run one task on several threads at a time, for splitting
// a local batch call over the machine's cores. Internal to the library.
//
// Why threads for a Bloom filter: out of cache, a batch is bounded by how many cache misses a
// core keeps in flight, not by its arithmetic. A classic-layout item reads k random lines; each
// core brings its own fill buffers, so two cores keep twice the misses in flight.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace redbloom {

class ParallelRunner {
 public:
  explicit ParallelRunner(unsigned threads);
  ~ParallelRunner();
  ParallelRunner(const ParallelRunner&) = delete;
  ParallelRunner& operator=(const ParallelRunner&) = delete;

  [[nodiscard]] unsigned threads() const noexcept { return threads_; }

  // Runs task(t) for every t in [0, threads()): t = 0 on the calling thread, the others on
  // the helpers. Returns when all have returned, rethrowing the first exception one threw.
  // Calls from several threads take turns.
  //
  // Between tasks the helpers, and the caller waiting for them, spin briefly before they
  // sleep: waking a sleeping thread can take as long as a whole add batch on two threads,
  // while a batch that follows another finds the helper still spinning.
  void run(const std::function<void(unsigned)>& task);

 private:
  void helper_loop(unsigned index);

  const unsigned threads_;
  std::mutex run_mutex_;  // one run at a time
  std::mutex mutex_;      // guards everything below; the atomics change under it too
  std::condition_variable start_;
  std::condition_variable done_;
  const std::function<void(unsigned)>* task_ = nullptr;  // published by generation_
  std::atomic<std::uint64_t> generation_ = 0;
  std::atomic<unsigned> pending_ = 0;
  std::atomic<bool> stopping_ = false;
  std::exception_ptr error_;
  std::vector<std::thread> helpers_;
};

}  // namespace redbloom
