// Contention scenarios (issue 4): run the stacksim command with
// --network simgrid on the shipped scenarios and check that the effect each
// one demonstrates is there. Each SimGrid run is its own process (SimGrid
// allows one simulation per process).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/run_stacksim.h"

namespace {

using stacksim::testing::CmdResult;
using stacksim::testing::Stacksim;

nlohmann::json SimulateJson(const std::string& scenario, const std::string& extra) {
  CmdResult r = Stacksim("simulate " + std::string(STACKSIM_SOURCE_DIR) + "/scenarios/" + scenario +
                         " --format json " + extra);
  EXPECT_EQ(r.status, 0) << r.err;
  if (r.status != 0) return nlohmann::json::object();
  return nlohmann::json::parse(r.out);
}

double Breakdown(const nlohmann::json& j, const char* key) { return j.at("breakdown").at(key).get<double>(); }

// (a) DP all-reduce over 128 scattered nodes: on the 2:1 leaf every ring edge
// leaves its pod, so the exposed all-reduce takes about twice as long as on
// the non-blocking fabric (measured 1.99x), and the leaf uplinks are named.
TEST(Contention, DpAllReduceOnTwoToOneLeafIsTwiceAsSlowWhenNodesAreScattered) {
  const std::string s = "contention-dp-allreduce-2to1.json";
  auto oversub = SimulateJson(s, "--network simgrid");
  auto full = SimulateJson(s, "--network simgrid --set topology=dgx-h100");
  ASSERT_TRUE(oversub.contains("breakdown") && full.contains("breakdown"));
  EXPECT_EQ(oversub.at("network_model").get<std::string>(), "simgrid");
  double dp_oversub = Breakdown(oversub, "dp_exposed_s"), dp_full = Breakdown(full, "dp_exposed_s");
  ASSERT_GT(dp_full, 0.05);
  double ratio = dp_oversub / dp_full;
  EXPECT_GT(ratio, 1.8) << dp_oversub << " vs " << dp_full;
  EXPECT_LT(ratio, 2.2) << dp_oversub << " vs " << dp_full;

  // The bottlenecks are the oversubscribed leaf uplinks; the non-blocking
  // fabric has none.
  const auto& b = oversub.at("bottlenecks");
  ASSERT_FALSE(b.empty());
  EXPECT_NE(b[0].get<std::string>().find("-> spine uplink"), std::string::npos) << b[0];
  EXPECT_TRUE(full.at("bottlenecks").empty()) << full.at("bottlenecks");
}

// (a), packed: a ring over consecutive nodes crosses a leaf uplink only at
// pod boundaries, one edge per pod and rail, so the 2:1 leaf costs nothing.
TEST(Contention, DpAllReduceOverPackedNodesHardlySlowsOnTwoToOneLeaf) {
  const std::string s = "contention-dp-allreduce-2to1.json";
  auto packed = SimulateJson(s, "--network simgrid --set node_order=packed");
  auto full = SimulateJson(s, "--network simgrid --set topology=dgx-h100 --set node_order=packed");
  ASSERT_TRUE(packed.contains("breakdown") && full.contains("breakdown"));
  double ratio = Breakdown(packed, "dp_exposed_s") / Breakdown(full, "dp_exposed_s");
  EXPECT_LT(ratio, 1.05);
  EXPECT_GT(ratio, 0.95);
}

// Pipeline-send contention from the Perfetto trace: the pp-comm tasks'
// summed contention (us) and how many had any.
struct SendContention {
  double contention_ms = 0;
  int contended = 0;
  int sends = 0;
};

SendContention PipelineSendContention(const std::string& trace_file, const std::string& category = "pp-comm") {
  std::ifstream in(trace_file);
  auto t = nlohmann::json::parse(in);
  const auto& events = t.is_object() ? t.at("traceEvents") : t;
  SendContention r;
  for (const auto& e : events) {
    if (e.value("cat", "") != category) continue;
    ++r.sends;
    double c = e.contains("args") ? e.at("args").value("contention_us", 0.0) : 0.0;
    r.contention_ms += c * 1e-3;
    if (c > 0) ++r.contended;
  }
  return r;
}

// (c) Pipeline sends sharing NICs with the DP reduce-scatter: with overlap on,
// the cooldown's sends meet the virtual stages' reduce-scatters on the same
// NICs (measured: 125 sends slowed, 33.1 ms in all; pp_exposed 6.99 ms);
// with overlap off they meet only a few (29 sends, 7.1 ms; 6.19 ms).
TEST(Contention, PipelineSendsSlowDownWhenTheirNicsCarryTheGradientReduceScatter) {
  const std::string s = "contention-pp-sends-with-dp.json";
  const std::string base = ::testing::TempDir() + "stacksim_contention_" + std::to_string(getpid());
  auto on = SimulateJson(s, "--network simgrid --trace " + base + "_on.json");
  auto off = SimulateJson(s, "--network simgrid --set plan.overlap_grad_reduce=false --trace " + base + "_off.json");
  ASSERT_TRUE(on.contains("breakdown") && off.contains("breakdown"));
  SendContention con = PipelineSendContention(base + "_on.json");
  SendContention coff = PipelineSendContention(base + "_off.json");
  std::remove((base + "_on.json").c_str());
  std::remove((base + "_off.json").c_str());
  ASSERT_GT(con.sends, 1000);
  EXPECT_GT(con.contended, 80);
  EXPECT_GT(con.contention_ms, 20.0);
  EXPECT_GT(con.contention_ms, 3.0 * coff.contention_ms) << con.contention_ms << " vs " << coff.contention_ms;
  EXPECT_GT(Breakdown(on, "pp_exposed_s"), 1.08 * Breakdown(off, "pp_exposed_s"));
  // The links where sends and reduce-scatters meet are NICs.
  const auto& b = on.at("bottlenecks");
  ASSERT_FALSE(b.empty());
  EXPECT_NE(b[0].get<std::string>().find(" NIC "), std::string::npos) << b[0];
}

}  // namespace

namespace {

// (b) The MoE all-to-all across 64 GPUs meets the overlapped data-parallel
// reduce-scatter on the NICs (measured with SimGrid: 23 of the 384 token
// all-to-alls slowed, 3.38 ms in all, and 23.7 ms added to the
// reduce-scatters); with the reduce-scatter moved after the backward, none.
// The EP tasks are 672: per layer and micro-batch the dispatcher's count
// all-gather, the token dispatch and combine with the probabilities'
// all-to-all, and in the backward the three all-to-alls again.
TEST(Contention, MoeAllToAllSlowsWhenItMeetsTheGradientReduceScatter) {
  const std::string scenario = "contention-moe-alltoall-with-dp.json";
  auto run = [&](const std::string& extra, const std::string& name) {
    std::string trace = ::testing::TempDir() + "moe_" + name + "_" + std::to_string(getpid()) + ".json";
    SimulateJson(scenario, "--network simgrid --trace " + trace + " " + extra);
    return std::pair{PipelineSendContention(trace, "ep-comm"), PipelineSendContention(trace, "dp-comm")};
  };
  auto [a2a, dp] = run("", "overlap");
  auto [a2a_alone, dp_alone] = run("--set plan.overlap_grad_reduce=false", "alone");
  EXPECT_EQ(a2a.sends, 672);
  EXPECT_GT(a2a.contended, 10);
  EXPECT_GT(a2a.contention_ms, 0.5);
  EXPECT_GT(dp.contention_ms, 3.0);
  EXPECT_LT(a2a_alone.contention_ms, 0.01);  // rounding of a few ns at most (small all-to-alls)
  EXPECT_LT(dp_alone.contention_ms, 0.01);
}

}  // namespace
