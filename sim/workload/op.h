// One operation of a layer's op list, as the workload generator emits it
// before it becomes trace tasks: a compute kernel (GEMM, attention,
// memory-bound), a collective over the TP, CP or EP group, or a host-side
// wait. Lists are in issue order for one micro-batch on one rank.
//
// Units: bytes in Bytes, FLOPs in Flops, waits in Time (see sim/util/units.h).
#ifndef STACKSIM_SIM_WORKLOAD_OP_H_
#define STACKSIM_SIM_WORKLOAD_OP_H_

#include <string>
#include <vector>

#include "sim/trace/trace.h"
#include "sim/util/units.h"

namespace stacksim::workload {

struct Op {
  bool is_collective = false;   // a tensor-parallel collective, else compute
  std::string name;
  // What the op is for the step's accounting (trace::TaskRole): expert
  // all-to-alls are kEpComm, the MoE dispatcher's host wait kHostSync.
  trace::TaskRole role = trace::TaskRole::kMemoryBound;
  bool recompute = false;       // re-run in the backward pass (names "recompute-...")
  bool expert = false;          // routed-expert work (names "expert-..."), see simulate's MoE imbalance
  trace::ComputeOp compute;     // compute ops
  trace::CollectiveKind collective = trace::CollectiveKind::kAllReduce;
  Bytes bytes;                  // collective ops: per-rank buffer
  // Collectives: runs beside compute (on the TP stream) instead of blocking it.
  bool async = false;
  // Index (in the same op list) of an async op this op must wait for; -1: none.
  int wait_for = -1;
  bool ep_group = false;        // collective over the expert-parallel group (else TP)
  bool cp_group = false;        // collective over the context-parallel group (else TP)
  // All-to-all only: trace::CommOp::scale_out_bytes (negative: flat pairwise).
  Bytes scale_out_bytes{-1};
  // > 0: not a kernel but a host-side wait of this length on the compute
  // stream (a trace::TaskKind::kDelay).
  Time host_wait;
  // A weight-gradient GEMM: zero-bubble schedules (ZB-H1, DualPipe) run it as
  // a separate W pass after the B pass (everything else of the backward).
  bool weight_grad = false;
  // Runs on the first micro-batch of a step only, never when recomputed
  // (an FP8 weight cast that Transformer Engine caches for the step).
  bool once_per_step = false;
};

// Useful FLOPs of a list (compute ops only).
inline Flops SumFlops(const std::vector<Op>& ops) {
  Flops total;
  for (const Op& op : ops) {
    if (!op.is_collective) total += op.compute.flops;
  }
  return total;
}

}  // namespace stacksim::workload

#endif  // STACKSIM_SIM_WORKLOAD_OP_H_
