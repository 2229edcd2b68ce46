// The calibration steps (docs/calibrate.md) and what they share. Each step
// writes its own files under the raw folder as it goes, logs what it skipped
// and why, stops starting new measurements once its deadline has passed, and
// throws (CudaError or another std::exception) only when it cannot go on.
#ifndef STACKSIM_CALIBRATE_HARNESS_STEPS_H_
#define STACKSIM_CALIBRATE_HARNESS_STEPS_H_

#include <cuda_runtime.h>

#include <cstddef>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "calibrate/fit/run_outcome.h"
#include "calibrate/fit/stability.h"
#include "calibrate/harness/cupti_recorder.h"
#include "calibrate/harness/log.h"
#include "calibrate/harness/options.h"

namespace stacksim::calibrate {

// The GPU the harness measures (device 0) and how many are visible.
struct DeviceInfo {
  int device_count = 0;  // visible
  int gpus = 1;          // used by the collectives: min(--gpus, visible), all visible without --gpus
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
  SectionOutcome* section = nullptr;          // this step's record in outcome.json (counts rows, unstable ones)
  const std::set<std::string>* faults = nullptr;  // injected faults (STACKSIM_CALIBRATE_FAULT)
  int noisy_left = 2;             // fault "busy": timings of this step still to be made noisy
  bool expected_gap = false;      // not_measurable for what the machine is (one GPU, no NCCL built in), no failure

  std::string RawPath(const std::string& file) const;
  bool quick() const { return options->quick; }
  bool Fault(const char* name) const { return faults != nullptr && faults->count(name) > 0; }

  // One measurement, retried while its samples spread more than the policy
  // allows (calibrate/fit/stability.h); counts the row in `section` and logs
  // it when it stays unstable. `what` names it in the log.
  StableMeasurement MeasureStable(const std::function<std::vector<double>()>& measure, const StabilityPolicy& policy,
                                  const std::string& what);
  // A verdict reached without retries (launch metrics, kernel families): counted and logged alike.
  void RecordVerdict(const StabilityVerdict& verdict, const std::string& what);
};

// The `spread` and `stable` cells of a raw CSV row.
std::vector<std::string> StabilityCells(const StabilityVerdict& v);
inline const std::vector<std::string> kStabilityColumns = {"spread", "stable"};

void RunEnvStep(StepContext& ctx);
void RunKernelsStep(StepContext& ctx);    // every kernel family except attention
void RunCopyStep(StepContext& ctx);
void RunLaunchStep(StepContext& ctx);
void RunGemmStep(StepContext& ctx);
void RunAttentionStep(StepContext& ctx);  // the attention kernel family; also attention.csv
void RunNcclStep(StepContext& ctx);
// The step check's layers (calibrate/fit/step_shapes.h): step_measured.csv.
void RunStepCheckStep(StepContext& ctx);

// Appends CUPTI's kernel durations and gaps to launch.csv as the metrics
// cupti_<prefix>kernel_us and cupti_<prefix>gap_us.
void WriteCuptiRows(StepContext& ctx, const std::string& prefix, const std::vector<KernelSpan>& spans);

// Whether CUDA still works after an error (a sticky error such as an illegal
// address poisons the context for the rest of the process); *why says how not.
bool CudaContextUsable(std::string* why);

}  // namespace stacksim::calibrate

#endif  // STACKSIM_CALIBRATE_HARNESS_STEPS_H_
