#include "sim/workload/pipeline_schedule.h"

#include <gtest/gtest.h>

#include <map>
#include <tuple>

#include "sim/engine/engine.h"

namespace stacksim::workload {
namespace {

using config::PipelineScheduleKind;

// Replays a schedule as one compute task per step (forward 1 ms per chunk of
// 1/v of the stage, backward 2 ms per chunk) with free transfers, and returns
// the pipeline's idle fraction on stage 0.
double BubbleFraction(PipelineScheduleKind kind, int p, int v, int m) {
  auto sched = BuildSchedule(kind, p, v, m);
  trace::Trace t;
  t.SetRankCount(p);
  auto compute = t.InternStream("compute");
  auto send = t.InternStream("pp");
  t.InternLabel("work");
  trace::GroupId pair = t.AddGroup({"pair", 2, 1, 2, {}});
  // (micro-batch, virtual stage, forward?) -> transfer task out of it
  std::map<std::tuple<int, int, bool>, trace::TaskId> out;
  std::vector<size_t> next(p, 0);
  size_t left = 0;
  for (auto& s : sched) left += s.size();
  const int last = p * v - 1;
  while (left > 0) {
    for (int r = 0; r < p; ++r) {
      while (next[r] < sched[r].size()) {
        const auto& st = sched[r][next[r]];
        int vs = st.chunk * p + r;
        trace::TaskId dep = -1;
        if (st.forward && vs > 0) {
          auto it = out.find({st.micro_batch, vs - 1, true});
          if (it == out.end()) break;
          dep = it->second;
        }
        if (!st.forward && vs < last) {
          auto it = out.find({st.micro_batch, vs + 1, false});
          if (it == out.end()) break;
          dep = it->second;
        }
        trace::Task task;
        task.kind = trace::TaskKind::kDelay;
        task.rank = r;
        task.stream = compute;
        task.duration = Time::Ms((st.forward ? 1.0 : 2.0) / v);
        trace::TaskId id = t.Add(task, {dep});
        if ((st.forward && vs < last) || (!st.forward && vs > 0)) {
          trace::Task x;
          x.kind = trace::TaskKind::kTransfer;
          x.rank = r;
          x.stream = send;
          x.transfer.dst = (st.forward ? vs + 1 : vs - 1) % p;
          x.transfer.group = pair;
          out[{st.micro_batch, vs, st.forward}] = t.Add(x, {id});
        }
        ++next[r];
        --left;
      }
    }
  }
  engine::FixedCostModel cost(FlopRate{1e12});
  engine::FixedNetworkModel net(Time::Zero(), Bandwidth{1e18});
  auto res = engine::Engine(cost, net).Replay(t);
  double busy = m * 3.0e-3;
  return (res.makespan.seconds() - busy) / res.makespan.seconds();
}

TEST(PipelineSchedule, EveryStepRunsOnce) {
  for (auto kind : {PipelineScheduleKind::kGpipe, PipelineScheduleKind::kOneFOneB, PipelineScheduleKind::kInterleaved}) {
    auto s = BuildSchedule(kind, 4, kind == PipelineScheduleKind::kInterleaved ? 3 : 1, 8);
    int v = kind == PipelineScheduleKind::kInterleaved ? 3 : 1;
    for (const auto& steps : s) {
      std::map<std::tuple<bool, int, int>, int> seen;
      for (const auto& st : steps) seen[{st.forward, st.micro_batch, st.chunk}]++;
      EXPECT_EQ(seen.size(), static_cast<size_t>(2 * 8 * v));
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

}  // namespace
}  // namespace stacksim::workload
