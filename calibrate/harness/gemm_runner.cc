#include "calibrate/harness/gemm_runner.h"

#include <cstdint>

namespace stacksim::calibrate {

#define LT_OK(call) CheckCublas((call), #call)

void CheckCublas(cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  std::string text = std::string(what) + ": " + cublasLtGetStatusString(status);
  if (status == CUBLAS_STATUS_NOT_SUPPORTED) throw GemmUnsupported(text);
  throw std::runtime_error(text);
}

const char* GemmDtypeName(GemmDtype dtype) {
  switch (dtype) {
    case GemmDtype::kBf16: return "bf16";
    case GemmDtype::kFp16: return "fp16";
    case GemmDtype::kTf32: return "tf32";
    case GemmDtype::kFp8E4m3: return "fp8_e4m3";
  }
  return "?";
}

FillKind GemmInputFill(GemmDtype dtype) {
  switch (dtype) {
    case GemmDtype::kBf16: return FillKind::kBf16;
    case GemmDtype::kFp16: return FillKind::kFp16;
    case GemmDtype::kTf32: return FillKind::kFp32;
    case GemmDtype::kFp8E4m3: return FillKind::kFp8E4m3;
  }
  return FillKind::kBytes;
}

size_t GemmInputBytes(GemmDtype dtype) { return FillElementBytes(GemmInputFill(dtype)); }

size_t GemmOutputBytes(GemmDtype dtype) {
  return dtype == GemmDtype::kTf32 ? 4 : 2;  // fp8 writes bf16
}

LtMatmul::LtMatmul(cublasLtHandle_t handle, GemmDtype dtype, const GemmShape& shape, size_t workspace_bytes,
                   const float* unit_scale)
    : handle_(handle), dtype_(dtype), shape_(shape), workspace_bytes_(workspace_bytes) {
  cudaDataType_t in = CUDA_R_16BF, out = CUDA_R_16BF;
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  switch (dtype) {
    case GemmDtype::kBf16: break;
    case GemmDtype::kFp16: in = out = CUDA_R_16F; break;
    case GemmDtype::kTf32:
      in = out = CUDA_R_32F;
      compute = CUBLAS_COMPUTE_32F_FAST_TF32;
      break;
    case GemmDtype::kFp8E4m3: in = CUDA_R_8F_E4M3; break;
  }
  const bool fp8 = dtype == GemmDtype::kFp8E4m3;
  const uint64_t m = shape.m, n = shape.n, k = shape.k;
  // The destructor does not run when the constructor throws: release here.
  try {
    LT_OK(cublasLtMatmulDescCreate(&op_, compute, CUDA_R_32F));
    cublasOperation_t ta = fp8 ? CUBLAS_OP_T : CUBLAS_OP_N, tb = CUBLAS_OP_N;
    LT_OK(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    LT_OK(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    if (fp8) {
      LT_OK(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &unit_scale, sizeof unit_scale));
      LT_OK(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &unit_scale, sizeof unit_scale));
    }
    // cuBLASLt's A is our B (n x k as stored column-major), its B our A.
    if (fp8) {
      LT_OK(cublasLtMatrixLayoutCreate(&a_layout_, in, k, n, k));  // op T gives n x k
    } else {
      LT_OK(cublasLtMatrixLayoutCreate(&a_layout_, in, n, k, n));
    }
    LT_OK(cublasLtMatrixLayoutCreate(&b_layout_, in, k, m, k));
    LT_OK(cublasLtMatrixLayoutCreate(&c_layout_, out, n, m, n));

    cublasLtMatmulPreference_t pref = nullptr;
    LT_OK(cublasLtMatmulPreferenceCreate(&pref));
    uint64_t ws = workspace_bytes;
    cublasStatus_t st =
        cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
    cublasLtMatmulHeuristicResult_t result{};
    int returned = 0;
    if (st == CUBLAS_STATUS_SUCCESS) {
      st = cublasLtMatmulAlgoGetHeuristic(handle_, op_, a_layout_, b_layout_, c_layout_, c_layout_, pref, 1, &result,
                                          &returned);
    }
    cublasLtMatmulPreferenceDestroy(pref);
    if (st != CUBLAS_STATUS_SUCCESS) {
      throw GemmUnsupported(std::string("cublasLtMatmulAlgoGetHeuristic: ") + cublasLtGetStatusString(st));
    }
    if (returned == 0 || result.state != CUBLAS_STATUS_SUCCESS) {
      throw GemmUnsupported("cublasLtMatmulAlgoGetHeuristic found no algorithm");
    }
    algo_ = result.algo;
  } catch (...) {
    Release();
    throw;
  }
}

LtMatmul::~LtMatmul() { Release(); }

void LtMatmul::Release() {
  if (c_layout_ != nullptr) cublasLtMatrixLayoutDestroy(c_layout_);
  if (b_layout_ != nullptr) cublasLtMatrixLayoutDestroy(b_layout_);
  if (a_layout_ != nullptr) cublasLtMatrixLayoutDestroy(a_layout_);
  if (op_ != nullptr) cublasLtMatmulDescDestroy(op_);
  c_layout_ = b_layout_ = a_layout_ = nullptr;
  op_ = nullptr;
}

void LtMatmul::Run(const void* a, const void* b, void* c, void* workspace, cudaStream_t stream) const {
  const float alpha = 1.0f, beta = 0.0f;
  LT_OK(cublasLtMatmul(handle_, op_, &alpha, b, a_layout_, a, b_layout_, &beta, c, c_layout_, c, c_layout_, &algo_,
                       workspace, workspace_bytes_, stream));
}

}  // namespace stacksim::calibrate
