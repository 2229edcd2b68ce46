#include "calibrate/fit/gpu_support.h"

namespace stacksim::calibrate {

std::string NoKernelImageMessage(const std::string& gpu_name, int major, int minor, const std::string& built) {
  std::string cc = std::to_string(major) + "." + std::to_string(minor);
  std::string arch = std::to_string(major * 10 + minor);
  return "stacksim calibrate: " + gpu_name + " has compute capability " + cc + ", but this harness was built for " +
         "CUDA architectures " + (built.empty() ? "(unknown)" : built) + " (no kernel image for " + cc +
         "): rebuild with -DCMAKE_CUDA_ARCHITECTURES=" + arch + " (tools/gpu/run_calibrate.sh: CUDA_ARCHS=" + arch +
         "); nothing measured";
}

std::string CudaVersionText(int version) {
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

std::string DriverTooOldMessage(int driver_version, int runtime_version) {
  return "stacksim calibrate: the NVIDIA driver supports CUDA up to " + CudaVersionText(driver_version) +
         ", older than the CUDA " + CudaVersionText(runtime_version) +
         " this harness was built with: update the driver, or rebuild the harness with a CUDA toolkit of at most " +
         CudaVersionText(driver_version) + " (CUDACXX=/path/to/that/nvcc tools/gpu/run_calibrate.sh); nothing measured";
}

}  // namespace stacksim::calibrate
