// Event-driven simulation of serving requests on replicas of one model.
//
// Each replica runs iterations back to back while it has work; its scheduler
// (static, continuous, chunked prefill, or one pool of a disaggregated
// deployment) picks each iteration's batch, IterationCost prices it, and the
// paged KV cache (fixed-size blocks) bounds what is admitted. When a decode
// step finds no free block the newest running sequence is preempted: its
// blocks are dropped and its prompt plus output recomputed later, or its
// blocks are swapped to host memory over PCIe and back. A router assigns
// arriving requests to replicas. The simulation is deterministic: the same
// config and requests give the same result. Units: Time.
#ifndef STACKSIM_SIM_SERVE_SERVE_SIM_H_
#define STACKSIM_SIM_SERVE_SERVE_SIM_H_

#include <cstdint>
#include <vector>

#include "sim/serve/iteration_cost.h"
#include "sim/serve/request_workload.h"
#include "sim/serve/serve_config.h"

namespace stacksim::serve {

struct RequestOutcome {
  Time arrival;
  Time first_token;   // when the first output token exists (end of its prefill)
  Time finish;        // when the last output token exists
  int64_t prompt_tokens = 0;
  int64_t output_tokens = 0;
  int preemptions = 0;
  Time kv_transfer;   // disaggregated: prefill-to-decode KV transfer
};

struct KvUsageSample {
  Time time;
  int replica = 0;
  double used = 0;  // fraction of the replica's KV blocks held
};

// One output token after a request's first: when it came out and how long
// after the request's previous token (what per-token latency percentiles,
// such as LMDeploy's profile_generation, are taken over). Seconds.
struct TokenGap {
  float end_s = 0;
  float gap_s = 0;
};

struct ServeResult {
  std::vector<RequestOutcome> requests;  // in the order given
  std::vector<TokenGap> token_gaps;      // every output token after the first, in time order
  std::vector<KvUsageSample> kv_usage;   // one per iteration start
  int64_t iterations = 0;
  int64_t preemptions = 0;
  Time makespan;                         // until the last request finishes
  KvCachePlan kv_plan;                   // decode replicas' plan when disaggregated (same hardware)
};

// REQUIRES: requests sorted by arrival. Throws InputError for a request that
// can never fit one replica's KV cache.
ServeResult SimulateServing(const ServeConfig& c, const std::vector<Request>& requests);

}  // namespace stacksim::serve

#endif  // STACKSIM_SIM_SERVE_SERVE_SIM_H_
