#include "calibrate/fit/stability.h"

#include <gtest/gtest.h>

namespace stacksim::calibrate {
namespace {

TEST(Stability, QuietSamplesAreStable) {
  StabilityVerdict v = Judge({100, 101, 99, 100.5, 100.2, 99.8, 100.1}, DeviceTimingPolicy());
  EXPECT_TRUE(v.stable) << v.why;
  EXPECT_DOUBLE_EQ(v.stats.median, 100.1);
  EXPECT_LT(v.stats.spread, 0.01);
  EXPECT_EQ(v.why, "");
}

TEST(Stability, OneOutlierDoesNotCondemnASoundMedian) {
  // Plain CV would be ~80%; the robust spread ignores the one preempted sample.
  StabilityVerdict v = Judge({100, 100, 101, 99, 100, 100, 600}, DeviceTimingPolicy());
  EXPECT_GT(v.stats.cv, 0.5);
  EXPECT_TRUE(v.stable) << v.why;
}

TEST(Stability, TimeSlicedSamplesAreUnstableAndSaySo) {
  // A GPU shared with another process: about half the bursts lose a time slice.
  StabilityVerdict v = Judge({100, 180, 105, 170, 100, 190, 140}, DeviceTimingPolicy());
  EXPECT_FALSE(v.stable);
  EXPECT_NE(v.why.find("spread"), std::string::npos) << v.why;
  EXPECT_NE(v.why.find("> 5.0%"), std::string::npos) << v.why;
  // Host timings tolerate more.
  EXPECT_TRUE(Judge({100, 104, 96, 108, 100, 93, 101}, HostTimingPolicy()).stable);
  EXPECT_FALSE(Judge({100, 104, 96, 108, 100, 93, 101}, DeviceTimingPolicy()).stable);
}

TEST(Stability, TooFewOrBadSamplesAreUnstable) {
  EXPECT_FALSE(Judge({100, 100}, DeviceTimingPolicy()).stable);
  EXPECT_EQ(Judge({100, 100}, DeviceTimingPolicy()).why, "2 samples < 3");
  EXPECT_FALSE(Judge({0, 0, 0}, DeviceTimingPolicy()).stable);
  EXPECT_FALSE(Judge({1, -1, 1}, DeviceTimingPolicy()).stable);
}

TEST(Stability, RetriesUntilStableThenStops) {
  std::vector<std::vector<double>> tries = {{100, 200, 100, 200, 150}, {100, 100, 101, 100, 99}, {1, 1, 1}};
  int calls = 0;
  StableMeasurement m = MeasureUntilStable([&] { return tries[calls++]; }, DeviceTimingPolicy());
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(m.tries, 2);
  EXPECT_TRUE(m.verdict.stable);
  EXPECT_DOUBLE_EQ(m.verdict.stats.median, 100);
  EXPECT_EQ(m.Note(), "");
}

TEST(Stability, GivesUpAfterMaxTriesAndKeepsTheLeastSpreadTry) {
  std::vector<std::vector<double>> tries = {{100, 200, 100, 200, 150}, {100, 120, 100, 120, 110}, {100, 300, 100, 300, 200}};
  int calls = 0;
  StableMeasurement m = MeasureUntilStable([&] { return tries[calls++]; }, DeviceTimingPolicy());
  EXPECT_EQ(calls, 3);
  EXPECT_FALSE(m.verdict.stable);
  EXPECT_DOUBLE_EQ(m.verdict.stats.median, 110);
  EXPECT_NE(m.Note().find("unstable: spread"), std::string::npos) << m.Note();
  EXPECT_NE(m.Note().find("after 3 tries"), std::string::npos) << m.Note();
}

TEST(Stability, MedianFarAboveTheMinimumIsUnstable) {
  EXPECT_TRUE(JudgeMedianMin(105, 100).stable);
  StabilityVerdict v = JudgeMedianMin(150, 100);
  EXPECT_FALSE(v.stable);
  EXPECT_NEAR(v.stats.spread, 1.0 / 3, 1e-12);
  EXPECT_EQ(v.why, "median 33.3% above the minimum (> 10.0%)");
  EXPECT_FALSE(JudgeMedianMin(100, 0).stable);
  EXPECT_FALSE(JudgeMedianMin(90, 100).stable);
}

TEST(Stability, BusyVerdictNamesEachSign) {
  BusyObservation idle;
  idle.compute_processes = 1;
  idle.utilization_pct = 0;
  idle.memory_used_bytes = 0.6e9;
  idle.probe_us = {50, 50.2, 49.9, 50.1, 50, 50.3, 49.8, 50};
  EXPECT_FALSE(JudgeBusy(idle).busy) << JudgeBusy(idle).Text();
  EXPECT_EQ(JudgeBusy(idle).Text(), "idle");

  BusyObservation shared = idle;
  shared.compute_processes = 3;
  shared.utilization_pct = 97;
  shared.memory_used_bytes = 40e9;
  shared.probe_us = {50, 95, 50, 101, 52, 99, 50, 97};
  BusyVerdict v = JudgeBusy(shared);
  EXPECT_TRUE(v.busy);
  ASSERT_EQ(v.reasons.size(), 4u) << v.Text();
  EXPECT_NE(v.Text().find("3 processes"), std::string::npos);
  EXPECT_NE(v.Text().find("utilization 97%"), std::string::npos);
  EXPECT_NE(v.Text().find("GiB of device memory"), std::string::npos);
  EXPECT_NE(v.Text().find("probe kernels spread"), std::string::npos);

  // Without NVML only the probe and memory speak; one slow probe kernel in
  // eight is caught by the ratio.
  BusyObservation no_nvml;
  no_nvml.probe_us = {50, 50, 50, 50, 50, 50, 50, 80};
  EXPECT_TRUE(JudgeBusy(no_nvml).busy);
  EXPECT_NE(JudgeBusy(no_nvml).Text().find("1.60x"), std::string::npos) << JudgeBusy(no_nvml).Text();
}

}  // namespace
}  // namespace stacksim::calibrate
