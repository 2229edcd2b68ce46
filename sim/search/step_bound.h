// A lower bound on the simulated step time of a plan, in microseconds of
// work instead of a replay: what lets a search skip plans that cannot reach
// the current top of the ranking.
//
// The bound is the work each pipeline rank must do on its compute stream
// (its kernels, host waits and blocking collectives, each at its unshared
// cost from the same cost and network models the replay uses), plus the
// pipeline's unavoidable fill and drain: a rank's first kernel waits for the
// forward of every earlier stage, and (schedules with a whole backward pass)
// the backward of the last micro-batch must still pass every earlier stage
// after the rank's last backward. Everything left out (overlapped
// collectives, pipeline sends, data-parallel reduction, the optimizer step,
// contention) only adds time in the replay, so bound <= simulated step. The
// replay may wait longer than the fill and drain (1F1B's bubble); the bound
// never assumes it does. Tests check bound <= Simulate over many plans.
//
// Costs per layer depend on (tp, cp, ep, sp, micro-batch, recompute modules) only and are
// cached. Not thread-safe: one instance per thread.
#ifndef STACKSIM_SIM_SEARCH_STEP_BOUND_H_
#define STACKSIM_SIM_SEARCH_STEP_BOUND_H_

#include <cstdint>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "sim/config/scenario.h"
#include "sim/cost/profile_cost_model.h"
#include "sim/net/analytic_network.h"
#include "sim/util/units.h"
#include "sim/workload/pipeline_schedule.h"

namespace stacksim::search {

class StepTimeBound {
 public:
  // The scenario supplies model, topology, profile, sequence length and the
  // plan fields a search leaves fixed; its own plan and GPU count are unused.
  explicit StepTimeBound(const config::ScenarioConfig& scenario);

  // REQUIRES: config::ValidatePlan passes for the scenario with this plan
  // and `gpus`.
  Time Bound(const config::PlanConfig& plan, int gpus);

  // A tighter bound (>= Bound): the plan's pipeline schedule replayed with
  // one node per forward / backward / weight pass of a chunk (its compute-
  // stream work), pipeline sends as delays on the edges between stages at
  // their unshared cost, and the distributed optimizer's parameter gathers
  // that the first forward of each chunk waits for. Each node stands for a
  // chain of trace tasks that takes at least as long and has at least its
  // dependencies, so this replay ends no later than the full one (DualPipe's
  // overlapped pairs: see the .cc). With ZeRO-3 it is also at least the sum
  // of a rank's per-layer parameter gathers and gradient reduce-scatters,
  // which its DP stream runs one at a time. Costs O(p x v x m); schedules are
  // cached.
  Time PipelineBound(const config::PlanConfig& plan, int gpus);

 private:
  // Per micro-batch, on one rank's compute stream.
  struct LayerCosts {
    // Per layer kind (config::LayerKind).
    Time fwd[config::kNumLayerKinds], bwd[config::kNumLayerKinds], bwd_input[config::kNumLayerKinds];
    Time weight[config::kNumLayerKinds], recompute_full[config::kNumLayerKinds];
    Time recompute_selective[config::kNumLayerKinds];
    Time emb_fwd, emb_bwd, head_fwd, head_bwd, head_bwd_input, head_weight;
    // DualPipe only: the expert all-to-alls a layer's forward / backward
    // issues, at their unshared cost (ListTime leaves them out there).
    Time a2a_fwd[config::kNumLayerKinds], a2a_bwd[config::kNumLayerKinds];
  };
  const LayerCosts& Costs(const config::PlanConfig& plan, int gpus);
  // Per virtual stage, per micro-batch: forward, whole backward (with
  // recomputation), the backward's activation-gradient part, its weight part.
  struct StageCosts {
    std::vector<Time> fwd, bwd, bwd_input, weight;
    std::vector<Time> a2a_fwd, a2a_bwd;  // DualPipe: expert all-to-alls of the forward / backward
  };
  // Cached per (layer costs, pp, chunks, recompute).
  const StageCosts& PerStage(const config::PlanConfig& plan, int gpus);
  const std::vector<std::vector<workload::PipelineStep>>& Schedule(const workload::PipelineLayout& layout);
  Time GradientTail(const config::PlanConfig& plan, const workload::PipelineLayout& layout,
                    const std::vector<Time>& grads_done);

  config::ScenarioConfig scenario_;
  config::ScenarioConfig scratch_;  // scenario_ with the plan being bounded
  cost::ProfileCostModel cost_;
  net::AnalyticNetwork network_;
  std::map<std::tuple<int, int, int, int, bool, int64_t, bool, uint32_t>, std::unique_ptr<LayerCosts>> cache_;
  std::map<std::tuple<int, int, int, int, bool, int, bool>, std::vector<std::vector<workload::PipelineStep>>>
      schedules_;
  std::map<std::tuple<int, int, int, int, bool, int64_t, bool, int, int, int, int, uint32_t>, std::unique_ptr<StageCosts>>
      stage_costs_;
};

}  // namespace stacksim::search

#endif  // STACKSIM_SIM_SEARCH_STEP_BOUND_H_
