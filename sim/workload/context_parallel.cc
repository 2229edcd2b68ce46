#include "sim/workload/context_parallel.h"

#include "sim/workload/attention.h"
#include "sim/workload/op_builders.h"

namespace stacksim::workload {
namespace {

using trace::CollectiveKind;

double D(int64_t v) { return static_cast<double>(v); }

// This rank's K and V elements. PyTorch's ring attention exchanges them as
// SDPA receives them: torchtitan's Llama repeats K/V to the query heads
// before F.scaled_dot_product_attention (models/llama/model.py repeat_kv at
// 9dec370).
double LocalKv(const LayerShape& s) {
  return 2.0 * D(s.tokens()) * D(s.cp.torch_ring ? QHeads(s) : KvHeads(s)) * D(s.attention.head_dim);
}

// One rank's attention output (= Q = each repeated K or V) in elements.
double LocalOut(const LayerShape& s) {
  return D(s.micro_batch) * D(s.seq / s.cp.size) * D(QHeads(s)) * D(s.attention.head_dim);
}

bool TorchRing(const LayerShape& s) { return s.cp.size > 1 && s.cp.torch_ring && s.attention.flash; }

}  // namespace

// Ring attention: cp-1 send/recv steps of the local K and V blocks around the
// CP ring, overlapped with the attention of the block already held. Modelled
// as one all-gather of the whole sequence's K and V (each rank sends and
// receives (cp-1)/cp of it) on the side stream; the op after attention waits
// for it, so the step costs max(attention, exchange). The backward also sends
// the dK/dV partial sums around the ring: twice the bytes.
//
// All-gather CP (Llama 3): K and V of the whole sequence are all-gathered
// before attention, on the compute stream (the attention needs all of it
// first: not overlapped; small with GQA). The backward gathers them again
// (Transformer Engine's AttnFuncWithCPAndKVAllGather keeps only the local
// K/V for the backward) and AddCpGradReduceScatter returns each rank its
// share of the full-sequence dK/dV.
Op CpKvExchange(const LayerShape& s, bool backward) {
  const double kv_local = LocalKv(s);
  if (s.cp.comm == config::CpComm::kAllGather) {
    Op op = Collective(backward ? "cp-kv-allgather-bwd" : "cp-kv-allgather", CollectiveKind::kAllGather,
                       ActBytes(s, kv_local * s.cp.size));
    op.cp_group = true;
    return op;
  }
  // PyTorch's ring (torch_ring) sends the backward's dK/dV partial sums in
  // fp32 (_ContextParallelOptions.convert_to_f32), after gathering K/V again.
  const double bwd = TorchRing(s) ? 1.0 + 4.0 / s.element_bytes() : 2.0;
  Op op = Collective(backward ? "cp-kv-exchange-bwd" : "cp-kv-exchange", CollectiveKind::kAllGather,
                     ActBytes(s, kv_local * s.cp.size) * (backward ? bwd : 1.0), /*async=*/true);
  op.cp_group = true;
  return op;
}

// dK and dV of the whole sequence, computed by every rank's attention
// backward for its local queries, reduce-scattered so each rank keeps the sum
// for its own tokens (buffer: the full dK/dV).
void AddCpGradReduceScatter(std::vector<Op>& ops, const LayerShape& s) {
  if (s.cp.size == 1 || s.cp.comm != config::CpComm::kAllGather || !s.attention.flash) return;
  Op op = Collective("cp-dkv-reduce-scatter", CollectiveKind::kReduceScatter, ActBytes(s, LocalKv(s) * s.cp.size));
  op.cp_group = true;
  ops.push_back(op);
}

// PyTorch's _templated_ring_attention (torch/distributed/tensor/experimental/
// _attention.py, read at pytorch 0123248a; the benchmarked torch 1963fc8 of
// 2024-12-23 not read) with load balancing (two chunks per rank) and
// convert_to_f32. E = this rank's output elements, e its bytes per element,
// counting each tensor read and written once per op; a rank merges at cp - 1
// steps, on its whole output at the steps i <= rank and on the second half
// (then a torch.cat of the whole output) at the others: over ranks, half each.
//   each step i < cp - 1: torch.cat of K and V to send, 2 x 2eE.
//   each merge, whole output: block out to fp32 (e + 4)E, out - block_out
//     12E, sigmoid(lse diff) x (...) 8E, out - (...) 12E: (e + 36)E; half
//     output: (e + 36)E / 2 plus the cat 8E. The log-sum-exp updates are
//     1/head_dim of that and left out.
//   the merged output back to e bytes: (4 + e)E.
double CpTorchRingMergeBytes(const LayerShape& s) {
  if (!TorchRing(s)) return 0.0;
  const double e = s.element_bytes(), E = LocalOut(s), steps = s.cp.size - 1;
  const double merge = 0.5 * ((e + 36.0) + (0.5 * (e + 36.0) + 8.0));
  return E * (steps * (4.0 * e + merge) + 4.0 + e);
}

// _templated_ring_attention_backward, same reading: fp32 zeros for dQ, dK, dV
// (12E); each step i < cp - 1: the K/V concat (4eE); each step: dK and dV
// (e-byte kernel outputs) added into the fp32 sums, (8 + e)E each when
// whole, (12 + e/2)E each on half the tensor plus its cat (half the steps
// after the first); the fp32 dK/dV concat sent on (16E); dQ the same way as
// one dK; at the end dQ and dK/dV back to e bytes ((4 + e)E + (8 + 2e)E).
double CpTorchRingGradBytes(const LayerShape& s) {
  if (!TorchRing(s)) return 0.0;
  const double e = s.element_bytes(), E = LocalOut(s), later = s.cp.size - 1;
  const double whole = 8.0 + e, half = 12.0 + 0.5 * e;
  const double first = 3.0 * whole + 16.0;                   // i = 0: dK, dV, dQ whole
  const double step = 3.0 * 0.5 * (whole + half) + 16.0;     // i > 0: over ranks, half whole
  return E * (12.0 + later * 4.0 * e + first + later * step + (4.0 + e) + (8.0 + 2.0 * e));
}

int CpExchangeIndex(const std::vector<Op>& ops) {
  for (int i = static_cast<int>(ops.size()) - 1; i >= 0; --i) {
    if (ops[i].cp_group) return ops[i].async ? i : -1;
  }
  return -1;
}

void WaitFor(std::vector<Op>& ops, int index) {
  if (index < 0) return;
  for (int i = static_cast<int>(ops.size()) - 1; i > index; --i) {
    if (!ops[i].is_collective && ops[i].wait_for < 0) {
      ops[i].wait_for = index;
      return;
    }
  }
}

}  // namespace stacksim::workload
