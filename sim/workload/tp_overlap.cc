#include "sim/workload/tp_overlap.h"

#include <algorithm>
#include <string>
#include <utility>

namespace stacksim::workload {
namespace {

using config::TpCommOverlap;
using trace::CollectiveKind;

bool IsTpCollective(const Op& op) {
  return op.is_collective && !op.async && !op.ep_group && !op.cp_group && op.role == trace::TaskRole::kTpComm;
}

bool IsGemm(const Op& op) { return !op.is_collective && op.compute.op_class == trace::OpClass::kGemm; }

bool IsCast(const Op& op) { return !op.is_collective && op.name.find("-cast-") != std::string::npos; }

// Swaps ops i and i + 1, keeping every wait_for pointing at the same op.
void Swap(std::vector<Op>& ops, int i) {
  std::swap(ops[i], ops[i + 1]);
  for (Op& op : ops) {
    if (op.wait_for == i) {
      op.wait_for = i + 1;
    } else if (op.wait_for == i + 1) {
      op.wait_for = i;
    }
  }
}

// Inserts `op` at index i, keeping every wait_for pointing at the same op.
void Insert(std::vector<Op>& ops, int i, Op op) {
  for (Op& o : ops) {
    if (o.wait_for >= i) ++o.wait_for;
  }
  if (op.wait_for >= i) ++op.wait_for;
  ops.insert(ops.begin() + i, std::move(op));
}

// The share `fraction` of an op: a GEMM's rows (and its FLOPs and bytes,
// the weight's read counted as the rows are), or a collective's bytes.
Op Share(Op op, double fraction, const std::string& suffix) {
  op.name += suffix;
  if (op.is_collective) {
    op.bytes = Bytes{op.bytes.value * fraction};
    return op;
  }
  op.compute.m = std::max<int64_t>(1, static_cast<int64_t>(static_cast<double>(op.compute.m) * fraction));
  op.compute.flops = Flops{op.compute.flops.value * fraction};
  op.compute.bytes = Bytes{op.compute.bytes.value * fraction};
  return op;
}

// A reduction right after GEMM g: moved before it and run beside it; the op
// after the GEMM waits for it. `pipelined` (a forward or data-gradient GEMM
// whose output is reduce-scattered as it is produced, kGemm): the GEMM's
// last 1/tp rows are reduced after it, so that share of the collective stays
// blocking after the GEMM.
void OverlapReduction(std::vector<Op>& ops, int c, bool pipelined, int tp) {
  const int g = c - 1;
  const int after = c + 1;
  if (after >= static_cast<int>(ops.size()) || ops[after].wait_for >= 0) return;
  Swap(ops, g);  // the collective is now at g, the GEMM at c
  ops[g].async = true;
  ops[after].wait_for = g;
  if (!pipelined || tp < 2) return;
  const double last = 1.0 / tp;
  Op tail = Share(ops[g], last, "-last-chunk");
  tail.async = false;
  ops[g] = Share(ops[g], 1.0 - last, "");
  Insert(ops, c + 1, std::move(tail));
}

// An all-gather before GEMM g (casts in between): runs beside the GEMM; the
// op after the GEMM waits for it. The GEMM is pipelined with it (kGemm: the
// rows of each gathered chunk are multiplied as the chunk arrives), so the
// rows of the last chunk, 1/tp of the GEMM, wait for the gather.
void OverlapGather(std::vector<Op>& ops, int c, int tp) {
  int g = c + 1;
  while (g < static_cast<int>(ops.size()) && IsCast(ops[g])) ++g;
  const int after = g + 1;
  if (g >= static_cast<int>(ops.size()) || !IsGemm(ops[g])) return;
  if (after >= static_cast<int>(ops.size()) || ops[after].wait_for >= 0 || ops[g].wait_for >= 0) return;
  ops[c].async = true;
  if (tp < 2) {
    ops[after].wait_for = c;
    return;
  }
  const double last = 1.0 / tp;
  Op tail = Share(ops[g], last, "-last-chunk");
  tail.wait_for = c;
  ops[g] = Share(ops[g], 1.0 - last, "");
  Insert(ops, g + 1, std::move(tail));
}

}  // namespace

std::vector<Op> OverlapTpCollectives(std::vector<Op> ops, TpCommOverlap mode, bool sequence_parallel, int tp) {
  if (mode == TpCommOverlap::kNone) return ops;
  const bool gemm = (mode == TpCommOverlap::kGemm || mode == TpCommOverlap::kPipelined) && sequence_parallel;
  const bool beside_wgrad = mode != TpCommOverlap::kPipelined;
  for (int c = 0; c < static_cast<int>(ops.size()); ++c) {
    if (!IsTpCollective(ops[c])) continue;
    const Op& op = ops[c];
    const bool reduction = op.collective == CollectiveKind::kAllReduce || op.collective == CollectiveKind::kReduceScatter;
    const bool wgrad = c > 0 && ops[c - 1].weight_grad;
    if (reduction && c > 0 && IsGemm(ops[c - 1]) && (wgrad ? beside_wgrad : gemm)) {
      const bool pipelined = !wgrad;  // kGemm's pair; kBackward's runs beside the wgrad
      OverlapReduction(ops, c, pipelined, tp);
      if (pipelined && tp >= 2) ++c;  // past the blocking last chunk
    } else if (gemm && op.collective == CollectiveKind::kAllGather) {
      OverlapGather(ops, c, tp);
    }
  }
  return ops;
}

}  // namespace stacksim::workload
