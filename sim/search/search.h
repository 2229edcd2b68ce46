// Search: the best parallel plans for one model, cluster and global batch.
//
//   SearchResult r = Search(space, options);   // r.plans: best first
//
// Steps: enumerate the space (plan_space.h: invalid and equivalent plans are
// counted, not kept); bound every candidate's step time from below
// (step_bound.h) and sort by the bound of the objective; then, in rounds of
// options.batch plans in that order, check memory (memory::EstimateMemory
// against HBM, memory::CheckOffloadCapacity against host memory) and replay
// the rest exactly as `stacksim simulate` does (analytic network). A round
// starts only while the next plan's bound can still beat the top
// options.top; the remaining plans are counted as bounded. The top list is
// exact: every plan left out has a bound (or, when simulated, a step time) no
// better than the last plan shown.
//
// Plans whose traces are provably identical share one replay (zero1 and zero2
// build the same trace, as does any sharding without data parallelism on a
// dense model). Replays run in parallel (PlanRunner: threads here, MPI ranks
// in mpi_runner.h); rounds have a fixed size, so the output, pruning counts
// included, does not depend on the number of threads or processes. Ranking is
// a total order: objective, step time, peak memory, then the plan's fields.
//
// Memory: a plan is ranked only when its peak leaves the planning reserve
// free (memory::PlanningReserve: the allocator's fitted cache, at least
// 1 GiB, or options.headroom.fixed); plans that fit HBM only inside the
// reserve are counted apart (SearchCounts::inside_reserve).
//
// Uncertainty: every ranked plan carries the assessment simulate prints
// (uncertainty::AssessScenario: the likely range from validated runs like it,
// coverage warnings, whether its plan family was ever validated). Ranking
// kExpected orders by the predicted step; kPessimistic by the range's high
// end. The high end is the prediction times a factor that depends on the GPU
// class, the scale band and the parallelism family only, so the pessimistic
// ranking scales each candidate's bound by the same factor and the top list
// stays exact.
//
// Objectives, all to be minimised: step time; throughput (tokens per second:
// the global batch is fixed, so the order is the step time's); cost (USD per
// million tokens: GPU-hour price x GPUs x step time); energy (kWh per million
// tokens: GPU power x GPUs x step time). Cost and energy need
// options.economics (economics.h); without a price or power they are an
// InputError naming the missing field.
#ifndef STACKSIM_SIM_SEARCH_SEARCH_H_
#define STACKSIM_SIM_SEARCH_SEARCH_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "sim/config/scenario.h"
#include "sim/memory/reserve.h"
#include "sim/search/economics.h"
#include "sim/search/plan_space.h"
#include "sim/uncertainty/assessment.h"
#include "sim/util/parallel.h"
#include "sim/util/units.h"

namespace stacksim::search {

enum class Objective { kTime, kThroughput, kCost, kEnergy };
const char* ObjectiveName(Objective o);  // "time", "throughput", "cost", "energy"
// Throws InputError(origin, "", ...) listing the choices.
Objective ParseObjective(const std::string& text, const std::string& origin = "--objective");

// How a predicted step is read when ranking: as predicted, or at the high end
// of its likely range (the slowest the validated errors make plausible).
enum class Ranking { kExpected, kPessimistic };
const char* RankingName(Ranking r);  // "expected", "pessimistic"
// Throws InputError(origin, "", ...) listing the choices.
Ranking ParseRanking(const std::string& text, const std::string& origin = "--rank");

// One replay to run: a scenario (one per GPU count) with a plan applied.
struct SimulationJob {
  const config::ScenarioConfig* scenario = nullptr;
  config::PlanConfig plan;
};

// The step time of the scenario with `plan`, as simulate::Simulate computes it
// (same trace, cost model, analytic network and engine) without the
// breakdown and memory passes. REQUIRES: the plan is valid for the scenario.
Time SimulateStep(const config::ScenarioConfig& scenario, const config::PlanConfig& plan);

// Runs replays; implementations decide where. Every caller of a distributed
// runner (each MPI rank) passes the same jobs and gets the same times.
class PlanRunner {
 public:
  virtual ~PlanRunner() = default;
  virtual std::vector<Time> Run(const std::vector<SimulationJob>& jobs) const = 0;
};

// Replays on `threads` threads of this process (0: all cores).
class ThreadRunner : public PlanRunner {
 public:
  explicit ThreadRunner(int threads = 0);
  std::vector<Time> Run(const std::vector<SimulationJob>& jobs) const override;
  int threads() const { return threads_; }

 private:
  int threads_;
};

// Threads for `threads` (0: all cores); the loop is ParallelFor of
// sim/util/parallel.h. Named here too because the command line asks for
// search::Workers.
using ::stacksim::Workers;

struct SearchOptions {
  Objective objective = Objective::kTime;
  int top = 10;        // plans to rank (>= 1)
  int threads = 0;     // for memory checks and the default runner (0: all cores)
  // Plans per simulation round. Fixed by the caller, never derived from the
  // thread count, so that every run of the same search prunes the same plans.
  int batch = 16;
  Economics economics;  // price and power (cost / energy objectives, reports)
  const PlanRunner* runner = nullptr;  // nullptr: a ThreadRunner with `threads`
  Ranking ranking = Ranking::kExpected;
  memory::HeadroomPolicy headroom;     // the reserve every ranked plan keeps
  // The validation error table for ranges; nullptr: error_table_path is
  // loaded when it exists (no file: plans have no range, and kPessimistic is
  // an InputError naming the path).
  const uncertainty::ErrorTable* error_table = nullptr;
  std::string error_table_path = uncertainty::DefaultErrorTablePath();
  // Called from the searching thread as candidates are settled (did not
  // fit, simulated, or left out by the bound): settled so far and all
  // candidates; the last call has settled == total. Empty: no calls.
  std::function<void(int64_t settled, int64_t total)> progress;
};

struct RankedPlan {
  PlanPoint point;
  config::PlanConfig plan;     // the full plan (scenario fields + the point)
  Time step;                   // simulated step time
  Time bound;                  // its lower bound (what the search sorted by)
  // The objective in SearchResult::objective_unit (throughput: tokens/s,
  // higher is better) and the quantity minimised (throughput: step time;
  // cost, energy: per million tokens), whose ratios are the reports' gaps.
  double objective = 0;
  double score = 0;
  double tokens_per_s = 0;
  double mfu = 0;              // model FLOP/s per GPU / dense peak, as simulate reports it
  Bytes peak_memory;           // the fullest pipeline stage, per GPU
  Bytes capacity;              // HBM per GPU
  double cost_per_mtok_usd = 0;     // 0 without a price
  double energy_per_mtok_kwh = 0;   // 0 without a power figure
  std::string placement;       // dimensions inside one NVLink domain (PlacementText)
  memory::PlanReserve reserve;  // what the plan keeps free (headroom() >= reserve.required)
  uncertainty::Assessment assessment;  // likely range, coverage warnings, plan family
  // The step at the range's high end (step without a range): what
  // Ranking::kPessimistic orders by.
  double pessimistic_s = 0;
  Bytes headroom() const { return capacity - peak_memory; }
};

struct SearchCounts {
  EnumerationCounts enumeration;
  int64_t out_of_memory = 0;   // do not fit HBM with the reserve (memory::EstimateMemory + PlanningReserve)
  int64_t inside_reserve = 0;  // of those, plans that fit HBM but not the reserve
  int64_t host_memory = 0;     // offloaded state does not fit node.host.memory
  int64_t bounded = 0;         // their lower bound cannot beat the top list
  int64_t evaluated = 0;       // plans with a simulated step time
  int64_t simulations = 0;     // replays run (plans sharing a trace share one)
  int64_t memory_checks = 0;
};

struct SearchResult {
  // What was searched (for reports).
  std::string scenario, model, topology, gpu;
  int64_t seq_len = 0, global_batch = 0;
  int domain_gpus = 0;   // GPUs per NVLink domain
  int threads = 0;       // threads of this process
  int top = 0;           // plans asked for
  Objective objective = Objective::kTime;
  Ranking ranking = Ranking::kExpected;
  memory::HeadroomPolicy headroom;
  std::string reserve_basis;   // memory::PlanningReserveBasis
  std::string error_table;     // the table's path ("" when none was found)
  std::string objective_unit;  // "s", "USD per 1M tokens", "kWh per 1M tokens"
  std::vector<RankedPlan> plans;  // best first, at most options.top
  SearchCounts counts;
  std::vector<int> gpu_counts;
  Economics economics;
  int64_t tokens_per_step = 0;
  double wall_seconds = 0;
};

// REQUIRES: options.top >= 1, options.batch >= 1. Throws InputError when the
// objective needs a price or power the options do not give, or when no
// plan of the space is valid and fits.
SearchResult Search(const SearchSpace& space, const SearchOptions& options);

// Whole-node GPU counts in [lo, hi] for a topology (multiples of
// gpus_per_node; a count below one node is allowed only if lo == hi).
// Throws InputError("--gpus", ...) when there are none.
std::vector<int> GpuCountsInRange(int lo, int hi, const config::TopologyConfig& topology);
// Parses "N" or "LO..HI" (--gpus). Throws InputError("--gpus", ...).
std::vector<int> ParseGpuRange(const std::string& text, const config::TopologyConfig& topology);

}  // namespace stacksim::search

#endif  // STACKSIM_SIM_SEARCH_SEARCH_H_
