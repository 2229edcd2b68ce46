// plan.dp_sync as a what-if on the step and on a run's time to a token
// budget (docs/workload.md "Communicating less"). Throughput only: how many
// more steps a method needs for the same loss (compression error, DiLoCo's
// local steps, stale gradients) is out of scope, and the result says so.
//
// Times are simulated steps of the same scenario:
//   every-step, compression: the step itself;
//   diloco: the inner step (gradients reduced within a worker) and the sync
//     step (an inner step, then the outer all-reduce and Nesterov step),
//     averaged over sync_every steps: ((H - 1) inner + sync) / H;
//   async: the step without any gradient reduction C and the time the
//     synchronous step's reductions keep a rank's data-parallel stream busy
//     R. A reduction may finish up to `staleness` steps late, so in steady
//     state the period is max(C, R): R/k <= R for every k >= 1, and one
//     reduction per step has to fit the link (docs/workload.md).
#ifndef STACKSIM_SIM_SIMULATE_DP_SYNC_STEP_H_
#define STACKSIM_SIM_SIMULATE_DP_SYNC_STEP_H_

#include <cstdint>
#include <string>

#include "sim/config/scenario.h"
#include "sim/trace/replay_result.h"
#include "sim/trace/trace.h"
#include "sim/util/units.h"

namespace stacksim::simulate {

struct DpSyncResult {
  config::DpSyncMethod method = config::DpSyncMethod::kEveryStep;
  Time step;                // the simulated step (DiLoCo: inner; async: synchronous)
  Time sync_step;           // DiLoCo: the step that also synchronises the workers
  Time without_reduction;   // async: the step with no gradient reduction (C)
  Time reduction_busy;      // async: the busiest rank's data-parallel gradient collectives (R)
  Time average_step;        // what a run's steps take on average
  double tokens_per_s = 0;  // at the average step
  Bytes extra_memory_per_gpu;  // DiLoCo: outer parameters and momentum (largest stage)
  int64_t token_budget = 0;    // training.tokens (0: none)
  int64_t steps_to_budget = 0;
  Time time_to_budget;
  std::string basis;           // how average_step was formed, in words
};

// The data-parallel gradient collectives' busy time on the busiest rank
// (tasks whose group has the dp role).
Time GradientReductionBusy(const trace::Trace& t, const trace::ReplayResult& r);

// DiLoCo's outer state per GPU of `stage`, sharded over a worker's replicas.
Bytes OuterStateBytes(const config::ScenarioConfig& s, int stage);

// Fills average_step, tokens_per_s, basis and the budget fields from the
// step times already set. REQUIRES: step > 0.
void FinishDpSync(const config::ScenarioConfig& s, DpSyncResult& r);

// The sentence every report carries beside these figures.
inline constexpr const char* kDpSyncScope =
    "throughput only: the extra steps a method may need to reach the same loss are not modelled";

}  // namespace stacksim::simulate

#endif  // STACKSIM_SIM_SIMULATE_DP_SYNC_STEP_H_
