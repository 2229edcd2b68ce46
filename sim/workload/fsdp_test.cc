// ZeRO-3/FSDP beyond plain data parallelism: with context parallelism (the
// shard group spans dp x cp, torchtitan's FSDP2 mesh), with mixture-of-experts
// layers (experts sharded over the expert-data-parallel group) and hybrid
// sharding (plan.shard_group: FSDP within groups, all-reduce across them).
// Collective sizes and memory shards are checked against hand counts.
#include <gtest/gtest.h>

#include "sim/config/scenario.h"
#include "sim/memory/memory_model.h"
#include "sim/workload/stage_layers.h"
#include "sim/workload/training_step.h"
#include "tests/fixtures.h"
#include "tests/input_error.h"

namespace stacksim::workload {
namespace {

using trace::CollectiveKind;

InputError ValidateError(const config::ScenarioConfig& s) {
  return testing::ErrorFrom([&] { config::ValidatePlan(s, "test"); });
}

config::ScenarioConfig Zero3(int dp, int cp, int shard_group, int64_t global_batch) {
  config::ModelConfig model = testing::GptModel(4, 1024, 16, 32000);
  config::PlanConfig plan;
  plan.dp = dp;
  plan.cp = cp;
  plan.shard_group = shard_group;
  plan.sharding = config::Sharding::kZero3;
  plan.micro_batch = 1;
  plan.global_batch = global_batch;
  return testing::Scenario(model, dp * cp, 2048, plan);
}

// ZeRO-3 of a 2-layer SwiGLU MoE model (8 experts, top-2) on 8 GPUs of dp,
// one micro-batch, with `ep` and `shard_group` (0: dp).
config::ScenarioConfig MoeZero3(int ep, int shard_group) {
  config::ModelConfig model = testing::GptModel(2, 1024, 16, 32000);
  model.activation = config::Activation::kSwiglu;
  model.num_experts = 8;
  model.experts_per_token = 2;
  model.moe_intermediate_size = 1024;
  config::PlanConfig plan;
  plan.dp = 8;
  plan.ep = ep;
  plan.shard_group = shard_group;
  plan.sharding = config::Sharding::kZero3;
  plan.micro_batch = 1;
  plan.global_batch = 8;
  return testing::Scenario(model, 8, 2048, plan);
}

struct DpCollective {
  CollectiveKind kind;
  double bytes;
  trace::CommGroup group;
};

std::vector<DpCollective> DpCollectives(const trace::Trace& t) {
  std::vector<DpCollective> out;
  for (const auto& task : t.tasks()) {
    if (task.kind != trace::TaskKind::kCollective || task.role != trace::TaskRole::kDpComm) continue;
    out.push_back({task.comm.kind, task.comm.bytes.value, t.group(task.comm.group)});
  }
  return out;
}

double OptimizerBytes(const trace::Trace& t) {
  double b = 0;
  for (const auto& task : t.tasks()) {
    if (task.role == trace::TaskRole::kOptimizer) b += task.compute.bytes.value;
  }
  return b;
}

// torchtitan's FSDP2 shards over the flattened dp_shard x cp mesh: the
// gather and reduce-scatter of every layer run over dp x cp ranks, and each
// rank keeps 1/(dp x cp) of the parameters, gradients and optimizer state.
TEST(Fsdp, ContextParallelRanksJoinTheShardGroup) {
  const config::ScenarioConfig s = Zero3(4, 2, 0, 4);
  config::ValidatePlan(s, "test");
  const trace::Trace t = BuildTrainingStep(s);
  const double layer = static_cast<double>(s.model.LayerParameterCount());
  int gathers = 0, scatters = 0;
  for (const DpCollective& c : DpCollectives(t)) {
    EXPECT_EQ(c.group.size, 8);  // dp 4 x cp 2
    EXPECT_EQ(c.group.stride, 1);
    if (c.kind == CollectiveKind::kAllGather) {
      ++gathers;
      EXPECT_DOUBLE_EQ(c.bytes, layer * 2);  // the whole bf16 layer out of 8 shards
    } else {
      ASSERT_EQ(c.kind, CollectiveKind::kReduceScatter);
      ++scatters;
      EXPECT_DOUBLE_EQ(c.bytes, layer * 2);
    }
  }
  EXPECT_EQ(gathers, 4 * 2);  // forward and backward of 4 layers, one micro-batch
  EXPECT_EQ(scatters, 4);
  // The optimizer steps one 8th of the stage's parameters (38 bytes each).
  EXPECT_NEAR(OptimizerBytes(t), static_cast<double>(StageParameters(s, 0)) / 8 * 38, 1.0);

  // Memory of parameters, gradients and optimizer: the same as 8-way FSDP without CP.
  const memory::StageFootprint with_cp = memory::EstimateMemory(s)[0];
  const memory::StageFootprint dp8 = memory::EstimateMemory(Zero3(8, 1, 0, 8))[0];
  EXPECT_DOUBLE_EQ(with_cp.weights.value, dp8.weights.value);
  EXPECT_DOUBLE_EQ(with_cp.gradients.value, dp8.gradients.value);
  EXPECT_DOUBLE_EQ(with_cp.optimizer.value, dp8.optimizer.value);
  const double P = static_cast<double>(StageParameters(s, 0));
  EXPECT_NEAR(with_cp.optimizer.value, 12 * P / 8, 1.0);  // fp32 master and two moments
}

// Hybrid sharding, shard_group 2 of dp 8: gathers and reduce-scatters within
// pairs of neighbouring ranks; each pair's shard is all-reduced once per step
// over the 4 replicas, 2 ranks apart. Memory shards over the pair only.
TEST(Fsdp, HybridShardingGathersInGroupsAndAllReducesAcrossThem) {
  const config::ScenarioConfig s = Zero3(8, 1, 2, 16);  // 2 micro-batches
  config::ValidatePlan(s, "test");
  const trace::Trace t = BuildTrainingStep(s);
  const double layer = static_cast<double>(s.model.LayerParameterCount()) * 2;
  int gathers = 0, scatters = 0, all_reduces = 0;
  for (const DpCollective& c : DpCollectives(t)) {
    if (c.kind == CollectiveKind::kAllReduce) {
      ++all_reduces;
      EXPECT_EQ(c.group.size, 4);
      EXPECT_EQ(c.group.stride, 2);
      EXPECT_DOUBLE_EQ(c.bytes, layer / 2);  // the pair's reduced shard
      continue;
    }
    (c.kind == CollectiveKind::kAllGather ? gathers : scatters) += 1;
    EXPECT_EQ(c.group.size, 2);
    EXPECT_EQ(c.group.stride, 1);
    EXPECT_DOUBLE_EQ(c.bytes, layer);
  }
  EXPECT_EQ(gathers, 4 * 2 * 2);  // 4 layers, forward and backward, 2 micro-batches
  EXPECT_EQ(scatters, 4 * 2);
  EXPECT_EQ(all_reduces, 4);      // once per layer, after the last micro-batch
  const double P = static_cast<double>(StageParameters(s, 0));
  EXPECT_NEAR(memory::EstimateMemory(s)[0].optimizer.value, 12 * P / 2, 1.0);
  EXPECT_NEAR(OptimizerBytes(t), P / 2 * 38, 1.0);

  // With context parallelism the shard group is shard_group x cp = 4 ranks
  // and the replicas sit 4 apart.
  const trace::Trace with_cp = BuildTrainingStep(Zero3(4, 2, 2, 8));
  for (const DpCollective& c : DpCollectives(with_cp)) {
    EXPECT_EQ(c.group.size, c.kind == CollectiveKind::kAllReduce ? 2 : 4);
    EXPECT_EQ(c.group.stride, c.kind == CollectiveKind::kAllReduce ? 4 : 1);
  }
}

// FP8 training casts only GEMM inputs: weight gradients are bf16, and so is
// what FSDP reduce-scatters (2 bytes per parameter, not fp8's 1).
TEST(Fsdp, Fp8TrainingReduceScattersBf16Gradients) {
  config::ScenarioConfig s = Zero3(8, 1, 0, 8);
  s.plan.precision = config::Precision::kFp8;
  s.profile.peak_flops[static_cast<int>(config::Precision::kFp8)] = s.profile.peak_flops[static_cast<int>(config::Precision::kBf16)];
  const double layer = static_cast<double>(s.model.LayerParameterCount());
  int scatters = 0;
  for (const DpCollective& c : DpCollectives(BuildTrainingStep(s))) {
    if (c.kind != CollectiveKind::kReduceScatter) continue;
    ++scatters;
    EXPECT_DOUBLE_EQ(c.bytes, layer * 2);
  }
  EXPECT_EQ(scatters, 4);
}

TEST(Fsdp, ShardGroupMustDivideDpAndNeedsZero3) {
  config::ScenarioConfig s = Zero3(8, 1, 3, 16);
  EXPECT_EQ(ValidateError(s).key_path(), "plan.shard_group");
  s = Zero3(8, 1, 2, 16);
  s.plan.sharding = config::Sharding::kZero1;
  EXPECT_EQ(ValidateError(s).key_path(), "plan.shard_group");
}

// ZeRO-3 of a MoE model: each layer's dense parameters come from the dp
// group, the routed experts of this EP rank from the expert-data-parallel
// group (tp x dp x cp / ep ranks holding the same experts).
TEST(Fsdp, ExpertsShardOverTheExpertDataParallelGroup) {
  const config::ScenarioConfig s = MoeZero3(/*ep=*/4, /*shard_group=*/0);
  const config::ModelConfig& model = s.model;
  config::ValidatePlan(s, "test");
  const trace::Trace t = BuildTrainingStep(s);
  const double expert = static_cast<double>(model.ExpertParameterCount());
  const double dense = static_cast<double>(model.LayerParameterCount(0)) - expert;
  int expert_gathers = 0, dense_gathers = 0, expert_scatters = 0;
  for (const DpCollective& c : DpCollectives(t)) {
    if (c.group.role == trace::GroupRole::kExpertDp) {
      EXPECT_EQ(c.group.size, 2);  // 8 / ep 4
      EXPECT_DOUBLE_EQ(c.bytes, expert / 4 * 2);
      (c.kind == CollectiveKind::kAllGather ? expert_gathers : expert_scatters) += 1;
    } else if (c.kind == CollectiveKind::kAllGather) {
      ++dense_gathers;
      EXPECT_EQ(c.group.size, 8);
      EXPECT_DOUBLE_EQ(c.bytes, dense * 2);
    }
  }
  EXPECT_EQ(expert_gathers, 2 * 2);
  EXPECT_EQ(dense_gathers, 2 * 2);
  EXPECT_EQ(expert_scatters, 2);
  const double P = static_cast<double>(StageParameters(s, 0));
  const double Pe = static_cast<double>(StageExpertParameters(s, 0));
  EXPECT_NEAR(memory::EstimateMemory(s)[0].optimizer.value, 12 * ((P - Pe) / 8 + Pe / 2), 1.0);

  // Hybrid sharding needs whole copies of a layer's experts in each shard
  // group: ep 4 does not divide a shard group of 2.
  config::ScenarioConfig hybrid = s;
  hybrid.plan.shard_group = 2;
  EXPECT_EQ(ValidateError(hybrid).key_path(), "plan.shard_group");
}

// Hybrid sharding of a MoE model (torchtitan's FSDP2 over dp_shard x cp / ep
// for the experts, replicated over dp_replicate): the experts shard over the
// ranks of one shard group that hold them, and each shard's copies in the
// other shard groups all-reduce its gradients once per step, as the dense
// parameters' shards do.
TEST(Fsdp, HybridShardedExpertsShardInTheirGroupAndAllReduceAcrossThem) {
  // 2 replicas of 4-way shard groups, 2 expert shards in each.
  const config::ScenarioConfig s = MoeZero3(/*ep=*/2, /*shard_group=*/4);
  const config::ModelConfig& model = s.model;
  config::ValidatePlan(s, "test");
  EXPECT_EQ(s.plan.ExpertDpRanks(), 2);
  const trace::Trace t = BuildTrainingStep(s);
  const double expert = static_cast<double>(model.ExpertParameterCount());
  const double dense = static_cast<double>(model.LayerParameterCount(0)) - expert;
  const double ep_share = expert / 2 * 2;  // one EP rank's experts, bf16
  int expert_gathers = 0, expert_scatters = 0, expert_all_reduces = 0, dense_all_reduces = 0;
  for (const DpCollective& c : DpCollectives(t)) {
    if (c.group.role == trace::GroupRole::kExpertDp) {
      EXPECT_EQ(c.group.size, 2);    // 4 ranks of the shard group / ep 2
      EXPECT_EQ(c.group.stride, 2);  // ep ranks apart
      EXPECT_DOUBLE_EQ(c.bytes, ep_share);
      (c.kind == CollectiveKind::kAllGather ? expert_gathers : expert_scatters) += 1;
    } else if (c.kind == CollectiveKind::kAllReduce) {
      EXPECT_EQ(c.group.size, 2);    // the replicas
      EXPECT_EQ(c.group.stride, 4);  // a shard group apart
      if (c.bytes == ep_share / 2) {
        ++expert_all_reduces;        // the expert shard of this rank
      } else {
        EXPECT_DOUBLE_EQ(c.bytes, dense * 2 / 4);
        ++dense_all_reduces;
      }
    }
  }
  EXPECT_EQ(expert_gathers, 2 * 2);  // 2 layers, forward and backward, 1 micro-batch
  EXPECT_EQ(expert_scatters, 2);
  EXPECT_EQ(expert_all_reduces, 2);
  EXPECT_EQ(dense_all_reduces, 2);
  const double P = static_cast<double>(StageParameters(s, 0));
  const double Pe = static_cast<double>(StageExpertParameters(s, 0));
  EXPECT_NEAR(memory::EstimateMemory(s)[0].optimizer.value, 12 * ((P - Pe) / 4 + Pe / 2), 1.0);

  // Shard groups that hold whole experts per rank (ep 4 of 4): nothing to
  // gather, the experts' gradients all-reduced whole across the replicas.
  config::ScenarioConfig whole = s;
  whole.plan.ep = 4;
  config::ValidatePlan(whole, "test");
  EXPECT_EQ(whole.plan.ExpertDpRanks(), 1);
  int whole_expert_all_reduces = 0;
  for (const DpCollective& c : DpCollectives(BuildTrainingStep(whole))) {
    EXPECT_NE(c.group.role, trace::GroupRole::kExpertDp);
    if (c.kind == CollectiveKind::kAllReduce && c.bytes == expert / 4 * 2) ++whole_expert_all_reduces;
  }
  EXPECT_EQ(whole_expert_all_reduces, 2);
}

}  // namespace
}  // namespace stacksim::workload
