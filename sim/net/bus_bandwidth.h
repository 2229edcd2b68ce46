// Measured bus-bandwidth curves (nccl-tests convention: busbw = algbw *
// factor, factor 2(p-1)/p for all-reduce) turned into the two terms of the
// analytic model: a peak bus bandwidth, and a per-size overhead that holds
// what the measurement lost to latency and protocol at that size.
//
// Sizes in Bytes, bandwidths in bytes/s, overheads in seconds per unit of
// bus factor (multiply by the collective's factor to get seconds).
#ifndef STACKSIM_SIM_NET_BUS_BANDWIDTH_H_
#define STACKSIM_SIM_NET_BUS_BANDWIDTH_H_

#include <utility>
#include <vector>

#include "sim/config/profile.h"
#include "sim/util/units.h"

namespace stacksim::net {

using BusBandwidthPoints = std::vector<std::pair<Bytes, Bandwidth>>;

// busbw of `curve` at `size`: a power law between points (log busbw linear
// in log size), clamped to the first and last point; an empty curve gives 0.
// Log-log rather than busbw linear in log size so that the time
// factor * S / busbw never falls as S grows between two measured points
// whose times rise. (Our own helper; BusBandwidthCurve::At belongs to
// sim/config.)
Bandwidth InterpolateBusBandwidth(const config::BusBandwidthCurve& curve, Bytes size);

// Highest busbw on the curve (0 for an empty curve).
Bandwidth PeakBusBandwidth(const config::BusBandwidthCurve& curve);

// `base` + share * (`boost` - `base`), never below `base`, at the union of
// both curves' sizes (each interpolated at the other's sizes).
BusBandwidthPoints BlendCurves(const config::BusBandwidthCurve& base,
                               const config::BusBandwidthCurve& boost, double share);

// A collective measured as busbw(S) at a few sizes, split as
//   S / busbw(S) = S / peak + overhead(S)        (per unit of bus factor)
// where peak is the highest measured busbw. The overhead is made
// non-decreasing in S (running maximum over the measured sizes: a larger
// message never costs less fixed time; this also irons out measured dips
// where NCCL switches protocol) and interpolated linearly in log S between
// measured sizes, held constant outside them. On the measured system
// overhead + S / peak reproduces each measured point except inside such dips.
class MeasuredBusBandwidth {
 public:
  MeasuredBusBandwidth() = default;
  // REQUIRES: points sorted by size.
  explicit MeasuredBusBandwidth(const BusBandwidthPoints& points);

  bool empty() const { return log_size_.empty(); }
  Bandwidth peak() const { return peak_; }
  // Seconds per unit of bus factor at `size` (0 for an empty curve).
  double OverheadPerFactor(Bytes size) const;

 private:
  std::vector<double> log_size_;
  std::vector<double> overhead_;  // running maximum, seconds per unit factor
  Bandwidth peak_;
};

}  // namespace stacksim::net

#endif  // STACKSIM_SIM_NET_BUS_BANDWIDTH_H_
