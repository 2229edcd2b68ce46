// Stragglers inside one training job: what slow nodes and GPUs do to the
// step time, over many steps, and what replacing the slowest would recover.
//
// Slow hardware is drawn from a StragglerSpec: persistent terms once per job,
// transient terms again for every step, from std::mt19937_64 streams seeded
// from the seed (and the step): the same seed gives the same draws, and the
// result does not depend on the thread count. Each step's slow hardware maps
// to replica patterns (replica_expansion.h), pruned to the ones that can
// change the step; steps with the same pruned set share one replay.
//
// Nodes: node n holds global ranks [n * gpus_per_node, (n + 1) * gpus_per_node).
// Times in Time (ns); slowdowns are factors on compute time.
#ifndef STACKSIM_SIM_STRAGGLER_STRAGGLER_H_
#define STACKSIM_SIM_STRAGGLER_STRAGGLER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sim/config/scenario.h"
#include "sim/simulate/step_replay.h"
#include "sim/straggler/replica_expansion.h"
#include "sim/straggler/straggler_spec.h"
#include "sim/trace/trace.h"
#include "sim/util/progress.h"
#include "sim/util/units.h"

namespace stacksim::straggler {

struct StragglerOptions {
  int steps = 1;          // steps simulated; transient terms are redrawn for each
  uint64_t seed = 1;
  int threads = 1;        // replays run in parallel; results do not depend on it
  std::string network = "analytic";  // the only model that replays many times in one process
  ProgressMeter* progress = nullptr;  // counts the distinct replays when set; not owned
};

// One slow node or GPU.
struct SlowUnit {
  Scope scope = Scope::kNode;
  int64_t id = 0;         // node index or global GPU rank
  double slowdown = 1;
};

// The scenario's step, ready to replay with any set of slow hardware.
// Replay is safe to call from several threads at once.
class StragglerReplayer {
 public:
  // Builds the step's trace and models (analytic network).
  // REQUIRES: config::ValidatePlan(scenario) passed.
  explicit StragglerReplayer(const config::ScenarioConfig& scenario);
  ~StragglerReplayer();

  // One pattern per replica holding slow hardware, in replica order (unpruned).
  std::vector<Pattern> SlowReplicaPatterns(const std::vector<SlowUnit>& slow) const;
  // The same, pruned (empty: no replica is slow).
  std::vector<Pattern> Patterns(const std::vector<SlowUnit>& slow) const {
    return PruneDominated(SlowReplicaPatterns(slow));
  }
  Time Replay(const std::vector<Pattern>& patterns) const;
  Time Step(const std::vector<SlowUnit>& slow) const { return Replay(Patterns(slow)); }

  const trace::Trace& base() const { return *step_.trace; }
  int nodes() const { return nodes_; }
  int gpus() const { return gpus_; }

 private:
  config::PlanConfig plan_;
  int gpus_ = 0;
  int gpus_per_node_ = 1;
  int nodes_ = 0;
  simulate::StepModels step_;  // the healthy step, replayed with each pattern
};

// Step time with the `replaced` slowest persistent units healthy.
struct Recovery {
  int replaced = 0;
  int remaining = 0;   // persistent slow units left
  Time mean_step;      // over the simulated steps
  double slowdown = 1; // mean_step / baseline
};

struct StragglerResult {
  StragglerSpec spec;
  StragglerOptions options;
  int nodes = 0, gpus = 0;
  Time baseline;                 // no stragglers
  std::vector<Time> step_times;  // per simulated step
  Time mean, p50, p90, p99, max;  // percentiles by nearest rank (sim/util/statistics.h)
  double slowdown = 1;           // mean / baseline
  int persistent_slow = 0;       // slow nodes and GPUs drawn once for the job
  double transient_slow = 0;     // slow nodes and GPUs per step, mean
  int slow_replicas_max = 0;     // replicas holding slow hardware, most in one step
  int variants_max = 0;          // replicas simulated after pruning, most in one replay
  std::vector<Recovery> recovery;  // k = 1, 2, 4, ... and all persistent units
  int replays = 0;               // distinct pruned pattern sets replayed (baseline included)
  double wall_seconds = 0;
};

// Throws InputError for options that cannot apply (a network other than
// analytic: SimGrid allows one session per process; no steps).
void CheckStragglerOptions(const StragglerOptions& options);

// Throws InputError as CheckStragglerOptions, or for a plan that cannot run.
StragglerResult AnalyzeStragglers(const config::ScenarioConfig& scenario, const StragglerSpec& spec,
                                  const StragglerOptions& options);

}  // namespace stacksim::straggler

#endif  // STACKSIM_SIM_STRAGGLER_STRAGGLER_H_
