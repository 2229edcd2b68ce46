// The clock a step runs at under its GPU's board power limit.
//
// A Hopper GPU running large GEMMs back to back draws more than its 700 W
// limit at its maximum clock, and the firmware lowers the clock until it
// fits; a training step that spends part of its time in memory-bound
// kernels, in kernels that leave SMs idle, or waiting on communication draws
// less, and its GEMMs run at a higher clock (measured on the H200: 1462 MHz
// back to back, 1710 MHz with copies taking 55% of the time, 1980 MHz at 76%;
// profiles/measured/h200-sxm-141gb-2026-12-04c-power).
//
// Each class draws its watts (the profile's power block, above idle at the
// maximum clock) in proportion to its activity: an op's rate over its
// kernel's full rate, at most 1 (a GEMM at the profile's large-GEMM
// efficiency, attention at its kernel's efficiency, a copy at the copy
// bandwidth): the share of the SMs its grid keeps busy. A GEMM whose tiles
// leave SMs idle, or an attention grid of a few heads on a tensor-parallel
// rank, draws less. (Tried: activity as the rate over the fastest attention
// kernel's, so that a slower kernel draws less; on the H200's step check its
// clocks were further from nvidia-smi's: profiles/measured/
// h200-sxm-141gb-2026-12-04c-power/README.md.)
//
// The profile's GEMM rates were measured back to back under
// reference_limit_w, so at the clock that limit allows GEMMs alone (~0.75 of
// the maximum on the H200); its attention rates in short runs from an idle
// GPU, at attention_reference_clock (1 on the H200: the maximum). Power at clock
// ratio x, with each class's seconds stretched to that clock (GEMM and
// attention as (x_ref / x)^rate_exponent; memory-bound and idle time not):
//   P(x) = idle + (a_gemm(x) gemm_w + a_attn(x) attention_w) x^power_exponent / T(x) + a_mem memory_w / T(x)
// (a_c: activity-weighted seconds, T: all seconds), and the clock is the
// largest x <= 1 with P(x) <= board_limit_w. Each class's rate is then
// (x / x_ref)^rate_exponent of the profile's (above 1: faster).
#ifndef STACKSIM_SIM_COST_POWER_STATE_H_
#define STACKSIM_SIM_COST_POWER_STATE_H_

#include "sim/config/profile.h"

namespace stacksim::cost {

// Seconds of a step's (or a rank's) work at the profile's rates, by class,
// and the same weighted by each op's activity; `other_s`: time the GPU draws
// only idle power (launch-bound gaps, waits).
struct WorkMix {
  double gemm_s = 0;
  double gemm_active_s = 0;
  double attention_s = 0;
  double attention_active_s = 0;
  double memory_s = 0;
  double memory_active_s = 0;
  double other_s = 0;
};

struct ClockState {
  double clock_ratio = 1;     // SM clock over its maximum
  double gemm_rate = 1;       // GEMM throughput over the profile's
  double attention_rate = 1;  // attention throughput over the profile's
  double watts = 0;           // the mix's draw at that clock (0: not modelled)
  bool limited = false;       // the board limit binds
};

// REQUIRES: mix's fields >= 0.
ClockState SolveClockState(const config::PowerModel& power, const WorkMix& mix);

// The clock ratio a class drawing `watts` above idle at the maximum clock
// runs at back to back under `limit`.
double ClockUnderLimit(const config::PowerModel& power, double watts, double limit);

}  // namespace stacksim::cost

#endif  // STACKSIM_SIM_COST_POWER_STATE_H_
