// Bisection bandwidth, diameter, injection and oversubscription against hand
// counts for a fat tree, a torus and a dragonfly.
#include "sim/fabric/fabric_metrics.h"

#include <gtest/gtest.h>

#include "sim/fabric/generators.h"

namespace stacksim::fabric {
namespace {

// 8 one-GPU nodes with one 50 GB/s NIC each; leaves of 2 nodes at 2:1, one spine.
config::TopologyConfig SmallFatTree(double leaf_oversubscription) {
  config::TopologyConfig t;
  t.name = "small";
  t.gpus_per_node = 1;
  t.scale_up = {config::ScaleUpKind::kNvSwitch, 1, Bandwidth{450e9}, Time::Ns(1000)};
  t.pcie_bandwidth = Bandwidth{64e9};
  t.nics = {1, Bandwidth{50e9}, Time::Ns(2000)};
  t.fabric.rail_optimized = false;
  t.fabric.levels = {{"leaf", 2, leaf_oversubscription, Time::Ns(500)}, {"spine", 8, 1.0, Time::Ns(500)}};
  t.max_nodes = 8;
  return t;
}

TEST(Bisection, FatTreeIsHalfTheLeavesUplinks) {
  // Hand count: GPUs 0-3 sit under leaves 0 and 1; each leaf's uplink is
  // 2 NICs x 50 GB/s / 2 = 50 GB/s, so 2 x 50 = 100 GB/s cross.
  FabricSummary s = Summarize(FatTree(SmallFatTree(2.0), 8));
  EXPECT_DOUBLE_EQ(s.bisection.value, 100e9);
  // Non-blocking: 4 NICs x 50 GB/s.
  EXPECT_DOUBLE_EQ(Summarize(FatTree(SmallFatTree(1.0), 8)).bisection.value, 200e9);
  // GPU, NIC, leaf, spine, leaf, NIC, GPU.
  EXPECT_EQ(s.diameter_hops, 6);
  ASSERT_EQ(s.oversubscription.size(), 1u);
  EXPECT_EQ(s.oversubscription[0].level, 0);
  EXPECT_EQ(s.oversubscription[0].switches, 4);
  EXPECT_DOUBLE_EQ(s.oversubscription[0].min, 2.0);
  EXPECT_DOUBLE_EQ(s.oversubscription[0].max, 2.0);
  EXPECT_DOUBLE_EQ(s.scale_out_min.value, 50e9);
}

TEST(Bisection, TorusCutsTwiceTheFacesAcrossItsFirstDimension) {
  // 4x4x4: the plane x = 1|2 and the wrap-around x = 3|0 each cut 16 links.
  TorusSpec spec{{4, 4, 4}, LinkKind::kIci, Bandwidth{75e9}, Time::Ns(1000)};
  FabricSummary s = Summarize(Torus(spec));
  EXPECT_DOUBLE_EQ(s.bisection.value, 2 * 16 * 75e9);
  EXPECT_EQ(s.diameter_hops, 2 + 2 + 2);
  spec.dims = {8, 4};
  FabricSummary s2 = Summarize(Torus(spec));
  EXPECT_DOUBLE_EQ(s2.bisection.value, 2 * 4 * 75e9);
  EXPECT_EQ(s2.diameter_hops, 4 + 2);
}

TEST(Bisection, DragonflyIsTheGlobalLinksBetweenHalvesOfTheGroups) {
  // 4 groups of 3 routers, one 1-GPU node per router, 1 global link per
  // router: one link per pair of groups. Groups {0,1} against {2,3}: 4
  // global links of 10 GB/s; NICs (50) and local links (50) do not bind.
  config::TopologyConfig t = SmallFatTree(1.0);
  DragonflySpec spec{4, 3, 1, 1, LinkKind::kInfiniBand, Bandwidth{50e9}, Bandwidth{10e9}, Time::Ns(500)};
  FabricSummary s = Summarize(Dragonfly(t, spec));
  EXPECT_EQ(s.gpus, 12);
  EXPECT_DOUBLE_EQ(s.bisection.value, 4 * 10e9);
  // GPU, NIC, router, local, global, local, router, NIC, GPU: 7 links.
  EXPECT_EQ(s.diameter_hops, 7);
  EXPECT_TRUE(s.oversubscription.empty());  // routers are all level 0
}

TEST(Bisection, LimitedByTheNarrowestCutNotTheSplit) {
  // One GPU on each side of a single 10 GB/s link behind 100 GB/s links.
  FabricGraph f;
  Vertex a = f.AddVertex(VertexKind::kGpu, "a");
  Vertex b = f.AddVertex(VertexKind::kGpu, "b");
  Vertex s1 = f.AddVertex(VertexKind::kSwitch, "s1", 0);
  Vertex s2 = f.AddVertex(VertexKind::kSwitch, "s2", 0);
  f.AddLink(a, s1, LinkKind::kRoce, Bandwidth{100e9}, Time::Zero());
  f.AddLink(s1, s2, LinkKind::kRoce, Bandwidth{10e9}, Time::Zero());
  f.AddLink(s2, b, LinkKind::kRoce, Bandwidth{100e9}, Time::Zero());
  EXPECT_DOUBLE_EQ(BisectionBandwidth(f).value, 10e9);
  // A second, parallel path adds its bandwidth.
  f.AddLink(s1, s2, LinkKind::kRoce, Bandwidth{15e9}, Time::Zero());
  EXPECT_DOUBLE_EQ(BisectionBandwidth(f).value, 25e9);
}

TEST(Diameter, DisconnectedGpusAreReported) {
  FabricGraph f;
  f.AddVertex(VertexKind::kGpu, "a");
  f.AddVertex(VertexKind::kGpu, "b");
  EXPECT_EQ(Summarize(f).diameter_hops, -1);
  EXPECT_DOUBLE_EQ(Summarize(f).bisection.value, 0);
}

}  // namespace
}  // namespace stacksim::fabric
