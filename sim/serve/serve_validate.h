// Validation of the serving simulator against published measurements:
// schema stacksim.validation.serving/1 (validation/README.md).
//
// Each entry becomes a serving scenario: the model file, the GPU's profile
// through a shipped system topology, the replica's tp/pp, the weight, KV and
// compute formats, and the engine's batching with its published limits (or
// the engine's documented defaults where the entry gives none, reported as
// choices). The benchmark's load becomes requests: offline runs are a burst
// at t = 0, static batches one batch at t = 0, concurrency-N runs a closed
// loop of N clients, Poisson runs as given. Each published metric is
// compared with the simulated one; entries that cannot be modelled are
// listed with the reason, never dropped. Nothing is fitted to the data.
//
// Units: latencies in seconds, rates per second (tokens or requests).
#ifndef STACKSIM_SIM_SERVE_SERVE_VALIDATE_H_
#define STACKSIM_SIM_SERVE_SERVE_VALIDATE_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/serve/request_workload.h"
#include "sim/serve/serve_config.h"
#include "sim/serve/serve_sim.h"

namespace stacksim::serve {

enum class MetricKind { kOutputTokensPerS, kRequestsPerS, kTtft, kTpot, kE2e, kTokensPerS };
const char* MetricKindName(MetricKind k);

struct MetricComparison {
  MetricKind kind = MetricKind::kOutputTokensPerS;
  std::string key;        // the entry's field, e.g. "measured.ttft_s.avg"
  std::string simulated;  // the simulated statistic it is compared with, e.g. "mean TTFT"
  double measured = 0;    // seconds, or per second
  double predicted = 0;
  double error_pct = 0;   // (predicted - measured) / measured * 100
};

// How an entry is simulated (exposed for tests).
struct ServingRunPlan {
  ServeConfig config;
  std::vector<Request> requests;  // open loop (burst, static batch, Poisson); sorted by arrival
  // Closed loop: `clients` clients, each sending `rounds` requests of
  // `request`'s lengths, the next when the previous finishes.
  int clients = 0;
  int64_t rounds = 0;
  int64_t warmup_rounds = 0;  // rounds each client runs before the measurement window opens
  Request request;
  std::vector<std::string> choices;  // what the entry leaves open and how it was filled
};

// Throws InputError naming `file` and the entry's field (`path` is the
// entry's key path, e.g. "runs[3]") for malformed entries and for entries
// stacksim cannot model (the message says why).
ServingRunPlan PlanServingRun(const nlohmann::json& run, const std::string& file, const std::string& path);

// A closed loop of `clients` clients sending `rounds` requests each; the
// first round arrives at t = 0, each later request when its client's
// previous one finishes (Request::after), in one simulation.
ServeResult SimulateClosedLoop(const ServeConfig& c, const Request& request, int clients, int64_t rounds);

// What a closed-loop benchmark client measures: the steady state, not the
// ramp. perf_analyzer (genai-perf) measures concurrency mode in windows once
// the load is stable and AIPerf runs a warm-up phase before profiling; the
// NIM tables bear it out (beyond saturation TTFT grows by clients / request
// rate, Little's law of a full queue, docs/serve.md). The window opens when
// every client has finished `warmup_rounds` requests and closes when the
// first client has sent its last one and finished it (from then on fewer
// than `clients` requests are in flight). Returns the requests that finish
// inside the window, with makespan = the window's length (so throughput is
// what completed in the window per second of it). With no request inside,
// returns `r` unchanged. REQUIRES: r from SimulateClosedLoop(clients,
// rounds), 0 <= warmup_rounds < rounds.
ServeResult SteadyStateWindow(const ServeResult& r, int clients, int64_t rounds, int64_t warmup_rounds);

struct ServingRunOutcome {
  std::string id;
  std::string source;  // the id's first word: trtllm10, lmdeploy, nim, vllm, ...
  std::string tier;
  std::string kind;
  bool scored = false;
  std::string scenario;                 // one line: what was simulated
  // What the entry is "like", for the serving ranges (serve_uncertainty.h).
  std::string gpu, engine, scheduler, weights;
  bool moe = false;
  std::vector<std::string> choices;
  std::vector<std::string> notes;       // published metrics that were not compared, and why
  std::vector<MetricComparison> metrics;
  std::string error;                    // why it could not be modelled ("" if it was)
};

struct ErrorSummary {
  double mape_pct = 0;  // mean absolute percentage error
  int metrics = 0;
};

struct ServingValidationReport {
  std::vector<ServingRunOutcome> runs;
  ErrorSummary overall;                            // every compared metric of the scored entries
  std::map<std::string, ErrorSummary> by_metric;   // MetricKindName
  std::map<std::string, ErrorSummary> by_source;
  int scored_total = 0;
  int scored_predicted = 0;
};

// only_id: "" for every entry.
ServingValidationReport RunServingValidation(const std::string& path, const std::string& only_id = "");

nlohmann::json ServingValidationJson(const ServingValidationReport& report);
std::string ServingValidationText(const ServingValidationReport& report);

// The per-iteration host time of a serving engine, the one serving constant
// only end-to-end data gives: one value for every engine (scheduling,
// sampling and stop checks, output handling each iteration, not overlapped
// with the GPU), the one in 0-10 ms that minimizes the scored entries' MAPE,
// with the leave-one-source-out check (each source predicted with the value
// fitted on every other source). One value, not one per engine: an engine
// with a single source could not be checked held out.
struct OverheadFit {
  double value_s = 0;
  int entries = 0;
  int metrics = 0;
  double mape_pct = 0;            // every scored entry with value_s
  double unfitted_mape_pct = 0;   // every scored entry without host time
  struct Group {
    std::string held_out;
    int entries = 0;
    double value_s = 0, mape_pct = 0, unfitted_mape_pct = 0;
  };
  std::vector<Group> loso;
  double loso_mape_pct = 0;  // over every held-out metric
};
// threads: sources held out in parallel (0: the machine's cores).
OverheadFit FitIterationOverhead(const std::string& path, int threads = 0);
// The "serving_iteration_overhead" entry of validation/fitted_constants.json.
nlohmann::json OverheadFitJson(const OverheadFit& fit, const std::string& file, const std::string& command,
                               const std::string& date);

}  // namespace stacksim::serve

#endif  // STACKSIM_SIM_SERVE_SERVE_VALIDATE_H_
