// step_measured.csv: the step check's measured side (docs/calibrate.md,
// "Step check"). For each shape of calibrate/fit/step_shapes.h, one
// transformer layer's training step on this GPU, as one GPU of a
// tensor-parallel group runs its slice (no collectives): forward, backward,
// then the optimizer update of the slice's parameters, timed with CUDA events
// around each part after warm-up steps and a heat soak (forward and backward
// back to back, then the optimizer apart: TimeSteps), median of repeats.
//
// What runs (bf16, fp32 accumulation; T = tokens, H = hidden; per GPU: hq =
// heads / tp, hkv = kv_heads / tp, F = ffn / tp):
//   forward:  residual + RMSNorm (kernels/norm.cu) -> QKV GEMM -> RoPE
//             (kernels/rope.cu) -> attention forward (kernels/attention.cu,
//             causal, GQA) -> output projection GEMM -> residual + RMSNorm ->
//             FC1 GEMM (2F wide) -> SwiGLU (kernels/activation.cu) -> FC2 GEMM
//             -> residual add;
//   backward: for each GEMM its dgrad and wgrad GEMMs, SwiGLU and RMSNorm
//             backward (step_kernels.cu; the residual gradient added in the
//             norm's backward), attention backward, RoPE backward (the same
//             kernel with the angle negated);
//   optimizer: gradient norm, clipped Adam over fp32 master weights and
//             moments writing the bf16 weights, gradient zeroed (38 bytes per
//             parameter, step_kernels.h).
// The harness's own kernels are checked against host references first
// (step_checks.csv: kernel, case, rel_error, tolerance, ok); a failure stops
// the step before anything is timed.
// A MoE layer (Mixtral) replaces the MLP with a router GEMM and softmax, the
// tokens permuted into per-expert rows under exactly balanced routing, each
// expert's FC1 and FC2 as its own cuBLASLt GEMM (a loop over the experts,
// not one grouped kernel; the cost model prices them as one batched GEMM of
// the same work), and the weighted combine; their backwards.
//
// Timing, not numerics: every op runs on buffers of its real shape, but data
// does not flow through all of them (Q, K and V are separate buffers beside
// the fused QKV GEMM's output; a transposed operand is the same buffer read
// as the transposed shape, all GEMMs in cuBLASLt's row-major "NN" form;
// weight gradients are written bf16, not accumulated into fp32). Inputs are
// random and non-zero; the layer's working set (weights, activations) is
// far above the L2, so no buffer rotation.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "calibrate/fit/step_shapes.h"
#include "calibrate/harness/csv.h"
#include "calibrate/harness/cupti_recorder.h"
#include "calibrate/harness/device_kernels.h"
#include "calibrate/harness/event_pair.h"
#include "calibrate/harness/gemm_runner.h"
#include "calibrate/harness/step_kernels.h"
#include "calibrate/harness/steps.h"
#include "kernels/attention.h"
#include "kernels/check_util.h"
#include "kernels/cuda_check.h"
#include "kernels/layer_kernels.h"

namespace stacksim::calibrate {
namespace {

constexpr size_t kWorkspaceBytes = 32u << 20;
constexpr size_t kAlign = 256;
constexpr float kNormEps = 1e-5f;

// Device memory handed out in aligned pieces; with no base it only counts.
class Slab {
 public:
  explicit Slab(uint8_t* base) : base_(base) {}
  template <typename T>
  T* Take(size_t count) {
    size_t at = used_;
    used_ += (count * sizeof(T) + kAlign - 1) / kAlign * kAlign;
    return base_ == nullptr ? nullptr : reinterpret_cast<T*>(base_ + at);
  }
  size_t used() const { return used_; }

 private:
  uint8_t* base_;
  size_t used_ = 0;
};

struct LtHandle {
  cublasLtHandle_t h = nullptr;
  LtHandle() { CheckCublas(cublasLtCreate(&h), "cublasLtCreate"); }
  ~LtHandle() { cublasLtDestroy(h); }
};

// One GEMM of the layer: C (m x n) = A (m x k) B (k x n) on fixed buffers.
struct Gemm {
  std::shared_ptr<LtMatmul> op;
  const void* a = nullptr;
  const void* b = nullptr;
  void* c = nullptr;
};

// One layer's buffers, GEMMs and launch sequence. Built twice: with a
// counting slab (sizes only, `gpu` false) and with the real one.
class LayerStep {
 public:
  LayerStep(const StepShape& s, Slab& slab, bool gpu, cublasLtHandle_t lt, const float* one, int sm_count)
      : s_(s), gpu_(gpu), lt_(lt), one_(one), sm_count_(sm_count) {
    T_ = s.micro_batch * s.seq;
    H_ = s.hidden;
    hq_ = s.heads / s.tp;
    hkv_ = s.kv_heads / s.tp;
    d_ = s.head_dim;
    qn_ = (hq_ + 2 * hkv_) * d_;
    on_ = hq_ * d_;
    E_ = s.moe() ? s.experts : 0;
    F_ = s.moe() ? s.expert_ffn / s.tp : s.ffn / s.tp;
    rows_ = s.moe() ? T_ * s.top_k : T_;  // MLP rows: routed copies for MoE
    cap_ = s.moe() ? rows_ / E_ : rows_;
    Allocate(slab);
  }

  size_t parameters() const { return params_; }

  void Forward(cudaStream_t st) {
    kernels::LaunchResidualNorm(false, {x_, res_in_, g1_, nullptr, n1_, res1_, nullptr, rstd1_, I(T_), I(H_), kNormEps},
                                st);
    Run(qkv_fwd_, st);
    kernels::RopeShape rope{1, I(T_), I(hq_), I(hkv_), I(d_)};
    kernels::LaunchRope(q_, k_, cos_, sin_, rope, st);
    kernels::AttentionForward(Attn(), q_, k_, v_, o_, lse_, st);
    Run(proj_fwd_, st);
    kernels::LaunchResidualNorm(false, {proj_, res1_, g2_, nullptr, n2_, res2_, nullptr, rstd2_, I(T_), I(H_), kNormEps},
                                st);
    if (s_.moe()) {
      Run(router_fwd_, st);
      RouterSoftmax(logits_, probs_, weight_, I(T_), I(E_), I(s_.top_k), st);
      PermuteRows(n2_, nullptr, xp_, I(T_), I(H_), I(s_.top_k), I(E_), st);
    }
    for (const Gemm& g : fc1_fwd_) Run(g, st);
    kernels::LaunchSwiglu(h1_, act_, I(rows_), I(F_), st);
    for (const Gemm& g : fc2_fwd_) Run(g, st);
    if (s_.moe()) CombineRows(ye_, weight_, y_, I(T_), I(H_), I(s_.top_k), I(E_), st);
    ResidualAdd(y_, res2_, out_, T_ * H_, st);
  }

  void Backward(cudaStream_t st) {
    if (s_.moe()) {
      PermuteRows(dout_, weight_, d_ye_, I(T_), I(H_), I(s_.top_k), I(E_), st);
      CombineWeightGrad(dout_, ye_, dweight_, I(T_), I(H_), I(s_.top_k), I(E_), st);
    }
    for (const Gemm& g : fc2_bwd_) Run(g, st);
    SwigluBackward(h1_, d_act_, d_h1_, I(rows_), I(F_), st);
    for (const Gemm& g : fc1_bwd_) Run(g, st);
    if (s_.moe()) {
      CombineRows(d_xp_, nullptr, d_n2_, I(T_), I(H_), I(s_.top_k), I(E_), st);
      RouterSoftmaxBackward(probs_, dweight_, dlogits_, I(T_), I(E_), I(s_.top_k), st);
      for (const Gemm& g : router_bwd_) Run(g, st);
      ResidualAdd(d_n2_, d_n2_router_, d_n2_, T_ * H_, st);
    }
    RmsNormBackward(res2_, g2_, rstd2_, d_n2_, dout_, d_res2_, partial_, dgamma_, I(T_), I(H_), sm_count_, st);
    for (const Gemm& g : proj_bwd_) Run(g, st);
    kernels::AttentionBackward(Attn(), q_, k_, v_, o_, d_o_, lse_, dq_, dk_, dv_, dq_accum_, delta_, st);
    kernels::RopeShape rope{1, I(T_), I(hq_), I(hkv_), I(d_)};
    kernels::LaunchRope(dq_, dk_, cos_, neg_sin_, rope, st);
    for (const Gemm& g : qkv_bwd_) Run(g, st);
    RmsNormBackward(res1_, g1_, rstd1_, d_n1_, d_res2_, dx_, partial_, dgamma_, I(T_), I(H_), sm_count_, st);
  }

  void Optimizer(cudaStream_t st) { OptimizerStep(master_, grad_, adam_m_, adam_v_, param_, params_padded_, norm_sq_, ++step_, st); }

  // Random inputs, weights and master weights; Adam's moments start at zero.
  void Fill(uint64_t seed, cudaStream_t st) {
    auto bf = [&](bf16* p, size_t n, float scale) { FillRandom(p, n, FillKind::kBf16, seed++, scale, st); };
    bf(param_, params_padded_, 0.05f);
    bf(x_, T_ * H_, 1.0f);
    bf(res_in_, T_ * H_, 1.0f);
    bf(q_, T_ * on_, 1.0f);
    bf(k_, T_ * hkv_ * d_, 1.0f);
    bf(v_, T_ * hkv_ * d_, 1.0f);
    bf(dout_, T_ * H_, 1.0f);
    bf(d_qkv_, T_ * qn_, 1.0f);
    FillRandom(master_, params_padded_, FillKind::kFp32, seed++, 0.05f, st);
    CUDA_OK(cudaMemsetAsync(grad_, 0, params_padded_ * sizeof(float), st));
    CUDA_OK(cudaMemsetAsync(adam_m_, 0, params_padded_ * sizeof(float), st));
    CUDA_OK(cudaMemsetAsync(adam_v_, 0, params_padded_ * sizeof(float), st));
    kernels::RopeShape rope{1, I(T_), I(hq_), I(hkv_), I(d_)};
    std::vector<float> cos_t, sin_t;
    kernels::RopeTables(rope, &cos_t, &sin_t);
    std::vector<float> neg_sin(sin_t.size());
    for (size_t i = 0; i < sin_t.size(); ++i) neg_sin[i] = -sin_t[i];
    CUDA_OK(cudaMemcpy(cos_, cos_t.data(), cos_t.size() * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(sin_, sin_t.data(), sin_t.size() * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(neg_sin_, neg_sin.data(), neg_sin.size() * sizeof(float), cudaMemcpyHostToDevice));
  }

 private:
  static int I(int64_t v) { return static_cast<int>(v); }

  kernels::AttentionShape Attn() const {
    kernels::AttentionShape a;
    a.batch = I(s_.micro_batch);
    a.heads = I(hq_);
    a.kv_heads = I(hkv_);
    a.seq = I(s_.seq);
    a.head_dim = I(d_);
    a.causal = true;
    return a;
  }

  void Run(const Gemm& g, cudaStream_t st) const { g.op->Run(g.a, g.b, g.c, workspace_, st); }

  // A GEMM on the given buffers; GEMMs of one shape share their cuBLASLt setup.
  Gemm MakeGemm(const char* label, int64_t m, int64_t n, int64_t k, const void* a, const void* b, void* c) {
    Gemm g{nullptr, a, b, c};
    if (!gpu_) return g;
    std::string key = std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
    for (const auto& [shape_key, op] : ops_) {
      if (shape_key == key) g.op = op;
    }
    if (!g.op) {
      g.op = std::make_shared<LtMatmul>(lt_, GemmDtype::kBf16, GemmShape{label, m, n, k}, kWorkspaceBytes, one_);
      ops_.emplace_back(key, g.op);
    }
    return g;
  }

  // Row offset `rows` into a row-major bf16 matrix `cols` wide.
  static bf16* Rows(bf16* p, int64_t rows, int64_t cols) { return p == nullptr ? nullptr : p + rows * cols; }

  void Allocate(Slab& slab) {
    // Parameters: one bf16 slab (the weights the GEMMs read) and the fp32
    // optimizer state over the same count.
    const int64_t mlp_weights = s_.moe() ? E_ * (H_ * 2 * F_ + F_ * H_) + H_ * E_ : H_ * 2 * F_ + F_ * H_;
    params_ = static_cast<size_t>(H_ * qn_ + on_ * H_ + mlp_weights + 2 * H_);
    params_padded_ = (params_ + 3) / 4 * 4;
    param_ = slab.Take<bf16>(params_padded_);
    bf16* w = param_;
    auto carve = [&](int64_t n) {
      bf16* p = w;
      if (w != nullptr) w += n;
      return p;
    };
    bf16* wqkv = carve(H_ * qn_);
    bf16* wo = carve(on_ * H_);
    g1_ = carve(H_);
    g2_ = carve(H_);
    bf16* wr = s_.moe() ? carve(H_ * E_) : nullptr;
    std::vector<bf16*> w1, w2;
    for (int64_t e = 0; e < std::max<int64_t>(1, E_); ++e) {
      w1.push_back(carve(H_ * 2 * F_));
      w2.push_back(carve(F_ * H_));
    }
    master_ = slab.Take<float>(params_padded_);
    grad_ = slab.Take<float>(params_padded_);
    adam_m_ = slab.Take<float>(params_padded_);
    adam_v_ = slab.Take<float>(params_padded_);
    norm_sq_ = slab.Take<float>(1);
    // The largest weight gradient, written by the wgrad GEMMs in turn.
    const int64_t largest = std::max({H_ * qn_, on_ * H_, H_ * 2 * F_, F_ * H_});
    bf16* dw = slab.Take<bf16>(largest);

    auto act = [&](int64_t n) { return slab.Take<bf16>(n); };
    x_ = act(T_ * H_);
    res_in_ = act(T_ * H_);
    n1_ = act(T_ * H_);
    res1_ = act(T_ * H_);
    rstd1_ = slab.Take<float>(T_);
    qkv_ = act(T_ * qn_);
    q_ = act(T_ * on_);
    k_ = act(T_ * hkv_ * d_);
    v_ = act(T_ * hkv_ * d_);
    o_ = act(T_ * on_);
    lse_ = slab.Take<float>(s_.micro_batch * hq_ * s_.seq);
    cos_ = slab.Take<float>(s_.seq * d_ / 2);
    sin_ = slab.Take<float>(s_.seq * d_ / 2);
    neg_sin_ = slab.Take<float>(s_.seq * d_ / 2);
    proj_ = act(T_ * H_);
    n2_ = act(T_ * H_);
    res2_ = act(T_ * H_);
    rstd2_ = slab.Take<float>(T_);
    h1_ = act(rows_ * 2 * F_);
    act_ = act(rows_ * F_);
    y_ = act(T_ * H_);
    out_ = act(T_ * H_);
    dout_ = act(T_ * H_);
    d_act_ = act(rows_ * F_);
    d_h1_ = act(rows_ * 2 * F_);
    d_n2_ = act(T_ * H_);
    d_res2_ = act(T_ * H_);
    d_o_ = act(T_ * on_);
    dq_ = act(T_ * on_);
    dk_ = act(T_ * hkv_ * d_);
    dv_ = act(T_ * hkv_ * d_);
    dq_accum_ = slab.Take<float>(T_ * on_);
    delta_ = slab.Take<float>(s_.micro_batch * hq_ * s_.seq);
    d_qkv_ = act(T_ * qn_);
    d_n1_ = act(T_ * H_);
    dx_ = act(T_ * H_);
    const int blocks = RmsNormBackwardBlocks(sm_count_);
    partial_ = slab.Take<float>(static_cast<size_t>(blocks) * H_);
    dgamma_ = slab.Take<float>(H_);
    workspace_ = slab.Take<uint8_t>(kWorkspaceBytes);
    if (s_.moe()) {
      logits_ = act(T_ * E_);
      probs_ = slab.Take<float>(T_ * E_);
      weight_ = slab.Take<float>(rows_);
      dweight_ = slab.Take<float>(rows_);
      dlogits_ = act(T_ * E_);
      xp_ = act(rows_ * H_);
      ye_ = act(rows_ * H_);
      d_ye_ = act(rows_ * H_);
      d_xp_ = act(rows_ * H_);
      d_n2_router_ = act(T_ * H_);
    }

    // Forward, then for each GEMM its dgrad (input gradient) and wgrad.
    qkv_fwd_ = MakeGemm("qkv", T_, qn_, H_, n1_, wqkv, qkv_);
    proj_fwd_ = MakeGemm("proj", T_, H_, on_, o_, wo, proj_);
    proj_bwd_ = {MakeGemm("proj/dgrad", T_, on_, H_, d_res2_, wo, d_o_),
                 MakeGemm("proj/wgrad", on_, H_, T_, o_, d_res2_, dw)};
    qkv_bwd_ = {MakeGemm("qkv/dgrad", T_, H_, qn_, d_qkv_, wqkv, d_n1_),
                MakeGemm("qkv/wgrad", H_, qn_, T_, n1_, d_qkv_, dw)};
    if (!s_.moe()) {
      fc1_fwd_ = {MakeGemm("fc1", T_, 2 * F_, H_, n2_, w1[0], h1_)};
      fc2_fwd_ = {MakeGemm("fc2", T_, H_, F_, act_, w2[0], y_)};
      fc2_bwd_ = {MakeGemm("fc2/dgrad", T_, F_, H_, dout_, w2[0], d_act_),
                  MakeGemm("fc2/wgrad", F_, H_, T_, act_, dout_, dw)};
      fc1_bwd_ = {MakeGemm("fc1/dgrad", T_, H_, 2 * F_, d_h1_, w1[0], d_n2_),
                  MakeGemm("fc1/wgrad", H_, 2 * F_, T_, n2_, d_h1_, dw)};
      return;
    }
    router_fwd_ = MakeGemm("router", T_, E_, H_, n2_, wr, logits_);
    router_bwd_ = {MakeGemm("router/dgrad", T_, H_, E_, dlogits_, wr, d_n2_router_),
                   MakeGemm("router/wgrad", H_, E_, T_, n2_, dlogits_, dw)};
    for (int64_t e = 0; e < E_; ++e) {
      const int64_t r = e * cap_;
      fc1_fwd_.push_back(MakeGemm("expert-fc1", cap_, 2 * F_, H_, Rows(xp_, r, H_), w1[e], Rows(h1_, r, 2 * F_)));
      fc2_fwd_.push_back(MakeGemm("expert-fc2", cap_, H_, F_, Rows(act_, r, F_), w2[e], Rows(ye_, r, H_)));
      fc2_bwd_.push_back(MakeGemm("expert-fc2/dgrad", cap_, F_, H_, Rows(d_ye_, r, H_), w2[e], Rows(d_act_, r, F_)));
      fc2_bwd_.push_back(MakeGemm("expert-fc2/wgrad", F_, H_, cap_, Rows(act_, r, F_), Rows(d_ye_, r, H_), dw));
      fc1_bwd_.push_back(
          MakeGemm("expert-fc1/dgrad", cap_, H_, 2 * F_, Rows(d_h1_, r, 2 * F_), w1[e], Rows(d_xp_, r, H_)));
      fc1_bwd_.push_back(MakeGemm("expert-fc1/wgrad", H_, 2 * F_, cap_, Rows(xp_, r, H_), Rows(d_h1_, r, 2 * F_), dw));
    }
  }

  StepShape s_;
  bool gpu_;
  cublasLtHandle_t lt_;
  const float* one_;
  int sm_count_;
  int64_t T_ = 0, H_ = 0, hq_ = 0, hkv_ = 0, d_ = 0, qn_ = 0, on_ = 0, E_ = 0, F_ = 0, rows_ = 0, cap_ = 0;
  size_t params_ = 0, params_padded_ = 0;
  int step_ = 0;
  std::vector<std::pair<std::string, std::shared_ptr<LtMatmul>>> ops_;

  bf16 *param_ = nullptr, *g1_ = nullptr, *g2_ = nullptr;
  float *master_ = nullptr, *grad_ = nullptr, *adam_m_ = nullptr, *adam_v_ = nullptr, *norm_sq_ = nullptr;
  bf16 *x_ = nullptr, *res_in_ = nullptr, *n1_ = nullptr, *res1_ = nullptr, *qkv_ = nullptr, *q_ = nullptr,
       *k_ = nullptr, *v_ = nullptr, *o_ = nullptr, *proj_ = nullptr, *n2_ = nullptr, *res2_ = nullptr,
       *h1_ = nullptr, *act_ = nullptr, *y_ = nullptr, *out_ = nullptr;
  float *rstd1_ = nullptr, *rstd2_ = nullptr, *lse_ = nullptr, *cos_ = nullptr, *sin_ = nullptr, *neg_sin_ = nullptr;
  bf16 *dout_ = nullptr, *d_act_ = nullptr, *d_h1_ = nullptr, *d_n2_ = nullptr, *d_res2_ = nullptr, *d_o_ = nullptr,
       *dq_ = nullptr, *dk_ = nullptr, *dv_ = nullptr, *d_qkv_ = nullptr, *d_n1_ = nullptr, *dx_ = nullptr;
  float *dq_accum_ = nullptr, *delta_ = nullptr, *partial_ = nullptr, *dgamma_ = nullptr;
  uint8_t* workspace_ = nullptr;
  bf16 *logits_ = nullptr, *dlogits_ = nullptr, *xp_ = nullptr, *ye_ = nullptr, *d_ye_ = nullptr, *d_xp_ = nullptr,
       *d_n2_router_ = nullptr;
  float *probs_ = nullptr, *weight_ = nullptr, *dweight_ = nullptr;
  Gemm qkv_fwd_, proj_fwd_, router_fwd_;
  std::vector<Gemm> fc1_fwd_, fc2_fwd_, proj_bwd_, qkv_bwd_, fc1_bwd_, fc2_bwd_, router_bwd_;
};

// Per repeat: forward, backward and optimizer times in microseconds.
struct PartSamples {
  std::vector<double> total, forward, backward, optimizer;
};

// Heat soak before the timed steps, in seconds: STACKSIM_STEP_SOAK_S, else
// 1.5 (none with --quick). A series of dense GEMMs takes the H200 to its
// 700 W power cap within 250 ms and ~0.85 of its short-burst rate (profiles/
// measured/h200-sxm-141gb-2026-12-04-calibrate, sustained/); a training step
// of minutes runs in the state its own mix of kernels holds, a few timed
// layer steps after a pause may not. With a soak the layer runs back to back
// that long first, so its steps are timed in the state a training step
// holds (measured on the H200: up to 6% slower than cool for the largest
// layers, profiles/measured/h200-sxm-141gb-2026-12-04b-calibrate).
double StepSoakSeconds(bool quick) {
  const char* v = std::getenv("STACKSIM_STEP_SOAK_S");
  if (v == nullptr || *v == '\0') return quick ? 0.0 : 1.5;
  char* end = nullptr;
  double s = std::strtod(v, &end);
  if (end == v || *end != '\0' || !(s >= 0) || s > 60) {
    throw std::invalid_argument(std::string("STACKSIM_STEP_SOAK_S wants seconds in [0, 60], got '") + v + "'");
  }
  return s;
}

// A training step runs the optimizer once per step, after many layers'
// forwards and backwards, so the layer's forward and backward are soaked and
// timed back to back without it, in the power state they hold together; the
// optimizer, bound by memory bandwidth, is timed on its own after them. (With
// the optimizer inside every repeat, a quarter of a 2K-token step ran at low
// power and the GEMMs at higher clocks than a training step holds: profiles/
// measured/h200-sxm-141gb-2026-12-04b-calibrate, README.) The total of a
// repeat is the sum of its three parts.
PartSamples TimeSteps(LayerStep& layer, cudaStream_t st, int warmup, int repeats, double soak_s) {
  for (int i = 0; i < warmup; ++i) {
    layer.Forward(st);
    layer.Backward(st);
    layer.Optimizer(st);
  }
  CUDA_OK(cudaStreamSynchronize(st));
  const auto soak_start = std::chrono::steady_clock::now();
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - soak_start).count() < soak_s) {
    for (int i = 0; i < 4; ++i) {  // a few queued at a time: the GPU never waits for the host
      layer.Forward(st);
      layer.Backward(st);
    }
    CUDA_OK(cudaStreamSynchronize(st));
  }
  std::vector<EventPair> fwd(repeats), bwd(repeats), opt(repeats);
  for (int r = 0; r < repeats; ++r) {
    CUDA_OK(cudaEventRecord(fwd[r].start, st));
    layer.Forward(st);
    CUDA_OK(cudaEventRecord(fwd[r].stop, st));
    CUDA_OK(cudaEventRecord(bwd[r].start, st));
    layer.Backward(st);
    CUDA_OK(cudaEventRecord(bwd[r].stop, st));
  }
  for (int r = 0; r < repeats; ++r) {
    CUDA_OK(cudaEventRecord(opt[r].start, st));
    layer.Optimizer(st);
    CUDA_OK(cudaEventRecord(opt[r].stop, st));
  }
  CUDA_OK(cudaEventSynchronize(opt[repeats - 1].stop));
  CUDA_LAUNCH_OK();
  PartSamples out;
  for (int r = 0; r < repeats; ++r) {
    out.forward.push_back(fwd[r].ElapsedUs());
    out.backward.push_back(bwd[r].ElapsedUs());
    out.optimizer.push_back(opt[r].ElapsedUs());
    out.total.push_back(out.forward.back() + out.backward.back() + out.optimizer.back());
  }
  return out;
}

std::string Seconds(double us) { return Num(us * 1e-6); }

// step_kernels.csv: the layer's kernels under CUPTI's activity records, one
// row per kernel (shape, part, index, kernel, start_us from the part's first
// kernel, duration_us), so that what the cost model predicts per op can be
// set beside what each kernel took, which the parts' CUDA events cannot say.
// Each part runs alone once, for its kernels' names and count (and the
// optimizer's rows). The forward and backward rows then come from the state
// the timed steps hold: they run back to back for kRecordSoakS, CUPTI starts
// while more are queued (the GPU never waits for it), and the last forward
// and backward recorded are kept, if their kernels match the parts' names;
// else the parts run alone stand in (`*soaked` false). False, with *why,
// when CUPTI cannot record (the step's timings do not depend on it).
constexpr double kRecordSoakS = 0.3;

bool RecordStepKernels(LayerStep& layer, const std::string& shape, cudaStream_t st, CsvWriter& csv, bool* soaked,
                       std::string* why) {
  const std::array<std::pair<const char*, void (LayerStep::*)(cudaStream_t)>, 3> parts = {
      {{"forward", &LayerStep::Forward}, {"backward", &LayerStep::Backward}, {"optimizer", &LayerStep::Optimizer}}};
  std::array<std::vector<KernelSpan>, 3> recorded;
  CUDA_OK(cudaStreamSynchronize(st));
  for (size_t p = 0; p < parts.size(); ++p) {
    KernelActivityRecorder rec;
    if (!rec.Start(why)) return false;
    (layer.*parts[p].second)(st);
    CUDA_OK(cudaStreamSynchronize(st));
    recorded[p] = rec.Stop();
    if (recorded[p].empty()) {
      *why = "CUPTI recorded no kernels";
      return false;
    }
  }
  const size_t nf = recorded[0].size(), nb = recorded[1].size();
  const auto soak_start = std::chrono::steady_clock::now();
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - soak_start).count() < kRecordSoakS) {
    for (int i = 0; i < 4; ++i) {
      layer.Forward(st);
      layer.Backward(st);
    }
    CUDA_OK(cudaStreamSynchronize(st));
  }
  for (int i = 0; i < 4; ++i) {  // queued while CUPTI starts
    layer.Forward(st);
    layer.Backward(st);
  }
  KernelActivityRecorder rec;
  if (!rec.Start(why)) return false;
  for (int i = 0; i < 3; ++i) {
    layer.Forward(st);
    layer.Backward(st);
  }
  CUDA_OK(cudaStreamSynchronize(st));
  std::vector<KernelSpan> spans = rec.Stop();
  *soaked = spans.size() >= nf + nb;
  for (size_t i = 0; *soaked && i < nf + nb; ++i) {
    const KernelSpan& want = i < nf ? recorded[0][i] : recorded[1][i - nf];
    *soaked = spans[spans.size() - nf - nb + i].name == want.name;
  }
  if (*soaked) {
    recorded[0].assign(spans.end() - static_cast<std::ptrdiff_t>(nf + nb), spans.end() - static_cast<std::ptrdiff_t>(nb));
    recorded[1].assign(spans.end() - static_cast<std::ptrdiff_t>(nb), spans.end());
  }
  for (size_t p = 0; p < parts.size(); ++p) {
    const std::vector<KernelSpan>& k = recorded[p];
    for (size_t i = 0; i < k.size(); ++i) {
      csv.Row({shape, parts[p].first, Num(static_cast<double>(i)), k[i].name,
               Num((k[i].start_ns - k.front().start_ns) * 1e-3), Num((k[i].end_ns - k[i].start_ns) * 1e-3)});
    }
  }
  return true;
}

}  // namespace

void RunStepCheckStep(StepContext& ctx) {
  const std::vector<StepShape>& shapes = StepShapes();
  LtHandle lt;
  kernels::DeviceBuffer<float> one(1);
  one.Upload({1.0f});
  const int sm_count = ctx.device.props.multiProcessorCount;
  {
    // Our own kernels first: nothing is timed unless all compute right.
    CsvWriter checks(ctx.RawPath("step_checks.csv"), {"kernel", "case", "rel_error", "tolerance", "ok"});
    int failed = 0;
    for (const kernels::CheckResult& c : CheckStepKernels(ctx.options->seed, sm_count, ctx.stream)) {
      checks.Row({c.kernel, c.case_name, Num(c.rel_error), Num(c.tolerance), c.ok ? "1" : "0"});
      if (!c.ok) {
        ++failed;
        ctx.log->Line("step: CHECK FAILED: " + c.kernel + " " + c.case_name + ": relative error " +
                      Num(c.rel_error) + " > " + Num(c.tolerance));
      }
    }
    if (failed > 0) {
      ctx.checks_failed += failed;
      ctx.log->Line("step: " + std::to_string(failed) + " check(s) of the step kernels failed (step_checks.csv); "
                    "no layer timed");
      return;
    }
  }
  CsvWriter csv(ctx.RawPath("step_measured.csv"),
                {"shape", "model", "tp", "seq", "micro_batch", "hidden", "ffn", "heads", "kv_heads", "head_dim",
                 "experts", "top_k", "expert_ffn", "measured_s", "min_s", "spread", "stable", "forward_s",
                 "backward_s", "optimizer_s", "parameters", "repeats"});
  CsvWriter kernel_csv(ctx.RawPath("step_kernels.csv"),
                       {"shape", "part", "index", "kernel", "start_us", "duration_us"});
  bool record_kernels = true;
  const int warmup = 2, repeats = ctx.quick() ? 5 : 9;
  const double soak_s = StepSoakSeconds(ctx.quick());
  ctx.log->Line("step: each layer runs " + Num(soak_s) + " s back to back before it is timed (STACKSIM_STEP_SOAK_S)");
  Progress progress(ctx.log, ctx.tag, static_cast<int>(shapes.size()));
  int done = 0;
  for (const StepShape& s : shapes) {
    if (ctx.deadline.Expired()) {
      ctx.log->Line("step: time budget spent; " + std::to_string(shapes.size() - done) + " of " +
                    std::to_string(shapes.size()) + " shapes not measured");
      ctx.stopped_early = true;
      return;
    }
    try {
      Slab count(nullptr);
      LayerStep sizing(s, count, false, lt.h, one.get(), sm_count);
      size_t free_bytes = 0, total_bytes = 0;
      CUDA_OK(cudaMemGetInfo(&free_bytes, &total_bytes));
      if (count.used() + (size_t{1} << 30) > free_bytes) {
        ctx.log->Line("step " + s.Name() + ": not measured: needs " + std::to_string(count.used() >> 20) +
                      " MiB, " + std::to_string(free_bytes >> 20) + " MiB free");
        ++ctx.items_failed;
        progress.Report(++done, s.Name());
        continue;
      }
      kernels::DeviceBuffer<uint8_t> memory(count.used());
      Slab slab(memory.get());
      LayerStep layer(s, slab, true, lt.h, one.get(), sm_count);
      layer.Fill(ctx.options->seed, ctx.stream);
      PartSamples parts;
      std::vector<PartSamples> tries;
      StableMeasurement m = ctx.MeasureStable(
          [&] {
            tries.push_back(TimeSteps(layer, ctx.stream, warmup, repeats, soak_s));
            return tries.back().total;
          },
          DeviceTimingPolicy(), "step " + s.Name());
      parts = tries.back();
      for (const PartSamples& t : tries) {
        if (t.total == m.samples) parts = t;
      }
      const SampleStats& st = m.verdict.stats;
      std::vector<std::string> row = {s.Name(),         s.model,          Num(s.tp),         Num(s.seq),
                                      Num(s.micro_batch), Num(s.hidden),  Num(s.ffn),        Num(s.heads),
                                      Num(s.kv_heads),  Num(s.head_dim),  Num(s.experts),    Num(s.top_k),
                                      Num(s.expert_ffn), Seconds(st.median), Seconds(st.min)};
      for (const std::string& c : StabilityCells(m.verdict)) row.push_back(c);
      row.push_back(Seconds(Summarize(parts.forward).median));
      row.push_back(Seconds(Summarize(parts.backward).median));
      row.push_back(Seconds(Summarize(parts.optimizer).median));
      row.push_back(Num(static_cast<double>(layer.parameters())));
      row.push_back(Num(repeats));
      csv.Row(row);
      ctx.log->Line("step " + s.Name() + ": " + Num(st.median / 1000.0) + " ms (forward " +
                    Num(Summarize(parts.forward).median / 1000.0) + ", backward " +
                    Num(Summarize(parts.backward).median / 1000.0) + ", optimizer " +
                    Num(Summarize(parts.optimizer).median / 1000.0) + ")");
      std::string why;
      bool soaked = false;
      if (record_kernels && !RecordStepKernels(layer, s.Name(), ctx.stream, kernel_csv, &soaked, &why)) {
        record_kernels = false;
        ctx.log->Line("step: kernels not recorded (step_kernels.csv): " + why);
      } else if (record_kernels && !soaked) {
        ctx.log->Line("step " + s.Name() + ": the soaked forward and backward's kernels did not match the parts "
                      "run alone; step_kernels.csv has the parts run alone");
      }
    } catch (const GemmUnsupported& e) {
      ++ctx.items_failed;
      ctx.log->Line("step " + s.Name() + ": not measured: a GEMM cuBLASLt cannot run: " + e.what());
    } catch (const std::exception& e) {
      ++ctx.items_failed;
      ctx.log->Line("step " + s.Name() + ": FAILED: " + e.what());
      std::string why;
      if (!CudaContextUsable(&why)) throw kernels::CudaError("CUDA unusable after a step: " + why);
    }
    progress.Report(++done, s.Name());
  }
}

}  // namespace stacksim::calibrate
