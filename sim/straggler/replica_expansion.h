// Expanding a symmetric training-step trace into the data-parallel replicas
// that differ, so that slow GPUs make everyone else wait.
//
// The generated trace (workload/training_step.h) holds one simulated rank per
// pipeline rank: every data-parallel replica stands for all of them. A slow
// GPU slows the whole (pipeline rank, replica) position it belongs to (its
// TP and CP peers wait for it at every TP/CP collective). A replica's
// *pattern* is its per-pipeline-rank compute-time factor (1 = healthy).
//
// ExpandReplicas clones the trace once per pattern ("variant"): variant v's
// copy of simulated rank r is rank v * R + r (R = the base trace's ranks).
// Data-parallel collectives (groups "dp", "expert-dp") and expert-parallel
// all-to-alls ("ep") become ONE collective per call whose members are that
// pipeline rank in every variant, so it starts when the slowest replica
// arrives; TP/CP collectives and pipeline sends stay inside their variant.
// SlowRankCostModel then stretches the compute tasks of each variant's
// ranks; communication is not slowed.
#ifndef STACKSIM_SIM_STRAGGLER_REPLICA_EXPANSION_H_
#define STACKSIM_SIM_STRAGGLER_REPLICA_EXPANSION_H_

#include <cstdint>
#include <vector>

#include "sim/config/plan.h"
#include "sim/engine/cost_model.h"
#include "sim/engine/network_model.h"
#include "sim/trace/trace.h"
#include "sim/util/units.h"

namespace stacksim::straggler {

// Where a global GPU rank sits: its pipeline rank (the simulated rank of the
// base trace) and its data-parallel replica. Ranks walk tp fastest, then cp,
// then dp and pp in plan.rank_order (workload/placement.h):
//   tp-cp-dp-pp: rank = tp + TP * (cp + CP * (dp + DP * pp))
//   tp-cp-pp-dp: rank = tp + TP * (cp + CP * (pp + PP * dp))
struct ReplicaPosition {
  int stage = 0;    // pipeline rank, 0 .. pp-1
  int replica = 0;  // data-parallel rank, 0 .. dp-1
};
// REQUIRES: 0 <= rank < tp * cp * dp * pp.
ReplicaPosition PositionOfRank(const config::PlanConfig& plan, int64_t rank);

// Compute-time factor per pipeline rank of one replica (>= 1).
using Pattern = std::vector<double>;

// Drops duplicate patterns and every pattern that another one dominates
// (<= at every pipeline rank), and sorts what is left, so that equal sets
// give equal vectors (a cache key). See the .cc for why this is exact.
std::vector<Pattern> PruneDominated(std::vector<Pattern> patterns);

// True for the groups whose collectives span replicas: data, expert-data and
// expert parallel, and a whole stage (FP8 amax reductions).
bool SpansReplicas(const trace::CommGroup& group);

// The base trace with `variants` copies of every rank, joined at the
// replica-spanning collectives. REQUIRES: base.Check() == "", variants >= 1.
trace::Trace ExpandReplicas(const trace::Trace& base, int variants);

// Scales each simulated rank's compute times by its factor (ranks past the
// end of `factors` run at 1x). Delays (host waits) are not compute and stay.
class SlowRankCostModel : public engine::CostModel {
 public:
  // `base` must outlive this model.
  SlowRankCostModel(const engine::CostModel& base, std::vector<double> factors)
      : base_(base), factors_(std::move(factors)) {}
  Time ComputeTime(const trace::ComputeOp& op) const override { return base_.ComputeTime(op); }
  Time ComputeTimeOnRank(const trace::ComputeOp& op, trace::RankId rank) const override;
  Time ComputeTimeBesideComm(const trace::ComputeOp& op, trace::RankId rank) const override;

 private:
  Time Scaled(Time t, trace::RankId rank) const;
  const engine::CostModel& base_;
  std::vector<double> factors_;
};

// Step time of the base trace with one replica per pattern (none: the
// base trace as it is). REQUIRES: each pattern has base.rank_count() factors.
Time ReplayPatterns(const trace::Trace& base, const std::vector<Pattern>& patterns, const engine::CostModel& cost,
                    const engine::NetworkModel& network);

}  // namespace stacksim::straggler

#endif  // STACKSIM_SIM_STRAGGLER_REPLICA_EXPANSION_H_
