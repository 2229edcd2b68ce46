// Generators checked by hand counts: vertices and links of each fabric, and
// that today's fat tree is the graph the SimGrid platform builds.
#include "sim/fabric/generators.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "sim/config/topology.h"
#include "sim/fabric/fabric_metrics.h"
#include "sim/fabric/graph_spec.h"
#include "sim/net/simgrid_fabric.h"

namespace stacksim::fabric {
namespace {

const std::string kSourceDir = STACKSIM_SOURCE_DIR;

config::TopologyConfig Shipped(const std::string& name) {
  return config::LoadTopologyFile(kSourceDir + "/topologies/" + name + ".json");
}

int64_t Count(const FabricSummary& s, VertexKind k) { return s.vertices[static_cast<int>(k)]; }
int64_t Count(const FabricSummary& s, LinkKind k) { return s.links[static_cast<int>(k)].count; }

// Switch-to-switch bandwidths, sorted.
std::vector<double> UplinkBandwidths(const FabricGraph& f) {
  std::vector<double> out;
  for (auto [e, end] = boost::edges(f.graph); e != end; ++e) {
    if (f.graph[boost::source(*e, f.graph)].kind == VertexKind::kSwitch &&
        f.graph[boost::target(*e, f.graph)].kind == VertexKind::kSwitch) {
      out.push_back(f.graph[*e].bandwidth.value);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(FatTree, DgxH100At64NodesHasOneLeafPerPodAndRailUnderOneSpine) {
  FabricGraph f = FatTree(Shipped("dgx-h100"), 64);
  FabricSummary s = Summarize(f);
  EXPECT_EQ(s.gpus, 512);
  EXPECT_EQ(Count(s, VertexKind::kNvSwitch), 64);
  EXPECT_EQ(Count(s, VertexKind::kNic), 512);
  EXPECT_EQ(Count(s, VertexKind::kSwitch), 2 * 8 + 1);  // 2 pods x 8 rails, one spine
  EXPECT_EQ(Count(s, LinkKind::kNvLink), 512);
  EXPECT_EQ(Count(s, LinkKind::kPcie), 512);
  EXPECT_EQ(Count(s, LinkKind::kInfiniBand), 512 + 16);
  // Each leaf uplink carries its 32 NICs: 32 x 50 GB/s.
  EXPECT_EQ(UplinkBandwidths(f), std::vector<double>(16, 32 * 50e9));
}

// The graph's uplinks are the SimGrid platform's, link for link (at line
// rate: the platform's NICs are given at line rate here too).
TEST(FatTree, UplinksAreTheSimGridPlatformsForEveryShippedFatTree) {
  for (const char* name : {"dgx-h100", "dgx-h100-2to1", "dgx-a100", "meta-h100-roce", "gb200-nvl72", "dgx-b200"}) {
    SCOPED_TRACE(name);
    config::TopologyConfig t = Shipped(name);
    const int nodes = std::min(t.max_nodes, 600);
    FabricGraph f = FatTree(t, nodes);
    net::Fabric platform(t, t.scale_up.per_gpu_bandwidth.value, t.nics.bandwidth.value, nodes * t.gpus_per_node);
    std::vector<double> expected;
    for (size_t i = 0; i < platform.links().size(); i += 2) {
      if (platform.links()[i].name.find("uplink") != std::string::npos) {
        expected.push_back(platform.links()[i].bandwidth);
      }
    }
    std::sort(expected.begin(), expected.end());
    std::vector<double> got = UplinkBandwidths(f);
    ASSERT_EQ(got.size(), expected.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], 1e-6 * expected[i]);
  }
}

TEST(FatTree, Gb200Nvl72SharesOneNvSwitchPerRack) {
  config::TopologyConfig t = Shipped("gb200-nvl72");
  FabricSummary s = Summarize(FatTree(t, 72));  // 4 racks of 18 trays
  EXPECT_EQ(s.gpus, 288);
  EXPECT_EQ(Count(s, VertexKind::kNvSwitch), 4);
  EXPECT_DOUBLE_EQ(s.scale_up_min.value, 900e9);
  EXPECT_DOUBLE_EQ(s.scale_out_min.value, 50e9);
}

TEST(FatTree, MultiPlaneSplitsEachNicOverItsPlanes) {
  config::TopologyConfig t = Shipped("dgx-h100");
  FabricGraph one = FatTree(t, 64, 1);
  FabricGraph two = FatTree(t, 64, 2);
  FabricSummary s1 = Summarize(one), s2 = Summarize(two);
  EXPECT_EQ(Count(s2, VertexKind::kSwitch), 2 * Count(s1, VertexKind::kSwitch));
  EXPECT_EQ(Count(s2, LinkKind::kInfiniBand), 2 * Count(s1, LinkKind::kInfiniBand));
  EXPECT_DOUBLE_EQ(s2.bisection.value, s1.bisection.value);
  EXPECT_DOUBLE_EQ(s2.scale_out_min.value, 50e9);
}

TEST(RailOnly, HasOneSwitchPerRailAndNoSpine) {
  FabricGraph f = RailOnly(Shipped("dgx-h100"), 64, Time::Ns(500));
  FabricSummary s = Summarize(f);
  EXPECT_EQ(Count(s, VertexKind::kSwitch), 8);
  EXPECT_TRUE(UplinkBandwidths(f).empty());
  EXPECT_TRUE(s.oversubscription.empty());
  // Across rails the path crosses NVLink: GPU, NIC, rail, NIC, GPU, NVSwitch, GPU.
  EXPECT_EQ(s.diameter_hops, 6);
}

TEST(Torus, LinksWrapAroundAndAPairOfTwoGetsOneLink) {
  TorusSpec spec{{4, 4, 4}, LinkKind::kIci, Bandwidth{75e9}, Time::Ns(1000)};
  FabricSummary s = Summarize(Torus(spec));
  EXPECT_EQ(s.gpus, 64);
  EXPECT_EQ(Count(s, LinkKind::kIci), 3 * 64);
  EXPECT_DOUBLE_EQ(s.scale_up_min.value, 6 * 75e9);
  spec.dims = {2, 4};
  EXPECT_EQ(Summarize(Torus(spec)).links[static_cast<int>(LinkKind::kIci)].count, 4 + 2 * 4);
}

TEST(Dragonfly, EveryPairOfGroupsGetsTheSameGlobalLinks) {
  config::TopologyConfig t = Shipped("dgx-h100");
  DragonflySpec spec{4, 3, 1, 2, LinkKind::kInfiniBand, Bandwidth{50e9}, Bandwidth{10e9}, Time::Ns(500)};
  FabricGraph f = Dragonfly(t, spec);
  FabricSummary s = Summarize(f);
  EXPECT_EQ(s.gpus, 4 * 3 * 8);
  EXPECT_EQ(Count(s, VertexKind::kSwitch), 12);
  // 4 groups x 3 local links, 6 pairs x (3 x 2 / 3) global links, 96 NIC links.
  EXPECT_EQ(Count(s, LinkKind::kInfiniBand), 12 + 6 * 2 + 96);
}

TEST(BuildFabric, EveryShippedTopologyBuildsAConnectedGraph) {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kSourceDir + "/topologies")) {
    if (entry.path().extension() != ".json") continue;
    SCOPED_TRACE(entry.path().string());
    config::TopologyConfig t = config::LoadTopologyFile(entry.path().string());
    // Fat trees at up to 64 nodes (the sizes are tested above); the others as they are.
    FabricGraph f = BuildFabric(t, t.fabric.graph.is_null() ? std::min(t.max_nodes > 0 ? t.max_nodes : 64, 64) : 0);
    EXPECT_EQ(f.gpus.size() % t.gpus_per_node, 0u);
    EXPECT_GE(Summarize(f).diameter_hops, 1);
    ++count;
  }
  EXPECT_GE(count, 12);
}

}  // namespace
}  // namespace stacksim::fabric
