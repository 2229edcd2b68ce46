// The calibration steps (docs/calibrate.md) and what they share. Each step
// writes its own files under the raw folder as it goes, logs what it skipped
// and why, stops starting new measurements once its deadline has passed, and
// throws (CudaError or another std::exception) only when it cannot go on.
#ifndef STACKSIM_CALIBRATE_HARNESS_STEPS_H_
#define STACKSIM_CALIBRATE_HARNESS_STEPS_H_

#include <cuda_runtime.h>

#include <cstddef>
#include <string>
#include <vector>

#include "calibrate/harness/cupti_recorder.h"
#include "calibrate/harness/log.h"
#include "calibrate/harness/options.h"

namespace stacksim::calibrate {

// The GPU the harness measures (device 0) and how many are visible.
struct DeviceInfo {
  int device_count = 0;
  cudaDeviceProp props{};
  size_t l2_bytes = 0;
  int cc_major = 0, cc_minor = 0;
};

struct StepContext {
  const Options* options = nullptr;
  Log* log = nullptr;
  DeviceInfo device;
  cudaStream_t stream = nullptr;  // non-blocking, on device 0
  std::string tag;                // "[5/8] gemm": prefix of progress lines
  Deadline deadline;              // stop starting new measurements after this
  // Set by the steps:
  bool stopped_early = false;     // a sweep was cut at the deadline
  int checks_failed = 0;          // correctness checks that failed (kernels, attention)
  int items_failed = 0;           // single measurements that failed and were skipped

  std::string RawPath(const std::string& file) const;
  bool quick() const { return options->quick; }
};

void RunEnvStep(StepContext& ctx);
void RunKernelsStep(StepContext& ctx);    // every kernel family except attention
void RunCopyStep(StepContext& ctx);
void RunLaunchStep(StepContext& ctx);
void RunGemmStep(StepContext& ctx);
void RunAttentionStep(StepContext& ctx);  // the attention kernel family; also attention.csv
void RunNcclStep(StepContext& ctx);

// Appends CUPTI's kernel durations and gaps to launch.csv as the metrics
// cupti_<prefix>kernel_us and cupti_<prefix>gap_us.
void WriteCuptiRows(StepContext& ctx, const std::string& prefix, const std::vector<KernelSpan>& spans);

// Whether CUDA still works after an error (a sticky error such as an illegal
// address poisons the context for the rest of the process); *why says how not.
bool CudaContextUsable(std::string* why);

}  // namespace stacksim::calibrate

#endif  // STACKSIM_CALIBRATE_HARNESS_STEPS_H_
