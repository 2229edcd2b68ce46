#include "sim/cluster/cluster_scenario.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "sim/cluster/cluster_report.h"

namespace stacksim::cluster {
namespace {

const std::string kRoot = STACKSIM_SOURCE_DIR;

std::string ErrorOf(const nlohmann::json& doc, const std::string& file) {
  try {
    ClusterScenario c = ParseClusterScenario(doc, file);
    RunClusterScenario(c, c.options);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// The shipped hand-built case, end to end from the scenario file: JSON
// numbers as docs/cluster.md states them.
TEST(ClusterScenario, BackfillExampleFromItsFiles) {
  ClusterScenario c = LoadClusterScenario(kRoot + "/scenarios/cluster-backfill-example.json");
  EXPECT_EQ(c.nodes, 4);
  ASSERT_EQ(c.jobs.size(), 3u);
  EXPECT_EQ(c.jobs[2].user, "carol");
  ClusterOptions o = c.options;
  nlohmann::json easy = ClusterJson(RunClusterScenario(c, o));
  o.scheduler = SchedulerKind::kFifo;
  nlohmann::json fifo = ClusterJson(RunClusterScenario(c, o));
  EXPECT_DOUBLE_EQ(easy["makespan_s"].get<double>(), 15 * 3600.0);
  EXPECT_DOUBLE_EQ(fifo["makespan_s"].get<double>(), 21 * 3600.0);
  EXPECT_DOUBLE_EQ(easy["gpu_time"]["idle_gpu_h"]["head_blocked"].get<double>(), 24);
  EXPECT_DOUBLE_EQ(easy["wait_s"]["p90"].get<double>(), 9 * 3600.0);
  EXPECT_EQ(easy["series"]["busy_gpus"].size(), 15u);
}

TEST(ClusterScenario, EveryShippedClusterScenarioLoads) {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kRoot + "/scenarios")) {
    const std::string name = entry.path().filename().string();
    if (entry.path().extension() != ".json" || name.rfind("cluster-", 0) != 0) continue;
    SCOPED_TRACE(name);
    ClusterScenario c = LoadClusterScenario(entry.path().string());
    EXPECT_FALSE(c.question.empty());
    EXPECT_FALSE(c.jobs.empty());
    ++count;
  }
  EXPECT_GE(count, 2);
}

nlohmann::json SmallScenario() {
  return nlohmann::json::parse(R"({
    "topology": "dgx-h100", "nodes": 8,
    "plans": {"8b": {"training": {"seq_len": 8192, "global_batch": 64},
                     "plan": {"tp": 1, "pp": 1, "dp": 8, "recompute": "full", "sharding": "zero1"}}},
    "generate": {"jobs": 3, "arrivals_per_hour": 1, "duration": {"median": "1 h"},
                 "mix": [{"weight": 1, "gpus": 8, "model": "llama3-8b", "plan": "8b", "tokens": "1B"}]}
  })");
}

// A model job's duration is the simulated step x steps; the three jobs of
// one class cost one simulation.
TEST(ClusterScenario, ModelJobsAreSimulatedOncePerClass) {
  ClusterScenario c = ParseClusterScenario(SmallScenario(), kRoot + "/scenarios/test.json");
  ClusterResult r = RunClusterScenario(c, c.options);
  EXPECT_EQ(r.simulations, 1);
  ASSERT_EQ(r.jobs.size(), 3u);
  // 1B tokens / (64 x 8192) per step = 1908 steps (rounded up) of a few seconds.
  const double step = r.jobs[0].duration.seconds() / 1908;
  EXPECT_GT(step, 1.0);
  EXPECT_LT(step, 20.0);
  EXPECT_DOUBLE_EQ(r.jobs[0].placement_slowdown, 1.0);  // one node: no inter-node traffic
}

TEST(ClusterScenario, BadScenariosNameTheKey) {
  const std::string file = kRoot + "/scenarios/test.json";
  nlohmann::json doc = SmallScenario();
  doc["generate"]["mix"][0]["plan"] = "missing";
  EXPECT_EQ(ErrorOf(doc, file),
            file + ": generate.mix[0]: plan: no plan 'missing' in the scenario's \"plans\" (" + file + ")");
  doc = SmallScenario();
  doc["generate"]["mix"][0]["gpus"] = 16;  // the plan says dp 8
  EXPECT_EQ(ErrorOf(doc, file).rfind(file + ": generate.mix[0]: plan: plan '8b' cannot run llama3-8b on 16 GPUs: ", 0),
            0u);
  doc = SmallScenario();
  doc["nodes"] = 4096;  // beyond dgx-h100's 2048: the fabric grows instead
  EXPECT_EQ(ParseClusterScenario(doc, file).topology.max_nodes, 4096);
  doc = SmallScenario();
  doc["trace"] = "x.csv";
  EXPECT_EQ(ErrorOf(doc, file), file + ": give either \"trace\" (a job trace file) or \"generate\" (a generator)");
  doc = SmallScenario();
  doc["schedular"] = "fifo";
  EXPECT_EQ(ErrorOf(doc, file).rfind(file + ": schedular", 0), 0u);
}

TEST(ClusterScenario, TraceRowLargerThanTheCluster) {
  const std::string trace = ::testing::TempDir() + "/cluster_big.csv";
  std::ofstream(trace) << "submit,gpus,duration\n0 s,8,1 h\n0 s,128,1 h\n";
  nlohmann::json doc = {{"topology", "dgx-h100"}, {"nodes", 8}, {"trace", trace}};
  EXPECT_EQ(ErrorOf(doc, kRoot + "/scenarios/t.json"), trace + ": line 3: gpus: 128 GPUs do not fit the cluster's 64");
  std::remove(trace.c_str());
}

}  // namespace
}  // namespace stacksim::cluster
