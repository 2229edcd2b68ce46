#include "sim/workload/placement.h"

#include <gtest/gtest.h>

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
