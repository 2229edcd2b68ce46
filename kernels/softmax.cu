// Row softmax over bf16 scores with a scale and an optional causal mask, fp32
// accumulation, bf16 out:
//   out[r, c] = exp(scale * s[r, c] - max) / sum   over the kept columns, 0 elsewhere.
// Causal: with q_len query rows per matrix ([batch * heads * q_len, cols]),
// row r is query q = r % q_len and keeps columns c <= q + (cols - q_len), the
// queries aligned to the end of the keys; for square scores (cols == q_len)
// row q keeps c <= q. Masked columns are not read, and are written as 0.
//
// Launch: one block per row, the row in registers (up to kMaxVecs 16-byte
// vectors per thread) between the max and sum reductions and the write.
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
#include "kernels/timing.h"

namespace stacksim::kernels {
namespace {

using bf16 = __nv_bfloat16;

constexpr int kMaxThreads = 512;
constexpr int kMaxVecs = 4;
constexpr int kMaxCols = kMaxThreads * kMaxVecs * kPack;  // 16384
constexpr double kBf16Tolerance = 1e-2;
constexpr float kLog2e = 1.4426950408889634f;

// ---- reductions (16-byte vector helpers: kernels/bf16_vec.cuh) ----

__device__ __forceinline__ float WarpMax(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Block reductions; every thread gets the same value. REQUIRES: blockDim.x a
// multiple of 32, every thread calls them, each `scratch` (32 floats) used by
// one call only (so no barrier is needed after the reads).
__device__ __forceinline__ float BlockSum(float v, float* scratch) {
  v = WarpSum(v);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < static_cast<int>(blockDim.x >> 5) ? scratch[lane] : 0.0f;
  return WarpSum(v);
}

__device__ __forceinline__ float BlockMax(float v, float* scratch) {
  v = WarpMax(v);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < static_cast<int>(blockDim.x >> 5) ? scratch[lane] : -INFINITY;
  return WarpMax(v);
}

// ---- the kernel ----

// REQUIRES: cols % 8 == 0, cols <= blockDim.x * kVecs * 8, blockDim.x a
// multiple of 32, 1 <= q_len <= cols when causal, 16-byte aligned pointers.
template <int kVecs>
__global__ void __launch_bounds__(kMaxThreads, 2)
    SoftmaxKernel(const bf16* __restrict__ in, bf16* __restrict__ out, int cols, int q_len, bool causal,
                  float scale_log2e) {
  __shared__ float scratch[2][32];
  const int nvec = cols / kPack;
  // Kept columns: [0, limit); at least column 0 (q_len <= cols).
  const int limit = causal ? min(cols, static_cast<int>(blockIdx.x % static_cast<unsigned>(q_len)) + (cols - q_len) + 1)
                           : cols;
  const int load_vecs = (limit + kPack - 1) / kPack;
  const size_t row_offset = static_cast<size_t>(blockIdx.x) * cols;
  const uint4* iv = reinterpret_cast<const uint4*>(in + row_offset);
  uint4* ov = reinterpret_cast<uint4*>(out + row_offset);

  uint4 raw[kVecs];
#pragma unroll
  for (int i = 0; i < kVecs; ++i) {
    const int c = threadIdx.x + i * blockDim.x;
    raw[i] = make_uint4(0, 0, 0, 0);
    if (c < load_vecs) raw[i] = LoadStreaming(iv + c);
  }
  // Vectors wholly above the causal diagonal are zeros whatever the row's
  // statistics: store them now, so that these writes overlap the reductions
  // instead of queueing behind them.
#pragma unroll
  for (int i = 0; i < kVecs; ++i) {
    const int c = threadIdx.x + i * blockDim.x;
    if (c >= load_vecs && c < nvec) ov[c] = make_uint4(0, 0, 0, 0);
  }
  // Logits in base 2: exp(scale * s - max) = exp2(scale * log2(e) * s - max2).
  float v[kVecs][kPack];
  float m = -INFINITY;
#pragma unroll
  for (int i = 0; i < kVecs; ++i) {
    const int c = threadIdx.x + i * blockDim.x;
    float f[kPack];
    Unpack(raw[i], f);
#pragma unroll
    for (int j = 0; j < kPack; ++j) {
      v[i][j] = c * kPack + j < limit ? f[j] * scale_log2e : -INFINITY;  // also -inf beyond the row
      m = fmaxf(m, v[i][j]);
    }
  }
  m = BlockMax(m, scratch[0]);
  float s = 0;
#pragma unroll
  for (int i = 0; i < kVecs; ++i) {
#pragma unroll
    for (int j = 0; j < kPack; ++j) {
      v[i][j] = exp2f(v[i][j] - m);  // 0 for masked columns
      s += v[i][j];
    }
  }
  const float inv = 1.0f / BlockSum(s, scratch[1]);
#pragma unroll
  for (int i = 0; i < kVecs; ++i) {
    const int c = threadIdx.x + i * blockDim.x;
    if (c < load_vecs) {
      float o[kPack];
#pragma unroll
      for (int j = 0; j < kPack; ++j) o[j] = v[i][j] * inv;
      ov[c] = Pack(o);
    }
  }
}

struct SoftmaxArgs {
  const bf16* in;
  bf16* out;
  int rows;
  int cols;
  bool causal;
  int q_len;  // query rows per matrix, causal only
  float scale;
};

void LaunchSoftmax(const SoftmaxArgs& a, cudaStream_t stream) {
  if (a.cols <= 0 || a.cols % kPack != 0 || a.cols > kMaxCols) {
    throw std::invalid_argument("softmax: cols must be a positive multiple of 8 and at most " +
                                std::to_string(kMaxCols) + ", got " + std::to_string(a.cols));
  }
  if (a.rows <= 0) throw std::invalid_argument("softmax: rows must be positive");
  if (a.causal && (a.q_len < 1 || a.q_len > a.cols)) {
    throw std::invalid_argument("softmax: causal needs 1 <= q_len <= cols, got q_len " + std::to_string(a.q_len));
  }
  // Few vectors per thread for short rows, up to 4 (512 threads) for long ones.
  // Causal rows are latency-bound (short rows near the top still wait on two
  // reductions), so they take 4 vectors per thread early: smaller blocks,
  // more rows in flight per SM.
  const int nvec = a.cols / kPack;
  const int vecs = nvec <= 256 ? 1 : (nvec <= 512 && !a.causal) ? 2 : 4;
  const int threads = ((nvec + vecs - 1) / vecs + 31) / 32 * 32;
  const float sl = a.scale * kLog2e;
  const int q_len = a.causal ? a.q_len : 1;
  switch (vecs) {
    case 1: SoftmaxKernel<1><<<a.rows, threads, 0, stream>>>(a.in, a.out, a.cols, q_len, a.causal, sl); break;
    case 2: SoftmaxKernel<2><<<a.rows, threads, 0, stream>>>(a.in, a.out, a.cols, q_len, a.causal, sl); break;
    default: SoftmaxKernel<4><<<a.rows, threads, 0, stream>>>(a.in, a.out, a.cols, q_len, a.causal, sl); break;
  }
  CUDA_LAUNCH_OK();
}

// Elements each row reads: all columns, or the kept ones under the mask.
double KeptElements(const SoftmaxArgs& a) {
  if (!a.causal) return static_cast<double>(a.rows) * a.cols;
  double kept = 0;
  for (int r = 0; r < a.rows; ++r) kept += std::min(a.cols, r % a.q_len + (a.cols - a.q_len) + 1);
  return kept;
}

// ---- random inputs on the device, for timing ----

__device__ __forceinline__ uint64_t SplitMix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Uniform in (-scale, scale); (h - 2^22 + 0.5) is never zero.
__global__ void FillRandomKernel(bf16* p, size_t n, uint64_t seed, float scale) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const uint32_t h = static_cast<uint32_t>(SplitMix64(seed * 0x100000001b3ull + i) >> 41);  // 23 bits
    const float u = (static_cast<float>(static_cast<int>(h) - (1 << 22)) + 0.5f) * (1.0f / (1 << 22));
    p[i] = __float2bfloat16(u * scale);
  }
}

void FillRandom(DeviceBuffer<bf16>& buf, uint64_t seed, float scale) {
  FillRandomKernel<<<2048, 256>>>(buf.get(), buf.size(), seed, scale);
  CUDA_LAUNCH_OK();
}

// ---- checks ----

std::string ShapeName(const SoftmaxArgs& a) {
  std::string s = "bf16 rows=" + std::to_string(a.rows) + " cols=" + std::to_string(a.cols);
  if (a.causal) s += " causal q_len=" + std::to_string(a.q_len);
  char scale[32];
  std::snprintf(scale, sizeof scale, " scale=%g", a.scale);
  return s + scale;
}

CheckResult CheckOneSoftmax(SoftmaxArgs a, uint64_t seed, const RunOptions& opt) {
  const size_t n = static_cast<size_t>(a.rows) * a.cols;
  std::vector<bf16> in = ToBf16(RandomFloats(n, seed, 4.0f));
  DeviceBuffer<bf16> d_in(n), d_out(n);
  d_in.Upload(in);
  d_out.Poison();
  CUDA_OK(cudaDeviceSynchronize());  // upload and poison (legacy stream) before opt.stream's kernel
  a.in = d_in.get();
  a.out = d_out.get();
  LaunchSoftmax(a, opt.stream);
  CUDA_OK(cudaStreamSynchronize(opt.stream));
  const std::vector<float> out = FromBf16(d_out.Download());

  // Reference in double from the bf16 scores.
  const std::vector<float> s = FromBf16(in);
  std::vector<double> ref(n, 0.0);
  for (int r = 0; r < a.rows; ++r) {
    const size_t base = static_cast<size_t>(r) * a.cols;
    const int limit = a.causal ? std::min(a.cols, r % a.q_len + (a.cols - a.q_len) + 1) : a.cols;
    double m = -INFINITY, sum = 0;
    for (int c = 0; c < limit; ++c) m = std::max(m, a.scale * static_cast<double>(s[base + c]));
    for (int c = 0; c < limit; ++c) sum += ref[base + c] = std::exp(a.scale * static_cast<double>(s[base + c]) - m);
    for (int c = 0; c < limit; ++c) ref[base + c] /= sum;
  }
  CheckResult res;
  res.kernel = a.causal ? "softmax_causal" : "softmax";
  res.case_name = ShapeName(a);
  const double err = RelativeError(out, ref);
  res.rel_error = std::isfinite(err) ? err : INFINITY;
  res.tolerance = kBf16Tolerance;
  res.ok = std::isfinite(err) && err <= kBf16Tolerance;
  if (opt.progress) {
    char line[256];
    std::snprintf(line, sizeof line, "check %s %s: rel_error %.3g (tolerance %.0e) %s", res.kernel.c_str(),
                  res.case_name.c_str(), res.rel_error, res.tolerance, res.ok ? "ok" : "FAILED");
    opt.progress(line);
  }
  return res;
}

std::vector<CheckResult> CheckSoftmax(const RunOptions& opt) {
  // {in, out, rows, cols, causal, q_len, scale}: short odd rows; square causal
  // over 3 matrices; causal with more keys than queries (offset 4800); the
  // longest rows (512 threads x 4 vectors).
  const std::vector<SoftmaxArgs> cases = {
      {nullptr, nullptr, 333, 1000, false, 0, 0.5f},
      {nullptr, nullptr, 3 * 512, 512, true, 512, 0.125f},
      {nullptr, nullptr, 2 * 200, 5000, true, 200, 0.25f},
      {nullptr, nullptr, 40, 16384, false, 0, 0.5f},
  };
  std::vector<CheckResult> results;
  for (size_t i = 0; i < cases.size(); ++i) results.push_back(CheckOneSoftmax(cases[i], opt.seed + 16 * i, opt));
  return results;
}

// ---- timings ----

std::vector<TimingRow> TimeSoftmax(const RunOptions& opt) {
  // About 128 Mi scores (256 MiB in bf16) per set; causal: 8 matrices of 4096^2.
  std::vector<SoftmaxArgs> shapes = {
      {nullptr, nullptr, 32768, 4096, false, 0, 0.125f},
      {nullptr, nullptr, 16384, 8192, false, 0, 0.125f},
      {nullptr, nullptr, 8 * 4096, 4096, true, 4096, 0.125f},
  };
  if (opt.quick) shapes = {shapes[1], shapes[2]};
  std::vector<TimingRow> rows;
  for (SoftmaxArgs a : shapes) {
    const size_t n = static_cast<size_t>(a.rows) * a.cols;
    // Bytes: the kept scores read once (all of them unless causal), the
    // probabilities written once (masked ones as zeros).
    const double bytes = (KeptElements(a) + static_cast<double>(n)) * sizeof(bf16);
    const int sets = RotationCount(2 * n * sizeof(bf16), opt.l2_bytes);
    std::vector<DeviceBuffer<bf16>> ins, outs;
    for (int k = 0; k < sets; ++k) {
      ins.emplace_back(n);
      outs.emplace_back(n);
      FillRandom(ins.back(), opt.seed + 100 + k, 8.0f);
    }
    CUDA_OK(cudaDeviceSynchronize());
    int next = 0;
    const TimingResult t = TimeKernel(
        [&] {
          SoftmaxArgs b = a;
          b.in = ins[next].get();
          b.out = outs[next].get();
          next = (next + 1) % sets;
          LaunchSoftmax(b, opt.stream);
        },
        opt.stream);
    TimingRow row;
    row.kernel = a.causal ? "softmax_causal" : "softmax";
    row.shape = ShapeName(a);
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
  return rows;
}

}  // namespace

KernelFamily SoftmaxFamily() { return {"softmax", CheckSoftmax, TimeSoftmax}; }

}  // namespace stacksim::kernels
