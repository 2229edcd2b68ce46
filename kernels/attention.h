// Fused attention, forward and backward, FlashAttention-2 style (Dao 2023):
// bf16 inputs, tensor cores (mma.sync m16n8k16, fp32 accumulators), online
// softmax in fp32, causal masking with key blocks above the diagonal skipped,
// grouped-query attention (query head h reads kv head h / (heads / kv_heads)),
// head_dim 64 or 128, softmax scale 1/sqrt(head_dim).
//
// Layout: Q, O, dO, dQ are [batch, seq, heads, head_dim]; K, V, dK, dV are
// [batch, seq, kv_heads, head_dim] (row-major, head_dim contiguous); the
// log-sum-exp L and the backward's Delta are fp32 [batch, heads, seq].
// Self-attention only: queries and keys have the same length `seq`, and the
// causal mask lets query i see keys 0..i.
//
// Every call enqueues on `stream` and checks each CUDA call and launch
// (throws CudaError); invalid shapes throw std::invalid_argument.
#ifndef STACKSIM_KERNELS_ATTENTION_H_
#define STACKSIM_KERNELS_ATTENTION_H_

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>

namespace stacksim::kernels {

struct AttentionShape {
  int batch = 1;
  int heads = 1;
  int kv_heads = 1;  // divides heads
  int seq = 1;
  int head_dim = 64;  // 64 or 128
  bool causal = false;
};

// O = softmax(Q K^T / sqrt(d)) V, and L = log-sum-exp of each row of the
// scaled scores (natural log), as the backward needs it.
void AttentionForward(const AttentionShape& shape, const __nv_bfloat16* q, const __nv_bfloat16* k,
                      const __nv_bfloat16* v, __nv_bfloat16* o, float* lse, cudaStream_t stream);

// dQ, dK, dV from Q, K, V, the forward's O and L, and dO. Workspace:
// dq_accum fp32 [batch, seq, heads, head_dim] and delta fp32 [batch, heads,
// seq] (contents on entry do not matter). For GQA, dK and dV of a kv head
// sum over its query heads.
void AttentionBackward(const AttentionShape& shape, const __nv_bfloat16* q, const __nv_bfloat16* k,
                       const __nv_bfloat16* v, const __nv_bfloat16* o, const __nv_bfloat16* d_o,
                       const float* lse, __nv_bfloat16* dq, __nv_bfloat16* dk, __nv_bfloat16* dv,
                       float* dq_accum, float* delta, cudaStream_t stream);

}  // namespace stacksim::kernels

#endif  // STACKSIM_KERNELS_ATTENTION_H_
