// Compute cost from a hardware profile.
//
// GEMM: FLOPs over the precision's dense peak times the profile's large-GEMM
// efficiency, further reduced by tile and wave quantization (a GEMM runs in
// whole waves of (rows x cols) output tiles over the SMs; NVIDIA, "Matrix
// Multiplication Background User's Guide", DU-09799-001, ch. 3), and never
// faster than its operands can be streamed from HBM (roofline).
// Fused attention: FLOPs over peak times the profile's forward or backward
// attention efficiency, with the same memory floor.
// Memory-bound ops: bytes over the achievable copy bandwidth.
// Every task also costs at least its kernels' launch time: with eager launches
// a GPU cannot run kernels faster than the host issues them.
#ifndef STACKSIM_SIM_COST_PROFILE_COST_MODEL_H_
#define STACKSIM_SIM_COST_PROFILE_COST_MODEL_H_

#include "sim/config/profile.h"
#include "sim/cost/power_state.h"
#include "sim/engine/cost_model.h"
#include "sim/trace/trace.h"

namespace stacksim::cost {

class ProfileCostModel : public engine::CostModel {
 public:
  // cuda_graphs: kernels launched from captured graphs (launch cost per kernel
  // drops to the graph's per-node cost). comm_sms: SMs that communication
  // kernels hold for the whole step (PlanConfig::comm_sms); GEMMs and
  // attention run on the rest, memory-bound kernels keep the full HBM rate.
  // overlap_sms: SMs that a collective's kernels take from GEMMs and
  // attention that start while it is in flight (PlanConfig::overlap_comm_sms);
  // memory-bound kernels keep the full HBM rate.
  // REQUIRES: 0 <= comm_sms, 0 <= overlap_sms, comm_sms + overlap_sms < profile.sm_count.
  ProfileCostModel(const config::ProfileConfig& profile, bool cuda_graphs, int comm_sms = 0, int overlap_sms = 0);

  // GEMMs and attention at the clock a power state allows (power_state.h):
  // their compute time divided by its rates. Default: the profile's rates.
  void set_clock(const ClockState& clock) { clock_ = clock; }
  const ClockState& clock() const { return clock_; }

  Time ComputeTime(const trace::ComputeOp& op) const override;
  Time ComputeTimeBesideComm(const trace::ComputeOp& op, trace::RankId rank) const override;

  // Fraction of dense peak a GEMM of this shape reaches (for tests and reports).
  // REQUIRES: the profile has a peak and GEMM efficiency for `p`.
  double GemmEfficiency(int64_t m, int64_t n, int64_t k, int64_t batch, config::Precision p) const;
  Bandwidth memory_bandwidth() const { return memory_bw_; }

  // Adds `count` runs of the op at the profile's rates to its class in `mix`
  // (seconds, and seconds weighted by its activity: power_state.h); launch
  // time beyond the kernel's counts as idle ("other").
  void AddToMix(const trace::ComputeOp& op, double count, WorkMix* mix) const;

  // The profile's power state for the compute work of a whole trace (every
  // rank's compute tasks at the profile's rates, communication left out: the
  // GPU is taken as busy throughout, the upper bound on its draw). The
  // profile's rates when it has no power model.
  ClockState TraceClockState(const trace::Trace& trace) const;

 private:
  // On `sms` of the GPU's SMs (the rest held by communication).
  Time KernelTime(const trace::ComputeOp& op, int64_t sms) const;
  Time TaskTime(const trace::ComputeOp& op, int64_t sms) const;
  // The host's issue time for the op's kernel launches (TaskTime's floor).
  Time IssueTime(const trace::ComputeOp& op) const { return launch_ * static_cast<double>(op.kernels); }
  double GemmEfficiencyOn(int64_t m, int64_t n, int64_t k, int64_t batch, config::Precision p, int64_t sms) const;
  // Fraction of bf16 peak the given attention kernel reaches.
  double AttentionEfficiency(trace::AttentionKernel kernel, bool backward) const;

  const config::ProfileConfig profile_;
  Bandwidth memory_bw_;
  Time launch_;
  int64_t compute_sms_;   // SMs left to GEMMs and attention
  int64_t beside_comm_sms_;  // ... while a collective is in flight
  ClockState clock_;
};


}  // namespace stacksim::cost

#endif  // STACKSIM_SIM_COST_PROFILE_COST_MODEL_H_
