#include "sim/workload/op_builders.h"

#include <algorithm>

namespace stacksim::workload {
namespace {

using config::EagerKernel;
using config::Precision;
using trace::CollectiveKind;
using trace::OpClass;

double D(int64_t v) { return static_cast<double>(v); }

// GEMM precision: fp32 training runs its products on TF32 tensor cores.
Precision GemmPrecision(Precision p) { return p == Precision::kFp32 ? Precision::kTf32 : p; }

}  // namespace

Op Gemm(const std::string& name, int64_t m, int64_t n, int64_t k, int64_t batch, const LayerShape& s) {
  Op op;
  op.name = name;
  op.role = trace::TaskRole::kGemm;
  op.compute.op_class = OpClass::kGemm;
  op.compute.precision = GemmPrecision(s.kernels.precision);
  op.compute.m = m;
  op.compute.n = n;
  op.compute.k = k;
  op.compute.batch = batch;
  op.compute.flops = Flops{2.0 * D(m) * D(n) * D(k) * D(batch)};
  // FP8 GEMMs read one-byte operands and write a 16-bit output.
  const double in_bytes = s.kernels.precision == Precision::kFp8 ? 1.0 : s.element_bytes();
  op.compute.bytes = Bytes{((D(m) * D(k) + D(k) * D(n)) * in_bytes + D(m) * D(n) * s.element_bytes()) * D(batch)};
  return op;
}

LayerShape AsBf16(const LayerShape& s) {
  LayerShape b = s;
  if (b.kernels.precision == Precision::kFp8) b.kernels.precision = Precision::kBf16;
  return b;
}

Op Gemm16(const std::string& name, int64_t m, int64_t n, int64_t k, int64_t batch, const LayerShape& s) {
  return Gemm(name, m, n, k, batch, AsBf16(s));
}

Op Memory(const std::string& name, double bytes, const LayerShape& s, int kernels, EagerKernel kind,
          double eager_passes, int eager_kernels) {
  Op op;
  op.name = name;
  op.role = trace::TaskRole::kMemoryBound;
  op.compute.op_class = OpClass::kMemoryBound;
  op.compute.precision = s.kernels.precision;
  op.compute.bytes = Bytes{bytes};
  // FLOP counts cover matrix products only (the usual MFU/HFU convention).
  op.compute.flops = Flops{0};
  op.compute.kernels = static_cast<int16_t>(kernels);
  if (!s.kernels.fused) {
    op.compute.bytes = Bytes{bytes * eager_passes};
    op.compute.bandwidth_efficiency = static_cast<float>(s.kernels.EagerEfficiency(kind));
    op.compute.kernels = static_cast<int16_t>(std::max(kernels, eager_kernels));
  }
  return op;
}

namespace {

// A cast kernel of `elements` 16-bit values to FP8 (see AddCast).
Op CastOp(const std::string& name, double elements, const LayerShape& s) {
  // Transformer Engine's cast-transpose writes the FP8 copy and its transpose.
  const double written = s.fp8_casts == config::Fp8Casts::kTransformerEngine ? 2.0 : 1.0;
  return Memory(name, elements * (s.element_bytes() + written), s, 1, EagerKernel::kCast);
}

}  // namespace

void AddCast(std::vector<Op>& ops, const std::string& name, double elements, const LayerShape& s) {
  // Compiled into the producer's kernel, which writes FP8 directly.
  if (s.kernels.precision != Precision::kFp8 || s.fp8_casts == config::Fp8Casts::kIntoProducers) return;
  ops.push_back(CastOp(name, elements, s));
}

void AddForwardCasts(std::vector<Op>& ops, const std::string& name, int64_t m, int64_t n, int64_t k, int64_t batch,
                     bool input_is_fp8, const LayerShape& s) {
  if (s.kernels.precision == Precision::kFp8) {
    // A weight is a parameter, not another kernel's output: its cast is a
    // kernel of its own under every policy.
    // FP8 weights (plan.fp8_params): the optimizer wrote them in FP8; the
    // step computes only their transpose (one byte read, one written).
    Op w = s.fp8_params ? Memory(name + "-transpose-w", 2.0 * D(k) * D(n) * D(batch), s, 1, EagerKernel::kCast)
                        : CastOp(name + "-cast-w", D(k) * D(n) * D(batch), s);
    w.once_per_step = s.fp8_params || s.fp8_casts == config::Fp8Casts::kTransformerEngine;  // the FP8 weight cache
    ops.push_back(std::move(w));
  }
  if (!input_is_fp8) AddCast(ops, name + "-cast-x", D(m) * D(k) * D(batch), s);
}

void AddFp8InputTranspose(std::vector<Op>& ops, const std::string& name, double elements, const LayerShape& s) {
  if (s.kernels.precision != Precision::kFp8 || s.fp8_casts != config::Fp8Casts::kTransformerEngine) return;
  ops.push_back(Memory(name + "-transpose-x", elements * 2.0, s, 1, EagerKernel::kCast));
}

Op Collective(const std::string& name, CollectiveKind kind, double bytes, bool async) {
  Op op;
  op.is_collective = true;
  op.name = name;
  op.role = trace::TaskRole::kTpComm;
  op.collective = kind;
  op.bytes = Bytes{bytes};
  op.async = async;
  return op;
}

double NormTokens(const LayerShape& s) {
  return s.sequence_parallel ? D(s.tokens()) / s.tp : D(s.tokens());
}

void AddReduce(std::vector<Op>& ops, const std::string& name, const LayerShape& s) {
  if (s.tp == 1) return;
  double bytes = D(s.tokens()) * D(s.hidden) * s.element_bytes();
  ops.push_back(Collective(name, s.sequence_parallel ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce,
                           bytes));
}

namespace {

// The SP all-gather of the micro-batch's tokens x hidden, `element_bytes` each.
void AddSequenceGather(std::vector<Op>& ops, const std::string& name, const LayerShape& s, double element_bytes,
                       bool async) {
  if (s.tp == 1 || !s.sequence_parallel) return;
  ops.push_back(Collective(name, CollectiveKind::kAllGather, D(s.tokens()) * D(s.hidden) * element_bytes, async));
}

}  // namespace

void AddGather(std::vector<Op>& ops, const std::string& name, const LayerShape& s, bool async) {
  AddSequenceGather(ops, name, s, s.gather_element_bytes(), async);
}

void AddGather16(std::vector<Op>& ops, const std::string& name, const LayerShape& s) {
  AddSequenceGather(ops, name, s, s.element_bytes(), /*async=*/false);
}

double ActBytes(const LayerShape& s, double elements) { return elements * s.element_bytes(); }

// Reads x and the residual, writes the sum (and a one-byte dropout mask).
Op ResidualForward(const std::string& name, const LayerShape& s) {
  double n = NormTokens(s) * D(s.hidden);
  double fused = ActBytes(s, 3 * n) + (s.dropout ? n : 0);
  // Eager: bias add (read, write), dropout (read, write, mask), residual add
  // (two reads, one write), each its own kernel when present.
  double eager = ActBytes(s, 3 * n) + (s.bias ? ActBytes(s, 2 * n) : 0) + (s.dropout ? ActBytes(s, 2 * n) + n : 0);
  int kernels = 1 + (s.bias ? 1 : 0) + (s.dropout ? 1 : 0);
  return Memory(name, fused, s, 1, s.dropout ? EagerKernel::kDropout : EagerKernel::kElementwise, eager / fused,
                kernels);
}

EagerKernel NormKernel(const LayerShape& s) { return s.rms_norm ? EagerKernel::kRmsNorm : EagerKernel::kLayerNorm; }

EagerKernel ActivationKernel(const LayerShape& s) {
  return s.gated ? EagerKernel::kGatedActivation : EagerKernel::kGelu;
}


Op EagerParts(const std::string& name, double fused_bytes, int fused_kernels, const std::vector<EagerPart>& parts,
              int eager_kernels, const LayerShape& s) {
  double bytes = 0, time = 0;
  for (const EagerPart& p : parts) {
    bytes += p.bytes;
    time += p.bytes / s.kernels.EagerEfficiency(p.kind);
  }
  Op op = Memory(name, fused_bytes, s, fused_kernels, EagerKernel::kElementwise, bytes / fused_bytes, eager_kernels);
  if (!s.kernels.fused) op.compute.bandwidth_efficiency = static_cast<float>(bytes / time);
  return op;
}

namespace {

// RMSNorm as fp32 tensor ops (config::EagerModules::kFp32TensorOps), bytes
// per element with e-byte activations and f = 4. Forward, one kernel each:
// x.float() (e + f), pow(2) (2f), mean (f), x * rsqrt (2f; the row
// statistics are negligible), type_as (f + e), * weight (2e): two casts of
// 2(e + f) and 2e + 5f of element-wise work in 7 kernels. Backward as
// autograd runs it: * weight (2e) and the weight's gradient (dy * y, 3e,
// summed over rows, e), type_as (e + f), * rsqrt (2f) and the statistic's
// gradient (dy * x, 3f, summed, f), mean's expanded gradient (f), pow's
// (x.pow(1), * 2, * dy: 6f), the two branches of x's gradient added (3f),
// .float() (f + e): two casts of 2(e + f) and 6e + 16f in 14 kernels.
constexpr double kFp32Bytes = 4.0;

// Whether eager kernels run RMSNorm as fp32 tensor ops (torchtitan's and
// Hugging Face's RMSNorm alike).
bool Fp32TensorOps(const LayerShape& s) {
  return !s.kernels.fused && s.eager_modules != config::EagerModules::kLibrary;
}

Op Fp32RmsNorm(const std::string& name, const LayerShape& s, bool backward) {
  const double n = NormTokens(s) * D(s.hidden);
  const double e = s.element_bytes(), f = kFp32Bytes;
  const double fused = backward ? 4 * e : 2 * e;  // what NormForward / NormBackward count
  const double elementwise = backward ? 6 * e + 16 * f : 2 * e + 5 * f;
  return EagerParts(name, n * fused, backward ? 2 : 1,
                    {{n * elementwise, EagerKernel::kElementwise}, {n * 2 * (e + f), EagerKernel::kCast}},
                    backward ? 14 : 7, s);
}

}  // namespace

Op NormForward(const std::string& name, const LayerShape& s) {
  if (s.rms_norm && Fp32TensorOps(s)) return Fp32RmsNorm(name, s, /*backward=*/false);
  double n = NormTokens(s) * D(s.hidden);
  return Memory(name, ActBytes(s, 2 * n), s, 1, NormKernel(s));
}

// Norm backward reads x and dy, writes dx, and adds the residual branch's gradient.
Op NormBackward(const std::string& name, const LayerShape& s) {
  if (s.rms_norm && Fp32TensorOps(s)) return Fp32RmsNorm(name, s, /*backward=*/true);
  double n = NormTokens(s) * D(s.hidden);
  return Memory(name, ActBytes(s, 4 * n), s, 2, NormKernel(s));
}

Op ResidualBackward(const std::string& name, const LayerShape& s) {
  double n = NormTokens(s) * D(s.hidden);
  double fused = ActBytes(s, 3 * n) + (s.dropout ? n : 0);
  double eager = fused + (s.bias ? ActBytes(s, 2 * n) : 0);  // bias gradient: a separate reduction
  return Memory(name, fused, s, 1, s.dropout ? EagerKernel::kDropout : EagerKernel::kElementwise, eager / fused,
                1 + (s.bias ? 1 : 0));
}

void GemmBackward(std::vector<Op>& ops, const std::string& name, int64_t m, int64_t n, int64_t k,
                  const LayerShape& s, int wait_for) {
  AddCast(ops, name + "-cast-dy", D(m) * D(n), s);  // FP8 (e5m2) output gradient
  ops.push_back(Gemm(name + "-dgrad", m, k, n, 1, s));
  Op w = Gemm(name + "-wgrad", k, n, m, 1, s);
  w.wait_for = wait_for;
  w.weight_grad = true;
  ops.push_back(w);
}

void GroupedGemmBackward(std::vector<Op>& ops, const std::string& name, int64_t m, int64_t n, int64_t k,
                         int64_t batch, const LayerShape& s, bool dy_is_fp8) {
  if (!dy_is_fp8) AddCast(ops, name + "-cast-dy", D(m) * D(n) * D(batch), s);
  ops.push_back(Gemm(name + "-dgrad", m, k, n, batch, s));
  Op w = Gemm(name + "-wgrad", k, n, m, batch, s);
  w.weight_grad = true;
  ops.push_back(w);
}

Op MixerGemm(const std::string& name, int64_t m, int64_t n, int64_t k, int64_t batch, const LayerShape& s) {
  Op op = Gemm16(name, m, n, k, batch, s);
  op.role = trace::TaskRole::kAttention;
  return op;
}

void MixerInProjForward(std::vector<Op>& ops, const std::string& proj, const std::string& tag, int64_t width,
                        const LayerShape& s) {
  const int64_t T = s.tokens();
  AddGather(ops, "ag-" + tag, s);
  AddForwardCasts(ops, proj + "in-proj", T, width, s.hidden, 1, /*input_is_fp8=*/true, s);
  ops.push_back(Gemm(proj + "in-proj", T, width, s.hidden, 1, s));
}

void MixerInProjBackward(std::vector<Op>& ops, const std::string& proj, const std::string& tag, int64_t width,
                         const LayerShape& s) {
  const int64_t T = s.tokens();
  int regather = -1;
  if (s.sequence_parallel && s.tp > 1) {
    AddGather(ops, "ag-" + tag + "-input", s, /*async=*/true);
    regather = static_cast<int>(ops.size()) - 1;
  }
  AddFp8InputTranspose(ops, proj + "in-proj", D(T) * D(s.hidden), s);
  GemmBackward(ops, proj + "in-proj", T, width, s.hidden, s, regather);
  AddReduce(ops, "tp-" + tag + "-grad", s);
}

void MixerOutProjForward(std::vector<Op>& ops, const std::string& proj, const std::string& tag, int64_t width,
                         const LayerShape& s) {
  const int64_t T = s.tokens();
  AddForwardCasts(ops, proj + "out-proj", T, s.hidden, width, 1, false, s);
  ops.push_back(Gemm(proj + "out-proj", T, s.hidden, width, 1, s));
  AddReduce(ops, "tp-" + tag, s);
}

void MixerOutProjBackward(std::vector<Op>& ops, const std::string& proj, const std::string& tag, int64_t width,
                          const LayerShape& s) {
  AddGather(ops, "ag-" + tag + "-grad", s);  // row-parallel: gather the output gradient
  GemmBackward(ops, proj + "out-proj", s.tokens(), s.hidden, width, s);
}

}  // namespace stacksim::workload
