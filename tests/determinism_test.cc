// Same input, same output: whatever the thread count, in one process or in
// two. Each test compares whole JSON outputs (only the keys that report
// stacksim's own wall time or thread count are dropped), so any ranking,
// count or number that changed would fail it; each seeded command is also run
// with another seed, which must change the output (so the comparison can
// fail). Pruning counts of `search` are included: they depend on --batch (a
// fixed round size) but never on the thread count.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/campaign/campaign_report.h"
#include "sim/campaign/training_campaign.h"
#include "sim/config/scenario.h"
#include "sim/report/json_report.h"
#include "sim/search/search.h"
#include "sim/search/search_report.h"
#include "sim/simulate/simulate.h"
#include "sim/straggler/straggler.h"
#include "sim/straggler/straggler_report.h"
#include "sim/straggler/straggler_spec.h"
#include "tests/run_stacksim.h"

namespace stacksim::testing {
namespace {

std::string Scenario(const std::string& name) { return std::string(STACKSIM_SOURCE_DIR) + "/scenarios/" + name; }

// Drops, at any depth, the keys that measure stacksim itself.
void Scrub(nlohmann::json& j) {
  if (j.is_object()) {
    for (const char* k : {"wall_s", "wall_seconds", "threads"}) j.erase(k);
    for (auto& [key, value] : j.items()) Scrub(value);
  } else if (j.is_array()) {
    for (auto& v : j) Scrub(v);
  }
}

nlohmann::json Json(const std::string& args) {
  CmdResult r = Stacksim(args);
  EXPECT_EQ(r.status, 0) << args << "\n" << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(j.is_discarded()) << args;
  Scrub(j);
  return j;
}

TEST(Determinism, SearchIsByteIdenticalForOneTwoAndFourThreads) {
  // Several replay rounds (--batch 4): the rounds' pruning threshold is where
  // thread timing could leak into counts.
  const std::string args = "search " + Scenario("llama3-8b-8xh100.json") +
                           " --gpus 8..32 --top 5 --batch 4 --format json --threads ";
  CmdResult one = Stacksim(args + "1");
  ASSERT_EQ(one.status, 0) << one.err;
  for (const char* threads : {"2", "4"}) {
    CmdResult other = Stacksim(args + threads);
    ASSERT_EQ(other.status, 0) << other.err;
    EXPECT_EQ(one.out, other.out) << "--threads " << threads;  // ranking and pruning counts, byte for byte
  }
  nlohmann::json j = nlohmann::json::parse(one.out);
  EXPECT_EQ(j["plans"].size(), 5u);
  EXPECT_GE(j["pruning"]["simulations"].get<int>(), 12);  // at least three rounds
  EXPECT_GT(j["pruning"]["bounded"].get<int>(), 0);
}

TEST(Determinism, SearchTwiceInOneProcessGivesTheSameJson) {
  search::SearchSpace space;
  space.scenario = config::LoadScenario(Scenario("llama3-8b-8xh100.json"), {});
  space.gpu_counts = {8, 16};
  search::SearchOptions options;
  options.top = 5;
  options.batch = 4;
  options.threads = 2;
  const std::string first = search::SearchJson(search::Search(space, options)).dump();
  EXPECT_EQ(first, search::SearchJson(search::Search(space, options)).dump());
}

TEST(Determinism, SimulateTwiceInOneProcessAndInTwoProcesses) {
  const config::ScenarioConfig s = config::LoadScenario(Scenario("gpt3-175b-1024xh100.json"), {});
  nlohmann::json a = report::JsonReport(simulate::Simulate(s));
  nlohmann::json b = report::JsonReport(simulate::Simulate(s));
  Scrub(a);
  Scrub(b);
  EXPECT_EQ(a, b);
  const std::string args = "simulate " + Scenario("gpt3-175b-1024xh100.json") + " --format json";
  EXPECT_EQ(Json(args), Json(args));
}

TEST(Determinism, SimGridSimulateIsTheSameInTwoProcesses) {
  // One SimGrid engine per process: the second run is a second process.
  const std::string args = "simulate " + Scenario("contention-dp-allreduce-2to1.json") +
                           " --network simgrid --format json";
  nlohmann::json first = Json(args);
  EXPECT_EQ(first, Json(args));
  EXPECT_FALSE(first["bottlenecks"].empty());
}

TEST(Determinism, CampaignTrialsAreIdenticalForAnyThreadCount) {
  const std::string args = "run-campaign " + Scenario("llama3-405b-16384xh100.json") +
                           " --duration 54d --spares 16 --trials 24 --format json";
  nlohmann::json one = Json(args + " --seed 9 --threads 1");
  EXPECT_EQ(one, Json(args + " --seed 9 --threads 2"));
  EXPECT_EQ(one, Json(args + " --seed 9 --threads 4"));
  EXPECT_NE(one["interruptions"], Json(args + " --seed 10 --threads 1")["interruptions"]);
}

TEST(Determinism, CampaignTwiceInOneProcess) {
  const config::ScenarioConfig s = config::LoadScenario(Scenario("llama3-405b-16384xh100.json"), {});
  campaign::CampaignRequest request;
  request.duration = Time::FromSeconds(54 * 86400.0);
  request.spares = 16;
  request.reliability = campaign::LoadReliabilityFile(campaign::DefaultReliabilityFile());
  request.mc.trials = 16;
  request.mc.seed = 3;
  request.mc.threads = 3;
  const Time step = Time::Ns(7'907'358'509);
  nlohmann::json a = campaign::CampaignJson(campaign::RunTrainingCampaign(s, step, request));
  nlohmann::json b = campaign::CampaignJson(campaign::RunTrainingCampaign(s, step, request));
  Scrub(a);
  Scrub(b);
  EXPECT_EQ(a, b);
}

TEST(Determinism, StragglersAreIdenticalForAnyThreadCount) {
  const std::string args = "simulate " + Scenario("llama3-70b-64xa100.json") +
                           " --stragglers 5%:1.5x,gpu:2%:1.2x --straggler-steps 6 --format json";
  nlohmann::json one = Json(args + " --seed 4 --threads 1");
  EXPECT_EQ(one, Json(args + " --seed 4 --threads 3"));
  EXPECT_NE(one["stragglers"]["step_times_s"], Json(args + " --seed 5 --threads 1")["stragglers"]["step_times_s"]);
}

TEST(Determinism, StragglersTwiceInOneProcess) {
  const config::ScenarioConfig s = config::LoadScenario(Scenario("llama3-70b-64xa100.json"), {});
  const straggler::StragglerSpec spec = straggler::ParseStragglerText("gpu:5%:1.5x", "--stragglers");
  straggler::StragglerOptions o;
  o.steps = 4;
  o.seed = 11;
  o.threads = 2;
  nlohmann::json a = straggler::StragglerJson(straggler::AnalyzeStragglers(s, spec, o));
  nlohmann::json b = straggler::StragglerJson(straggler::AnalyzeStragglers(s, spec, o));
  Scrub(a);
  Scrub(b);
  EXPECT_EQ(a, b);
  EXPECT_GT(a["slowdown"].get<double>(), 1.0);  // some GPUs were slow: replays ran
}

TEST(Determinism, ServeRequestsFollowTheSeed) {
  const std::string args = "serve " + Scenario("serve-llama3-70b-8xh100.json") + " --requests 400 --format json";
  nlohmann::json first = Json(args + " --seed 7");
  EXPECT_EQ(first, Json(args + " --seed 7"));
  EXPECT_NE(first["ttft"], Json(args + " --seed 8")["ttft"]);
}

TEST(Determinism, ServeSearchIsIdenticalForAnyThreadCount) {
  const std::string args = "serve-search " + Scenario("serve-llama3-70b-8xh100.json") +
                           " --slo ttft_p99=2s,tpot_p99=100ms --requests 200 --format json";
  nlohmann::json one = Json(args + " --threads 1");
  EXPECT_EQ(one, Json(args + " --threads 3"));
  EXPECT_GT(one["counts"]["simulations"].get<int>(), 10);
}

TEST(Determinism, ClusterJobGeneratorFollowsTheSeed) {
  // cluster-131072xb200.json's generated jobs, cut to a day of a few hundred.
  std::ifstream in(Scenario("cluster-131072xb200.json"));
  nlohmann::json doc = nlohmann::json::parse(in);
  doc["generate"]["jobs"] = 400;
  auto write = [&](int seed) {
    doc["generate"]["seed"] = seed;
    const std::string path = ::testing::TempDir() + "determinism_cluster_" + std::to_string(seed) + ".json";
    std::ofstream(path) << doc.dump();
    return path;
  };
  // Paths in the scenario resolve by name from the data root, so the copy
  // may live anywhere.
  const std::string seed1 = write(1), seed2 = write(2);
  nlohmann::json first = Json("cluster " + seed1 + " --format json");
  EXPECT_EQ(first, Json("cluster " + seed1 + " --format json"));
  EXPECT_NE(first["job_list"], Json("cluster " + seed2 + " --format json")["job_list"]);
}

}  // namespace
}  // namespace stacksim::testing
