// A dense MLP after its norm on one tensor-parallel rank: the SP all-gather,
// the column-parallel FC1, the activation (GeLU, or SwiGLU's gated pair),
// the row-parallel FC2 and its TP reduction (Megatron-Core's MLP module,
// whose Transformer Engine FC1 also holds the norm); and its backward.
//
// Widths in elements: ffn per gated half, split over TP.
#ifndef STACKSIM_SIM_WORKLOAD_DENSE_MLP_H_
#define STACKSIM_SIM_WORKLOAD_DENSE_MLP_H_

#include <vector>

#include "sim/workload/layer_shape.h"
#include "sim/workload/op.h"

namespace stacksim::workload {

void DenseMlpForward(std::vector<Op>& ops, const LayerShape& s);
void DenseMlpBackward(std::vector<Op>& ops, const LayerShape& s);

}  // namespace stacksim::workload

#endif  // STACKSIM_SIM_WORKLOAD_DENSE_MLP_H_
