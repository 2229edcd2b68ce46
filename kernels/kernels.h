// Our own fused CUDA kernels, as calibrate runs them: each family checks its
// correctness against a higher-precision CPU reference on fresh random inputs
// before it is timed, and reports achieved bandwidth or FLOP/s.
//
// The harness (calibrate/) sees only this registry; each family lives in its
// own .cu file and registers itself in kernels.cc's list.
#ifndef STACKSIM_KERNELS_KERNELS_H_
#define STACKSIM_KERNELS_KERNELS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <cuda_runtime.h>

namespace stacksim::kernels {

struct CheckResult {
  std::string kernel;     // "rmsnorm_residual"
  std::string case_name;  // "bf16 rows=4096 cols=5120"
  double rel_error = 0;   // ||out - ref|| / ||ref|| (NaN counts as failure)
  double tolerance = 0;
  bool ok = false;
};

struct TimingRow {
  std::string kernel;     // "rmsnorm_residual"
  std::string shape;      // "bf16 rows=16384 cols=8192"
  double bytes = 0;       // device-memory traffic, each input read once and each output written once
  double flops = 0;       // 0 for memory-bound kernels
  double median_us = 0;
  double min_us = 0;
};

struct RunOptions {
  bool quick = false;
  uint64_t seed = 0;      // inputs are drawn fresh from this seed for every check
  size_t l2_bytes = 0;    // to size rotating buffers
  cudaStream_t stream = nullptr;
  std::function<void(const std::string&)> progress;  // one line per step (may be empty)
};

// A kernel family: its checks (run first) and its timings (run only if every check passed).
struct KernelFamily {
  std::string name;
  std::function<std::vector<CheckResult>(const RunOptions&)> check;
  std::function<std::vector<TimingRow>(const RunOptions&)> time;
};

// Every family, in the order calibrate runs them.
std::vector<KernelFamily> AllKernelFamilies();

// Families register here (one function per .cu file).
KernelFamily NormFamily();          // RMSNorm and LayerNorm fused with the residual add
KernelFamily SoftmaxFamily();       // masked / causal softmax
KernelFamily ActivationFamily();    // SwiGLU, GELU with bias
KernelFamily RopeFamily();          // rotary embedding
KernelFamily AttentionFamily();     // fused attention forward and backward (FlashAttention-2 style)

}  // namespace stacksim::kernels

#endif  // STACKSIM_KERNELS_KERNELS_H_
