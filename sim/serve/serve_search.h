// Serving search: the cheapest deployment of a serving scenario's model that
// meets latency SLOs at a given arrival rate.
//
//   ServeSearchResult r = SearchServing(space, options);  // r.ranked: cheapest first
//
// A configuration is one replica's hardware and settings (topology, TP, PP,
// EP, weight and KV formats, scheduler, token budget, sequence limit); the
// search enumerates them, prunes those that cannot run (weights leave no KV
// cache, or the cache cannot hold the workload's longest request), and finds
// for each the fewest replicas whose simulated deployment meets every SLO.
//
// Each simulation is the whole deployment (SimulateServing with `replicas`
// replicas, the scenario's router, all requests at the full rate), not one
// replica at rate / replicas: round-robin splits a Poisson stream into
// smoother per-replica streams than Poisson at rate / replicas, and
// least-loaded routing depends on all replicas, so only the full deployment
// gives the latency the scenario's router would see. Every configuration
// replays the same requests (common random numbers: differences between
// configurations are not sampling noise).
//
// Replicas are found by doubling (1, 2, 4, ...) up to the first count that
// meets the SLOs, then bisection below it; this assumes latency does not
// get worse with more replicas, which holds for these routers up to the noise
// of a finite sample. Configurations are evaluated in parallel; each one's
// result depends only on its inputs, so the output does not depend on the
// thread count. Units: Time for latency, USD for prices.
#ifndef STACKSIM_SIM_SERVE_SERVE_SEARCH_H_
#define STACKSIM_SIM_SERVE_SERVE_SEARCH_H_

#include <cstdint>
#include <string>
#include <vector>

#include "sim/search/economics.h"
#include "sim/serve/serve_config.h"
#include "sim/serve/serve_report.h"
#include "sim/serve/serve_uncertainty.h"
#include "sim/util/units.h"

namespace stacksim::serve {

// One latency target, e.g. ttft_p99 <= 2 s.
struct SloTarget {
  enum class Metric { kTtft, kTpot, kE2e } metric = Metric::kTtft;
  enum class Statistic { kMean, kP50, kP90, kP99 } statistic = Statistic::kP99;
  Time limit;
  std::string name;  // "ttft_p99"
  double Measured(const ServeMetrics& m) const;  // seconds
};

// "ttft_p99=2s,tpot_p99=100ms": metric ttft, tpot or e2e; statistic mean,
// p50, p90 or p99; a time with its unit. Throws InputError(origin, "", ...).
std::vector<SloTarget> ParseSlo(const std::string& text, const std::string& origin = "--slo");

enum class ServeObjective { kCostPerHour, kCostPerToken };
// "cost-per-hour" or "cost-per-token"; throws InputError(origin, "", ...).
ServeObjective ParseServeObjective(const std::string& text, const std::string& origin = "--objective");

// A GPU type to deploy on: its topology (node, scale-up and scale-out links),
// profile and price (economics.h: the topology's gpu_hour_usd, else
// economics/gpus.json; 0 when neither gives one).
struct ServeHardware {
  config::TopologyConfig topology;
  std::string topology_file;
  config::ProfileConfig profile;
  search::Economics economics;
};
// A topology by name (topologies/<name>.json) or path, with its GPU's profile.
ServeHardware LoadServeHardware(const std::string& topology_ref);
// The first shipped topology (by file name) whose node.gpu is `gpu`; throws
// InputError(origin, ...) naming the GPUs that have one.
ServeHardware HardwareForGpu(const std::string& gpu, const std::string& origin = "--gpus");

// What is searched: the scenario (model, workload, memory and KV settings,
// router, SLO-independent defaults) and the choices per dimension.
struct ServeSearchSpace {
  ServeConfig base;
  std::vector<ServeHardware> hardware;
  std::vector<int> tp;               // empty: powers of two up to the node's GPUs
  std::vector<int> pp = {1};
  std::vector<WeightFormat> weights = {WeightFormat::kBf16, WeightFormat::kFp8};
  std::vector<KvFormat> kv = {KvFormat::kBf16, KvFormat::kFp8};
  // Scheduler with its token budget per iteration (chunked: the chunk budget).
  struct Scheduler {
    SchedulerKind kind = SchedulerKind::kContinuous;
    int64_t max_batched_tokens = 8192;
  };
  std::vector<Scheduler> schedulers;
  std::vector<int64_t> max_sequences;  // empty: the scenario's
};

// The default space for a scenario: its topology, TP 1..node, PP 1, bf16 and
// fp8 weights and KV cache, the scenario's own scheduler and continuous
// batching at the scenario's token budget and chunked prefill at 512 and
// 2048 tokens, the scenario's sequence limit.
ServeSearchSpace DefaultServeSearchSpace(const ServeConfig& base);

// Command-line choices, each a comma-separated list ("" keeps the default):
// gpus (profile names) or topologies (names or paths), tp, pp, weights
// (bf16,fp8,int8,int4), kv (bf16,fp8,int8), chunks (chunked-prefill token
// budgets; "none" drops chunked prefill), max_sequences.
struct ServeSearchFlags {
  std::string gpus, topologies, tp, pp, weights, kv, chunks, max_sequences;
};
// Throws InputError naming the flag ("--tp") for a malformed or unknown value.
ServeSearchSpace BuildServeSearchSpace(const ServeConfig& base, const ServeSearchFlags& flags);

struct ServeSearchOptions {
  std::vector<SloTarget> slo;   // at least one
  double rate_per_s = 0;        // offered load of the whole deployment
  int64_t requests = 0;         // per simulation (0: the scenario's)
  int max_replicas = 64;
  ServeObjective objective = ServeObjective::kCostPerHour;
  int threads = 0;              // 0: all cores
};

// One configuration and, when found, the fewest replicas that meet the SLOs.
struct ServeCandidate {
  ServeConfig config;           // replicas set to the answer (or the last tried)
  std::string hardware;         // topology name
  search::Economics economics;
  bool feasible = false;
  ServeMetrics metrics;         // at config.replicas
  std::vector<std::pair<int, bool>> tried;  // (replicas, met) in the order simulated
  double usd_per_hour = 0;      // GPUs x price (0: no price)
  double usd_per_million_tokens = 0;
  double slo_load = 0;          // max over targets of measured / limit (<= 1: met)
  // Likely ranges of the p99 TTFT and TPOT and coverage warnings, from the
  // serving validation errors (AssessCandidates; serve_uncertainty.h).
  ServeAssessment assessment;
  std::string Label() const;    // "dgx-h100 tp8 pp1 w=fp8 kv=fp8 chunked-prefill/2048 seqs=256"
};

struct ServeSearchCounts {
  int64_t configurations = 0;   // enumerated
  int64_t invalid = 0;          // TP/PP/EP the model or node does not allow
  int64_t no_kv_room = 0;       // weights and activations leave no KV cache in HBM
  int64_t kv_too_small = 0;     // the KV cache cannot hold the workload's longest request
  int64_t slo_unmet = 0;        // no replica count up to max_replicas meets the SLOs
  int64_t feasible = 0;
  int64_t unpriced = 0;         // feasible on a GPU without a price
  int64_t simulations = 0;
};

struct ServeSearchResult {
  std::string scenario, model;
  double rate_per_s = 0;
  int64_t requests = 0;
  uint64_t seed = 0;
  std::vector<SloTarget> slo;
  ServeObjective objective = ServeObjective::kCostPerHour;
  int max_replicas = 0;
  ServeSearchCounts counts;
  // Feasible configurations with a price, best first: objective, then SLO
  // headroom (lower slo_load), then the label. Then those without a price,
  // by GPUs and headroom (not ranked by cost).
  std::vector<ServeCandidate> ranked;
  std::vector<ServeCandidate> unpriced;
  std::vector<ServeCandidate> unmet;  // slo_unmet, with what max_replicas gave
  int threads = 0;
  double wall_seconds = 0;
};

// REQUIRES: options.slo not empty, options.rate_per_s > 0. Throws InputError
// when the space is empty.
ServeSearchResult SearchServing(const ServeSearchSpace& space, const ServeSearchOptions& options);

// Gives every listed configuration its p99 TTFT/TPOT range and warnings
// against the serving error table at `table_path` (missing: a warning each).
void AssessCandidates(ServeSearchResult& result, const std::string& table_path);

}  // namespace stacksim::serve

#endif  // STACKSIM_SIM_SERVE_SERVE_SEARCH_H_
