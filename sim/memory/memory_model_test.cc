#include "sim/memory/memory_model.h"

#include <gtest/gtest.h>

#include "sim/memory/reserve.h"
#include "tests/fixtures.h"

namespace stacksim::memory {
namespace {

workload::LayerShape Gpt(int tp, bool sp, int64_t b, int64_t s, int64_t h, int64_t a) {
  auto model = testing::GptModel(1, static_cast<int>(h), static_cast<int>(a), 1024);
  config::PlanConfig plan;
  plan.tp = tp;
  plan.micro_batch = b;
  plan.sequence_parallel = sp;
  plan.attention = config::AttentionImpl::kUnfused;
  plan.precision = config::Precision::kFp16;
  return workload::LayerShape::From(model, plan, s, testing::RoundProfile());
}

// Korthikanti et al. 2022, Table 2: activation bytes per layer.
TEST(MemoryModel, TensorParallelActivationsMatchKorthikanti) {
  const double s = 2048, b = 1, h = 12288, a = 96, t = 8;
  double expected = s * b * h * (10 + 24 / t + 5 * a * s / (h * t));
  EXPECT_NEAR(LayerActivations(Gpt(8, false, 1, 2048, 12288, 96), config::Recompute::kNone).value, expected,
              expected * 1e-12);
}

TEST(MemoryModel, SequenceParallelActivationsMatchKorthikanti) {
  const double s = 2048, b = 4, h = 6144, a = 64, t = 8;
  double expected = s * b * h / t * (34 + 5 * a * s / h);
  EXPECT_NEAR(LayerActivations(Gpt(8, true, 4, 2048, 6144, 64), config::Recompute::kNone).value, expected,
              expected * 1e-12);
}

TEST(MemoryModel, SelectiveRecomputeDropsTheAttentionScores) {
  const double s = 2048, b = 1, h = 12288, t = 8;
  EXPECT_NEAR(LayerActivations(Gpt(8, true, 1, 2048, 12288, 96), config::Recompute::kSelective).value,
              34 * s * b * h / t, 1.0);
}

TEST(MemoryModel, FullRecomputeKeepsTheLayerInput) {
  EXPECT_DOUBLE_EQ(LayerActivations(Gpt(8, false, 1, 2048, 12288, 96), config::Recompute::kFull).value,
                   2.0 * 2048 * 12288);
}

// An 8-layer GPT on 8 GPUs, data-parallel with the distributed optimizer.
config::ScenarioConfig Zero1Scenario() {
  auto model = testing::GptModel(8, 1024, 16, 32000);
  config::PlanConfig plan;
  plan.dp = 8;
  plan.global_batch = 8;
  plan.sharding = config::Sharding::kZero1;
  return testing::Scenario(model, 8, 1024, plan);
}

TEST(MemoryModel, OptimizerStateShardsWithZero) {
  auto model = testing::GptModel(8, 1024, 16, 32000);
  config::PlanConfig plan;
  plan.dp = 8;
  plan.global_batch = 8;
  auto s = testing::Scenario(model, 8, 1024, plan);
  auto none = EstimateMemory(s)[0];
  s.plan.sharding = config::Sharding::kZero1;
  auto z1 = EstimateMemory(s)[0];
  EXPECT_NEAR(z1.optimizer.value * 8, none.optimizer.value, 1.0);
  EXPECT_DOUBLE_EQ(z1.weights.value, none.weights.value);
  // Mixed-precision Adam: 2 (weights) + 4 (fp32 grads) + 12 (master, m, v) bytes per parameter.
  double params = none.weights.value / 2;
  EXPECT_NEAR(none.optimizer.value, 12 * params, 1.0);
  EXPECT_NEAR(none.gradients.value, 4 * params, 1.0);
}

// FP8 training keeps Transformer Engine's FP8 copy of each weight beside the
// 16-bit weight (3 bytes a parameter); FP8 weights (plan.fp8_params,
// --fp8-param-gather) keep the FP8 data and its transpose only (2 bytes).
TEST(MemoryModel, Fp8WeightsKeepNoSixteenBitCopy) {
  auto s = Zero1Scenario();
  const double params = EstimateMemory(s)[0].weights.value / 2;
  s.plan.precision = config::Precision::kFp8;
  EXPECT_NEAR(EstimateMemory(s)[0].weights.value, 3 * params, 1.0);
  s.plan.fp8_params = true;
  EXPECT_NEAR(EstimateMemory(s)[0].weights.value, 2 * params, 1.0);
  s.plan.precision = config::Precision::kBf16;  // a framework's default applies to FP8 runs only
  EXPECT_NEAR(EstimateMemory(s)[0].weights.value, 2 * params, 1.0);
  EXPECT_FALSE(s.plan.Fp8Weights());
}

// What the optimizer keeps per parameter (plan.optimizer_state): 16-bit
// remainders instead of an fp32 master (NeMo's distributed_fused_adam over
// bf16 weights) save 2 bytes, bf16 moments without a master keep 4; fp32
// training has no master whatever the state says.
TEST(MemoryModel, OptimizerBytesFollowTheOptimizerState) {
  auto s = Zero1Scenario();
  const auto full = EstimateMemory(s)[0];
  const double shard = full.optimizer.value / 12;
  s.plan.optimizer_state.master = config::MasterWeights::kRemainders;
  EXPECT_NEAR(EstimateMemory(s)[0].optimizer.value, 10 * shard, 1.0);
  s.plan.optimizer_state = {config::StateDtype::kBf16, config::StateDtype::kBf16, config::MasterWeights::kNone};
  EXPECT_NEAR(EstimateMemory(s)[0].optimizer.value, 4 * shard, 1.0);
  EXPECT_DOUBLE_EQ(EstimateMemory(s)[0].weights.value, full.weights.value);
  s.plan.precision = config::Precision::kFp32;
  s.plan.optimizer_state = {};
  EXPECT_NEAR(EstimateMemory(s)[0].optimizer.value, 8 * shard, 1.0);
}

TEST(MemoryModel, OneFOneBFirstStageHoldsPMicroBatches) {
  auto model = testing::GptModel(8, 1024, 16, 32000);
  config::PlanConfig plan;
  plan.pp = 4;
  plan.global_batch = 16;
  auto s = testing::Scenario(model, 4, 1024, plan);
  auto mem = EstimateMemory(s);
  EXPECT_EQ(mem[0].in_flight_micro_batches, 4);
  EXPECT_EQ(mem[3].in_flight_micro_batches, 1);
  EXPECT_GT(mem[0].activations.value, mem[1].activations.value);
}

}  // namespace
}  // namespace stacksim::memory

namespace stacksim::memory {
namespace {

// The loss on the last stage: Megatron-Core's in-place vocab-parallel cross
// entropy holds e + 4 bytes per logit; torchtitan's F.cross_entropy on
// upcast logits holds 12 (three fp32 tensors at the loss backward).
TEST(MemoryModel, UpcastLossHoldsTwelveBytesPerLogitOnTheLastStage) {
  auto model = testing::GptModel(4, 1024, 16, 32000);
  config::PlanConfig plan;
  plan.tp = 2;
  plan.pp = 2;
  plan.micro_batch = 2;
  plan.global_batch = 8;
  plan.recompute = config::Recompute::kFull;
  auto s = testing::Scenario(model, 4, 2048, plan);
  const auto inplace = EstimateMemory(s);
  s.plan.loss_logits = config::LossLogits::kUpcast;
  const auto upcast = EstimateMemory(s);
  const double logits = 2.0 * 2048 * (32000 / 2);  // tokens x vocabulary shard
  EXPECT_DOUBLE_EQ(upcast[1].activations.value - inplace[1].activations.value, logits * (12.0 - (2.0 + 4.0)));
  EXPECT_DOUBLE_EQ(upcast[0].activations.value, inplace[0].activations.value);  // no head on stage 0
}

// Runtime memory is the sourced parts, no longer a 2 GiB allowance.
TEST(MemoryModel, OtherIsTheSourcedRuntimeParts) {
  auto model = testing::GptModel(2, 1024, 16, 32000);
  config::PlanConfig plan;
  plan.dp = 2;
  plan.global_batch = 4;
  const auto s = testing::Scenario(model, 2, 2048, plan);
  EXPECT_DOUBLE_EQ(EstimateMemory(s)[0].other.value, RuntimeMemory(s).total().value);
  EXPECT_LT(RuntimeMemory(s).total().value, 2.0 * kGiB);
}

}  // namespace
}  // namespace stacksim::memory
