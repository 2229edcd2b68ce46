// `stacksim topology` and `simulate --critical-path` as a user runs them:
// bisection bandwidth of the shipped graph fabrics against hand counts, the
// DOT written and read back, and bad input.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/run_stacksim.h"

namespace stacksim::testing {
namespace {

const std::string kSource = STACKSIM_SOURCE_DIR;

nlohmann::json Topology(const std::string& args) {
  CmdResult r = Stacksim("topology " + args + " --format json");
  EXPECT_EQ(r.status, 0) << r.err;
  return r.status == 0 ? nlohmann::json::parse(r.out) : nlohmann::json();
}

TEST(TopologyCli, ShippedGraphFabricsHaveTheHandCountedBisection) {
  // Torus 8x8x16, 75 GB/s links: cutting the first dimension crosses
  // 2 x 8 x 16 = 256 links.
  nlohmann::json torus = Topology(kSource + "/topologies/h100-torus-8x8x16.json");
  EXPECT_EQ(torus["gpus"], 1024);
  EXPECT_DOUBLE_EQ(torus["bisection_Bps"].get<double>(), 256 * 75e9);
  EXPECT_EQ(torus["diameter_hops"], 4 + 4 + 8);
  // Dragonfly, 8 groups: 4 x 4 pairs of groups x 16 global links of 50 GB/s.
  nlohmann::json dragonfly = Topology("dgx-h100-dragonfly");
  EXPECT_EQ(dragonfly["gpus"], 1024);
  EXPECT_DOUBLE_EQ(dragonfly["bisection_Bps"].get<double>(), 16 * 16 * 50e9);
  // Rail-only: every rail carries its half's 64 NICs across; no spine.
  nlohmann::json rail_only = Topology("dgx-h100-rail-only");
  EXPECT_DOUBLE_EQ(rail_only["bisection_Bps"].get<double>(), 512 * 50e9);
  EXPECT_TRUE(rail_only["oversubscription"].empty());
  // Fat tree, 2:1 at the leaf: 128 nodes = 4 pods of 32; half the pods'
  // leaf uplinks, 2 pods x 8 rails x 32 x 50 GB/s / 2.
  nlohmann::json fat = Topology("dgx-h100-2to1 --nodes 128");
  EXPECT_DOUBLE_EQ(fat["bisection_Bps"].get<double>(), 2 * 8 * 32 * 50e9 / 2);
  ASSERT_EQ(fat["oversubscription"].size(), 1u);
  EXPECT_DOUBLE_EQ(fat["oversubscription"][0]["max"].get<double>(), 2.0);
}

TEST(TopologyCli, DotFileReadsBackAsTheSameFabric) {
  const std::string dot = ::testing::TempDir() + "topology_cli_torus.dot";
  CmdResult r = Stacksim("topology h100-torus-8x8x16 --dot " + dot);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("bisection bandwidth: 19.2 TB/s per direction"), std::string::npos) << r.out;
  nlohmann::json back = Topology(dot);
  EXPECT_DOUBLE_EQ(back["bisection_Bps"].get<double>(), 256 * 75e9);
  EXPECT_EQ(back["links"]["nvlink"]["count"], 3 * 1024);
  std::remove(dot.c_str());
}

TEST(TopologyCli, BadInputExitsTwoNamingTheFileAndField) {
  const std::string bad = ::testing::TempDir() + "topology_cli_bad.dot";
  std::ofstream(bad) << "graph { a [kind=gpu]; b [kind=gpu]; a -- b [kind=nvlink, bandwidth=\"fast\", latency=\"1 us\"]; }";
  CmdResult r = Stacksim("topology " + bad);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find(bad + ": edge vertex 'a' -- vertex 'b': bandwidth"), std::string::npos) << r.err;
  std::remove(bad.c_str());
  CmdResult missing = Stacksim("topology no-such-topology");
  EXPECT_EQ(missing.status, 2);
  // A job larger than a fixed-size graph fabric: a clear error naming gpus.
  CmdResult sim = Stacksim("simulate " + kSource +
                           "/scenarios/gpt3-175b-1024xh100-dragonfly.json --set gpus=2048 --set plan.dp=32");
  EXPECT_EQ(sim.status, 2) << sim.out;
  EXPECT_NE(sim.err.find("gpus: 2048 GPUs need 256 nodes; topology dgx-h100-dragonfly holds at most 128"),
            std::string::npos)
      << sim.err;
}

TEST(SimulateCli, CriticalPathLengthIsTheStep) {
  CmdResult r = Stacksim("simulate " + kSource + "/scenarios/llama3-8b-8xh100.json --critical-path --format json");
  ASSERT_EQ(r.status, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j.contains("critical_path"));
  EXPECT_NEAR(j["critical_path"]["length_s"].get<double>(), j["iteration_s"].get<double>(), 1e-9);
  EXPECT_FALSE(j["critical_path"]["tasks"].empty());
  CmdResult text = Stacksim("simulate " + kSource + "/scenarios/llama3-8b-8xh100.json --critical-path");
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_NE(text.out.find("critical path: "), std::string::npos);
}

TEST(DiagnoseCli, ReportsTheCriticalPathOfTheStep) {
  CmdResult r = Stacksim("diagnose " + kSource + "/scenarios/llama3-8b-8xh100.json --format json");
  ASSERT_EQ(r.status, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j.contains("critical_path"));
  EXPECT_NEAR(j["critical_path"]["length_s"].get<double>(), j["step_s"].get<double>(), 1e-9);
  double sum = 0;
  for (const auto& role : j["critical_path"]["by_role"]) sum += role["time_s"].get<double>();
  EXPECT_NEAR(sum, j["step_s"].get<double>(), 1e-6);
}

}  // namespace
}  // namespace stacksim::testing
