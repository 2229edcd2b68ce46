#include "sim/util/parallel.h"

#include <gtest/gtest.h>

#include <atomic>
#include <algorithm>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace stacksim {
namespace {

std::vector<int64_t> Squares(int64_t n, int threads) {
  std::vector<int64_t> out(static_cast<size_t>(n), -1);
  ParallelFor(n, threads, [&](int64_t i, int) { out[static_cast<size_t>(i)] = i * i; });
  return out;
}

TEST(ParallelFor, RunsEveryIndexOnceWithTheSameResultsAtAnyThreadCount) {
  const std::vector<int64_t> one = Squares(1000, 1);
  for (int64_t i = 0; i < 1000; ++i) ASSERT_EQ(one[static_cast<size_t>(i)], i * i);
  for (int threads : {0, 2, 3, 8, 64}) EXPECT_EQ(Squares(1000, threads), one) << threads << " threads";
  std::vector<std::atomic<int>> calls(500);
  ParallelFor(500, 4, [&](int64_t i, int) { ++calls[static_cast<size_t>(i)]; });
  for (const auto& c : calls) EXPECT_EQ(c.load(), 1);
}

TEST(ParallelFor, NamesWorkersBelowTheThreadCount) {
  std::vector<int> worker(100, -1);
  ParallelFor(100, 3, [&](int64_t i, int w) { worker[static_cast<size_t>(i)] = w; });
  for (int w : worker) EXPECT_TRUE(w >= 0 && w < 3) << w;
  ParallelFor(2, 16, [&](int64_t i, int w) { EXPECT_LT(w, 2); });  // no more threads than indices
}

TEST(ParallelFor, NothingToDoCallsNothing) {
  int calls = 0;
  ParallelFor(0, 4, [&](int64_t, int) { ++calls; });
  ParallelFor(-3, 1, [&](int64_t, int) { ++calls; });
  EXPECT_EQ(calls, 0);
}

TEST(ParallelFor, RethrowsTheExceptionOfTheLowestIndexThatThrew) {
  // Index 5 throws late (after a sleep), index 50 at once: on several threads
  // 50's exception is raised first in time, yet 5's is the one a plain loop
  // throws, and the one the caller gets at every thread count.
  for (int threads : {1, 2, 4, 8}) {
    std::string what;
    try {
      ParallelFor(200, threads, [](int64_t i, int) {
        if (i == 5) {
          std::this_thread::sleep_for(std::chrono::milliseconds(30));
          throw std::runtime_error("index 5");
        }
        if (i == 50) throw std::invalid_argument("index 50");
      });
    } catch (const std::runtime_error& e) {
      what = e.what();
    } catch (const std::exception& e) {
      what = std::string("wrong exception: ") + e.what();
    }
    EXPECT_EQ(what, "index 5") << threads << " threads";
  }
}

TEST(ParallelFor, StopsHandingOutIndicesAfterAnError) {
  // Without the stop, 100,000 calls of >= 10 us on 4 threads take >= 0.25 s.
  std::atomic<int64_t> calls{0};
  EXPECT_THROW(ParallelFor(100'000, 4,
                           [&](int64_t i, int) {
                             ++calls;
                             if (i == 0) throw std::runtime_error("first");
                             std::this_thread::sleep_for(std::chrono::microseconds(10));
                           }),
               std::runtime_error);
  EXPECT_LT(calls.load(), 100'000);
  int64_t sequential = 0;
  EXPECT_THROW(ParallelFor(100, 1,
                           [&](int64_t i, int) {
                             ++sequential;
                             if (i == 9) throw std::runtime_error("tenth");
                           }),
               std::runtime_error);
  EXPECT_EQ(sequential, 10);
}

TEST(ParallelForWithinBudget, RunsEveryIndexOnceHeaviestFirstOnOneThread) {
  std::vector<int64_t> order;
  ParallelForWithinBudget({1, 5, 3, 5}, 10, 1, [&](int64_t i) { order.push_back(i); });
  EXPECT_EQ(order, (std::vector<int64_t>{1, 3, 2, 0}));  // ties by index
}

// Four threads, calls of weight 6, 6, 3, 3, 1 and 20 within 10: the running
// weights never pass 10, the call over the budget runs alone, and each call
// runs once.
TEST(ParallelForWithinBudget, KeepsTheRunningEstimatesWithinTheBudget) {
  const std::vector<double> bytes = {6, 6, 3, 3, 1, 20};  // 20: over the budget, alone
  std::mutex m;
  double in_use = 0, peak = 0;
  int running = 0;
  bool alone_ok = true;
  std::vector<int> runs(bytes.size(), 0);
  ParallelForWithinBudget(bytes, 10, 4, [&](int64_t i) {
    {
      std::lock_guard<std::mutex> lock(m);
      in_use += std::min(bytes[i], 10.0);
      ++running;
      peak = std::max(peak, in_use);
      if (bytes[i] > 10 && running != 1) alone_ok = false;
      ++runs[i];
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::lock_guard<std::mutex> lock(m);
    in_use -= std::min(bytes[i], 10.0);
    --running;
  });
  EXPECT_LE(peak, 10.0);
  EXPECT_TRUE(alone_ok);
  EXPECT_EQ(runs, std::vector<int>(bytes.size(), 1));
}

TEST(ParallelForWithinBudget, RunsEverythingThenRethrowsTheLowestIndexThatThrew) {
  std::atomic<int> calls{0};
  try {
    ParallelForWithinBudget({1, 2, 3, 4}, 100, 2, [&](int64_t i) {
      ++calls;
      if (i == 1 || i == 3) throw std::runtime_error("call " + std::to_string(i));
    });
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "call 1");
  }
  EXPECT_EQ(calls.load(), 4);
}

TEST(Workers, ZeroMeansEveryHardwareThread) {
  EXPECT_EQ(Workers(3), 3);
  EXPECT_GE(Workers(0), 1);
  EXPECT_EQ(Workers(-1), Workers(0));
}

}  // namespace
}  // namespace stacksim
