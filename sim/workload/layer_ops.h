// The operations of one transformer layer (and of the embedding and output
// head) for one micro-batch on one tensor-parallel rank, forward and backward:
// the public entry of the layer's op lists, assembled from its parts
// (attention.h, mla.h, context_parallel.h, dense_mlp.h, moe.h,
// recompute_modules.h, built from op_builders.h).
//
// Shapes follow Megatron-LM's tensor parallelism (Shoeybi et al. 2019): QKV
// and FC1 are column-parallel, the attention output projection and FC2
// row-parallel; with sequence parallelism (Korthikanti et al. 2022) norms,
// dropouts and residuals work on 1/t of the tokens and each all-reduce becomes
// a reduce-scatter plus an all-gather. GEMM FLOPs are 2mnk; memory-bound ops
// count each input read once and each output written once. Units as in op.h.
#ifndef STACKSIM_SIM_WORKLOAD_LAYER_OPS_H_
#define STACKSIM_SIM_WORKLOAD_LAYER_OPS_H_

#include <vector>

#include "sim/workload/layer_shape.h"
#include "sim/workload/moe_routing.h"
#include "sim/workload/op.h"
#include "sim/workload/recompute_modules.h"

namespace stacksim::workload {

std::vector<Op> LayerForward(const LayerShape& s);
std::vector<Op> LayerBackward(const LayerShape& s);

std::vector<Op> EmbeddingForward(const LayerShape& s);
std::vector<Op> EmbeddingBackward(const LayerShape& s);
// Final norm, logits and the vocabulary-parallel cross-entropy loss.
std::vector<Op> HeadForward(const LayerShape& s);
std::vector<Op> HeadBackward(const LayerShape& s);
// Appends `more` to `ops`, keeping each wait_for pointing at the same op.
void AppendOps(std::vector<Op>& ops, std::vector<Op> more);
// What one multi-token-prediction module adds to the head (DeepSeek-V3
// §2.2, ModelConfig::mtp_modules): the next tokens' embeddings and the
// hidden states, each RMS-normed, concatenated and projected from 2h to h
// (column-parallel), and, after the module's transformer layer (a pipeline
// layer of its own, ModelConfig::PipelineLayerCount), the shared output
// head and its own loss.
std::vector<Op> MtpHeadForward(const LayerShape& s);
std::vector<Op> MtpHeadBackward(const LayerShape& s);

}  // namespace stacksim::workload

#endif  // STACKSIM_SIM_WORKLOAD_LAYER_OPS_H_
