// RMSNorm and LayerNorm fused with the residual add, bf16 in and out, fp32
// accumulation:
//   residual_out = x + residual                       (stored as bf16)
//   out          = norm(x + residual) * gamma (+ beta for LayerNorm)
// The norm is taken over the fp32 sum (before its rounding to bf16). The
// statistics a training forward keeps for its backward are written too, in
// fp32: rstd per row (RMSNorm), mean and rstd per row (LayerNorm).
//
// Launch: one block per row, each thread holding up to kMaxVecs 16-byte
// vectors (8 bf16) of the row in registers between the reduction and the
// write, so x and residual are read once; warp-shuffle reductions.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/check_util.h"
#include "kernels/cuda_check.h"
#include "kernels/bf16_vec.cuh"
#include "kernels/kernels.h"
#include "kernels/layer_kernels.h"
#include "kernels/timing.h"

namespace stacksim::kernels {
namespace {

using bf16 = __nv_bfloat16;

constexpr int kMaxThreads = 512;
constexpr int kMaxVecs = 4;      // 16-byte vectors per thread: 512 * 4 * 8 = 16384 columns
constexpr int kMaxCols = kMaxThreads * kMaxVecs * kPack;
constexpr double kBf16Tolerance = 1e-2;  // bf16 outputs (METHOD: 1e-3..1e-2)
constexpr double kFp32Tolerance = 1e-4;  // fp32 statistics from exact bf16 inputs

// ---- kernel helpers (16-byte vector helpers: kernels/bf16_vec.cuh) ----

// Sum over the block; every thread gets the same value. REQUIRES: blockDim.x a
// multiple of 32, every thread calls it, and each `scratch` (32 floats) is
// used by one call only (so no barrier is needed after the reads).
__device__ __forceinline__ float BlockSum(float v, float* scratch) {
  v = WarpSum(v);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < static_cast<int>(blockDim.x >> 5) ? scratch[lane] : 0.0f;
  return WarpSum(v);
}

// ---- the kernel ----

// REQUIRES: cols % 8 == 0, cols <= blockDim.x * kVecs * 8, blockDim.x a
// multiple of 32, 16-byte aligned pointers, outputs not overlapping inputs.
template <int kVecs, bool kLayerNorm>
__global__ void __launch_bounds__(kMaxThreads, 2)
    ResidualNormKernel(const bf16* __restrict__ x, const bf16* __restrict__ residual, const bf16* __restrict__ gamma,
                       const bf16* __restrict__ beta, bf16* __restrict__ out, bf16* __restrict__ residual_out,
                       float* __restrict__ mean_out, float* __restrict__ rstd_out, int cols, float eps) {
  __shared__ float scratch[2][32];
  const int nvec = cols / kPack;
  const size_t row_offset = static_cast<size_t>(blockIdx.x) * cols;
  const uint4* xv = reinterpret_cast<const uint4*>(x + row_offset);
  const uint4* rv = reinterpret_cast<const uint4*>(residual + row_offset);
  uint4* sum_v = reinterpret_cast<uint4*>(residual_out + row_offset);
  uint4* out_v = reinterpret_cast<uint4*>(out + row_offset);

  // All loads of the row first, so that 2 * kVecs are in flight per thread.
  uint4 xr[kVecs], rr[kVecs];
#pragma unroll
  for (int i = 0; i < kVecs; ++i) {
    const int c = threadIdx.x + i * blockDim.x;
    xr[i] = rr[i] = make_uint4(0, 0, 0, 0);
    if (c < nvec) {
      xr[i] = LoadStreaming(xv + c);
      rr[i] = LoadStreaming(rv + c);
    }
  }
  float v[kVecs][kPack];
  float acc = 0;  // sum (LayerNorm) or sum of squares (RMSNorm)
#pragma unroll
  for (int i = 0; i < kVecs; ++i) {
    const int c = threadIdx.x + i * blockDim.x;
    float a[kPack], b[kPack];
    Unpack(xr[i], a);
    Unpack(rr[i], b);
#pragma unroll
    for (int j = 0; j < kPack; ++j) {
      v[i][j] = a[j] + b[j];  // zero beyond the row (both loads zero)
      acc += kLayerNorm ? v[i][j] : v[i][j] * v[i][j];
    }
    if (c < nvec) sum_v[c] = Pack(v[i]);
  }
  const float inv_cols = 1.0f / static_cast<float>(cols);
  float mean = 0, var;
  if (kLayerNorm) {
    mean = BlockSum(acc, scratch[0]) * inv_cols;
    // Second pass over the registers: the centered variance, no cancellation.
    float acc2 = 0;
#pragma unroll
    for (int i = 0; i < kVecs; ++i) {
      if (threadIdx.x + i * blockDim.x < nvec) {
#pragma unroll
        for (int j = 0; j < kPack; ++j) {
          const float d = v[i][j] - mean;
          acc2 += d * d;
        }
      }
    }
    var = BlockSum(acc2, scratch[1]) * inv_cols;
  } else {
    var = BlockSum(acc, scratch[0]) * inv_cols;  // mean square
  }
  const float rstd = rsqrtf(var + eps);
  if (threadIdx.x == 0) {
    if (kLayerNorm && mean_out) mean_out[blockIdx.x] = mean;
    if (rstd_out) rstd_out[blockIdx.x] = rstd;
  }
  const uint4* gv = reinterpret_cast<const uint4*>(gamma);
  const uint4* bv = reinterpret_cast<const uint4*>(beta);
#pragma unroll
  for (int i = 0; i < kVecs; ++i) {
    const int c = threadIdx.x + i * blockDim.x;
    if (c < nvec) {
      float g[kPack], b[kPack], o[kPack];
      Unpack(__ldg(gv + c), g);
      if (kLayerNorm) Unpack(__ldg(bv + c), b);
#pragma unroll
      for (int j = 0; j < kPack; ++j) o[j] = (v[i][j] - mean) * rstd * g[j] + (kLayerNorm ? b[j] : 0.0f);
      out_v[c] = Pack(o);
    }
  }
}


template <bool kLayerNorm>
void LaunchWithVecs(int vecs, int threads, const NormArgs& a, cudaStream_t stream) {
  const dim3 grid(a.rows), block(threads);
#define STACKSIM_NORM_LAUNCH(V)                                                                                \
  ResidualNormKernel<V, kLayerNorm><<<grid, block, 0, stream>>>(a.x, a.residual, a.gamma, a.beta, a.out,      \
                                                                a.residual_out, a.mean_out, a.rstd_out, a.cols, \
                                                                a.eps)
  switch (vecs) {
    case 1: STACKSIM_NORM_LAUNCH(1); break;
    case 2: STACKSIM_NORM_LAUNCH(2); break;
    default: STACKSIM_NORM_LAUNCH(4); break;
  }
#undef STACKSIM_NORM_LAUNCH
  CUDA_LAUNCH_OK();
}

// Vectors per thread and threads per row: few vectors per thread for short
// rows (more threads), up to kMaxVecs for long ones, so that a block stays at
// <= 512 threads and two blocks fit an SM (the launch bounds cap registers at 64).
void NormLaunchShape(int cols, int* vecs, int* threads) {
  const int nvec = cols / kPack;
  *vecs = nvec <= 256 ? 1 : nvec <= 512 ? 2 : 4;
  *threads = ((nvec + *vecs - 1) / *vecs + 31) / 32 * 32;
}

}  // namespace

void LaunchResidualNorm(bool layer_norm, const NormArgs& a, cudaStream_t stream) {
  if (a.cols <= 0 || a.cols % kPack != 0 || a.cols > kMaxCols) {
    throw std::invalid_argument("residual norm: cols must be a positive multiple of 8 and at most " +
                                std::to_string(kMaxCols) + ", got " + std::to_string(a.cols));
  }
  if (a.rows <= 0) throw std::invalid_argument("residual norm: rows must be positive");
  int vecs, threads;
  NormLaunchShape(a.cols, &vecs, &threads);
  if (layer_norm) {
    LaunchWithVecs<true>(vecs, threads, a, stream);
  } else {
    LaunchWithVecs<false>(vecs, threads, a, stream);
  }
}

namespace {

// ---- random inputs on the device, for timing (checks draw theirs on the host) ----

__device__ __forceinline__ uint64_t SplitMix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Uniform in (-scale, scale) + offset; (h - 2^22 + 0.5) is never zero.
__global__ void FillRandomKernel(bf16* p, size_t n, uint64_t seed, float scale, float offset) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const uint32_t h = static_cast<uint32_t>(SplitMix64(seed * 0x100000001b3ull + i) >> 41);  // 23 bits
    const float u = (static_cast<float>(static_cast<int>(h) - (1 << 22)) + 0.5f) * (1.0f / (1 << 22));
    p[i] = __float2bfloat16(u * scale + offset);
  }
}

void FillRandom(DeviceBuffer<bf16>& buf, uint64_t seed, float scale, float offset = 0.0f) {
  FillRandomKernel<<<2048, 256>>>(buf.get(), buf.size(), seed, scale, offset);
  CUDA_LAUNCH_OK();
}

// ---- checks ----

struct NormCase {
  int rows, cols;
};

std::string ShapeName(int rows, int cols) {
  return "bf16 rows=" + std::to_string(rows) + " cols=" + std::to_string(cols);
}

CheckResult MakeResult(const std::string& kernel, const std::string& case_name, double err, double tol) {
  CheckResult r;
  r.kernel = kernel;
  r.case_name = case_name;
  r.rel_error = std::isfinite(err) ? err : INFINITY;
  r.tolerance = tol;
  r.ok = std::isfinite(err) && err <= tol;
  return r;
}

void CheckOneNorm(bool layer_norm, const NormCase& c, uint64_t seed, const RunOptions& opt,
                  std::vector<CheckResult>* results) {
  const std::string kernel = layer_norm ? "layernorm_residual" : "rmsnorm_residual";
  const size_t n = static_cast<size_t>(c.rows) * c.cols;
  const float eps = layer_norm ? 1e-5f : 1e-6f;
  // Inputs as the kernel sees them (bf16), and their float values for the reference.
  std::vector<bf16> x = ToBf16(RandomFloats(n, seed + 0));
  std::vector<bf16> res = ToBf16(RandomFloats(n, seed + 1));
  std::vector<float> gf = RandomFloats(c.cols, seed + 2, 0.2f);
  for (float& g : gf) g += 1.0f;
  std::vector<bf16> gamma = ToBf16(gf);
  std::vector<bf16> beta = ToBf16(RandomFloats(c.cols, seed + 3, 0.5f));

  DeviceBuffer<bf16> d_x(n), d_res(n), d_gamma(c.cols), d_beta(c.cols), d_out(n), d_sum(n);
  DeviceBuffer<float> d_mean(c.rows), d_rstd(c.rows);
  d_x.Upload(x);
  d_res.Upload(res);
  d_gamma.Upload(gamma);
  d_beta.Upload(beta);
  d_out.Poison();
  d_sum.Poison();
  d_mean.Poison();
  d_rstd.Poison();
  CUDA_OK(cudaDeviceSynchronize());  // uploads and poison (legacy stream) before opt.stream's kernel
  NormArgs a{d_x.get(), d_res.get(), d_gamma.get(), d_beta.get(), d_out.get(), d_sum.get(),
             layer_norm ? d_mean.get() : nullptr, d_rstd.get(), c.rows, c.cols, eps};
  LaunchResidualNorm(layer_norm, a, opt.stream);
  CUDA_OK(cudaStreamSynchronize(opt.stream));
  const std::vector<float> out = FromBf16(d_out.Download());
  const std::vector<float> sum = FromBf16(d_sum.Download());
  const std::vector<float> mean = d_mean.Download();
  const std::vector<float> rstd = d_rstd.Download();

  // Reference in double from the bf16 inputs.
  const std::vector<float> xf = FromBf16(x), rf = FromBf16(res), g = FromBf16(gamma), b = FromBf16(beta);
  std::vector<double> ref_out(n), ref_sum(n), ref_mean(c.rows), ref_rstd(c.rows);
  for (int r = 0; r < c.rows; ++r) {
    const size_t base = static_cast<size_t>(r) * c.cols;
    double s1 = 0;
    for (int j = 0; j < c.cols; ++j) {
      const double s = static_cast<double>(xf[base + j]) + rf[base + j];
      ref_sum[base + j] = s;
      s1 += layer_norm ? s : s * s;
    }
    double mu = 0, var;
    if (layer_norm) {
      mu = s1 / c.cols;
      double s2 = 0;
      for (int j = 0; j < c.cols; ++j) s2 += (ref_sum[base + j] - mu) * (ref_sum[base + j] - mu);
      var = s2 / c.cols;
    } else {
      var = s1 / c.cols;
    }
    const double rs = 1.0 / std::sqrt(var + eps);
    ref_mean[r] = mu;
    ref_rstd[r] = rs;
    for (int j = 0; j < c.cols; ++j) {
      ref_out[base + j] = (ref_sum[base + j] - mu) * rs * g[j] + (layer_norm ? static_cast<double>(b[j]) : 0.0);
    }
  }
  const std::string name = ShapeName(c.rows, c.cols);
  std::vector<CheckResult> mine;
  mine.push_back(MakeResult(kernel, name + " out", RelativeError(out, ref_out), kBf16Tolerance));
  mine.push_back(MakeResult(kernel, name + " residual_out", RelativeError(sum, ref_sum), kBf16Tolerance));
  if (layer_norm) mine.push_back(MakeResult(kernel, name + " mean (fp32)", RelativeError(mean, ref_mean), kFp32Tolerance));
  mine.push_back(MakeResult(kernel, name + " rstd (fp32)", RelativeError(rstd, ref_rstd), kFp32Tolerance));
  for (CheckResult& r : mine) {
    if (opt.progress) {
      char line[256];
      std::snprintf(line, sizeof line, "check %s %s: rel_error %.3g (tolerance %.0e) %s", r.kernel.c_str(),
                    r.case_name.c_str(), r.rel_error, r.tolerance, r.ok ? "ok" : "FAILED");
      opt.progress(line);
    }
    results->push_back(std::move(r));
  }
}

std::vector<CheckResult> CheckNorms(const RunOptions& opt) {
  // Short rows (one vector per thread), 4096 (two), 5120 (four, 160 threads)
  // and 16384 (four, 512 threads: the largest launch); odd row counts.
  const std::vector<NormCase> cases = {{333, 1000}, {257, 4096}, {130, 5120}, {67, 16384}};
  std::vector<CheckResult> results;
  for (int ln = 0; ln < 2; ++ln) {
    for (size_t i = 0; i < cases.size(); ++i) {
      CheckOneNorm(ln == 1, cases[i], opt.seed + 1000 * ln + 16 * i, opt, &results);
    }
  }
  return results;
}

// ---- timings ----

std::vector<TimingRow> TimeNorms(const RunOptions& opt) {
  // About 128 Mi elements per tensor (256 MiB in bf16), several times any L2.
  std::vector<NormCase> shapes = {{32768, 4096}, {26214, 5120}, {16384, 8192}, {8192, 16384}};
  if (opt.quick) shapes = {{16384, 8192}};
  std::vector<TimingRow> rows;
  for (const NormCase& s : shapes) {
    const size_t n = static_cast<size_t>(s.rows) * s.cols;
    DeviceBuffer<bf16> gamma(s.cols), beta(s.cols);
    FillRandom(gamma, opt.seed + 7, 0.2f, 1.0f);
    FillRandom(beta, opt.seed + 8, 0.5f);
    for (int ln = 0; ln < 2; ++ln) {
      const bool layer_norm = ln == 1;
      // Bytes: x and residual read, out and residual_out written (4 bf16
      // tensors), gamma (+ beta) read once, rstd (+ mean) written in fp32.
      const double bytes = 4.0 * n * sizeof(bf16) + (layer_norm ? 2.0 : 1.0) * s.cols * sizeof(bf16) +
                           (layer_norm ? 2.0 : 1.0) * s.rows * sizeof(float);
      const size_t set_bytes = 4 * n * sizeof(bf16) + 2 * s.rows * sizeof(float);
      const int sets = RotationCount(set_bytes, opt.l2_bytes);
      struct Set {
        DeviceBuffer<bf16> x, res, out, sum;
        DeviceBuffer<float> mean, rstd;
      };
      std::vector<Set> bufs;
      for (int k = 0; k < sets; ++k) {
        bufs.push_back({DeviceBuffer<bf16>(n), DeviceBuffer<bf16>(n), DeviceBuffer<bf16>(n), DeviceBuffer<bf16>(n),
                        DeviceBuffer<float>(s.rows), DeviceBuffer<float>(s.rows)});
        FillRandom(bufs.back().x, opt.seed + 100 + 2 * k, 1.0f);
        FillRandom(bufs.back().res, opt.seed + 101 + 2 * k, 1.0f);
      }
      CUDA_OK(cudaDeviceSynchronize());
      int next = 0;
      const TimingResult t = TimeKernel(
          [&] {
            Set& b = bufs[next];
            next = (next + 1) % sets;
            NormArgs a{b.x.get(), b.res.get(), gamma.get(), beta.get(), b.out.get(), b.sum.get(),
                       layer_norm ? b.mean.get() : nullptr, b.rstd.get(), s.rows, s.cols,
                       layer_norm ? 1e-5f : 1e-6f};
            LaunchResidualNorm(layer_norm, a, opt.stream);
          },
          opt.stream);
      TimingRow row;
      row.kernel = layer_norm ? "layernorm_residual" : "rmsnorm_residual";
      row.shape = ShapeName(s.rows, s.cols);
      row.bytes = bytes;
      row.flops = 0;
      row.median_us = t.median_us;
      row.min_us = t.min_us;
      if (opt.progress) {
        char line[256];
        std::snprintf(line, sizeof line, "time %s %s: %.1f us, %.0f GB/s (%d rotating sets)", row.kernel.c_str(),
                      row.shape.c_str(), row.median_us, bytes / (row.median_us * 1e3), sets);
        opt.progress(line);
      }
      rows.push_back(row);
    }
  }
  return rows;
}

}  // namespace

KernelFamily NormFamily() { return {"norm", CheckNorms, TimeNorms}; }

}  // namespace stacksim::kernels
