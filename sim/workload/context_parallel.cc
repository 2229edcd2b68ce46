#include "sim/workload/context_parallel.h"

#include "sim/workload/attention.h"
#include "sim/workload/op_builders.h"

namespace stacksim::workload {
namespace {

using trace::CollectiveKind;

double D(int64_t v) { return static_cast<double>(v); }

// This rank's K and V elements.
double LocalKv(const LayerShape& s) { return 2.0 * D(s.tokens()) * D(KvHeads(s)) * D(s.attention.head_dim); }

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
  Op op = Collective(backward ? "cp-kv-exchange-bwd" : "cp-kv-exchange", CollectiveKind::kAllGather,
                     ActBytes(s, kv_local * s.cp.size) * (backward ? 2.0 : 1.0), /*async=*/true);
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
