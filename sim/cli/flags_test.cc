#include "sim/cli/flags.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace stacksim::cli
