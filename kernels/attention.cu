// Fused attention forward and backward, FlashAttention-2 style (see
// attention.h for the contract and kernels/README.md for the design).
//
// Tensor-core work is mma.sync.m16n8k16 (bf16 in, fp32 accumulate) fed by
// ldmatrix from padded shared-memory tiles (row stride head_dim + 8 elements,
// so the 8 row addresses of an ldmatrix hit distinct banks). Fragment layouts
// (PTX ISA, "Matrix Fragments for mma.m16n8k16"), with g = lane / 4 and
// t = lane % 4:
//   A (16x16, row-major) regs: {(g, 2t..2t+1), (g+8, 2t..), (g, 2t+8..), (g+8, 2t+8..)}
//   B (16x8, k x n)      regs: {(k 2t..2t+1, n g), (k 2t+8.., n g)}
//   C (16x8 fp32)             : c0,c1 = (g, 2t..2t+1), c2,c3 = (g+8, 2t..2t+1)
// so the C fragments of two adjacent 8-column tiles, rounded to bf16, are the
// A fragment of a 16-wide k step (how P and dS feed the next product from
// registers).

#include "kernels/attention.h"

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/check_util.h"
#include "kernels/cuda_check.h"
#include "kernels/kernels.h"
#include "kernels/timing.h"

namespace stacksim::kernels {
namespace {

using bf16 = __nv_bfloat16;

constexpr float kLog2e = 1.4426950408889634f;

// Forward: a CTA owns kFwdBM query rows of one (batch, head); 8 warps, each 16
// rows; key/value blocks of kFwdBN rows, double-buffered with cp.async.
constexpr int kFwdBM = 128;
constexpr int kFwdBN = 64;
constexpr int kFwdThreads = 256;

// Backward: a CTA owns kBwdBN keys of one (batch, kv head) and loops over the
// query heads of its group and the query blocks (kBwdBM rows) at or below the
// diagonal; 8 warps, each 16 keys for S^T, dP^T, dV, dK; for dQ the 8 warps
// split the kBwdBM x head_dim tile into 4 row groups x 2 column halves.
constexpr int kBwdBM = 64;
constexpr int kBwdBN = 128;
constexpr int kBwdThreads = 256;

template <int D>
constexpr int FwdSmemBytes() {
  return (kFwdBM + 4 * kFwdBN) * (D + 8) * static_cast<int>(sizeof(bf16));
}

template <int D>
constexpr int BwdSmemBytes() {
  return (2 * kBwdBN + 4 * kBwdBM) * (D + 8) * static_cast<int>(sizeof(bf16)) +
         kBwdBN * (kBwdBM + 8) * static_cast<int>(sizeof(bf16)) + 4 * kBwdBM * static_cast<int>(sizeof(float));
}

// ---------------------------------------------------------------------------
// PTX wrappers.

__device__ __forceinline__ uint32_t SmemAddr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16-byte async copy global -> shared; when !pred the 16 bytes are zero-filled
// (src-size 0) and `src` is not read (it must still be a valid address).
__device__ __forceinline__ void CpAsync16(void* dst, const void* src, bool pred) {
  const int n = pred ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(SmemAddr(dst)), "l"(src), "r"(n) : "memory");
}

__device__ __forceinline__ void CpAsyncCommit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

template <int N>
__device__ __forceinline__ void CpAsyncWait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

__device__ __forceinline__ void LdMatrixX4(uint32_t (&r)[4], const bf16* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(SmemAddr(p))
               : "memory");
}

__device__ __forceinline__ void LdMatrixX4Trans(uint32_t (&r)[4], const bf16* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(SmemAddr(p))
               : "memory");
}

// c += a * b for one m16n8k16 tile.
__device__ __forceinline__ void Mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Two floats as bf16x2 (lo in the low half: the lower column index).
__device__ __forceinline__ uint32_t PackBf16(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&v);
}

// The A fragment of k step j from the C fragments of 8-column tiles 2j, 2j+1.
template <int N>
__device__ __forceinline__ void AFromC(uint32_t (&a)[4], const float (&c)[N][4], int j) {
  a[0] = PackBf16(c[2 * j][0], c[2 * j][1]);
  a[1] = PackBf16(c[2 * j][2], c[2 * j][3]);
  a[2] = PackBf16(c[2 * j + 1][0], c[2 * j + 1][1]);
  a[3] = PackBf16(c[2 * j + 1][2], c[2 * j + 1][3]);
}

// Lane address offsets for ldmatrix.x4 (element units, for a tile with row
// stride `ld`):
//  - A operand, row-major [m][k] in smem (non-trans): row lane%16, col (lane/16)*8.
//  - B operand from an [n][k] tile (non-trans): two 8-wide n tiles:
//    row (lane/16)*8 + lane%8, col ((lane/8)%2)*8 -> regs {b0,b1} of n tile 0, then n tile 1.
//  - B operand from a [k][n] tile (trans): row lane%16, col (lane/16)*8 ->
//    regs {b0,b1} of n tile 0, then n tile 1.
//  - A operand from a [k][m] tile (trans): row (lane/16)*8 + lane%8, col ((lane/8)%2)*8.
__device__ __forceinline__ int OffRowMajorA(int lane, int ld) { return (lane & 15) * ld + (lane >> 4) * 8; }
__device__ __forceinline__ int OffNkB(int lane, int ld) {
  return ((lane >> 4) * 8 + (lane & 7)) * ld + ((lane >> 3) & 1) * 8;
}

// Copies ROWS x D bf16 rows [row0, row0 + ROWS) of a strided global matrix into
// a padded smem tile (stride LD); rows at or past `rows_valid` become zeros.
template <int ROWS, int D, int LD, int THREADS>
__device__ __forceinline__ void LoadTile(bf16* smem, const bf16* gbase, size_t row_stride, int row0, int rows_valid,
                                         int tid) {
  constexpr int kChunksPerRow = D / 8;
  constexpr int kTotal = ROWS * kChunksPerRow;
  static_assert(kTotal % THREADS == 0, "tile chunks must divide evenly among threads");
#pragma unroll
  for (int i = 0; i < kTotal / THREADS; ++i) {
    const int c = tid + i * THREADS;
    const int r = c / kChunksPerRow;
    const int col = (c % kChunksPerRow) * 8;
    const int gr = row0 + r;
    const bool ok = gr < rows_valid;
    const bf16* src = gbase + static_cast<size_t>(ok ? gr : 0) * row_stride + col;
    CpAsync16(smem + r * LD + col, src, ok);
  }
}

// ---------------------------------------------------------------------------
// Forward.

struct FwdParams {
  const bf16* q;
  const bf16* k;
  const bf16* v;
  bf16* o;
  float* lse;
  int batch, heads, kv_heads, seq;
  int causal;
  float scale;       // 1/sqrt(d)
  float scale_log2;  // scale * log2(e)
};

template <int D>
__global__ void __launch_bounds__(kFwdThreads, 1) AttnFwdKernel(const FwdParams p) {
  constexpr int BM = kFwdBM, BN = kFwdBN, LD = D + 8, T = kFwdThreads;
  constexpr int kNT = BN / 8;  // 8-wide key tiles of S
  constexpr int kDT = D / 8;   // 8-wide column tiles of O
  extern __shared__ __align__(16) unsigned char smem_raw[];
  bf16* sQ = reinterpret_cast<bf16*>(smem_raw);  // [BM][LD]
  bf16* sK = sQ + BM * LD;                       // [2][BN][LD]
  bf16* sV = sK + 2 * BN * LD;                   // [2][BN][LD]

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int g = lane >> 2, t = lane & 3;
  const int h = blockIdx.x % p.heads, b = blockIdx.x / p.heads;
  const int q0 = (gridDim.y - 1 - blockIdx.y) * BM;  // heaviest (causal) query blocks first
  const int hk = h / (p.heads / p.kv_heads);
  const int S = p.seq;
  const size_t q_stride = static_cast<size_t>(p.heads) * D;
  const size_t kv_stride = static_cast<size_t>(p.kv_heads) * D;
  const bf16* qg = p.q + (static_cast<size_t>(b) * S * p.heads + h) * D;
  const bf16* kg = p.k + (static_cast<size_t>(b) * S * p.kv_heads + hk) * D;
  const bf16* vg = p.v + (static_cast<size_t>(b) * S * p.kv_heads + hk) * D;

  int n_kb = (S + BN - 1) / BN;
  if (p.causal) n_kb = min(n_kb, (min(q0 + BM, S) - 1) / BN + 1);  // keys <= last query row

  LoadTile<BM, D, LD, T>(sQ, qg, q_stride, q0, S, tid);
  LoadTile<BN, D, LD, T>(sK, kg, kv_stride, 0, S, tid);
  LoadTile<BN, D, LD, T>(sV, vg, kv_stride, 0, S, tid);
  CpAsyncCommit();

  const int wrow = warp * 16;       // this warp's rows within the block
  const int row_a = q0 + wrow + g;  // global query rows of c0,c1 (c2,c3: row_a + 8)
  float o[kDT][4];
#pragma unroll
  for (int i = 0; i < kDT; ++i) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.f;
  float m_run[2] = {-INFINITY, -INFINITY};  // running max of raw scores
  float l_run[2] = {0.f, 0.f};              // this thread's share of the running sum

  for (int kb = 0; kb < n_kb; ++kb) {
    const int buf = kb & 1;
    if (kb + 1 < n_kb) {
      LoadTile<BN, D, LD, T>(sK + (buf ^ 1) * BN * LD, kg, kv_stride, (kb + 1) * BN, S, tid);
      LoadTile<BN, D, LD, T>(sV + (buf ^ 1) * BN * LD, vg, kv_stride, (kb + 1) * BN, S, tid);
      CpAsyncCommit();
      CpAsyncWait<1>();
    } else {
      CpAsyncWait<0>();
    }
    __syncthreads();
    const bf16* cK = sK + buf * BN * LD;
    const bf16* cV = sV + buf * BN * LD;
    const int k0 = kb * BN;
    // A warp whose rows all lie above this key block (causal) gets nothing from it.
    const bool warp_active = !(p.causal && q0 + wrow + 15 < k0);
    if (warp_active) {
      float s[kNT][4];
#pragma unroll
      for (int i = 0; i < kNT; ++i) s[i][0] = s[i][1] = s[i][2] = s[i][3] = 0.f;
      // S = Q K^T (16 x BN per warp).
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk) {
        uint32_t a[4];
        LdMatrixX4(a, sQ + wrow * LD + kk * 16 + OffRowMajorA(lane, LD));
#pragma unroll
        for (int n2 = 0; n2 < kNT / 2; ++n2) {
          uint32_t bk[4];
          LdMatrixX4(bk, cK + n2 * 16 * LD + kk * 16 + OffNkB(lane, LD));
          Mma(s[2 * n2], a, bk[0], bk[1]);
          Mma(s[2 * n2 + 1], a, bk[2], bk[3]);
        }
      }
      // Mask keys past the end and (causal) keys after the query.
      const bool need_mask = (k0 + BN > S) || (p.causal && k0 + BN - 1 > q0 + wrow);
      if (need_mask) {
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt) {
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int key = k0 + nt * 8 + 2 * t + (e & 1);
            const int row = row_a + (e >> 1) * 8;
            if (key >= S || (p.causal && key > row)) s[nt][e] = -INFINITY;
          }
        }
      }
      // Online softmax: new running max per row (over the quad of 4 lanes).
      float mx[2] = {m_run[0], m_run[1]};
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt) {
        mx[0] = fmaxf(mx[0], fmaxf(s[nt][0], s[nt][1]));
        mx[1] = fmaxf(mx[1], fmaxf(s[nt][2], s[nt][3]));
      }
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
        mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
      }
      float base[2], alpha[2];
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        base[r] = (mx[r] == -INFINITY) ? 0.f : mx[r] * p.scale_log2;  // a row with nothing yet: exp2(-inf) = 0
        alpha[r] = exp2f(m_run[r] * p.scale_log2 - base[r]);            // m_run = -inf -> 0
        m_run[r] = mx[r];
        l_run[r] *= alpha[r];
      }
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt) {
        s[nt][0] = exp2f(fmaf(s[nt][0], p.scale_log2, -base[0]));
        s[nt][1] = exp2f(fmaf(s[nt][1], p.scale_log2, -base[0]));
        s[nt][2] = exp2f(fmaf(s[nt][2], p.scale_log2, -base[1]));
        s[nt][3] = exp2f(fmaf(s[nt][3], p.scale_log2, -base[1]));
        l_run[0] += s[nt][0] + s[nt][1];
        l_run[1] += s[nt][2] + s[nt][3];
      }
#pragma unroll
      for (int dt = 0; dt < kDT; ++dt) {
        o[dt][0] *= alpha[0];
        o[dt][1] *= alpha[0];
        o[dt][2] *= alpha[1];
        o[dt][3] *= alpha[1];
      }
      // O += P V: P from registers (bf16), V via ldmatrix.trans.
#pragma unroll
      for (int j = 0; j < BN / 16; ++j) {
        uint32_t a[4];
        AFromC(a, s, j);
#pragma unroll
        for (int d2 = 0; d2 < D / 16; ++d2) {
          uint32_t bv[4];
          LdMatrixX4Trans(bv, cV + j * 16 * LD + d2 * 16 + OffRowMajorA(lane, LD));
          Mma(o[2 * d2], a, bv[0], bv[1]);
          Mma(o[2 * d2 + 1], a, bv[2], bv[3]);
        }
      }
    }
    __syncthreads();  // this buffer is refilled by the next iteration's prefetch
  }

  // Epilogue: full row sums, O /= l, L = max * scale + ln(l).
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    l_run[r] += __shfl_xor_sync(0xffffffffu, l_run[r], 1);
    l_run[r] += __shfl_xor_sync(0xffffffffu, l_run[r], 2);
  }
  const float inv0 = l_run[0] > 0.f ? 1.f / l_run[0] : 0.f;
  const float inv1 = l_run[1] > 0.f ? 1.f / l_run[1] : 0.f;
  // Stage this warp's 16 rows of O in its own rows of sQ (no other warp reads
  // them, and the loop ended with a barrier), then write 16-byte chunks.
  bf16* sO = sQ + wrow * LD;
#pragma unroll
  for (int dt = 0; dt < kDT; ++dt) {
    *reinterpret_cast<uint32_t*>(sO + g * LD + dt * 8 + 2 * t) = PackBf16(o[dt][0] * inv0, o[dt][1] * inv0);
    *reinterpret_cast<uint32_t*>(sO + (g + 8) * LD + dt * 8 + 2 * t) = PackBf16(o[dt][2] * inv1, o[dt][3] * inv1);
  }
  __syncwarp();
  bf16* og = p.o + (static_cast<size_t>(b) * S * p.heads + h) * D;
#pragma unroll
  for (int i = 0; i < 16 * (D / 8) / 32; ++i) {
    const int c = lane + i * 32;
    const int r = c / (D / 8);
    const int col = (c % (D / 8)) * 8;
    const int row = q0 + wrow + r;
    if (row < S) {
      *reinterpret_cast<uint4*>(og + static_cast<size_t>(row) * q_stride + col) =
          *reinterpret_cast<const uint4*>(sO + r * LD + col);
    }
  }
  if (t == 0) {
    float* lg = p.lse + (static_cast<size_t>(b) * p.heads + h) * S;
    if (row_a < S) lg[row_a] = m_run[0] * p.scale + logf(l_run[0]);
    if (row_a + 8 < S) lg[row_a + 8] = m_run[1] * p.scale + logf(l_run[1]);
  }
}

// ---------------------------------------------------------------------------
// Backward.

// Delta[b, h, s] = sum_d dO * O (one warp per row of [batch, seq, heads]).
template <int D>
__global__ void AttnBwdPreprocessKernel(const bf16* __restrict__ o, const bf16* __restrict__ d_o,
                                        float* __restrict__ delta, int batch, int heads, int seq) {
  const size_t rows = static_cast<size_t>(batch) * seq * heads;
  const size_t row = static_cast<size_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x & 31;
  if (row >= rows) return;
  const __nv_bfloat162* op = reinterpret_cast<const __nv_bfloat162*>(o + row * D);
  const __nv_bfloat162* dp = reinterpret_cast<const __nv_bfloat162*>(d_o + row * D);
  float acc = 0.f;
#pragma unroll
  for (int i = lane; i < D / 2; i += 32) {
    const float2 a = __bfloat1622float2(op[i]);
    const float2 c = __bfloat1622float2(dp[i]);
    acc = fmaf(a.x, c.x, acc);
    acc = fmaf(a.y, c.y, acc);
  }
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, off);
  if (lane == 0) {
    const int h = static_cast<int>(row % heads);
    const size_t bs = row / heads;  // b * seq + s
    const int s = static_cast<int>(bs % seq);
    const size_t b = bs / seq;
    delta[(b * heads + h) * seq + s] = acc;
  }
}

// dQ (bf16) = dq_accum * scale, 4 elements per thread.
__global__ void AttnBwdConvertDqKernel(const float* __restrict__ acc, bf16* __restrict__ dq, size_t n4, float scale) {
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n4;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const float4 v = reinterpret_cast<const float4*>(acc)[i];
    uint2 out;
    out.x = PackBf16(v.x * scale, v.y * scale);
    out.y = PackBf16(v.z * scale, v.w * scale);
    reinterpret_cast<uint2*>(dq)[i] = out;
  }
}

struct BwdParams {
  const bf16* q;
  const bf16* k;
  const bf16* v;
  const bf16* d_o;
  const float* lse;
  const float* delta;
  float* dq_accum;
  bf16* dk;
  bf16* dv;
  int batch, heads, kv_heads, seq;
  int causal;
  float scale;
  float scale_log2;
};

template <int D>
__global__ void __launch_bounds__(kBwdThreads, 1) AttnBwdKernel(const BwdParams p) {
  constexpr int BM = kBwdBM, BN = kBwdBN, LD = D + 8, LDS = BM + 8, T = kBwdThreads;
  constexpr int kQT = BM / 8;   // 8-wide query tiles of S^T and dP^T
  constexpr int kDT = D / 8;    // 8-wide column tiles of dK, dV
  constexpr int kHT = D / 16;   // 8-wide column tiles of a dQ half
  extern __shared__ __align__(16) unsigned char smem_raw[];
  bf16* sK = reinterpret_cast<bf16*>(smem_raw);  // [BN][LD]
  bf16* sV = sK + BN * LD;                       // [BN][LD]
  bf16* sQ = sV + BN * LD;                       // [2][BM][LD]
  bf16* sdO = sQ + 2 * BM * LD;                  // [2][BM][LD]
  bf16* sdS = sdO + 2 * BM * LD;                 // [BN][LDS]: dS^T (keys x queries), bf16
  float* sL = reinterpret_cast<float*>(sdS + BN * LDS);  // [2][BM]: L * log2(e)
  float* sDl = sL + 2 * BM;                               // [2][BM]: Delta

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int g = lane >> 2, t = lane & 3;
  const int hk = blockIdx.x % p.kv_heads, b = blockIdx.x / p.kv_heads;
  const int n0 = blockIdx.y * BN;  // (causal) heaviest key blocks first
  const int S = p.seq;
  const int group = p.heads / p.kv_heads;
  const size_t q_stride = static_cast<size_t>(p.heads) * D;
  const size_t kv_stride = static_cast<size_t>(p.kv_heads) * D;
  const bf16* kg = p.k + (static_cast<size_t>(b) * S * p.kv_heads + hk) * D;
  const bf16* vg = p.v + (static_cast<size_t>(b) * S * p.kv_heads + hk) * D;

  LoadTile<BN, D, LD, T>(sK, kg, kv_stride, n0, S, tid);
  LoadTile<BN, D, LD, T>(sV, vg, kv_stride, n0, S, tid);
  CpAsyncCommit();

  const int m_begin = p.causal ? n0 / BM : 0;  // first query block with a query >= n0
  const int n_m = (S + BM - 1) / BM - m_begin;
  const int n_it = group * n_m;  // (query head, query block) pairs

  // Loads Q, dO, L, Delta of iteration `it` into buffer `buf`.
  auto issue = [&](int it, int buf) {
    const int hq = hk * group + it / n_m;
    const int m0 = (m_begin + it % n_m) * BM;
    const size_t head_off = (static_cast<size_t>(b) * S * p.heads + hq) * D;
    LoadTile<BM, D, LD, T>(sQ + buf * BM * LD, p.q + head_off, q_stride, m0, S, tid);
    LoadTile<BM, D, LD, T>(sdO + buf * BM * LD, p.d_o + head_off, q_stride, m0, S, tid);
    const size_t row_off = (static_cast<size_t>(b) * p.heads + hq) * S;
    if (tid < BM) {
      const int r = m0 + tid;
      sL[buf * BM + tid] = r < S ? p.lse[row_off + r] * kLog2e : 0.f;
    } else if (tid < 2 * BM) {
      const int r = m0 + tid - BM;
      sDl[buf * BM + tid - BM] = r < S ? p.delta[row_off + r] : 0.f;
    }
  };
  issue(0, 0);
  CpAsyncCommit();

  const int kw = warp * 16;  // this warp's keys within the block (S^T, dP^T, dK, dV)
  float dk[kDT][4], dv[kDT][4];
#pragma unroll
  for (int i = 0; i < kDT; ++i) {
    dk[i][0] = dk[i][1] = dk[i][2] = dk[i][3] = 0.f;
    dv[i][0] = dv[i][1] = dv[i][2] = dv[i][3] = 0.f;
  }

  for (int it = 0; it < n_it; ++it) {
    const int buf = it & 1;
    if (it + 1 < n_it) {
      issue(it + 1, buf ^ 1);  // that buffer was last read before the previous iteration's final barrier
      CpAsyncCommit();
      CpAsyncWait<1>();
    } else {
      CpAsyncWait<0>();
    }
    __syncthreads();
    const int hq = hk * group + it / n_m;
    const int m0 = (m_begin + it % n_m) * BM;
    const bf16* cQ = sQ + buf * BM * LD;
    const bf16* cdO = sdO + buf * BM * LD;
    const float* cL = sL + buf * BM;
    const float* cD = sDl + buf * BM;

    // S^T = K Q^T and dP^T = V dO^T (16 keys x BM queries per warp).
    float s[kQT][4], dp[kQT][4];
#pragma unroll
    for (int i = 0; i < kQT; ++i) {
      s[i][0] = s[i][1] = s[i][2] = s[i][3] = 0.f;
      dp[i][0] = dp[i][1] = dp[i][2] = dp[i][3] = 0.f;
    }
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      uint32_t ak[4], av[4];
      LdMatrixX4(ak, sK + kw * LD + kk * 16 + OffRowMajorA(lane, LD));
      LdMatrixX4(av, sV + kw * LD + kk * 16 + OffRowMajorA(lane, LD));
#pragma unroll
      for (int n2 = 0; n2 < kQT / 2; ++n2) {
        uint32_t bq[4], bo[4];
        LdMatrixX4(bq, cQ + n2 * 16 * LD + kk * 16 + OffNkB(lane, LD));
        Mma(s[2 * n2], ak, bq[0], bq[1]);
        Mma(s[2 * n2 + 1], ak, bq[2], bq[3]);
        LdMatrixX4(bo, cdO + n2 * 16 * LD + kk * 16 + OffNkB(lane, LD));
        Mma(dp[2 * n2], av, bo[0], bo[1]);
        Mma(dp[2 * n2 + 1], av, bo[2], bo[3]);
      }
    }
    // P^T = exp(S^T * scale - L) (0 where masked); dS^T = P^T * (dP^T - Delta).
    const bool need_mask = (n0 + BN > S) || (m0 + BM > S) || (p.causal && n0 + BN - 1 > m0);
#pragma unroll
    for (int nt = 0; nt < kQT; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int qc = nt * 8 + 2 * t + (e & 1);  // query within the block
        float pv = exp2f(fmaf(s[nt][e], p.scale_log2, -cL[qc]));
        if (need_mask) {
          const int key = n0 + kw + g + (e >> 1) * 8;
          const int qr = m0 + qc;
          if (key >= S || qr >= S || (p.causal && key > qr)) pv = 0.f;
        }
        s[nt][e] = pv;
        dp[nt][e] = pv * (dp[nt][e] - cD[qc]);
      }
    }
    // dS^T to smem for dQ (read after the barrier below).
#pragma unroll
    for (int nt = 0; nt < kQT; ++nt) {
      *reinterpret_cast<uint32_t*>(sdS + (kw + g) * LDS + nt * 8 + 2 * t) = PackBf16(dp[nt][0], dp[nt][1]);
      *reinterpret_cast<uint32_t*>(sdS + (kw + g + 8) * LDS + nt * 8 + 2 * t) = PackBf16(dp[nt][2], dp[nt][3]);
    }
    // dV += P^T dO and dK += dS^T Q (dO, Q as [query][d] tiles via ldmatrix.trans).
#pragma unroll
    for (int j = 0; j < BM / 16; ++j) {
      uint32_t ap[4], ad[4];
      AFromC(ap, s, j);
      AFromC(ad, dp, j);
#pragma unroll
      for (int d2 = 0; d2 < D / 16; ++d2) {
        uint32_t bo[4], bq[4];
        LdMatrixX4Trans(bo, cdO + j * 16 * LD + d2 * 16 + OffRowMajorA(lane, LD));
        Mma(dv[2 * d2], ap, bo[0], bo[1]);
        Mma(dv[2 * d2 + 1], ap, bo[2], bo[3]);
        LdMatrixX4Trans(bq, cQ + j * 16 * LD + d2 * 16 + OffRowMajorA(lane, LD));
        Mma(dk[2 * d2], ad, bq[0], bq[1]);
        Mma(dk[2 * d2 + 1], ad, bq[2], bq[3]);
      }
    }
    __syncthreads();
    // dQ (BM x D) += dS K: warp -> rows (warp % 4) * 16, columns (warp / 4) * D/2.
    {
      const int mt = warp & 3, dh = warp >> 2;
      float acc[kHT][4];
#pragma unroll
      for (int i = 0; i < kHT; ++i) acc[i][0] = acc[i][1] = acc[i][2] = acc[i][3] = 0.f;
#pragma unroll
      for (int kk = 0; kk < BN / 16; ++kk) {
        uint32_t a[4];
        // A = dS [query][key] read from dS^T [key][query] with .trans.
        LdMatrixX4Trans(a, sdS + kk * 16 * LDS + mt * 16 + OffNkB(lane, LDS));
#pragma unroll
        for (int d2 = 0; d2 < D / 32; ++d2) {
          uint32_t bk[4];
          LdMatrixX4Trans(bk, sK + kk * 16 * LD + dh * (D / 2) + d2 * 16 + OffRowMajorA(lane, LD));
          Mma(acc[2 * d2], a, bk[0], bk[1]);
          Mma(acc[2 * d2 + 1], a, bk[2], bk[3]);
        }
      }
      float* dqg = p.dq_accum + (static_cast<size_t>(b) * S * p.heads + hq) * D + dh * (D / 2) + 2 * t;
      const int r0 = m0 + mt * 16 + g;
#pragma unroll
      for (int nt = 0; nt < kHT; ++nt) {
        if (r0 < S) {
          float* dst = dqg + static_cast<size_t>(r0) * q_stride + nt * 8;
          atomicAdd(dst, acc[nt][0]);
          atomicAdd(dst + 1, acc[nt][1]);
        }
        if (r0 + 8 < S) {
          float* dst = dqg + static_cast<size_t>(r0 + 8) * q_stride + nt * 8;
          atomicAdd(dst, acc[nt][2]);
          atomicAdd(dst + 1, acc[nt][3]);
        }
      }
    }
    __syncthreads();  // sdS and this Q/dO buffer are rewritten next
  }
  CpAsyncWait<0>();
  __syncthreads();

  // Epilogue: stage this warp's 16 rows of dK (scaled) and dV in its own rows
  // of sK / sV (no warp reads K or V any more), then 16-byte stores.
#pragma unroll
  for (int dt = 0; dt < kDT; ++dt) {
    *reinterpret_cast<uint32_t*>(sK + (kw + g) * LD + dt * 8 + 2 * t) =
        PackBf16(dk[dt][0] * p.scale, dk[dt][1] * p.scale);
    *reinterpret_cast<uint32_t*>(sK + (kw + g + 8) * LD + dt * 8 + 2 * t) =
        PackBf16(dk[dt][2] * p.scale, dk[dt][3] * p.scale);
    *reinterpret_cast<uint32_t*>(sV + (kw + g) * LD + dt * 8 + 2 * t) = PackBf16(dv[dt][0], dv[dt][1]);
    *reinterpret_cast<uint32_t*>(sV + (kw + g + 8) * LD + dt * 8 + 2 * t) = PackBf16(dv[dt][2], dv[dt][3]);
  }
  __syncwarp();
  bf16* dkg = p.dk + (static_cast<size_t>(b) * S * p.kv_heads + hk) * D;
  bf16* dvg = p.dv + (static_cast<size_t>(b) * S * p.kv_heads + hk) * D;
#pragma unroll
  for (int i = 0; i < 16 * (D / 8) / 32; ++i) {
    const int c = lane + i * 32;
    const int r = c / (D / 8);
    const int col = (c % (D / 8)) * 8;
    const int key = n0 + kw + r;
    if (key < S) {
      *reinterpret_cast<uint4*>(dkg + static_cast<size_t>(key) * kv_stride + col) =
          *reinterpret_cast<const uint4*>(sK + (kw + r) * LD + col);
      *reinterpret_cast<uint4*>(dvg + static_cast<size_t>(key) * kv_stride + col) =
          *reinterpret_cast<const uint4*>(sV + (kw + r) * LD + col);
    }
  }
}

// ---------------------------------------------------------------------------
// Host launchers.

void ValidateShape(const AttentionShape& s) {
  if (s.batch <= 0 || s.heads <= 0 || s.kv_heads <= 0 || s.seq <= 0) {
    throw std::invalid_argument("attention: batch, heads, kv_heads and seq must be positive");
  }
  if (s.heads % s.kv_heads != 0) throw std::invalid_argument("attention: kv_heads must divide heads");
  if (s.head_dim != 64 && s.head_dim != 128) throw std::invalid_argument("attention: head_dim must be 64 or 128");
  const long long q_blocks = (s.seq + kFwdBM - 1) / kFwdBM, k_blocks = (s.seq + kBwdBN - 1) / kBwdBN;
  if (q_blocks > 65535 || k_blocks > 65535 || static_cast<long long>(s.batch) * s.heads > 2147483647LL) {
    throw std::invalid_argument("attention: shape exceeds the launch grid");
  }
}

template <int D>
void LaunchForward(const FwdParams& p, cudaStream_t stream) {
  constexpr int smem = FwdSmemBytes<D>();
  CUDA_OK(cudaFuncSetAttribute(AttnFwdKernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  const dim3 grid(p.batch * p.heads, (p.seq + kFwdBM - 1) / kFwdBM);
  AttnFwdKernel<D><<<grid, kFwdThreads, smem, stream>>>(p);
  CUDA_LAUNCH_OK();
}

template <int D>
void LaunchBackward(const BwdParams& p, const bf16* o, bf16* dq, float* delta, cudaStream_t stream) {
  const size_t rows = static_cast<size_t>(p.batch) * p.seq * p.heads;
  CUDA_OK(cudaMemsetAsync(p.dq_accum, 0, rows * D * sizeof(float), stream));
  AttnBwdPreprocessKernel<D><<<static_cast<unsigned>((rows + 7) / 8), 256, 0, stream>>>(o, p.d_o, delta, p.batch,
                                                                                        p.heads, p.seq);
  CUDA_LAUNCH_OK();
  constexpr int smem = BwdSmemBytes<D>();
  CUDA_OK(cudaFuncSetAttribute(AttnBwdKernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  const dim3 grid(p.batch * p.kv_heads, (p.seq + kBwdBN - 1) / kBwdBN);
  AttnBwdKernel<D><<<grid, kBwdThreads, smem, stream>>>(p);
  CUDA_LAUNCH_OK();
  const size_t n4 = rows * D / 4;
  const unsigned blocks = static_cast<unsigned>(std::min<size_t>((n4 + 255) / 256, 65535u * 8));
  AttnBwdConvertDqKernel<<<blocks, 256, 0, stream>>>(p.dq_accum, dq, n4, p.scale);
  CUDA_LAUNCH_OK();
}

}  // namespace

void AttentionForward(const AttentionShape& shape, const bf16* q, const bf16* k, const bf16* v, bf16* o, float* lse,
                      cudaStream_t stream) {
  ValidateShape(shape);
  FwdParams p{};
  p.q = q;
  p.k = k;
  p.v = v;
  p.o = o;
  p.lse = lse;
  p.batch = shape.batch;
  p.heads = shape.heads;
  p.kv_heads = shape.kv_heads;
  p.seq = shape.seq;
  p.causal = shape.causal ? 1 : 0;
  p.scale = 1.0f / std::sqrt(static_cast<float>(shape.head_dim));
  p.scale_log2 = p.scale * kLog2e;
  if (shape.head_dim == 64) {
    LaunchForward<64>(p, stream);
  } else {
    LaunchForward<128>(p, stream);
  }
}

void AttentionBackward(const AttentionShape& shape, const bf16* q, const bf16* k, const bf16* v, const bf16* o,
                       const bf16* d_o, const float* lse, bf16* dq, bf16* dk, bf16* dv, float* dq_accum, float* delta,
                       cudaStream_t stream) {
  ValidateShape(shape);
  BwdParams p{};
  p.q = q;
  p.k = k;
  p.v = v;
  p.d_o = d_o;
  p.lse = lse;
  p.delta = delta;
  p.dq_accum = dq_accum;
  p.dk = dk;
  p.dv = dv;
  p.batch = shape.batch;
  p.heads = shape.heads;
  p.kv_heads = shape.kv_heads;
  p.seq = shape.seq;
  p.causal = shape.causal ? 1 : 0;
  p.scale = 1.0f / std::sqrt(static_cast<float>(shape.head_dim));
  p.scale_log2 = p.scale * kLog2e;
  if (shape.head_dim == 64) {
    LaunchBackward<64>(p, o, dq, delta, stream);
  } else {
    LaunchBackward<128>(p, o, dq, delta, stream);
  }
}

// ---------------------------------------------------------------------------
// Registry: checks against a CPU reference in double, and timings.

namespace {

std::string ShapeString(const AttentionShape& s) {
  return "bf16 b=" + std::to_string(s.batch) + " h=" + std::to_string(s.heads) + " kv=" + std::to_string(s.kv_heads) +
         " s=" + std::to_string(s.seq) + " d=" + std::to_string(s.head_dim) + " causal=" + std::to_string(s.causal ? 1 : 0);
}

struct Reference {
  std::vector<double> o, lse, dq, dk, dv;
};

// Exact attention in double from the (bf16-valued) inputs, same layouts as the kernels.
Reference ReferenceAttention(const AttentionShape& c, const std::vector<float>& q, const std::vector<float>& k,
                             const std::vector<float>& v, const std::vector<float>& d_o) {
  const int B = c.batch, H = c.heads, KV = c.kv_heads, S = c.seq, D = c.head_dim, G = H / KV;
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  Reference r;
  r.o.assign(static_cast<size_t>(B) * S * H * D, 0.0);
  r.dq.assign(r.o.size(), 0.0);
  r.lse.assign(static_cast<size_t>(B) * H * S, 0.0);
  r.dk.assign(static_cast<size_t>(B) * S * KV * D, 0.0);
  r.dv.assign(r.dk.size(), 0.0);
  auto qi = [&](int b, int s, int h) { return ((static_cast<size_t>(b) * S + s) * H + h) * D; };
  auto ki = [&](int b, int s, int h) { return ((static_cast<size_t>(b) * S + s) * KV + h) * D; };
  std::vector<double> pr(S), dpr(S);
  for (int b = 0; b < B; ++b) {
    for (int h = 0; h < H; ++h) {
      const int hk = h / G;
      for (int i = 0; i < S; ++i) {
        const int n = c.causal ? i + 1 : S;
        const float* qrow = &q[qi(b, i, h)];
        double mx = -INFINITY;
        for (int j = 0; j < n; ++j) {
          const float* krow = &k[ki(b, j, hk)];
          double dot = 0;
          for (int d = 0; d < D; ++d) dot += static_cast<double>(qrow[d]) * krow[d];
          pr[j] = dot * scale;
          mx = std::max(mx, pr[j]);
        }
        double sum = 0;
        for (int j = 0; j < n; ++j) {
          pr[j] = std::exp(pr[j] - mx);
          sum += pr[j];
        }
        r.lse[(static_cast<size_t>(b) * H + h) * S + i] = mx + std::log(sum);
        double* orow = &r.o[qi(b, i, h)];
        const float* dorow = &d_o[qi(b, i, h)];
        double delta = 0;
        for (int j = 0; j < n; ++j) {
          pr[j] /= sum;
          const float* vrow = &v[ki(b, j, hk)];
          double dpv = 0;
          for (int d = 0; d < D; ++d) {
            orow[d] += pr[j] * vrow[d];
            dpv += static_cast<double>(dorow[d]) * vrow[d];
          }
          dpr[j] = dpv;
          delta += pr[j] * dpv;
        }
        double* dqrow = &r.dq[qi(b, i, h)];
        for (int j = 0; j < n; ++j) {
          const double ds = pr[j] * (dpr[j] - delta) * scale;
          const float* krow = &k[ki(b, j, hk)];
          double* dkrow = &r.dk[ki(b, j, hk)];
          double* dvrow = &r.dv[ki(b, j, hk)];
          for (int d = 0; d < D; ++d) {
            dqrow[d] += ds * krow[d];
            dkrow[d] += ds * qrow[d];
            dvrow[d] += pr[j] * dorow[d];
          }
        }
      }
    }
  }
  return r;
}

CheckResult MakeCheck(const std::string& kernel, const std::string& name, double err, double tol) {
  CheckResult c;
  c.kernel = kernel;
  c.case_name = name;
  c.rel_error = err;
  c.tolerance = tol;
  c.ok = std::isfinite(err) && err <= tol;
  return c;
}

std::vector<CheckResult> CheckAttention(const RunOptions& opt) {
  const AttentionShape cases[] = {
      {2, 4, 4, 256, 64, true},
      {1, 8, 2, 384, 128, true},
      {1, 2, 2, 200, 64, false},
  };
  std::vector<CheckResult> out;
  int ci = 0;
  for (const AttentionShape& c : cases) {
    const size_t nq = static_cast<size_t>(c.batch) * c.seq * c.heads * c.head_dim;
    const size_t nkv = static_cast<size_t>(c.batch) * c.seq * c.kv_heads * c.head_dim;
    const size_t nl = static_cast<size_t>(c.batch) * c.heads * c.seq;
    const uint64_t seed = opt.seed * 1000003ULL + 16ULL * ci++;
    const auto q16 = ToBf16(RandomFloats(nq, seed + 1));
    const auto k16 = ToBf16(RandomFloats(nkv, seed + 2));
    const auto v16 = ToBf16(RandomFloats(nkv, seed + 3));
    const auto do16 = ToBf16(RandomFloats(nq, seed + 4));
    DeviceBuffer<bf16> q(nq), k(nkv), v(nkv), o(nq), d_o(nq), dq(nq), dk(nkv), dv(nkv);
    DeviceBuffer<float> lse(nl), delta(nl), dq_accum(nq);
    q.Upload(q16);
    k.Upload(k16);
    v.Upload(v16);
    d_o.Upload(do16);
    o.Poison();
    lse.Poison();
    dq.Poison();
    dk.Poison();
    dv.Poison();
    delta.Poison();
    dq_accum.Poison();
    CUDA_OK(cudaDeviceSynchronize());  // uploads and memsets ran on the legacy stream
    AttentionForward(c, q.get(), k.get(), v.get(), o.get(), lse.get(), opt.stream);
    AttentionBackward(c, q.get(), k.get(), v.get(), o.get(), d_o.get(), lse.get(), dq.get(), dk.get(), dv.get(),
                      dq_accum.get(), delta.get(), opt.stream);
    CUDA_OK(cudaStreamSynchronize(opt.stream));
    const Reference ref = ReferenceAttention(c, FromBf16(q16), FromBf16(k16), FromBf16(v16), FromBf16(do16));
    const std::string name = ShapeString(c);
    out.push_back(MakeCheck("attention_fwd", name + " O", RelativeError(FromBf16(o.Download()), ref.o), 2e-2));
    out.push_back(MakeCheck("attention_fwd", name + " L", RelativeError(lse.Download(), ref.lse), 1e-3));
    out.push_back(MakeCheck("attention_bwd", name + " dQ", RelativeError(FromBf16(dq.Download()), ref.dq), 3e-2));
    out.push_back(MakeCheck("attention_bwd", name + " dK", RelativeError(FromBf16(dk.Download()), ref.dk), 3e-2));
    out.push_back(MakeCheck("attention_bwd", name + " dV", RelativeError(FromBf16(dv.Download()), ref.dv), 3e-2));
  }
  return out;
}

// Normal(0, 1) bf16 values from a counter-based hash (never zero), for timing inputs too large to draw on the host.
__global__ void FillNormalBf16Kernel(bf16* x, size_t n, uint64_t seed) {
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    uint64_t z = seed + 0x9E3779B97F4A7C15ULL * (i + 1);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    const float u1 = (static_cast<float>(z >> 40) + 1.0f) * (1.0f / 16777216.0f);  // (0, 1]
    const float u2 = static_cast<float>((z >> 16) & 0xFFFFFF) * (1.0f / 16777216.0f);
    float val = sqrtf(-2.0f * logf(u1)) * cospif(2.0f * u2);
    if (val == 0.0f) val = 1e-3f;
    x[i] = __float2bfloat16(val);
  }
}

void FillNormal(DeviceBuffer<bf16>& buf, uint64_t seed, cudaStream_t stream) {
  const unsigned blocks = static_cast<unsigned>(std::min<size_t>((buf.size() + 255) / 256, 16384));
  FillNormalBf16Kernel<<<blocks, 256, 0, stream>>>(buf.get(), buf.size(), seed);
  CUDA_LAUNCH_OK();
}

std::vector<TimingRow> TimeAttention(const RunOptions& opt) {
  std::vector<AttentionShape> cases = {{2, 16, 16, 8192, 128, true}};
  if (!opt.quick) {
    cases.push_back({4, 32, 32, 4096, 64, true});
    cases.push_back({2, 64, 8, 8192, 128, true});
  }
  std::vector<TimingRow> rows;
  uint64_t seed = opt.seed * 7919ULL + 17;
  for (const AttentionShape& c : cases) {
    const size_t nq = static_cast<size_t>(c.batch) * c.seq * c.heads * c.head_dim;
    const size_t nkv = static_cast<size_t>(c.batch) * c.seq * c.kv_heads * c.head_dim;
    const size_t nl = static_cast<size_t>(c.batch) * c.heads * c.seq;
    const double elem = sizeof(bf16);
    const double fwd_bytes = elem * (2.0 * nq + 2.0 * nkv);             // Q, K, V read; O written
    const double bwd_bytes = elem * (3.0 * nq + 2.0 * nkv) + elem * (nq + 2.0 * nkv);  // Q,K,V,O,dO read; dQ,dK,dV written
    const double fwd_flops =
        4.0 * c.batch * c.heads * static_cast<double>(c.seq) * c.seq * c.head_dim * (c.causal ? 0.5 : 1.0);
    // Rotate over input sets when one set fits in L2 a few times over.
    const int sets = RotationCount(static_cast<size_t>(fwd_bytes), opt.l2_bytes);
    struct Set {
      DeviceBuffer<bf16> q, k, v, o, d_o;
      DeviceBuffer<float> lse;
    };
    std::vector<Set> in;
    for (int i = 0; i < sets; ++i) {
      Set s{DeviceBuffer<bf16>(nq), DeviceBuffer<bf16>(nkv), DeviceBuffer<bf16>(nkv), DeviceBuffer<bf16>(nq),
            DeviceBuffer<bf16>(nq), DeviceBuffer<float>(nl)};
      FillNormal(s.q, seed++, opt.stream);
      FillNormal(s.k, seed++, opt.stream);
      FillNormal(s.v, seed++, opt.stream);
      FillNormal(s.d_o, seed++, opt.stream);
      in.push_back(std::move(s));
    }
    DeviceBuffer<bf16> dq(nq), dk(nkv), dv(nkv);
    DeviceBuffer<float> dq_accum(nq), delta(nl);
    int cur = 0;
    auto fwd = [&] {
      Set& s = in[cur];
      cur = (cur + 1) % sets;
      AttentionForward(c, s.q.get(), s.k.get(), s.v.get(), s.o.get(), s.lse.get(), opt.stream);
    };
    auto bwd = [&] {
      Set& s = in[cur];
      cur = (cur + 1) % sets;
      AttentionBackward(c, s.q.get(), s.k.get(), s.v.get(), s.o.get(), s.d_o.get(), s.lse.get(), dq.get(), dk.get(),
                        dv.get(), dq_accum.get(), delta.get(), opt.stream);
    };
    const std::string shape = ShapeString(c);
    if (opt.progress) opt.progress("attention_fwd " + shape);
    const TimingResult tf = TimeKernel(fwd, opt.stream);
    // Every set now holds a real O and L for the backward.
    for (int i = 0; i < sets; ++i) fwd();
    if (opt.progress) opt.progress("attention_bwd " + shape);
    const TimingResult tb = TimeKernel(bwd, opt.stream);
    CUDA_OK(cudaStreamSynchronize(opt.stream));
    TimingRow rf;
    rf.kernel = "attention_fwd";
    rf.shape = shape;
    rf.bytes = fwd_bytes;
    rf.flops = fwd_flops;
    rf.median_us = tf.median_us;
    rf.min_us = tf.min_us;
    rows.push_back(rf);
    TimingRow rb;
    rb.kernel = "attention_bwd";
    rb.shape = shape;
    rb.bytes = bwd_bytes;
    rb.flops = 2.5 * fwd_flops;
    rb.median_us = tb.median_us;
    rb.min_us = tb.min_us;
    rows.push_back(rb);
  }
  return rows;
}

}  // namespace

KernelFamily AttentionFamily() {
  KernelFamily f;
  f.name = "attention";
  f.check = CheckAttention;
  f.time = TimeAttention;
  return f;
}

}  // namespace stacksim::kernels
