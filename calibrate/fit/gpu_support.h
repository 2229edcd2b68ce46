// The one-line errors of a harness that cannot run on the GPU it finds: a GPU
// whose compute capability the build holds no kernel image for (CUDA's "no
// kernel image is available for execution on the device"), and a driver
// older than the CUDA toolkit the harness was built with ("CUDA driver
// version is insufficient for CUDA runtime version"). Plain C++, so that the
// wording is tested on a CPU; the harness (main.cc) calls these.
#ifndef STACKSIM_CALIBRATE_FIT_GPU_SUPPORT_H_
#define STACKSIM_CALIBRATE_FIT_GPU_SUPPORT_H_

#include <string>

namespace stacksim::calibrate {

// `built`: the CUDA architectures the harness was built for, as CMake lists
// them ("80,90a"). The harness learns that the build lacks the GPU's
// architecture by asking CUDA for a kernel's attributes (main.cc), which
// fails with cudaErrorNoKernelImageForDevice; this is the line it prints:
// "stacksim calibrate: <gpu> has compute capability 12.0, but this harness
// was built for CUDA architectures 80,90a (no kernel image for 12.0): rebuild with
// -DCMAKE_CUDA_ARCHITECTURES=120 (tools/gpu/run_calibrate.sh: CUDA_ARCHS=120)".
std::string NoKernelImageMessage(const std::string& gpu_name, int major, int minor, const std::string& built);

// Versions as CUDA encodes them (1000 x major + 10 x minor: 12080 is 12.8).
// REQUIRES: driver_version > 0 (a driver is installed).
std::string DriverTooOldMessage(int driver_version, int runtime_version);

// "12.8" from 12080.
std::string CudaVersionText(int version);

}  // namespace stacksim::calibrate

#endif  // STACKSIM_CALIBRATE_FIT_GPU_SUPPORT_H_
