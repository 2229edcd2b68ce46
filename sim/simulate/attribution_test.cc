#include "sim/simulate/attribution.h"

#include <gtest/gtest.h>

#include <vector>

namespace stacksim::simulate {
namespace {

using trace::TaskId;

// A hand-timed trace: tasks with a role on "compute" or "dp" streams, their
// start and end given in nanoseconds (no engine: the times are the test's).
class TimedTrace {
 public:
  explicit TimedTrace(int ranks) {
    t_.SetRankCount(ranks);
    t_.InternName("task");
    t_.InternLabel("test");
    compute_ = t_.InternStream("compute");
    dp_ = t_.InternStream("dp");
    t_.SetComputeStream(compute_);
    trace::CommGroup g;
    g.name = "dp";
    g.size = 1024;
    g.simulated = {0};
    group_ = t_.AddGroup(g);
  }

  TaskId Kernel(int rank, int64_t start, int64_t end, std::vector<TaskId> deps = {},
                trace::TaskRole role = trace::TaskRole::kGemm) {
    trace::Task task;
    task.kind = trace::TaskKind::kDelay;
    task.role = role;
    task.rank = rank;
    task.stream = compute_;
    task.duration = Time::Ns(end - start);
    return Timed(t_.Add(task, deps), start, end);
  }

  TaskId DpReduce(int rank, int64_t start, int64_t end, std::vector<TaskId> deps = {}) {
    trace::Task task;
    task.kind = trace::TaskKind::kCollective;
    task.role = trace::TaskRole::kDpComm;
    task.rank = rank;
    task.stream = dp_;
    task.comm.group = group_;
    return Timed(t_.Add(task, deps), start, end);
  }

  Breakdown Of(int rank) {
    r_.makespan = Time::Zero();
    for (const auto& tm : r_.timings) r_.makespan = std::max(r_.makespan, tm.end);
    std::vector<TaskId> tasks;
    for (TaskId i = 0; i < static_cast<TaskId>(t_.size()); ++i) {
      if (t_.rank(i) == rank) tasks.push_back(i);
    }
    return Attribute(t_, r_, tasks, compute_, r_.makespan, FindStepEnd(t_, r_));
  }

 private:
  TaskId Timed(TaskId id, int64_t start, int64_t end) {
    r_.timings.push_back({Time::Ns(start), Time::Ns(start), Time::Ns(end)});
    return id;
  }
  trace::Trace t_;
  engine::ReplayResult r_;
  trace::StreamId compute_ = 0, dp_ = 0;
  trace::GroupId group_ = 0;
};

// Gradient buckets queue on the data-parallel stream; the optimizer waits
// for the last, which waited for the one before it. The whole wait is
// data-parallel communication (it was 20 ns of "other" when only the last
// bucket counted).
TEST(Attribute, AWaitBehindQueuedBucketsIsDataParallelTime) {
  TimedTrace t(1);
  TaskId backward = t.Kernel(0, 0, 10);
  t.DpReduce(0, 10, 30, {backward});
  TaskId last = t.DpReduce(0, 30, 40, {backward});
  t.Kernel(0, 40, 45, {last}, trace::TaskRole::kOptimizer);
  Breakdown b = t.Of(0);
  EXPECT_EQ(b.dp_exposed, Time::Ns(30));
  EXPECT_EQ(b.other, Time::Zero());
  EXPECT_EQ(b.total(), Time::Ns(45));
}

// Stage 0 is done at 12 ns; stage 1 computes until 20 ns, then reduces its
// larger gradients until 50 ns. Stage 0 waits: 8 ns of bubble (a stage still
// computes), then 30 ns of another stage's data-parallel reduction, which
// was pipeline bubble before.
TEST(Attribute, WaitingForAnotherStagesReductionIsNotPipelineBubble) {
  TimedTrace t(2);
  TaskId a = t.Kernel(0, 0, 10);
  t.DpReduce(0, 10, 12, {a});
  TaskId b = t.Kernel(1, 0, 20);
  t.DpReduce(1, 20, 50, {b});
  Breakdown s0 = t.Of(0);
  EXPECT_EQ(s0.gemm, Time::Ns(10));
  EXPECT_EQ(s0.bubble, Time::Ns(8));
  EXPECT_EQ(s0.dp_exposed, Time::Ns(2 + 30));
  EXPECT_EQ(s0.total(), Time::Ns(50));
}

// A stage that finishes its kernels early while another still computes is
// in the pipeline bubble, as before.
TEST(Attribute, WaitingForAStageThatStillComputesIsBubble) {
  TimedTrace t(2);
  t.Kernel(0, 0, 10);
  t.Kernel(1, 0, 40);
  Breakdown s0 = t.Of(0);
  EXPECT_EQ(s0.bubble, Time::Ns(30));
  EXPECT_EQ(s0.dp_exposed, Time::Zero());
}

}  // namespace
}  // namespace stacksim::simulate
