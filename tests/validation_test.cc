// Validation against published training runs (shared/validation, schema
// stacksim.validation.training/1): every run is listed, runs that cannot be
// modelled carry a reason, and the mean absolute error over the scored dense
// runs stays within the project's target.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/validation_file.h"

namespace {

using stacksim::testing::ValidationFile;

TEST(Validation, PublishedRunsArePredictedWithinTarget) {
  std::string file = ValidationFile();
  if (file.empty()) GTEST_SKIP() << "shared/validation/training_runs.json is not next to this checkout";
  std::string cmd = std::string(STACKSIM_BINARY) + " validate " + file + " --format json";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  ASSERT_EQ(pclose(p), 0);
  auto j = nlohmann::json::parse(out);
  auto input = nlohmann::json::parse(std::ifstream(file));
  ASSERT_EQ(j.at("runs").size(), input.at("runs").size());  // none dropped
  for (const auto& r : j.at("runs")) {
    EXPECT_TRUE(r.contains("predicted_iteration_s") || !r.at("error").get<std::string>().empty()) << r.dump();
  }
  EXPECT_GE(j.at("scored_predicted").get<int>(), 125);
  // The target for dense runs (issue 2); MoE runs are tracked, with a looser guard.
  EXPECT_LE(j.at("mape_dense_pct").get<double>(), 15.0);
  EXPECT_GE(j.at("scored_dense_predicted").get<int>(), 120);
  EXPECT_LE(j.at("mape_pct").get<double>(), 16.0);
}

}  // namespace
