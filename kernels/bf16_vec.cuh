// 16-byte vectors of eight bf16 values and warp reductions, shared by the
// memory-bound kernels (norm.cu, softmax.cu, activation.cu, rope.cu).
#ifndef STACKSIM_KERNELS_BF16_VEC_CUH_
#define STACKSIM_KERNELS_BF16_VEC_CUH_

#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace stacksim::kernels {

inline constexpr int kPack = 8;  // bf16 per 16-byte access

__device__ __forceinline__ void Unpack(const uint4& u, float (&f)[kPack]) {
  const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&u);
#pragma unroll
  for (int i = 0; i < kPack / 2; ++i) {
    const float2 p = __bfloat1622float2(h[i]);
    f[2 * i] = p.x;
    f[2 * i + 1] = p.y;
  }
}

__device__ __forceinline__ uint4 Pack(const float (&f)[kPack]) {
  uint4 u;
  __nv_bfloat162* h = reinterpret_cast<__nv_bfloat162*>(&u);
#pragma unroll
  for (int i = 0; i < kPack / 2; ++i) h[i] = __floats2bfloat162_rn(f[2 * i], f[2 * i + 1]);
  return u;
}

// A 16-byte load of data read once: it skips L1, so that small tables read
// by every thread (gamma, beta, biases) stay there.
__device__ __forceinline__ uint4 LoadStreaming(const uint4* p) {
#if defined(__CUDA_ARCH__)
  uint4 v;
  asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "l"(p));
  return v;
#else
  return __ldg(p);
#endif
}

__device__ __forceinline__ float WarpSum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

}  // namespace stacksim::kernels

#endif  // STACKSIM_KERNELS_BF16_VEC_CUH_
