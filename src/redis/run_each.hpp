// Fan-out for work that waits on several servers (a cluster's masters, a sharded filter's
// servers) or builds several deltas at once: one task per thread, the first on the caller's.
#pragma once

#include <cstddef>
#include <exception>
#include <thread>
#include <vector>

namespace redbloom::redis {

// Runs work(i) for i in [0, n), concurrently, waits for all of them, and returns what each
// threw (null where it succeeded).
template <class Work>
std::vector<std::exception_ptr> run_each_collecting(std::size_t n, Work&& work) {
  std::vector<std::exception_ptr> failed(n);
  auto task = [&](std::size_t i) {
    try {
      work(i);
    } catch (...) {
      failed[i] = std::current_exception();
    }
  };
  std::vector<std::thread> threads;
  threads.reserve(n > 0 ? n - 1 : 0);
  for (std::size_t i = 1; i < n; ++i) threads.emplace_back(task, i);
  if (n > 0) task(0);
  for (std::thread& t : threads) t.join();
  return failed;
}

// The same; if any threw, the exception of the lowest i is rethrown (one failure is reported).
template <class Work>
void run_each(std::size_t n, Work&& work) {
  for (const std::exception_ptr& e : run_each_collecting(n, work)) {
    if (e) std::rethrow_exception(e);
  }
}

}  // namespace redbloom::redis
