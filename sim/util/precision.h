// Number formats a tensor or a kernel runs in. Shared by the profile (peak
// rate per precision), the trace (a compute task's precision) and the plans.
#ifndef STACKSIM_SIM_UTIL_PRECISION_H_
#define STACKSIM_SIM_UTIL_PRECISION_H_

namespace stacksim {

enum class Precision { kFp32, kTf32, kBf16, kFp16, kFp8 };
inline constexpr int kNumPrecisions = 5;

inline const char* PrecisionName(Precision p) {
  switch (p) {
    case Precision::kFp32: return "fp32";
    case Precision::kTf32: return "tf32";
    case Precision::kBf16: return "bf16";
    case Precision::kFp16: return "fp16";
    case Precision::kFp8: return "fp8";
  }
  return "?";
}

// Bytes per element of a tensor stored in this precision.
inline double PrecisionBytes(Precision p) {
  switch (p) {
    case Precision::kFp32: return 4;
    case Precision::kTf32: return 4;  // TF32 is an fp32 tensor fed to tensor cores
    case Precision::kBf16: return 2;
    case Precision::kFp16: return 2;
    case Precision::kFp8: return 1;
  }
  return 0;
}

}  // namespace stacksim

#endif  // STACKSIM_SIM_UTIL_PRECISION_H_
