#include "sim/cost/power_state.h"

#include <algorithm>
#include <cmath>

namespace stacksim::cost {
namespace {

// The largest x in (0, 1] with watts(x) <= limit; watts rises with x.
template <typename Watts>
double ClockUnder(double limit, Watts watts) {
  if (watts(1.0) <= limit) return 1.0;
  double lo = 0.02, hi = 1.0;
  for (int i = 0; i < 60; ++i) {
    const double mid = 0.5 * (lo + hi);
    (watts(mid) <= limit ? lo : hi) = mid;
  }
  return lo;
}

}  // namespace

double ClockUnderLimit(const config::PowerModel& power, double watts, double limit) {
  const double idle = power.idle_w.value, a = power.power_exponent.value;
  return ClockUnder(limit, [&](double x) { return idle + watts * std::pow(x, a); });
}

ClockState SolveClockState(const config::PowerModel& power, const WorkMix& mix) {
  ClockState s;
  const double total = mix.gemm_s + mix.attention_s + mix.memory_s + mix.other_s;
  if (!(total > 0)) return s;
  const double a = power.power_exponent.value, b = power.rate_exponent.value;
  const double ref_gemm = ClockUnderLimit(power, power.gemm_w.value, power.reference_limit_w.value);
  const double ref_attention = power.attention_reference_clock.value;
  auto watts = [&](double x) {
    const double gemm_stretch = std::pow(ref_gemm / x, b), attention_stretch = std::pow(ref_attention / x, b);
    const double time = mix.gemm_s * gemm_stretch + mix.attention_s * attention_stretch + mix.memory_s + mix.other_s;
    const double compute = mix.gemm_active_s * gemm_stretch * power.gemm_w.value +
                           mix.attention_active_s * attention_stretch * power.attention_w.value;
    return power.idle_w.value + (compute * std::pow(x, a) + mix.memory_active_s * power.memory_w.value) / time;
  };
  s.clock_ratio = ClockUnder(power.board_limit_w.value, watts);
  s.limited = s.clock_ratio < 1.0;
  s.gemm_rate = std::pow(s.clock_ratio / ref_gemm, b);
  s.attention_rate = std::pow(s.clock_ratio / ref_attention, b);
  s.watts = watts(s.clock_ratio);
  return s;
}

}  // namespace stacksim::cost
