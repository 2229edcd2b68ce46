// The Gated DeltaNet (linear attention) of Qwen3-Next's linear layers
// (config::GatedDeltaNetConfig) for one micro-batch on one tensor-parallel
// rank: in_proj (q, k, v, the output gate z, beta and the decay), the causal
// convolution over q, k and v, the gated delta rule in chunks of C tokens
// (flash-linear-attention's chunk_gated_delta_rule, the kernels Megatron-Core
// and Hugging Face call), the gated RMSNorm and out_proj.
//
// TP splits the heads (in_proj column-parallel, out_proj row-parallel: the
// same collectives as attention). The chunked rule (Yang et al. 2024,
// arXiv:2412.06464, section 3.3; its WY representation) per chunk and
// value head: K K^T (C x C, inner dk), the triangular solve (C x C x C),
// W and U from it (C x (dk + dv), inner C), the state's update K^T U
// (dk x dv, inner C) and its use W S (C x dv, inner dk), and the output
// [Q | Q K^T masked] x [S ; U] (C x dv, inner dk + C) after Q K^T (C x C,
// inner dk): batched 16-bit GEMMs over (chunks x value heads), counted as
// the sequence mixer's work like attention. The backward recomputes the
// chunk states and runs each product's two transposed products. Units as
// in op.h.
#ifndef STACKSIM_SIM_WORKLOAD_GATED_DELTA_NET_H_
#define STACKSIM_SIM_WORKLOAD_GATED_DELTA_NET_H_

#include <vector>

#include "sim/workload/layer_shape.h"
#include "sim/workload/op.h"

namespace stacksim::workload {

// REQUIRES: s.tp divides s.gdn.key_heads and s.gdn.value_heads.
void GatedDeltaNetForward(std::vector<Op>& ops, const LayerShape& s);
void GatedDeltaNetBackward(std::vector<Op>& ops, const LayerShape& s);

// Matrix FLOPs of one layer's chunked gated delta rule, forward, over
// `tokens` tokens, whole model widths (for model FLOPs).
double GatedDeltaRuleForwardFlops(const config::GatedDeltaNetConfig& g, double tokens);

}  // namespace stacksim::workload

#endif  // STACKSIM_SIM_WORKLOAD_GATED_DELTA_NET_H_
