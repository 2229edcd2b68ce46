// How a fused attention kernel's work spreads over the SMs: its launch grid.
//
// A fused attention kernel splits its work into thread blocks (CTAs) along
// the sequence, one row of blocks per sequence and head; the GPU's block
// scheduler hands each block to the SM that frees up first. At full
// occupancy the kernel runs at the profile's attention efficiency. With
// fewer blocks than SMs, or blocks of unequal work (under the causal mask a
// block near the diagonal's end has many more tiles than one near its
// start), the busiest SM sets the time: the kernel reaches only
// (total work / SMs) / (busiest SM's work) of that rate.
//
// Modelled for the project's own kernel (kernels/attention.cu), whose grid
// is read from its code: one CTA per SM (both kernels use
// __launch_bounds__(256, 1) and 222-255 registers a thread at head_dim 128);
//   forward:  a CTA per 128 query rows of one (sequence, query head), the
//             heaviest (causal) query blocks dispatched first;
//   backward: a CTA per 128 keys of one (sequence, K/V head), looping over
//             the query heads of its GQA group and the 64-row query blocks at
//             or below the diagonal; heaviest key blocks first.
// So its backward has batch x kv_heads x seq/128 blocks: one K/V head per GPU
// (Llama 3 8B at TP 8) leaves 64 blocks of uneven work for 132 SMs at 8K.
//
// FlashAttention-2 and the cuDNN/FlashAttention-3 class (kFlash2, kFastest)
// launch a block per 128 queries of one (sequence, query head) for the
// forward, row by row with a head's light (causal) blocks first, and a block
// per 128 keys of one (sequence, query head) for the backward, a head's
// heavy blocks first (Dao-AILab/flash-attention 0251105a,
// flash_fwd_launch_template.h and flash_bwd_launch_template.h: grids
// (num_m_block, b, h) and (num_n_block, b, h)); one block per SM at a time.
// Checked against PyTorch SDPA's kernels on an H200 (profiles/measured/
// h200-sxm-141gb-2026-12-04b-calibrate/sdpa/sdpa_grid.csv, kernel times from
// the profiler's records, 13 shapes from 1 x 4 heads x 2K to 2 x 16 x 8K):
// the grid factor relative to a full grid of the same length gives cuDNN's
// forward and backward rates within 3% (mean |log error|; largest 1.17 at
// 4K, where the full-grid reference was 8K) and FlashAttention-2's within 8%.
// FlashAttention-1 (kFlash1: a block per (sequence, head)) gets no factor.
#ifndef STACKSIM_SIM_COST_ATTENTION_GRID_H_
#define STACKSIM_SIM_COST_ATTENTION_GRID_H_

#include <cstdint>

#include "sim/trace/trace.h"

namespace stacksim::cost {

// One kernel launch as the scheduler sees it: `rows` identical rows of
// `levels` blocks, dispatched level by level (all rows' level 0 first); a
// block of level l computes Work(l) tiles.
struct AttentionGrid {
  int64_t rows = 0;
  int64_t levels = 0;
  // Work of a level-l block: `first` - `step` x l tiles (>= 1); a negative
  // step makes later levels heavier.
  int64_t first = 0;
  int64_t step = 0;
  // Dispatch order: false, level by level (every row's level 0 first); true,
  // row by row (all of row 0's levels first), as a (num_blocks, b, h) grid.
  bool row_major = false;
  // Of the tiles computed, the share that the op's flops count: a causal
  // kernel computes the diagonal's tiles whole, half of them masked.
  double useful = 1.0;

  int64_t Work(int64_t level) const;
};

// The launch grid of the project's own attention kernel for this op
// (op.attention_kernel == kOwn): see the header comment.
// REQUIRES: op.op_class == kAttention.
AttentionGrid OwnKernelGrid(const trace::ComputeOp& op);

// The launch grid of FlashAttention-2 and the cuDNN / FlashAttention-3 class
// (op.attention_kernel kFlash2 or kFastest): see the header comment.
// REQUIRES: op.op_class == kAttention.
AttentionGrid FlashKernelGrid(const trace::ComputeOp& op);

// (useful tiles / sms) / (busiest SM's tiles) for `grid` list-scheduled on
// `sms` SMs, one block at a time each, in dispatch order; in (0, 1]. Equal
// blocks run in whole waves; unequal ones are scheduled exactly up to 32
// blocks per SM, beyond which the busiest SM is taken as the mean plus one
// of the last (lightest) blocks.
double GridOccupancy(const AttentionGrid& grid, int64_t sms);

// The share of the profile's attention rate the op's kernel reaches on `sms`
// of the GPU's `gpu_sms` SMs: its GridOccupancy there x sms / gpu_sms,
// relative to the GridOccupancy of the case the profile's rate was measured
// on, so that the measured rate is reproduced there. kOwn: calibrate's
// kernels step, its largest attention case (2 sequences of 8192, 64 query
// and 8 K/V heads) on all `gpu_sms`. kFlash2 and kFastest: the profile's
// sequence-length factors' shape at the op's key length (16 heads x
// max(1, 16384 / length) sequences, the op's mask; fit_profile_h200.py), on all
// `gpu_sms`, the SM share left to the caller (the seq factors already carry
// the length). 1 for kFlash1, whose grid is not modelled.
double AttentionGridFactor(const trace::ComputeOp& op, int64_t sms, int64_t gpu_sms);

}  // namespace stacksim::cost

#endif  // STACKSIM_SIM_COST_ATTENTION_GRID_H_
