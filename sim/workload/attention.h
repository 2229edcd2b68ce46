// Self-attention of one layer on one tensor-parallel rank: the per-rank
// head counts, the QKV projection with RoPE, and the core attention as one
// fused (flash) kernel or as Megatron-LM's unfused batched QK^T, softmax and
// PV. Under context parallelism the core attention takes the K/V exchange of
// context_parallel.h.
//
// Widths in elements; FLOPs count the causal half of the score square for
// flash attention (Dao 2023) and the full square unfused.
#ifndef STACKSIM_SIM_WORKLOAD_ATTENTION_H_
#define STACKSIM_SIM_WORKLOAD_ATTENTION_H_

#include <cstdint>
#include <string>
#include <vector>

#include "sim/workload/layer_shape.h"
#include "sim/workload/op.h"

namespace stacksim::workload {

// Per-rank head counts: query heads split evenly; KV heads split, or
// replicated when there are fewer KV heads than TP ranks.
int64_t QHeads(const LayerShape& s);
int64_t KvHeads(const LayerShape& s);
// Value (and attention output) width per head: narrower than the query/key
// width under MLA (128 vs 128 + 64 in DeepSeek-V3).
int64_t VDim(const LayerShape& s);
// RoPE on this rank's Q and K heads, forward or backward: one fused kernel,
// or the tensor ops of config::EagerModules.
Op Rope(const std::string& name, const LayerShape& s, bool backward);
// Bytes of copying K and V out to the query heads (or summing their
// gradients back), 0 unless plan.repeat_kv_copies and the layer has fewer
// KV heads than query heads on this rank.
double RepeatKvBytes(const LayerShape& s);

// From the input norm's output to Q, K, V without MLA: the SP all-gather,
// the column-parallel QKV GEMM (FP8 casts), RoPE.
void QkvForward(std::vector<Op>& ops, const LayerShape& s);
// Its backward: RoPE, the SP re-gather of the norm output (async, for the
// weight gradient) and the QKV GEMM's gradients.
void QkvBackward(std::vector<Op>& ops, const LayerShape& s);

// The core attention from Q, K, V to its output (with CP, the K/V exchange
// first), and its backward.
void AttentionCoreForward(std::vector<Op>& ops, const LayerShape& s);
void AttentionCoreBackward(std::vector<Op>& ops, const LayerShape& s);

}  // namespace stacksim::workload

#endif  // STACKSIM_SIM_WORKLOAD_ATTENTION_H_
