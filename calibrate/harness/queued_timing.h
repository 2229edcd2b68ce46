// TimeQueuedSamples: kernels::TimeKernel (CUDA events around bursts, after
// warm-up, one sample per burst) with a device-side spin ahead of every sample, long
// enough for the host to queue the whole burst. Without it a burst of small
// operations (a 4 us GEMM, a 64 KiB copy) times the host's issue rate instead
// of the device, as tools/gpu/measure_torch.py also guarded against.
#ifndef STACKSIM_CALIBRATE_HARNESS_QUEUED_TIMING_H_
#define STACKSIM_CALIBRATE_HARNESS_QUEUED_TIMING_H_

#include <cuda_runtime.h>

#include <functional>
#include <vector>

#include "kernels/timing.h"

namespace stacksim::calibrate {

// fn() must enqueue its work on `stream`. Returns the opt.repeats samples,
// microseconds per call, unsorted: one try of StepContext::MeasureStable,
// which judges their spread and takes the median.
std::vector<double> TimeQueuedSamples(const std::function<void()>& fn, cudaStream_t stream,
                                      const kernels::TimingOptions& opt = {});

}  // namespace stacksim::calibrate

#endif  // STACKSIM_CALIBRATE_HARNESS_QUEUED_TIMING_H_
