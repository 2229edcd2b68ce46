// The harness's kernels for the step check's layers (step_check_step.cc)
// that kernels/ does not have: the backward passes of RMSNorm and SwiGLU,
// the residual add, the optimizer step (gradient norm and a fused
// mixed-precision Adam), and the MoE block's router softmax, token
// permutation and weighted combine. Each is written to read every input once
// and write every output once (the bytes the cost model counts), and to be
// right, simply: none is tuned. bf16 tensors are row-major; statistics,
// gradients of the optimizer and router weights fp32. Each launcher enqueues
// on `stream` and throws CudaError when the launch fails.
//
// MoE routing is exactly balanced (what the step check measures and
// predicts): copy j of token t goes to expert e = (t k + j) mod E, in row
// e cap + (t k + j) / E of the permuted buffer, cap = T k / E.
// REQUIRES (MoE): T k divisible by E.
#ifndef STACKSIM_CALIBRATE_HARNESS_STEP_KERNELS_H_
#define STACKSIM_CALIBRATE_HARNESS_STEP_KERNELS_H_

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/kernels.h"

namespace stacksim::calibrate {

using bf16 = __nv_bfloat16;

// The optimizer's settings: Adam (Kingma & Ba 2015) with the values
// Megatron-LM trains Llama-style models with, and clipping to a global
// gradient norm of 1. They change the arithmetic, not the time.
struct AdamSettings {
  static constexpr float kLr = 3e-4f, kBeta1 = 0.9f, kBeta2 = 0.95f, kEps = 1e-8f, kWeightDecay = 0.1f,
                         kMaxNorm = 1.0f;
};

// RMSNorm backward with the residual branch's gradient added:
//   dx = rstd (g dy - x_hat mean(g dy x_hat)) + dresidual,  x_hat = x rstd,
// and dgamma = sum over rows of dy x_hat, reduced in two passes through
// `partial` (fp32 [blocks, cols], blocks = RmsNormBackwardBlocks(sm_count)).
// x is the norm's input (the residual stream); 16-byte aligned rows.
// Throws std::invalid_argument unless cols is a multiple of 8 and <= 8192.
int RmsNormBackwardBlocks(int sm_count);
void RmsNormBackward(const bf16* x, const bf16* gamma, const float* rstd, const bf16* dy, const bf16* dresidual,
                     bf16* dx, float* partial, float* dgamma, int rows, int cols, int sm_count, cudaStream_t stream);

// in [rows, 2f] (gate | up), dout [rows, f] -> din [rows, 2f]. REQUIRES: f even.
void SwigluBackward(const bf16* in, const bf16* dout, bf16* din, int rows, int f, cudaStream_t stream);

// out = a + b over n elements. REQUIRES: n even.
void ResidualAdd(const bf16* a, const bf16* b, bf16* out, size_t n, cudaStream_t stream);

// The optimizer step over n parameters (n a multiple of 4): the squared
// gradient norm into *norm_sq (zeroed first), then Adam (AdamSettings,
// decoupled weight decay, bias correction for step `step` >= 1) with the gradient
// clipped to max_norm read off *norm_sq: reads fp32 master, grad, m, v,
// writes master, m, v and the bf16 working copy `param`; then the gradient
// is zeroed. 38 bytes per parameter, as sim/workload/training_step.cc counts.
void OptimizerStep(float* master, float* grad, float* m, float* v, bf16* param, size_t n, float* norm_sq,
                   int step, cudaStream_t stream);

// Router: logits [T, E] -> probabilities (fp32 [T, E]) and, per routed copy
// (t, j), its weight, fp32 [T k] (the probability of its expert).
void RouterSoftmax(const bf16* logits, float* probs, float* weight, int tokens, int experts, int top_k,
                   cudaStream_t stream);
// Router backward: dweight fp32 [T k] -> dlogits bf16 [T, E] through the softmax.
void RouterSoftmaxBackward(const float* probs, const float* dweight, bf16* dlogits, int tokens, int experts,
                           int top_k, cudaStream_t stream);
// out[row(t, j)] = scale(t, j) x[t], rows [T k, H]; scale = weight, or 1 when weight is null.
void PermuteRows(const bf16* x, const float* weight, bf16* out, int tokens, int hidden, int top_k, int experts,
                 cudaStream_t stream);
// out[t] = sum_j scale(t, j) y[row(t, j)]; scale = weight, or 1 when weight is null.
void CombineRows(const bf16* y, const float* weight, bf16* out, int tokens, int hidden, int top_k, int experts,
                 cudaStream_t stream);
// dweight(t, j) = dot(dout[t], y[row(t, j)]).
void CombineWeightGrad(const bf16* dout, const bf16* y, float* dweight, int tokens, int hidden, int top_k,
                       int experts, cudaStream_t stream);

// Checks every kernel above on small random inputs against a double-precision
// reference on the host (step_kernel_checks.cc); the step check times its
// layers only when all pass.
std::vector<kernels::CheckResult> CheckStepKernels(uint64_t seed, int sm_count, cudaStream_t stream);

}  // namespace stacksim::calibrate

#endif  // STACKSIM_CALIBRATE_HARNESS_STEP_KERNELS_H_
