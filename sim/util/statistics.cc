#include "sim/util/statistics.h"

namespace stacksim {

// The arithmetic below is written exactly as the copies it replaced computed
// it (operand order included), so that no command's output moved by an ulp.

double LinearQuantile(const std::vector<double>& sorted, double q) {
  CheckSortedSample(sorted);
  CheckQuantileLevel(q);
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (pos - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

double PredictiveQuantile(const std::vector<double>& sorted, double q) {
  CheckSortedSample(sorted);
  CheckQuantileLevel(q);
  double pos = q * static_cast<double>(sorted.size() + 1) - 1.0;  // 0-based
  pos = std::clamp(pos, 0.0, static_cast<double>(sorted.size() - 1));
  const size_t i = static_cast<size_t>(std::floor(pos));
  const double frac = pos - static_cast<double>(i);
  if (i + 1 >= sorted.size()) return sorted.back();
  return sorted[i] + (sorted[i + 1] - sorted[i]) * frac;
}

double Median(const std::vector<double>& sorted) {
  CheckSortedSample(sorted);
  const size_t n = sorted.size();
  return n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
}

}  // namespace stacksim
