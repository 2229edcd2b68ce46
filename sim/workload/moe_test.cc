// Mixture-of-experts layers: parameter counts, the EP all-to-all volume,
// routing imbalance and plan validation.
#include <cmath>
#include <string>

#include <gtest/gtest.h>

#include "sim/config/scenario.h"
#include "sim/simulate/simulate.h"
#include "sim/workload/layer_ops.h"
#include "sim/workload/training_step.h"
#include "tests/fixtures.h"
#include "tests/input_error.h"

namespace stacksim::workload {
namespace {

const std::string kModels = std::string(STACKSIM_SOURCE_DIR) + "/models/";

config::ModelConfig Load(const std::string& name) { return config::LoadModelFile(kModels + name + ".json"); }

TEST(Moe, ModelsLoad) {
  for (const char* name : {"mixtral-8x7b", "mixtral-8x22b", "qwen3-30b-a3b", "qwen3-235b-a22b", "gpt-oss-120b"}) {
    config::ModelConfig m = Load(name);
    EXPECT_TRUE(m.is_moe()) << name;
    EXPECT_FALSE(m.source.empty()) << name;
    EXPECT_EQ(m.MoeLayerCount(), m.num_layers) << name;
  }
}

// Published totals: Mixtral 8x7B 46.7B / 12.9B active (Jiang et al. 2024),
// Qwen3-30B-A3B 30.5B / 3.3B (Qwen3 report, Table 2).
TEST(Moe, ParameterCountsMatchPublishedWithinOnePercent) {
  config::ModelConfig mixtral = Load("mixtral-8x7b");
  EXPECT_NEAR(mixtral.ParameterCount() / 46.7e9, 1.0, 0.01);
  EXPECT_NEAR(mixtral.ActiveParameterCount() / 12.9e9, 1.0, 0.01);
  config::ModelConfig qwen = Load("qwen3-30b-a3b");
  EXPECT_NEAR(qwen.ParameterCount() / 30.5e9, 1.0, 0.01);
  EXPECT_NEAR(qwen.ActiveParameterCount() / 3.3e9, 1.0, 0.02);  // "3.3B" is rounded: 3.35B counted
}

config::PlanConfig MoePlan(int tp, int dp, int ep) {
  config::PlanConfig p;
  p.tp = tp;
  p.dp = dp;
  p.ep = ep;
  p.sequence_parallel = tp > 1;
  p.micro_batch = 1;
  p.global_batch = dp * 2;
  p.sharding = config::Sharding::kZero1;
  return p;
}

// Hand count: every routed token copy (tokens x top_k) goes out to its
// expert's rank and comes back, in the forward and again in the backward;
// (ep-1)/ep of each all-to-all buffer leaves the GPU.
TEST(Moe, AllToAllVolumePerLayerMatchesHandCount) {
  config::ModelConfig m = Load("qwen3-30b-a3b");
  const int ep = 8;
  for (int tp : {1, 2}) {
    config::PlanConfig plan = MoePlan(tp, 8, ep);
    LayerShape s = LayerShape::From(m, plan, 4096).Moe(m, plan);
    const double tokens = 4096.0 / tp;  // each TP rank routes its sequence-parallel shard
    const double direction = tokens * 8 * 2048 * 2.0 * (ep - 1) / ep;
    for (bool backward : {false, true}) {
      auto ops = backward ? LayerBackward(s) : LayerForward(s);
      int count = 0;
      double wire = 0;
      for (const Op& op : ops) {
        if (op.label != std::string(kLabelEp)) continue;
        EXPECT_TRUE(op.is_collective && op.ep_group && !op.async);
        EXPECT_EQ(op.collective, trace::CollectiveKind::kAllToAll);
        ++count;
        wire += op.bytes.value * (ep - 1) / ep;
      }
      EXPECT_EQ(count, 2);  // dispatch and combine
      EXPECT_NEAR(wire, 2 * direction, 1e-6 * direction);
    }
  }
}

TEST(Moe, SkewSetsLoadFactorOfBusiestRank) {
  config::ModelConfig m = Load("mixtral-8x7b");  // 8 experts, top-2
  config::PlanConfig plan = MoePlan(1, 4, 4);
  EXPECT_DOUBLE_EQ(MoeLoadFactor(m, plan), 1.0);
  plan.routing = config::Routing::kHistogram;
  plan.routing_histogram = {3, 1, 1, 1, 1, 1, 0, 0};  // rank 0 (experts 0, 1) gets 4/8: twice the mean 1/4
  EXPECT_NEAR(MoeLoadFactor(m, plan), 2.0, 1e-12);
  plan.routing = config::Routing::kZipf;
  plan.routing_histogram.clear();
  plan.zipf_exponent = 1.0;
  double h8 = 0;
  for (int i = 1; i <= 8; ++i) h8 += 1.0 / i;
  EXPECT_NEAR(MoeLoadFactor(m, plan), (1.0 + 0.5) / h8 * 4, 1e-12);
  plan.routing = config::Routing::kUniform;
  plan.capacity_factor = 1.25;
  EXPECT_DOUBLE_EQ(MoeLoadFactor(m, plan), 1.25);
  EXPECT_DOUBLE_EQ(MoeDroppedFraction(m, plan), 0.0);
}

double ExpertGemmSeconds(const simulate::SimulationResult& r) {
  double t = 0;
  for (size_t i = 0; i < r.trace->size(); ++i) {
    const auto& task = r.trace->task(static_cast<trace::TaskId>(i));
    if (task.rank == 0 && r.trace->name(task.name).rfind("expert-fc", 0) == 0) {
      t += (r.replay->timings[i].end - r.replay->timings[i].start).seconds();
    }
  }
  return t;
}

TEST(Moe, HistogramSkewSlowsExpertsByTheLoadFactor) {
  config::ModelConfig m = Load("mixtral-8x7b");
  m.num_layers = 2;
  config::PlanConfig plan = MoePlan(1, 8, 4);
  auto s = testing::Scenario(m, 8, 4096, plan);
  simulate::Options o;
  o.keep_trace = true;
  o.simulate_if_out_of_memory = true;
  auto even = simulate::Simulate(s, o);
  s.plan.routing = config::Routing::kHistogram;
  s.plan.routing_histogram = {3, 1, 1, 1, 1, 1, 0, 0};
  auto skewed = simulate::Simulate(s, o);
  EXPECT_NEAR(ExpertGemmSeconds(skewed) / ExpertGemmSeconds(even), 2.0, 0.05);
  EXPECT_GT(skewed.iteration, even.iteration);
  EXPECT_GT(skewed.breakdown.ep_exposed, even.breakdown.ep_exposed);
  EXPECT_DOUBLE_EQ(skewed.moe_load_factor, 2.0);
  EXPECT_GT(skewed.moe_imbalance_cost.seconds(), 0.0);
  EXPECT_EQ(even.moe_imbalance_cost.seconds(), 0.0);
}

TEST(Moe, TpOneWithEpAcrossNodesRuns) {
  config::ModelConfig m = Load("qwen3-30b-a3b");
  m.num_layers = 2;
  config::PlanConfig plan = MoePlan(1, 32, 16);  // EP 16 spans two 8-GPU nodes
  auto s = testing::Scenario(m, 32, 4096, plan);
  simulate::Options o;
  o.simulate_if_out_of_memory = true;
  auto r = simulate::Simulate(s, o);
  EXPECT_GT(r.breakdown.ep_exposed.seconds(), 0.0);
  EXPECT_NEAR(r.breakdown.total().seconds(), r.iteration.seconds(), 1e-6 * r.iteration.seconds());
}

TEST(Moe, BadPlansAreInputErrors) {
  config::ModelConfig m = Load("mixtral-8x7b");
  auto s = testing::Scenario(m, 48, 4096, MoePlan(1, 48, 6));  // 6 does not divide 8 experts
  InputError e = testing::ErrorFrom([&] { config::ValidatePlan(s, "x.json"); });
  EXPECT_EQ(e.key_path(), "plan.ep");
  s = testing::Scenario(m, 4, 4096, MoePlan(1, 4, 8));  // ep > tp x dp
  e = testing::ErrorFrom([&] { config::ValidatePlan(s, "x.json"); });
  EXPECT_EQ(e.key_path(), "plan.ep");
  config::ModelConfig dense = testing::GptModel(2, 1024, 16, 51200);
  s = testing::Scenario(dense, 8, 2048, MoePlan(1, 8, 2));
  e = testing::ErrorFrom([&] { config::ValidatePlan(s, "x.json"); });
  EXPECT_EQ(e.key_path(), "plan.ep");
}

}  // namespace
}  // namespace stacksim::workload
