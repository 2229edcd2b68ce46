// Before anything is timed: is the GPU in use by another process? Looks with
// NVML (opened at run time; absent: skipped) at the processes holding a CUDA
// context and at the utilization before our first kernel, with
// cudaMemGetInfo at the memory in use, and times 16 identical fixed-work
// kernels, whose spread on an idle GPU is well under 5% (the verdict is
// calibrate/fit/stability.h's JudgeBusy). A busy GPU is probed again, up to
// three times two seconds apart; if it stays busy the run goes on, says so,
// and every measurement's own stability check (and retries) decides what is
// kept.
#ifndef STACKSIM_CALIBRATE_HARNESS_PREFLIGHT_H_
#define STACKSIM_CALIBRATE_HARNESS_PREFLIGHT_H_

#include <cuda_runtime.h>

#include "calibrate/fit/stability.h"
#include "calibrate/harness/log.h"

namespace stacksim::calibrate {

// REQUIRES: device 0 current, `stream` on it. `fault_busy` makes the probe
// read as noisy (fault injection). Throws CudaError when the probe cannot run.
BusyVerdict CheckGpuIdle(Log& log, const cudaDeviceProp& props, cudaStream_t stream, bool fault_busy);

}  // namespace stacksim::calibrate

#endif  // STACKSIM_CALIBRATE_HARNESS_PREFLIGHT_H_
