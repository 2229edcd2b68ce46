// The harness's own small device kernels: random fills (inputs are never
// zero: zeros hide unwritten outputs and can run faster than real data), the
// empty kernel the launch-overhead step launches, and a spin that keeps the
// device busy while the host queues a burst.
#ifndef STACKSIM_CALIBRATE_HARNESS_DEVICE_KERNELS_H_
#define STACKSIM_CALIBRATE_HARNESS_DEVICE_KERNELS_H_

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace stacksim::calibrate {

enum class FillKind { kBytes, kFp32, kBf16, kFp16, kFp8E4m3 };

size_t FillElementBytes(FillKind kind);

// Fills `count` elements at `dst` with values hashed from (seed, index):
// magnitudes uniform in [scale/16, scale], random sign; kBytes gives bytes
// 1..255. Enqueued on `stream`; throws CudaError on a launch failure.
void FillRandom(void* dst, size_t count, FillKind kind, uint64_t seed, float scale, cudaStream_t stream);

// An empty kernel, `void(int* sink)`, for cudaLaunchKernel with one argument
// that is always nullptr; it does nothing.
const void* EmptyKernel();

// Enqueues a kernel that spins for about `ns` nanoseconds of device time
// (read off %globaltimer).
void LaunchSpin(uint64_t ns, cudaStream_t stream);

// Enqueues a kernel of fixed work (not fixed time): `blocks` x 256 threads,
// each `iterations` dependent FMAs, result to `sink` (one float per block).
// Identical launches take identical times on an idle GPU; the preflight's
// busy probe times a row of them.
void LaunchFixedWork(float* sink, int blocks, int iterations, cudaStream_t stream);

}  // namespace stacksim::calibrate

#endif  // STACKSIM_CALIBRATE_HARNESS_DEVICE_KERNELS_H_
