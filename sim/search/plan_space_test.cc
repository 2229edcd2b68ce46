#include "sim/search/plan_space.h"

#include <gtest/gtest.h>

#include <set>

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
    EXPECT_EQ(counts.enumerated, total);
    EXPECT_EQ(counts.invalid_total(), invalid);
    EXPECT_EQ(counts.candidates + counts.equivalent, valid);
    EXPECT_EQ(counts.candidates, static_cast<int64_t>(plans.size()));
    EXPECT_GT(counts.equivalent, 0);
    if (gpus == 16) EXPECT_GT(counts.invalid["plan.tp"], 0) << "tp 16 is beyond the 8-GPU NVLink domain";
  }
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
}

}  // namespace
}  // namespace stacksim::search
