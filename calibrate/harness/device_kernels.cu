#include "calibrate/harness/device_kernels.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <algorithm>

#include "kernels/cuda_check.h"

namespace stacksim::calibrate {

namespace {

__device__ __forceinline__ uint64_t SplitMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Magnitude in [1/16, 1], sign from the low bit: never zero, representable
// as a normal number in every format we fill (fp8 e4m3's smallest normal is 2^-6).
__device__ __forceinline__ float HashValue(uint64_t seed, size_t i) {
  uint64_t h = SplitMix64(seed ^ SplitMix64(i));
  float mag = 0.0625f + 0.9375f * static_cast<float>(h >> 40) * (1.0f / 16777216.0f);
  return (h & 1) ? -mag : mag;
}

template <typename T>
__global__ void FillKernel(T* dst, size_t count, uint64_t seed, float scale) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    dst[i] = T(HashValue(seed, i) * scale);
  }
}

__global__ void FillBytesKernel(uint8_t* dst, size_t count, uint64_t seed) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    dst[i] = static_cast<uint8_t>(1 + SplitMix64(seed ^ SplitMix64(i)) % 255);
  }
}

__global__ void EmptyKernelImpl(int* sink) {
  if (sink != nullptr && threadIdx.x == 1024) *sink = 1;  // never true; keeps the kernel
}

__global__ void SpinKernel(uint64_t ns) {
  uint64_t start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}

}  // namespace

size_t FillElementBytes(FillKind kind) {
  switch (kind) {
    case FillKind::kBytes:
    case FillKind::kFp8E4m3:
      return 1;
    case FillKind::kBf16:
    case FillKind::kFp16:
      return 2;
    case FillKind::kFp32:
      return 4;
  }
  return 1;
}

void FillRandom(void* dst, size_t count, FillKind kind, uint64_t seed, float scale, cudaStream_t stream) {
  if (count == 0) return;
  constexpr int kThreads = 256;
  unsigned blocks = static_cast<unsigned>(std::min<size_t>((count + kThreads - 1) / kThreads, 65536));
  switch (kind) {
    case FillKind::kBytes:
      FillBytesKernel<<<blocks, kThreads, 0, stream>>>(static_cast<uint8_t*>(dst), count, seed);
      break;
    case FillKind::kFp32:
      FillKernel<float><<<blocks, kThreads, 0, stream>>>(static_cast<float*>(dst), count, seed, scale);
      break;
    case FillKind::kBf16:
      FillKernel<__nv_bfloat16><<<blocks, kThreads, 0, stream>>>(static_cast<__nv_bfloat16*>(dst), count, seed, scale);
      break;
    case FillKind::kFp16:
      FillKernel<__half><<<blocks, kThreads, 0, stream>>>(static_cast<__half*>(dst), count, seed, scale);
      break;
    case FillKind::kFp8E4m3:
      FillKernel<__nv_fp8_e4m3><<<blocks, kThreads, 0, stream>>>(static_cast<__nv_fp8_e4m3*>(dst), count, seed, scale);
      break;
  }
  CUDA_LAUNCH_OK();
}

__global__ void FixedWorkKernel(float* sink, int iterations) {
  float a = 1.0f + threadIdx.x * 1e-7f, b = 0.999999f, c = 1e-7f;
  for (int i = 0; i < iterations; ++i) a = fmaf(a, b, c);
  if (a == 12345.0f) sink[blockIdx.x] = a;  // never true; keeps the loop alive
}

void LaunchFixedWork(float* sink, int blocks, int iterations, cudaStream_t stream) {
  FixedWorkKernel<<<blocks, 256, 0, stream>>>(sink, iterations);
  CUDA_LAUNCH_OK();
}

const void* EmptyKernel() { return reinterpret_cast<const void*>(&EmptyKernelImpl); }

void LaunchSpin(uint64_t ns, cudaStream_t stream) {
  SpinKernel<<<1, 1, 0, stream>>>(ns);
  CUDA_LAUNCH_OK();
}

}  // namespace stacksim::calibrate
