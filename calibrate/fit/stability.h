// Whether a timing can be trusted: the verdict on the samples of one
// measurement (repeated bursts of the same work), the retry loop around it,
// and the verdict on the idle probe the harness runs before it measures
// anything (is another process using the GPU?). Plain C++, no CUDA: the
// harness feeds it samples, the tests feed it numbers.
//
// Spread is the robust coefficient of variation, 1.4826 x MAD / median (MAD:
// median absolute deviation; 1.4826 x MAD estimates the standard deviation of
// normal noise), so that one sample preempted by the host does not condemn a
// measurement whose median is sound, while a GPU shared with another process
// (time-sliced kernels: many slow samples) does. Units: samples in
// microseconds (any unit works; the spread has none).
#ifndef STACKSIM_CALIBRATE_FIT_STABILITY_H_
#define STACKSIM_CALIBRATE_FIT_STABILITY_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace stacksim::calibrate {

struct StabilityPolicy {
  double max_spread = 0.05;  // robust CV above this is unstable
  int min_samples = 3;       // fewer samples cannot be judged: unstable
  int max_tries = 3;         // measurements of one item, the first included
};

// Device timings (CUDA events around bursts of >= 0.5 ms): 5%. Host-side
// timings (launch issue rates) and collectives spread more by nature: 15%.
StabilityPolicy DeviceTimingPolicy();
StabilityPolicy HostTimingPolicy();

struct SampleStats {
  double median = 0, min = 0, max = 0;
  double cv = 0;      // plain coefficient of variation (stddev / mean)
  double spread = 0;  // robust: 1.4826 x MAD / median
  int count = 0;
};
// REQUIRES: !samples.empty(); all finite.
SampleStats Stats(std::vector<double> samples);

struct StabilityVerdict {
  bool stable = false;
  SampleStats stats;
  std::string why;  // "" when stable, else "spread 12.3% > 5%" or "2 samples < 3"
};
StabilityVerdict Judge(const std::vector<double>& samples, const StabilityPolicy& policy);

// For timings known only by their median and minimum (the kernel families of
// kernels/ report no samples): spread = (median - min) / median, unstable
// above max_gap. With 11 samples the median is slower than the fastest by
// more than max_gap only when half the samples are.
StabilityVerdict JudgeMedianMin(double median_us, double min_us, double max_gap = 0.10);

// The outcome of measuring one item up to policy.max_tries times.
struct StableMeasurement {
  std::vector<double> samples;  // of the kept try: the first stable one, else the least spread
  StabilityVerdict verdict;     // of the kept try
  int tries = 0;
  // "" when stable; else "unstable: spread 12.3% > 5% after 3 tries (best)".
  std::string Note() const;
};

// Calls measure() (one try: returns its samples) until a try is stable or
// policy.max_tries tries were made; exceptions from measure() propagate.
StableMeasurement MeasureUntilStable(const std::function<std::vector<double>()>& measure,
                                     const StabilityPolicy& policy);

// What the harness sees of the GPU before it times anything.
struct BusyObservation {
  std::optional<int> compute_processes;   // NVML: processes with a context on the GPU, ours included
  std::optional<int> utilization_pct;     // NVML: GPU busy share over its last sample period, before our work
  double memory_used_bytes = 0;           // cudaMemGetInfo: total - free, our context included
  std::vector<double> probe_us;           // identical fixed-work kernels, one sample each
};

struct BusyPolicy {
  double max_probe_spread = 0.05;              // robust CV of the probe kernels
  double max_probe_ratio = 1.25;               // slowest / fastest probe kernel
  int max_utilization_pct = 10;
  double max_memory_used_bytes = 4.0 * (1 << 30);  // our context holds < 1 GiB
};

struct BusyVerdict {
  bool busy = false;
  std::vector<std::string> reasons;  // each a sentence fragment: "3 processes hold a CUDA context"
  std::string Text() const;          // "idle" or the reasons joined with "; "
};
BusyVerdict JudgeBusy(const BusyObservation& o, const BusyPolicy& policy = {});

// "12.3%".
std::string PercentText(double share);

}  // namespace stacksim::calibrate

#endif  // STACKSIM_CALIBRATE_FIT_STABILITY_H_
