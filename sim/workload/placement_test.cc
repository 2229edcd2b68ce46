#include "sim/workload/placement.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <tuple>

#include "sim/workload/training_step.h"
#include "tests/fixtures.h"

namespace stacksim::workload {
namespace {

config::PlanConfig Plan(int tp, int pp, int dp, config::RankOrder order) {
  config::PlanConfig p;
  p.tp = tp;
  p.pp = pp;
  p.dp = dp;
  p.rank_order = order;
  return p;
}

constexpr auto kDefault = config::RankOrder::kTpCpDpPp;
constexpr auto kPpInner = config::RankOrder::kTpCpPpDp;

// tp 4 pp 2 dp 2 on 8-GPU nodes. Default order: a node holds both replicas
// of one stage (ranks 0-3 and 4-7 are stage 0), stage 1 is the next node.
TEST(Placement, DefaultOrderKeepsDataParallelReplicasInTheNode) {
  auto g = PlacePlan(Plan(4, 2, 2, kDefault), testing::DgxTopology());
  EXPECT_EQ(g.tp.ranks_per_node, 4);
  EXPECT_EQ(g.tp.nodes, 1);
  EXPECT_EQ(g.tp.siblings, 2);
  EXPECT_EQ(g.tp.sibling_stride, 4);
  EXPECT_EQ(g.dp.stride, 4);
  EXPECT_EQ(g.dp.ranks_per_node, 2);
  EXPECT_EQ(g.dp.nodes, 1);
  EXPECT_EQ(g.dp.siblings, 4);
  EXPECT_EQ(g.dp.sibling_stride, 1);
  EXPECT_EQ(StageFirstRank(Plan(4, 2, 2, kDefault), 1), 8);
  auto pair = PlacePipelinePair(Plan(4, 2, 2, kDefault), testing::DgxTopology(), 0, 1);
  EXPECT_EQ(pair.first_rank, 0);
  EXPECT_EQ(pair.stride, 8);
  EXPECT_EQ(pair.nodes, 2);
  EXPECT_EQ(pair.ranks_per_node, 1);
  EXPECT_EQ(pair.siblings, 8);  // the whole stage sends
  EXPECT_EQ(pair.sibling_stride, 1);
}

// The same plan with pipeline stages inside tp: ranks 0-3 stage 0, 4-7
// stage 1 of replica 0 on node 0; replica 1 on node 1.
TEST(Placement, PipelineInnerOrderKeepsStagesInTheNodeAndSpreadsReplicas) {
  const auto plan = Plan(4, 2, 2, kPpInner);
  auto g = PlacePlan(plan, testing::DgxTopology());
  EXPECT_EQ(g.tp.ranks_per_node, 4);
  EXPECT_EQ(g.tp.nodes, 1);
  EXPECT_EQ(g.tp.siblings, 2);
  EXPECT_EQ(g.tp.sibling_stride, 8);  // the other replica's tp group of this stage
  EXPECT_EQ(g.dp.first_rank, 0);
  EXPECT_EQ(g.dp.stride, 8);
  EXPECT_EQ(g.dp.ranks_per_node, 1);
  EXPECT_EQ(g.dp.nodes, 2);
  EXPECT_EQ(g.dp.siblings, 4);
  EXPECT_EQ(g.dp.sibling_stride, 1);
  EXPECT_EQ(StageFirstRank(plan, 1), 4);
  EXPECT_EQ(PipelineStride(plan), 4);
  EXPECT_EQ(DataParallelStride(plan), 8);
  auto pair = PlacePipelinePair(plan, testing::DgxTopology(), 0, 1);
  EXPECT_EQ(pair.first_rank, 0);
  EXPECT_EQ(pair.stride, 4);
  EXPECT_EQ(pair.nodes, 1);
  EXPECT_EQ(pair.ranks_per_node, 2);
  EXPECT_EQ(pair.siblings, 4);  // the stage's tp ranks; the other replica is tp x pp further
  EXPECT_EQ(pair.sibling_stride, 1);
}

// Longer pipelines: with tp 1 and pp 16 on 8-GPU nodes, pipeline pairs cross
// a node only every 8 stages; DP replicas are 16 ranks (two nodes) apart.
TEST(Placement, PipelineInnerOrderCrossesNodesOnlyAtDomainBoundaries) {
  const auto plan = Plan(1, 16, 4, kPpInner);
  const auto topo = testing::DgxTopology();
  EXPECT_EQ(PlacePipelinePair(plan, topo, 0, 1).nodes, 1);
  EXPECT_EQ(PlacePipelinePair(plan, topo, 6, 7).nodes, 1);
  EXPECT_EQ(PlacePipelinePair(plan, topo, 7, 8).nodes, 2);
  EXPECT_EQ(PlacePipelinePair(plan, topo, 15, 0).stride, -15);  // the interleaved schedule's wrap-around pair
  auto g = PlacePlan(plan, topo);
  EXPECT_EQ(g.dp.stride, 16);
  EXPECT_EQ(g.dp.ranks_per_node, 1);
  EXPECT_EQ(g.dp.nodes, 4);
  // The default order puts the 4 replicas of a stage in one node instead.
  auto d = PlacePlan(Plan(1, 16, 4, kDefault), topo);
  EXPECT_EQ(d.dp.ranks_per_node, 4);
  EXPECT_EQ(d.dp.nodes, 1);
  EXPECT_EQ(PlacePipelinePair(Plan(1, 16, 4, kDefault), topo, 1, 2).nodes, 2);  // every other pair crosses
}

// The trace carries the placement: each stage's groups start at the stage's
// first rank under the plan's order.
// The rank sets a group and its sibling copies describe.
std::set<std::set<int64_t>> Copies(const trace::CommGroup& g) {
  std::set<std::set<int64_t>> out;
  for (int j = 0; j < g.siblings; ++j) {
    std::set<int64_t> members;
    for (int i = 0; i < g.size; ++i) members.insert(g.first_rank + g.SiblingOffset(j) + i * g.stride);
    out.insert(members);
  }
  return out;
}

// The groups of pipeline stage 0 in the job, from the rank formula
// (default order: rank = t + tp (c + cp (d + dp p))): ranks that agree on
// everything but the group's own coordinates share a group.
enum class Dim { kTp, kCp, kDpCp };
std::set<std::set<int64_t>> RealGroups(const config::PlanConfig& plan, Dim dim) {
  std::map<std::tuple<int, int, int>, std::set<int64_t>> groups;
  for (int t = 0; t < plan.tp; ++t) {
    for (int c = 0; c < plan.cp; ++c) {
      for (int d = 0; d < plan.dp; ++d) {
        const int64_t rank = t + plan.tp * (c + plan.cp * d);
        auto key = dim == Dim::kTp ? std::make_tuple(-1, c, d)
                   : dim == Dim::kCp ? std::make_tuple(t, -1, d)
                                     : std::make_tuple(t, -1, -1);
        groups[key].insert(rank);
      }
    }
  }
  std::set<std::set<int64_t>> out;
  for (auto& [key, ranks] : groups) out.insert(ranks);
  return out;
}

// A context-parallel group's copies are the job's other CP groups: tp
// consecutive ones per data-parallel replica, replicas tp x cp apart, not
// tp x dp copies one rank apart (which would pair GPUs of different CP
// groups, e.g. ranks 1 and 3 for tp 2 cp 2).
TEST(Placement, SiblingCopiesAreTheJobsRealGroups) {
  for (auto [tp, cp, dp] : {std::make_tuple(2, 2, 3), std::make_tuple(4, 2, 2), std::make_tuple(1, 4, 2),
                            std::make_tuple(2, 2, 64), std::make_tuple(8, 1, 4), std::make_tuple(2, 4, 1)}) {
    config::PlanConfig plan = Plan(tp, 2, dp, kDefault);
    plan.cp = cp;
    const auto g = PlacePlan(plan, testing::DgxTopology());
    const std::string name = "tp " + std::to_string(tp) + " cp " + std::to_string(cp) + " dp " + std::to_string(dp);
    EXPECT_EQ(Copies(g.cp), RealGroups(plan, Dim::kCp)) << name;
    EXPECT_EQ(Copies(g.tp), RealGroups(plan, Dim::kTp)) << name;
    EXPECT_EQ(Copies(g.dp), RealGroups(plan, Dim::kDpCp)) << name;
    // The network models stop at the first copy beyond a leaf's span.
    for (int j = 1; j < g.cp.siblings; ++j) EXPECT_LT(g.cp.SiblingOffset(j - 1), g.cp.SiblingOffset(j)) << name;
  }
}

TEST(Placement, TrainingStepPlacesStageGroupsByTheRankOrder) {
  auto model = testing::GptModel(4, 1024, 16, 51200);
  config::PlanConfig plan = Plan(4, 2, 2, kPpInner);
  plan.micro_batch = 1;
  plan.global_batch = 8;
  auto s = testing::Scenario(model, 16, 2048, plan);
  auto t = BuildTrainingStep(s);
  int dp_groups = 0, pairs = 0;
  for (size_t i = 0; i < t.groups().size(); ++i) {
    const trace::CommGroup& g = t.group(static_cast<trace::GroupId>(i));
    if (g.name == "dp") {
      ++dp_groups;
      EXPECT_EQ(g.first_rank, g.simulated.at(0) * 4) << "stage " << g.simulated.at(0);
      EXPECT_EQ(g.nodes, 2);
    }
    if (g.name == "pp 0-1") {
      ++pairs;
      EXPECT_EQ(g.nodes, 1);
    }
  }
  EXPECT_EQ(dp_groups, 2);
  EXPECT_GT(pairs, 0);
}

}  // namespace
}  // namespace stacksim::workload
