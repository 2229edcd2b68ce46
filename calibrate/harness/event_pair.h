// Two CUDA events around a region of a stream's work, destroyed on every
// exit path (a CudaError leaves the step, not the process).
#ifndef STACKSIM_CALIBRATE_HARNESS_EVENT_PAIR_H_
#define STACKSIM_CALIBRATE_HARNESS_EVENT_PAIR_H_

#include <cuda_runtime.h>

#include "kernels/cuda_check.h"

namespace stacksim::calibrate {

struct EventPair {
  cudaEvent_t start = nullptr;
  cudaEvent_t stop = nullptr;

  EventPair() {
    CUDA_OK(cudaEventCreate(&start));
    try {
      CUDA_OK(cudaEventCreate(&stop));
    } catch (...) {
      cudaEventDestroy(start);
      throw;
    }
  }
  ~EventPair() {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }
  EventPair(const EventPair&) = delete;
  EventPair& operator=(const EventPair&) = delete;

  // REQUIRES: both events recorded and `stop` complete.
  double ElapsedUs() const {
    float ms = 0;
    CUDA_OK(cudaEventElapsedTime(&ms, start, stop));
    return ms * 1000.0;
  }
};

}  // namespace stacksim::calibrate

#endif  // STACKSIM_CALIBRATE_HARNESS_EVENT_PAIR_H_
