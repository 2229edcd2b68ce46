// Zero-bubble schedules (ZB-H1, DualPipe; Qi et al. 2023) run a layer's
// backward as two passes: B, the input gradients (everything but the
// weight-gradient GEMMs), which the previous stage waits for, and W, the
// weight-gradient GEMMs, which fill the pipeline's idle time.
#ifndef STACKSIM_SIM_WORKLOAD_ZERO_BUBBLE_SPLIT_H_
#define STACKSIM_SIM_WORKLOAD_ZERO_BUBBLE_SPLIT_H_

#include <utility>
#include <vector>

#include "sim/workload/op.h"

namespace stacksim::workload {

// B and W of a backward op list (ops with Op::weight_grad go to W). B's
// wait_for indices are renumbered within B; W's ops wait for none (the W pass
// waits for all of B's async collectives instead).
std::pair<std::vector<Op>, std::vector<Op>> SplitWeightGradients(const std::vector<Op>& ops);

}  // namespace stacksim::workload

#endif  // STACKSIM_SIM_WORKLOAD_ZERO_BUBBLE_SPLIT_H_
