// The launchers of our fused kernels that a transformer layer calls, for
// code that runs a whole layer (calibrate's step check,
// calibrate/harness/step_check_step.cc) rather than one kernel family's
// checks and timings (kernels.h). Each enqueues on `stream`, checks the
// launch (throws CudaError) and throws std::invalid_argument on shapes the
// kernel does not take. Layouts are row-major, bf16 unless said otherwise.
#ifndef STACKSIM_KERNELS_LAYER_KERNELS_H_
#define STACKSIM_KERNELS_LAYER_KERNELS_H_

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <vector>

namespace stacksim::kernels {

// norm.cu: residual_out = x + residual; out = norm(residual_out) * gamma (+ beta).
struct NormArgs {
  const __nv_bfloat16* x;
  const __nv_bfloat16* residual;
  const __nv_bfloat16* gamma;
  const __nv_bfloat16* beta;  // LayerNorm only
  __nv_bfloat16* out;
  __nv_bfloat16* residual_out;
  float* mean_out;  // LayerNorm only; may be null
  float* rstd_out;  // may be null
  int rows;
  int cols;         // a multiple of 8, at most 16384
  float eps;
};
void LaunchResidualNorm(bool layer_norm, const NormArgs& a, cudaStream_t stream);

// activation.cu: in [rows, 2f] (gate | up), out [rows, f] = silu(gate) * up.
// REQUIRES: f % 8 == 0.
void LaunchSwiglu(const __nv_bfloat16* in, __nv_bfloat16* out, int rows, int f, cudaStream_t stream);

// rope.cu: rotates q [tokens, heads_q, head_dim] and k [tokens, heads_k,
// head_dim] in place by the tables' angles, cos/sin fp32 [seq, head_dim / 2].
struct RopeShape {
  int batch, seq, heads_q, heads_k, head_dim;
  int tokens() const { return batch * seq; }
};
void LaunchRope(__nv_bfloat16* q, __nv_bfloat16* k, const float* cos_table, const float* sin_table,
                const RopeShape& s, cudaStream_t stream);
// cos/sin [seq, head_dim/2] for base 10000: angle(p, d) = p * 10000^(-2d/head_dim).
void RopeTables(const RopeShape& s, std::vector<float>* cos_t, std::vector<float>* sin_t);

}  // namespace stacksim::kernels

#endif  // STACKSIM_KERNELS_LAYER_KERNELS_H_
