// The space of parallel plans a search walks for one model, cluster and
// global batch, and how much of it is invalid or redundant.
//
// A point fixes the dimensions a planner chooses: the GPU count (when a range
// is searched), tp, pp, dp, cp, ep (MoE models), the rank order, vp,
// micro-batch, recompute, sharding, optimizer offload to host memory,
// pipeline schedule and sequence parallelism. Everything else (precision,
// attention kernels, MoE routing, bucket sizes, ...) comes from the
// scenario's own plan and stays fixed; the expert all-to-all overlap
// (moe_a2a_overlap) holds on the plans whose schedule can run it.
//
// Placement: ranks walk tp fastest, then cp, then dp and pp in the plan's
// rank order (workload/placement.h). Megatron-LM's tp-cp-dp-pp is every
// plan's; tp-cp-pp-dp (pipeline stages inside tp x cp) is enumerated as well
// only where it moves a dimension across the NVLink domain's edge and
// ValidatePlan allows it: pp > 1, dp > 1, cp 1, ep 1 (and tp 1 on MoE
// models), tp below the domain, more GPUs than one domain, and tp x pp
// dividing the domain or a multiple of it. PlacementText() reports which dimensions share a domain.
//
// Enumeration is a tree (degrees -> sharding/offload -> sequence parallelism
// -> schedule/vp -> micro-batch -> recompute). Each node is checked with
// config::ValidatePlan with the deeper fields at their most permissive values
// (the rules that fail there depend only on the fields already fixed), so a
// rejected subtree is counted, under the key ValidatePlan named, without
// visiting its plans. Two structural rules that would otherwise throw once per
// deep node (micro-batch x dp dividing the global batch, and the schedules'
// micro-batch counts) are checked arithmetically first, under the keys
// ValidatePlan uses for them; every plan returned has passed ValidatePlan.
#ifndef STACKSIM_SIM_SEARCH_PLAN_SPACE_H_
#define STACKSIM_SIM_SEARCH_PLAN_SPACE_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sim/config/plan.h"
#include "sim/config/scenario.h"

namespace stacksim::search {

// One plan of the space, compactly (a few bytes; spaces hold millions).
struct PlanPoint {
  int gpus = 0;
  int tp = 1, pp = 1, dp = 1, cp = 1, ep = 1, vp = 1;
  config::RankOrder rank_order = config::RankOrder::kTpCpDpPp;
  int micro_batch = 1;
  config::PipelineScheduleKind schedule = config::PipelineScheduleKind::kOneFOneB;
  config::Recompute recompute = config::Recompute::kNone;
  config::Sharding sharding = config::Sharding::kNone;
  bool offload = false;  // optimizer state offloaded to host memory (offload_optimizer "host")
  bool sequence_parallel = false;

  auto operator<=>(const PlanPoint&) const = default;
};

// `base` with the point's dimensions set (offload: host, whole optimizer).
config::PlanConfig ApplyPoint(const config::PlanConfig& base, const PlanPoint& p);
// "tp8 pp8 dp16 vp3 mb1 interleaved sp recompute=selective zero1" (and
// "offload=host", "cp2", "ep8", "order=tp-cp-pp-dp" when used): a short
// stable name.
std::string PlanName(const PlanPoint& p);
// Which parallel dimensions share one NVLink domain, with how many of their
// ranks: "tp8", "tp2 cp2 dp2", "tp8 | pp pair" ... e.g. "tp4 dp2" for tp 4
// and dp >= 2 on 8-GPU nodes, "tp4 pp2" with the pipeline-inner order. Ranks
// fill domains in the plan's order.
std::string PlacementText(const PlanPoint& p, int domain_gpus);

// What a search may vary. Empty lists mean every choice the simulator offers.
struct SearchSpace {
  // Model, topology, profile, sequence length and global batch; its plan
  // supplies every field the search does not vary. Need not be valid itself.
  config::ScenarioConfig scenario;
  // GPU counts to search (empty: scenario.gpus; sorted, duplicates dropped).
  std::vector<int> gpu_counts;
  std::vector<config::PipelineScheduleKind> schedules;  // default 1f1b, interleaved, zb-h1, dualpipe
  std::vector<config::Recompute> recomputes;            // default none, selective, full
  std::vector<config::Sharding> shardings;              // default none, zero1, zero2, zero3
  // Optimizer offload to host memory is tried where the topology describes
  // node.host; false never tries it.
  bool allow_offload = true;
  // Tensor-parallel degrees to try (empty: every divisor of the GPU count).
  std::vector<int> tensor_parallel;
  // false: cp 1 only / sequence parallelism off only (to search the plans a
  // framework of the time could run, e.g. Megatron-LM in 2021).
  bool allow_context_parallel = true;
  bool allow_sequence_parallel = true;
};

// Plans left out before any simulation, by reason. Every enumerated plan is
// counted exactly once: invalid (by the key ValidatePlan named), equivalent
// to another plan, or a candidate.
struct EnumerationCounts {
  int64_t enumerated = 0;
  // ValidatePlan's key path (e.g. "plan.tp", "training.global_batch") ->
  // plans, and one message seen for it (for reports).
  std::map<std::string, int64_t> invalid;
  std::map<std::string, std::string> invalid_example;
  // Equivalent to another enumerated plan in the simulator (same trace and
  // same memory): selective recomputation when the attention kernel already
  // recomputes inside its backward (flash attention keeps no score matrix,
  // so selective = none), zero1 without data parallelism (= none).
  int64_t equivalent = 0;
  int64_t candidates = 0;
  int64_t invalid_total() const;
};

// Enumerates the valid, distinct plans of `space` in a fixed order (GPU
// count, then tp, pp, cp, ep, rank order, sharding/offload, sp, schedule/vp,
// micro-batch, recompute). Throws InputError for a space that cannot hold any
// plan (no GPU counts, a non-positive count).
std::vector<PlanPoint> EnumeratePlans(const SearchSpace& space, EnumerationCounts* counts);

// The divisors of n in increasing order.
std::vector<int64_t> Divisors(int64_t n);

}  // namespace stacksim::search

#endif  // STACKSIM_SIM_SEARCH_PLAN_SPACE_H_
