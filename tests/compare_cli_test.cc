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
  // Nothing fits anywhere: status 2, the reason printed.
  r = Stacksim("compare --model llama3.1-405b --tokens 1T --global-batch 64 --cluster dgx-a100-40gb:8");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find("out of GPU memory"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace stacksim::testing
