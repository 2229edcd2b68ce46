// Error checking for CUDA runtime calls in the harness and kernels.
//
// CUDA_OK(call) throws CudaError with the call, file, line and CUDA's message;
// CUDA_LAUNCH_OK() checks the last kernel launch. Nothing in the harness may
// ignore a CUDA return code.
#ifndef STACKSIM_KERNELS_CUDA_CHECK_H_
#define STACKSIM_KERNELS_CUDA_CHECK_H_

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace stacksim::kernels {

class CudaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline void CheckCuda(cudaError_t err, const char* what, const char* file, int line) {
  if (err != cudaSuccess) {
    throw CudaError(std::string(what) + " failed at " + file + ":" + std::to_string(line) + ": " +
                    cudaGetErrorString(err));
  }
}

}  // namespace stacksim::kernels

#define CUDA_OK(call) ::stacksim::kernels::CheckCuda((call), #call, __FILE__, __LINE__)
#define CUDA_LAUNCH_OK() ::stacksim::kernels::CheckCuda(cudaGetLastError(), "kernel launch", __FILE__, __LINE__)

#endif  // STACKSIM_KERNELS_CUDA_CHECK_H_
