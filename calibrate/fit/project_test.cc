#include "calibrate/fit/fit_profile.h"

#include <gtest/gtest.h>

#include "sim/config/profile.h"
#include "sim/util/json_reader.h"
#include "tests/input_error.h"

namespace stacksim::calibrate {
namespace {

using nlohmann::json;
using testing::ErrorFrom;

const std::string kSourceDir = STACKSIM_SOURCE_DIR;

json Measured() {
  return FitProfile({kSourceDir + "/tests/data/calibrate/h200", kSourceDir + "/profiles/h200-sxm-141gb.json", false})
      .profile;
}

json Profile(const std::string& name) { return ReadJsonFile(kSourceDir + "/profiles/" + name + ".json"); }

bool StartsWith(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

TEST(ProjectProfile, KeepsMeasuredEfficienciesOnTheTargetsPeaksAndBandwidth) {
  json measured = Measured();
  json h100 = Profile("h100-sxm-80gb");
  json p = ProjectProfile(measured, h100, "h200-measured", "h100-sxm-80gb");
  EXPECT_EQ(p["kind"], "projected");
  EXPECT_EQ(p["name"], "h100-sxm-80gb");
  // Compute-bound terms: the measured efficiencies.
  for (const char* prec : {"bf16", "fp16", "tf32", "fp8"}) {
    EXPECT_EQ(p["gemm"]["max_efficiency"][prec]["value"], measured["gemm"]["max_efficiency"][prec]["value"]) << prec;
  }
  EXPECT_EQ(p["gemm"]["max_efficiency"]["bf16"]["value"], 0.725);  // not H100's 0.715
  EXPECT_EQ(p["gemm"]["tile"]["value"], measured["gemm"]["tile"]["value"]);
  EXPECT_EQ(p["gemm"]["k_overhead"]["value"], measured["gemm"]["k_overhead"]["value"]);
  EXPECT_EQ(p["attention"]["own_fwd_efficiency"]["value"], 0.376);  // our kernel, measured
  // FlashAttention-2 proper was not measured there: the H100's own.
  EXPECT_EQ(p["attention"]["flash2_fwd_efficiency"], h100["attention"]["flash2_fwd_efficiency"]);
  // Not measured on the H200 run (a datasheet fallback there): the H100's own value, not the H200's.
  EXPECT_EQ(p["attention"]["fwd_efficiency"], h100["attention"]["fwd_efficiency"]);
  // Memory-bound and launch terms: measured efficiency on the target's bandwidth.
  EXPECT_EQ(p["copy_efficiency"]["value"], 0.865);
  EXPECT_EQ(p["kernel_launch"]["value"], measured["kernel_launch"]["value"]);
  // The target's own hardware, with its sources.
  for (const char* key : {"sm_count", "hbm_capacity", "hbm_bandwidth", "peak_flops", "host_bandwidth", "collectives"}) {
    EXPECT_EQ(p[key], h100[key]) << key;
  }
  EXPECT_EQ(p["hbm_bandwidth"]["value"], "3350 GB/s");
  std::string src = p["gemm"]["max_efficiency"]["bf16"]["source"];
  EXPECT_TRUE(StartsWith(src, "projected from h200-measured (measured on NVIDIA H200")) << src;
  EXPECT_TRUE(StartsWith(p["copy_efficiency"]["source"].get<std::string>(), "projected from h200-measured ("));
  std::string prov = p["provenance"];
  EXPECT_TRUE(prov.find("Measured and projected: gemm.tile") != std::string::npos) << prov;
  EXPECT_TRUE(prov.find("From h100-sxm-80gb's datasheet profile") != std::string::npos) << prov;

  config::ProfileConfig parsed = config::ParseProfile(JsonNode(p, "projected.json", ""));
  EXPECT_EQ(parsed.kind, config::ProfileKind::kProjected);
  // The simulator's memory bandwidth is the H100's HBM at the measured copy efficiency.
  EXPECT_DOUBLE_EQ(parsed.hbm_bandwidth.value.value * parsed.copy_efficiency.value, 3350e9 * 0.865);
  EXPECT_DOUBLE_EQ(parsed.Peak(config::Precision::kBf16)->value, 989.4e12);
}

TEST(ProjectProfile, PrecisionTheTargetLacksIsNotProjected) {
  json a100 = Profile("a100-sxm-80gb");
  json p = ProjectProfile(Measured(), a100, "h200-measured", "a100-sxm-80gb");
  EXPECT_FALSE(p["gemm"]["max_efficiency"].contains("fp8"));
  EXPECT_TRUE(p["peak_flops"]["fp8"].is_null());
  EXPECT_EQ(p["gemm"]["max_efficiency"]["bf16"]["value"], 0.725);
  EXPECT_NE(p["provenance"].get<std::string>().find("fp8 (a100-sxm-80gb has no fp8 peak)"), std::string::npos);
  config::ParseProfile(JsonNode(p, "projected.json", ""));
}

TEST(ProjectProfile, OnlyAMeasuredProfileCanBeProjected) {
  InputError e = ErrorFrom([] { ProjectProfile(Profile("a100-sxm-80gb"), Profile("h100-sxm-80gb"), "a100", "h100"); });
  EXPECT_EQ(e.file(), "a100");
  EXPECT_EQ(e.key_path(), "kind");
  json broken = Profile("h100-sxm-80gb");
  broken.erase("sm_count");
  EXPECT_EQ(ErrorFrom([&] { ProjectProfile(Measured(), broken, "m", "broken-target"); }).file(), "broken-target");
}

}  // namespace
}  // namespace stacksim::calibrate
