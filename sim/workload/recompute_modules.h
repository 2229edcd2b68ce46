// Recomputation: the forward ops a layer re-runs in the backward pass, for
// selective recomputation by module (Megatron-Core's recompute_modules;
// plan.recompute "selective") and, through AsRecompute, for full
// recomputation of a layer or the embedding.
//
// Op lists in the units of op.h; recomputed ops are named "recompute-..." and
// flagged Op::recompute.
#ifndef STACKSIM_SIM_WORKLOAD_RECOMPUTE_MODULES_H_
#define STACKSIM_SIM_WORKLOAD_RECOMPUTE_MODULES_H_

#include <vector>

#include "sim/workload/layer_shape.h"
#include "sim/workload/op.h"

namespace stacksim::workload {

// The forward ops selective recomputation re-runs before the layer's backward,
// for the modules in s.recompute_modules (Megatron-Core's recompute_modules;
// names "recompute-..."):
//   core_attn       the unfused QK^T / softmax / PV (Korthikanti et al. 2022);
//                   nothing for fused flash attention, whose backward kernel
//                   recomputes the scores itself
//   layernorm       the norms that are modules of their own: MLA's input norm
//                   and a MoE layer's pre-MLP norm (under FP8 with the casts of
//                   the linear inputs they feed); a norm fused into the next
//                   linear (standard attention, dense MLP) is not recomputed
//   mla_up_proj     MLA's latent norms, the latents' SP all-gather, the q/kv
//                   up-projections and RoPE
//   mlp             a dense layer's whole MLP (norm, FC1, activation, FC2 and
//                   its TP reduction)
//   moe_act         the routed experts' activation (and under FP8 the cast of
//                   FC2's input)
//   moe             a MoE layer's whole MoE block, all-to-alls included
//   shared_experts  the shared-expert MLP
// Modules a layer does not have (moe on a dense layer, mla_up_proj without
// MLA) add nothing, as in Megatron-Core; moe subsumes moe_act and shared_experts.
// Under torchtitan's op policy (shape.selective_policy kOpPolicy, dense
// layers without MLA) it is instead every second matrix multiply of the
// block (wk, wo, w3), the norms, RoPE, the activation, the residual add and
// the sequence-parallel all-gathers (recompute_modules.cc OpPolicyRecompute).
std::vector<Op> SelectiveRecompute(const LayerShape& s);
// The same ops, run again in the backward pass: recompute set, names "recompute-...".
std::vector<Op> AsRecompute(std::vector<Op> ops);

}  // namespace stacksim::workload

#endif  // STACKSIM_SIM_WORKLOAD_RECOMPUTE_MODULES_H_
