// The critical path: the chain a hand-built replay must give, and, on
// shipped scenarios, a path whose length equals the step time.
#include "sim/simulate/critical_path.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/config/scenario.h"
#include "sim/engine/cost_model.h"
#include "sim/engine/engine.h"
#include "sim/engine/network_model.h"
#include "sim/simulate/simulate.h"

namespace stacksim::simulate {
namespace {

using trace::Task;
using trace::TaskId;
using trace::TaskKind;

TaskId Delay(trace::Trace& tr, trace::RankId rank, trace::StreamId stream, int64_t ns, std::vector<TaskId> deps = {}) {
  Task t;
  t.kind = TaskKind::kDelay;
  t.rank = rank;
  t.stream = stream;
  t.duration = Time::Ns(ns);
  return tr.Add(t, deps);
}

TaskId AllReduce(trace::Trace& tr, trace::RankId rank, trace::StreamId stream, trace::GroupId g, double bytes,
                 std::vector<TaskId> deps) {
  Task t;
  t.kind = TaskKind::kCollective;
  t.rank = rank;
  t.stream = stream;
  t.comm.kind = trace::CollectiveKind::kAllReduce;
  t.comm.bytes = Bytes{bytes};
  t.comm.group = g;
  t.comm.instance = 0;
  return tr.Add(t, deps);
}

// Rank 0 computes 100 ns, rank 1 300 ns, then both all-reduce (alpha 10 ns,
// 1000 bytes at 1 GB/s), then rank 0 computes 50 ns more on a second stream
// while its first stream runs 20 ns. The step ends at 300 + 1010 + 50.
TEST(CriticalPath, FollowsTheSlowestMemberThroughACollective) {
  trace::Trace tr;
  tr.SetRankCount(2);
  tr.InternName("task");
  tr.InternLabel("test");
  trace::StreamId compute = tr.InternStream("compute");
  trace::StreamId other = tr.InternStream("other");
  trace::CommGroup group;
  group.name = "dp";
  group.size = 2;
  group.simulated = {0, 1};
  trace::GroupId g = tr.AddGroup(group);
  TaskId a0 = Delay(tr, 0, compute, 100);
  TaskId a1 = Delay(tr, 1, compute, 300);
  TaskId r0 = AllReduce(tr, 0, compute, g, 1000, {a0});
  TaskId r1 = AllReduce(tr, 1, compute, g, 1000, {a1});
  Delay(tr, 0, compute, 20);
  TaskId tail = Delay(tr, 0, other, 50, {r0});
  (void)r1;

  engine::FixedCostModel cost(FlopRate{1e15});
  engine::FixedNetworkModel network(Time::Ns(10), Bandwidth{1e9});
  trace::ReplayResult replay = engine::Engine(cost, network).Replay(tr);
  ASSERT_EQ(replay.makespan, Time::Ns(300 + 1010 + 50));
  CriticalPath path = FindCriticalPath(tr, replay);
  EXPECT_EQ(path.length, replay.makespan);
  // Rank 1's compute, a member of the all-reduce (rank 0's, the one the
  // tail waits for), the tail.
  EXPECT_EQ(path.tasks, (std::vector<TaskId>{a1, r0, tail}));
  std::string text = CriticalPathText(tr, replay, path);
  EXPECT_NE(text.find("critical path: 3 tasks, 0.001 ms (step 0.001 ms)"), std::string::npos) << text;
  nlohmann::json j = CriticalPathJson(tr, replay, path);
  EXPECT_EQ(j["tasks"].size(), 3u);
  EXPECT_EQ(j["tasks"][0]["rank"], 1);
  EXPECT_DOUBLE_EQ(j["tasks"][0]["duration_s"].get<double>(), 300e-9);
}

void ExpectLengthIsTheStep(const std::string& scenario_file) {
  config::ScenarioConfig s = config::LoadScenario(std::string(STACKSIM_SOURCE_DIR) + "/scenarios/" + scenario_file, {});
  Options options;
  options.keep_trace = true;
  SimulationResult r = Simulate(s, options);
  ASSERT_TRUE(r.trace && r.replay);
  CriticalPath path = FindCriticalPath(*r.trace, *r.replay);
  ASSERT_FALSE(path.tasks.empty());
  EXPECT_EQ(path.length, r.replay->makespan);
  EXPECT_EQ(path.length, r.iteration);
  // A chain: each task starts no earlier than the one before it ends.
  for (size_t i = 1; i < path.tasks.size(); ++i) {
    EXPECT_GE(r.replay->timings[path.tasks[i]].start, r.replay->timings[path.tasks[i - 1]].end) << i;
  }
  EXPECT_EQ(r.replay->timings[path.tasks.back()].end, r.replay->makespan);
}

TEST(CriticalPath, LengthIsTheStepOnASmallScenario) { ExpectLengthIsTheStep("llama3-8b-8xh100.json"); }

TEST(CriticalPath, LengthIsTheStepOnTheFlagship) { ExpectLengthIsTheStep("gpt3-175b-1024xh100.json"); }

}  // namespace
}  // namespace stacksim::simulate
