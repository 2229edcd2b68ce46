// Kernel-only durations from CUPTI's activity API (CUPTI_ACTIVITY_KIND_
// CONCURRENT_KERNEL): the device's start and end timestamps of each kernel,
// so the idle gap between consecutive kernels can be read off as well. Built
// without CUPTI (no STACKSIM_HAVE_CUPTI), Start() says so and records nothing.
#ifndef STACKSIM_CALIBRATE_HARNESS_CUPTI_RECORDER_H_
#define STACKSIM_CALIBRATE_HARNESS_CUPTI_RECORDER_H_

#include <cstdint>
#include <string>
#include <vector>

namespace stacksim::calibrate {

struct KernelSpan {
  uint64_t start_ns = 0;  // device timestamps
  uint64_t end_ns = 0;
  std::string name;       // mangled kernel name
};

// Records every kernel the process runs between Start() and Stop(). CUPTI's
// buffer callbacks are process-wide C functions, so at most one recorder may
// be started at a time (Start refuses a second).
class KernelActivityRecorder {
 public:
  KernelActivityRecorder() = default;
  ~KernelActivityRecorder();
  KernelActivityRecorder(const KernelActivityRecorder&) = delete;
  KernelActivityRecorder& operator=(const KernelActivityRecorder&) = delete;

  // False, with *why, when CUPTI cannot record (not built in, no permission, ...).
  bool Start(std::string* why);
  // REQUIRES: the recorded work has finished (synchronize first). Returns the
  // kernels sorted by start time; empty when not started.
  std::vector<KernelSpan> Stop();

 private:
  bool active_ = false;
  std::vector<KernelSpan> spans_;
};

// Durations of the spans, and the gaps from each kernel's end to the next
// one's start (negative overlaps count as 0), in microseconds.
std::vector<double> KernelDurationsUs(const std::vector<KernelSpan>& spans);
std::vector<double> KernelGapsUs(const std::vector<KernelSpan>& spans);

}  // namespace stacksim::calibrate

#endif  // STACKSIM_CALIBRATE_HARNESS_CUPTI_RECORDER_H_
