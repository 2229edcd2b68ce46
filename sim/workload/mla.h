// Multi-head latent attention around the core attention (DeepSeek-V2,
// arXiv:2405.04434 §2.1; Megatron-Core MLASelfAttention with Transformer
// Engine): the replicated down-projections to the latents, the latent norms,
// the column-parallel up-projections and RoPE, and their backward. The core
// attention itself is attention.h's, with head_dim-wide queries/keys and
// v_head_dim-wide values.
//
// Widths in elements (LayerShape::mla); ops for one micro-batch on one rank.
#ifndef STACKSIM_SIM_WORKLOAD_MLA_H_
#define STACKSIM_SIM_WORKLOAD_MLA_H_

#include <vector>

#include "sim/workload/layer_shape.h"
#include "sim/workload/op.h"

namespace stacksim::workload {

// From the input norm's output to Q, K, V. REQUIRES: s.mla.enabled.
void MlaForward(std::vector<Op>& ops, const LayerShape& s);
// From the latents to Q, K, V: latent norms, the SP all-gather, the
// up-projections and RoPE, which is Megatron-Core's mla_up_proj recompute
// unit (MLASelfAttention's qkv_up_proj_and_rope_apply). Recomputed, the
// gather moves only the latents: the RoPE key was gathered in the forward and
// kept as the unit's input.
void MlaUpForward(std::vector<Op>& ops, const LayerShape& s, bool recompute = false);
// From the gradients of Q, K, V back to the input norm's output, including
// the TP reduction of the latent gradients.
void MlaBackward(std::vector<Op>& ops, const LayerShape& s);

}  // namespace stacksim::workload

#endif  // STACKSIM_SIM_WORKLOAD_MLA_H_
