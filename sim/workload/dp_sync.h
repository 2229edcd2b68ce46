// What plan.dp_sync adds to a training step's trace (docs/workload.md
// "Communicating less"): the compression kernels before each gradient
// bucket's reduction, and DiLoCo's outer synchronisation after the inner
// optimizer step. Throughput only: the effect on convergence is out of scope.
//
// Bytes throughout. Which step the builder emits is a DpSyncPhase: the
// simulate layer replays DiLoCo's inner and outer-sync steps, and async
// training's step with and without the gradient reduction, and combines them
// (sim/simulate/dp_sync_step.h).
#ifndef STACKSIM_SIM_WORKLOAD_DP_SYNC_H_
#define STACKSIM_SIM_WORKLOAD_DP_SYNC_H_

#include <vector>

#include "sim/config/plan.h"
#include "sim/trace/trace.h"
#include "sim/util/units.h"

namespace stacksim::workload {

enum class DpSyncPhase {
  kStep,                      // the step as plan.dp_sync runs it every step (DiLoCo: an inner step)
  kOuterSyncStep,             // DiLoCo: an inner step followed by the outer synchronisation
  kWithoutGradientReduction,  // the step with no data-parallel gradient reduction at all
};

// DiLoCo's outer step, per parameter of a rank's slice (Douillard et al.
// 2023, Algorithm 1, with PyTorch's SGD(nesterov=True) as the outer
// optimizer; outer parameters and momentum kept in fp32 in HBM, an
// ASSUMPTION: they may live on the host):
//   before the all-reduce, the pseudo-gradient: read the outer copy (4) and
//   the fp32 master weight (4), write the difference (4);
inline constexpr double kPseudoGradientBytesPerParam = 12.0;
//   after it, Nesterov: read the averaged difference (4) and momentum (4),
//   write momentum (4), read and write the outer copy (8), write the fp32
//   master (4) and the 16-bit working copy (2).
inline constexpr double kOuterStepBytesPerParam = 26.0;
// HBM bytes DiLoCo keeps per parameter of the slice: the outer copy and the
// outer momentum, fp32.
inline constexpr double kOuterStateBytesPerParam = 8.0;

// Gradient compression before a bucket's reduction: one memory-bound task
// of `passes` x `grad_bytes` (compress, error feedback, decompress), on
// `stream` after `after`. Returns it.
trace::TaskId EmitGradientCompression(trace::Trace& t, int rank, trace::StreamId stream, Bytes grad_bytes,
                                      double passes, trace::TaskId after);

// DiLoCo's outer synchronisation on one rank that holds `params` parameters
// (its stage's share after tensor parallelism): the rank takes 1/local of
// them (local = dp / workers replicas share a worker's identical copy),
// computes their pseudo-gradient, all-reduces it across the workers over
// `outer_group`, runs the outer Nesterov step, then all-gathers the updated
// 16-bit parameters within the worker over `local_group` (skipped when
// local is 1). Returns the last task.
struct OuterSync {
  double params = 0;
  int local = 1;
  double element_bytes = 2;                 // the 16-bit working copy
  config::Precision outer_precision = config::Precision::kFp32;
  trace::GroupId outer_group = trace::kNoGroup;
  trace::GroupId local_group = trace::kNoGroup;
};
trace::TaskId EmitOuterSync(trace::Trace& t, int rank, trace::StreamId compute, trace::StreamId dp,
                            const OuterSync& sync, const std::vector<trace::TaskId>& deps);

}  // namespace stacksim::workload

#endif  // STACKSIM_SIM_WORKLOAD_DP_SYNC_H_
