#include "sim/cost/attention_grid.h"

#include <gtest/gtest.h>

namespace stacksim::cost {
namespace {

trace::ComputeOp Attention(int64_t seq, int64_t q_heads, int64_t group, bool backward,
                           trace::AttentionKernel kernel = trace::AttentionKernel::kOwn) {
  trace::ComputeOp op;
  op.op_class = trace::OpClass::kAttention;
  op.m = op.n = seq;
  op.k = 128;
  op.batch = q_heads;  // one sequence
  op.heads_per_kv_head = static_cast<uint8_t>(group);
  op.causal = true;
  op.backward = backward;
  op.attention_kernel = kernel;
  return op;
}

TEST(AttentionGrid, EqualBlocksRunInWholeWaves) {
  AttentionGrid g{.rows = 264, .levels = 1, .first = 10, .step = 0, .useful = 1.0};
  EXPECT_DOUBLE_EQ(GridOccupancy(g, 132), 1.0);
  g.rows = 133;  // one block spills into a second wave
  EXPECT_DOUBLE_EQ(GridOccupancy(g, 132), 133.0 / 264.0);
}

// Llama 3 8B at TP 8, 8K tokens: one K/V head on the GPU, so the backward
// has 64 key blocks; the first meets all 128 query blocks of each of the
// group's 4 heads (512 tiles), the last 2 x 4; the SMs average 126 tiles.
TEST(AttentionGrid, OwnBackwardOverOneKvHeadIsBoundByItsHeaviestBlock) {
  trace::ComputeOp op = Attention(8192, 4, 4, /*backward=*/true);
  AttentionGrid g = OwnKernelGrid(op);
  EXPECT_EQ(g.rows, 1);
  EXPECT_EQ(g.levels, 64);
  EXPECT_EQ(g.Work(0), 512);
  EXPECT_EQ(g.Work(63), 8);
  // 16640 tiles computed, 128 / 130 of them useful (the diagonal's are half masked).
  EXPECT_DOUBLE_EQ(g.useful, 128.0 / 130.0);
  EXPECT_NEAR(GridOccupancy(g, 132), 128.0 / 130.0 * 16640.0 / 132.0 / 512.0, 1e-12);
  // Half the SMs (the rest held by a collective): the heaviest block still sets
  // the time, so the kernel keeps its speed: the same share of the whole GPU's rate.
  EXPECT_NEAR(AttentionGridFactor(op, 66, 132), AttentionGridFactor(op, 132, 132), 1e-12);
}

// The case the profile's flash2 rates were measured on reaches them exactly;
// a wide grid on half the SMs, half of it.
TEST(AttentionGrid, TheMeasuredCaseReachesTheProfilesRate) {
  trace::ComputeOp measured = Attention(8192, 128, 8, false);  // 2 sequences x 64 heads
  EXPECT_DOUBLE_EQ(AttentionGridFactor(measured, 132, 132), 1.0);
  measured.backward = true;
  EXPECT_DOUBLE_EQ(AttentionGridFactor(measured, 132, 132), 1.0);
  EXPECT_NEAR(AttentionGridFactor(measured, 66, 132), 0.5, 0.01);
}

TEST(AttentionGrid, OwnKernelWithManyHeadsFillsTheGpu) {
  // Llama 3 70B at TP 1: 64 query heads, 8 K/V heads, 8K tokens.
  EXPECT_GT(AttentionGridFactor(Attention(8192, 64, 8, false), 132, 132), 0.97);
  EXPECT_GT(AttentionGridFactor(Attention(8192, 64, 8, true), 132, 132), 0.9);
  // The forward runs over query heads: 4 heads x 64 query blocks fill 132 SMs
  // better than the backward's one K/V head does.
  EXPECT_GT(AttentionGridFactor(Attention(8192, 4, 4, false), 132, 132),
            2 * AttentionGridFactor(Attention(8192, 4, 4, true), 132, 132));
}

TEST(AttentionGrid, ExactScheduleAndItsManyBlockEstimateAgree) {
  // 33 blocks per SM is past the exact schedule; 32 is not: the two agree closely.
  AttentionGrid exact{.rows = 132, .levels = 32, .first = 64, .step = 2, .useful = 1.0};
  AttentionGrid estimate{.rows = 132, .levels = 33, .first = 66, .step = 2, .useful = 1.0};
  EXPECT_NEAR(GridOccupancy(exact, 132), GridOccupancy(estimate, 132), 0.02);
  EXPECT_LT(GridOccupancy(estimate, 132), 1.0);
}

TEST(AttentionGrid, OtherKernelsHaveNoGridFactor) {
  for (auto k : {trace::AttentionKernel::kFastest, trace::AttentionKernel::kFlash2, trace::AttentionKernel::kFlash1}) {
    EXPECT_DOUBLE_EQ(AttentionGridFactor(Attention(2048, 4, 4, true, k), 66, 132), 1.0);
  }
}

}  // namespace
}  // namespace stacksim::cost
