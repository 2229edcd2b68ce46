// Expert tensor parallelism (plan.etp): each expert's FFN width split over
// the TP group, the EP ranks etp apart, the received tokens all-gathered
// over the expert-TP ranks and the experts' outputs reduce-scattered back
// (Megatron-Core's alltoall dispatcher with expert_tensor_parallel_size > 1).
#include <string>

#include <gtest/gtest.h>

#include "sim/config/framework.h"
#include "sim/config/scenario.h"
#include "sim/simulate/simulate.h"
#include "sim/workload/layer_ops.h"
#include "sim/workload/placement.h"
#include "sim/workload/stage_layers.h"
#include "tests/fixtures.h"
#include "tests/input_error.h"

namespace stacksim::workload {
namespace {

const std::string kModels = std::string(STACKSIM_SOURCE_DIR) + "/models/";

config::PlanConfig Plan(int tp, int dp, int ep, int etp) {
  config::PlanConfig p;
  p.tp = tp;
  p.dp = dp;
  p.ep = ep;
  p.etp = etp;
  p.sequence_parallel = tp > 1;
  p.micro_batch = 1;
  p.global_batch = dp * 2;
  p.sharding = config::Sharding::kZero1;
  return p;
}

double ExpertGemmFlops(const std::vector<Op>& ops) {
  double f = 0;
  for (const Op& op : ops) {
    if (op.expert && op.role == trace::TaskRole::kGemm) f += op.compute.flops.value;
  }
  return f;
}

// Mixtral 8x7B (hidden 4096, 8 experts, top-2), tp 4, ep 8, seq 4096: each
// TP rank routes 1024 tokens, 2048 copies; with etp 4 the rank computes the
// copies of its whole expert-TP group (4 x 2048 for its one expert) over a
// quarter of the FFN width. Same FLOPs; one all-gather and one
// reduce-scatter of the 8192 gathered rows (bf16) per pass.
TEST(MoeExpertTp, ShardsTheWidthAndGathersTheTokensOfTheGroup) {
  config::ModelConfig m = config::LoadModelFile(kModels + "mixtral-8x7b.json");
  config::PlanConfig one = Plan(4, 8, 8, 1), four = Plan(4, 8, 8, 4);
  LayerShape s1 = LayerShape::From(m, one, 4096, testing::RoundProfile()).Moe(m, one, 8);
  LayerShape s4 = LayerShape::From(m, four, 4096, testing::RoundProfile()).Moe(m, four, 8);
  EXPECT_EQ(s1.tokens_per_local_expert(), 2048);
  EXPECT_EQ(s4.tokens_per_local_expert(), 4 * 2048);
  EXPECT_EQ(s4.moe.expert_ffn_shard(), 14336 / 4);
  EXPECT_NEAR(ExpertGemmFlops(LayerForward(s4)) / ExpertGemmFlops(LayerForward(s1)), 1.0, 1e-12);
  EXPECT_NEAR(ExpertGemmFlops(LayerBackward(s4)) / ExpertGemmFlops(LayerBackward(s1)), 1.0, 1e-12);
  const double gathered = 4 * 2048.0 * 4096 * 2;
  for (bool backward : {false, true}) {
    int gathers = 0, scatters = 0;
    for (const Op& op : backward ? LayerBackward(s4) : LayerForward(s4)) {
      if (op.name.rfind("etp-", 0) != 0) continue;
      EXPECT_TRUE(op.is_collective && !op.ep_group && !op.cp_group) << op.name;  // the TP group
      EXPECT_DOUBLE_EQ(op.bytes.value, gathered) << op.name;
      if (op.collective == trace::CollectiveKind::kAllGather) ++gathers;
      if (op.collective == trace::CollectiveKind::kReduceScatter) ++scatters;
    }
    EXPECT_EQ(gathers, 1);
    EXPECT_EQ(scatters, 1);
  }
  for (const Op& op : LayerForward(s1)) EXPECT_NE(op.name.rfind("etp-", 0), 0u) << op.name;
}

// tp 4 dp 16 ep 8 on 8-GPU nodes. Expert TP 1: the EP group is 8
// consecutive ranks (one node), 8 ranks hold the same experts. Expert TP 4:
// EP members 4 apart, two per node over four nodes; ep x etp = 32 ranks
// split a layer's experts, so 2 ranks (32 apart) hold the same shard.
TEST(MoeExpertTp, EpGroupStridesOverTheExpertTpRanks) {
  auto g1 = PlacePlan(Plan(4, 16, 8, 1), testing::DgxTopology());
  EXPECT_EQ(g1.ep.ranks_per_node, 8);
  EXPECT_EQ(g1.ep.nodes, 1);
  EXPECT_EQ(g1.edp.size, 8);
  EXPECT_EQ(g1.edp.stride, 8);
  auto g4 = PlacePlan(Plan(4, 16, 8, 4), testing::DgxTopology());
  EXPECT_EQ(g4.ep.stride, 4);
  EXPECT_EQ(g4.ep.ranks_per_node, 2);
  EXPECT_EQ(g4.ep.nodes, 4);
  EXPECT_EQ(g4.edp.size, 2);
  EXPECT_EQ(g4.edp.stride, 32);
}

// A two-layer Mixtral on 64 GPUs: with etp = tp the dispatch all-to-all
// leaves the node (6 of 8 members remote), so the exposed EP time grows, and
// the expert-TP gathers and reduce-scatters add TP time; a rank holds a
// quarter of the expert weights. (The step itself may get shorter: the
// expert gradients a rank reduces shrink by etp.)
TEST(MoeExpertTp, AllToAllAcrossNodesSlowsTheStep) {
  config::ModelConfig m = config::LoadModelFile(kModels + "mixtral-8x7b.json");
  m.num_layers = 2;
  auto s = testing::Scenario(m, 64, 4096, Plan(4, 16, 8, 1));
  simulate::Options o;
  o.simulate_if_out_of_memory = true;
  auto one = simulate::Simulate(s, o);
  const int64_t experts_one = StageExpertParameters(s, 0);
  s.plan.etp = 4;
  config::ValidatePlan(s, "x.json");
  auto four = simulate::Simulate(s, o);
  EXPECT_EQ(StageExpertParameters(s, 0) * 4, experts_one);
  EXPECT_GT(four.breakdown.ep_exposed.seconds(), 2.0 * one.breakdown.ep_exposed.seconds());
  EXPECT_GT(four.breakdown.tp_exposed.seconds(), one.breakdown.tp_exposed.seconds());
}

TEST(MoeExpertTp, BadExpertTpIsAnInputError) {
  config::ModelConfig m = config::LoadModelFile(kModels + "mixtral-8x7b.json");
  auto s = testing::Scenario(m, 64, 4096, Plan(4, 16, 8, 2));  // neither 1 nor tp
  InputError e = testing::ErrorFrom([&] { config::ValidatePlan(s, "x.json"); });
  EXPECT_EQ(e.key_path(), "plan.etp");
  s = testing::Scenario(m, 64, 4096, Plan(4, 16, 8, 4));
  s.plan.dispatcher = config::MoeDispatcher::kHierarchical;
  e = testing::ErrorFrom([&] { config::ValidatePlan(s, "x.json"); });
  EXPECT_EQ(e.key_path(), "plan.etp");
  config::ModelConfig dense = testing::GptModel(2, 1024, 16, 51200);
  s = testing::Scenario(dense, 8, 2048, Plan(2, 4, 1, 2));
  e = testing::ErrorFrom([&] { config::ValidatePlan(s, "x.json"); });
  EXPECT_EQ(e.key_path(), "plan.etp");
}

// The frameworks' defaults: Megatron-Core (and NeMo's launcher configs,
// which leave it unset) use expert TP = TP; Megatron-Bridge's performance
// configs set 1.
TEST(MoeExpertTp, FrameworkSaysWhetherExpertTpFollowsTp) {
  const auto& all = config::ShippedFrameworks();
  auto match = [&](const std::string& text) { return config::MatchFramework(all, text, "runs.json", "framework"); };
  EXPECT_TRUE(match("NeMo 24.12 (Megatron-Core)").expert_tp_follows_tp);
  EXPECT_TRUE(match("Megatron-Core r0.8.0").expert_tp_follows_tp);
  EXPECT_FALSE(match("NeMo 25.11 container / Megatron-Bridge (Megatron-Core)").expert_tp_follows_tp);
  EXPECT_FALSE(match("torchtitan (FSDP)").expert_tp_follows_tp);
}

}  // namespace
}  // namespace stacksim::workload
