#include "sim/util/parallel.h"

#include <algorithm>
#include <atomic>
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

}  // namespace stacksim
