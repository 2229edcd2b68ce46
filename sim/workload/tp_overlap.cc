#include "sim/workload/tp_overlap.h"

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

// A reduction right after GEMM g: moved before it and run beside it; the op
// after the GEMM waits for it.
void OverlapReduction(std::vector<Op>& ops, int c) {
  const int g = c - 1;
  const int after = c + 1;
  if (after >= static_cast<int>(ops.size()) || ops[after].wait_for >= 0) return;
  Swap(ops, g);  // the collective is now at g, the GEMM at c
  ops[g].async = true;
  ops[after].wait_for = g;
}

// An all-gather before GEMM g (casts in between): runs beside the GEMM; the
// op after the GEMM waits for it.
void OverlapGather(std::vector<Op>& ops, int c) {
  int g = c + 1;
  while (g < static_cast<int>(ops.size()) && IsCast(ops[g])) ++g;
  const int after = g + 1;
  if (g >= static_cast<int>(ops.size()) || !IsGemm(ops[g])) return;
  if (after >= static_cast<int>(ops.size()) || ops[after].wait_for >= 0 || ops[g].wait_for >= 0) return;
  ops[c].async = true;
  ops[after].wait_for = c;
}

}  // namespace

std::vector<Op> OverlapTpCollectives(std::vector<Op> ops, TpCommOverlap mode, bool sequence_parallel) {
  if (mode == TpCommOverlap::kNone) return ops;
  const bool gemm = mode == TpCommOverlap::kGemm && sequence_parallel;
  for (int c = 0; c < static_cast<int>(ops.size()); ++c) {
    if (!IsTpCollective(ops[c])) continue;
    const Op& op = ops[c];
    const bool reduction = op.collective == CollectiveKind::kAllReduce || op.collective == CollectiveKind::kReduceScatter;
    if (reduction && c > 0 && IsGemm(ops[c - 1]) && (gemm || ops[c - 1].weight_grad)) {
      OverlapReduction(ops, c);
    } else if (gemm && op.collective == CollectiveKind::kAllGather) {
      OverlapGather(ops, c);
    }
  }
  return ops;
}

}  // namespace stacksim::workload
