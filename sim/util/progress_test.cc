#include "sim/util/progress.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace stacksim {
namespace {

std::string Contents(std::FILE* f) {
  std::rewind(f);
  std::string out;
  char buf[256];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) out.append(buf, n);
  return out;
}

TEST(ProgressMeter, LineCountsAndEstimatesTheTimeLeftAtTheRateSoFar) {
  std::FILE* f = std::tmpfile();
  ProgressMeter m("validate", "runs", 10, true, f);
  // 2 of 10 in 4 s: 8 more at 2 s each.
  EXPECT_EQ(m.Line(2, 4), "validate progress: 2/10 runs, 4 s elapsed, about 16 s left");
  EXPECT_EQ(m.Line(0, 0), "validate progress: 0/10 runs, 0 s elapsed");
  EXPECT_EQ(m.Line(10, 600), "validate progress: 10/10 runs, 10.0 min elapsed");
  std::fclose(f);
}

TEST(ProgressMeter, ALogGetsALineAtTheStartAndOneAtTheEnd) {
  std::FILE* f = std::tmpfile();  // not a terminal
  {
    ProgressMeter m("run-campaign", "trials", 3, true, f);
    m.Add();
    m.Add(2);
  }
  const std::string out = Contents(f);
  std::fclose(f);
  EXPECT_EQ(out.find("run-campaign progress: 0/3 trials"), 0u) << out;
  EXPECT_NE(out.find("run-campaign progress: 3/3 trials"), std::string::npos) << out;
  EXPECT_EQ(out.find("1/3"), std::string::npos) << "no line between the start and the end within 10 s: " << out;
}

TEST(ProgressMeter, GrowsWithWorkFoundAsItGoes) {
  std::FILE* f = std::tmpfile();
  {
    ProgressMeter m("run-campaign", "trials", 0, true, f);
    m.AddWork(2);  // a sweep point
    m.Add(2);      // not the end yet: more work comes
    m.AddWork(1);  // the final run
    m.Add();
  }
  const std::string out = Contents(f);
  std::fclose(f);
  EXPECT_EQ(out.find("run-campaign progress: 0/2 trials"), 0u) << out;
  EXPECT_EQ(out.find("2/2"), std::string::npos) << "a sweep point's end is not the end: " << out;
  EXPECT_NE(out.find("run-campaign progress: 3/3 trials"), std::string::npos) << out;
}

TEST(ProgressMeter, PrintsNothingWhenDisabled) {
  std::FILE* f = std::tmpfile();
  {
    ProgressMeter m("x", "items", 3, false, f);
    m.Add(3);
  }
  EXPECT_EQ(Contents(f), "");
  std::fclose(f);
}

TEST(HumanDuration, PicksAUnitPeopleRead) {
  EXPECT_EQ(HumanDuration(42), "42 s");
  EXPECT_EQ(HumanDuration(210), "3.5 min");
  EXPECT_EQ(HumanDuration(7560), "2.1 h");
}

}  // namespace
}  // namespace stacksim
