// Traces the Chakra tests (JSON and .et) export and import.
#ifndef STACKSIM_SIM_CHAKRA_CHAKRA_TEST_TRACES_H_
#define STACKSIM_SIM_CHAKRA_CHAKRA_TEST_TRACES_H_

#include <gtest/gtest.h>

#include <string>

#include "sim/config/scenario.h"
#include "sim/trace/replay_result.h"
#include "sim/simulate/simulate.h"
#include "sim/trace/trace.h"

namespace stacksim::chakra::test_traces {

// Two ranks: compute, a send to rank 1, a two-member all-reduce of a
// fractional byte count.
inline trace::Trace SmallTrace() {
  using trace::TaskKind;
  trace::Trace t;
  t.SetRankCount(2);
  trace::CommGroup dp{.name = "dp", .size = 2, .ranks_per_node = 2, .nodes = 1, .simulated = {0, 1}};
  trace::GroupId g = t.AddGroup(dp);
  trace::GroupId pair = t.AddGroup({.name = "pp 0-1", .size = 2, .ranks_per_node = 2, .simulated = {0, 1}});
  trace::Task c;
  c.kind = TaskKind::kCompute;
  c.stream = t.InternStream("compute");
  c.label = t.InternLabel("gemm");
  c.compute.flops = Flops{2e12};
  c.compute.bytes = Bytes{1e6};
  c.name = t.InternName("fwd");
  trace::TaskId a0 = t.Add(c);
  trace::Task x;
  x.kind = TaskKind::kTransfer;
  x.stream = t.InternStream("pp");
  x.label = t.InternLabel("pp");
  x.name = t.InternName("send");
  x.transfer = {.dst = 1, .bytes = Bytes{1.5e6}, .group = pair};
  trace::TaskId s = t.Add(x, {a0});
  c.rank = 1;
  trace::TaskId a1 = t.Add(c, {s});
  trace::Task ar;
  ar.kind = TaskKind::kCollective;
  ar.stream = t.InternStream("dp");
  ar.label = t.InternLabel("dp");
  ar.name = t.InternName("grad all-reduce");
  ar.comm = {.kind = trace::CollectiveKind::kAllReduce, .bytes = Bytes{1e8 + 0.5}, .group = g, .instance = 0};
  t.Add(ar, {a0});
  ar.rank = 1;
  t.Add(ar, {a1});
  EXPECT_EQ(t.Check(), "");
  return t;
}

// A stacksim-generated training step: Llama 3 8B, pp 2 x dp 4 on one DGX H100
// (two simulated ranks), with its trace and replay kept.
inline config::ScenarioConfig TrainingStepScenario() {
  config::ScenarioOptions opts;
  opts.overrides = {"plan.pp=2", "plan.dp=4", "training.global_batch=16"};
  return config::LoadScenario(std::string(STACKSIM_SOURCE_DIR) + "/scenarios/llama3-8b-8xh100.json", opts);
}
inline simulate::SimulationResult TrainingStep(const config::ScenarioConfig& s) {
  simulate::Options sim_opts;
  sim_opts.keep_trace = true;
  return simulate::Simulate(s, sim_opts);
}

}  // namespace stacksim::chakra::test_traces

#endif  // STACKSIM_SIM_CHAKRA_CHAKRA_TEST_TRACES_H_
