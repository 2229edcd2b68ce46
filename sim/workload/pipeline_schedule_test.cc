#include "sim/workload/pipeline_schedule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "sim/engine/engine.h"

namespace stacksim::workload {
namespace {

using config::PipelineScheduleKind;

// Replays a schedule as one compute task per step with free transfers:
// forward 1 ms per stage of a 1/p model piece, backward 2 ms, split into B 1 ms
// and W 1 ms, DualPipe's overlapped pairs back to back. Every rank then works
// 3 ms per micro-batch; returns the idle time on the slowest rank in ms.
double IdleMs(PipelineScheduleKind kind, int p, int v, int m, int group = 0) {
  PipelineLayout layout;
  layout.kind = kind;
  layout.p = p;
  layout.v = v;
  layout.m = m;
  layout.group = group;
  auto sched = BuildSchedule(layout);
  const double scale = static_cast<double>(p) / layout.stages();  // 1/v of a stage per chunk
  trace::Trace t;
  t.SetRankCount(p);
  auto compute = t.InternStream("compute");
  auto send = t.InternStream("pp");
  t.InternLabel("work");
  trace::GroupId pair = t.AddGroup({"pair", 2, 1, 2, {}});
  // (micro-batch, model stage, forward?) -> transfer task out of it
  std::map<std::tuple<int, int, bool>, trace::TaskId> out;
  std::vector<size_t> next(p, 0);
  size_t left = 0;
  for (auto& s : sched) left += s.size();
  const int last = layout.stages() - 1;
  while (left > 0) {
    size_t before = left;
    for (int r = 0; r < p; ++r) {
      while (next[r] < sched[r].size()) {
        // One step, or DualPipe's overlapped pair as one task of both lengths
        // whose outputs are ready at its end (the report's "F&B" unit).
        const size_t n = sched[r][next[r]].overlap_with_next ? 2 : 1;
        std::vector<trace::TaskId> deps;
        double ms = 0;
        bool ready = true;
        for (size_t k = 0; k < n && ready; ++k) {
          const auto& st = sched[r][next[r] + k];
          const int vs = layout.Stage(r, st.chunk);
          const bool fwd = st.pass == Pass::kForward;
          const bool bwd = st.pass == Pass::kBackward || st.pass == Pass::kBackwardInput;
          ms += (st.pass == Pass::kBackward ? 2.0 : 1.0) * scale;
          if ((fwd && vs > 0) || (bwd && vs < last)) {
            auto it = out.find({st.micro_batch, fwd ? vs - 1 : vs + 1, fwd});
            if (it == out.end()) ready = false;
            else deps.push_back(it->second);
          }
        }
        if (!ready) break;
        trace::Task task;
        task.kind = trace::TaskKind::kDelay;
        task.rank = r;
        task.stream = compute;
        task.duration = Time::Ms(ms);
        trace::TaskId id = t.Add(task, deps);
        for (size_t k = 0; k < n; ++k) {
          const auto& st = sched[r][next[r] + k];
          const int vs = layout.Stage(r, st.chunk);
          const bool fwd = st.pass == Pass::kForward;
          const bool bwd = st.pass == Pass::kBackward || st.pass == Pass::kBackwardInput;
          if ((fwd && vs < last) || (bwd && vs > 0)) {
            trace::Task x;
            x.kind = trace::TaskKind::kTransfer;
            x.rank = r;
            x.stream = send;
            x.transfer.dst = layout.Rank(fwd ? vs + 1 : vs - 1, st.micro_batch);
            x.transfer.group = pair;
            out[{st.micro_batch, vs, fwd}] = t.Add(x, {id});
          }
        }
        next[r] += n;
        left -= n;
      }
    }
    if (left == before) ADD_FAILURE() << "schedule deadlocks";
    if (left == before) return -1;
  }
  engine::FixedCostModel cost(FlopRate{1e12});
  engine::FixedNetworkModel net(Time::Zero(), Bandwidth{1e18});
  auto res = engine::Engine(cost, net).Replay(t);
  return res.makespan.seconds() * 1e3 - m * 3.0;
}

double BubbleFraction(PipelineScheduleKind kind, int p, int v, int m) {
  double idle = IdleMs(kind, p, v, m);
  return idle / (idle + m * 3.0);
}

TEST(PipelineSchedule, EveryStepRunsOnce) {
  for (auto kind : {PipelineScheduleKind::kGpipe, PipelineScheduleKind::kOneFOneB, PipelineScheduleKind::kInterleaved,
                    PipelineScheduleKind::kZeroBubbleH1, PipelineScheduleKind::kDualPipe}) {
    const int v = kind == PipelineScheduleKind::kInterleaved ? 3 : 1;
    const bool split = kind == PipelineScheduleKind::kZeroBubbleH1;
    auto s = BuildSchedule(kind, 4, v, 8);
    for (const auto& steps : s) {
      std::map<std::tuple<Pass, int, int>, int> seen;
      int weights = 0, split_backwards = 0;
      for (const auto& st : steps) {
        seen[{st.pass, st.micro_batch, st.chunk}]++;
        weights += st.pass == Pass::kWeight;
        split_backwards += st.pass == Pass::kBackwardInput;
        // DualPipe: the first half of the micro-batches take model copy 0.
        if (kind == PipelineScheduleKind::kDualPipe) EXPECT_EQ(st.chunk, st.micro_batch < 4 ? 0 : 1);
      }
      EXPECT_EQ(weights, split_backwards);
      // A forward and a backward per micro-batch and chunk, plus a W pass for each split backward.
      EXPECT_EQ(seen.size(), static_cast<size_t>(2 * 8 * v + weights)) << config::ScheduleName(kind);
      if (split) EXPECT_EQ(weights, 8);
      for (const auto& [k, n] : seen) EXPECT_EQ(n, 1);
    }
  }
}

TEST(PipelineSchedule, OneFOneBBubbleMatchesClosedForm) {
  for (auto [p, m] : {std::pair{4, 8}, std::pair{8, 16}, std::pair{2, 5}}) {
    double expected = (p - 1.0) / (m + p - 1.0);
    EXPECT_NEAR(BubbleFraction(PipelineScheduleKind::kOneFOneB, p, 1, m), expected, 1e-6) << p << " " << m;
  }
}

TEST(PipelineSchedule, GpipeHasTheSameBubbleAsOneFOneB) {
  EXPECT_NEAR(BubbleFraction(PipelineScheduleKind::kGpipe, 4, 1, 8), 3.0 / 11.0, 1e-6);
}

TEST(PipelineSchedule, InterleavingShrinksTheBubbleByTheVirtualStageFactor) {
  const int p = 4, m = 8;
  for (int v : {2, 4}) {
    // Narayanan et al. SC'21 §2.2.2: bubble time (p-1)/v chunks of work.
    double expected = ((p - 1.0) / v) / (m + (p - 1.0) / v);
    EXPECT_NEAR(BubbleFraction(PipelineScheduleKind::kInterleaved, p, v, m), expected, 1e-6) << v;
  }
}

TEST(PipelineSchedule, OneFOneBKeepsAtMostPMicroBatchesInFlight) {
  auto s = BuildSchedule(PipelineScheduleKind::kOneFOneB, 4, 1, 16);
  EXPECT_EQ(PeakInFlightChunks(s[0]), 4);
  EXPECT_EQ(PeakInFlightChunks(s[3]), 1);
  auto g = BuildSchedule(PipelineScheduleKind::kGpipe, 4, 1, 16);
  EXPECT_EQ(PeakInFlightChunks(g[0]), 16);
}

TEST(PipelineSchedule, InterleavedFirstStageHoldsMoreChunks) {
  // Megatron: warm-up of (p - 1) * 2 + (v - 1) * p chunk forwards, plus one.
  auto s = BuildSchedule(PipelineScheduleKind::kInterleaved, 4, 2, 8);
  EXPECT_EQ(PeakInFlightChunks(s[0]), (4 - 1) * 2 + (2 - 1) * 4 + 1);
}

// One round (as many micro-batches as stages): Megatron-LM through
// Megatron-Core 0.9 runs every forward before the first backward; 0.10's
// schedule keeps the usual warm-up, so the last rank holds (v-1) x p + 1
// chunks instead of all m x v (plan.single_round_all_forwards).
TEST(PipelineSchedule, OneRoundRunsEveryForwardFirstOnlyInOldMegatron) {
  const int p = 4, v = 8, m = 4;
  auto now = BuildSchedule(PipelineScheduleKind::kInterleaved, p, v, m);
  auto old = BuildSchedule(PipelineScheduleKind::kInterleaved, p, v, m, false, 0, true);
  EXPECT_EQ(PeakInFlightChunks(now[p - 1]), (v - 1) * p + 1);
  EXPECT_EQ(PeakInFlightChunks(now[0]), m * v);  // (p-1) x 2 + (v-1) x p >= m x v: all of them anyway
  for (int s = 0; s < p; ++s) EXPECT_EQ(PeakInFlightChunks(old[s]), m * v);
  // Only a single round with the default group takes the old rule.
  EXPECT_EQ(BuildSchedule(PipelineScheduleKind::kInterleaved, p, v, 2 * p, false, 0, true),
            BuildSchedule(PipelineScheduleKind::kInterleaved, p, v, 2 * p));
}

// Megatron-Core's micro-batch groups (microbatch_group_size_per_vp_stage):
// its own example table for PP 2, group 3, 5 micro-batches, VP 2
// (schedules.py forward_backward_pipelining_with_interleaving) is the order
// of the forwards; a group of p is the classic order.
TEST(PipelineSchedule, InterleavedGroupsFollowMegatronCoresTable) {
  auto s = BuildSchedule(PipelineScheduleKind::kInterleaved, 2, 2, 5, false, 3);
  const std::vector<std::pair<int, int>> table = {{0, 0}, {1, 0}, {2, 0}, {0, 1}, {1, 1},
                                                  {2, 1}, {3, 0}, {4, 0}, {3, 1}, {4, 1}};
  for (const auto& steps : s) {
    std::vector<std::pair<int, int>> forwards, backwards;
    for (const auto& st : steps) {
      (st.forward() ? forwards : backwards).push_back({st.micro_batch, st.chunk});
    }
    EXPECT_EQ(forwards, table);
    ASSERT_EQ(backwards.size(), table.size());
    for (size_t k = 0; k < table.size(); ++k) {
      EXPECT_EQ(backwards[k], std::make_pair(table[k].first, 1 - table[k].second));  // chunks reversed
    }
  }
  EXPECT_EQ(BuildSchedule(PipelineScheduleKind::kInterleaved, 4, 2, 8, false, 4),
            BuildSchedule(PipelineScheduleKind::kInterleaved, 4, 2, 8));
}

// A larger group holds more chunks in the warm-up, (v-1) x group beside
// the fill; a micro-batch count that is not a multiple of p runs when the
// last group still has p micro-batches (Megatron-Core's rule, which
// ValidatePlan enforces: below p the order deadlocks).
TEST(PipelineSchedule, LargerGroupsHoldMoreAndAnyCountRuns) {
  const int p = 4, v = 2;
  auto g4 = BuildSchedule(PipelineScheduleKind::kInterleaved, p, v, 8, false, 4);
  EXPECT_EQ(PeakInFlightChunks(g4[0]), (p - 1) * 2 + (v - 1) * 4 + 1);
  auto g8 = BuildSchedule(PipelineScheduleKind::kInterleaved, p, v, 8, false, 8);
  EXPECT_EQ(PeakInFlightChunks(g8[0]), (p - 1) * 2 + (v - 1) * 8 + 1);
  EXPECT_GE(IdleMs(PipelineScheduleKind::kInterleaved, p, v, 10, 6), 0);  // groups of 6 and 4
  EXPECT_GE(IdleMs(PipelineScheduleKind::kInterleaved, p, v, 8, 8), 0);
}

TEST(PipelineSchedule, ZeroBubbleH1CutsTheBubbleToAThird) {
  // Qi et al. ICLR 2024 §2.1: with F = B = W the 1F1B bubble (p-1)(F+B+W)
  // becomes (p-1)(F+B-W).
  for (auto [p, m] : {std::pair{4, 8}, std::pair{8, 16}, std::pair{8, 32}}) {
    EXPECT_NEAR(IdleMs(PipelineScheduleKind::kOneFOneB, p, 1, m), 3.0 * (p - 1), 1e-6) << p << " " << m;
    EXPECT_NEAR(IdleMs(PipelineScheduleKind::kZeroBubbleH1, p, 1, m), 1.0 * (p - 1), 1e-6) << p << " " << m;
  }
}

TEST(PipelineSchedule, ZeroBubbleH1HoldsNoMoreThanOneFOneBsFirstStage) {
  auto s = BuildSchedule(PipelineScheduleKind::kZeroBubbleH1, 4, 1, 16);
  for (int r = 0; r < 4; ++r) EXPECT_EQ(PeakInFlightChunks(s[r]), 4) << r;
}

TEST(PipelineSchedule, DualPipeBubbleMatchesDeepSeekClosedForm) {
  // DeepSeek-V3 report Table 2: (p/2 - 1)(F&B + B - 3W), B the whole backward;
  // with F = 1, B = 2, W = 1 and no overlap gain (F&B = 3): p - 2.
  for (auto [p, m] : {std::pair{4, 8}, std::pair{8, 16}, std::pair{8, 32}, std::pair{16, 32}}) {
    EXPECT_NEAR(IdleMs(PipelineScheduleKind::kDualPipe, p, 1, m), p - 2.0, 1e-6) << p << " " << m;
  }
}

TEST(PipelineSchedule, DualPipeLayoutRunsTheTwoCopiesInOppositeDirections) {
  PipelineLayout l;
  l.kind = PipelineScheduleKind::kDualPipe;
  l.p = 8;
  l.m = 16;
  EXPECT_EQ(l.chunks(), 2);
  EXPECT_EQ(l.stages(), 8);
  EXPECT_EQ(l.StagesOfRank(0), (std::vector<int>{0, 7}));
  EXPECT_EQ(l.StagesOfRank(5), (std::vector<int>{5, 2}));
  EXPECT_EQ(l.Rank(2, 3), 2);   // copy 0: stage s on rank s
  EXPECT_EQ(l.Rank(2, 12), 5);  // copy 1: stage s on rank p-1-s
  EXPECT_EQ(l.Chunk(2, 12), 1);
}

TEST(PipelineSchedule, DualPipeInFlightActivations) {
  // DeepSeek-V3 report Table 2: DualPipe holds PP + 1 micro-batch chunks at its
  // peak (each a 1/p model piece).
  auto s = BuildSchedule(PipelineScheduleKind::kDualPipe, 8, 1, 32);
  int peak = 0;
  for (const auto& steps : s) peak = std::max(peak, PeakInFlightChunks(steps));
  EXPECT_EQ(peak, 8 + 1);
}

TEST(PipelineSchedule, DualPipeRejectsOddOrTooFewMicroBatches) {
  EXPECT_THROW(BuildSchedule(PipelineScheduleKind::kDualPipe, 8, 1, 14), std::invalid_argument);
  EXPECT_THROW(BuildSchedule(PipelineScheduleKind::kDualPipe, 5, 1, 20), std::invalid_argument);
}

}  // namespace
}  // namespace stacksim::workload
