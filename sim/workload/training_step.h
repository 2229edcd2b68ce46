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
#include "sim/workload/dp_sync.h"
#include "sim/workload/stage_layers.h"  // LayersPerVirtualStage, StageParameters
#include "sim/util/units.h"

namespace stacksim::workload {

// The GPU's optimizer step over the share `gpu_share` (1 without offload) of
// this rank's `params` parameters: mixed-precision Adam as fused
// multi-tensor kernels, memory-bound (bytes per parameter: training_step.cc).
trace::ComputeOp OptimizerStepOp(double params, double gpu_share);

// REQUIRES: config::ValidatePlan(s) passed.
// `phase`: which step of plan.dp_sync to build (dp_sync.h); kStep for every
// plan that does not ask otherwise. REQUIRES: kOuterSyncStep only with diloco.
trace::Trace BuildTrainingStep(const config::ScenarioConfig& s, DpSyncPhase phase = DpSyncPhase::kStep);

}  // namespace stacksim::workload

#endif  // STACKSIM_SIM_WORKLOAD_TRAINING_STEP_H_
