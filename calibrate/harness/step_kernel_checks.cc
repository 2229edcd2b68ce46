// Correctness checks of the step check's own kernels (step_kernels.h) on
// small random inputs against references in double precision on the host,
// before any layer is timed: relative error ||out - ref|| / ||ref|| against
// 1e-2 for bf16 outputs and 1e-4 for fp32 ones (METHOD: bf16 operands land
// between 1e-3 and 1e-2; fp32 arithmetic far under 1e-3). Outputs are
// poisoned first, so an element left unwritten fails. Shapes are odd on
// purpose (columns not a multiple of the block size).
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "calibrate/harness/step_kernels.h"
#include "calibrate/harness/steps.h"
#include "kernels/check_util.h"
#include "kernels/kernels.h"

namespace stacksim::calibrate {
namespace {

using kernels::DeviceBuffer;
using kernels::RelativeError;

constexpr double kBf16Tolerance = 1e-2;
constexpr double kFp32Tolerance = 1e-4;

std::vector<float> Rounded(const std::vector<float>& v) { return kernels::FromBf16(kernels::ToBf16(v)); }

template <typename T>
DeviceBuffer<T> Upload(const std::vector<T>& v) {
  DeviceBuffer<T> d(v.size());
  d.Upload(v);
  return d;
}

kernels::CheckResult Result(const char* kernel, const std::string& case_name, double rel, double tol) {
  return {kernel, case_name, rel, tol, std::isfinite(rel) && rel <= tol};
}

void CheckRmsNormBackward(uint64_t seed, int sm_count, cudaStream_t st, std::vector<kernels::CheckResult>* out) {
  const int rows = 37, cols = 1160;
  const std::string name = "bf16 rows=37 cols=1160";
  std::vector<float> x = Rounded(kernels::RandomFloats(rows * cols, seed));
  std::vector<float> dy = Rounded(kernels::RandomFloats(rows * cols, seed + 1));
  std::vector<float> dres = Rounded(kernels::RandomFloats(rows * cols, seed + 2));
  std::vector<float> gamma = Rounded(kernels::RandomFloats(cols, seed + 3));
  std::vector<float> rstd(rows);
  std::vector<double> dx_ref(x.size()), dgamma_ref(cols, 0.0);
  for (int r = 0; r < rows; ++r) {
    double ss = 0;
    for (int c = 0; c < cols; ++c) ss += double(x[r * cols + c]) * x[r * cols + c];
    rstd[r] = static_cast<float>(1.0 / std::sqrt(ss / cols + 1e-5));
    double dot = 0;
    for (int c = 0; c < cols; ++c) dot += double(dy[r * cols + c]) * gamma[c] * x[r * cols + c] * rstd[r];
    for (int c = 0; c < cols; ++c) {
      const double xh = double(x[r * cols + c]) * rstd[r];
      dx_ref[r * cols + c] = rstd[r] * (double(dy[r * cols + c]) * gamma[c] - xh * dot / cols) + dres[r * cols + c];
      dgamma_ref[c] += double(dy[r * cols + c]) * xh;
    }
  }
  auto d_x = Upload(kernels::ToBf16(x)), d_dy = Upload(kernels::ToBf16(dy)), d_dres = Upload(kernels::ToBf16(dres));
  auto d_gamma = Upload(kernels::ToBf16(gamma));
  auto d_rstd = Upload(rstd);
  DeviceBuffer<bf16> d_dx(x.size());
  DeviceBuffer<float> partial(static_cast<size_t>(RmsNormBackwardBlocks(sm_count)) * cols), dgamma(cols);
  d_dx.Poison();
  dgamma.Poison();
  RmsNormBackward(d_x.get(), d_gamma.get(), d_rstd.get(), d_dy.get(), d_dres.get(), d_dx.get(), partial.get(),
                  dgamma.get(), rows, cols, sm_count, st);
  CUDA_OK(cudaStreamSynchronize(st));
  out->push_back(Result("step_rmsnorm_bwd", name + " dx", RelativeError(kernels::FromBf16(d_dx.Download()), dx_ref),
                        kBf16Tolerance));
  out->push_back(Result("step_rmsnorm_bwd", name + " dgamma", RelativeError(dgamma.Download(), dgamma_ref),
                        kFp32Tolerance));
}

void CheckSwigluBackward(uint64_t seed, cudaStream_t st, std::vector<kernels::CheckResult>* out) {
  const int rows = 33, f = 136;
  std::vector<float> in = Rounded(kernels::RandomFloats(rows * 2 * f, seed));
  std::vector<float> dout = Rounded(kernels::RandomFloats(rows * f, seed + 1));
  std::vector<double> ref(in.size());
  for (int r = 0; r < rows; ++r) {
    for (int j = 0; j < f; ++j) {
      const double g = in[r * 2 * f + j], u = in[r * 2 * f + f + j], d = dout[r * f + j];
      const double s = 1.0 / (1.0 + std::exp(-g));
      ref[r * 2 * f + j] = d * u * s * (1.0 + g * (1.0 - s));
      ref[r * 2 * f + f + j] = d * g * s;
    }
  }
  auto d_in = Upload(kernels::ToBf16(in)), d_dout = Upload(kernels::ToBf16(dout));
  DeviceBuffer<bf16> d_din(in.size());
  d_din.Poison();
  SwigluBackward(d_in.get(), d_dout.get(), d_din.get(), rows, f, st);
  CUDA_OK(cudaStreamSynchronize(st));
  out->push_back(Result("step_swiglu_bwd", "bf16 rows=33 f=136",
                        RelativeError(kernels::FromBf16(d_din.Download()), ref), kBf16Tolerance));
}

void CheckOptimizer(uint64_t seed, cudaStream_t st, std::vector<kernels::CheckResult>* out) {
  const size_t n = 1004;
  std::vector<float> master = kernels::RandomFloats(n, seed), grad = kernels::RandomFloats(n, seed + 1, 0.2f);
  // Two steps from zero moments: the second sees moments the first wrote.
  std::vector<double> w(master.begin(), master.end()), m(n, 0.0), v(n, 0.0);
  using A = AdamSettings;
  for (int step = 1; step <= 2; ++step) {
    const std::vector<float>& g_in = step == 1 ? grad : std::vector<float>(n, 0.0f);  // zeroed after step 1
    double norm = 0;
    for (float g : g_in) norm += double(g) * g;
    norm = std::sqrt(norm);
    const double clip = norm > A::kMaxNorm ? A::kMaxNorm / norm : 1.0;
    const double bc1 = 1 - std::pow(double(A::kBeta1), step), bc2 = 1 - std::pow(double(A::kBeta2), step);
    for (size_t i = 0; i < n; ++i) {
      const double g = g_in[i] * clip;
      m[i] = A::kBeta1 * m[i] + (1 - A::kBeta1) * g;
      v[i] = A::kBeta2 * v[i] + (1 - A::kBeta2) * g * g;
      w[i] -= A::kLr * ((m[i] / bc1) / (std::sqrt(v[i] / bc2) + A::kEps) + A::kWeightDecay * w[i]);
    }
  }
  auto d_master = Upload(master), d_grad = Upload(grad);
  DeviceBuffer<float> d_m(n), d_v(n), norm_sq(1);
  CUDA_OK(cudaMemset(d_m.get(), 0, n * sizeof(float)));
  CUDA_OK(cudaMemset(d_v.get(), 0, n * sizeof(float)));
  DeviceBuffer<bf16> param(n);
  param.Poison();
  for (int step = 1; step <= 2; ++step) {
    OptimizerStep(d_master.get(), d_grad.get(), d_m.get(), d_v.get(), param.get(), n, norm_sq.get(), step, st);
  }
  CUDA_OK(cudaStreamSynchronize(st));
  const std::string name = "fp32 n=1004 2 steps";
  // The update is about lr x 2 steps against weights of order 1: compare the
  // change of the weights (fp32 rounding of weights near 1 leaves it about
  // 4e-4 off; a wrong update, say without bias correction, is off by 2x and
  // more).
  std::vector<float> got = d_master.Download();
  std::vector<double> delta_got(n), delta_ref(n);
  for (size_t i = 0; i < n; ++i) {
    delta_got[i] = double(got[i]) - master[i];
    delta_ref[i] = w[i] - master[i];
  }
  out->push_back(Result("step_adam", name + " master update", RelativeError(delta_got, delta_ref), 5e-3));
  out->push_back(Result("step_adam", name + " moments",
                        RelativeError(d_v.Download(), v) + RelativeError(d_m.Download(), m), 1e-3));
  out->push_back(Result("step_adam", name + " bf16 weights", RelativeError(kernels::FromBf16(param.Download()), w),
                        kBf16Tolerance));
  std::vector<float> g_after = d_grad.Download();
  double left = 0;
  for (float g : g_after) left += std::fabs(g);
  out->push_back(Result("step_adam", name + " gradient zeroed", left, 0.0));
}

void CheckMoeRouting(uint64_t seed, cudaStream_t st, std::vector<kernels::CheckResult>* out) {
  const int T = 24, H = 72, k = 2, E = 8, cap = T * k / E;
  const std::string name = "bf16 tokens=24 hidden=72 top2 of 8";
  std::vector<float> logits = Rounded(kernels::RandomFloats(T * E, seed));
  std::vector<float> x = Rounded(kernels::RandomFloats(T * H, seed + 1));
  std::vector<float> y = Rounded(kernels::RandomFloats(T * k * H, seed + 2));
  std::vector<float> dweight = kernels::RandomFloats(T * k, seed + 3);
  std::vector<double> probs(T * E), weight(T * k), permuted(T * k * H), combined(T * H, 0.0), wgrad(T * k),
      dlogits(T * E);
  for (int t = 0; t < T; ++t) {
    double mx = -1e30, sum = 0;
    for (int e = 0; e < E; ++e) mx = std::max(mx, double(logits[t * E + e]));
    for (int e = 0; e < E; ++e) sum += std::exp(logits[t * E + e] - mx);
    for (int e = 0; e < E; ++e) probs[t * E + e] = std::exp(logits[t * E + e] - mx) / sum;
    double dot = 0;
    for (int j = 0; j < k; ++j) {
      const int flat = t * k + j, e = flat % E;
      weight[flat] = probs[t * E + e];
      dot += probs[t * E + e] * dweight[flat];
    }
    for (int e = 0; e < E; ++e) {
      double dp = 0;
      for (int j = 0; j < k; ++j) dp += (t * k + j) % E == e ? dweight[t * k + j] : 0.0;
      dlogits[t * E + e] = probs[t * E + e] * (dp - dot);
    }
  }
  for (int flat = 0; flat < T * k; ++flat) {
    const int t = flat / k, row = (flat % E) * cap + flat / E;
    double dot = 0;
    for (int h = 0; h < H; ++h) {
      permuted[row * H + h] = x[t * H + h];
      combined[t * H + h] += weight[flat] * y[row * H + h];
      dot += double(x[t * H + h]) * y[row * H + h];  // x stands in for dout
    }
    wgrad[flat] = dot;
  }
  auto d_logits = Upload(kernels::ToBf16(logits)), d_x = Upload(kernels::ToBf16(x)), d_y = Upload(kernels::ToBf16(y));
  auto d_dweight = Upload(dweight);
  DeviceBuffer<float> d_probs(T * E), d_weight(T * k), d_wgrad(T * k);
  DeviceBuffer<bf16> d_perm(T * k * H), d_comb(T * H), d_dlogits(T * E);
  for (auto* b : {&d_perm, &d_comb, &d_dlogits}) b->Poison();
  d_weight.Poison();
  RouterSoftmax(d_logits.get(), d_probs.get(), d_weight.get(), T, E, k, st);
  PermuteRows(d_x.get(), nullptr, d_perm.get(), T, H, k, E, st);
  CombineRows(d_y.get(), d_weight.get(), d_comb.get(), T, H, k, E, st);
  CombineWeightGrad(d_x.get(), d_y.get(), d_wgrad.get(), T, H, k, E, st);
  RouterSoftmaxBackward(d_probs.get(), d_dweight.get(), d_dlogits.get(), T, E, k, st);
  CUDA_OK(cudaStreamSynchronize(st));
  out->push_back(Result("step_moe_router", name + " weights", RelativeError(d_weight.Download(), weight),
                        kFp32Tolerance));
  out->push_back(Result("step_moe_permute", name, RelativeError(kernels::FromBf16(d_perm.Download()), permuted),
                        kBf16Tolerance));
  out->push_back(Result("step_moe_combine", name, RelativeError(kernels::FromBf16(d_comb.Download()), combined),
                        kBf16Tolerance));
  out->push_back(Result("step_moe_combine_wgrad", name, RelativeError(d_wgrad.Download(), wgrad), kFp32Tolerance));
  out->push_back(Result("step_moe_router_bwd", name,
                        RelativeError(kernels::FromBf16(d_dlogits.Download()), dlogits), kBf16Tolerance));
}

}  // namespace

std::vector<kernels::CheckResult> CheckStepKernels(uint64_t seed, int sm_count, cudaStream_t stream) {
  std::vector<kernels::CheckResult> out;
  CheckRmsNormBackward(seed, sm_count, stream, &out);
  CheckSwigluBackward(seed + 10, stream, &out);
  CheckOptimizer(seed + 20, stream, &out);
  CheckMoeRouting(seed + 30, stream, &out);
  return out;
}

}  // namespace stacksim::calibrate
