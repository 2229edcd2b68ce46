// The rank order as a searched dimension: the search must pick the
// pipeline-inner order exactly where it is the fastest plan, which these
// tests establish by simulating every plan of a small space.
#include <gtest/gtest.h>

#include <algorithm>

#include "sim/memory/memory_model.h"
#include "sim/search/plan_space.h"
#include "sim/search/search.h"
#include "tests/fixtures.h"

namespace stacksim::search {
namespace {

using config::RankOrder;

// tp 4 (fixed) on two 8-GPU nodes whose NICs are slow (2 GB/s): pp x dp = 4.
// An 8-layer 1024-wide model, 2048-token sequences: each pipeline send is
// 1 MB (4 MB of activations over tp 4), a stage's gradients 50 MB. HBM holds
// a stage of two but not the whole model, so the plans are pp 2 dp 2 (in
// either order) and pp 4 dp 1.
SearchSpace SlowNicSpace(int64_t global_batch) {
  config::PlanConfig plan;
  plan.tp = 4;
  plan.pp = 2;
  plan.dp = 2;
  plan.sequence_parallel = true;
  plan.micro_batch = 1;
  plan.global_batch = global_batch;
  SearchSpace space;
  space.scenario = testing::Scenario(testing::GptModel(8, 1024, 16, 51200), 16, 2048, plan);
  space.scenario.topology.nics.bandwidth = Bandwidth{2e9};
  space.tensor_parallel = {4};
  space.allow_context_parallel = false;
  space.allow_offload = false;
  space.schedules = {config::PipelineScheduleKind::kOneFOneB};
  space.shardings = {config::Sharding::kNone};
  space.recomputes = {config::Recompute::kNone};
  // Capacity between the peaks of pp 1 and pp 2 (micro-batch 1).
  auto peak = [&](int pp) {
    config::ScenarioConfig s = space.scenario;
    s.plan.pp = pp;
    s.plan.dp = 4 / pp;
    Bytes most;
    for (const auto& m : memory::EstimateMemory(s)) most = std::max(most, m.total());
    return most;
  };
  space.scenario.profile.hbm_capacity.value = Bytes{(peak(1).value + peak(2).value) / 2};
  return space;
}

// The best plan by simulating all of them.
PlanPoint ExhaustiveBest(const SearchSpace& space, bool* pp_inner_enumerated) {
  EnumerationCounts counts;
  PlanPoint best;
  Time best_step = Time::Max();
  *pp_inner_enumerated = false;
  for (const PlanPoint& p : EnumeratePlans(space, &counts)) {
    *pp_inner_enumerated |= p.rank_order == RankOrder::kTpCpPpDp;
    config::ScenarioConfig s = space.scenario;
    s.plan = ApplyPoint(space.scenario.plan, p);
    Bytes peak;
    for (const auto& m : memory::EstimateMemory(s)) peak = std::max(peak, m.total());
    if (peak > s.profile.hbm_capacity.value) continue;
    const Time step = SimulateStep(s, s.plan);
    if (step < best_step) {
      best_step = step;
      best = p;
    }
  }
  return best;
}

// 128 micro-batches per pipeline: 256 sends of 1 MB per stage pair against
// one 50 MB all-reduce. Keeping the pipeline inside the node wins.
TEST(SearchRankOrder, ManyMicroBatchesOverSlowNicsPickThePipelineInnerOrder) {
  SearchSpace space = SlowNicSpace(256);
  bool enumerated = false;
  const PlanPoint want = ExhaustiveBest(space, &enumerated);
  EXPECT_TRUE(enumerated);
  EXPECT_EQ(want.rank_order, RankOrder::kTpCpPpDp) << PlanName(want);
  SearchOptions options;
  options.top = 3;
  options.headroom.fixed = Bytes{0};  // HBM is set between two plans' peaks, without a reserve
  SearchResult r = Search(space, options);
  ASSERT_FALSE(r.plans.empty());
  EXPECT_EQ(PlanName(r.plans[0].point), PlanName(want));
  EXPECT_EQ(r.plans[0].placement, "tp4 pp2");
  EXPECT_NE(PlanName(r.plans[0].point).find("order=tp-cp-pp-dp"), std::string::npos);
}

// 8 micro-batches per pipeline: few sends, and the gradient all-reduce over
// the slow NICs costs more than they save. Megatron-LM's order wins, though
// the pipeline-inner plans were in the space.
TEST(SearchRankOrder, FewMicroBatchesKeepMegatronsOrder) {
  SearchSpace space = SlowNicSpace(16);
  bool enumerated = false;
  const PlanPoint want = ExhaustiveBest(space, &enumerated);
  EXPECT_TRUE(enumerated);
  EXPECT_EQ(want.rank_order, RankOrder::kTpCpDpPp) << PlanName(want);
  SearchOptions options;
  options.top = 3;
  options.headroom.fixed = Bytes{0};  // HBM is set between two plans' peaks, without a reserve
  SearchResult r = Search(space, options);
  ASSERT_FALSE(r.plans.empty());
  EXPECT_EQ(PlanName(r.plans[0].point), PlanName(want));
  EXPECT_EQ(r.plans[0].point.rank_order, RankOrder::kTpCpDpPp);
}

}  // namespace
}  // namespace stacksim::search
