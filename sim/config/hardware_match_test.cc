#include "sim/config/hardware_match.h"

#include <gtest/gtest.h>

#include <string>

#include "sim/config/scenario.h"
#include "tests/input_error.h"

namespace stacksim::config {
namespace {

ProfileConfig Profile(const std::string& name) { return LoadProfileFile(ResolveDataFile("profiles", name, "")); }
TopologyConfig Topology(const std::string& name) { return LoadTopologyFile(ResolveDataFile("topologies", name, "")); }

TEST(HardwareMatch, EveryTopologysOwnGpuMatchesIt) {
  for (const char* t : {"dgx-a100", "dgx-h100", "hgx-h200", "h800-node", "dgx-b200", "gb200-nvl72", "pcie-l40s",
                        "h100-pcie-node"}) {
    const TopologyConfig topo = Topology(t);
    EXPECT_TRUE(CheckHardwareMatch(Profile(topo.gpu), topo).empty()) << t;
  }
}

TEST(HardwareMatch, APcieCardOnNvSwitchIsAnError) {
  auto found = CheckHardwareMatch(Profile("l40s"), Topology("dgx-h100"));
  ASSERT_EQ(found.size(), 1u);
  EXPECT_TRUE(found[0].error);
  EXPECT_NE(found[0].message.find("14x"), std::string::npos) << found[0].message;  // 450 / 32 GB/s
  InputError e = testing::ErrorFrom(
      [] { RequireHardwareMatch(Profile("l40s"), Topology("dgx-h100"), "s.json"); });
  EXPECT_EQ(e.file(), "s.json");
  EXPECT_EQ(e.key_path(), "profile");
}

TEST(HardwareMatch, NvlsOnAnOlderNvSwitchIsAWarning) {
  // The H200's all-reduce curve was measured with NVLS; DGX A100's NVSwitch
  // (NVLink3, 300 GB/s per GPU) has no SHARP.
  auto warnings = HardwareWarnings(Profile("h200-sxm-141gb"), Topology("dgx-a100"), "s.json");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("NVLS"), std::string::npos) << warnings[0];
  // The same profile on a third-generation NVSwitch is fine, and so is the
  // H800's (NVLS on a narrower NVLink) on an H100 system.
  EXPECT_TRUE(HardwareWarnings(Profile("h200-sxm-141gb"), Topology("dgx-h100"), "s.json").empty());
  EXPECT_TRUE(HardwareWarnings(Profile("h800-sxm-80gb"), Topology("dgx-h100"), "s.json").empty());
}

TEST(HardwareMatch, AnNvLinkProfileOnPcieIsAWarning) {
  auto found = CheckHardwareMatch(Profile("h100-sxm-80gb"), Topology("pcie-l40s"));
  ASSERT_EQ(found.size(), 1u);
  EXPECT_FALSE(found[0].error);
}

TEST(RequireGemmPrecision, NamesTheProfileAndThePrecision) {
  InputError e = testing::ErrorFrom([] {
    RequireGemmPrecision(Profile("a100-sxm-80gb"), "profiles/a100-sxm-80gb.json", Precision::kFp8, "s.json",
                         "plan.precision");
  });
  EXPECT_EQ(e.key_path(), "plan.precision");
  EXPECT_NE(std::string(e.what()).find("no fp8 GEMM rate"), std::string::npos) << e.what();
  RequireGemmPrecision(Profile("h100-sxm-80gb"), "", Precision::kFp8, "s.json", "plan.precision");  // has fp8
  RequireGemmPrecision(Profile("a100-sxm-80gb"), "", Precision::kFp32, "s.json", "plan.precision");  // tf32 cores
}

}  // namespace
}  // namespace stacksim::config
