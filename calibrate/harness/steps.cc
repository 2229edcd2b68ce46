#include "calibrate/harness/steps.h"

#include <filesystem>

#include "calibrate/harness/csv.h"

namespace stacksim::calibrate {

std::string StepContext::RawPath(const std::string& file) const {
  return (std::filesystem::path(options->raw_dir) / file).string();
}

StableMeasurement StepContext::MeasureStable(const std::function<std::vector<double>()>& measure,
                                            const StabilityPolicy& policy, const std::string& what) {
  bool noisy = Fault("busy") && noisy_left > 0;
  if (noisy) --noisy_left;
  StableMeasurement m = MeasureUntilStable(
      [&] {
        std::vector<double> samples = measure();
        // Fault "busy": sample i takes 50% x i longer, as growing contention would make it
        // (a spread of ~50%, far above any threshold, also over host timings that fall
        // while they warm up: at 15% x i, a launch burst on the H200 judged stable).
        if (noisy) {
          for (size_t i = 0; i < samples.size(); ++i) samples[i] *= 1.0 + 0.5 * static_cast<double>(i);
        }
        return samples;
      },
      policy);
  if (m.tries > 1 && m.verdict.stable) log->Line(what + ": stable on try " + std::to_string(m.tries));
  RecordVerdict(m.verdict, what + (m.verdict.stable ? "" : " after " + std::to_string(m.tries) + " tries"));
  return m;
}

void StepContext::RecordVerdict(const StabilityVerdict& verdict, const std::string& what) {
  if (section != nullptr) {
    ++section->measured;
    if (!verdict.stable) ++section->unstable;
  }
  if (!verdict.stable) log->Line(what + ": UNSTABLE (" + verdict.why + "); the row is marked stable=0 and not fitted");
}

std::vector<std::string> StabilityCells(const StabilityVerdict& v) {
  return {Num(v.stats.spread), v.stable ? "1" : "0"};
}

bool CudaContextUsable(std::string* why) {
  // A plain error is returned once and then cleared; a sticky one (illegal
  // address, launch failure) keeps coming back from every call.
  cudaDeviceSynchronize();
  cudaGetLastError();
  cudaError_t e = cudaDeviceSynchronize();
  void* probe = nullptr;
  if (e == cudaSuccess) e = cudaMalloc(&probe, 256);
  if (probe != nullptr) cudaFree(probe);
  if (e == cudaSuccess) return true;
  cudaGetLastError();
  if (why != nullptr) *why = cudaGetErrorString(e);
  return false;
}

}  // namespace stacksim::calibrate
