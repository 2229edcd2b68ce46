#include "sim/cost/comm_overlap.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "sim/util/error.h"
#include "tests/fixtures.h"

namespace stacksim::cost {
namespace {

std::string Write(const std::string& name, const std::string& text) {
  const std::string path = (std::filesystem::temp_directory_path() / name).string();
  std::ofstream(path) << text;
  return path;
}

TEST(CommOverlap, ReadsTheFittedValueAndItsLeaveOneSourceOutError) {
  const std::string path = Write("stacksim_overlap_ok.json", R"({"schema": "stacksim.fitted_constants/1",
    "about": "x", "allocator_cache_fraction": {"value": 0.05},
    "overlap_comm_sms": {"value": 12, "fitted_by": "stacksim validate a.json --fit-overlap-sms f.json",
      "date": "2026-12-03", "what": "w", "fitted_on": "a.json", "fitted_mape_pct": 8.5,
      "grid": [{"sms": 0, "mape_pct": 9.0}],
      "leave_one_source_out": {"mape_pct": 8.9, "groups": []}}})");
  const FittedCommOverlap f = LoadFittedCommOverlap(path);
  EXPECT_EQ(f.sms, 12);
  EXPECT_DOUBLE_EQ(f.loso_mape_pct, 8.9);
  EXPECT_NE(f.source.find("--fit-overlap-sms"), std::string::npos);
  EXPECT_NE(f.source.find("2026-12-03"), std::string::npos);
}

TEST(CommOverlap, AFileWithoutTheConstantTakesNothing) {
  const std::string path = Write("stacksim_overlap_none.json", R"({"schema": "stacksim.fitted_constants/1"})");
  EXPECT_EQ(LoadFittedCommOverlap(path).sms, 0);
  EXPECT_EQ(LoadFittedCommOverlap(path).source, "");
}

TEST(CommOverlap, BadEntriesNameTheFileAndKey) {
  const std::string negative = Write("stacksim_overlap_neg.json", R"({"schema": "stacksim.fitted_constants/1",
    "overlap_comm_sms": {"value": -2, "fitted_by": "c", "date": "d"}})");
  try {
    LoadFittedCommOverlap(negative);
    FAIL() << "a negative SM count was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("overlap_comm_sms.value"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(negative), std::string::npos) << e.what();
  }
  const std::string unknown = Write("stacksim_overlap_key.json", R"({"schema": "stacksim.fitted_constants/1",
    "overlap_comm_sms": {"value": 2, "fitted_by": "c", "date": "d", "typo": 1}})");
  EXPECT_THROW(LoadFittedCommOverlap(unknown), InputError);
  const std::string schema = Write("stacksim_overlap_schema.json", R"({"schema": "other"})");
  EXPECT_THROW(LoadFittedCommOverlap(schema), InputError);
}

TEST(CommOverlap, ThePlanDecidesFirstAndSmsHeldAllStepTakeNoMore) {
  const config::ProfileConfig profile = testing::RoundProfile();  // 100 SMs
  config::PlanConfig plan;
  plan.overlap_comm_sms = 16;
  EXPECT_EQ(OverlapCommSms(plan, profile), 16);
  plan.overlap_comm_sms = 0;
  EXPECT_EQ(OverlapCommSms(plan, profile), 0);
  plan.overlap_comm_sms = 500;  // never every SM
  EXPECT_EQ(OverlapCommSms(plan, profile), 99);
  plan.overlap_comm_sms = 16;
  plan.comm_sms = 20;  // DualPipe-style reserved SMs already hold the communication
  EXPECT_EQ(OverlapCommSms(plan, profile), 0);
}

}  // namespace
}  // namespace stacksim::cost
