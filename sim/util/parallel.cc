#include "sim/util/parallel.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace stacksim {

int Workers(int threads) {
  return threads > 0 ? threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

void ParallelFor(int64_t n, int threads, const std::function<void(int64_t i, int worker)>& fn) {
  if (n <= 0) return;
  const int t = static_cast<int>(std::min<int64_t>(Workers(threads), n));
  if (t == 1) {
    for (int64_t i = 0; i < n; ++i) fn(i, 0);
    return;
  }
  std::atomic<int64_t> next{0};
  std::mutex error_mutex;
  std::exception_ptr error;  // of error_index, the lowest index that threw
  int64_t error_index = n;
  auto work = [&](int worker) {
    for (int64_t i = next++; i < n; i = next++) {
      try {
        fn(i, worker);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (i < error_index) {
          error_index = i;
          error = std::current_exception();
        }
        next = n;  // stop handing out work
      }
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(static_cast<size_t>(t - 1));
  for (int w = 1; w < t; ++w) {
    try {
      pool.emplace_back(work, w);
    } catch (const std::system_error&) {
      break;  // the system gives no more threads: fewer threads, same results
    }
  }
  work(0);
  for (std::thread& th : pool) th.join();
  if (error) std::rethrow_exception(error);
}

void ParallelForWithinBudget(const std::vector<double>& bytes, double budget, int threads,
                             const std::function<void(int64_t i)>& fn) {
  const size_t n = bytes.size();
  if (n == 0) return;
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return bytes[a] > bytes[b]; });
  auto weight = [&](size_t i) { return std::min(std::max(bytes[i], 0.0), budget); };

  std::mutex mutex;
  std::condition_variable finished;
  std::vector<bool> started(n, false);
  size_t waiting = n;
  double in_use = 0;
  int running = 0;
  std::exception_ptr error;  // of error_index, the lowest index that threw
  size_t error_index = n;
  auto work = [&] {
    std::unique_lock<std::mutex> lock(mutex);
    while (waiting > 0) {
      // The heaviest waiting call that fits beside the running ones (any
      // call fits when none runs).
      size_t pick = n;
      for (size_t i : order) {
        if (!started[i] && (running == 0 || in_use + weight(i) <= budget)) {
          pick = i;
          break;
        }
      }
      if (pick == n) {
        finished.wait(lock);
        continue;
      }
      started[pick] = true;
      --waiting;
      in_use += weight(pick);
      ++running;
      lock.unlock();
      std::exception_ptr e;
      try {
        fn(static_cast<int64_t>(pick));
      } catch (...) {
        e = std::current_exception();
      }
      lock.lock();
      in_use -= weight(pick);
      --running;
      if (e && pick < error_index) {
        error_index = pick;
        error = e;
      }
      finished.notify_all();
    }
  };
  const int t = static_cast<int>(std::min<int64_t>(Workers(threads), static_cast<int64_t>(n)));
  std::vector<std::thread> pool;
  for (int w = 1; w < t; ++w) {
    try {
      pool.emplace_back(work);
    } catch (const std::system_error&) {
      break;
    }
  }
  work();
  for (std::thread& th : pool) th.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace stacksim
