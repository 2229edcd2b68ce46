#include "sim/config/quantity_text.h"

#include <cmath>
#include <cstdio>

namespace stacksim::config {
namespace {

std::string Number(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

// Picks the largest unit in which the value is at least 1.
std::string WithUnit(double v, const double* scales, const char* const* units, int n) {
  for (int i = 0; i < n - 1; ++i) {
    if (std::fabs(v) >= scales[i]) return Number(v / scales[i]) + " " + units[i];
  }
  return Number(v / scales[n - 1]) + " " + units[n - 1];
}

}  // namespace

std::string TimeText(Time t) {
  static const double kScales[] = {1e9, 1e6, 1e3, 1};
  static const char* const kUnits[] = {"s", "ms", "us", "ns"};
  return WithUnit(static_cast<double>(t.ns()), kScales, kUnits, 4);
}

std::string BytesText(Bytes b) {
  static const double kScales[] = {1e12, 1e9, 1e6, 1e3, 1};
  static const char* const kUnits[] = {"TB", "GB", "MB", "kB", "B"};
  return WithUnit(b.value, kScales, kUnits, 5);
}

std::string BandwidthText(Bandwidth b) { return Number(b.value / 1e9) + " GB/s"; }

std::string FlopRateText(FlopRate r) { return Number(r.value / 1e12) + " TFLOP/s"; }

}  // namespace stacksim::config
