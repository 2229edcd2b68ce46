#include "sim/workload/stage_groups.h"

#include <tuple>
#include <utility>

#include "sim/workload/placement.h"

namespace stacksim::workload {

StageGroups AddStageGroups(trace::Trace& t, const config::ScenarioConfig& s, int stages, bool dual_pipe) {
  const config::PlanConfig& plan = s.plan;
  const int p = stages;
  StageGroups out;
  PlanGroups groups = PlacePlan(plan, s.topology);
  for (int r = 0; r < p; ++r) {
    // This stage's copy of each group: simulated by rank r, placed at the stage's first GPU.
    auto at_stage = [&](trace::CommGroup g) {
      g.simulated = {r};
      g.first_rank = StageFirstRank(plan, r);
      return t.AddGroup(std::move(g));
    };
    out.tp.push_back(at_stage(groups.tp));
    out.dp.push_back(at_stage(groups.dp));
    out.cp.push_back(at_stage(groups.cp));
    out.ep.push_back(at_stage(groups.ep));
    out.edp.push_back(at_stage(groups.edp));
    out.next_pair.push_back(t.AddGroup(PlacePipelinePair(plan, s.topology, r, (r + 1) % p)));
    out.prev_pair.push_back(t.AddGroup(PlacePipelinePair(plan, s.topology, (r + p - 1) % p, r)));
  }
  if (s.model.tie_word_embeddings && p > 1) {
    trace::CommGroup emb = PlacePipelinePair(plan, s.topology, 0, p - 1);
    emb.role = trace::GroupRole::kEmbedding;
    emb.name = trace::GroupRoleName(emb.role);
    emb.simulated = {0, p - 1};
    out.embedding = t.AddGroup(emb);
  }
  if (dual_pipe) {
    // DualPipe: ranks r and p-1-r hold the same two stages; each pair sums
    // its gradients.
    out.mirror.assign(p, trace::kNoGroup);
    for (int r = 0; r < p / 2; ++r) {
      trace::CommGroup g = PlacePipelinePair(plan, s.topology, r, p - 1 - r);
      g.role = trace::GroupRole::kDualPipeMirror;
      g.name = trace::GroupRoleName(g.role);
      g.simulated = {r, p - 1 - r};
      out.mirror[r] = out.mirror[p - 1 - r] = t.AddGroup(g);
    }
  }
  // Hybrid-sharded FSDP only, after every other group (plans without it keep
  // the group ids they always had).
  out.fsdp = out.dp;
  out.fsdp_replica.assign(p, trace::kNoGroup);
  if (plan.ShardGroup() < plan.dp) {
    for (int r = 0; r < p; ++r) {
      for (auto [g, dst] : {std::pair{&groups.fsdp, &out.fsdp}, std::pair{&groups.fsdp_replica, &out.fsdp_replica}}) {
        trace::CommGroup copy = *g;
        copy.simulated = {r};
        copy.first_rank = StageFirstRank(plan, r);
        (*dst)[r] = t.AddGroup(std::move(copy));
      }
    }
  }
  out.dp_local.assign(p, trace::kNoGroup);
  out.dp_outer.assign(p, trace::kNoGroup);
  if (plan.dp_sync.method == config::DpSyncMethod::kDiLoCo) {
    const int workers = plan.dp_sync.workers;
    const int local = plan.dp / workers;
    const int stride = static_cast<int>(groups.dp.stride);
    const int domain = DomainSize(s.topology);
    for (int r = 0; r < p; ++r) {
      for (auto [count, step, dst] : {std::tuple{local, stride, &out.dp_local},
                                      std::tuple{workers, stride * local, &out.dp_outer}}) {
        trace::CommGroup g = PlaceGroup(trace::GroupRole::kDp, 0, step, count, domain);
        g.stride = step;
        g.siblings = groups.dp.siblings;
        g.sibling_stride = groups.dp.sibling_stride;
        g.simulated = {r};
        g.first_rank = StageFirstRank(plan, r);
        (*dst)[r] = t.AddGroup(std::move(g));
      }
    }
  }
  // FP8 delayed scaling only, last of all (other plans keep their group ids).
  out.stage.assign(p, trace::kNoGroup);
  if (plan.fp8_amax_reduction && plan.precision == config::Precision::kFp8) {
    for (int r = 0; r < p; ++r) {
      trace::CommGroup g = groups.stage;
      g.simulated = {r};
      g.first_rank = StageFirstRank(plan, r);
      out.stage[r] = t.AddGroup(std::move(g));
    }
  }
  return out;
}

}  // namespace stacksim::workload
