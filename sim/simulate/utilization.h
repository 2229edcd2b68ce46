// The utilization figures people read from Nsight Systems, for one rank's
// replayed step: how much of the step some kernel ran, how hard the SMs and
// HBM worked while they did, and how busy the host link was. They come from
// the replay and the cost model's own accounting (each compute task's FLOPs
// and bytes), not from counters.
//
// - gpu_busy: share of the step during which any kernel of the rank runs, on
//   any stream (compute, attention, memory-bound ops, NCCL collectives and
//   pipeline sends). Host work, host syncs and copy-engine transfers are not
//   kernels.
// - sm_active: each compute kernel's duration weighted by its achieved
//   fraction of peak, summed over the step: the larger of FLOPs / (duration x
//   peak rate of its precision; attention at the 16-bit rate) and bytes /
//   (duration x HBM bandwidth), at most 1. A GEMM at 70% of peak for half the
//   step gives 0.35. Communication kernels count as busy, not as active.
// - hbm_bandwidth: the compute kernels' bytes over the step, as a share of
//   the datasheet HBM bandwidth.
// - pcie: share of the step during which a host-link copy runs (the
//   offload streams "h2d" and "d2h").
#ifndef STACKSIM_SIM_SIMULATE_UTILIZATION_H_
#define STACKSIM_SIM_SIMULATE_UTILIZATION_H_

#include <vector>

#include "sim/config/profile.h"
#include "sim/trace/replay_result.h"
#include "sim/trace/trace.h"
#include "sim/util/units.h"

namespace stacksim::simulate {

struct Utilization {
  double gpu_busy = 0;
  double sm_active = 0;
  double hbm_bandwidth = 0;
  double pcie = 0;
};

// `rank_tasks`: the rank's tasks; `step`: the step time the shares are of
// (the replay's makespan). A zero step gives zeros.
Utilization RankUtilization(const trace::Trace& t, const trace::ReplayResult& r,
                            const std::vector<trace::TaskId>& rank_tasks, const config::ProfileConfig& profile,
                            Time step);

}  // namespace stacksim::simulate

#endif  // STACKSIM_SIM_SIMULATE_UTILIZATION_H_
