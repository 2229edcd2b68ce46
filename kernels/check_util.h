// Helpers for the kernels' correctness checks and timings: fresh random
// inputs (never zeros), device buffers, and the relative error against a
// higher-precision reference.
#ifndef STACKSIM_KERNELS_CHECK_UTIL_H_
#define STACKSIM_KERNELS_CHECK_UTIL_H_

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/cuda_check.h"

namespace stacksim::kernels {

// Normal(0, scale) samples as float, from `seed`.
inline std::vector<float> RandomFloats(size_t n, uint64_t seed, float scale = 1.0f) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) {
    x = dist(rng);
    if (x == 0.0f) x = 1e-3f;  // never an exact zero
  }
  return v;
}

inline std::vector<__nv_bfloat16> ToBf16(const std::vector<float>& v) {
  std::vector<__nv_bfloat16> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = __float2bfloat16(v[i]);
  return out;
}

// The float values a bf16 vector holds (what the kernel actually saw).
inline std::vector<float> FromBf16(const std::vector<__nv_bfloat16>& v) {
  std::vector<float> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = __bfloat162float(v[i]);
  return out;
}

// ||out - ref|| / ||ref|| in double; NaN or Inf anywhere gives +Inf.
template <typename A, typename B>
double RelativeError(const std::vector<A>& out, const std::vector<B>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    double o = static_cast<double>(out[i]), r = static_cast<double>(ref[i]);
    if (!std::isfinite(o)) return INFINITY;
    num += (o - r) * (o - r);
    den += r * r;
  }
  return den > 0 ? std::sqrt(num / den) : (num > 0 ? INFINITY : 0.0);
}

// A device buffer of T, freed on destruction.
template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t n) : n_(n) { CUDA_OK(cudaMalloc(&ptr_, n * sizeof(T))); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), n_(o.n_) { o.ptr_ = nullptr; o.n_ = 0; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(n_, o.n_);
    return *this;
  }
  ~DeviceBuffer() {
    if (ptr_) cudaFree(ptr_);
  }
  T* get() const { return ptr_; }
  size_t size() const { return n_; }
  void Upload(const std::vector<T>& v) { CUDA_OK(cudaMemcpy(ptr_, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice)); }
  std::vector<T> Download() const {
    std::vector<T> v(n_);
    CUDA_OK(cudaMemcpy(v.data(), ptr_, n_ * sizeof(T), cudaMemcpyDeviceToHost));
    return v;
  }
  // Fills with a byte pattern so that unwritten outputs show up as garbage.
  void Poison() { CUDA_OK(cudaMemset(ptr_, 0xFF, n_ * sizeof(T))); }

 private:
  T* ptr_ = nullptr;
  size_t n_ = 0;
};

}  // namespace stacksim::kernels

#endif  // STACKSIM_KERNELS_CHECK_UTIL_H_
