#include "sim/workload/zero_bubble_split.h"

namespace stacksim::workload {

std::pair<std::vector<Op>, std::vector<Op>> SplitWeightGradients(const std::vector<Op>& ops) {
  std::vector<Op> b, w;
  std::vector<int> index(ops.size(), -1);
  for (size_t i = 0; i < ops.size(); ++i) {
    Op op = ops[i];
    if (op.weight_grad) {
      op.wait_for = -1;  // W waits for all of B's async collectives instead
      w.push_back(op);
    } else {
      if (op.wait_for >= 0) op.wait_for = index[op.wait_for];
      index[i] = static_cast<int>(b.size());
      b.push_back(op);
    }
  }
  return {b, w};
}

}  // namespace stacksim::workload
