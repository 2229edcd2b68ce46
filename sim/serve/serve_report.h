// Serving metrics from a simulation: latency percentiles (TTFT, TPOT, end to
// end), throughput, goodput under the scenario's SLOs, KV-cache use over time
// and cost per million tokens; as text or JSON.
#ifndef STACKSIM_SIM_SERVE_SERVE_REPORT_H_
#define STACKSIM_SIM_SERVE_SERVE_REPORT_H_

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/serve/serve_config.h"
#include "sim/serve/serve_sim.h"

namespace stacksim::serve {

struct LatencyStats {
  // Seconds; percentiles by linear interpolation (sim/util/statistics.h).
  double mean = 0, p50 = 0, p90 = 0, p95 = 0, p99 = 0;
};

struct ServeMetrics {
  int64_t requests = 0;
  LatencyStats ttft, tpot, e2e;
  // Per output token (after each request's first): the gap to the request's
  // previous token, over all tokens (ServeResult::token_gaps).
  LatencyStats token_gap;
  double duration_s = 0;            // first arrival (time 0) to last finish
  double requests_per_s = 0;
  double tokens_per_s = 0;          // prompt + output
  double output_tokens_per_s = 0;
  double slo_attained = 0;          // fraction meeting both ttft and tpot targets
  double goodput_requests_per_s = 0;
  double kv_mean_use = 0, kv_peak_use = 0;
  std::vector<std::pair<double, double>> kv_over_time;  // (s, mean use in the bin), <= 50 bins
  int64_t preemptions = 0;
  int64_t iterations = 0;
  double gpu_hour_usd = 0;          // 0: unknown
  std::string price_source;
  double usd_per_million_tokens = 0;         // all tokens
  double usd_per_million_output_tokens = 0;
};

// gpu_hour_usd / price_source: the GPU's price (0 when unknown).
ServeMetrics ComputeMetrics(const ServeConfig& c, const ServeResult& r, double gpu_hour_usd,
                            const std::string& price_source);
std::string ServeText(const ServeConfig& c, const ServeResult& r, const ServeMetrics& m);
nlohmann::json ServeJson(const ServeConfig& c, const ServeResult& r, const ServeMetrics& m);

}  // namespace stacksim::serve

#endif  // STACKSIM_SIM_SERVE_SERVE_REPORT_H_
