// The one path from a scenario to a replayed training step: the step's trace
// (the workload generator's), the profile-backed cost model and the network
// model by name (net::MakeNetwork). Simulate, search's evaluation of each plan
// and the straggler replays all build and replay a step through here, so a
// change to how a step is modelled reaches every question at once.
#ifndef STACKSIM_SIM_SIMULATE_STEP_REPLAY_H_
#define STACKSIM_SIM_SIMULATE_STEP_REPLAY_H_

#include <memory>
#include <string>

#include "sim/config/scenario.h"
#include "sim/engine/cost_model.h"
#include "sim/engine/network_model.h"
#include "sim/cost/power_state.h"
#include "sim/trace/replay_result.h"
#include "sim/trace/trace.h"
#include "sim/workload/dp_sync.h"

namespace stacksim::simulate {

// A step ready to replay; owns its trace and models.
struct StepModels {
  std::shared_ptr<trace::Trace> trace;
  std::unique_ptr<engine::CostModel> cost;
  std::unique_ptr<engine::NetworkModel> network;
  cost::ClockState clock;  // the power state the cost model prices at (cost/power_state.h)
};

// REQUIRES: config::ValidatePlan(s) passed. `network`: "analytic" or
// "simgrid" (else InputError naming --network). `phase`: which step of
// plan.dp_sync (workload/dp_sync.h).
StepModels BuildStep(const config::ScenarioConfig& s, const std::string& network = "analytic",
                     workload::DpSyncPhase phase = workload::DpSyncPhase::kStep);

// Replays the step with its own models.
trace::ReplayResult ReplayStep(const StepModels& step);

}  // namespace stacksim::simulate

#endif  // STACKSIM_SIM_SIMULATE_STEP_REPLAY_H_
