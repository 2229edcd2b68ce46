#include "sim/net/network_factory.h"

#include <gtest/gtest.h>

#include <string>

#include "sim/util/error.h"
#include "tests/fixtures.h"
#include "tests/input_error.h"

namespace stacksim::net {
namespace {

TEST(MakeNetwork, NamesPickTheModel) {
  const config::TopologyConfig topology = testing::DgxTopology();
  const config::ProfileConfig profile = testing::RoundProfile();
  EXPECT_EQ(MakeNetwork("analytic", topology, profile, 8)->name(), "analytic");
  EXPECT_EQ(MakeNetwork("simgrid", topology, profile, 16)->name(), "simgrid");
}

TEST(MakeNetwork, UnknownNameIsAnInputErrorNamingTheFlag) {
  InputError e = testing::ErrorFrom([] { MakeNetwork("ns3", testing::DgxTopology(), testing::RoundProfile(), 8); });
  EXPECT_EQ(e.key_path(), "--network");
  EXPECT_NE(std::string(e.what()).find("unknown network model 'ns3' (analytic, simgrid)"), std::string::npos);
}

}  // namespace
}  // namespace stacksim::net
