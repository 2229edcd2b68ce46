#include "sim/cost/attention_grid.h"

#include <algorithm>
#include <functional>
#include <queue>
#include <vector>

namespace stacksim::cost {
namespace {

// kernels/attention.cu's block shapes.
constexpr int64_t kFwdQueryRows = 128;  // kFwdBM
constexpr int64_t kBwdKeys = 128;       // kBwdBN
constexpr int64_t kBwdQueryRows = 64;   // kBwdBM
constexpr int64_t kExactBlocksPerSm = 32;

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

int64_t AttentionGrid::Work(int64_t level) const { return std::max<int64_t>(1, first - step * level); }

AttentionGrid OwnKernelGrid(const trace::ComputeOp& op) {
  // m = query length, n = key length; the causal diagonal only when they match
  // (one kernel over the whole sequence).
  const bool causal = op.causal && op.m == op.n;
  const int64_t group = std::max<int64_t>(1, op.heads_per_kv_head);
  AttentionGrid g;
  if (!op.backward) {
    // Query block q (dispatched heaviest first) meets q + 1 key blocks of 128.
    g.rows = op.batch;
    g.levels = CeilDiv(op.m, kFwdQueryRows);
    const int64_t key_blocks = CeilDiv(op.n, kFwdQueryRows);
    g.first = causal ? g.levels : key_blocks;
    g.step = causal ? 1 : 0;
    // Causal: nb^2 / 2 tiles' worth of the nb (nb + 1) / 2 computed.
    if (causal) g.useful = static_cast<double>(g.levels) / static_cast<double>(g.levels + 1);
    return g;
  }
  // Key block j meets the query blocks of 64 rows from its own on, for each
  // query head of its group.
  g.rows = std::max<int64_t>(1, op.batch / group);
  g.levels = CeilDiv(op.n, kBwdKeys);
  const int64_t query_blocks = CeilDiv(op.m, kBwdQueryRows);
  g.first = group * query_blocks;
  g.step = causal ? group * (kBwdKeys / kBwdQueryRows) : 0;
  // Causal: qb^2 / 4 tiles' worth of the qb^2 / 4 + qb / 2 computed (qb query blocks).
  if (causal) g.useful = static_cast<double>(query_blocks) / static_cast<double>(query_blocks + 2);
  return g;
}

AttentionGrid FlashKernelGrid(const trace::ComputeOp& op) {
  const bool causal = op.causal && op.m == op.n;
  AttentionGrid g;
  g.rows = std::max<int64_t>(1, op.batch);
  g.row_major = true;
  if (!op.backward) {
    // Query block i of 128 meets i + 1 key blocks (causal), light first.
    g.levels = CeilDiv(op.m, kFwdQueryRows);
    g.first = causal ? 1 : CeilDiv(op.n, kFwdQueryRows);
    g.step = causal ? -1 : 0;
    return g;
  }
  // Key block j of 128 meets the query blocks from its own on, heavy first.
  g.levels = CeilDiv(op.n, kBwdKeys);
  g.first = causal ? g.levels : CeilDiv(op.m, kBwdKeys);
  g.step = causal ? 1 : 0;
  return g;
}

double GridOccupancy(const AttentionGrid& grid, int64_t sms) {
  if (grid.rows < 1 || grid.levels < 1 || sms < 1) return 1.0;
  double total = 0;
  for (int64_t l = 0; l < grid.levels; ++l) total += static_cast<double>(grid.Work(l));
  total *= static_cast<double>(grid.rows);
  const double mean = total / static_cast<double>(sms);
  const int64_t blocks = grid.rows * grid.levels;
  double busiest = 0;
  if (grid.step == 0) {
    busiest = static_cast<double>(CeilDiv(blocks, sms) * grid.Work(0));  // equal blocks: whole waves
  } else if (blocks > kExactBlocksPerSm * sms) {
    // The last blocks dispatched: the lightest level, or a row's last level.
    busiest = mean + static_cast<double>(grid.Work(grid.levels - 1));
  } else {
    // Each SM's finish time; a block goes to the SM that frees up first.
    std::priority_queue<int64_t, std::vector<int64_t>, std::greater<>> free_at;
    for (int64_t i = 0; i < sms; ++i) free_at.push(0);
    int64_t end = 0;
    auto dispatch = [&](int64_t w) {
      int64_t t = free_at.top() + w;
      free_at.pop();
      free_at.push(t);
      end = std::max(end, t);
    };
    const int64_t outer = grid.row_major ? grid.rows : grid.levels;
    const int64_t inner = grid.row_major ? grid.levels : grid.rows;
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) dispatch(grid.Work(grid.row_major ? i : o));
    }
    busiest = static_cast<double>(end);
  }
  return std::min(1.0, grid.useful * mean / busiest);
}

double AttentionGridFactor(const trace::ComputeOp& op, int64_t sms, int64_t gpu_sms) {
  if (op.m <= 0 || op.n <= 0) return 1.0;  // no shape (an imported op without one)
  switch (op.attention_kernel) {
    case trace::AttentionKernel::kOwn: {
      // kernels/attention.cu's largest benchmark case, which calibrate's
      // kernels step takes the profile's own_* efficiencies from.
      trace::ComputeOp measured = op;
      measured.m = measured.n = 8192;
      measured.batch = 2 * 64;
      measured.heads_per_kv_head = 8;
      measured.causal = true;
      return GridOccupancy(OwnKernelGrid(op), sms) * static_cast<double>(sms) / static_cast<double>(gpu_sms) /
             GridOccupancy(OwnKernelGrid(measured), gpu_sms);
    }
    case trace::AttentionKernel::kFlash2:
    case trace::AttentionKernel::kFastest: {
      // The seq factors' shape at this length: 16 heads x 16384 tokens.
      trace::ComputeOp measured = op;
      measured.m = measured.n = std::max<int64_t>(1, op.n);
      measured.batch = 16 * std::max<int64_t>(1, 16384 / measured.n);
      return GridOccupancy(FlashKernelGrid(op), sms) / GridOccupancy(FlashKernelGrid(measured), gpu_sms);
    }
    case trace::AttentionKernel::kFlash1:
      break;
  }
  return 1.0;
}

}  // namespace stacksim::cost
