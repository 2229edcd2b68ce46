#include "calibrate/fit/gpu_support.h"

#include <gtest/gtest.h>

namespace stacksim::calibrate {
namespace {

TEST(GpuSupport, NoKernelImageNamesCapabilityBuildAndRebuild) {
  std::string m = NoKernelImageMessage("NVIDIA RTX PRO 6000", 12, 0, "80,90a");
  EXPECT_EQ(m,
            "stacksim calibrate: NVIDIA RTX PRO 6000 has compute capability 12.0, but this harness was built for "
            "CUDA architectures 80,90a (no kernel image for 12.0): rebuild with -DCMAKE_CUDA_ARCHITECTURES=120 "
            "(tools/gpu/run_calibrate.sh: CUDA_ARCHS=120); nothing measured");
  EXPECT_EQ(m.find('\n'), std::string::npos);
  EXPECT_NE(NoKernelImageMessage("GPU", 10, 3, "").find("architectures (unknown) (no kernel image for 10.3): rebuild "
                                                     "with -DCMAKE_CUDA_ARCHITECTURES=103"),
            std::string::npos);
}

TEST(GpuSupport, DriverTooOldNamesBothVersions) {
  std::string m = DriverTooOldMessage(12020, 13000);
  EXPECT_NE(m.find("supports CUDA up to 12.2"), std::string::npos) << m;
  EXPECT_NE(m.find("the CUDA 13.0 this harness was built with"), std::string::npos) << m;
  EXPECT_NE(m.find("toolkit of at most 12.2"), std::string::npos) << m;
  EXPECT_EQ(m.find('\n'), std::string::npos);
  EXPECT_EQ(CudaVersionText(12080), "12.8");
}

}  // namespace
}  // namespace stacksim::calibrate
