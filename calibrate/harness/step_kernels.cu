#include "calibrate/harness/step_kernels.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "kernels/cuda_check.h"

namespace stacksim::calibrate {
namespace {

constexpr int kThreads = 256;
constexpr int kVec = 8;                // bf16 per 16-byte access
constexpr int kNormBwdLoads = 2;       // 16-byte groups per thread and row: blockDim.x = cols / 16
constexpr int kNormBwdMaxThreads = 512;  // 8192 columns; 128 registers a thread
constexpr float kLr = AdamSettings::kLr, kBeta1 = AdamSettings::kBeta1, kBeta2 = AdamSettings::kBeta2,
                kEps = AdamSettings::kEps, kWeightDecay = AdamSettings::kWeightDecay,
                kMaxNorm = AdamSettings::kMaxNorm;

unsigned Blocks(size_t items, int threads = kThreads) {
  size_t b = (items + threads - 1) / threads;
  return static_cast<unsigned>(std::max<size_t>(1, std::min<size_t>(b, 65535u * 8)));
}

__device__ __forceinline__ float WarpSum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Sum over the block, every thread gets it; safe to call again right after.
__device__ float BlockSum(float v, float* scratch) {
  v = WarpSum(v);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < static_cast<int>(blockDim.x >> 5) ? scratch[lane] : 0.0f;
  v = WarpSum(v);
  __syncthreads();
  return v;
}

// One row per block at a time, blockDim.x = cols / 16 rounded up to warps:
// each thread owns kNormBwdLoads groups of kVec adjacent columns, read and
// written 16 bytes at a time, keeps their gamma and dgamma sums in registers
// over the block's rows and issues all of a row's loads (x, dy, dresidual)
// before it needs any; rows go to the blocks round robin, several blocks per
// SM, so that enough loads are in flight to stream at HBM bandwidth. (The first
// version, a 1024-thread block with 2-byte loads walking its rows one after
// another, streamed 64 MiB in 82 us on an H200, 17% of HBM:
// profiles/measured/h200-sxm-141gb-2026-12-04b-calibrate, step_kernels.csv.)
__global__ void __launch_bounds__(kNormBwdMaxThreads)
    RmsNormBackwardKernel(const bf16* x, const bf16* gamma, const float* rstd, const bf16* dy, const bf16* dres,
                          bf16* dx, float* partial, int rows, int cols) {
  __shared__ float scratch[32];
  constexpr int kN = kNormBwdLoads * kVec;
  float acc[kN], g[kN];
  uint4 xv[kNormBwdLoads], dv[kNormBwdLoads], rv[kNormBwdLoads];
#pragma unroll
  for (int l = 0; l < kNormBwdLoads; ++l) {
    const int c0 = (threadIdx.x + l * blockDim.x) * kVec;
    uint4 gv = make_uint4(0, 0, 0, 0);
    if (c0 < cols) gv = *reinterpret_cast<const uint4*>(gamma + c0);
    const bf16* gs = reinterpret_cast<const bf16*>(&gv);
#pragma unroll
    for (int j = 0; j < kVec; ++j) {
      g[l * kVec + j] = __bfloat162float(gs[j]);
      acc[l * kVec + j] = 0.0f;
    }
  }
  for (int row = blockIdx.x; row < rows; row += gridDim.x) {
    const size_t base = static_cast<size_t>(row) * cols;
    // Every load of the row first, so that they are in flight together.
#pragma unroll
    for (int l = 0; l < kNormBwdLoads; ++l) {
      const int c0 = (threadIdx.x + l * blockDim.x) * kVec;
      xv[l] = dv[l] = rv[l] = make_uint4(0, 0, 0, 0);
      if (c0 >= cols) continue;
      xv[l] = *reinterpret_cast<const uint4*>(x + base + c0);
      dv[l] = *reinterpret_cast<const uint4*>(dy + base + c0);
      if (dres != nullptr) rv[l] = *reinterpret_cast<const uint4*>(dres + base + c0);
    }
    const float r = rstd[row];
    float dot = 0.0f;
#pragma unroll
    for (int l = 0; l < kNormBwdLoads; ++l) {
      const bf16* xs = reinterpret_cast<const bf16*>(&xv[l]);
      const bf16* ds = reinterpret_cast<const bf16*>(&dv[l]);
#pragma unroll
      for (int j = 0; j < kVec; ++j) {
        const int k = l * kVec + j;
        const float xh = __bfloat162float(xs[j]) * r, d = __bfloat162float(ds[j]);
        dot += d * g[k] * xh;
        acc[k] += d * xh;
      }
    }
    const float mean = BlockSum(dot, scratch) / cols;
#pragma unroll
    for (int l = 0; l < kNormBwdLoads; ++l) {
      const int c0 = (threadIdx.x + l * blockDim.x) * kVec;
      if (c0 >= cols) continue;
      const bf16* xs = reinterpret_cast<const bf16*>(&xv[l]);
      const bf16* ds = reinterpret_cast<const bf16*>(&dv[l]);
      const bf16* rs = reinterpret_cast<const bf16*>(&rv[l]);
      uint4 ov;
      bf16* os = reinterpret_cast<bf16*>(&ov);
#pragma unroll
      for (int j = 0; j < kVec; ++j) {
        const int k = l * kVec + j;
        const float xh = __bfloat162float(xs[j]) * r;
        os[j] = __float2bfloat16(r * (__bfloat162float(ds[j]) * g[k] - xh * mean) + __bfloat162float(rs[j]));
      }
      *reinterpret_cast<uint4*>(dx + base + c0) = ov;
    }
  }
#pragma unroll
  for (int l = 0; l < kNormBwdLoads; ++l) {
    const int c0 = (threadIdx.x + l * blockDim.x) * kVec;
    if (c0 >= cols) continue;
    float* p = partial + static_cast<size_t>(blockIdx.x) * cols + c0;
#pragma unroll
    for (int j = 0; j < kVec; ++j) p[j] = acc[l * kVec + j];
  }
}

// out[c] = sum over parts of partial[p][c]: a block per 32 columns, its
// warps splitting the parts (coalesced 128-byte rows), then summed in
// shared memory.
__global__ void __launch_bounds__(256) SumColumnsKernel(const float* partial, int parts, int cols, float* out) {
  __shared__ float sums[8][32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int c = blockIdx.x * 32 + lane;
  float s = 0.0f;
  if (c < cols) {
    for (int p = warp; p < parts; p += 8) s += partial[static_cast<size_t>(p) * cols + c];
  }
  sums[warp][lane] = s;
  __syncthreads();
  if (warp == 0 && c < cols) {
    float t = 0.0f;
#pragma unroll
    for (int w = 0; w < 8; ++w) t += sums[w][lane];
    out[c] = t;
  }
}

__global__ void SwigluBackwardKernel(const bf16* in, const bf16* dout, bf16* din, size_t pairs, int half_pairs) {
  // Two adjacent columns per thread: in and din rows are 2f wide (gate | up).
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < pairs;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const size_t row = i / half_pairs, col = i % half_pairs;
    const __nv_bfloat162* in2 = reinterpret_cast<const __nv_bfloat162*>(in) + row * 2 * half_pairs;
    __nv_bfloat162* din2 = reinterpret_cast<__nv_bfloat162*>(din) + row * 2 * half_pairs;
    const float2 g = __bfloat1622float2(in2[col]);
    const float2 u = __bfloat1622float2(in2[half_pairs + col]);
    const float2 d = __bfloat1622float2(reinterpret_cast<const __nv_bfloat162*>(dout)[i]);
    float2 dg, du;
    {
      const float s = 1.0f / (1.0f + __expf(-g.x));
      du.x = d.x * g.x * s;
      dg.x = d.x * u.x * s * (1.0f + g.x * (1.0f - s));
    }
    {
      const float s = 1.0f / (1.0f + __expf(-g.y));
      du.y = d.y * g.y * s;
      dg.y = d.y * u.y * s * (1.0f + g.y * (1.0f - s));
    }
    din2[col] = __float22bfloat162_rn(dg);
    din2[half_pairs + col] = __float22bfloat162_rn(du);
  }
}

__global__ void ResidualAddKernel(const __nv_bfloat162* a, const __nv_bfloat162* b, __nv_bfloat162* out,
                                  size_t pairs) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < pairs;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const float2 x = __bfloat1622float2(a[i]), y = __bfloat1622float2(b[i]);
    out[i] = __float22bfloat162_rn(make_float2(x.x + y.x, x.y + y.y));
  }
}

__global__ void SquareSumKernel(const float4* g, size_t quads, float* out) {
  __shared__ float scratch[32];
  float s = 0.0f;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < quads;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const float4 v = g[i];
    s += v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w;
  }
  s = BlockSum(s, scratch);
  if (threadIdx.x == 0) atomicAdd(out, s);
}

__device__ __forceinline__ float AdamOne(float& w, float g, float& m, float& v, float bc1, float bc2) {
  m = kBeta1 * m + (1.0f - kBeta1) * g;
  v = kBeta2 * v + (1.0f - kBeta2) * g * g;
  w -= kLr * ((m / bc1) / (sqrtf(v / bc2) + kEps) + kWeightDecay * w);
  return w;
}

__global__ void AdamKernel(float4* master, const float4* grad, float4* m, float4* v, uint2* param, size_t quads,
                           const float* norm_sq, float bc1, float bc2) {
  const float norm = sqrtf(*norm_sq);
  const float clip = norm > kMaxNorm ? kMaxNorm / norm : 1.0f;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < quads;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    float4 w = master[i], g = grad[i], mm = m[i], vv = v[i];
    AdamOne(w.x, g.x * clip, mm.x, vv.x, bc1, bc2);
    AdamOne(w.y, g.y * clip, mm.y, vv.y, bc1, bc2);
    AdamOne(w.z, g.z * clip, mm.z, vv.z, bc1, bc2);
    AdamOne(w.w, g.w * clip, mm.w, vv.w, bc1, bc2);
    master[i] = w;
    m[i] = mm;
    v[i] = vv;
    __nv_bfloat162 lo = __float22bfloat162_rn(make_float2(w.x, w.y));
    __nv_bfloat162 hi = __float22bfloat162_rn(make_float2(w.z, w.w));
    uint2 packed;
    packed.x = *reinterpret_cast<uint32_t*>(&lo);
    packed.y = *reinterpret_cast<uint32_t*>(&hi);
    param[i] = packed;
  }
}

__global__ void RouterSoftmaxKernel(const bf16* logits, float* probs, float* weight, int tokens, int experts,
                                    int top_k) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= tokens) return;
  const bf16* l = logits + static_cast<size_t>(t) * experts;
  float mx = -INFINITY;
  for (int e = 0; e < experts; ++e) mx = fmaxf(mx, __bfloat162float(l[e]));
  float sum = 0.0f;
  for (int e = 0; e < experts; ++e) sum += __expf(__bfloat162float(l[e]) - mx);
  float* p = probs + static_cast<size_t>(t) * experts;
  for (int e = 0; e < experts; ++e) p[e] = __expf(__bfloat162float(l[e]) - mx) / sum;
  for (int j = 0; j < top_k; ++j) {
    const int flat = t * top_k + j;
    weight[flat] = p[flat % experts];
  }
}

__global__ void RouterSoftmaxBackwardKernel(const float* probs, const float* dweight, bf16* dlogits, int tokens,
                                            int experts, int top_k) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= tokens) return;
  const float* p = probs + static_cast<size_t>(t) * experts;
  // dL/dp_e: the routed copies' weight gradients land on their experts' probabilities.
  float dot = 0.0f;
  for (int j = 0; j < top_k; ++j) {
    const int flat = t * top_k + j;
    dot += p[flat % experts] * dweight[flat];
  }
  for (int e = 0; e < experts; ++e) {
    float dp = 0.0f;
    for (int j = 0; j < top_k; ++j) {
      const int flat = t * top_k + j;
      if (flat % experts == e) dp += dweight[flat];
    }
    dlogits[static_cast<size_t>(t) * experts + e] = __float2bfloat16(p[e] * (dp - dot));
  }
}

__device__ __forceinline__ size_t RoutedRow(int flat, int experts, int cap) {
  return static_cast<size_t>(flat % experts) * cap + flat / experts;
}

// One block per routed copy; 16-byte vectors along the row.
__global__ void PermuteRowsKernel(const uint4* x, const float* weight, uint4* out, int top_k, int experts, int cap,
                                  int row_vecs) {
  const int flat = blockIdx.x;
  const int t = flat / top_k;
  const float s = weight != nullptr ? weight[flat] : 1.0f;
  const uint4* src = x + static_cast<size_t>(t) * row_vecs;
  uint4* dst = out + RoutedRow(flat, experts, cap) * row_vecs;
  for (int c = threadIdx.x; c < row_vecs; c += blockDim.x) {
    uint4 v = src[c];
    if (weight != nullptr) {
      __nv_bfloat162* h = reinterpret_cast<__nv_bfloat162*>(&v);
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        float2 f = __bfloat1622float2(h[q]);
        h[q] = __float22bfloat162_rn(make_float2(f.x * s, f.y * s));
      }
    }
    dst[c] = v;
  }
}

// One block per token.
__global__ void CombineRowsKernel(const uint4* y, const float* weight, uint4* out, int top_k, int experts, int cap,
                                  int row_vecs) {
  const int t = blockIdx.x;
  for (int c = threadIdx.x; c < row_vecs; c += blockDim.x) {
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int j = 0; j < top_k; ++j) {
      const int flat = t * top_k + j;
      const float s = weight != nullptr ? weight[flat] : 1.0f;
      uint4 v = y[RoutedRow(flat, experts, cap) * row_vecs + c];
      const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&v);
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        float2 f = __bfloat1622float2(h[q]);
        acc[2 * q] += s * f.x;
        acc[2 * q + 1] += s * f.y;
      }
    }
    uint4 o;
    __nv_bfloat162* h = reinterpret_cast<__nv_bfloat162*>(&o);
#pragma unroll
    for (int q = 0; q < 4; ++q) h[q] = __float22bfloat162_rn(make_float2(acc[2 * q], acc[2 * q + 1]));
    out[static_cast<size_t>(t) * row_vecs + c] = o;
  }
}

// One block per routed copy.
__global__ void CombineWeightGradKernel(const __nv_bfloat162* dout, const __nv_bfloat162* y, float* dweight,
                                        int top_k, int experts, int cap, int row_pairs) {
  __shared__ float scratch[32];
  const int flat = blockIdx.x;
  const int t = flat / top_k;
  const __nv_bfloat162* a = dout + static_cast<size_t>(t) * row_pairs;
  const __nv_bfloat162* b = y + RoutedRow(flat, experts, cap) * row_pairs;
  float s = 0.0f;
  for (int c = threadIdx.x; c < row_pairs; c += blockDim.x) {
    const float2 p = __bfloat1622float2(a[c]), q = __bfloat1622float2(b[c]);
    s += p.x * q.x + p.y * q.y;
  }
  s = BlockSum(s, scratch);
  if (threadIdx.x == 0) dweight[flat] = s;
}

}  // namespace

int RmsNormBackwardBlocks(int sm_count) { return 4 * std::max(1, sm_count); }

void RmsNormBackward(const bf16* x, const bf16* gamma, const float* rstd, const bf16* dy, const bf16* dresidual,
                     bf16* dx, float* partial, float* dgamma, int rows, int cols, int sm_count, cudaStream_t stream) {
  if (cols % kVec != 0 || cols > kNormBwdMaxThreads * kVec * kNormBwdLoads) {
    throw std::invalid_argument("RmsNormBackward: cols " + std::to_string(cols) + " must be a multiple of " +
                                std::to_string(kVec) + " and at most " +
                                std::to_string(kNormBwdMaxThreads * kVec * kNormBwdLoads));
  }
  const int groups = (cols / kVec + kNormBwdLoads - 1) / kNormBwdLoads;
  const int threads = std::max(32, (groups + 31) / 32 * 32);
  const int blocks = std::min(rows, RmsNormBackwardBlocks(sm_count));
  RmsNormBackwardKernel<<<blocks, threads, 0, stream>>>(x, gamma, rstd, dy, dresidual, dx, partial, rows, cols);
  CUDA_LAUNCH_OK();
  SumColumnsKernel<<<(cols + 31) / 32, 256, 0, stream>>>(partial, blocks, cols, dgamma);
  CUDA_LAUNCH_OK();
}

void SwigluBackward(const bf16* in, const bf16* dout, bf16* din, int rows, int f, cudaStream_t stream) {
  const size_t pairs = static_cast<size_t>(rows) * (f / 2);
  SwigluBackwardKernel<<<Blocks(pairs), kThreads, 0, stream>>>(in, dout, din, pairs, f / 2);
  CUDA_LAUNCH_OK();
}

void ResidualAdd(const bf16* a, const bf16* b, bf16* out, size_t n, cudaStream_t stream) {
  const size_t pairs = n / 2;
  ResidualAddKernel<<<Blocks(pairs), kThreads, 0, stream>>>(reinterpret_cast<const __nv_bfloat162*>(a),
                                                            reinterpret_cast<const __nv_bfloat162*>(b),
                                                            reinterpret_cast<__nv_bfloat162*>(out), pairs);
  CUDA_LAUNCH_OK();
}

void OptimizerStep(float* master, float* grad, float* m, float* v, bf16* param, size_t n, float* norm_sq, int step,
                   cudaStream_t stream) {
  const size_t quads = n / 4;
  CUDA_OK(cudaMemsetAsync(norm_sq, 0, sizeof(float), stream));
  SquareSumKernel<<<std::min<unsigned>(Blocks(quads), 1024), kThreads, 0, stream>>>(
      reinterpret_cast<const float4*>(grad), quads, norm_sq);
  CUDA_LAUNCH_OK();
  const float bc1 = 1.0f - std::pow(kBeta1, static_cast<float>(step));
  const float bc2 = 1.0f - std::pow(kBeta2, static_cast<float>(step));
  AdamKernel<<<Blocks(quads), kThreads, 0, stream>>>(reinterpret_cast<float4*>(master),
                                                     reinterpret_cast<const float4*>(grad),
                                                     reinterpret_cast<float4*>(m), reinterpret_cast<float4*>(v),
                                                     reinterpret_cast<uint2*>(param), quads, norm_sq, bc1, bc2);
  CUDA_LAUNCH_OK();
  CUDA_OK(cudaMemsetAsync(grad, 0, n * sizeof(float), stream));
}

void RouterSoftmax(const bf16* logits, float* probs, float* weight, int tokens, int experts, int top_k,
                   cudaStream_t stream) {
  RouterSoftmaxKernel<<<(tokens + kThreads - 1) / kThreads, kThreads, 0, stream>>>(logits, probs, weight, tokens,
                                                                                  experts, top_k);
  CUDA_LAUNCH_OK();
}

void RouterSoftmaxBackward(const float* probs, const float* dweight, bf16* dlogits, int tokens, int experts,
                           int top_k, cudaStream_t stream) {
  RouterSoftmaxBackwardKernel<<<(tokens + kThreads - 1) / kThreads, kThreads, 0, stream>>>(probs, dweight, dlogits,
                                                                                          tokens, experts, top_k);
  CUDA_LAUNCH_OK();
}

void PermuteRows(const bf16* x, const float* weight, bf16* out, int tokens, int hidden, int top_k, int experts,
                 cudaStream_t stream) {
  const int cap = tokens * top_k / experts;
  PermuteRowsKernel<<<tokens * top_k, kThreads, 0, stream>>>(reinterpret_cast<const uint4*>(x), weight,
                                                             reinterpret_cast<uint4*>(out), top_k, experts, cap,
                                                             hidden / 8);
  CUDA_LAUNCH_OK();
}

void CombineRows(const bf16* y, const float* weight, bf16* out, int tokens, int hidden, int top_k, int experts,
                 cudaStream_t stream) {
  const int cap = tokens * top_k / experts;
  CombineRowsKernel<<<tokens, kThreads, 0, stream>>>(reinterpret_cast<const uint4*>(y), weight,
                                                     reinterpret_cast<uint4*>(out), top_k, experts, cap, hidden / 8);
  CUDA_LAUNCH_OK();
}

void CombineWeightGrad(const bf16* dout, const bf16* y, float* dweight, int tokens, int hidden, int top_k,
                       int experts, cudaStream_t stream) {
  const int cap = tokens * top_k / experts;
  CombineWeightGradKernel<<<tokens * top_k, kThreads, 0, stream>>>(reinterpret_cast<const __nv_bfloat162*>(dout),
                                                                   reinterpret_cast<const __nv_bfloat162*>(y),
                                                                   dweight, top_k, experts, cap, hidden / 2);
  CUDA_LAUNCH_OK();
}

}  // namespace stacksim::calibrate
