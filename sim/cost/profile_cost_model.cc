#include "sim/cost/profile_cost_model.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/cost/attention_grid.h"
#include "sim/util/error.h"

namespace stacksim::cost {
namespace {

// Per-node cost of a kernel inside a replayed CUDA graph, as measured on an
// H200 (profiles/measured/h200-sxm-141gb-2026-11-29/launch_cuda.csv:
// graph_us_per_kernel = 0.50 us).
constexpr double kGraphKernelUs = 0.5;

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

ProfileCostModel::ProfileCostModel(const config::ProfileConfig& profile, bool cuda_graphs, int comm_sms,
                                   int overlap_sms)
    : profile_(profile),
      memory_bw_(profile.hbm_bandwidth.value * profile.copy_efficiency.value),
      launch_(cuda_graphs ? Time::Us(kGraphKernelUs) : profile.kernel_launch.value),
      compute_sms_(profile.sm_count.value - comm_sms),
      beside_comm_sms_(compute_sms_ - overlap_sms) {
  if (comm_sms < 0 || overlap_sms < 0 || beside_comm_sms_ < 1) {
    throw std::invalid_argument("comm_sms " + std::to_string(comm_sms) + " and overlap_sms " +
                                std::to_string(overlap_sms) + " leave no SM of " + profile.name + " to compute");
  }
}

double ProfileCostModel::GemmEfficiency(int64_t m, int64_t n, int64_t k, int64_t batch,
                                        config::Precision p) const {
  return GemmEfficiencyOn(m, n, k, batch, p, compute_sms_);
}

double ProfileCostModel::GemmEfficiencyOn(int64_t m, int64_t n, int64_t k, int64_t batch, config::Precision p,
                                          int64_t sms) const {
  const auto& eff = profile_.gemm.max_efficiency[static_cast<int>(p)];
  if (!eff) {
    throw std::invalid_argument(std::string("profile ") + profile_.name + " has no GEMM efficiency for " +
                                config::PrecisionName(p));
  }
  // Tile and wave quantization: the GPU computes whole tiles in whole waves
  // over the SMs that communication leaves it.
  const int64_t tm = profile_.gemm.tile.value.first;
  const int64_t tn = profile_.gemm.tile.value.second;
  const int64_t tiles = CeilDiv(m, tm) * CeilDiv(n, tn) * batch;
  const int64_t waves = CeilDiv(tiles, sms);
  double useful = static_cast<double>(m) * n * batch;
  double computed = static_cast<double>(waves) * sms * tm * tn;
  double quantization = useful / computed;
  // When one wave leaves most SMs idle, cuBLAS splits the K dimension across
  // CTAs (split-K / stream-K), recovering occupancy at the cost of a reduction;
  // never count worse than a fully split reduction would do.
  if (waves == 1 && tiles < sms) {
    int64_t splits = std::max<int64_t>(1, std::min<int64_t>(sms / tiles, k / 256));
    quantization = std::min(1.0, useful * splits / computed);
  }
  const double k_factor = static_cast<double>(k) / (static_cast<double>(k) + profile_.gemm.KOverhead(p));
  return eff->value * quantization * k_factor * static_cast<double>(sms) / static_cast<double>(profile_.sm_count.value);
}

Time ProfileCostModel::KernelTime(const trace::ComputeOp& op, int64_t sms) const {
  const double bytes_time = op.bytes.value / memory_bw_.value;
  switch (op.op_class) {
    case trace::OpClass::kGemm: {
      auto peak = profile_.Peak(op.precision);
      if (!peak) {
        // The plan asked for a precision the GPU lacks (ValidatePlan says so
        // first for scenarios; traces built otherwise land here).
        throw InputError("", "plan.precision", std::string("profile '") + profile_.name + "' has no " +
                                                   config::PrecisionName(op.precision) + " GEMM rate");
      }
      double eff = GemmEfficiencyOn(op.m, op.n, op.k, op.batch, op.precision, sms);
      double flop_time = op.flops.value / (peak->value * eff * clock_.gemm_rate);
      return Time::FromSeconds(std::max(flop_time, bytes_time));
    }
    case trace::OpClass::kAttention: {
      // Attention kernels run their matrix products in 16-bit.
      auto peak = profile_.Peak(config::Precision::kBf16);
      // The project's own kernel: its grid (attention_grid.h) instead of the
      // profile's seq factors, which were measured on PyTorch SDPA's kernels
      // (a block per head and 128 queries; ours loops a GQA group's heads in
      // each block and computes the causal diagonal's tiles whole: its
      // dependence on length is its grid's). FlashAttention-2 and the cuDNN
      // class: the seq factors, and their grid relative to the seq factors'
      // full-grid shape (few sequences x heads on a tensor-parallel rank).
      const bool own = op.attention_kernel == trace::AttentionKernel::kOwn;
      const double grid = AttentionGridFactor(op, sms, profile_.sm_count.value);
      double eff = AttentionEfficiency(op.attention_kernel, op.backward) *
                   (own ? grid
                        : profile_.AttentionSeqFactor(static_cast<double>(op.n), op.backward) * grid *
                              static_cast<double>(sms) / static_cast<double>(profile_.sm_count.value));
      double flop_time = op.flops.value / (peak->value * eff * clock_.attention_rate);
      return Time::FromSeconds(std::max(flop_time, bytes_time));
    }
    case trace::OpClass::kMemoryBound:
      return Time::FromSeconds(bytes_time / std::max(0.01f, op.bandwidth_efficiency));
  }
  return Time::Zero();
}

double ProfileCostModel::AttentionEfficiency(trace::AttentionKernel kernel, bool backward) const {
  switch (kernel) {
    case trace::AttentionKernel::kFastest:
      return backward ? profile_.attention_bwd_efficiency.value : profile_.attention_fwd_efficiency.value;
    case trace::AttentionKernel::kFlash2:
      return backward ? profile_.flash2_bwd_efficiency.value : profile_.flash2_fwd_efficiency.value;
    case trace::AttentionKernel::kOwn: {  // calibrate's measurement of it, else FlashAttention-2's
      const auto& own = backward ? profile_.own_attention_bwd_efficiency : profile_.own_attention_fwd_efficiency;
      if (own) return own->value;
      return backward ? profile_.flash2_bwd_efficiency.value : profile_.flash2_fwd_efficiency.value;
    }
    case trace::AttentionKernel::kFlash1:
      return backward ? profile_.flash1_bwd_efficiency.value : profile_.flash1_fwd_efficiency.value;
  }
  return profile_.attention_fwd_efficiency.value;
}

Time ProfileCostModel::TaskTime(const trace::ComputeOp& op, int64_t sms) const {
  return std::max(KernelTime(op, sms), IssueTime(op));
}

Time ProfileCostModel::ComputeTime(const trace::ComputeOp& op) const { return TaskTime(op, compute_sms_); }

Time ProfileCostModel::ComputeTimeBesideComm(const trace::ComputeOp& op, trace::RankId /*rank*/) const {
  if (beside_comm_sms_ == compute_sms_) return ComputeTime(op);
  return TaskTime(op, beside_comm_sms_);
}

void ProfileCostModel::AddToMix(const trace::ComputeOp& op, double count, WorkMix* mix) const {
  const double kernel = KernelTime(op, compute_sms_).seconds();
  mix->other_s += count * std::max(0.0, IssueTime(op).seconds() - kernel);  // TaskTime's floor beyond the kernel
  if (!(kernel > 0)) return;
  // The op's activity: the time it would take at its kernel's full rate over
  // the time it takes (grid, tiles, roofline), at most 1.
  auto add = [&](double* seconds, double* active, double full_rate_s) {
    *seconds += count * kernel;
    *active += count * std::min(kernel, full_rate_s);
  };
  switch (op.op_class) {
    case trace::OpClass::kGemm: {
      const auto peak = profile_.Peak(op.precision);
      const auto& eff = profile_.gemm.max_efficiency[static_cast<int>(op.precision)];
      add(&mix->gemm_s, &mix->gemm_active_s, (peak && eff) ? op.flops.value / (peak->value * eff->value) : kernel);
      break;
    }
    case trace::OpClass::kAttention: {
      const auto peak = profile_.Peak(config::Precision::kBf16);
      add(&mix->attention_s, &mix->attention_active_s,
          op.flops.value / (peak->value * AttentionEfficiency(op.attention_kernel, op.backward)));
      break;
    }
    case trace::OpClass::kMemoryBound:
      add(&mix->memory_s, &mix->memory_active_s, op.bytes.value / memory_bw_.value);
      break;
  }
}

ClockState ProfileCostModel::TraceClockState(const trace::Trace& trace) const {
  if (!profile_.power) return {};
  // Tasks that share an op (the same ref) are priced once, times their count.
  std::vector<int64_t> uses(trace.compute_op_count(), 0);
  std::vector<trace::TaskId> first(trace.compute_op_count(), -1);
  WorkMix mix;
  for (trace::TaskId t = 0; t < static_cast<trace::TaskId>(trace.size()); ++t) {
    if (trace.kind(t) != trace::TaskKind::kCompute) continue;
    const trace::Trace::ComputeRef ref = trace.compute_ref(t);
    if (ref < 0) {
      AddToMix(trace.compute(t), 1.0, &mix);
      continue;
    }
    if (uses[ref]++ == 0) first[ref] = t;
  }
  for (size_t ref = 0; ref < uses.size(); ++ref) {
    if (uses[ref] > 0) AddToMix(trace.compute(first[ref]), static_cast<double>(uses[ref]), &mix);
  }
  return SolveClockState(*profile_.power, mix);
}

}  // namespace stacksim::cost
