// Validation of the serving simulator against published measurements
// (validation/serving_runs.json, schema stacksim.validation.serving/1; each
// entry cites its source): every entry is listed, entries that cannot be
// modelled carry a reason, and the mean absolute error over the scored
// entries stays under a ceiling set just above what was measured.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/run_stacksim.h"

namespace {

TEST(ServeValidation, PublishedMeasurementsArePredictedWithinCeiling) {
  std::string file = std::string(STACKSIM_SOURCE_DIR) + "/validation/serving_runs.json";
  if (!std::filesystem::exists(file)) GTEST_SKIP() << "validation/serving_runs.json is not in this checkout";
  stacksim::testing::CmdResult run = stacksim::testing::Stacksim("serve-validate " + file + " --format json");
  ASSERT_EQ(run.status, 0) << run.err;
  auto j = nlohmann::json::parse(run.out);
  auto input = nlohmann::json::parse(std::ifstream(file));
  ASSERT_EQ(j.at("runs").size(), input.at("runs").size());  // none dropped
  for (const auto& r : j.at("runs")) {
    EXPECT_TRUE(r.contains("metrics") || !r.at("error").get<std::string>().empty()) << r.dump();
  }
  // Measured: 32.2% over 52 metrics of 32 of the 34 scored entries
  // (throughput 19.0%, TTFT 60.3%, TPOT 26.8%, e2e 34.8%), after fp8 serving
  // stopped paying training's per-GEMM weight cast (52.5% before) and
  // closed loops became one simulation (NIM c5/c25 now scored). The
  // ceilings sit a little above that; nothing was fitted to get there.
  // They guard against regressions, they are not a target (docs/serve.md).
  EXPECT_GE(j.at("scored_predicted").get<int>(), 32);
  EXPECT_LE(j.at("overall").at("mape_pct").get<double>(), 34.0);
  EXPECT_LE(j.at("by_metric").at("output_tokens_per_s").at("mape_pct").get<double>(), 23.0);
}

}  // namespace
