// Rotary position embedding, applied in place to Q [tokens, heads_q, head_dim]
// and K [tokens, heads_k, head_dim] (bf16), GPT-NeoX half rotation: for
// d < head_dim/2, with x1 = x[d], x2 = x[d + head_dim/2] and the fp32 tables
// cos, sin [seq, head_dim/2] at the token's position p = token % seq
// (tokens laid out [batch, seq]):
//   x[d]              = x1 * cos[p, d] - x2 * sin[p, d]
//   x[d + head_dim/2] = x2 * cos[p, d] + x1 * sin[p, d]
//
// Launch: one thread per (token, head, 8 consecutive d): two 16-byte loads and
// stores of the head (x1 and x2), four 16-byte table loads (L1/L2 hits:
// every head of a token shares them). Q and K in one launch.
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
constexpr double kBf16Tolerance = 1e-2;
constexpr double kMaxItems = 2147483647.0 - kThreads;  // 32-bit indices

// ---- kernel helpers (16-byte vector helpers: kernels/bf16_vec.cuh) ----

// A coherent 16-byte load that skips L1 (Q and K are rewritten in place; L1
// keeps the tables).
__device__ __forceinline__ uint4 LoadNoL1(const uint4* p) {
#if defined(__CUDA_ARCH__)
  uint4 v;
  asm("ld.global.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "l"(p));
  return v;
#else
  return *p;
#endif
}

// ---- the kernel ----

// REQUIRES: half_vecs = head_dim / 16 (head_dim % 16 == 0), total = tokens *
// (heads_q + heads_k) * half_vecs < 2^31 - kThreads, 16-byte aligned pointers.
__global__ void __launch_bounds__(kThreads)
    RopeKernel(bf16* __restrict__ q, bf16* __restrict__ k, const float* __restrict__ cos_table,
               const float* __restrict__ sin_table, uint32_t heads_q, uint32_t heads_k, uint32_t half_vecs,
               uint32_t seq, uint32_t total) {
  const uint32_t item = blockIdx.x * kThreads + threadIdx.x;
  if (item >= total) return;
  const uint32_t chunk = item % half_vecs;  // 8 values of the first half
  const uint32_t token_head = item / half_vecs;
  const uint32_t heads = heads_q + heads_k;
  const uint32_t token = token_head / heads, head = token_head - token * heads;
  const uint32_t half = half_vecs * kPack;  // head_dim / 2
  bf16* x = head < heads_q ? q + (static_cast<size_t>(token) * heads_q + head) * 2 * half
                           : k + (static_cast<size_t>(token) * heads_k + (head - heads_q)) * 2 * half;
  uint4* x1p = reinterpret_cast<uint4*>(x) + chunk;
  uint4* x2p = x1p + half_vecs;
  const uint4 x1r = LoadNoL1(x1p), x2r = LoadNoL1(x2p);
  const size_t table = static_cast<size_t>(token % seq) * half + chunk * kPack;
  const float4* cp = reinterpret_cast<const float4*>(cos_table + table);
  const float4* sp = reinterpret_cast<const float4*>(sin_table + table);
  const float4 c0 = __ldg(cp), c1 = __ldg(cp + 1), s0 = __ldg(sp), s1 = __ldg(sp + 1);
  const float c[kPack] = {c0.x, c0.y, c0.z, c0.w, c1.x, c1.y, c1.z, c1.w};
  const float s[kPack] = {s0.x, s0.y, s0.z, s0.w, s1.x, s1.y, s1.z, s1.w};
  float a[kPack], b[kPack], ra[kPack], rb[kPack];
  Unpack(x1r, a);
  Unpack(x2r, b);
#pragma unroll
  for (int j = 0; j < kPack; ++j) {
    ra[j] = a[j] * c[j] - b[j] * s[j];
    rb[j] = b[j] * c[j] + a[j] * s[j];
  }
  *x1p = Pack(ra);
  *x2p = Pack(rb);
}


}  // namespace

void LaunchRope(bf16* q, bf16* k, const float* cos_table, const float* sin_table, const RopeShape& s,
                cudaStream_t stream) {
  if (s.head_dim <= 0 || s.head_dim % (2 * kPack) != 0) {
    throw std::invalid_argument("rope: head_dim must be a positive multiple of 16, got " + std::to_string(s.head_dim));
  }
  if (s.batch <= 0 || s.seq <= 0 || s.heads_q <= 0 || s.heads_k < 0) {
    throw std::invalid_argument("rope: batch, seq and heads_q must be positive, heads_k non-negative");
  }
  const uint32_t half_vecs = s.head_dim / (2 * kPack);
  const double items = static_cast<double>(s.tokens()) * (s.heads_q + s.heads_k) * half_vecs;
  if (items > kMaxItems) throw std::invalid_argument("rope: tensors too large for 32-bit indexing");
  const uint32_t total = static_cast<uint32_t>(items);
  RopeKernel<<<(total + kThreads - 1) / kThreads, kThreads, 0, stream>>>(
      q, k, cos_table, sin_table, s.heads_q, s.heads_k, half_vecs, s.seq, total);
  CUDA_LAUNCH_OK();
}

// cos/sin [seq, head_dim/2] for base 10000: angle(p, d) = p * 10000^(-2d/head_dim).
void RopeTables(const RopeShape& s, std::vector<float>* cos_t, std::vector<float>* sin_t) {
  const int half = s.head_dim / 2;
  cos_t->resize(static_cast<size_t>(s.seq) * half);
  sin_t->resize(cos_t->size());
  for (int p = 0; p < s.seq; ++p) {
    for (int d = 0; d < half; ++d) {
      const double angle = p * std::pow(10000.0, -2.0 * d / s.head_dim);
      (*cos_t)[static_cast<size_t>(p) * half + d] = static_cast<float>(std::cos(angle));
      (*sin_t)[static_cast<size_t>(p) * half + d] = static_cast<float>(std::sin(angle));
    }
  }
}

namespace {

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

std::string ShapeName(const RopeShape& s) {
  return "bf16 batch=" + std::to_string(s.batch) + " seq=" + std::to_string(s.seq) + " heads_q=" +
         std::to_string(s.heads_q) + " heads_k=" + std::to_string(s.heads_k) + " head_dim=" + std::to_string(s.head_dim);
}

// Q or K rotated in double from the bf16 values and the fp32 tables.
std::vector<double> RopeReference(const std::vector<float>& x, int heads, const RopeShape& s,
                                  const std::vector<float>& cos_t, const std::vector<float>& sin_t) {
  const int half = s.head_dim / 2;
  std::vector<double> ref(x.size());
  for (int t = 0; t < s.tokens(); ++t) {
    const size_t table = static_cast<size_t>(t % s.seq) * half;
    for (int h = 0; h < heads; ++h) {
      const size_t base = (static_cast<size_t>(t) * heads + h) * s.head_dim;
      for (int d = 0; d < half; ++d) {
        const double x1 = x[base + d], x2 = x[base + half + d];
        const double c = cos_t[table + d], sn = sin_t[table + d];
        ref[base + d] = x1 * c - x2 * sn;
        ref[base + half + d] = x2 * c + x1 * sn;
      }
    }
  }
  return ref;
}

// The largest relative error of one head: a head left unrotated (in place,
// nothing can be poisoned) barely moves the error over the whole tensor.
double WorstHeadError(const std::vector<float>& out, const std::vector<double>& ref, int head_dim) {
  double worst = 0;
  for (size_t base = 0; base < out.size(); base += head_dim) {
    const std::vector<float> o(out.begin() + base, out.begin() + base + head_dim);
    const std::vector<double> r(ref.begin() + base, ref.begin() + base + head_dim);
    const double err = RelativeError(o, r);
    if (!(err <= worst)) worst = err;  // NaN and Inf stick
  }
  return worst;
}

void CheckOneRope(const RopeShape& s, uint64_t seed, const RunOptions& opt, std::vector<CheckResult>* results) {
  const size_t nq = static_cast<size_t>(s.tokens()) * s.heads_q * s.head_dim;
  const size_t nk = static_cast<size_t>(s.tokens()) * s.heads_k * s.head_dim;
  std::vector<bf16> q = ToBf16(RandomFloats(nq, seed));
  std::vector<bf16> k = ToBf16(RandomFloats(nk, seed + 1));
  // Random angles rather than RopeTables: every element moves, at position 0 too.
  std::vector<float> cos_t = RandomFloats(static_cast<size_t>(s.seq) * s.head_dim / 2, seed + 2, 3.0f);
  std::vector<float> sin_t(cos_t.size());
  for (size_t i = 0; i < cos_t.size(); ++i) {
    const double angle = cos_t[i];
    cos_t[i] = static_cast<float>(std::cos(angle));
    sin_t[i] = static_cast<float>(std::sin(angle));
  }
  DeviceBuffer<bf16> d_q(nq), d_k(nk);
  DeviceBuffer<float> d_cos(cos_t.size()), d_sin(sin_t.size());
  // In place: the outputs are the inputs, so there is nothing to poison; an
  // unwritten head keeps its unrotated values, which the worst-head error catches.
  d_q.Upload(q);
  d_k.Upload(k);
  d_cos.Upload(cos_t);
  d_sin.Upload(sin_t);
  CUDA_OK(cudaDeviceSynchronize());  // uploads (legacy stream) before opt.stream's kernel
  LaunchRope(d_q.get(), d_k.get(), d_cos.get(), d_sin.get(), s, opt.stream);
  CUDA_OK(cudaStreamSynchronize(opt.stream));
  const std::vector<float> q_out = FromBf16(d_q.Download()), k_out = FromBf16(d_k.Download());
  const std::vector<double> q_ref = RopeReference(FromBf16(q), s.heads_q, s, cos_t, sin_t);
  const std::vector<double> k_ref = RopeReference(FromBf16(k), s.heads_k, s, cos_t, sin_t);
  struct Entry {
    const char* what;
    double err;
  };
  const Entry entries[] = {{" q", RelativeError(q_out, q_ref)},
                           {" k", RelativeError(k_out, k_ref)},
                           {" q worst head", WorstHeadError(q_out, q_ref, s.head_dim)},
                           {" k worst head", WorstHeadError(k_out, k_ref, s.head_dim)}};
  for (const Entry& e : entries) {
    CheckResult res;
    res.kernel = "rope";
    res.case_name = ShapeName(s) + e.what;
    res.rel_error = std::isfinite(e.err) ? e.err : INFINITY;
    res.tolerance = kBf16Tolerance;
    res.ok = std::isfinite(e.err) && e.err <= kBf16Tolerance;
    if (opt.progress) {
      char line[256];
      std::snprintf(line, sizeof line, "check %s %s: rel_error %.3g (tolerance %.0e) %s", res.kernel.c_str(),
                    res.case_name.c_str(), res.rel_error, res.tolerance, res.ok ? "ok" : "FAILED");
      opt.progress(line);
    }
    results->push_back(res);
  }
}

std::vector<CheckResult> CheckRope(const RunOptions& opt) {
  // {batch, seq, heads_q, heads_k, head_dim}: odd sequence with GQA at 128;
  // 64 with 4:1 GQA; head_dim 80 (5 vectors per half, not a power of two).
  const std::vector<RopeShape> cases = {{2, 37, 5, 1, 128}, {3, 100, 8, 2, 64}, {1, 50, 3, 3, 80}};
  std::vector<CheckResult> results;
  for (size_t i = 0; i < cases.size(); ++i) CheckOneRope(cases[i], opt.seed + 16 * i, opt, &results);
  return results;
}

// ---- timings ----

std::vector<TimingRow> TimeRope(const RunOptions& opt) {
  // Llama-3-8B (32 query, 8 KV heads of 128) and -70B (64, 8) over 4 x 4096 tokens.
  std::vector<RopeShape> shapes = {{4, 4096, 32, 8, 128}, {4, 4096, 64, 8, 128}};
  if (opt.quick) shapes.resize(1);
  std::vector<TimingRow> rows;
  for (const RopeShape& s : shapes) {
    const size_t nq = static_cast<size_t>(s.tokens()) * s.heads_q * s.head_dim;
    const size_t nk = static_cast<size_t>(s.tokens()) * s.heads_k * s.head_dim;
    std::vector<float> cos_t, sin_t;
    RopeTables(s, &cos_t, &sin_t);
    DeviceBuffer<float> d_cos(cos_t.size()), d_sin(sin_t.size());
    d_cos.Upload(cos_t);
    d_sin.Upload(sin_t);
    // Bytes: Q and K read and written once each, the two tables read once.
    const double bytes = 2.0 * (nq + nk) * sizeof(bf16) + 2.0 * cos_t.size() * sizeof(float);
    const int sets = RotationCount((nq + nk) * sizeof(bf16), opt.l2_bytes);  // in place: Q and K are the working set
    std::vector<DeviceBuffer<bf16>> qs, ks;
    for (int i = 0; i < sets; ++i) {
      qs.emplace_back(nq);
      ks.emplace_back(nk);
      FillRandom(qs.back(), opt.seed + 100 + 2 * i, 2.0f);
      FillRandom(ks.back(), opt.seed + 101 + 2 * i, 2.0f);
    }
    CUDA_OK(cudaDeviceSynchronize());
    int next = 0;
    // Repeated in-place rotations keep the values finite (each one preserves the norm).
    const TimingResult t = TimeKernel(
        [&] {
          LaunchRope(qs[next].get(), ks[next].get(), d_cos.get(), d_sin.get(), s, opt.stream);
          next = (next + 1) % sets;
        },
        opt.stream);
    TimingRow row;
    row.kernel = "rope";
    row.shape = ShapeName(s);
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

KernelFamily RopeFamily() { return {"rope", CheckRope, TimeRope}; }

}  // namespace stacksim::kernels
