// `stacksim search` as a user runs it: output shapes, errors, and the MPI run.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include <nlohmann/json.hpp>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/run_stacksim.h"

namespace stacksim::testing {
namespace {

const std::string kScenario = std::string(STACKSIM_SOURCE_DIR) + "/scenarios/llama3-8b-8xh100.json";

nlohmann::json Json(const CmdResult& r) {
  EXPECT_EQ(r.status, 0) << r.err;
  return nlohmann::json::parse(r.out);
}

TEST(SearchCli, JsonIsOneObjectWithTheRankingBestFirst) {
  nlohmann::json j = Json(Stacksim("search " + kScenario + " --format json --top 6"));
  ASSERT_TRUE(j.is_object());
  ASSERT_EQ(j["plans"].size(), 6u);
  double previous = 0;
  int rank = 0;
  for (const auto& p : j["plans"]) {
    EXPECT_EQ(p["rank"], ++rank);
    EXPECT_GE(p["step_time_s"].get<double>(), previous);
    previous = p["step_time_s"].get<double>();
    for (const char* key : {"tp", "pp", "dp", "cp", "ep", "vp", "micro_batch", "schedule", "recompute", "sharding",
                            "offload", "sequence_parallel", "nvlink_domain", "tokens_per_s", "mfu", "memory_peak_bytes",
                            "memory_headroom_bytes", "gap_to_best_pct", "gap_to_previous_pct", "plan"}) {
      EXPECT_TRUE(p.contains(key)) << key;
    }
    EXPECT_EQ(p["tp"].get<int>() * p["pp"].get<int>() * p["dp"].get<int>() * p["cp"].get<int>(), 8);
    EXPECT_GT(p["memory_headroom_bytes"].get<double>(), 0);
    EXPECT_LE(p["step_time_bound_s"].get<double>(), p["step_time_s"].get<double>());
    // The plan object reads back as a scenario plan.
    EXPECT_EQ(p["plan"]["tp"], p["tp"]);
  }
  EXPECT_EQ(j["plans"][0]["gap_to_best_pct"].get<double>(), 0.0);
  const auto& c = j["pruning"];
  EXPECT_EQ(c["enumerated"].get<int64_t>(),
            c["invalid"].get<int64_t>() + c["equivalent"].get<int64_t>() + c["out_of_memory"].get<int64_t>() +
                c["host_memory"].get<int64_t>() + c["bounded"].get<int64_t>() + c["evaluated"].get<int64_t>());
  int64_t by_key = 0;
  for (const auto& [key, n] : c["invalid_by_key"].items()) by_key += n.get<int64_t>();
  EXPECT_EQ(by_key, c["invalid"].get<int64_t>());
  EXPECT_EQ(j["objective"], "time");
  EXPECT_EQ(j["gpu_counts"], nlohmann::json::array({8}));
}

TEST(SearchCli, CsvHasAHeaderAndOneLinePerPlan) {
  CmdResult r = Stacksim("search " + kScenario + " --format csv --top 4");
  ASSERT_EQ(r.status, 0) << r.err;
  std::istringstream in(r.out);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line.rfind("rank,gpus,tp,pp,dp,cp,ep,vp,micro_batch,schedule,", 0), 0u) << line;
  const size_t columns = std::count(line.begin(), line.end(), ',');
  int rows = 0;
  while (std::getline(in, line)) {
    ++rows;
    EXPECT_EQ(static_cast<size_t>(std::count(line.begin(), line.end(), ',')), columns) << line;
    EXPECT_EQ(line.rfind(std::to_string(rows) + ",8,", 0), 0u) << line;
  }
  EXPECT_EQ(rows, 4);
}

TEST(SearchCli, TextIsATable) {
  CmdResult r = Stacksim("search " + kScenario + " --top 3");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("NVLink domain"), std::string::npos);
  EXPECT_NE(r.out.find("best"), std::string::npos);
  EXPECT_NE(r.out.find("bounded (cannot beat the top 3)"), std::string::npos);
}

TEST(SearchCli, GpuRangeSearchesWholeNodes) {
  nlohmann::json j = Json(Stacksim("search " + kScenario + " --gpus 8..16 --objective cost --format json --top 5"));
  EXPECT_EQ(j["gpu_counts"], nlohmann::json::array({8, 16}));
  EXPECT_EQ(j["objective_unit"], "USD per 1M tokens");
  EXPECT_GT(j["economics"]["gpu_hour_usd"].get<double>(), 0);
  double previous = 0;
  for (const auto& p : j["plans"]) {
    EXPECT_TRUE(p["gpus"] == 8 || p["gpus"] == 16);
    EXPECT_GE(p["objective"].get<double>(), previous);
    previous = p["objective"].get<double>();
    EXPECT_DOUBLE_EQ(p["objective"].get<double>(), p["cost_per_mtok_usd"].get<double>());
  }
}

TEST(SearchCli, EnergyUsesTheGpuPower) {
  nlohmann::json j = Json(Stacksim("search " + kScenario + " --objective energy --format json --top 2"));
  EXPECT_EQ(j["economics"]["gpu_watts"], 700);
  const auto& p = j["plans"][0];
  // kWh per million tokens = W x GPUs x step / 3.6e6 / (tokens / 1e6).
  const double expected = 700.0 * 8 * p["step_time_s"].get<double>() / 3.6e6 /
                          (j["tokens_per_step"].get<double>() / 1e6);
  EXPECT_NEAR(p["energy_per_mtok_kwh"].get<double>(), expected, 1e-9 * expected);
}

TEST(SearchCli, BadInputIsExitStatusTwoWithAMessage) {
  CmdResult r = Stacksim("search " + kScenario + " --gpus 3..5");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--gpus"), std::string::npos) << r.err;
  r = Stacksim("search " + kScenario + " --objective speed");
  EXPECT_EQ(r.status, 2);
  r = Stacksim("search " + kScenario + " --top 0");
  EXPECT_EQ(r.status, 2);
  r = Stacksim("search /no/such/scenario.json");
  EXPECT_EQ(r.status, 2);
  // H800 has no price in economics/gpus.json: the cost objective names the field to add.
  r = Stacksim("search " + kScenario + " --set topology=h800-node --objective cost");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("gpu_hour_usd"), std::string::npos) << r.err;
  r = Stacksim("search " + kScenario + " --set topology=h800-node --objective cost --gpu-hour-usd 4 --top 1");
  EXPECT_EQ(r.status, 0) << r.err;
}

// search --format json: every ranked plan has its likely range, coverage
// warnings and plan family, and keeps the memory reserve; pessimistic ranks
// by the range's high end.
TEST(SearchCli, EveryRankedPlanCarriesItsUncertaintyAndReserve) {
  nlohmann::json expected = Json(Stacksim("search " + kScenario + " --format json --top 5"));
  nlohmann::json pessimistic = Json(Stacksim("search " + kScenario + " --format json --top 5 --rank pessimistic"));
  EXPECT_EQ(expected["ranking"], "expected");
  EXPECT_EQ(pessimistic["ranking"], "pessimistic");
  EXPECT_TRUE(expected["gap_to_next_plan"].is_string());
  for (const nlohmann::json* j : {&expected, &pessimistic}) {
    double previous = 0;
    ASSERT_EQ((*j)["plans"].size(), 5u);
    for (const auto& p : (*j)["plans"]) {
      ASSERT_TRUE(p["uncertainty"].is_object()) << p.dump();
      const double low = p["uncertainty"]["low_s"], high = p["uncertainty"]["high_s"];
      EXPECT_LT(low, high);
      EXPECT_FALSE(p["uncertainty"]["basis"].get<std::string>().empty());
      EXPECT_DOUBLE_EQ(p["pessimistic_step_s"].get<double>(), high);
      ASSERT_TRUE(p["warnings"].is_array());
      EXPECT_TRUE(p["plan_family"]["name"].is_string());
      EXPECT_GE(p["memory_reserve_bytes"].get<double>(), 1024.0 * 1024 * 1024);
      EXPECT_GE(p["memory_headroom_bytes"].get<double>(), p["memory_reserve_bytes"].get<double>());
      const double key = j == &pessimistic ? high : p["step_time_s"].get<double>();
      EXPECT_GE(key, previous);
      previous = key;
    }
  }
  // CSV carries the range too.
  CmdResult csv = Stacksim("search " + kScenario + " --format csv --top 2");
  ASSERT_EQ(csv.status, 0) << csv.err;
  EXPECT_NE(csv.out.find("likely_low_s,likely_high_s,pessimistic_step_s,plan_family"), std::string::npos);
  // Text says how plans were ranked and what the gap means.
  CmdResult text = Stacksim("search " + kScenario + " --top 3");
  ASSERT_EQ(text.status, 0) << text.err;
  for (const char* part : {"likely (s)", "ranked by  the predicted step", "gap        Plan", "reserve    max(1 GiB"}) {
    EXPECT_NE(text.out.find(part), std::string::npos) << part << "\n" << text.out;
  }
}

// Out of memory is an answer: exit status 3 (search: no plan keeps the
// reserve; simulate: the plan does not fit), output printed as usual.
TEST(SearchCli, OutOfMemoryIsExitStatusThree) {
  CmdResult r = Stacksim("search " + kScenario + " --top 2 --min-headroom 79GiB --format json");
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_TRUE(nlohmann::json::parse(r.out)["plans"].empty());
  EXPECT_NE(r.err.find("no plan"), std::string::npos) << r.err;
  r = Stacksim("search " + kScenario + " --min-headroom lots");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--min-headroom"), std::string::npos) << r.err;
  r = Stacksim("simulate " + kScenario + " --set plan.recompute=none --format json");
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_NE(r.out.find("memory_peak_bytes"), std::string::npos);
}

// Progress on standard error only (a pipe: a first and a last line), ending
// with every candidate settled; --quiet prints none; the ranking is the same.
TEST(SearchCli, ProgressGoesToStandardErrorAndEndsWithEveryPlanSettled) {
  CmdResult r = Stacksim("search " + kScenario + " --format json --top 3");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("search progress: 0/"), std::string::npos) << r.err;
  const size_t last = r.err.rfind("search progress: ");
  ASSERT_NE(last, std::string::npos);
  const std::string line = r.err.substr(last);
  const size_t slash = line.find('/');
  const std::string done = line.substr(17, slash - 17);
  const std::string total = line.substr(slash + 1, line.find(' ', slash) - slash - 1);
  EXPECT_EQ(done, total) << line;
  EXPECT_EQ(r.out.find("progress"), std::string::npos);
  CmdResult quiet = Stacksim("search " + kScenario + " --format json --top 3 --quiet");
  ASSERT_EQ(quiet.status, 0) << quiet.err;
  EXPECT_EQ(quiet.err, "");
  EXPECT_EQ(Json(quiet)["plans"], Json(r)["plans"]);
}

#ifdef STACKSIM_MPIEXEC
// Three local MPI ranks split the replays and print the same ranking, with
// the same pruning counts, as one process.
TEST(SearchCli, MpiRanksGiveTheSingleProcessResult) {
  const std::string args = "search " + kScenario + " --format json --top 20 --batch 4 --gpus 8..16";
  CmdResult one = Stacksim(args);
  ASSERT_EQ(one.status, 0) << one.err;
  std::string launcher = std::string(STACKSIM_MPIEXEC) + " --oversubscribe " +
                         (geteuid() == 0 ? "--allow-run-as-root " : "") + "-np 3 " + STACKSIM_BINARY;
  const std::string err_file = ::testing::TempDir() + "stacksim_mpi_err_" + std::to_string(getpid());
  std::string cmd = launcher + " " + args + " 2>" + err_file;
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int status = pclose(p);
  std::ifstream e(err_file);
  std::stringstream err;
  err << e.rdbuf();
  std::remove(err_file.c_str());
  ASSERT_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 0) << out << err.str();
  EXPECT_EQ(nlohmann::json::parse(out), nlohmann::json::parse(one.out));
}
#endif

}  // namespace
}  // namespace stacksim::testing
