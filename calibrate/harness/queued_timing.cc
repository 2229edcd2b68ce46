#include "calibrate/harness/queued_timing.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "calibrate/harness/device_kernels.h"
#include "calibrate/harness/event_pair.h"
#include "kernels/cuda_check.h"

namespace stacksim::calibrate {

std::vector<double> TimeQueuedSamples(const std::function<void()>& fn, cudaStream_t stream,
                                      const kernels::TimingOptions& opt) {
  EventPair ev;
  for (int i = 0; i < opt.warmup; ++i) fn();
  CUDA_OK(cudaStreamSynchronize(stream));
  CUDA_LAUNCH_OK();
  // Probe one call to size the bursts.
  CUDA_OK(cudaEventRecord(ev.start, stream));
  fn();
  CUDA_OK(cudaEventRecord(ev.stop, stream));
  CUDA_OK(cudaEventSynchronize(ev.stop));
  double probe_us = ev.ElapsedUs();
  int inner = std::max(1, std::min(1000, static_cast<int>(opt.min_sample_us / std::max(1.0, probe_us)) + 1));
  // One untimed burst measures the host's issue time per call.
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < inner; ++i) fn();
  double host_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  CUDA_OK(cudaStreamSynchronize(stream));
  // Spin only when the host is the slower side; 25% margin, at most 50 ms.
  double device_us = probe_us * inner;
  uint64_t spin_ns = host_us > 0.5 * device_us
                         ? static_cast<uint64_t>(std::min(50000.0, 1.25 * host_us + 20.0) * 1000.0)
                         : 0;
  std::vector<double> samples;
  for (int r = 0; r < opt.repeats; ++r) {
    if (spin_ns > 0) LaunchSpin(spin_ns, stream);
    CUDA_OK(cudaEventRecord(ev.start, stream));
    for (int i = 0; i < inner; ++i) fn();
    CUDA_OK(cudaEventRecord(ev.stop, stream));
    CUDA_OK(cudaEventSynchronize(ev.stop));
    CUDA_LAUNCH_OK();
    samples.push_back(ev.ElapsedUs() / inner);
  }
  return samples;
}

}  // namespace stacksim::calibrate
