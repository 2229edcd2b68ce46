// The Mamba-2 mixer of a hybrid model's 'M' layers (config::MambaConfig)
// for one micro-batch on one tensor-parallel rank, as Megatron-Core's
// MambaMixer runs it with its memory-efficient path (mamba_ssm's
// mamba_split_conv1d_scan_combined, then out_proj).
//
// TP splits the heads and the B/C groups (in_proj column-parallel, out_proj
// row-parallel; the same collectives as attention). The SSD scan (Dao & Gu
// 2024, arXiv:2405.21060, section 7, "the SSD algorithm") works on chunks of
// Q tokens: per chunk C B^T (Q x Q per group), the chunk's states B^T x
// (N x P per head), the states passed between chunks, and the output
// [C B^T masked | C] x [x ; state] (Q x P per head, an inner dimension of
// Q + N). Each product is a batched GEMM over (chunks x heads or groups), in
// 16-bit (mamba_ssm's Triton kernels; FP8 recipes cover the linear layers
// only). The backward recomputes CB and the states and runs the
// transposed products. Under context parallelism (Megatron-Core's
// MambaContextParallel) the projections run on the rank's sequence shard,
// and all-to-alls over the CP group hand the convolution and the scan whole
// sequences of 1/cp of the rank's heads (five before them: z, x, B, C, dt;
// one after: y; the backward the same the other way). Units as in op.h.
#ifndef STACKSIM_SIM_WORKLOAD_MAMBA_H_
#define STACKSIM_SIM_WORKLOAD_MAMBA_H_

#include <vector>

#include "sim/workload/layer_shape.h"
#include "sim/workload/op.h"

namespace stacksim::workload {

// REQUIRES: s.kind == kMamba; s.tp divides s.mamba.heads and s.mamba.groups;
// cp divides the heads per TP rank and divides or is a multiple of the
// groups per TP rank (config::ValidatePlan).
void MambaForward(std::vector<Op>& ops, const LayerShape& s);
void MambaBackward(std::vector<Op>& ops, const LayerShape& s);

// Matrix FLOPs of one SSD scan's forward over `tokens` tokens of one
// sequence position range, whole model widths (the model-FLOPs count of a
// Mamba-2 layer beside its projections).
double SsdForwardFlops(const config::MambaConfig& m, double tokens);

}  // namespace stacksim::workload

#endif  // STACKSIM_SIM_WORKLOAD_MAMBA_H_
