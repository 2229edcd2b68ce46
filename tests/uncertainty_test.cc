// Uncertainty of simulate's predictions (sim/uncertainty): scenarios whose
// profile is datasheet-only or projected, or whose scale lies beyond the
// validated runs, carry coverage warnings; the committed error table
// (validation/error_table.json) gives the flagship a range around its step.
// Needs no ../shared: the table is part of the repository.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/config/scenario.h"
#include "sim/uncertainty/assessment.h"
#include "tests/run_stacksim.h"

namespace stacksim {
namespace {

const std::string kSource = STACKSIM_SOURCE_DIR;
const std::string kFlagship = kSource + "/scenarios/gpt3-175b-1024xh100.json";

bool Has(const std::vector<std::string>& warnings, const std::string& part) {
  return std::any_of(warnings.begin(), warnings.end(),
                     [&](const std::string& w) { return w.find(part) != std::string::npos; });
}

uncertainty::Assessment AssessFlagship(const config::ScenarioOptions& opts) {
  config::ScenarioConfig s = config::LoadScenario(kFlagship, opts);
  return uncertainty::AssessPrediction(s, 7.0, "analytic", uncertainty::DefaultErrorTablePath());
}

TEST(Uncertainty, DatasheetProfileWarns) {
  auto a = AssessFlagship({});  // h100-sxm-80gb: datasheet
  EXPECT_TRUE(Has(a.warnings, "no measured profile for h100-sxm-80gb")) << ::testing::PrintToString(a.warnings);
  EXPECT_FALSE(Has(a.warnings, "projected"));
  ASSERT_TRUE(a.range);
}

TEST(Uncertainty, ProjectedProfileWarns) {
  config::ScenarioOptions opts;
  opts.profile_path = kSource + "/tests/data/uncertainty/b200-projected.json";
  auto a = AssessFlagship(opts);
  EXPECT_TRUE(Has(a.warnings, "profile b200 is projected from another GPU")) << ::testing::PrintToString(a.warnings);
  EXPECT_FALSE(Has(a.warnings, "no measured profile"));
  // No Blackwell run was validated: the range is borrowed, and says so.
  EXPECT_TRUE(Has(a.warnings, "no validated runs on any blackwell-class GPU"));
  ASSERT_TRUE(a.range);
  EXPECT_NE(a.range->widened.find("all GPUs"), std::string::npos) << a.range->widened;
}

TEST(Uncertainty, MeasuredProfileDoesNotWarnAboutItsKind) {
  config::ScenarioOptions opts;
  opts.profile_path = kSource + "/profiles/h200-sxm-141gb.json";
  auto a = AssessFlagship(opts);
  EXPECT_FALSE(Has(a.warnings, "no measured profile")) << ::testing::PrintToString(a.warnings);
  EXPECT_FALSE(Has(a.warnings, "projected"));
  // Measured, but no published run on an H200 was validated.
  EXPECT_TRUE(Has(a.warnings, "no validated runs on h200-sxm-141gb"));
}

TEST(Uncertainty, GpusBeyondValidatedScaleWarn) {
  config::ScenarioOptions opts;
  opts.overrides = {"gpus=32768", "plan.dp=512", "training.global_batch=8192"};
  auto a = AssessFlagship(opts);
  EXPECT_TRUE(Has(a.warnings, "32768 GPUs is beyond the largest validated run")) << ::testing::PrintToString(a.warnings);
  EXPECT_FALSE(Has(AssessFlagship({}).warnings, "beyond the largest"));
}

TEST(Uncertainty, MissingTableIsAWarningNotAnError) {
  config::ScenarioConfig s = config::LoadScenario(kFlagship, {});
  auto a = uncertainty::AssessPrediction(s, 7.0, "analytic", kSource + "/tests/data/uncertainty/no-such-table.json");
  EXPECT_FALSE(a.range);
  EXPECT_TRUE(Has(a.warnings, "no validation error table"));
}

TEST(UncertaintyCli, FlagshipJsonCarriesARangeAroundTheStep) {
  auto r = testing::Stacksim("simulate " + kFlagship + " --format json");
  ASSERT_EQ(r.status, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  double step = j.at("iteration_s").get<double>();
  const auto& u = j.at("uncertainty");
  EXPECT_LT(u.at("low_s").get<double>(), step);
  EXPECT_GT(u.at("high_s").get<double>(), step);
  EXPECT_GE(u.at("n").get<int>(), 5);
  EXPECT_FALSE(u.at("basis").get<std::string>().empty());
  EXPECT_TRUE(u.at("widened").is_string());
  ASSERT_TRUE(j.at("warnings").is_array());
  bool datasheet = false;
  for (const auto& w : j.at("warnings")) datasheet |= w.get<std::string>().find("no measured profile") != std::string::npos;
  EXPECT_TRUE(datasheet);
}

TEST(UncertaintyCli, TextReportPrintsTheRangeAndWarnings) {
  auto r = testing::Stacksim("simulate " + kFlagship + " --profile " + kSource +
                             "/tests/data/uncertainty/b200-projected.json");
  ASSERT_EQ(r.status, 0) << r.err;
  size_t step = r.out.find("step time");
  size_t likely = r.out.find("likely");
  ASSERT_NE(step, std::string::npos);
  ASSERT_NE(likely, std::string::npos);
  EXPECT_LT(step, likely);
  EXPECT_NE(r.out.find("coverage warnings"), std::string::npos);
  EXPECT_NE(r.out.find("projected from another GPU"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace stacksim
