// The requests and measurements of a serving benchmark run, read from the
// result file the benchmark client wrote: vLLM's benchmarks/benchmark_serving.py
// and `vllm bench serve` (--save-result; the per-request lengths with
// --save-detailed where the release asks for it), or SGLang's bench_serving
// (--output-file with --output-details: one JSON object per line, the last
// line read). `stacksim serve SCENARIO --requests-from FILE` replays those
// requests on the scenario's deployment and sets each measured statistic
// beside its prediction.
//
// What the file gives and how it is read:
// - input_lens / output_lens: each request's prompt tokens and the tokens it
//   generated (the client's count), in request order. Requests with a
//   non-empty entry in "errors" failed and are left out.
// - request_rate ("inf" or a number, requests/s) and burstiness (gamma
//   shape, 1 = Poisson; absent: 1): the arrival process. The client draws
//   its gaps with its own random generator; stacksim draws the same process
//   with its seed, the first request at time 0 as the client sends it.
// - max_concurrency (absent or null: none): at most that many requests in
//   flight (the client's FIFO semaphore): past the first N, a request goes
//   when the rate releases it or when a request finishes, whichever is
//   later.
// - Measured statistics, where present: duration, completed,
//   request_throughput, output_throughput, mean/median/p99 TTFT, TPOT, ITL
//   and end-to-end latency (ms; vLLM's e2el, SGLang's e2e_latency).
// Python writes infinities and NaNs as the bare words Infinity and NaN; they
// are read as "inf" and as absent.
#ifndef STACKSIM_SIM_SERVE_BENCH_RESULT_H_
#define STACKSIM_SIM_SERVE_BENCH_RESULT_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sim/serve/request_workload.h"

namespace stacksim::serve {

struct BenchmarkRun {
  std::string file;
  std::vector<Request> requests;   // arrivals and closed-loop links set as the client sent them
  int64_t failed = 0;              // requests with an error, left out
  std::optional<double> rate_per_s;  // nullopt: all at once (request_rate inf)
  double burstiness = 1;
  std::optional<int64_t> max_concurrency;
  // The file's numeric top-level values by name (e.g. "mean_ttft_ms"): the
  // measured statistics among them (NaN ones are absent).
  std::map<std::string, double> measured;
  std::string source;              // one line: the client, the rate and the concurrency
};

// Throws InputError naming the file and the field when it is not such a
// result (no input_lens / output_lens, arrays of different lengths, a
// request without output).
BenchmarkRun ReadBenchmarkResult(const std::string& path, uint64_t seed);

// JSON text with Python's bare Infinity, -Infinity and NaN (outside strings)
// replaced by "inf", "-inf" and null, so a standard parser reads it.
std::string SanitizePythonJson(const std::string& text);

}  // namespace stacksim::serve

#endif  // STACKSIM_SIM_SERVE_BENCH_RESULT_H_
