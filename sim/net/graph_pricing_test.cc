// Prices on graph fabrics against hand counts: a torus ring and its sibling
// copies sharing links in dimension order, ECMP across rails on a rail-only
// fabric, pipeline sends sharing a dragonfly's global link, and the
// analytic model keeping the measured curves inside an NVSwitch.
#include "sim/net/graph_pricing.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "sim/fabric/generators.h"
#include "sim/net/analytic_network.h"
#include "sim/util/error.h"

namespace stacksim::net {
namespace {

using config::ScaleUpKind;
using config::TopologyConfig;
using trace::CollectiveKind;
using trace::CommGroup;

constexpr double kGB = 1e9;

TopologyConfig Node(int gpus, int nics) {
  TopologyConfig t;
  t.name = "test-node";
  t.gpus_per_node = gpus;
  t.scale_up = {ScaleUpKind::kNvSwitch, gpus, Bandwidth{450 * kGB}, Time::Us(1)};
  t.pcie_bandwidth = Bandwidth{64 * kGB};
  t.nics = {nics, Bandwidth{50 * kGB}, Time::Us(2)};
  return t;
}

CommGroup Group(int64_t first, int64_t stride, int size, int siblings = 1, int64_t sibling_stride = 0) {
  CommGroup g;
  g.name = "test";
  g.size = size;
  g.first_rank = first;
  g.stride = stride;
  g.siblings = siblings;
  g.sibling_stride = sibling_stride;
  return g;
}

GraphPricing Pricing(fabric::FabricGraph graph, const TopologyConfig& t, double nic_efficiency = 1.0) {
  return GraphPricing(std::make_shared<const GraphFabric>(std::move(graph), t, 1.0, nic_efficiency), Time::Us(2),
                      Time::Us(5));
}

TEST(GraphPricing, TorusRingRunsAtOneLinkAndSiblingsShareIt) {
  // 4 x 4 torus of 75 GB/s links; the topology's scale-up hop is 1 us.
  GraphPricing p = Pricing(fabric::Torus({{4, 4}, fabric::LinkKind::kNvLink, Bandwidth{75 * kGB}, Time::Us(1)}),
                           Node(4, 0));
  // GPUs 0-3 are one row: each ring edge one link, the last the wrap-around.
  const CommGroup row = Group(0, 1, 4);
  EXPECT_NEAR(p.RingSecondsPerByte(row), 1 / (75 * kGB), 1e-24);
  // All-gather of 300 MB: (p-1)/p x S at 75 GB/s = 3 ms; four steps of
  // intra 2 us (one hop each, no latency beyond the first hop), 3 of them.
  trace::CommOp gather{CollectiveKind::kAllGather, Bytes{300e6}};
  engine::CommCost c = p.Collective(gather, row);
  EXPECT_EQ(c.transfer, Time::Ms(3));
  EXPECT_EQ(c.latency, Time::Us(6));
  EXPECT_EQ(c.links, engine::kScaleUpLink);
  // GPUs {0, 2} with a copy {1, 3}: 0 -> 2 and 2 -> 0 are half the ring
  // away, both taken the positive way (0 -> 1 -> 2, 2 -> 3 -> 0), and the
  // copy's edges cover the same links in the same direction: two flows per link.
  EXPECT_NEAR(p.RingSecondsPerByte(Group(0, 2, 2, 2, 1)), 2 / (75 * kGB), 1e-24);
  // Without the copy, one flow per link.
  EXPECT_NEAR(p.RingSecondsPerByte(Group(0, 2, 2)), 1 / (75 * kGB), 1e-24);
}

TEST(GraphPricing, RailOnlyKeepsRingsOnTheirRailAndSpreadsCrossRailSends) {
  TopologyConfig t = Node(8, 8);
  GraphPricing p = Pricing(fabric::RailOnly(t, 4, Time::Ns(500)), t, 0.9);
  // A DP ring over GPU 0 of 4 nodes, with its 7 siblings (the other GPU
  // indices): each ring on its own rail at the NIC's 45 GB/s.
  EXPECT_NEAR(p.RingSecondsPerByte(Group(0, 8, 4, 8, 1)), 1 / (45 * kGB), 1e-24);
  // GPU 0 of node 0 to GPU 1 of node 1: NVLink then rail 1, or rail 0 then
  // NVLink, half the flow each: two NICs' worth, 90 GB/s.
  trace::TransferOp send{9, Bytes{90e6}};
  engine::CommCost c = p.Transfer(send, Group(0, 9, 2));
  EXPECT_EQ(c.transfer, Time::Ms(1));
  EXPECT_EQ(c.links, engine::kScaleOutLink | engine::kScaleUpLink);
  // One step: inter 5 us plus, beyond NIC-to-NIC, the rail switch's 0.5 us
  // and the NVLink hop's 1 us (the slower path's latency).
  EXPECT_EQ(c.latency, Time::Us(6.5));
}

TEST(GraphPricing, DragonflySendsShareTheGlobalLink) {
  // Two groups of one router, 2 one-GPU nodes per router, one global link
  // of 25 GB/s between them.
  TopologyConfig t = Node(1, 1);
  fabric::DragonflySpec spec{2, 1, 2, 1, fabric::LinkKind::kInfiniBand, Bandwidth{50 * kGB}, Bandwidth{25 * kGB},
                             Time::Ns(300)};
  GraphPricing p = Pricing(fabric::Dragonfly(t, spec), t);
  trace::TransferOp send{2, Bytes{50e6}};
  // Alone, the global link: 2 ms. With its sibling (GPU 1 -> GPU 3) on the
  // same link at once: 4 ms.
  EXPECT_EQ(p.Transfer(send, Group(0, 2, 2)).transfer, Time::Ms(2));
  EXPECT_EQ(p.Transfer(send, Group(0, 2, 2, 2, 1)).transfer, Time::Ms(4));
  // Latency: inter 5 us + the router-to-router hop, 0.3 us.
  EXPECT_EQ(p.Transfer(send, Group(0, 2, 2)).latency, Time::Us(5.3));
}

TEST(GraphPricing, AGroupBeyondTheGraphIsAnErrorNamingTheFabric) {
  GraphPricing p = Pricing(fabric::Torus({{4, 4}, fabric::LinkKind::kIci, Bandwidth{75 * kGB}, Time::Us(1)}),
                           Node(4, 0));
  trace::CommOp op{CollectiveKind::kAllReduce, Bytes{1e6}};
  try {
    p.Collective(op, Group(8, 4, 4));  // GPUs 8, 12, 16, 20 of a 16-GPU torus
    ADD_FAILURE() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.key_path(), "fabric");
    EXPECT_NE(std::string(e.what()).find("beyond the fabric graph's 16 GPUs"), std::string::npos) << e.what();
  }
}

TEST(GraphPricing, AnalyticModelKeepsTheMeasuredCurvesInsideOneNvSwitch) {
  TopologyConfig fat = Node(8, 8);
  fat.fabric.rail_optimized = true;
  fat.fabric.levels = {{"leaf", 32, 1.0, Time::Ns(500)}};
  TopologyConfig rail_only = fat;
  rail_only.fabric.levels.clear();
  rail_only.fabric.graph = {{"generator", "rail-only"}, {"hop_latency", "0.5 us"}};
  rail_only.max_nodes = 4;
  config::ProfileConfig profile;
  profile.name = "test";
  profile.intra_reference_link.value = Bandwidth{450 * kGB};
  profile.intra_ring.points = {{Bytes{1e3}, Bandwidth{20 * kGB}}, {Bytes{1e9}, Bandwidth{360 * kGB}}};
  profile.intra_all_reduce = profile.intra_ring;
  profile.intra_latency.value = Time::Us(2);
  profile.inter_latency.value = Time::Us(5);
  profile.nic_efficiency.value = 0.9;
  AnalyticNetwork tree(fat, profile), graph(rail_only, profile, 32);
  ASSERT_EQ(tree.graph(), nullptr);
  ASSERT_NE(graph.graph(), nullptr);
  CommGroup tp = Group(8, 1, 8);
  tp.ranks_per_node = 8;
  for (double bytes : {4e3, 64e6}) {
    trace::CommOp op{CollectiveKind::kAllReduce, Bytes{bytes}};
    EXPECT_EQ(graph.Collective(op, tp).transfer, tree.Collective(op, tp).transfer);
    EXPECT_EQ(graph.Collective(op, tp).latency, tree.Collective(op, tp).latency);
  }
  // Across nodes on one rail, the graph gives the NIC's 45 GB/s, as the tree.
  CommGroup dp = Group(0, 8, 4);
  dp.nodes = 4;
  trace::CommOp op{CollectiveKind::kAllGather, Bytes{1e9}};
  EXPECT_NEAR(graph.Collective(op, dp).transfer.ns(), tree.Collective(op, dp).transfer.ns(), 1);
}

}  // namespace
}  // namespace stacksim::net
