// How a MoE layer's tokens reach its routed experts and come back
// (plan.moe_dispatcher), as op lists around the experts' grouped GEMMs:
// - alltoall, Megatron-Core's MoEAlltoAllTokenDispatcher (Megatron-LM
//   megatron/core/transformer/moe/token_dispatcher.py, v0.13+): count tokens
//   per expert, all-gather the counts over the EP group, copy them to the
//   host and wait ("before_ep_alltoall"), permute the routed copies into
//   expert order (permutation 1), all-to-all the tokens and, separately,
//   their router probabilities, sort the received chunks by local expert
//   (permutation 2); the combine mirrors it without the host sync. Every
//   routed copy travels on its own, in bf16 (Transformer Engine quantizes
//   inside the grouped GEMM).
// - hierarchical, DeepSeek-V3 (arXiv:2412.19437 §3.2.2) as DeepEP's normal
//   kernels run it: a layout kernel, a host wait for the received counts,
//   then each token goes once to every destination GPU (once per node over
//   IB, forwarded over NVLink), and the receiving GPU expands it into one row
//   per local expert; the combine sums a GPU's expert outputs per token
//   before sending it back. Under FP8 training the dispatch (and the output
//   gradient sent to the experts in the backward) moves FP8 with 1x128 tile
//   scales; the combine stays bf16 (§3.3.2).
//
// All-to-all buffers are bytes per rank over the EP group (Op::ep_group);
// the busiest rank's load_factor sets their size.
#ifndef STACKSIM_SIM_WORKLOAD_MOE_DISPATCH_H_
#define STACKSIM_SIM_WORKLOAD_MOE_DISPATCH_H_

#include <vector>

#include "sim/workload/layer_shape.h"
#include "sim/workload/op.h"

namespace stacksim::workload {

// The dispatch moves FP8 rows to the experts (hierarchical under FP8).
bool Fp8Dispatch(const LayerShape& s);

// After the router: from the routed tokens to the local experts' rows.
void TokenDispatch(std::vector<Op>& ops, const LayerShape& s);
// After the experts: from their output rows back to one row per token.
void TokenCombine(std::vector<Op>& ops, const LayerShape& s);
// The backward of TokenCombine (the output gradient to the experts) and of
// TokenDispatch (the input gradient back to the tokens).
void TokenCombineBackward(std::vector<Op>& ops, const LayerShape& s);
void TokenDispatchBackward(std::vector<Op>& ops, const LayerShape& s);

}  // namespace stacksim::workload

#endif  // STACKSIM_SIM_WORKLOAD_MOE_DISPATCH_H_
