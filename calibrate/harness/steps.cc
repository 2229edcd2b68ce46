#include "calibrate/harness/steps.h"

#include <filesystem>

namespace stacksim::calibrate {

std::string StepContext::RawPath(const std::string& file) const {
  return (std::filesystem::path(options->raw_dir) / file).string();
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
