// Activations, bf16 in and out, fp32 arithmetic:
//   SwiGLU:    out[r, c] = silu(in[r, c]) * in[r, f + c]   (in: [rows, 2f], gate half then up half; out: [rows, f])
//   GELU+bias: out[r, c] = gelu_tanh(x[r, c] + bias[c])     (x, out: [rows, cols]; bias: [cols])
// with silu(g) = g * sigmoid(g) and gelu_tanh(v) = v/2 * (1 + tanh(sqrt(2/pi) * (v + 0.044715 v^3))).
//
// Launch: elementwise over 16-byte vectors (8 bf16), kUnroll vectors per
// thread (strided by the block so every load is coalesced), all loads issued
// before the first use.
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

constexpr int kThreads = 256;
constexpr int kUnroll = 2;  // vectors per thread
constexpr double kBf16Tolerance = 1e-2;
constexpr double kMaxVectors = 2147483647.0 - kThreads * kUnroll;  // 32-bit vector indices
constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kGeluCubic = 0.044715f;

// ---- kernel helpers (16-byte vector helpers: kernels/bf16_vec.cuh) ----

// The hardware tanh (sm_75+, max relative error about 2^-11): one
// special-function op per element keeps GELU under the memory time.
__device__ __forceinline__ float TanhFast(float x) {
#if defined(__CUDA_ARCH__)
  float y;
  asm("tanh.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
#else
  return tanhf(x);
#endif
}

__device__ __forceinline__ float Silu(float g) {
  return __fdividef(g, 1.0f + __expf(-g));  // -> -0 for very negative g (exp overflows to inf)
}

__device__ __forceinline__ float GeluTanh(float v) {
  const float u = kSqrt2OverPi * v * (1.0f + kGeluCubic * v * v);
  return 0.5f * v * (1.0f + TanhFast(u));
}

// ---- kernels ----

// REQUIRES: total_vecs = rows * f_vecs < 2^31 - kThreads * kUnroll, 16-byte aligned pointers.
__global__ void __launch_bounds__(kThreads)
    SwigluKernel(const bf16* __restrict__ in, bf16* __restrict__ out, uint32_t f_vecs, uint32_t total_vecs) {
  const uint32_t base = blockIdx.x * (kThreads * kUnroll) + threadIdx.x;
  const uint4* iv = reinterpret_cast<const uint4*>(in);
  uint4* ov = reinterpret_cast<uint4*>(out);
  uint4 g[kUnroll], u[kUnroll];
#pragma unroll
  for (int k = 0; k < kUnroll; ++k) {
    const uint32_t idx = base + k * kThreads;
    g[k] = u[k] = make_uint4(0, 0, 0, 0);
    if (idx < total_vecs) {
      const uint32_t row = idx / f_vecs, c = idx - row * f_vecs;
      const size_t gate = static_cast<size_t>(row) * 2 * f_vecs + c;
      g[k] = LoadStreaming(iv + gate);
      u[k] = LoadStreaming(iv + gate + f_vecs);
    }
  }
#pragma unroll
  for (int k = 0; k < kUnroll; ++k) {
    const uint32_t idx = base + k * kThreads;
    if (idx < total_vecs) {
      float gf[kPack], uf[kPack], o[kPack];
      Unpack(g[k], gf);
      Unpack(u[k], uf);
#pragma unroll
      for (int j = 0; j < kPack; ++j) o[j] = Silu(gf[j]) * uf[j];
      ov[idx] = Pack(o);
    }
  }
}

// REQUIRES: total_vecs = rows * col_vecs < 2^31 - kThreads * kUnroll, 16-byte aligned pointers.
__global__ void __launch_bounds__(kThreads)
    GeluBiasKernel(const bf16* __restrict__ x, const bf16* __restrict__ bias, bf16* __restrict__ out,
                   uint32_t col_vecs, uint32_t total_vecs) {
  const uint32_t base = blockIdx.x * (kThreads * kUnroll) + threadIdx.x;
  const uint4* xv = reinterpret_cast<const uint4*>(x);
  const uint4* bv = reinterpret_cast<const uint4*>(bias);
  uint4* ov = reinterpret_cast<uint4*>(out);
  uint4 xr[kUnroll], br[kUnroll];
#pragma unroll
  for (int k = 0; k < kUnroll; ++k) {
    const uint32_t idx = base + k * kThreads;
    xr[k] = br[k] = make_uint4(0, 0, 0, 0);
    if (idx < total_vecs) {
      xr[k] = LoadStreaming(xv + idx);
      br[k] = __ldg(bv + idx % col_vecs);
    }
  }
#pragma unroll
  for (int k = 0; k < kUnroll; ++k) {
    const uint32_t idx = base + k * kThreads;
    if (idx < total_vecs) {
      float xf[kPack], bf[kPack], o[kPack];
      Unpack(xr[k], xf);
      Unpack(br[k], bf);
#pragma unroll
      for (int j = 0; j < kPack; ++j) o[j] = GeluTanh(xf[j] + bf[j]);
      ov[idx] = Pack(o);
    }
  }
}

uint32_t VectorCount(const char* what, int rows, int cols) {
  if (rows <= 0 || cols <= 0 || cols % kPack != 0) {
    throw std::invalid_argument(std::string(what) + ": rows must be positive and columns a positive multiple of 8, got " +
                                std::to_string(rows) + " x " + std::to_string(cols));
  }
  const double vecs = static_cast<double>(rows) * (cols / kPack);
  if (vecs > kMaxVectors) throw std::invalid_argument(std::string(what) + ": tensor too large for 32-bit indexing");
  return static_cast<uint32_t>(vecs);
}

unsigned Blocks(uint32_t total_vecs) { return (total_vecs + kThreads * kUnroll - 1) / (kThreads * kUnroll); }

}  // namespace

// in: [rows, 2f], out: [rows, f]. REQUIRES: f % 8 == 0.
void LaunchSwiglu(const bf16* in, bf16* out, int rows, int f, cudaStream_t stream) {
  const uint32_t total = VectorCount("swiglu", rows, f);
  SwigluKernel<<<Blocks(total), kThreads, 0, stream>>>(in, out, static_cast<uint32_t>(f / kPack), total);
  CUDA_LAUNCH_OK();
}

namespace {

// x, out: [rows, cols], bias: [cols]. REQUIRES: cols % 8 == 0.
void LaunchGeluBias(const bf16* x, const bf16* bias, bf16* out, int rows, int cols, cudaStream_t stream) {
  const uint32_t total = VectorCount("gelu_bias", rows, cols);
  GeluBiasKernel<<<Blocks(total), kThreads, 0, stream>>>(x, bias, out, static_cast<uint32_t>(cols / kPack), total);
  CUDA_LAUNCH_OK();
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

struct Shape {
  int rows, cols;  // SwiGLU: cols = f (the output width; the input is 2f wide)
};

std::string ShapeName(const char* kernel, const Shape& s) {
  return std::string("bf16 rows=") + std::to_string(s.rows) + (std::string(kernel) == "swiglu" ? " f=" : " cols=") +
         std::to_string(s.cols);
}

CheckResult Finish(const char* kernel, const Shape& s, double err, const RunOptions& opt) {
  CheckResult res;
  res.kernel = kernel;
  res.case_name = ShapeName(kernel, s);
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

CheckResult CheckSwiglu(const Shape& s, uint64_t seed, const RunOptions& opt) {
  const size_t n_out = static_cast<size_t>(s.rows) * s.cols, n_in = 2 * n_out;
  std::vector<bf16> in = ToBf16(RandomFloats(n_in, seed, 2.0f));
  DeviceBuffer<bf16> d_in(n_in), d_out(n_out);
  d_in.Upload(in);
  d_out.Poison();
  CUDA_OK(cudaDeviceSynchronize());  // upload and poison (legacy stream) before opt.stream's kernel
  LaunchSwiglu(d_in.get(), d_out.get(), s.rows, s.cols, opt.stream);
  CUDA_OK(cudaStreamSynchronize(opt.stream));
  const std::vector<float> out = FromBf16(d_out.Download());
  const std::vector<float> x = FromBf16(in);
  std::vector<double> ref(n_out);
  for (int r = 0; r < s.rows; ++r) {
    for (int c = 0; c < s.cols; ++c) {
      const double g = x[static_cast<size_t>(r) * 2 * s.cols + c];
      const double u = x[static_cast<size_t>(r) * 2 * s.cols + s.cols + c];
      ref[static_cast<size_t>(r) * s.cols + c] = g / (1.0 + std::exp(-g)) * u;
    }
  }
  return Finish("swiglu", s, RelativeError(out, ref), opt);
}

CheckResult CheckGelu(const Shape& s, uint64_t seed, const RunOptions& opt) {
  const size_t n = static_cast<size_t>(s.rows) * s.cols;
  std::vector<bf16> x = ToBf16(RandomFloats(n, seed, 2.0f));
  std::vector<bf16> bias = ToBf16(RandomFloats(s.cols, seed + 1, 0.5f));
  DeviceBuffer<bf16> d_x(n), d_bias(s.cols), d_out(n);
  d_x.Upload(x);
  d_bias.Upload(bias);
  d_out.Poison();
  CUDA_OK(cudaDeviceSynchronize());
  LaunchGeluBias(d_x.get(), d_bias.get(), d_out.get(), s.rows, s.cols, opt.stream);
  CUDA_OK(cudaStreamSynchronize(opt.stream));
  const std::vector<float> out = FromBf16(d_out.Download());
  const std::vector<float> xf = FromBf16(x), bf = FromBf16(bias);
  std::vector<double> ref(n);
  for (size_t i = 0; i < n; ++i) {
    const double v = static_cast<double>(xf[i]) + bf[i % s.cols];
    ref[i] = 0.5 * v * (1.0 + std::tanh(0.79788456080286536 * (v + 0.044715 * v * v * v)));
  }
  return Finish("gelu_bias", s, RelativeError(out, ref), opt);
}

std::vector<CheckResult> CheckActivations(const RunOptions& opt) {
  // Odd rows with a width that is not a power of two; a Llama-3-8B-wide row;
  // a tensor smaller than one block.
  const std::vector<Shape> cases = {{333, 1000}, {64, 14336}, {5, 24}};
  std::vector<CheckResult> results;
  for (size_t i = 0; i < cases.size(); ++i) results.push_back(CheckSwiglu(cases[i], opt.seed + 16 * i, opt));
  for (size_t i = 0; i < cases.size(); ++i) results.push_back(CheckGelu(cases[i], opt.seed + 1000 + 16 * i, opt));
  return results;
}

// ---- timings ----

TimingRow MakeRow(const char* kernel, const Shape& s, double bytes, const TimingResult& t, int sets,
                  const RunOptions& opt) {
  TimingRow row;
  row.kernel = kernel;
  row.shape = ShapeName(kernel, s);
  row.bytes = bytes;
  row.flops = 0;
  row.median_us = t.median_us;
  row.min_us = t.min_us;
  if (opt.progress) {
    char line[256];
    std::snprintf(line, sizeof line, "time %s %s: %.1f us, %.0f GB/s (%d rotating sets)", kernel, row.shape.c_str(),
                  row.median_us, bytes / (row.median_us * 1e3), sets);
    opt.progress(line);
  }
  return row;
}

std::vector<TimingRow> TimeActivations(const RunOptions& opt) {
  std::vector<TimingRow> rows;
  // SwiGLU: Llama-3-8B's MLP width (f = 14336) and a power of two; inputs of 448 and 512 MiB.
  std::vector<Shape> swiglu = {{8192, 14336}, {16384, 8192}};
  // GELU: a 4 x 4096 MLP and 4 x 8192; 256 and 512 MiB.
  std::vector<Shape> gelu = {{8192, 16384}, {8192, 32768}};
  if (opt.quick) {
    swiglu.resize(1);
    gelu.resize(1);
  }
  for (const Shape& s : swiglu) {
    const size_t n_out = static_cast<size_t>(s.rows) * s.cols;
    // Bytes: the [rows, 2f] input read once, the [rows, f] output written once.
    const double bytes = 3.0 * n_out * sizeof(bf16);
    const int sets = RotationCount(3 * n_out * sizeof(bf16), opt.l2_bytes);
    std::vector<DeviceBuffer<bf16>> ins, outs;
    for (int k = 0; k < sets; ++k) {
      ins.emplace_back(2 * n_out);
      outs.emplace_back(n_out);
      FillRandom(ins.back(), opt.seed + 100 + k, 4.0f);
    }
    CUDA_OK(cudaDeviceSynchronize());
    int next = 0;
    const TimingResult t = TimeKernel(
        [&] {
          LaunchSwiglu(ins[next].get(), outs[next].get(), s.rows, s.cols, opt.stream);
          next = (next + 1) % sets;
        },
        opt.stream);
    rows.push_back(MakeRow("swiglu", s, bytes, t, sets, opt));
  }
  for (const Shape& s : gelu) {
    const size_t n = static_cast<size_t>(s.rows) * s.cols;
    // Bytes: x read once, bias read once, out written once.
    const double bytes = (2.0 * n + s.cols) * sizeof(bf16);
    const int sets = RotationCount(2 * n * sizeof(bf16), opt.l2_bytes);
    DeviceBuffer<bf16> bias(s.cols);
    FillRandom(bias, opt.seed + 99, 0.5f);
    std::vector<DeviceBuffer<bf16>> xs, outs;
    for (int k = 0; k < sets; ++k) {
      xs.emplace_back(n);
      outs.emplace_back(n);
      FillRandom(xs.back(), opt.seed + 200 + k, 4.0f);
    }
    CUDA_OK(cudaDeviceSynchronize());
    int next = 0;
    const TimingResult t = TimeKernel(
        [&] {
          LaunchGeluBias(xs[next].get(), bias.get(), outs[next].get(), s.rows, s.cols, opt.stream);
          next = (next + 1) % sets;
        },
        opt.stream);
    rows.push_back(MakeRow("gelu_bias", s, bytes, t, sets, opt));
  }
  return rows;
}

}  // namespace

KernelFamily ActivationFamily() { return {"activation", CheckActivations, TimeActivations}; }

}  // namespace stacksim::kernels
