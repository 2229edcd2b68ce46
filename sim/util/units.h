// Physical quantities used across stacksim, each with its unit in its type.
//
// Time is integer nanoseconds (int64: about 292 years of range, so a month-long
// campaign cannot overflow). Bytes, rates and FLOP counts are doubles with the
// unit fixed by the type: Bytes in bytes, Bandwidth in bytes per second,
// Flops in floating-point operations, FlopRate in FLOP per second.
#ifndef STACKSIM_SIM_UTIL_UNITS_H_
#define STACKSIM_SIM_UTIL_UNITS_H_

#include <cmath>
#include <compare>
#include <cstdint>
#include <limits>
#include <stdexcept>

namespace stacksim {

class Time {
 public:
  constexpr Time() = default;
  static constexpr Time Ns(int64_t ns) { return Time(ns); }
  static constexpr Time Us(double us) { return FromSeconds(us * 1e-6); }
  static constexpr Time Ms(double ms) { return FromSeconds(ms * 1e-3); }
  // Rounds to the nearest nanosecond; saturates instead of overflowing.
  static constexpr Time FromSeconds(double s) {
    double ns = s * 1e9;
    if (!(ns < 9.2e18)) return Max();
    if (ns < -9.2e18) return Time(std::numeric_limits<int64_t>::min());
    return Time(static_cast<int64_t>(ns >= 0 ? ns + 0.5 : ns - 0.5));
  }
  static constexpr Time Zero() { return Time(0); }
  static constexpr Time Max() { return Time(std::numeric_limits<int64_t>::max()); }

  constexpr int64_t ns() const { return ns_; }
  constexpr double seconds() const { return static_cast<double>(ns_) * 1e-9; }
  constexpr double us() const { return static_cast<double>(ns_) * 1e-3; }
  constexpr double ms() const { return static_cast<double>(ns_) * 1e-6; }

  constexpr Time operator+(Time o) const { return Time(ns_ + o.ns_); }
  constexpr Time operator-(Time o) const { return Time(ns_ - o.ns_); }
  constexpr Time& operator+=(Time o) { ns_ += o.ns_; return *this; }
  constexpr Time& operator-=(Time o) { ns_ -= o.ns_; return *this; }
  // Saturates like FromSeconds (never undefined behaviour).
  constexpr Time operator*(double f) const { return FromSeconds(seconds() * f); }
  constexpr auto operator<=>(const Time&) const = default;

 private:
  constexpr explicit Time(int64_t ns) : ns_(ns) {}
  int64_t ns_ = 0;
};

// The longest span an input may give (a duration, a latency, a time budget):
// 100 years. int64 nanoseconds reach 292 years; the headroom keeps sums of a
// few such spans (a campaign's clock plus a repair, a step times a count
// bounded by a budget) exact. Parsers reject longer times with an InputError.
inline constexpr double kMaxInputSeconds = 100.0 * 365.25 * 86400.0;

// a + b, or std::overflow_error when the sum leaves int64 nanoseconds (292
// years): a simulated clock that far out comes from an input beyond what
// stacksim represents, and wrapping around would be undefined behaviour.
inline Time CheckedSum(Time a, Time b) {
  int64_t ns;
  if (__builtin_add_overflow(a.ns(), b.ns(), &ns)) {
    throw std::overflow_error("simulated time passed 292 years (int64 nanoseconds): an input is beyond what "
                              "stacksim represents");
  }
  return Time::Ns(ns);
}

// A quantity of type Tag measured in the type's fixed unit.
template <typename Tag>
struct Quantity {
  double value = 0;
  constexpr Quantity operator+(Quantity o) const { return {value + o.value}; }
  constexpr Quantity operator-(Quantity o) const { return {value - o.value}; }
  constexpr Quantity operator*(double f) const { return {value * f}; }
  constexpr Quantity operator/(double f) const { return {value / f}; }
  constexpr double operator/(Quantity o) const { return value / o.value; }
  constexpr Quantity& operator+=(Quantity o) { value += o.value; return *this; }
  constexpr auto operator<=>(const Quantity&) const = default;
};

struct BytesTag {};
struct BandwidthTag {};
struct FlopsTag {};
struct FlopRateTag {};
using Bytes = Quantity<BytesTag>;          // bytes
using Bandwidth = Quantity<BandwidthTag>;  // bytes per second
using Flops = Quantity<FlopsTag>;          // floating-point operations
using FlopRate = Quantity<FlopRateTag>;    // FLOP per second

constexpr Bytes operator""_B(unsigned long long v) { return {static_cast<double>(v)}; }
inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// REQUIRES: rate > 0.
inline Time TransferTime(Bytes b, Bandwidth rate) { return Time::FromSeconds(b.value / rate.value); }
// REQUIRES: rate > 0.
inline Time ComputeTime(Flops f, FlopRate rate) { return Time::FromSeconds(f.value / rate.value); }

}  // namespace stacksim

#endif  // STACKSIM_SIM_UTIL_UNITS_H_
