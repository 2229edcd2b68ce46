// Timing GPU work: CUDA events around bursts, after warm-up, median of repeats.
//
// TimeKernel(fn) calls fn() (which must enqueue GPU work on `stream`) first
// `warmup` times, then `repeats` samples of `inner` back-to-back calls, each
// sample bracketed by CUDA events, and returns per-call microseconds. `inner`
// grows until one sample lasts at least ~0.5 ms, so event resolution and
// launch jitter stay small. Callers rotate their inputs inside fn() so that a
// working set larger than L2 is touched (see RotatingBuffers).
#ifndef STACKSIM_KERNELS_TIMING_H_
#define STACKSIM_KERNELS_TIMING_H_

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

#include "kernels/cuda_check.h"
#include "sim/util/statistics.h"

namespace stacksim::kernels {

struct TimingResult {
  double median_us = 0;  // the high median of the repeats
  double min_us = 0;
  double max_us = 0;
  int calls = 0;  // timed calls in all samples
};

struct TimingOptions {
  int warmup = 3;
  int repeats = 11;
  double min_sample_us = 500;
};

inline TimingResult TimeKernel(const std::function<void()>& fn, cudaStream_t stream, const TimingOptions& opt = {}) {
  cudaEvent_t start, stop;
  CUDA_OK(cudaEventCreate(&start));
  CUDA_OK(cudaEventCreate(&stop));
  for (int i = 0; i < opt.warmup; ++i) fn();
  CUDA_OK(cudaStreamSynchronize(stream));
  // Probe one call to size the bursts.
  CUDA_OK(cudaEventRecord(start, stream));
  fn();
  CUDA_OK(cudaEventRecord(stop, stream));
  CUDA_OK(cudaEventSynchronize(stop));
  float probe_ms = 0;
  CUDA_OK(cudaEventElapsedTime(&probe_ms, start, stop));
  int inner = std::max(1, std::min(1000, static_cast<int>(opt.min_sample_us / std::max(1.0, probe_ms * 1000.0)) + 1));
  std::vector<double> samples;
  for (int r = 0; r < opt.repeats; ++r) {
    CUDA_OK(cudaEventRecord(start, stream));
    for (int i = 0; i < inner; ++i) fn();
    CUDA_OK(cudaEventRecord(stop, stream));
    CUDA_OK(cudaEventSynchronize(stop));
    CUDA_LAUNCH_OK();
    float ms = 0;
    CUDA_OK(cudaEventElapsedTime(&ms, start, stop));
    samples.push_back(ms * 1000.0 / inner);
  }
  CUDA_OK(cudaEventDestroy(start));
  CUDA_OK(cudaEventDestroy(stop));
  std::sort(samples.begin(), samples.end());
  TimingResult out;
  out.median_us = HighMedian(samples);  // a sample that was measured (sim/util/statistics.h)
  out.min_us = samples.front();
  out.max_us = samples.back();
  out.calls = inner * opt.repeats;
  return out;
}

// How many copies of a working set of `bytes` to rotate through so that the
// total exceeds `l2_bytes` several times over (at least 1, at most 16).
inline int RotationCount(size_t bytes, size_t l2_bytes) {
  size_t want = 4 * l2_bytes;
  size_t n = bytes == 0 ? 16 : (want + bytes - 1) / bytes;
  return static_cast<int>(std::max<size_t>(1, std::min<size_t>(16, n)));
}

}  // namespace stacksim::kernels

#endif  // STACKSIM_KERNELS_TIMING_H_
