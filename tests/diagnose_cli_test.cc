// `stacksim diagnose` as a user runs it: JSON shape, the split adding up to the
// step, text sections, and bad input.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "tests/run_stacksim.h"

namespace stacksim::testing {
namespace {

const std::string kScenario = std::string(STACKSIM_SOURCE_DIR) + "/scenarios/llama3-8b-8xh100.json";

TEST(DiagnoseCli, JsonIsOneObjectWhoseLayerGapsAddUpToTheStep) {
  CmdResult r = Stacksim("diagnose " + kScenario + " --format json");
  ASSERT_EQ(r.status, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j.is_object());
  for (const char* key : {"scenario", "plan", "ideal_step_s", "step_s", "mfu", "step_class", "layers", "ops", "findings"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  double sum = j["ideal_step_s"].get<double>();
  ASSERT_EQ(j["layers"].size(), 5u);
  for (const auto& l : j["layers"]) sum += l["gap_s"].get<double>();
  EXPECT_NEAR(sum, j["step_s"].get<double>(), 1e-6);
  EXPECT_LT(j["ideal_step_s"].get<double>(), j["step_s"].get<double>());
  // The same step as simulate reports.
  CmdResult s = Stacksim("simulate " + kScenario + " --format json");
  ASSERT_EQ(s.status, 0) << s.err;
  EXPECT_NEAR(nlohmann::json::parse(s.out)["iteration_s"].get<double>(), j["step_s"].get<double>(), 1e-9);
  // Simulated findings come first, by gain.
  double previous = 1e30;
  bool simulated_done = false;
  for (const auto& f : j["findings"]) {
    if (f["status"] != "simulated") {
      simulated_done = true;
      EXPECT_TRUE(f.contains("reason"));
      continue;
    }
    EXPECT_FALSE(simulated_done) << "a simulated finding after an unsimulated one";
    EXPECT_LE(f["gain_s"].get<double>(), previous);
    previous = f["gain_s"].get<double>();
    EXPECT_NEAR(f["predicted_step_s"].get<double>() + f["gain_s"].get<double>(), j["step_s"].get<double>(), 1e-6);
  }
}

TEST(DiagnoseCli, TextWalksTheFiveLayersAndRanksRemedies) {
  CmdResult r = Stacksim("diagnose " + kScenario);
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* s : {"1 model definition", "2 parallelization", "3 runtime orchestration", "4 compilation",
                        "5 hardware", "--stragglers", "remedies, re-simulated, ranked by gain", "roofline"}) {
    EXPECT_NE(r.out.find(s), std::string::npos) << s;
  }
}

TEST(DiagnoseCli, BadInputExitsWithTwo) {
  CmdResult r = Stacksim("diagnose " + kScenario + " --set plan.tp=3");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("tp"), std::string::npos) << r.err;
  EXPECT_EQ(Stacksim("diagnose /nonexistent.json").status, 2);
}

}  // namespace
}  // namespace stacksim::testing
