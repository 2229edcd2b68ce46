#include "sim/net/bus_bandwidth.h"

#include <algorithm>
#include <cmath>

namespace stacksim::net {

namespace {

double LogSize(double bytes) { return std::log(std::max(bytes, 1.0)); }

}  // namespace

Bandwidth InterpolateBusBandwidth(const config::BusBandwidthCurve& curve, Bytes size) {
  const auto& pts = curve.points;
  if (pts.empty()) return Bandwidth{0};
  if (size <= pts.front().first) return pts.front().second;
  if (size >= pts.back().first) return pts.back().second;
  auto hi = std::upper_bound(pts.begin(), pts.end(), size,
                             [](Bytes s, const auto& pt) { return s < pt.first; });
  auto lo = hi - 1;
  double x0 = LogSize(lo->first.value), x1 = LogSize(hi->first.value);
  if (x1 <= x0) return hi->second;
  double t = (LogSize(size.value) - x0) / (x1 - x0);
  double b0 = lo->second.value, b1 = hi->second.value;
  // Busbw linear in log size would not keep time rising: from 1 kB at
  // 0.07 GB/s to 64 kB at 2.72 GB/s (8x H100, hardware.md 3a) it puts a 3 kB
  // all-reduce at 6.8 us, below the 25.6 us measured at 1 kB.
  if (b0 > 0 && b1 > 0) return Bandwidth{std::exp(std::log(b0) + t * (std::log(b1) - std::log(b0)))};
  return Bandwidth{b0 + t * (b1 - b0)};
}

Bandwidth PeakBusBandwidth(const config::BusBandwidthCurve& curve) {
  Bandwidth peak{0};
  for (const auto& pt : curve.points) peak = std::max(peak, pt.second);
  return peak;
}

BusBandwidthPoints BlendCurves(const config::BusBandwidthCurve& base,
                               const config::BusBandwidthCurve& boost, double share) {
  std::vector<Bytes> sizes;
  for (const auto& pt : base.points) sizes.push_back(pt.first);
  for (const auto& pt : boost.points) sizes.push_back(pt.first);
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  BusBandwidthPoints out;
  for (Bytes s : sizes) {
    double r = InterpolateBusBandwidth(base, s).value;
    double b = InterpolateBusBandwidth(boost, s).value;
    out.push_back({s, Bandwidth{std::max(r, r + share * (b - r))}});
  }
  return out;
}

MeasuredBusBandwidth::MeasuredBusBandwidth(const BusBandwidthPoints& points) {
  for (const auto& pt : points) peak_ = std::max(peak_, pt.second);
  if (!(peak_.value > 0)) return;
  double running = 0;
  for (const auto& [size, busbw] : points) {
    if (!(busbw.value > 0)) continue;  // a zero point says nothing about time
    double overhead = size.value / busbw.value - size.value / peak_.value;
    running = std::max(running, overhead);
    log_size_.push_back(LogSize(size.value));
    overhead_.push_back(running);
  }
}

double MeasuredBusBandwidth::OverheadPerFactor(Bytes size) const {
  if (log_size_.empty()) return 0;
  double x = LogSize(size.value);
  if (x <= log_size_.front()) return overhead_.front();
  if (x >= log_size_.back()) return overhead_.back();
  size_t hi = std::upper_bound(log_size_.begin(), log_size_.end(), x) - log_size_.begin();
  size_t lo = hi - 1;
  double span = log_size_[hi] - log_size_[lo];
  if (span <= 0) return overhead_[hi];
  double t = (x - log_size_[lo]) / span;
  return overhead_[lo] + t * (overhead_[hi] - overhead_[lo]);
}

}  // namespace stacksim::net
