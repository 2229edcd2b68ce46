// Pipeline schedules: the order in which each pipeline rank runs the forward
// and backward passes of its micro-batches.
//
// A virtual stage is one model chunk on one pipeline rank; with v chunks per
// rank (interleaving) the model is cut into p*v virtual stages, chunk c of
// rank s being virtual stage c*p + s (Megatron-LM's layout, Narayanan et al.
// SC'21 §2.2.2). The schedule says only the order of work on each rank; the
// timing (bubbles included) comes from replaying it.
#ifndef STACKSIM_SIM_WORKLOAD_PIPELINE_SCHEDULE_H_
#define STACKSIM_SIM_WORKLOAD_PIPELINE_SCHEDULE_H_

#include <string>
#include <vector>

#include "sim/config/plan.h"

namespace stacksim::workload {

struct PipelineStep {
  bool forward = true;
  int micro_batch = 0;
  int chunk = 0;  // model chunk on this rank, 0..v-1
};

// REQUIRES: p >= 1, v >= 1, m >= 1; for kInterleaved, m % p == 0 (Megatron's rule).
// Returns, per pipeline rank, the ordered steps (each micro-batch's forward and
// backward of each chunk exactly once).
std::vector<std::vector<PipelineStep>> BuildSchedule(config::PipelineScheduleKind kind, int p, int v, int m);

// The most forward passes whose backward has not run yet, over the schedule,
// for rank `stage`, counted in chunks (divide by v for whole-model micro-batches).
int PeakInFlightChunks(const std::vector<PipelineStep>& steps);

}  // namespace stacksim::workload

#endif  // STACKSIM_SIM_WORKLOAD_PIPELINE_SCHEDULE_H_
