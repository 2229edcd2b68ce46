// Test helpers over a layer's op list: FLOPs of the ops whose name starts
// with a prefix, and whether an op of a name is there.
#ifndef STACKSIM_TESTS_OPS_H_
#define STACKSIM_TESTS_OPS_H_

#include <string>
#include <vector>

#include "sim/workload/op.h"

namespace stacksim::testing {

inline double FlopsNamed(const std::vector<workload::Op>& ops, const std::string& prefix) {
  double f = 0;
  for (const workload::Op& op : ops) {
    if (!op.is_collective && op.name.rfind(prefix, 0) == 0) f += op.compute.flops.value;
  }
  return f;
}

inline bool HasOp(const std::vector<workload::Op>& ops, const std::string& name) {
  for (const workload::Op& op : ops) {
    if (op.name == name) return true;
  }
  return false;
}

}  // namespace stacksim::testing

#endif  // STACKSIM_TESTS_OPS_H_
