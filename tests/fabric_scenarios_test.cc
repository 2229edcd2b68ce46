// Scenarios on fabrics given as graphs (torus, dragonfly, rail-only, a
// GraphML file) simulated as a user runs them, with both network models
// (each run its own process: SimGrid allows one simulation per process),
// against the flagship on the rail-optimized fat tree: the same plan on the
// same GPUs.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "tests/run_stacksim.h"

namespace stacksim::testing {
namespace {

const std::string kScenarios = std::string(STACKSIM_SOURCE_DIR) + "/scenarios/";

nlohmann::json Simulate(const std::string& scenario, const std::string& network) {
  CmdResult r = Stacksim("simulate " + kScenarios + scenario + " --network " + network + " --format json");
  EXPECT_EQ(r.status, 0) << scenario << " " << network << ": " << r.err;
  return r.status == 0 ? nlohmann::json::parse(r.out) : nlohmann::json();
}

double Step(const nlohmann::json& j) { return j.value("iteration_s", 0.0); }
double Part(const nlohmann::json& j, const char* key) { return j["breakdown"].value(key, 0.0); }

TEST(FabricScenarios, RailOnlyGivesTheFlagshipsStep) {
  // TP in the NVSwitch, DP rings and pipeline sends on one rail each: the
  // spine carries nothing this plan needs.
  const nlohmann::json fat = Simulate("gpt3-175b-1024xh100.json", "analytic");
  for (const char* network : {"analytic", "simgrid"}) {
    SCOPED_TRACE(network);
    const nlohmann::json rail = Simulate("gpt3-175b-1024xh100-rail-only.json", network);
    EXPECT_NEAR(Step(rail), Step(fat), 0.005 * Step(fat));
    EXPECT_DOUBLE_EQ(Part(rail, "tp_exposed_s"), Part(fat, "tp_exposed_s"));
  }
}

TEST(FabricScenarios, TorusHasNoNvSwitchForTensorParallelism) {
  const nlohmann::json fat = Simulate("gpt3-175b-1024xh100.json", "analytic");
  const nlohmann::json analytic = Simulate("gpt3-175b-1024xh100-torus.json", "analytic");
  const nlohmann::json simgrid = Simulate("gpt3-175b-1024xh100-torus.json", "simgrid");
  // A TP ring on 75 GB/s neighbour links instead of the NVSwitch's
  // ~370 GB/s measured bus bandwidth: several times the exposed TP time.
  EXPECT_GT(Part(analytic, "tp_exposed_s"), 3 * Part(fat, "tp_exposed_s"));
  EXPECT_GT(Step(analytic), 1.5 * Step(fat));
  // The two models route the same way (dimension order, one path).
  EXPECT_NEAR(Step(simgrid), Step(analytic), 0.15 * Step(analytic));
}

TEST(FabricScenarios, DragonflyStagesShareGlobalLinks) {
  const nlohmann::json fat = Simulate("gpt3-175b-1024xh100.json", "analytic");
  const nlohmann::json analytic = Simulate("gpt3-175b-1024xh100-dragonfly.json", "analytic");
  const nlohmann::json simgrid = Simulate("gpt3-175b-1024xh100-dragonfly.json", "simgrid");
  // TP stays in the NVSwitch; pipeline sends between groups share 16 global
  // links 8:1, so the bubble grows.
  EXPECT_DOUBLE_EQ(Part(analytic, "tp_exposed_s"), Part(fat, "tp_exposed_s"));
  EXPECT_GT(Part(analytic, "bubble_s"), 3 * Part(fat, "bubble_s"));
  EXPECT_NEAR(Step(simgrid), Step(analytic), 0.05 * Step(analytic));
}

TEST(FabricScenarios, GraphMlServersSimulateWithBothModels) {
  const nlohmann::json analytic = Simulate("llama3-8b-16xh100-pcie-bridged.json", "analytic");
  const nlohmann::json simgrid = Simulate("llama3-8b-16xh100-pcie-bridged.json", "simgrid");
  EXPECT_GT(Step(analytic), 0);
  EXPECT_GT(Part(analytic, "dp_exposed_s"), 0);
  EXPECT_NEAR(Step(simgrid), Step(analytic), 0.1 * Step(analytic));
}

}  // namespace
}  // namespace stacksim::testing
