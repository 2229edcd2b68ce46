#include "sim/util/statistics.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "sim/util/units.h"

namespace stacksim {
namespace {

// 1..10: every estimator gives a different p25 and p90, worked out by hand.
const std::vector<double> kOneToTen = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};

TEST(NearestRankQuantile, TakesTheValueAtRankCeilQTimesN) {
  EXPECT_EQ(NearestRankQuantile(kOneToTen, 0.25), 3);  // rank ceil(2.5) = 3
  EXPECT_EQ(NearestRankQuantile(kOneToTen, 0.90), 9);  // rank 9: 90% of the values are <= 9
  EXPECT_EQ(NearestRankQuantile(kOneToTen, 0.91), 10);
  EXPECT_EQ(NearestRankQuantile(kOneToTen, 0.0), 1);  // rank 0 clamps to the smallest
  EXPECT_EQ(NearestRankQuantile(kOneToTen, 1.0), 10);
  // p99 of 50 values is the largest (rank ceil(49.5) = 50), not the 49th.
  std::vector<double> fifty;
  for (int i = 1; i <= 50; ++i) fifty.push_back(i);
  EXPECT_EQ(NearestRankQuantile(fifty, 0.99), 50);
}

TEST(NearestRankQuantile, WorksOnTimesAndReturnsAValueThatOccurred) {
  const std::vector<Time> waits = {Time::Ns(10), Time::Ns(20), Time::Ns(40), Time::Ns(80)};
  EXPECT_EQ(NearestRankQuantile(waits, 0.50), Time::Ns(20));  // rank 2
  EXPECT_EQ(NearestRankQuantile(waits, 0.51), Time::Ns(40));  // rank ceil(2.04) = 3
}

TEST(LinearQuantile, InterpolatesAtPositionQTimesNMinusOne) {
  EXPECT_DOUBLE_EQ(LinearQuantile(kOneToTen, 0.25), 3.25);  // position 2.25 (0-based): 3 + 0.25
  EXPECT_DOUBLE_EQ(LinearQuantile(kOneToTen, 0.90), 9.1);   // position 8.1
  EXPECT_DOUBLE_EQ(LinearQuantile(kOneToTen, 0.50), 5.5);
  EXPECT_EQ(LinearQuantile(kOneToTen, 0.0), 1);
  EXPECT_EQ(LinearQuantile(kOneToTen, 1.0), 10);
  EXPECT_DOUBLE_EQ(LinearQuantile({10, 20, 30, 40, 50}, 0.9), 46);  // numpy.percentile(.., 90)
  EXPECT_EQ(LinearQuantile({7}, 0.99), 7);
}

TEST(PredictiveQuantile, InterpolatesAtPositionQTimesNPlusOne) {
  EXPECT_DOUBLE_EQ(PredictiveQuantile(kOneToTen, 0.25), 2.75);  // position 2.75 (1-based)
  EXPECT_DOUBLE_EQ(PredictiveQuantile(kOneToTen, 0.90), 9.9);   // position 9.9
  EXPECT_DOUBLE_EQ(PredictiveQuantile(kOneToTen, 0.50), 5.5);
  EXPECT_DOUBLE_EQ(PredictiveQuantile({10, 20, 30, 40, 50}, 0.25), 15);  // position 1.5
}

TEST(PredictiveQuantile, ClampsToTheExtremesBeyondTheFirstAndLastPosition) {
  EXPECT_EQ(PredictiveQuantile({-0.1, 0.2, 0.3}, 0.10), -0.1);  // position 0.4 < 1
  EXPECT_EQ(PredictiveQuantile({-0.1, 0.2, 0.3}, 0.90), 0.3);   // position 3.6 > 3
  EXPECT_EQ(PredictiveQuantile({10, 20, 30, 40, 50}, 0.9), 50);  // position 5.4 > 5
}

TEST(Median, AveragesTheTwoMiddleValuesOfAnEvenCount) {
  EXPECT_DOUBLE_EQ(Median({1, 2, 3, 10}), 2.5);
  EXPECT_EQ(Median({1, 2, 10}), 2);
  EXPECT_DOUBLE_EQ(Median(kOneToTen), 5.5);
  EXPECT_EQ(Median({4}), 4);
}

TEST(HighMedian, TakesTheUpperOfTheTwoMiddleValues) {
  EXPECT_EQ(HighMedian(std::vector<double>{1, 2, 3, 10}), 3);
  EXPECT_EQ(HighMedian(std::vector<double>{1, 2, 10}), 2);
  EXPECT_EQ(HighMedian(kOneToTen), 6);
  EXPECT_EQ(HighMedian(std::vector<Time>{Time::Ns(5), Time::Ns(9)}), Time::Ns(9));
}

TEST(Statistics, SortedSortsACopy) {
  const std::vector<double> v = {3, 1, 2};
  EXPECT_EQ(Sorted(v), (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(v, (std::vector<double>{3, 1, 2}));
}

TEST(Statistics, EmptyOrUnsortedSamplesAndLevelsOutsideZeroToOneAreProgrammingErrors) {
  const std::vector<double> empty;
  EXPECT_THROW(LinearQuantile(empty, 0.5), std::invalid_argument);
  EXPECT_THROW(PredictiveQuantile(empty, 0.5), std::invalid_argument);
  EXPECT_THROW(NearestRankQuantile(empty, 0.5), std::invalid_argument);
  EXPECT_THROW(Median(empty), std::invalid_argument);
  EXPECT_THROW(HighMedian(empty), std::invalid_argument);
  EXPECT_THROW(LinearQuantile({2, 1}, 0.5), std::invalid_argument);
  EXPECT_THROW(Median({3, 1, 2}), std::invalid_argument);
  EXPECT_THROW(NearestRankQuantile(kOneToTen, 1.5), std::invalid_argument);
  EXPECT_THROW(PredictiveQuantile(kOneToTen, -0.1), std::invalid_argument);
  EXPECT_THROW(LinearQuantile(kOneToTen, 90), std::invalid_argument);  // a percent, not a share
}

}  // namespace
}  // namespace stacksim
