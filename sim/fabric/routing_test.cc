// Shortest routes with ECMP on the fabric graph: hand counts on a torus and
// a fat tree, and the fat tree's hop counts against the SimGrid platform's
// routes.
#include "sim/fabric/routing.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
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

TEST(Routing, TorusRoutesInDimensionOrder) {
  FabricGraph f = Torus({{4, 4}, LinkKind::kIci, Bandwidth{75e9}, Time::Ns(1000)});
  // (0,0) to (2,2): the first dimension first, both ways as short, so the
  // positive way: 0 -> 4 -> 8, then 8 -> 9 -> 10. One path, all of the flow.
  Route r = DimensionOrderRoute(f, f.gpus[0], f.gpus[10]);
  EXPECT_EQ(r.hops, 4);
  EXPECT_EQ(r.paths, 1);
  EXPECT_EQ(r.latency, Time::Us(4));
  EXPECT_DOUBLE_EQ(r.bandwidth.value, 75e9);
  std::vector<Vertex> visited{f.gpus[0]};
  for (size_t i = 0; i < r.links.size(); ++i) {
    const Edge e = r.links[i].first;
    EXPECT_DOUBLE_EQ(r.links[i].second, 1.0);
    const Vertex from = visited.back();
    const Vertex to = boost::source(e, f.graph) == from ? boost::target(e, f.graph) : boost::source(e, f.graph);
    EXPECT_EQ(r.directed[i], DirectedLink(f.graph, e, from));
    EXPECT_EQ(r.directed[i] % 2, from < to ? 0 : 1);
    visited.push_back(to);
  }
  EXPECT_EQ(visited, (std::vector<Vertex>{f.gpus[0], f.gpus[4], f.gpus[8], f.gpus[9], f.gpus[10]}));
  // (0,3) to (0,0): one hop back round the wrap-around link.
  EXPECT_EQ(DimensionOrderRoute(f, f.gpus[3], f.gpus[0]).hops, 1);
  // The router picks dimension order on a torus.
  Router router(f);
  EXPECT_EQ(router.Between(0, 10).paths, 1);
}

TEST(Routing, RouterRoutesEachPairOnceAsShortestRoute) {
  config::TopologyConfig t = config::LoadTopologyFile(std::string(STACKSIM_SOURCE_DIR) + "/topologies/dgx-h100-2to1.json");
  FabricGraph f = FatTree(t, 128);
  Router router(f);
  for (int64_t dst : {1, 9, 8 * 40, 8 * 127 + 3}) {
    SCOPED_TRACE(dst);
    const Route& a = router.Between(0, dst);
    Route b = ShortestRoute(f, f.gpus[0], f.gpus[dst]);
    EXPECT_EQ(a.hops, b.hops);
    EXPECT_EQ(a.paths, b.paths);
    EXPECT_EQ(a.latency, b.latency);
    EXPECT_DOUBLE_EQ(a.bandwidth.value, b.bandwidth.value);
    EXPECT_EQ(&router.Between(0, dst), &a);  // kept, not routed again
  }
  EXPECT_EQ(router.routed_pairs(), 4u);
  // Another pod: NIC to NIC through the leaves, and a spine hop (half up, half down).
  EXPECT_EQ(router.Between(0, 8 * 40).latency, t.nics.latency + t.fabric.levels[1].hop_latency);
}

// The fat trees keep the parametric network models (sim/net/analytic_network,
// simgrid_fabric); the graph's routes must be the same paths: for every
// shipped fat-tree topology, between GPUs of one node and of one rail at
// every level of the tree, the graph route crosses the SimGrid platform's
// links plus the two GPU-NIC PCIe links, and its bottleneck is theirs (or
// the PCIe link, which the platform does not hold).
TEST(Routing, EveryShippedFatTreeRoutesAsTheSimGridPlatform) {
  int checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(STACKSIM_SOURCE_DIR) + "/topologies")) {
    if (entry.path().extension() != ".json") continue;
    config::TopologyConfig t = config::LoadTopologyFile(entry.path().string());
    if (!t.fabric.graph.is_null() || t.fabric.levels.empty() || t.nics.per_node == 0) continue;
    // An NVLink domain wider than a node (GB200 NVL72) is one NVSwitch
    // vertex in the graph, so its routes between nodes of one rack use
    // NVLink where the platform's go through NICs: not the same paths.
    if (t.scale_up.domain_gpus > t.gpus_per_node) continue;
    // A direct-link mesh node (MI300X's Infinity Fabric): the graph links
    // each GPU pair directly (one hop at 1/7 of the GPU's bandwidth), while
    // the SimGrid platform still passes through one node switch (two hops
    // at the full per-GPU bandwidth). Open: build the mesh in the platform.
    if (t.scale_up.kind == config::ScaleUpKind::kNvLinkMesh) continue;
    SCOPED_TRACE(t.name);
    const int gpn = t.gpus_per_node;
    const int64_t nodes = std::min<int64_t>(t.max_nodes > 0 ? t.max_nodes : 512, 512);
    FabricGraph f = FatTree(t, nodes);
    net::Fabric platform(t, t.scale_up.per_gpu_bandwidth.value, t.nics.bandwidth.value, static_cast<int>(nodes * gpn));
    std::vector<int64_t> far_nodes{1, nodes - 1};
    for (const auto& level : t.fabric.levels) far_nodes.push_back(std::min<int64_t>(level.nodes_below, nodes - 1));
    std::vector<std::pair<int64_t, int64_t>> pairs;
    if (gpn > 1) pairs.emplace_back(0, 1);
    for (int64_t n : far_nodes) {
      if (n > 0) pairs.emplace_back(gpn - 1, n * gpn + gpn - 1);
    }
    for (auto [src, dst] : pairs) {
      SCOPED_TRACE(std::to_string(src) + " -> " + std::to_string(dst));
      std::vector<int32_t> links;
      platform.RouteLinks(src, dst, &links);
      const Route r = ShortestRoute(f, f.gpus[src], f.gpus[dst]);
      const bool across = src / gpn != dst / gpn;
      EXPECT_EQ(r.hops, static_cast<int>(links.size()) + (across ? 2 : 0));
      EXPECT_EQ(r.paths, 1);
      double bottleneck = across ? t.pcie_bandwidth.value : 1e300;
      for (int32_t l : links) bottleneck = std::min(bottleneck, platform.links()[l].bandwidth);
      EXPECT_NEAR(r.bandwidth.value, bottleneck, 1e-9 * bottleneck);
    }
    ++checked;
  }
  EXPECT_GE(checked, 6);
}

}  // namespace
}  // namespace stacksim::fabric
