// Quantiles of a sample, each estimator under its own name.
//
// "p90" is not one number: for the sample {1, 2, 3, 4} the 0.5-quantile is 2
// by nearest rank, 2.5 by linear interpolation and 3 as the high median.
// Hyndman & Fan ("Sample quantiles in statistical packages", The American
// Statistician 50(4), 1996) number nine definitions; stacksim uses three of
// them plus two medians, and every caller names the one it uses, so that a
// command's percentiles never change because another command's did.
//
// Which command uses which, and why (changing one changes that output):
//
//   NearestRankQuantile (H&F type 1, the inverse of the empirical CDF)
//     simulate --stragglers: p50/p90/p99 step time (sim/straggler);
//     cluster: queue wait p50/p90/p99 (sim/cluster).
//     A value that occurred: "90% of the steps (waits) took at most this".
//   LinearQuantile (H&F type 7, numpy's and R's default)
//     serve, serve-search, serve-validate: TTFT/TPOT/end-to-end
//     p50/p90/p99 (sim/serve), the convention of the serving benchmarks it is
//     compared with (vLLM's benchmark_serving takes numpy.percentile);
//     run-campaign: p10/p50/p90 of time to train, tokens and interruptions
//     over Monte Carlo trials (sim/campaign), a smooth summary of a
//     simulated distribution.
//   PredictiveQuantile (H&F type 6)
//     every prediction's likely range (uncertainty low_s/high_s) and
//     validate's error p10/median/p90 table (sim/uncertainty, sim/validate):
//     for a new run exchangeable with the n validated ones, the interval
//     between the low and high type-6 quantiles holds its error with
//     probability high - low.
//   Median (the mean of the two middle values for an even count)
//     calibrate's fit: the robust spread 1.4826 x MAD / median and the median
//     predicted/measured GEMM ratio (calibrate/fit).
//   HighMedian (the upper of the two middle values)
//     the calibration harness's and kernels/' median_us of timed repeats,
//     replay's launch latency and inter-kernel gap (sim/ingest): always a
//     time that was measured.
//
// Every estimator takes the values sorted ascending (see Sorted) and throws
// std::invalid_argument for an empty sample, unsorted values or q outside
// [0, 1]: those are programming errors, not bad input. This header is C++17
// so that the CUDA sources of kernels/ can include it.
#ifndef STACKSIM_SIM_UTIL_STATISTICS_H_
#define STACKSIM_SIM_UTIL_STATISTICS_H_

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <vector>

namespace stacksim {

// Throws std::invalid_argument unless `sorted` is non-empty and ascending.
template <typename T>
void CheckSortedSample(const std::vector<T>& sorted) {
  if (sorted.empty()) throw std::invalid_argument("quantile of an empty sample");
  if (!std::is_sorted(sorted.begin(), sorted.end())) throw std::invalid_argument("quantile of unsorted values");
}

// Throws std::invalid_argument unless 0 <= q <= 1.
inline void CheckQuantileLevel(double q) {
  if (!(q >= 0 && q <= 1)) throw std::invalid_argument("quantile level outside [0, 1]");
}

// The values sorted ascending.
template <typename T>
std::vector<T> Sorted(std::vector<T> values) {
  std::sort(values.begin(), values.end());
  return values;
}

// 0-based index of the nearest-rank q-quantile of n sorted values: the
// smallest value with at least a share q of the values at or below it,
// rank ceil(q n), clamped to [1, n]. REQUIRES: n >= 1, 0 <= q <= 1.
inline size_t NearestRankIndex(size_t n, double q) {
  CheckQuantileLevel(q);
  const size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(n)));
  return std::clamp<size_t>(rank, 1, n) - 1;
}

// Nearest rank (H&F type 1): always one of the values.
// {10, 20, 30, 40, 50}: q 0.5 -> 30, q 0.9 -> 50, q 0.2 -> 10.
template <typename T>
T NearestRankQuantile(const std::vector<T>& sorted, double q) {
  CheckSortedSample(sorted);
  return sorted[NearestRankIndex(sorted.size(), q)];
}

// The upper of the two middle values (the middle one for an odd count):
// {1, 2, 3, 4} -> 3. Always one of the values.
template <typename T>
T HighMedian(const std::vector<T>& sorted) {
  CheckSortedSample(sorted);
  return sorted[sorted.size() / 2];
}

// Linear interpolation between order statistics (H&F type 7, numpy's and R's
// default): position q (n - 1), 0-based. {10, 20, 30, 40, 50}: q 0.9 -> 46.
double LinearQuantile(const std::vector<double>& sorted, double q);

// H&F type 6: position q (n + 1), 1-based, linear between order statistics
// and clamped to the smallest and largest value. {10, 20, 30, 40, 50}:
// q 0.9 -> 50 (position 5.4), q 0.25 -> 15 (position 1.5).
double PredictiveQuantile(const std::vector<double>& sorted, double q);

// The middle value, or the mean of the two middle values: {1, 2, 3, 10} -> 2.5.
double Median(const std::vector<double>& sorted);

}  // namespace stacksim

#endif  // STACKSIM_SIM_UTIL_STATISTICS_H_
