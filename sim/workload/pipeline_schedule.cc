#include "sim/workload/pipeline_schedule.h"

#include <algorithm>
#include <deque>
#include <stdexcept>

namespace stacksim::workload {
namespace {

using config::PipelineScheduleKind;

PipelineStep Forward(int mb, int chunk = 0) { return {Pass::kForward, mb, chunk}; }
PipelineStep Backward(int mb, int chunk = 0) { return {Pass::kBackward, mb, chunk}; }

std::vector<PipelineStep> Gpipe(int m) {
  std::vector<PipelineStep> out;
  for (int i = 0; i < m; ++i) out.push_back(Forward(i));
  for (int i = 0; i < m; ++i) out.push_back(Backward(i));
  return out;
}

// Non-interleaved 1F1B (PipeDream-Flush): p-s-1 warm-up forwards, then one
// forward and one backward alternately, then the remaining backwards.
std::vector<PipelineStep> OneFOneB(int p, int s, int m, int extra_warmup = 0) {
  std::vector<PipelineStep> out;
  int warmup = std::min(p - s - 1 + extra_warmup, m);
  int f = 0, b = 0;
  for (; f < warmup; ++f) out.push_back(Forward(f));
  while (f < m) {
    out.push_back(Forward(f++));
    out.push_back(Backward(b++));
  }
  while (b < m) out.push_back(Backward(b++));
  return out;
}

// Interleaved 1F1B as Megatron-LM orders it: the micro-batches go in groups
// of g (g = p unless microbatch_group says otherwise; the last group what
// remains), each group running chunk 0 for all its micro-batches, then
// chunk 1, ... (Megatron-Core get_schedule_table); with g = p, virtual
// micro-batch k runs chunk (k / p) % v of micro-batch (k / (p*v)) * p + k % p.
// Backwards visit the same table with the chunks reversed.
std::vector<PipelineStep> Interleaved(int p, int v, int s, int m, int extra_warmup, int g,
                                      bool single_round_all_forwards) {
  const int total = m * v;
  if (g <= 0) g = p;
  g = std::min(g, m);
  std::vector<std::pair<int, int>> table;  // (micro-batch, chunk) by virtual micro-batch
  for (int first = 0; first < m; first += g) {
    const int last = std::min(m, first + g);
    for (int c = 0; c < v; ++c) {
      for (int mb = first; mb < last; ++mb) table.push_back({mb, c});
    }
  }
  auto fwd = [&](int k) { return Forward(table[k].first, table[k].second); };
  auto bwd = [&](int k) { return Backward(table[k].first, v - 1 - table[k].second); };
  // A single round (m == p) runs every forward first up to Megatron-Core
  // 0.9; Megatron-Core 0.10's grouped schedule has no such case.
  int warmup = single_round_all_forwards && m == p && g == p
                   ? total
                   : std::min(total, (p - s - 1) * 2 + (v - 1) * g + extra_warmup);
  std::vector<PipelineStep> out;
  int f = 0, b = 0;
  for (; f < warmup; ++f) out.push_back(fwd(f));
  while (f < total) {
    out.push_back(fwd(f++));
    out.push_back(bwd(b++));
  }
  while (b < total) out.push_back(bwd(b++));
  return out;
}

// ZB-H1 (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024, §2.1):
// 1F1B's order with each backward split into B and W, stage s keeping s W
// passes deferred. B no longer waits for W, so the backward wave crosses the
// pipeline in B time instead of B+W; the deferred W passes fill the drain.
// Every stage holds p micro-batches at its peak, as stage 0 does in 1F1B.
// With F = B = W the bubble is (p-1)(F+B-W), a third of 1F1B's.
std::vector<PipelineStep> ZeroBubbleH1(int p, int s, int m) {
  std::vector<PipelineStep> out;
  const int warmup = std::min(p - s - 1, m);
  const size_t deferred = static_cast<size_t>(s);
  std::deque<int> pending;
  int f = 0, b = 0;
  auto backward = [&] {
    out.push_back({Pass::kBackwardInput, b, 0});
    pending.push_back(b++);
    if (pending.size() > deferred) {
      out.push_back({Pass::kWeight, pending.front(), 0});
      pending.pop_front();
    }
  };
  for (; f < warmup; ++f) out.push_back(Forward(f));
  while (f < m) {
    out.push_back(Forward(f++));
    backward();
  }
  while (b < m) backward();
  for (int mb : pending) out.push_back({Pass::kWeight, mb, 0});
  return out;
}

// DualPipe (DeepSeek-V3 technical report, arXiv:2412.19437 §3.2.1, and the
// published DualPipe schedule): rank r's phase 0 is the model copy fed from
// its own end of the pipeline (copy 0 for the first half of the ranks, copy
// 1 for the second), phase 1 the other. With H = p/2 ranks per half, h the
// rank's distance from its end and C = m/2 micro-batches per copy, the eight
// steps are: 2(H-h-1) F0; h+1 (F0 F1); H-h-1 (B1 W1 F1) with B/W split;
// C-p+h+1 overlapped pairs (F0&B1)(F1&B0); H-h-1 (B1, F1&B0); h+1 (B1 B0)
// splitting W from the middle on; H-h-1 (W B0) split; h+1 W. Chunk here is
// the model copy (= direction), micro-batches C..m-1 belong to copy 1.
std::vector<PipelineStep> DualPipe(int p, int r, int m) {
  const int H = p / 2, C = m / 2;
  const int h = r < H ? r : p - 1 - r;
  const int copy_of_phase[2] = {r < H ? 0 : 1, r < H ? 1 : 0};
  int next_f[2] = {0, 0}, next_b[2] = {0, 0};
  std::deque<PipelineStep> weights;
  std::vector<PipelineStep> out;
  auto mb = [&](int copy, int k) { return k + (copy == 1 ? C : 0); };
  auto F = [&](int phase) {
    int c = copy_of_phase[phase];
    return Forward(mb(c, next_f[phase]++), c);
  };
  auto B = [&](int phase, bool split) {
    int c = copy_of_phase[phase];
    PipelineStep st{split ? Pass::kBackwardInput : Pass::kBackward, mb(c, next_b[phase]++), c};
    if (split) weights.push_back({Pass::kWeight, st.micro_batch, c});
    return st;
  };
  auto W = [&] {
    PipelineStep st = weights.front();
    weights.pop_front();
    return st;
  };
  auto pair = [&](PipelineStep first, PipelineStep second) {
    first.overlap_with_next = true;
    out.push_back(first);
    out.push_back(second);
  };
  for (int i = 0; i < 2 * (H - h - 1); ++i) out.push_back(F(0));
  for (int i = 0; i < h + 1; ++i) {
    out.push_back(F(0));
    out.push_back(F(1));
  }
  for (int i = 0; i < H - h - 1; ++i) {
    out.push_back(B(1, true));
    out.push_back(W());
    out.push_back(F(1));
  }
  for (int i = 0; i < C - p + h + 1; ++i) {
    PipelineStep f0 = F(0);
    pair(f0, B(1, false));
    PipelineStep f1 = F(1);
    pair(f1, B(0, false));
  }
  for (int i = 0; i < H - h - 1; ++i) {
    out.push_back(B(1, false));
    PipelineStep f1 = F(1);
    pair(f1, B(0, false));
  }
  const int step6 = h + 1;
  bool split = false;
  for (int i = 0; i < step6; ++i) {
    if (i == step6 / 2 && h % 2 == 1) split = true;
    out.push_back(B(1, split));
    if (i == step6 / 2 && h % 2 == 0) split = true;
    out.push_back(B(0, split));
  }
  for (int i = 0; i < H - h - 1; ++i) {
    out.push_back(W());
    out.push_back(B(0, true));
  }
  while (!weights.empty()) out.push_back(W());
  return out;
}

}  // namespace

PipelineLayout PipelineLayout::Of(const config::PlanConfig& plan) {
  PipelineLayout l;
  l.kind = plan.schedule;
  l.p = plan.pp;
  l.v = plan.schedule == PipelineScheduleKind::kInterleaved ? plan.vp : 1;
  l.m = static_cast<int>(plan.micro_batches());
  l.a2a_overlap = plan.moe_a2a_overlap;
  l.group = plan.microbatch_group;
  l.single_round_all_forwards = plan.single_round_all_forwards;
  return l;
}

int PipelineLayout::chunks() const { return dual() ? 2 : v; }

int PipelineLayout::stages() const { return p * v; }

int PipelineLayout::Stage(int rank, int chunk) const {
  if (dual()) return chunk == 0 ? rank : p - 1 - rank;
  return chunk * p + rank;
}

int PipelineLayout::Rank(int stage, int micro_batch) const {
  if (dual()) return Direction(micro_batch) == 0 ? stage : p - 1 - stage;
  return stage % p;
}

int PipelineLayout::Chunk(int stage, int micro_batch) const {
  if (dual()) return Direction(micro_batch);
  return stage / p;
}

std::vector<int> PipelineLayout::StagesOfRank(int rank) const {
  std::vector<int> out;
  for (int c = 0; c < chunks(); ++c) out.push_back(Stage(rank, c));
  return out;
}

std::vector<std::vector<PipelineStep>> BuildSchedule(PipelineScheduleKind kind, int p, int v, int m,
                                                     bool a2a_overlap, int group, bool single_round_all_forwards) {
  if (a2a_overlap && kind != PipelineScheduleKind::kOneFOneB && kind != PipelineScheduleKind::kInterleaved) {
    throw std::invalid_argument("the all-to-all overlap pairs 1F1B's (or interleaved 1F1B's) forwards and backwards");
  }
  // All-to-all overlap: one more warm-up forward, so that every steady-state
  // forward is paired with the backward of an earlier micro-batch.
  const int extra = a2a_overlap ? 1 : 0;
  std::vector<std::vector<PipelineStep>> out(p);
  for (int s = 0; s < p; ++s) {
    switch (kind) {
      case PipelineScheduleKind::kGpipe:
        out[s] = Gpipe(m);
        break;
      case PipelineScheduleKind::kOneFOneB:
        out[s] = OneFOneB(p, s, m, extra);
        break;
      case PipelineScheduleKind::kInterleaved:
        out[s] = v == 1 ? OneFOneB(p, s, m, extra) : Interleaved(p, v, s, m, extra, group, single_round_all_forwards);
        break;
      case PipelineScheduleKind::kZeroBubbleH1:
        out[s] = ZeroBubbleH1(p, s, m);
        break;
      case PipelineScheduleKind::kDualPipe:
        if (p % 2 != 0 || m % 2 != 0 || m < 2 * p) {
          throw std::invalid_argument("DualPipe needs an even number of pipeline ranks and an even number of "
                                      "micro-batches of at least twice the ranks");
        }
        out[s] = DualPipe(p, s, m);
        break;
    }
    if (a2a_overlap) {
      // Each steady-state forward runs with the backward after it (which
      // belongs to an earlier micro-batch): Megatron-Core's 1F1B all-to-all
      // overlap.
      std::vector<PipelineStep>& steps = out[s];
      for (size_t i = 0; i + 1 < steps.size(); ++i) {
        if (steps[i].forward() && steps[i + 1].pass == Pass::kBackward) {
          steps[i].overlap_with_next = true;
          ++i;
        }
      }
    }
  }
  return out;
}

std::vector<std::vector<PipelineStep>> BuildSchedule(const PipelineLayout& layout) {
  return BuildSchedule(layout.kind, layout.p, layout.v, layout.m, layout.a2a_overlap, layout.group,
                       layout.single_round_all_forwards);
}

int PeakInFlightChunks(const std::vector<PipelineStep>& steps) {
  int live = 0, peak = 0;
  for (const auto& st : steps) {
    if (st.pass == Pass::kForward) ++live;
    if (st.pass == Pass::kBackward || st.pass == Pass::kWeight) --live;
    peak = std::max(peak, live);
  }
  return peak;
}

}  // namespace stacksim::workload
