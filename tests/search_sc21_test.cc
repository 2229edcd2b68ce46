// Search against published practice: Narayanan et al., "Efficient Large-Scale
// Language Model Training on GPU Clusters Using Megatron-LM", SC'21
// (arXiv:2104.04473), Table 1. Their runs on DGX A100 (8 x 200 Gb/s HDR per
// node) used tensor parallelism 8 inside each node and pipeline parallelism
// across nodes. Searching the plans Megatron-LM could run in 2021 (1F1B or
// interleaved schedules, no sharded optimizer, no sequence or context
// parallelism, full or no recomputation, unfused attention, fp16, gradient
// all-reduce after the backward) must find that class best, or within a few
// percent of the best.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "sim/search/search.h"

namespace stacksim::search {
namespace {

SearchSpace Sc21Space(const std::string& model, int gpus, int64_t global_batch, int pp, int dp) {
  nlohmann::json doc = {
      {"name", "SC'21 " + model},
      {"model", model},
      {"topology", "dgx-a100"},
      {"gpus", gpus},
      {"training", {{"seq_len", 2048}, {"global_batch", global_batch}}},
      // The published degrees (searched over; the other fields stay).
      {"plan",
       {{"tp", 8}, {"pp", pp}, {"dp", dp}, {"precision", "fp16"}, {"attention", "unfused"},
        {"overlap_grad_reduce", false}, {"sharding", "none"}, {"recompute", "full"}, {"sequence_parallel", false}}}};
  SearchSpace space;
  space.scenario = config::ParseScenario(doc, "", {});
  space.schedules = {config::PipelineScheduleKind::kOneFOneB, config::PipelineScheduleKind::kInterleaved};
  space.shardings = {config::Sharding::kNone};
  space.recomputes = {config::Recompute::kNone, config::Recompute::kFull};
  space.allow_offload = false;
  space.allow_context_parallel = false;
  space.allow_sequence_parallel = false;
  return space;
}

bool PublishedClass(const PlanPoint& p) { return p.tp == 8 && p.pp > 1; }

TEST(SearchSc21, Gpt145BOn1536A100FindsTp8InTheNodeAndPipelineAcrossNodes) {
  SearchSpace space = Sc21Space("gpt-145.6b", 1536, 2304, 8, 24);
  SearchOptions options;
  options.top = 5;
  SearchResult r = Search(space, options);
  ASSERT_FALSE(r.plans.empty());
  EXPECT_TRUE(PublishedClass(r.plans[0].point)) << PlanName(r.plans[0].point);
  EXPECT_EQ(r.plans[0].placement, "tp8");
}

TEST(SearchSc21, Gpt310BOn1920A100PublishedPlanWithinAFewPercent) {
  SearchSpace space = Sc21Space("gpt-310.1b", 1920, 2160, 16, 15);
  SearchOptions options;
  options.top = 5;
  SearchResult r = Search(space, options);
  ASSERT_FALSE(r.plans.empty());
  EXPECT_TRUE(PublishedClass(r.plans[0].point)) << PlanName(r.plans[0].point);
  // The published degrees themselves (tp 8, pp 16, dp 15, full recomputation)
  // rank within 3% of the best.
  bool found = false;
  for (const RankedPlan& p : r.plans) {
    if (p.point.tp == 8 && p.point.pp == 16 && p.point.dp == 15 && p.point.recompute == config::Recompute::kFull) {
      found = true;
      EXPECT_LT(p.score / r.plans[0].score, 1.03) << PlanName(p.point);
    }
  }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace stacksim::search
