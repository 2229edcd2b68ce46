#include "calibrate/fit/stability.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "sim/util/statistics.h"

namespace stacksim::calibrate {

std::string PercentText(double share) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100 * share);
  return buf;
}

StabilityPolicy DeviceTimingPolicy() { return StabilityPolicy{}; }

StabilityPolicy HostTimingPolicy() {
  StabilityPolicy p;
  p.max_spread = 0.15;
  return p;
}

SampleStats Stats(std::vector<double> samples) {
  SampleStats s;
  s.count = static_cast<int>(samples.size());
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  s.min = samples.front();
  s.max = samples.back();
  s.median = Median(samples);  // the mean of the two middle values (sim/util/statistics.h)
  double mean = 0;
  for (double x : samples) mean += x;
  mean /= s.count;
  double var = 0;
  for (double x : samples) var += (x - mean) * (x - mean);
  var = s.count > 1 ? var / (s.count - 1) : 0;
  s.cv = mean > 0 ? std::sqrt(var) / mean : 0;
  std::vector<double> dev;
  for (double x : samples) dev.push_back(std::fabs(x - s.median));
  s.spread = s.median > 0 ? 1.4826 * Median(Sorted(dev)) / s.median : 0;
  return s;
}

StabilityVerdict Judge(const std::vector<double>& samples, const StabilityPolicy& policy) {
  StabilityVerdict v;
  v.stats = Stats(samples);
  for (double x : samples) {
    if (!std::isfinite(x) || x < 0) {
      v.why = "a sample is not a finite, non-negative time";
      return v;
    }
  }
  if (v.stats.count < policy.min_samples) {
    v.why = std::to_string(v.stats.count) + " samples < " + std::to_string(policy.min_samples);
  } else if (!(v.stats.median > 0)) {
    v.why = "median time is zero";
  } else if (v.stats.spread > policy.max_spread) {
    v.why = "spread " + PercentText(v.stats.spread) + " > " + PercentText(policy.max_spread);
  } else {
    v.stable = true;
  }
  return v;
}

StabilityVerdict JudgeMedianMin(double median_us, double min_us, double max_gap) {
  StabilityVerdict v;
  v.stats.median = median_us;
  v.stats.min = min_us;
  v.stats.count = 2;
  if (!(median_us > 0) || !(min_us > 0) || min_us > median_us || !std::isfinite(median_us)) {
    v.why = "median and minimum are not times with 0 < min <= median";
    return v;
  }
  v.stats.spread = (median_us - min_us) / median_us;
  if (v.stats.spread > max_gap) {
    v.why = "median " + PercentText(v.stats.spread) + " above the minimum (> " + PercentText(max_gap) + ")";
  } else {
    v.stable = true;
  }
  return v;
}

std::string StableMeasurement::Note() const {
  if (verdict.stable) return "";
  return "unstable: " + verdict.why + " after " + std::to_string(tries) + (tries == 1 ? " try" : " tries") +
         (tries > 1 ? " (the least spread kept)" : "");
}

StableMeasurement MeasureUntilStable(const std::function<std::vector<double>()>& measure,
                                     const StabilityPolicy& policy) {
  StableMeasurement best;
  bool have = false;
  int tries = std::max(1, policy.max_tries);
  for (int t = 1; t <= tries; ++t) {
    std::vector<double> samples = measure();
    StabilityVerdict v = Judge(samples, policy);
    bool better = !have || v.stable || v.stats.spread < best.verdict.stats.spread;
    if (better) {
      best.samples = std::move(samples);
      best.verdict = v;
      have = true;
    }
    best.tries = t;
    if (v.stable) break;
  }
  return best;
}

std::string BusyVerdict::Text() const {
  if (reasons.empty()) return "idle";
  std::string out;
  for (const std::string& r : reasons) out += (out.empty() ? "" : "; ") + r;
  return out;
}

BusyVerdict JudgeBusy(const BusyObservation& o, const BusyPolicy& policy) {
  BusyVerdict v;
  // Our own process counts as one when the driver shows it (it may not,
  // from inside a container's PID namespace).
  if (o.compute_processes && *o.compute_processes > 1) {
    v.reasons.push_back(std::to_string(*o.compute_processes) + " processes hold a CUDA context on the GPU (ours is one)");
  }
  if (o.utilization_pct && *o.utilization_pct > policy.max_utilization_pct) {
    v.reasons.push_back("utilization " + std::to_string(*o.utilization_pct) + "% before any work of ours (> " +
                        std::to_string(policy.max_utilization_pct) + "%)");
  }
  if (o.memory_used_bytes > policy.max_memory_used_bytes) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "%.1f GiB of device memory in use (ours < 1 GiB)",
                  o.memory_used_bytes / (1024.0 * 1024 * 1024));
    v.reasons.push_back(buf);
  }
  if (!o.probe_us.empty()) {
    SampleStats s = Stats(o.probe_us);
    if (s.spread > policy.max_probe_spread) {
      v.reasons.push_back("identical probe kernels spread " + PercentText(s.spread) + " (> " +
                          PercentText(policy.max_probe_spread) + ")");
    } else if (s.min > 0 && s.max / s.min > policy.max_probe_ratio) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "the slowest identical probe kernel took %.2fx the fastest (> %.2fx)",
                    s.max / s.min, policy.max_probe_ratio);
      v.reasons.push_back(buf);
    }
  }
  v.busy = !v.reasons.empty();
  return v;
}

}  // namespace stacksim::calibrate
