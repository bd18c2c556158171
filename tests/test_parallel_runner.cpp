// ParallelRunner: every run calls the task once per thread index and returns only after all
// of them, whether the helpers were still spinning from the last run or had gone to sleep;
// an exception in any thread comes back to the caller; callers on several threads take turns.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "local/parallel_runner.hpp"

namespace redbloom {
namespace {

TEST(ParallelRunner, EveryIndexRunsOncePerRunAndRunReturnsAfterAll) {
  ParallelRunner runner(3);
  std::vector<int> calls(3);
  for (int run = 0; run < 2000; ++run) {
    // Every 100 runs, pause longer than the helpers' spin (parallel_runner.cpp's kSpin), so
    // that they go to sleep.
    if (run % 100 == 99) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    runner.run([&](unsigned t) {
      if (t != 0 && run % 7 == 0) std::this_thread::sleep_for(std::chrono::microseconds(300));
      ++calls[t];  // each index its own counter; run() must order these before it returns
    });
    ASSERT_EQ(calls[0], run + 1);
    ASSERT_EQ(calls[1], run + 1) << "run returned before helper 1 finished";
    ASSERT_EQ(calls[2], run + 1) << "run returned before helper 2 finished";
  }
}

TEST(ParallelRunner, ExceptionsReachTheCallerAndTheRunnerKeepsWorking) {
  ParallelRunner runner(2);
  EXPECT_THROW(runner.run([](unsigned t) {
    if (t == 1) throw std::runtime_error("helper failed");
  }),
               std::runtime_error);
  EXPECT_THROW(runner.run([](unsigned t) {
    if (t == 0) throw std::runtime_error("caller failed");
  }),
               std::runtime_error);
  std::atomic<int> calls{0};
  runner.run([&](unsigned) { ++calls; });
  EXPECT_EQ(calls.load(), 2);
}

TEST(ParallelRunner, CallersOnSeveralThreadsTakeTurns) {
  ParallelRunner runner(2);
  std::atomic<int> inside{0};
  std::atomic<bool> overlapped{false};
  std::atomic<int> calls{0};
  auto caller = [&] {
    for (int i = 0; i < 300; ++i) {
      runner.run([&](unsigned) {
        if (++inside > 2) overlapped = true;  // two runs' tasks at once
        ++calls;
        --inside;
      });
    }
  };
  std::thread a(caller);
  std::thread b(caller);
  a.join();
  b.join();
  EXPECT_FALSE(overlapped.load());
  EXPECT_EQ(calls.load(), 2 * 300 * 2);
}

TEST(ParallelRunner, OneThreadRunsOnTheCaller) {
  ParallelRunner runner(1);
  const auto caller = std::this_thread::get_id();
  std::thread::id ran_on;
  runner.run([&](unsigned t) {
    EXPECT_EQ(t, 0u);
    ran_on = std::this_thread::get_id();
  });
  EXPECT_EQ(ran_on, caller);
}

}  // namespace
}  // namespace redbloom
