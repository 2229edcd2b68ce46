// A mixture-of-experts block after the MLP norm, on one rank: the router
// (logits GEMM, top-k, auxiliary loss), the token dispatch to the EP ranks
// (moe_dispatch.h), the local routed experts as grouped GEMMs, the combine,
// and the shared experts as a dense TP MLP beside them; and the backward.
//
// Sizes in elements (LayerShape::moe); the busiest EP rank's token count
// (load_factor) sizes the experts' GEMMs.
#ifndef STACKSIM_SIM_WORKLOAD_MOE_H_
#define STACKSIM_SIM_WORKLOAD_MOE_H_

#include <cstddef>
#include <vector>

#include "sim/workload/layer_shape.h"
#include "sim/workload/op.h"

namespace stacksim::workload {

// The whole MoE block, forward and backward. REQUIRES: s.moe.enabled.
void MoeForward(std::vector<Op>& ops, const LayerShape& s);
void MoeBackward(std::vector<Op>& ops, const LayerShape& s);

// The shared-expert MLP (nothing without shared experts).
void SharedExpertForward(std::vector<Op>& ops, const LayerShape& s);

// Token rows of all local experts on the busiest rank (elements of one row:
// the expert's width).
double ExpertTokens(const LayerShape& s);
// The routed experts' activation (GeLU, or the gated pair) between FC1 and FC2.
Op ExpertActivation(const LayerShape& s);
// Marks ops[from...] as the routed experts' own work.
void MarkExpert(std::vector<Op>& ops, size_t from);

}  // namespace stacksim::workload

#endif  // STACKSIM_SIM_WORKLOAD_MOE_H_
