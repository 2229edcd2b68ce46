#include "sim/search/plan_space.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "sim/workload/placement.h"
#include "tests/fixtures.h"

namespace stacksim::search {
namespace {

using config::PipelineScheduleKind;
using config::Recompute;
using config::Sharding;

config::ScenarioConfig TinyScenario(int gpus, int64_t global_batch) {
  config::PlanConfig plan;
  plan.tp = 1;
  plan.pp = 1;
  plan.dp = gpus;
  plan.global_batch = global_batch;
  auto s = testing::Scenario(testing::GptModel(4, 256, 8, 1024), gpus, 256, plan);
  s.topology.host = config::HostResources{Bytes{2e12}, Bandwidth{400e9}};
  return s;
}

// Whether the pipeline-inner rank order puts some group of the point on a
// different number of domains than Megatron-LM's order does.
bool PipelineInnerPlacesDifferently(const PlanPoint& p, const config::TopologyConfig& topo) {
  config::PlanConfig a;
  a.tp = p.tp;
  a.pp = p.pp;
  a.dp = p.dp;
  a.cp = p.cp;
  config::PlanConfig b = a;
  b.rank_order = config::RankOrder::kTpCpPpDp;
  const auto ga = workload::PlacePlan(a, topo), gb = workload::PlacePlan(b, topo);
  bool differs = ga.dp.ranks_per_node != gb.dp.ranks_per_node || ga.tp.nodes != gb.tp.nodes;
  for (int r = 0; r + 1 < p.pp; ++r) {
    differs |=
        workload::PlacePipelinePair(a, topo, r, r + 1).nodes != workload::PlacePipelinePair(b, topo, r, r + 1).nodes;
  }
  return differs;
}

TEST(Divisors, InIncreasingOrder) {
  EXPECT_EQ(Divisors(12), (std::vector<int64_t>{1, 2, 3, 4, 6, 12}));
  EXPECT_EQ(Divisors(1), (std::vector<int64_t>{1}));
  EXPECT_EQ(Divisors(49), (std::vector<int64_t>{1, 7, 49}));
}

// Every plan of the cross product, checked one by one with ValidatePlan,
// must be accounted for by the tree walk: the same valid plans (candidates
// plus the equivalent ones) and the same number of invalid ones.
TEST(EnumeratePlans, AgreesWithValidatePlanOnEveryPlan) {
  for (int gpus : {8, 16}) {
    SearchSpace space;
    space.scenario = TinyScenario(gpus, 8);
    EnumerationCounts counts;
    std::vector<PlanPoint> plans = EnumeratePlans(space, &counts);
    std::set<PlanPoint> found(plans.begin(), plans.end());
    ASSERT_EQ(found.size(), plans.size()) << "duplicates";

    config::ScenarioConfig s = space.scenario;
    int64_t total = 0, invalid = 0, valid = 0;
    std::vector<std::pair<PipelineScheduleKind, int>> schedules = {
        {PipelineScheduleKind::kOneFOneB, 1}, {PipelineScheduleKind::kInterleaved, 2},
        {PipelineScheduleKind::kInterleaved, 4}, {PipelineScheduleKind::kZeroBubbleH1, 1},
        {PipelineScheduleKind::kDualPipe, 1}};
    for (int64_t tp : Divisors(gpus)) {
      for (int64_t pp : Divisors(gpus / tp)) {
        for (int64_t cp : Divisors(gpus / tp / pp)) {
          // The pipeline-inner order where it places the plan differently
          // and its own rule allows it (cp 1: on this power-of-two space no
          // other part of that rule can fail).
          PlanPoint degrees;
          degrees.tp = static_cast<int>(tp);
          degrees.pp = static_cast<int>(pp);
          degrees.cp = static_cast<int>(cp);
          degrees.dp = static_cast<int>(gpus / tp / pp / cp);
          std::vector<config::RankOrder> orders = {config::RankOrder::kTpCpDpPp};
          if (cp == 1 && PipelineInnerPlacesDifferently(degrees, s.topology)) {
            orders.push_back(config::RankOrder::kTpCpPpDp);
          }
          for (config::RankOrder order : orders) {
            for (Sharding sh : {Sharding::kNone, Sharding::kZero1, Sharding::kZero2, Sharding::kZero3}) {
              for (bool off : {false, true}) {
                for (bool sp : tp > 1 ? std::vector<bool>{false, true} : std::vector<bool>{false}) {
                  for (auto [kind, vp] : schedules) {
                    for (int64_t mb : Divisors(8)) {
                      for (Recompute rc : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
                        PlanPoint p;
                        p.gpus = gpus;
                        p.tp = static_cast<int>(tp);
                        p.pp = static_cast<int>(pp);
                        p.cp = static_cast<int>(cp);
                        p.dp = static_cast<int>(gpus / tp / pp / cp);
                        p.sharding = sh;
                        p.offload = off;
                        p.sequence_parallel = sp;
                        p.schedule = kind;
                        p.vp = vp;
                        p.micro_batch = static_cast<int>(mb);
                        p.recompute = rc;
                        p.rank_order = order;
                        s.plan = ApplyPoint(space.scenario.plan, p);
                        ++total;
                        try {
                          config::ValidatePlan(s, s.file);
                          ++valid;
                          // Equivalent plans are left out on purpose; all others must be found.
                          const bool equivalent =
                              rc == Recompute::kSelective ||
                              (sh == Sharding::kZero1 && !off && p.dp * p.cp == 1);
                          if (!equivalent) EXPECT_TRUE(found.count(p)) << PlanName(p);
                        } catch (const InputError&) {
                          ++invalid;
                          EXPECT_FALSE(found.count(p)) << PlanName(p);
                        }
                      }
                    }
                  }
                }
              }
            }
          }
        }
      }
    }
    EXPECT_EQ(counts.enumerated, total);
    EXPECT_EQ(counts.invalid_total(), invalid);
    EXPECT_EQ(counts.candidates + counts.equivalent, valid);
    EXPECT_EQ(counts.candidates, static_cast<int64_t>(plans.size()));
    EXPECT_GT(counts.equivalent, 0);
    if (gpus == 16) EXPECT_GT(counts.invalid["plan.tp"], 0) << "tp 16 is beyond the 8-GPU NVLink domain";
    // Within one domain the order changes nothing and is not enumerated.
    const bool pp_inner = std::any_of(plans.begin(), plans.end(), [](const PlanPoint& p) {
      return p.rank_order == config::RankOrder::kTpCpPpDp;
    });
    EXPECT_EQ(pp_inner, gpus == 16);
  }
}

// A scenario whose plan overlaps the expert all-to-alls (its own or its
// framework's recipe) keeps the overlap on every plan that can run it and
// drops it where the schedule cannot (no ep, or pp without virtual stages):
// no plan is lost to the overlap's rule.
TEST(EnumeratePlans, TheAllToAllOverlapHoldsWhereTheScheduleRunsIt) {
  config::ModelConfig m = testing::GptMoeModel(4, 256, 8, 2, 512);
  config::PlanConfig plan;
  plan.global_batch = 16;
  SearchSpace space;
  space.scenario = testing::Scenario(m, 16, 256, plan);
  EnumerationCounts without;
  const std::vector<PlanPoint> plain = EnumeratePlans(space, &without);
  space.scenario.plan.moe_a2a_overlap = true;
  EnumerationCounts counts;
  const std::vector<PlanPoint> plans = EnumeratePlans(space, &counts);
  EXPECT_EQ(plans, plain);
  EXPECT_EQ(counts.invalid.count("plan.moe_a2a_overlap"), 0u);
  int overlapped = 0, not_overlapped = 0;
  for (const PlanPoint& p : plans) {
    const config::PlanConfig c = ApplyPoint(space.scenario.plan, p);
    const bool runs = p.ep > 1 && (p.pp == 1 || (p.schedule == PipelineScheduleKind::kInterleaved && p.vp > 1)) &&
                      (p.schedule == PipelineScheduleKind::kOneFOneB || p.schedule == PipelineScheduleKind::kInterleaved);
    EXPECT_EQ(c.moe_a2a_overlap, runs) << PlanName(p);
    (c.moe_a2a_overlap ? overlapped : not_overlapped)++;
  }
  EXPECT_GT(overlapped, 0);
  EXPECT_GT(not_overlapped, 0);
}

TEST(EnumeratePlans, SelectiveRecomputeIsNoneOnlyWithFusedAttention) {
  SearchSpace space;
  space.scenario = TinyScenario(8, 8);
  EnumerationCounts flash;
  auto with_flash = EnumeratePlans(space, &flash);
  for (const PlanPoint& p : with_flash) EXPECT_NE(p.recompute, Recompute::kSelective);

  // Unfused attention keeps the score matrix: selective recomputation saves
  // memory and costs a recomputed core attention, a plan of its own.
  space.scenario.plan.attention = config::AttentionImpl::kUnfused;
  EnumerationCounts unfused;
  auto without = EnumeratePlans(space, &unfused);
  int selective = 0;
  for (const PlanPoint& p : without) selective += p.recompute == Recompute::kSelective;
  EXPECT_GT(selective, 0);
  EXPECT_LT(unfused.equivalent, flash.equivalent);
}

TEST(EnumeratePlans, RestrictionsShrinkTheSpace) {
  SearchSpace space;
  space.scenario = TinyScenario(16, 16);
  space.scenario.topology.host.reset();  // no node.host: offload is never tried
  space.schedules = {PipelineScheduleKind::kOneFOneB};
  space.shardings = {Sharding::kZero1};
  space.recomputes = {Recompute::kFull};
  space.allow_context_parallel = false;
  space.allow_sequence_parallel = false;
  EnumerationCounts counts;
  for (const PlanPoint& p : EnumeratePlans(space, &counts)) {
    EXPECT_EQ(p.schedule, PipelineScheduleKind::kOneFOneB);
    EXPECT_EQ(p.sharding, Sharding::kZero1);
    EXPECT_EQ(p.recompute, Recompute::kFull);
    EXPECT_EQ(p.cp, 1);
    EXPECT_FALSE(p.sequence_parallel);
    EXPECT_FALSE(p.offload);
  }
  EXPECT_GT(counts.candidates, 0);
}

TEST(PlacementText, NamesTheDimensionsInsideTheDomain) {
  PlanPoint p;
  p.tp = 8;
  p.dp = 16;
  p.pp = 8;
  EXPECT_EQ(PlacementText(p, 8), "tp8");
  p.tp = 2;
  p.cp = 2;
  EXPECT_EQ(PlacementText(p, 8), "tp2 cp2 dp2");
  p.tp = 1;
  p.cp = 1;
  p.dp = 1;
  p.pp = 4;
  EXPECT_EQ(PlacementText(p, 8), "pp4");
  p.pp = 1;
  EXPECT_EQ(PlacementText(p, 8), "-");
  // Pipeline-inner order: the stages follow tp inside the domain.
  p.tp = 4;
  p.pp = 2;
  p.dp = 2;
  EXPECT_EQ(PlacementText(p, 8), "tp4 dp2");
  p.rank_order = config::RankOrder::kTpCpPpDp;
  EXPECT_EQ(PlacementText(p, 8), "tp4 pp2");
}

TEST(PlanName, IsShortAndComplete) {
  PlanPoint p;
  p.tp = 8;
  p.pp = 8;
  p.dp = 16;
  p.vp = 3;
  p.schedule = PipelineScheduleKind::kInterleaved;
  p.sequence_parallel = true;
  p.recompute = Recompute::kSelective;
  p.sharding = Sharding::kZero1;
  EXPECT_EQ(PlanName(p), "tp8 pp8 dp16 vp3 mb1 interleaved sp recompute=selective zero1");
  p.tp = 4;
  p.rank_order = config::RankOrder::kTpCpPpDp;
  EXPECT_EQ(PlanName(p), "tp4 pp8 dp16 vp3 mb1 interleaved sp recompute=selective zero1 order=tp-cp-pp-dp");
}

}  // namespace
}  // namespace stacksim::search
