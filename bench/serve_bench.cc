// Speed of the serving simulation (stacksim serve): 10,000 requests against
// one 8-GPU Llama 3 70B replica (scenarios/serve-llama3-70b-8xh100.json, TP8
// on H100), at 8 requests/s (close to the replica's capacity, so batches are
// large) with each scheduler. The target: at most 5 s. Counters give
// the simulated outcome; the time includes building the iteration cost model.
#include <benchmark/benchmark.h>

#include "sim/config/scenario.h"
#include "sim/serve/request_workload.h"
#include "sim/serve/serve_report.h"
#include "sim/serve/serve_sim.h"

namespace stacksim::serve {
namespace {

void BM_Serve10kRequests(benchmark::State& state, const char* scheduler) {
  ServeOverrides o;
  o.requests = 10000;
  o.rate_per_s = 8;
  o.scheduler = scheduler;
  ServeConfig c = LoadServeScenario(config::DataRoot() + "/scenarios/serve-llama3-70b-8xh100.json", o);
  if (c.scheduler == SchedulerKind::kChunked) c.max_batched_tokens = 2048;
  std::vector<Request> requests = GenerateRequests(c.workload);
  ServeResult r;
  for (auto _ : state) {
    r = SimulateServing(c, requests);
    benchmark::DoNotOptimize(r.makespan);
  }
  ServeMetrics m = ComputeMetrics(c, r, 0, "");
  state.counters["iterations"] = static_cast<double>(r.iterations);
  state.counters["simulated_s"] = m.duration_s;
  state.counters["tpot_p99_ms"] = m.tpot.p99 * 1e3;
}

BENCHMARK_CAPTURE(BM_Serve10kRequests, continuous, "continuous")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Serve10kRequests, chunked_prefill, "chunked-prefill")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Serve10kRequests, static_batching, "static")->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace stacksim::serve

BENCHMARK_MAIN();
