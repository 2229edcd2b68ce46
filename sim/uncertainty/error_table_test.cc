#include "sim/uncertainty/error_table.h"

#include <gtest/gtest.h>

#include "sim/util/error.h"

namespace stacksim::uncertainty {
namespace {

ErrorTable OneRun() {
  ErrorTable t;
  t.validation_file = "training_runs.json";
  t.validation_runs = 3;
  t.stacksim_commit = "abc";
  t.generated = "2026-11-30T00:00:00Z";
  ErrorTableRun r;
  r.id = "run-a";
  r.features.gpu = "h100-sxm-80gb";
  r.features.gpu_kind = "datasheet";
  r.features.gpu_class = "hopper";
  r.features.gpus = 1024;
  r.features.scale_band = "513-4096";
  r.features.parallelism = "tp+pp+zero1";
  r.features.family = "tp/pp";
  r.features.precision = "bf16";
  r.features.schedule = "interleaved";
  r.features.recompute = "selective";
  r.features.attention = "mha-gqa";
  r.features.offload = "none";
  r.features.seq_len = 2048;
  r.features.framework = "Megatron-Core";
  r.measured_s = 2.0;
  r.predicted_s = 1.8;
  r.error = -0.1;
  t.runs.push_back(r);
  return t;
}

TEST(ErrorTable, RoundTripsThroughJson) {
  ErrorTable t = ParseErrorTable(ErrorTableToJson(OneRun()), "t.json");
  ASSERT_EQ(t.runs.size(), 1u);
  EXPECT_EQ(t.stacksim_commit, "abc");
  EXPECT_EQ(t.runs[0].features.parallelism, "tp+pp+zero1");
  EXPECT_EQ(t.runs[0].features.framework, "Megatron-Core");
  EXPECT_EQ(t.runs[0].features.gpus, 1024);
  EXPECT_DOUBLE_EQ(t.runs[0].error, -0.1);
}

TEST(ErrorTable, RangeCalibrationRoundTripsAndIsOptional) {
  ErrorTable t = OneRun();
  EXPECT_FALSE(ParseErrorTable(ErrorTableToJson(t), "t.json").calibration.has_value());
  t.calibration = RangeCalibration{0.19, 80.2, 59.2, 79.4, 262};
  ErrorTable back = ParseErrorTable(ErrorTableToJson(t), "t.json");
  ASSERT_TRUE(back.calibration.has_value());
  EXPECT_DOUBLE_EQ(back.calibration->margin, 0.19);
  EXPECT_DOUBLE_EQ(back.calibration->refit_coverage_pct, 79.4);
  EXPECT_EQ(back.calibration->runs, 262);
  nlohmann::json j = ErrorTableToJson(t);
  j["range_calibration"]["margin"] = -0.1;  // a range never narrows
  try {
    ParseErrorTable(j, "t.json");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("range_calibration.margin"), std::string::npos) << e.what();
  }
}

TEST(ErrorTable, UnknownKeysAndInconsistentBandsAreErrors) {
  nlohmann::json j = ErrorTableToJson(OneRun());
  j["runs"][0]["typo"] = 1;
  EXPECT_THROW(ParseErrorTable(j, "t.json"), InputError);
  j = ErrorTableToJson(OneRun());
  j["runs"][0]["scale_band"] = "<=64";
  try {
    ParseErrorTable(j, "t.json");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("runs[0].scale_band"), std::string::npos) << e.what();
  }
  j = ErrorTableToJson(OneRun());
  j["schema"] = "other/1";
  EXPECT_THROW(ParseErrorTable(j, "t.json"), InputError);
}

TEST(ErrorTable, BandsAndClasses) {
  EXPECT_EQ(ScaleBand(64), "<=64");
  EXPECT_EQ(ScaleBand(65), "65-512");
  EXPECT_EQ(ScaleBand(4096), "513-4096");
  EXPECT_EQ(ScaleBand(4097), ">4096");
  EXPECT_EQ(GpuClass("h800-sxm-80gb"), "hopper");
  EXPECT_EQ(GpuClass("h200-sxm-141gb"), "hopper");
  EXPECT_EQ(GpuClass("a100-sxm-40gb"), "ampere");
  EXPECT_EQ(GpuClass("gb200"), "blackwell");
  EXPECT_EQ(GpuClass("mi300x"), "cdna3");
  EXPECT_EQ(GpuClass("mi325x"), "cdna3");
  EXPECT_EQ(GpuClass("tpu-v5p"), "tpu-v5p");  // unknown names are their own class
}

}  // namespace
}  // namespace stacksim::uncertainty
