// The requests a serving simulation replays: drawn from the scenario's
// arrival process and length distributions with an explicit seed
// (std::mt19937_64; the same seed gives the same requests on one standard
// library), or read from a CSV trace.
#ifndef STACKSIM_SIM_SERVE_REQUEST_WORKLOAD_H_
#define STACKSIM_SIM_SERVE_REQUEST_WORKLOAD_H_

#include <cstdint>
#include <string>
#include <vector>

#include "sim/serve/serve_config.h"
#include "sim/util/units.h"

namespace stacksim::serve {

struct Request {
  Time arrival;
  int64_t prompt_tokens = 0;
  int64_t output_tokens = 0;  // >= 1: the first comes out of the prefill
  // Closed loop: >= 0 makes this request arrive when request `after` (an
  // earlier index) finishes, as a client that sends its next request when
  // the previous answer is complete; `arrival` is then ignored.
  // kAfterAnyFinish: it takes the slot of the next request to finish, in
  // index order, and goes then or at `arrival`, whichever is later (a
  // benchmark client's concurrency limit, a FIFO semaphore).
  int64_t after = -1;
};
inline constexpr int64_t kAfterAnyFinish = -2;

// Sorted by arrival. Throws InputError for an unreadable or malformed trace
// (naming the file and line).
std::vector<Request> GenerateRequests(const WorkloadConfig& w);
// CSV (sim/util/csv.h) whose header names the columns arrival_s (seconds,
// >= 0), prompt_tokens and output_tokens (whole, >= 1), in any order, other
// columns ignored; at most `limit` rows (0: all). Errors name the file, the
// column and the line.
std::vector<Request> ReadRequestTrace(const std::string& path, int64_t limit = 0);

}  // namespace stacksim::serve

#endif  // STACKSIM_SIM_SERVE_REQUEST_WORKLOAD_H_
