// How long a compute task takes on one GPU.
//
// The engine asks; implementations answer from a hardware profile
// (cost/profile_cost_model.h) or from fixed numbers in tests
// (FixedCostModel below).
#ifndef STACKSIM_SIM_ENGINE_COST_MODEL_H_
#define STACKSIM_SIM_ENGINE_COST_MODEL_H_

#include "sim/trace/trace.h"
#include "sim/util/units.h"

namespace stacksim::engine {

// The engine asks once per distinct op and rank of a replay and reuses the
// answer, so an implementation must give the same op on the same rank the
// same time (every one here is a function of the op's fields and the rank).
class CostModel {
 public:
  virtual ~CostModel() = default;
  virtual Time ComputeTime(const trace::ComputeOp& op) const = 0;
  // The time of `op` on simulated rank `rank` (what the engine asks). Ranks
  // run alike unless a model says otherwise: a straggler model slows the
  // ranks that stand for slow GPUs (sim/straggler).
  virtual Time ComputeTimeOnRank(const trace::ComputeOp& op, trace::RankId rank) const {
    (void)rank;
    return ComputeTime(op);
  }
  // The time of `op` on `rank` when it starts while a collective of the same
  // GPU is in flight: the collective's kernels hold SMs that the op then
  // lacks. The engine decides once, when the op starts. By default
  // communication takes nothing from compute.
  virtual Time ComputeTimeBesideComm(const trace::ComputeOp& op, trace::RankId rank) const {
    return ComputeTimeOnRank(op, rank);
  }
};

// Test double: every compute task takes flops / rate (+ a fixed time).
class FixedCostModel : public CostModel {
 public:
  explicit FixedCostModel(FlopRate rate, Time per_task = Time::Zero()) : rate_(rate), per_task_(per_task) {}
  Time ComputeTime(const trace::ComputeOp& op) const override {
    return ::stacksim::ComputeTime(op.flops, rate_) + per_task_;
  }

 private:
  FlopRate rate_;
  Time per_task_;
};

}  // namespace stacksim::engine

#endif  // STACKSIM_SIM_ENGINE_COST_MODEL_H_
