// The communication groups of each simulated pipeline stage: the stage's copy
// of every parallel group (tp, dp, cp, ep, expert-dp), simulated by the
// stage's rank and placed at its first GPU; the pipeline pairs to its
// neighbours; the tied-embedding pair of first and last stage; DualPipe's
// mirror pairs. Group ids are indices into the trace's group table.
#ifndef STACKSIM_SIM_WORKLOAD_STAGE_GROUPS_H_
#define STACKSIM_SIM_WORKLOAD_STAGE_GROUPS_H_

#include <vector>

#include "sim/config/scenario.h"
#include "sim/trace/trace.h"

namespace stacksim::workload {

struct StageGroups {
  // Per simulated rank (pipeline stage).
  std::vector<trace::GroupId> tp, dp, cp, ep, edp;
  std::vector<trace::GroupId> next_pair, prev_pair;  // to stage r+1 and from stage r-1 (wrapping)
  trace::GroupId embedding = trace::kNoGroup;        // tied embeddings with pp > 1 only
  std::vector<trace::GroupId> mirror;                // DualPipe only: rank r with rank stages-1-r
  // ZeRO-3/FSDP: the parameter shard group (the dp group unless hybrid
  // sharding) and, with hybrid sharding, the group of its replicas (else kNoGroup).
  std::vector<trace::GroupId> fsdp, fsdp_replica;
  // DiLoCo (plan.dp_sync diloco) only: the dp / workers replicas of one
  // worker (adjacent in the dp group), and the workers' replicas of one slice
  // (one per worker), for the outer all-reduce. Else kNoGroup.
  std::vector<trace::GroupId> dp_local, dp_outer;
  // FP8 delayed scaling (plan.fp8_amax_reduction, precision fp8) only: every
  // rank of the stage. Else kNoGroup.
  std::vector<trace::GroupId> stage;
};

// Adds the groups of `stages` simulated ranks to `t`, in a fixed order (per
// stage: tp, dp, cp, ep, expert-dp, next pair, previous pair; then the
// embedding pair; then the mirror pairs; then, with hybrid sharding, each
// stage's shard and replica groups; then, with DiLoCo, each stage's local and
// outer groups; then, with FP8 amax reductions, each stage's whole group), so
// that the same scenario always gives
// the same group ids.
StageGroups AddStageGroups(trace::Trace& t, const config::ScenarioConfig& s, int stages, bool dual_pipe);

}  // namespace stacksim::workload

#endif  // STACKSIM_SIM_WORKLOAD_STAGE_GROUPS_H_
