// Builds the execution trace of one training step (one optimizer step) of a
// dense transformer under a parallel plan.
//
// Symmetry: data-parallel replicas and tensor-parallel peers behave alike, so
// the trace holds one rank per pipeline stage (rank = stage); collectives over
// TP and DP groups carry the full group's size and placement. Cross-stage work
// (activations and gradients between stages, the tied-embedding all-reduce)
// is explicit, so bubbles come out of the replay.
//
// Streams per rank: "compute" (kernels and the blocking TP collectives),
// "tp" (TP collectives overlapped with compute), "dp" (gradient reduction,
// parameter gathers), "pp" (pipeline sends).
#ifndef STACKSIM_SIM_WORKLOAD_TRAINING_STEP_H_
#define STACKSIM_SIM_WORKLOAD_TRAINING_STEP_H_

#include <vector>

#include "sim/config/scenario.h"
#include "sim/trace/trace.h"
#include "sim/util/units.h"

namespace stacksim::workload {

// Transformer layers in each of the pp*vp virtual stages (virtual stage
// c*pp + s is chunk c of pipeline rank s). Layers that do not divide evenly
// are taken from the first and last virtual stages, which also hold the
// embedding and the output head (as Llama 3 did; Dubey et al. 2024, §3.3.2).
std::vector<int> LayersPerVirtualStage(int layers, int pp, int vp);

// Parameters one GPU of `stage` holds (before any ZeRO sharding).
// Routed experts are split over ep, everything else over tp.
int64_t StageParameters(const config::ScenarioConfig& s, int stage);
// The routed-expert part of StageParameters (0 for dense models).
int64_t StageExpertParameters(const config::ScenarioConfig& s, int stage);

// REQUIRES: config::ValidatePlan(s) passed.
trace::Trace BuildTrainingStep(const config::ScenarioConfig& s);

}  // namespace stacksim::workload

#endif  // STACKSIM_SIM_WORKLOAD_TRAINING_STEP_H_
