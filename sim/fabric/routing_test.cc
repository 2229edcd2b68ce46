// Shortest routes with ECMP on the fabric graph: hand counts on a torus and
// a fat tree, and the fat tree's hop counts against the SimGrid platform's
// routes.
#include "sim/fabric/routing.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/config/topology.h"
#include "sim/fabric/generators.h"
#include "sim/net/simgrid_fabric.h"

namespace stacksim::fabric {
namespace {

TEST(Routing, TorusSpreadsOverEveryMinimalPath) {
  FabricGraph f = Torus({{4, 4}, LinkKind::kIci, Bandwidth{75e9}, Time::Ns(1000)});
  Route r = ShortestRoute(f, f.gpus[0], f.gpus[5]);  // (0,0) to (1,1)
  EXPECT_EQ(r.hops, 2);
  EXPECT_EQ(r.paths, 2);
  ASSERT_EQ(r.links.size(), 4u);
  for (const auto& [e, part] : r.links) EXPECT_DOUBLE_EQ(part, 0.5);
  EXPECT_DOUBLE_EQ(r.bandwidth.value, 150e9);
  // (0,0) to (2,2): 2 ways round each ring, 6 orders of the 4 moves.
  Route far = ShortestRoute(f, f.gpus[0], f.gpus[10]);
  EXPECT_EQ(far.hops, 4);
  EXPECT_EQ(far.paths, 2 * 2 * 6);
  EXPECT_DOUBLE_EQ(far.bandwidth.value, 4 * 75e9);
}

TEST(Routing, FatTreeHopsAreTheSimGridRoutesPlusTheGpuNicLinks) {
  config::TopologyConfig t = config::LoadTopologyFile(std::string(STACKSIM_SOURCE_DIR) + "/topologies/dgx-h100-2to1.json");
  FabricGraph f = FatTree(t, 128);
  net::Fabric platform(t, t.scale_up.per_gpu_bandwidth.value, t.nics.bandwidth.value, 128 * 8);
  for (int64_t dst : {1, 8, 16 * 8, 40 * 8, 127 * 8 + 7}) {
    SCOPED_TRACE(dst);
    const int64_t src = dst % 8;  // the same rail (GPU index) on node 0
    std::vector<int32_t> links;
    if (src != dst) platform.RouteLinks(src, dst, &links);
    if (src == dst) continue;
    Route r = ShortestRoute(f, f.gpus[src], f.gpus[dst]);
    // Inside a node both take GPU -> NVSwitch -> GPU; across nodes the graph
    // adds the GPU-NIC PCIe link at each end.
    EXPECT_EQ(r.hops, static_cast<int>(links.size()) + (dst / 8 == 0 ? 0 : 2));
  }
  // Same rail, other pod: one path, the NIC's 50 GB/s (the 2:1 uplink is one
  // fat edge of 32 x 50 / 2 = 800 GB/s).
  Route same_rail = ShortestRoute(f, f.gpus[0], f.gpus[40 * 8]);
  EXPECT_EQ(same_rail.paths, 1);
  EXPECT_DOUBLE_EQ(same_rail.bandwidth.value, 50e9);
  // Another rail in the same pod, 3 equal paths: up the spine; over NVLink
  // first to the source node's rail-1 NIC (as NCCL's PXN); or over rail 0 to
  // the destination node and NVLink last. Halved at the GPU and again at
  // leaf 0, rail 1's leaf-to-NIC link carries 1/2 + 1/4 of the flow.
  Route cross = ShortestRoute(f, f.gpus[0], f.gpus[8 + 1]);
  EXPECT_EQ(cross.hops, 6);
  EXPECT_EQ(cross.paths, 3);
  EXPECT_DOUBLE_EQ(cross.bandwidth.value, 50e9 / 0.75);
}

TEST(Routing, UnreachableGpusHaveNoRoute) {
  FabricGraph f;
  Vertex a = f.AddVertex(VertexKind::kGpu, "a");
  Vertex b = f.AddVertex(VertexKind::kGpu, "b");
  Route r = ShortestRoute(f, a, b);
  EXPECT_EQ(r.hops, -1);
  EXPECT_EQ(r.paths, 0);
  EXPECT_TRUE(r.links.empty());
}

}  // namespace
}  // namespace stacksim::fabric
