// The GEMM shapes calibrate times: tools/gpu/measure_torch.py's gemm_shapes()
// list, in its order, so that gemm.csv rows compare one to one with the
// earlier PyTorch measurement (277 shapes); then serving's (kServingPrefix).
#ifndef STACKSIM_CALIBRATE_HARNESS_GEMM_SHAPES_H_
#define STACKSIM_CALIBRATE_HARNESS_GEMM_SHAPES_H_

#include <cstdint>
#include <string>
#include <vector>

namespace stacksim::calibrate {

// C (m x n) = A (m x k) B (k x n): m tokens, n output features, k reduction.
struct GemmShape {
  std::string label;  // "square", "odd", "llama3-70b/tp8/fc1/dgrad", "gpt3-175b/logits"
  int64_t m = 0, n = 0, k = 0;
};

// Squares 256..16384; the forward, dgrad and wgrad GEMMs of four transformer
// layers at tensor-parallel shards 1, 2, 4, 8; logits; odd sizes.
std::vector<GemmShape> GemmShapes();

// Labels of serving's decode and short-prefill shapes ("serve/llama3-70b/
// tp8/m128/fc1"): measured in bf16, reported against the cost model, and
// left out of the fit of training's shapes.
inline constexpr const char* kServingPrefix = "serve/";

}  // namespace stacksim::calibrate

#endif  // STACKSIM_CALIBRATE_HARNESS_GEMM_SHAPES_H_
