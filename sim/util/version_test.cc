#include "sim/util/version.h"

#include <gtest/gtest.h>

namespace stacksim {
namespace {

TEST(BuildVersion, IsNeverEmpty) { EXPECT_FALSE(BuildVersion().empty()); }

TEST(WithVersion, AddsTheBuildAtTheTopLevelOfAnObject) {
  nlohmann::json j = WithVersion({{"iteration_s", 1.5}});
  EXPECT_EQ(j["version"], BuildVersion());
  EXPECT_EQ(j["iteration_s"], 1.5);
}

TEST(WithVersion, KeepsAVersionTheReportHasAndLeavesArraysAlone) {
  EXPECT_EQ(WithVersion({{"version", "mine"}})["version"], "mine");
  nlohmann::json array = nlohmann::json::array({1, 2});
  EXPECT_EQ(WithVersion(array), array);
}

}  // namespace
}  // namespace stacksim
