#include "sim/cost/attention_grid.h"

#include <cmath>
#include <string>

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

TEST(AttentionGrid, FlashAttentionOneAndUnshapedOpsHaveNoGridFactor) {
  EXPECT_DOUBLE_EQ(AttentionGridFactor(Attention(2048, 4, 4, true, trace::AttentionKernel::kFlash1), 66, 132), 1.0);
  trace::ComputeOp unshaped = Attention(0, 4, 4, false, trace::AttentionKernel::kFastest);
  EXPECT_DOUBLE_EQ(AttentionGridFactor(unshaped, 132, 132), 1.0);
}

// FlashAttention-2's grid: the forward a row of query blocks per (sequence,
// head), light first; the backward a row of key blocks, heavy first.
TEST(AttentionGrid, FlashGridRunsRowByRowOverQueryHeads) {
  AttentionGrid fwd = FlashKernelGrid(Attention(2048, 12, 1, false, trace::AttentionKernel::kFlash2));
  EXPECT_TRUE(fwd.row_major);
  EXPECT_EQ(fwd.rows, 12);
  EXPECT_EQ(fwd.levels, 16);
  EXPECT_EQ(fwd.Work(0), 1);
  EXPECT_EQ(fwd.Work(15), 16);
  AttentionGrid bwd = FlashKernelGrid(Attention(2048, 12, 1, true, trace::AttentionKernel::kFlash2));
  EXPECT_EQ(bwd.rows, 12);  // per query head, whatever the GQA group
  EXPECT_EQ(bwd.Work(0), 16);
  EXPECT_EQ(bwd.Work(15), 1);
  // A full grid at the seq factors' shape is the reference: factor 1.
  trace::ComputeOp full = Attention(2048, 128, 1, false, trace::AttentionKernel::kFastest);
  EXPECT_NEAR(AttentionGridFactor(full, 132, 132), 1.0, 1e-12);
}

// The grid factor against PyTorch SDPA's cuDNN and FlashAttention-2 kernels
// on an H200 (kernel times from the profiler's records): each shape's rate
// over the full-grid rate at the same length (8 x 16 heads at 2K, 2 x 16 at
// 8K), measured vs the factor.
TEST(AttentionGrid, FlashFactorMatchesTheMeasuredSdpaKernelsAtTensorParallelGrids) {
  struct Row {
    const char* backend;
    int64_t batch, heads, seq;
    double fwd_tflops, bwd_tflops;
  };
  // profiles/measured/h200-sxm-141gb-2026-12-04b-calibrate/sdpa/sdpa_grid.csv
  const Row rows[] = {
      {"cudnn", 2, 16, 8192, 625.3, 569.8}, {"cudnn", 1, 8, 8192, 505.3, 478.8},
      {"cudnn", 1, 4, 8192, 397.2, 391.6}, {"cudnn", 8, 16, 2048, 537.8, 493.7},
      {"cudnn", 1, 4, 2048, 149.2, 139.7}, {"cudnn", 1, 8, 2048, 288.8, 274.1},
      {"cudnn", 1, 12, 2048, 300.4, 290.5}, {"cudnn", 2, 12, 2048, 397.7, 362.2},
      {"cudnn", 1, 16, 2048, 337.8, 315.9}, {"cudnn", 4, 12, 2048, 465.1, 434.2},
      {"flash", 2, 16, 8192, 322.7, 292.3}, {"flash", 1, 8, 8192, 239.0, 252.6},
      {"flash", 1, 4, 8192, 177.1, 208.6}, {"flash", 8, 16, 2048, 289.9, 249.3},
      {"flash", 1, 4, 2048, 107.2, 73.5}, {"flash", 1, 8, 2048, 135.7, 144.1},
      {"flash", 1, 12, 2048, 127.2, 155.3}, {"flash", 2, 12, 2048, 192.5, 196.0},
      {"flash", 1, 16, 2048, 165.1, 169.8}, {"flash", 4, 12, 2048, 242.4, 223.0},
  };
  for (const char* backend : {"cudnn", "flash"}) {
    double sum = 0;
    int n = 0;
    for (const Row& r : rows) {
      if (std::string(r.backend) != backend) continue;
      const Row* full = nullptr;
      for (const Row& f : rows) {
        if (std::string(f.backend) == backend && f.seq == r.seq && f.heads == 16 && f.batch * r.seq == 16384) full = &f;
      }
      ASSERT_NE(full, nullptr);
      for (bool backward : {false, true}) {
        trace::ComputeOp op = Attention(r.seq, r.batch * r.heads, 1, backward, trace::AttentionKernel::kFastest);
        const double measured = (backward ? r.bwd_tflops / full->bwd_tflops : r.fwd_tflops / full->fwd_tflops);
        const double error = std::fabs(std::log(AttentionGridFactor(op, 132, 132) / measured));
        EXPECT_LT(error, std::string(backend) == "cudnn" ? 0.10 : 0.35)
            << backend << " " << r.batch << "x" << r.heads << "x" << r.seq << (backward ? " bwd" : " fwd");
        sum += error;
        ++n;
      }
    }
    EXPECT_LT(sum / n, std::string(backend) == "cudnn" ? 0.03 : 0.09) << backend;
  }
}

}  // namespace
}  // namespace stacksim::cost
