// Which profile of profiles/ a calibration starts from when no --base is
// given: the values the harness does not measure (datasheet peaks, network
// curves with one GPU) are kept from it by the fit.
#ifndef STACKSIM_CALIBRATE_HARNESS_BASE_PROFILE_H_
#define STACKSIM_CALIBRATE_HARNESS_BASE_PROFILE_H_

#include <cstddef>
#include <string>

namespace stacksim::calibrate {

// The profile name (file stem under profiles/) for a CUDA device name such as
// "NVIDIA H200" or "NVIDIA A100-SXM4-80GB" and its memory; "" when none fits.
std::string BaseProfileName(const std::string& gpu_name, size_t memory_bytes);

}  // namespace stacksim::calibrate

#endif  // STACKSIM_CALIBRATE_HARNESS_BASE_PROFILE_H_
