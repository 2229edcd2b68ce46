// One cuBLASLt matrix product C = A B of row-major matrices, set up once
// (descriptors, and the algorithm cublasLtMatmulAlgoGetHeuristic ranks first
// for a 32 MiB workspace) and run many times on rotating buffers.
//
// Row-major via the usual transposition: cuBLASLt is column-major, and a
// row-major X is a column-major X^T, so C^T (n x m) = B^T (n x k) A^T (k x m)
// is computed with the operands swapped. bf16, fp16 and tf32 are "NN"; fp8
// e4m3 needs cuBLASLt's "TN" layout (A operand transposed), so its B is
// stored n x k row-major (nn.Linear's weight layout), with unit scales and
// bf16 output.
#ifndef STACKSIM_CALIBRATE_HARNESS_GEMM_RUNNER_H_
#define STACKSIM_CALIBRATE_HARNESS_GEMM_RUNNER_H_

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <stdexcept>
#include <string>

#include "calibrate/harness/device_kernels.h"
#include "calibrate/harness/gemm_shapes.h"

namespace stacksim::calibrate {

enum class GemmDtype { kBf16, kFp16, kTf32, kFp8E4m3 };

const char* GemmDtypeName(GemmDtype dtype);  // bf16, fp16, tf32, fp8_e4m3 (gemm.csv's dtype column)
FillKind GemmInputFill(GemmDtype dtype);     // the element type of A and B
size_t GemmInputBytes(GemmDtype dtype);      // bytes per element of A and B
size_t GemmOutputBytes(GemmDtype dtype);     // bytes per element of C

// cuBLASLt cannot run this product (no algorithm, or a layout it refuses).
class GemmUnsupported : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class LtMatmul {
 public:
  // Throws GemmUnsupported when cuBLASLt offers no algorithm; std::runtime_error
  // on other cuBLASLt errors. REQUIRES: `unit_scale` is a device float 1.0
  // (fp8's scale pointers); the handle outlives this object.
  LtMatmul(cublasLtHandle_t handle, GemmDtype dtype, const GemmShape& shape, size_t workspace_bytes,
           const float* unit_scale);
  ~LtMatmul();
  LtMatmul(const LtMatmul&) = delete;
  LtMatmul& operator=(const LtMatmul&) = delete;

  // Enqueues C = A B on `stream`. a: m x k, b: k x n (fp8: n x k), c: m x n.
  void Run(const void* a, const void* b, void* c, void* workspace, cudaStream_t stream) const;

  size_t a_bytes() const { return shape_.m * shape_.k * GemmInputBytes(dtype_); }
  size_t b_bytes() const { return shape_.k * shape_.n * GemmInputBytes(dtype_); }
  size_t c_bytes() const { return shape_.m * shape_.n * GemmOutputBytes(dtype_); }

 private:
  void Release();

  cublasLtHandle_t handle_;
  GemmDtype dtype_;
  GemmShape shape_;
  size_t workspace_bytes_;
  cublasLtMatmulDesc_t op_ = nullptr;
  cublasLtMatrixLayout_t a_layout_ = nullptr, b_layout_ = nullptr, c_layout_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
};

// Throws std::runtime_error (GemmUnsupported for CUBLAS_STATUS_NOT_SUPPORTED)
// naming the call when `status` is not success.
void CheckCublas(cublasStatus_t status, const char* what);

}  // namespace stacksim::calibrate

#endif  // STACKSIM_CALIBRATE_HARNESS_GEMM_RUNNER_H_
