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

namespace {

struct CmdResult {
  int status = -1;
  std::string out;
  std::string err;
};

CmdResult Stacksim(const std::string& args) {
  static int counter = 0;
  // Unique per process: ctest runs tests in parallel processes.
  std::string err_file =
      ::testing::TempDir() + "stacksim_contention_err_" + std::to_string(getpid()) + "_" + std::to_string(counter++);
  std::string cmd = std::string(STACKSIM_BINARY) + " " + args + " 2>" + err_file;
  CmdResult r;
  FILE* p = popen(cmd.c_str(), "r");
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  std::ifstream e(err_file);
  std::stringstream ss;
  ss << e.rdbuf();
  r.err = ss.str();
  std::remove(err_file.c_str());
  return r;
}

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

}  // namespace
