#include "sim/net/bus_bandwidth.h"

#include <gtest/gtest.h>

#include <cmath>

namespace stacksim::net {
namespace {

constexpr double kGB = 1e9;

config::BusBandwidthCurve Curve(std::initializer_list<std::pair<double, double>> points_gbps) {
  config::BusBandwidthCurve c;
  for (auto [s, b] : points_gbps) c.points.push_back({Bytes{s}, Bandwidth{b * kGB}});
  c.gpus = 8;
  return c;
}

TEST(InterpolateBusBandwidth, IsAPowerLawBetweenPointsAndClamps) {
  auto c = Curve({{1e3, 1}, {1e9, 100}});
  EXPECT_NEAR(InterpolateBusBandwidth(c, Bytes{1e6}).value, 10 * kGB, 1e-3 * kGB);  // halfway in log-log
  EXPECT_NEAR(InterpolateBusBandwidth(c, Bytes{1e4}).value, std::pow(100.0, 1.0 / 6) * kGB, 1e-3 * kGB);
  EXPECT_DOUBLE_EQ(InterpolateBusBandwidth(c, Bytes{10}).value, 1 * kGB);
  EXPECT_DOUBLE_EQ(InterpolateBusBandwidth(c, Bytes{1e12}).value, 100 * kGB);
  EXPECT_EQ(InterpolateBusBandwidth(config::BusBandwidthCurve{}, Bytes{1e6}).value, 0);
  EXPECT_DOUBLE_EQ(PeakBusBandwidth(c).value, 100 * kGB);
}

TEST(InterpolateBusBandwidth, KeepsTimeRisingBetweenMeasuredPoints) {
  // 8x H100 all-reduce: 0.07 GB/s at 1 kB, 2.72 GB/s at 64 kB (25.6 us, 42 us).
  auto c = Curve({{1e3, 0.07}, {64e3, 2.72}});
  double prev = 0;
  for (double s = 1e3; s <= 64e3; s *= 1.1) {
    double t = s / InterpolateBusBandwidth(c, Bytes{s}).value;
    EXPECT_GE(t, prev * (1 - 1e-12)) << s;
    prev = t;
  }
}

TEST(BlendCurves, WeighsBoostOverBaseAtTheUnionOfSizes) {
  auto ring = Curve({{1e6, 100}, {1e9, 370}});
  auto nvls = Curve({{1e3, 1}, {1e9, 480}});
  BusBandwidthPoints half = BlendCurves(ring, nvls, 0.5);
  ASSERT_EQ(half.size(), 3u);
  EXPECT_DOUBLE_EQ(half[2].second.value, 425 * kGB);
  // At 1 kB the boost curve is below ring (clamped 100): never below base.
  EXPECT_DOUBLE_EQ(half[0].second.value, 100 * kGB);
}

TEST(MeasuredBusBandwidth, SplitsTimeIntoPeakAndOverhead) {
  // 1 MB at 100 GB/s (10 us), 1 GB at 400 GB/s.
  MeasuredBusBandwidth m(Curve({{1e6, 100}, {1e9, 400}}).points);
  EXPECT_DOUBLE_EQ(m.peak().value, 400 * kGB);
  EXPECT_NEAR(m.OverheadPerFactor(Bytes{1e6}), 10e-6 - 2.5e-6, 1e-12);
  EXPECT_NEAR(m.OverheadPerFactor(Bytes{1e3}), 7.5e-6, 1e-12);  // held below the first point
  // Never decreasing: the 1 GB point itself has no overhead, the running maximum keeps 7.5 us.
  EXPECT_NEAR(m.OverheadPerFactor(Bytes{1e9}), 7.5e-6, 1e-12);
  EXPECT_TRUE(MeasuredBusBandwidth().empty());
  EXPECT_EQ(MeasuredBusBandwidth().OverheadPerFactor(Bytes{1e6}), 0);
}

TEST(MeasuredBusBandwidth, InterpolatesOverheadInLogSize) {
  // Peak 1 GB/s at 1 kB (overhead 0); 1 MB at 0.5 GB/s: 2000 us - 1000 us.
  MeasuredBusBandwidth m(Curve({{1e3, 1}, {1e6, 0.5}}).points);
  // Halfway in log size (31.6 kB): half of 1000 us.
  EXPECT_NEAR(m.OverheadPerFactor(Bytes{std::sqrt(1e9)}), 500e-6, 1e-9);
}

}  // namespace
}  // namespace stacksim::net
