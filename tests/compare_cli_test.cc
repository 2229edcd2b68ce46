// `stacksim compare` as a user runs it: the table, the JSON, exit statuses.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "tests/run_stacksim.h"

namespace stacksim::testing {
namespace {

const std::string kScenario = std::string(STACKSIM_SOURCE_DIR) + "/scenarios/llama3-8b-8xh100.json";

TEST(CompareCli, TextPutsClustersSideBySide) {
  CmdResult r = Stacksim("compare --model gpt-1.7b --seq-len 2048 --global-batch 64 --tokens 300B "
                         "--cluster dgx-h100:8 --cluster dgx-a100:8");
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* row : {"dgx-h100:8", "dgx-a100:8", "step time", "tokens/s", "MFU", "days", "GPU-hours", "cost",
                          "GPU energy", "best       dgx-h100:8", "prices"}) {
    EXPECT_NE(r.out.find(row), std::string::npos) << row << "\n" << r.out;
  }
}

TEST(CompareCli, ScenarioGivesModelAndBatchAndJsonNamesTheBest) {
  CmdResult r = Stacksim("compare --scenario " + kScenario +
                         " --tokens 1T --cluster dgx-h100:8 --cluster hgx-h200:8 --format json");
  ASSERT_EQ(r.status, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["model"], "Llama 3 8B");
  EXPECT_EQ(j["tokens"], 1'000'000'000'000);
  ASSERT_EQ(j["clusters"].size(), 2u);
  // The H200 has the H100's compute and more, faster memory: it is no slower.
  const double h100 = j["clusters"][0]["days"], h200 = j["clusters"][1]["days"];
  EXPECT_LE(h200, h100 * 1.0001);
  EXPECT_EQ(j["best"], h200 < h100 ? "hgx-h200:8" : "dgx-h100:8");
}

// Rail-only against rail-optimized: the same 1,024 H100s, two fabrics. The
// scenario's compare block gives the tokens and clusters; each best plan
// is replayed with SimGrid too.
TEST(CompareCli, FabricsOfTheSameGpusFromTheScenariosCompareBlock) {
  CmdResult r = Stacksim("compare --scenario " + std::string(STACKSIM_SOURCE_DIR) +
                         "/scenarios/compare-rail-only-vs-rail-optimized-1024xh100.json --network simgrid "
                         "--threads 2 --format json");
  ASSERT_EQ(r.status, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["clusters"].size(), 2u);
  EXPECT_EQ(j["tokens"], 300'000'000'000);
  ASSERT_EQ(j["contention"].size(), 2u);
  EXPECT_EQ(j["contention"][0]["cluster"], "dgx-h100:1024");
  EXPECT_EQ(j["contention"][1]["cluster"], "dgx-h100-rail-only:1024");
  for (const auto& c : j["contention"]) {
    EXPECT_EQ(c["network"], "simgrid");
    // The flow model replays the plan the analytic search chose: it may add
    // contention, never take away more than rounding.
    EXPECT_GT(c["step_s"].get<double>(), 0.9 * c["analytic_step_s"].get<double>());
  }
  // The plans the rail-only fabric runs best keep each group on one rail:
  // it is no slower than with the spine.
  const double fat = j["clusters"][0]["days"], rail = j["clusters"][1]["days"];
  EXPECT_NEAR(rail, fat, 0.01 * fat);
  // ... with contention too: the CP groups' copies are the job's real CP
  // groups, each on one node (made-up copies straddling nodes put 7.28 s
  // against 5.71 s here).
  const double fat_flow = j["contention"][0]["step_s"], rail_flow = j["contention"][1]["step_s"];
  EXPECT_NEAR(rail_flow, fat_flow, 0.02 * fat_flow);
}

TEST(CompareCli, WithoutTokensOrClustersNamesTheFlag) {
  CmdResult r = Stacksim("compare --scenario " + kScenario + " --cluster dgx-h100:8");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--tokens"), std::string::npos) << r.err;
}

TEST(CompareCli, BadInputIsExitStatusTwoWithAMessage) {
  CmdResult r = Stacksim("compare --model gpt-1.7b --tokens 1T --cluster dgx-h100");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--cluster"), std::string::npos) << r.err;
  r = Stacksim("compare --model gpt-1.7b --tokens lots --cluster dgx-h100:8");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--tokens"), std::string::npos) << r.err;
  r = Stacksim("compare --model gpt-1.7b --scenario " + kScenario + " --tokens 1T --cluster dgx-h100:8");
  EXPECT_EQ(r.status, 2);
  r = Stacksim("compare --model no-such-model --tokens 1T --cluster dgx-h100:8");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("no-such-model"), std::string::npos) << r.err;
  // Nothing fits anywhere: an answer, not bad input: status 3, the reason printed.
  r = Stacksim("compare --model llama3.1-405b --tokens 1T --global-batch 64 --cluster dgx-a100-40gb:8");
  EXPECT_EQ(r.status, 3);
  EXPECT_NE(r.out.find("out of GPU memory"), std::string::npos) << r.out;
}

// Every ranked plan of every cluster carries its likely range and coverage
// warnings; the comparison says whether the winner holds under the other
// reading of the steps.
TEST(CompareCli, JsonGivesEveryRankedPlanItsUncertainty) {
  for (const char* rank : {"expected", "pessimistic"}) {
    CmdResult r = Stacksim(std::string("compare --model gpt-1.7b --seq-len 2048 --global-batch 64 --tokens 300B "
                                       "--cluster dgx-h100:8 --cluster dgx-a100:8 --format json --rank ") +
                           rank);
    ASSERT_EQ(r.status, 0) << r.err;
    nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["ranking"], rank);
    EXPECT_TRUE(j["winner_changes"].is_boolean());
    EXPECT_FALSE(j["winner_note"].get<std::string>().empty());
    for (const auto& c : j["clusters"]) {
      ASSERT_GE(c["plans"].size(), 2u);
      EXPECT_TRUE(c["gap_to_next_plan"].is_string());
      EXPECT_TRUE(c["best_under_other_reading"].is_object());
      for (const auto& p : c["plans"]) {
        ASSERT_TRUE(p["uncertainty"].is_object()) << p.dump();
        EXPECT_LT(p["uncertainty"]["low_s"].get<double>(), p["uncertainty"]["high_s"].get<double>());
        EXPECT_TRUE(p["warnings"].is_array());
        EXPECT_TRUE(p["plan_family"]["validated"].is_boolean());
        EXPECT_GE(p["memory_headroom_bytes"].get<double>(), p["memory_reserve_bytes"].get<double>());
        EXPECT_GE(p["memory_reserve_bytes"].get<double>(), 1024.0 * 1024 * 1024);
      }
    }
  }
}

}  // namespace
}  // namespace stacksim::testing
