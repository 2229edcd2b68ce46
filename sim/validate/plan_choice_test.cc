#include "sim/validate/plan_choice.h"

#include <gtest/gtest.h>

#include <optional>
#include <vector>

namespace stacksim::validate {
namespace {

// Candidates with their bounds and simulated steps (seconds); a negative step
// does not count (refused or out of memory).
struct Case {
  std::vector<double> bounds, steps;
};

// `simulated`: the candidates accept saw, in its order.
std::optional<Fastest> Choose(const Case& c, std::vector<size_t>* simulated, const WorkerCount& workers = {}) {
  std::vector<Time> bounds;
  for (double b : c.bounds) bounds.push_back(Time::FromSeconds(b));
  return FastestByBound(
      bounds,
      [&](size_t i) {
        Simulated s;
        if (c.steps[i] >= 0) {
          s.result.emplace();
          s.result->iteration = Time::FromSeconds(c.steps[i]);
        }
        return s;
      },
      [&](size_t i, Simulated&& s) {
        simulated->push_back(i);
        return std::move(s.result);
      },
      workers);
}

TEST(FastestByBound, SimulatesInBoundOrderAndSkipsWhatCannotWin) {
  // The second-lowest bound holds the fastest step; the third's bound (5.0)
  // is above it (4.5), so it is never simulated, nor is the fourth.
  std::vector<size_t> simulated;
  std::optional<Fastest> best = Choose({{2.0, 5.0, 1.0, 6.0}, {4.5, 9.0, 5.5, 7.0}}, &simulated);
  ASSERT_TRUE(best);
  EXPECT_EQ(best->index, 0u);
  EXPECT_DOUBLE_EQ(best->result.iteration.seconds(), 4.5);
  EXPECT_EQ(simulated, (std::vector<size_t>{2, 0}));
}

TEST(FastestByBound, EqualStepsGoToTheFirstCandidate) {
  std::vector<size_t> simulated;
  std::optional<Fastest> best = Choose({{1.0, 0.5, 0.8}, {3.0, 3.0, 3.0}}, &simulated);
  ASSERT_TRUE(best);
  EXPECT_EQ(best->index, 0u);
  EXPECT_EQ(simulated.size(), 3u);
}

TEST(FastestByBound, CandidatesThatDoNotCountAreSteppedOver) {
  std::vector<size_t> simulated;
  std::optional<Fastest> best = Choose({{1.0, 2.0, 3.0}, {-1, 2.5, -1}}, &simulated);
  ASSERT_TRUE(best);
  EXPECT_EQ(best->index, 1u);
  EXPECT_EQ(simulated, (std::vector<size_t>{0, 1}));  // the third's bound (3.0) is above 2.5
  simulated.clear();
  EXPECT_FALSE(Choose({{1.0, 2.0}, {-1, -1}}, &simulated));
  EXPECT_EQ(simulated.size(), 2u);
  EXPECT_FALSE(Choose({{}, {}}, &simulated));
}

// Candidates simulated several at a time, however many each round: accept
// sees exactly what one worker would hand it, so the choice and what it
// records stay the same.
TEST(FastestByBound, WorkersChangeNothingAcceptSees) {
  const Case c = {{3.0, 1.0, 2.5, 2.0, 4.0, 1.5, 3.5, 0.5}, {5.0, 4.0, -1, 2.4, 6.0, 3.0, 3.6, 9.0}};
  std::vector<size_t> one, three, varying;
  int round = 0;
  std::optional<Fastest> a = Choose(c, &one), b = Choose(c, &three, [] { return 3; }),
                         v = Choose(c, &varying, [&] { return ++round % 2 == 0 ? 4 : 1; });
  ASSERT_TRUE(a && b && v);
  EXPECT_EQ(a->index, 3u);
  EXPECT_EQ(b->index, a->index);
  EXPECT_EQ(v->index, a->index);
  EXPECT_EQ(one, (std::vector<size_t>{7, 1, 5, 3}));
  EXPECT_EQ(three, one);
  EXPECT_EQ(varying, one);
  EXPECT_GE(round, 2);  // asked again each round
}

}  // namespace
}  // namespace stacksim::validate
