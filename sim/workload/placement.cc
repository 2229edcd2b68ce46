#include "sim/workload/placement.h"

#include <algorithm>

namespace stacksim::workload {

int DomainSize(const config::TopologyConfig& topology) {
  if (topology.scale_up.kind == config::ScaleUpKind::kPcie) return topology.gpus_per_node;
  return std::max(topology.scale_up.domain_gpus, topology.gpus_per_node);
}

trace::CommGroup PlaceGroup(trace::GroupRole role, int first, int stride, int count, int domain) {
  trace::CommGroup g;
  g.role = role;
  g.name = trace::GroupRoleName(role);
  g.size = count;
  // Members in the first member's domain; with regular strides every domain
  // the group touches holds the same number.
  int64_t first_domain = first / domain;
  int in_first = 0;
  for (int i = 0; i < count && i <= domain; ++i) {
    if ((first + static_cast<int64_t>(i) * stride) / domain == first_domain) ++in_first;
  }
  g.ranks_per_node = std::max(1, in_first);
  g.nodes = (count + g.ranks_per_node - 1) / g.ranks_per_node;
  return g;
}

int64_t PipelineStride(const config::PlanConfig& plan) {
  const int64_t block = static_cast<int64_t>(plan.tp) * plan.cp;
  return plan.rank_order == config::RankOrder::kTpCpPpDp ? block : block * plan.dp;
}

int64_t DataParallelStride(const config::PlanConfig& plan) {
  const int64_t block = static_cast<int64_t>(plan.tp) * plan.cp;
  return plan.rank_order == config::RankOrder::kTpCpPpDp ? block * plan.pp : block;
}

PlanGroups PlacePlan(const config::PlanConfig& plan, const config::TopologyConfig& topology) {
  int domain = DomainSize(topology);
  const bool pp_inner = plan.rank_order == config::RankOrder::kTpCpPpDp;
  const int64_t dp_stride = DataParallelStride(plan);
  PlanGroups out;
  out.tp = PlaceGroup(trace::GroupRole::kTp, 0, 1, plan.tp, domain);
  // Every data-parallel replica (and context-parallel rank) runs its own TP
  // group at once: the stage's other tp blocks, contiguous in the default
  // order; with pipeline stages in between (pp-inner, cp 1) one per replica.
  out.tp.siblings = plan.dp * plan.cp;
  out.tp.sibling_stride = pp_inner ? dp_stride : plan.tp;
  // Gradients (and the distributed optimizer's shards) span dp x cp: the CP
  // ranks hold the same weights (Megatron's data-parallel-with-CP group).
  // Default order: cp and dp adjacent, one stride of tp. Pp-inner (cp 1):
  // replicas tp x pp apart.
  const int dp_stride_int = static_cast<int>(pp_inner ? dp_stride : plan.tp);
  out.dp = PlaceGroup(trace::GroupRole::kDp, 0, dp_stride_int, plan.dp * plan.cp, domain);
  out.dp.stride = dp_stride_int;
  // ... and every tensor-parallel rank its own DP group.
  out.dp.siblings = plan.tp;
  out.dp.sibling_stride = 1;
  // Ring attention's K/V exchange: cp ranks, tp apart (tp fastest, then cp).
  // Every TP rank of every replica runs its own: tp consecutive copies per
  // replica, replicas a tp x cp block apart (cp > 1 keeps the default order).
  out.cp = PlaceGroup(trace::GroupRole::kCp, 0, plan.tp, plan.cp, domain);
  out.cp.stride = plan.tp;
  out.cp.siblings = plan.tp * plan.dp;
  out.cp.sibling_stride = 1;
  out.cp.sibling_run = plan.tp;
  out.cp.sibling_run_stride = static_cast<int64_t>(plan.tp) * plan.cp;
  const int folded = plan.tp * plan.cp * plan.dp;
  const int ep = std::max(1, plan.ep);
  // Megatron-Core orders expert ranks expert-TP fastest, then EP, then
  // expert-DP (parallel_state.py, the expert RankGenerator's "tp-ep-dp-pp"):
  // EP members sit etp apart, and ep x etp consecutive ranks share a layer's
  // experts. With etp > 1 the siblings named are the EP groups of the other
  // expert-TP ranks of the same block (the other blocks' load is left out,
  // as one sibling stride cannot name both).
  const int etp = std::max(1, plan.etp);
  out.ep = PlaceGroup(trace::GroupRole::kEp, 0, etp, ep, domain);
  out.ep.stride = etp;
  out.ep.siblings = etp > 1 ? etp : folded / ep;
  out.ep.sibling_stride = etp > 1 ? 1 : ep;
  const int shards = ep * etp;
  if (pp_inner) {
    // ValidatePlan allows expert layers here only with ep 1 and tp 1: the
    // expert-data-parallel group is then the data-parallel one.
    out.edp = out.dp;
    out.edp.role = trace::GroupRole::kExpertDp;
    out.edp.name = trace::GroupRoleName(out.edp.role);
  } else {
    // Under hybrid-sharded ZeRO-3 the ranks of one shard group
    // (PlanConfig::ExpertDpRanks).
    out.edp = PlaceGroup(trace::GroupRole::kExpertDp, 0, shards, plan.ExpertDpRanks(), domain);
    out.edp.stride = shards;
    out.edp.siblings = shards;
    out.edp.sibling_stride = 1;
  }
  out.fsdp = out.dp;
  out.fsdp_replica = PlaceGroup(trace::GroupRole::kDp, 0, 1, 1, domain);
  if (plan.ShardGroup() < plan.dp) {
    // Shard groups: the first shard_group x cp members of the dp group (same
    // stride); replicas: one member per shard group, a shard group apart.
    const int shard = plan.FsdpShardRanks();
    out.fsdp = PlaceGroup(trace::GroupRole::kDp, 0, dp_stride_int, shard, domain);
    out.fsdp.stride = dp_stride_int;
    // Every TP rank's shard group runs at once; with tp 1 the copies that
    // run beside it are the other replicas' shard groups (one sibling stride
    // names one of the two; the other's load is left out, as for pp pairs).
    out.fsdp.siblings = plan.tp > 1 ? plan.tp : plan.FsdpReplicas();
    out.fsdp.sibling_stride = plan.tp > 1 ? 1 : static_cast<int64_t>(dp_stride_int) * shard;
    const int64_t replica_stride = static_cast<int64_t>(dp_stride_int) * shard;
    out.fsdp_replica = PlaceGroup(trace::GroupRole::kDp, 0, static_cast<int>(replica_stride), plan.FsdpReplicas(), domain);
    out.fsdp_replica.stride = replica_stride;
    // Every rank of a shard group (and every TP rank) all-reduces its shard:
    // in the default order the tp x cp x shard_group ranks before the next
    // replica; pp-inner, the TP ranks (the other shard members' load is left out).
    out.fsdp_replica.siblings = pp_inner ? plan.tp : static_cast<int>(replica_stride);
    out.fsdp_replica.sibling_stride = 1;
    if (pp_inner) {  // expert layers here have ep 1 and tp 1: the experts shard like the dense parameters
      out.edp = out.fsdp;
      out.edp.role = trace::GroupRole::kExpertDp;
      out.edp.name = trace::GroupRoleName(out.edp.role);
    }
  }
  out.stage = PlaceGroup(trace::GroupRole::kStage, 0, 1, folded, domain);
  return out;
}

int64_t StageFirstRank(const config::PlanConfig& plan, int stage) { return stage * PipelineStride(plan); }

trace::CommGroup PlacePipelinePair(const config::PlanConfig& plan, const config::TopologyConfig& topology,
                                   int stage, int next_stage) {
  int domain = DomainSize(topology);
  const int64_t stride = PipelineStride(plan);
  int64_t a = stage * stride, b = next_stage * stride;
  trace::CommGroup g;
  g.role = trace::GroupRole::kPipelinePair;
  g.name = "pp " + std::to_string(stage) + "-" + std::to_string(next_stage);
  g.size = 2;
  g.first_rank = a;
  g.stride = b - a;  // negative for the wrap-around pair of the interleaved schedule
  // Every TP, CP and DP rank of the stage sends its share. Default order:
  // the stage's tp x cp x dp ranks are contiguous. Pp-inner: its tp x cp
  // ranks are; the other replicas' pairs sit tp x cp x pp further on, on
  // other GPUs' ports (one sibling stride cannot name both; where GPUs share
  // a NIC their load is left out).
  g.siblings = static_cast<int>(plan.rank_order == config::RankOrder::kTpCpPpDp ? plan.tp * plan.cp : stride);
  g.sibling_stride = 1;
  bool same = a / domain == b / domain;
  g.ranks_per_node = same ? 2 : 1;
  g.nodes = same ? 1 : 2;
  return g;
}

}  // namespace stacksim::workload
