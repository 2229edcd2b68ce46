// Where the ranks of a parallel plan sit, and the shape of each group.
//
// Ranks walk the dimensions tensor-parallel fastest, then context-parallel,
// then as plan.rank_order says:
//   tp-cp-dp-pp (Megatron-LM's default):
//     rank = tp_rank + tp * (cp_rank + cp * (dp_rank + dp * pp_rank)),
//   tp-cp-pp-dp (Megatron-LM's --use-tp-pp-dp-mapping):
//     rank = tp_rank + tp * (cp_rank + cp * (pp_rank + pp * dp_rank)),
// and fill NVLink domains in rank order. A "domain" is the set of GPUs joined
// by NVLink/NVSwitch (a node; 72 GPUs in a GB200 NVL72 rack) or, for PCIe
// systems, one node. Groups report how many members share a domain and how
// many domains they span: what the network model needs. Members of a group
// are first_rank + i x stride: config::ValidatePlan keeps tp-cp-pp-dp to the
// plans where that holds (cp 1, no expert groups folded over tp x dp).
#ifndef STACKSIM_SIM_WORKLOAD_PLACEMENT_H_
#define STACKSIM_SIM_WORKLOAD_PLACEMENT_H_

#include "sim/config/plan.h"
#include "sim/config/topology.h"
#include "sim/trace/trace.h"

namespace stacksim::workload {

// GPUs in one scale-up domain of this topology.
int DomainSize(const config::TopologyConfig& topology);

// The placement of `count` ranks spaced `stride` apart, starting at `first`.
// REQUIRES: count >= 1, stride >= 1.
trace::CommGroup PlaceGroup(trace::GroupRole role, int first, int stride, int count, int domain);

struct PlanGroups {
  trace::CommGroup tp;   // tensor-parallel group of one stage
  trace::CommGroup dp;   // data-parallel group: dp x cp ranks holding the same weights
  trace::CommGroup cp;   // context-parallel group (ring attention's K/V exchange)
  // Expert-parallel group: ep ranks etp apart among a stage's tp x cp x dp
  // ranks (MoE parallel folding; consecutive with expert TP 1); and the
  // expert-data-parallel group of ranks holding the same expert shards
  // (tp x cp x dp / (ep x etp), stride ep x etp). With etp = tp the
  // expert-TP group is the tp group.
  trace::CommGroup ep;
  trace::CommGroup edp;
  // ZeRO-3/FSDP with hybrid sharding (plan.shard_group < dp): the shard
  // group, shard_group x cp ranks that gather parameters and reduce-scatter
  // gradients (consecutive data-parallel ranks, cp folded in as torchtitan's
  // dp_shard x cp mesh), and the replica group, dp / shard_group ranks
  // holding the same shard, which all-reduce it. Without hybrid sharding
  // fsdp is the dp group and fsdp_replica a group of one.
  trace::CommGroup fsdp;
  trace::CommGroup fsdp_replica;
  // Every rank of one stage, tp x cp x dp, placed as one block (FP8 amax
  // reductions; Megatron-Core's tensor-and-data-parallel group with CP).
  trace::CommGroup stage;
};
PlanGroups PlacePlan(const config::PlanConfig& plan, const config::TopologyConfig& topology);

// Global rank of the first GPU (tp, cp, dp rank 0) of pipeline stage `stage`.
int64_t StageFirstRank(const config::PlanConfig& plan, int stage);

// Distance in global ranks between neighbouring pipeline stages, and between
// neighbouring data-parallel replicas, under the plan's rank order.
int64_t PipelineStride(const config::PlanConfig& plan);
int64_t DataParallelStride(const config::PlanConfig& plan);

// The pair (stage, stage+1) of pipeline neighbours, as a two-member group.
trace::CommGroup PlacePipelinePair(const config::PlanConfig& plan, const config::TopologyConfig& topology,
                                   int stage, int next_stage);

}  // namespace stacksim::workload

#endif  // STACKSIM_SIM_WORKLOAD_PLACEMENT_H_
