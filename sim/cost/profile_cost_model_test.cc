#include "sim/cost/profile_cost_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <vector>

#include "sim/config/profile.h"
#include "tests/fixtures.h"

namespace stacksim::cost {
namespace {

using config::Precision;

trace::ComputeOp Gemm(int64_t m, int64_t n, int64_t k) {
  trace::ComputeOp op;
  op.op_class = trace::OpClass::kGemm;
  op.precision = Precision::kBf16;
  op.m = m;
  op.n = n;
  op.k = k;
  op.flops = Flops{2.0 * m * n * k};
  op.bytes = Bytes{2.0 * (m * k + k * n + m * n)};
  return op;
}

TEST(ProfileCostModel, FullWavesRunAtTheLargeGemmEfficiency) {
  ProfileCostModel cost(testing::RoundProfile(), false);
  // 1280 x 1280 output in 128 x 128 tiles = 100 tiles = one full wave on 100 SMs.
  EXPECT_DOUBLE_EQ(cost.GemmEfficiency(1280, 1280, 8192, 1, Precision::kBf16), 0.8);
  auto t = cost.ComputeTime(Gemm(1280, 1280, 8192));
  EXPECT_NEAR(t.seconds(), 2.0 * 1280 * 1280 * 8192 / (1000e12 * 0.8), 1e-9);
}

TEST(ProfileCostModel, OneTileMoreCostsAWholeWave) {
  ProfileCostModel cost(testing::RoundProfile(), false);
  // 101 tiles: two waves of 100 SMs for 101 tiles' work.
  double eff = cost.GemmEfficiency(128 * 101, 128, 8192, 1, Precision::kBf16);
  EXPECT_NEAR(eff, 0.8 * 101.0 / 200.0, 1e-12);
  // A partial tile row is computed in full.
  EXPECT_NEAR(cost.GemmEfficiency(1280 + 1, 1280, 8192, 1, Precision::kBf16), 0.8 * (1281.0 * 1280) / (200.0 * 128 * 128),
              1e-12);
}

TEST(ProfileCostModel, MemoryBoundOpsRunAtAchievableCopyBandwidth) {
  ProfileCostModel cost(testing::RoundProfile(), false);
  trace::ComputeOp op;
  op.op_class = trace::OpClass::kMemoryBound;
  op.bytes = Bytes{4e9};
  EXPECT_NEAR(cost.ComputeTime(op).seconds(), 4e9 / (5e12 * 0.8), 1e-9);
}

TEST(ProfileCostModel, TinyKernelsCostTheirLaunchAndLessWithGraphs) {
  trace::ComputeOp op;
  op.op_class = trace::OpClass::kMemoryBound;
  op.bytes = Bytes{1000};
  op.kernels = 3;
  EXPECT_EQ(ProfileCostModel(testing::RoundProfile(), false).ComputeTime(op), Time::Us(12));
  EXPECT_EQ(ProfileCostModel(testing::RoundProfile(), true).ComputeTime(op), Time::Us(1.5));
}

TEST(ProfileCostModel, AttentionUsesItsOwnForwardAndBackwardEfficiency) {
  ProfileCostModel cost(testing::RoundProfile(), false);
  trace::ComputeOp op;
  op.op_class = trace::OpClass::kAttention;
  op.flops = Flops{1e12};
  EXPECT_NEAR(cost.ComputeTime(op).seconds(), 1e12 / (1000e12 * 0.5), 1e-9);
  op.backward = true;
  EXPECT_NEAR(cost.ComputeTime(op).seconds(), 1e12 / (1000e12 * 0.4), 1e-9);
}

}  // namespace
}  // namespace stacksim::cost

namespace stacksim::cost {
namespace {

TEST(ProfileCostModel, FlashAttention2KernelsRunAtTheirOwnEfficiency) {
  ProfileCostModel cost(testing::RoundProfile(), false);
  trace::ComputeOp op;
  op.op_class = trace::OpClass::kAttention;
  op.flops = Flops{1e12};
  op.flash2 = true;
  EXPECT_NEAR(cost.ComputeTime(op).seconds(), 1e12 / (1000e12 * 0.3), 1e-9);
  op.backward = true;
  EXPECT_NEAR(cost.ComputeTime(op).seconds(), 1e12 / (1000e12 * 0.25), 1e-9);
}

TEST(ProfileCostModel, ShortReductionsPayTheKOverhead) {
  auto profile = testing::RoundProfile();
  profile.gemm.k_overhead.value = 128;
  ProfileCostModel cost(profile, false);
  EXPECT_NEAR(cost.GemmEfficiency(1280, 1280, 128, 1, config::Precision::kBf16), 0.8 * 0.5, 1e-12);
  EXPECT_NEAR(cost.GemmEfficiency(1280, 1280, 1152, 1, config::Precision::kBf16), 0.8 * 0.9, 1e-12);
}

}  // namespace
}  // namespace stacksim::cost
