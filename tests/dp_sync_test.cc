// plan.dp_sync what-ifs (docs/workload.md "Communicating less") and the
// two-site topology they are asked on: scenarios/llama3-8b-diloco-2sites-256xh100.json.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/config/scenario.h"
#include "sim/net/analytic_network.h"
#include "sim/simulate/simulate.h"
#include "sim/trace/trace.h"
#include "sim/util/error.h"
#include "sim/workload/training_step.h"

namespace stacksim::testing {
namespace {

const char kDiLoCo[] = "llama3-8b-diloco-2sites-256xh100.json";

std::string Scenario(const std::string& name) { return std::string(STACKSIM_SOURCE_DIR) + "/scenarios/" + name; }

config::ScenarioConfig Load(const std::string& name, const std::vector<std::string>& sets = {}) {
  config::ScenarioOptions o;
  o.overrides = sets;
  return config::LoadScenario(Scenario(name), o);
}

// Bytes of the data-parallel gradient reductions (group role dp) on rank 0.
double GradientBytes(const trace::Trace& t) {
  double bytes = 0;
  for (trace::TaskId i = 0; i < static_cast<trace::TaskId>(t.size()); ++i) {
    if (t.kind(i) != trace::TaskKind::kCollective || t.rank(i) != 0) continue;
    const trace::Task task = t.task(i);
    if (t.group(task.comm.group).role == trace::GroupRole::kDp && t.name(task.name) == "grad-reduce") {
      bytes += task.comm.bytes.value;
    }
  }
  return bytes;
}

TEST(DpSync, TwoSiteTopologyReadsBack) {
  config::ScenarioConfig s = Load(kDiLoCo);
  ASSERT_TRUE(s.topology.sites.has_value());
  EXPECT_EQ(s.topology.sites->nodes_per_site, 16);
  EXPECT_DOUBLE_EQ(s.topology.sites->link_bandwidth.value, 12.5e9);
  const nlohmann::json j = config::TopologyToJson(s.topology);
  JsonNode node(j, "x.json", "");
  config::TopologyConfig back = config::ParseTopology(node);
  ASSERT_TRUE(back.sites.has_value());
  EXPECT_EQ(back.sites->link_latency, s.topology.sites->link_latency);
  EXPECT_EQ(s.token_budget, 1000000000000);
}

// The hand-checkable price of crossing: 2 sites of 128 GPUs, 12.5 GB/s, so
// 12.5e9 / 128 per GPU. A 64-member all-reduce of S = 1 GB across both sites
// (m = 32 per site) sends 2 (1/2) S / 32 over the link per member, in series
// with the fabric's own price, plus 2 crossings of 5 ms.
TEST(DpSync, CrossSiteAllReducePaysTheSharedLink) {
  config::ScenarioConfig s = Load(kDiLoCo);
  net::AnalyticNetwork net(s.topology, s.profile);
  trace::CommGroup g;
  g.size = 64;
  g.ranks_per_node = 2;
  g.nodes = 32;
  g.first_rank = 0;
  g.stride = 4;
  trace::CommOp op;
  op.kind = trace::CollectiveKind::kAllReduce;
  op.bytes = Bytes{1e9};
  const engine::CommCost across = net.Collective(op, g);
  config::TopologyConfig one_site = s.topology;
  one_site.sites.reset();
  const engine::CommCost within = net::AnalyticNetwork(one_site, s.profile).Collective(op, g);
  const double link = 1e9 / 32 / (12.5e9 / 128);
  EXPECT_NEAR((across.transfer - within.transfer).seconds(), link, 1e-6);
  EXPECT_NEAR((across.latency - within.latency).seconds(), 2 * 5e-3, 1e-6);
  // A group inside site 0 pays nothing extra.
  g.size = 32;
  g.nodes = 16;
  EXPECT_EQ(net.Collective(op, g).transfer, net::AnalyticNetwork(one_site, s.profile).Collective(op, g).transfer);
}

TEST(DpSync, DiLoCoInnerStepsReduceWithinTheWorkerAndSyncEveryH) {
  config::ScenarioConfig s = Load(kDiLoCo);
  simulate::SimulationResult r = simulate::Simulate(s);
  ASSERT_FALSE(r.out_of_memory);
  ASSERT_TRUE(r.dp_sync.has_value());
  const simulate::DpSyncResult& d = *r.dp_sync;
  EXPECT_EQ(d.step, r.iteration);
  EXPECT_GT(d.sync_step, d.step);
  const double h = 500;
  EXPECT_NEAR(d.average_step.seconds(), ((h - 1) * d.step.seconds() + d.sync_step.seconds()) / h, 1e-6);
  // Every step across the slow link is slower than DiLoCo's average.
  config::ScenarioConfig every = Load(kDiLoCo, {"plan.dp_sync=null"});
  simulate::SimulationResult e = simulate::Simulate(every);
  EXPECT_GT(e.iteration.seconds(), 2 * d.average_step.seconds());
  // The inner step's group is the worker's 32 replicas; the sync step's
  // outer all-reduce moves the rank's 1/32 slice of 2.0B parameters in fp32.
  trace::Trace sync = workload::BuildTrainingStep(s, workload::DpSyncPhase::kOuterSyncStep);
  double outer = 0;
  for (trace::TaskId i = 0; i < static_cast<trace::TaskId>(sync.size()); ++i) {
    if (sync.kind(i) != trace::TaskKind::kCollective) continue;
    const trace::Task task = sync.task(i);
    if (sync.name(task.name) == "outer-allreduce") {
      outer += task.comm.bytes.value;
      EXPECT_EQ(sync.group(task.comm.group).size, 2);
    }
    if (sync.name(task.name) == "grad-reduce") EXPECT_EQ(sync.group(task.comm.group).size, 32);
  }
  const double params = static_cast<double>(workload::StageParameters(s, 0));
  EXPECT_NEAR(outer, params / 32 * 4, 1.0);
  EXPECT_NEAR(d.extra_memory_per_gpu.value, params / 32 * 8, 1.0);
  // The budget: ceil(1e12 / (256 x 8192)) steps at the average step.
  EXPECT_EQ(d.steps_to_budget, 476838);
  EXPECT_NEAR(d.time_to_budget.seconds(), 476838 * d.average_step.seconds(), 1e-3 * d.time_to_budget.seconds());
}

TEST(DpSync, CompressionSendsTheRatioAndPaysItsPasses) {
  config::ScenarioConfig every = Load(kDiLoCo, {"plan.dp_sync=null"});
  config::ScenarioConfig comp = Load(
      kDiLoCo, {R"(plan.dp_sync={"method":"compression","compression_ratio":0.01,"compression_passes":8})"});
  const double full = GradientBytes(workload::BuildTrainingStep(every));
  const double sent = GradientBytes(workload::BuildTrainingStep(comp));
  ASSERT_GT(full, 0);
  EXPECT_NEAR(sent, 0.01 * full, 1e-6 * full);
  simulate::SimulationResult e = simulate::Simulate(every);
  simulate::SimulationResult c = simulate::Simulate(comp);
  EXPECT_LT(c.iteration, e.iteration);
  EXPECT_GT(c.breakdown.memory_bound, e.breakdown.memory_bound);  // the compression kernels
  EXPECT_EQ(c.dp_sync->average_step, c.iteration);
}

TEST(DpSync, AsyncPeriodIsTheLongerOfComputeAndReduction) {
  config::ScenarioConfig s = Load(kDiLoCo, {R"(plan.dp_sync={"method":"async","staleness":2})"});
  simulate::SimulationResult r = simulate::Simulate(s);
  const simulate::DpSyncResult& d = *r.dp_sync;
  EXPECT_LT(d.without_reduction, d.step);
  EXPECT_GT(d.reduction_busy, Time::Zero());
  EXPECT_EQ(d.average_step, std::max(d.without_reduction, d.reduction_busy));
  // Across the 100 Gb/s link the reduction, not compute, sets the pace.
  EXPECT_EQ(d.average_step, d.reduction_busy);
}

TEST(DpSync, BadInputNamesTheField) {
  auto message = [](const std::vector<std::string>& sets) {
    try {
      Load(kDiLoCo, sets);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message({"plan.dp_sync.workers=3"}).find("plan.dp_sync.workers"), std::string::npos);
  EXPECT_NE(message({"plan.dp_sync.staleness=2"}).find("staleness"), std::string::npos);
  EXPECT_NE(message({"plan.sharding=zero1"}).find("plan.sharding"), std::string::npos);
  EXPECT_NE(message({R"(plan.dp_sync={"method":"compression","compression_ratio":2,"compression_passes":1})"})
                .find("compression_ratio"),
            std::string::npos);
}

}  // namespace
}  // namespace stacksim::testing
