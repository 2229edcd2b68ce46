#include "sim/cli/flags.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace stacksim::cli {
namespace {

TEST(Flags, FormatTakesTheCommandsListOnly) {
  CLI::App app;
  std::string format = "text";
  AddFormat(&app, &format, {"text", "json", "csv"});
  app.parse("--format csv");
  EXPECT_EQ(format, "csv");
  EXPECT_THROW(app.parse("--format xml"), CLI::ValidationError);
  CLI::App plain;
  AddFormat(&plain, &format);
  EXPECT_THROW(plain.parse("--format csv"), CLI::ValidationError);
}

TEST(Flags, SetIsRepeatableAndThreadsBounded) {
  CLI::App app;
  std::vector<std::string> overrides;
  int threads = 0;
  AddSet(&app, &overrides);
  AddThreads(&app, &threads);
  app.parse("--set plan.tp=4 --set plan.pp=2 --threads 8");
  EXPECT_EQ(overrides, (std::vector<std::string>{"plan.tp=4", "plan.pp=2"}));
  EXPECT_EQ(threads, 8);
  EXPECT_THROW(app.parse("--threads 0"), CLI::ValidationError);
  EXPECT_THROW(app.parse("--threads 4097"), CLI::ValidationError);
}

TEST(Flags, NetworkNamesTheTwoModels) {
  CLI::App app;
  std::string network = "analytic";
  AddNetwork(&app, &network);
  app.parse("--network simgrid");
  EXPECT_EQ(network, "simgrid");
  EXPECT_THROW(app.parse("--network ns3"), CLI::ValidationError);
}

// The message CLI11 gives for `args`, "" when they parse.
std::string ErrorOf(CLI::App& app, const std::string& args) {
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    return e.what();
  }
  return "";
}

TEST(Flags, WholeNumbersAreCheckedBeforeConversionWithTheRangeInShortForm) {
  CLI::App app;
  int trials = 0;
  app.add_option("--trials", trials)->check(WholeIn(1, 1000000));
  EXPECT_EQ(ErrorOf(app, "--trials 1000000"), "");
  EXPECT_EQ(trials, 1000000);
  EXPECT_EQ(ErrorOf(app, "--trials 0"), "--trials: '0' is not a whole number from 1 to 1e+06");
  EXPECT_NE(ErrorOf(app, "--trials 2.5"), "");
  EXPECT_NE(ErrorOf(app, "--trials 99999999999999999999"), "");
  EXPECT_NE(ErrorOf(app, "--trials 12abc"), "");
}

TEST(Flags, ASeedIsNeverANegativeNumberWrapped) {
  CLI::App app;
  uint64_t seed = 1;
  app.add_option("--seed", seed)->check(SeedValue());
  EXPECT_EQ(ErrorOf(app, "--seed 18446744073709551615"), "");
  EXPECT_EQ(seed, UINT64_MAX);
  EXPECT_NE(ErrorOf(app, "--seed -1").find("is not a seed"), std::string::npos);
  EXPECT_NE(ErrorOf(app, "--seed 18446744073709551616"), "");
  EXPECT_NE(ErrorOf(app, "--seed +3"), "");
}

TEST(Flags, RealBoundsPrintShortNever309Digits) {
  CLI::App app;
  double usd = 0;
  app.add_option("--gpu-hour-usd", usd)->check(PositiveReal());
  const std::string e = ErrorOf(app, "--gpu-hour-usd -1");
  EXPECT_EQ(e, "--gpu-hour-usd: '-1' is not a number > 0");
  EXPECT_LT(e.size(), 80u);
  EXPECT_NE(ErrorOf(app, "--gpu-hour-usd 0"), "");
  EXPECT_NE(ErrorOf(app, "--gpu-hour-usd nan"), "");
  EXPECT_NE(ErrorOf(app, "--gpu-hour-usd inf"), "");
  EXPECT_EQ(ErrorOf(app, "--gpu-hour-usd 2.5"), "");
  EXPECT_EQ(usd, 2.5);
}

}  // namespace
}  // namespace stacksim::cli
