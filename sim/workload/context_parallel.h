// Context parallelism's communication around the core attention: ring
// attention's K/V exchange (Liu et al. 2023; Megatron-Core CP), overlapped
// with the attention, or Llama 3's all-gather of K/V before it with the
// reduce-scatter of dK/dV after its backward (arXiv:2407.21783 §3.3.2), and
// the dependency that makes the op after attention wait for an overlapped
// exchange.
//
// Buffers in bytes per rank over the CP group (Op::cp_group).
#ifndef STACKSIM_SIM_WORKLOAD_CONTEXT_PARALLEL_H_
#define STACKSIM_SIM_WORKLOAD_CONTEXT_PARALLEL_H_

#include <vector>

#include "sim/workload/layer_shape.h"
#include "sim/workload/op.h"

namespace stacksim::workload {

// The K/V exchange before the (flash) attention of a CP rank, forward or
// backward. REQUIRES: s.cp.size > 1.
Op CpKvExchange(const LayerShape& s, bool backward);
// All-gather CP's backward: the full-sequence dK/dV reduce-scattered (no-op
// for ring CP, without CP, or without flash attention).
void AddCpGradReduceScatter(std::vector<Op>& ops, const LayerShape& s);
// PyTorch's ring attention (s.cp.torch_ring; torchtitan): the unfused
// element-wise work around its per-step SDPA calls, forward (the K/V concat
// sent each step and the fp32 merge of partial outputs) and backward (the
// fp32 accumulation of dQ, dK, dV and the concat of dK/dV sent each step).
// Nothing without CP or torch_ring. Bytes per rank and layer.
double CpTorchRingMergeBytes(const LayerShape& s);
double CpTorchRingGradBytes(const LayerShape& s);
// Index of the overlapped (ring) CP K/V exchange just emitted (-1 when there
// is none; all-gather CP's collectives block the compute stream).
int CpExchangeIndex(const std::vector<Op>& ops);
// Makes the latest compute op of `ops` that waits for nothing else wait for
// the async op `index` (ops after it follow it on the compute stream); -1:
// nothing to wait for.
void WaitFor(std::vector<Op>& ops, int index);

}  // namespace stacksim::workload

#endif  // STACKSIM_SIM_WORKLOAD_CONTEXT_PARALLEL_H_
