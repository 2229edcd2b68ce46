// Each test runs in its own process (gtest_discover_tests): SimGrid allows
// one simulation per process.
#include "sim/net/simgrid_network.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <tuple>
#include <string>
#include <vector>

#include "sim/engine/cost_model.h"
#include "sim/engine/engine.h"
#include "sim/net/simgrid_fabric.h"

namespace stacksim::net {
namespace {

using config::BusBandwidthCurve;
using config::ProfileConfig;
using config::ScaleUpKind;
using config::TopologyConfig;
using trace::CollectiveKind;
using trace::CommGroup;
using trace::TaskId;

constexpr double kGB = 1e9;

TopologyConfig Dgx(double oversubscription = 1.0, int leaf_nodes = 32) {
  TopologyConfig t;
  t.name = "test-dgx";
  t.gpus_per_node = 8;
  t.scale_up = {ScaleUpKind::kNvSwitch, 8, Bandwidth{450 * kGB}, Time::Us(1)};
  t.pcie_bandwidth = Bandwidth{64 * kGB};
  t.nics = {8, Bandwidth{50 * kGB}, Time::Us(2)};
  t.fabric.rail_optimized = true;
  t.fabric.levels = {{"leaf", leaf_nodes, oversubscription, Time::Ns(500)}, {"spine", 2048, 1.0, Time::Ns(500)}};
  return t;
}

BusBandwidthCurve Flat(double gbps) {
  BusBandwidthCurve c;
  c.points = {{Bytes{1e3}, Bandwidth{gbps * kGB}}, {Bytes{8e9}, Bandwidth{gbps * kGB}}};
  c.gpus = 8;
  return c;
}

ProfileConfig FlatProfile() {
  ProfileConfig p;
  p.name = "test-flat";
  p.intra_reference_link.value = Bandwidth{450 * kGB};
  p.intra_all_reduce = Flat(360);
  p.intra_ring = Flat(360);
  p.intra_latency.value = Time::Us(2);
  p.nic_efficiency.value = 0.9;
  p.inter_latency.value = Time::Us(5);
  return p;
}

CommGroup Placed(int64_t first, int64_t stride, int size, int per_node, std::vector<trace::RankId> sim) {
  CommGroup g;
  g.name = "g";
  g.size = size;
  g.ranks_per_node = per_node;
  g.nodes = size / per_node;
  g.first_rank = first;
  g.stride = stride;
  g.simulated = std::move(sim);
  return g;
}

struct Built {
  trace::Trace trace;
  std::vector<TaskId> tasks;
};

engine::ReplayResult Replay(const engine::NetworkModel& net, const trace::Trace& trace) {
  engine::FixedCostModel cost(FlopRate{1e15});
  return engine::Engine(cost, net).Replay(trace);
}

TEST(SimGridNetwork, OneCollectiveAloneAgreesWithAnalyticWithinThreePercent) {
  // One rank runs, one after the other: every collective kind inside a node
  // (8 GPUs) and across 4 nodes (32 GPUs), the hierarchical all-to-all
  // across them, and send/recv in and across nodes. Each task's duration
  // must match the analytic cost.
  TopologyConfig topo = Dgx();
  ProfileConfig prof = FlatProfile();
  SimGridNetwork sg(topo, prof, 64);
  AnalyticNetwork an(topo, prof);
  trace::Trace tr;
  tr.SetRankCount(2);
  tr.InternName("x");
  tr.InternLabel("l");
  trace::StreamId st = tr.InternStream("s");
  auto intra = tr.AddGroup(Placed(0, 1, 8, 8, {0}));
  auto inter = tr.AddGroup(Placed(0, 1, 32, 8, {0}));
  auto near = tr.AddGroup(Placed(0, 3, 2, 2, {0, 1}));
  auto far = tr.AddGroup(Placed(0, 8, 2, 1, {0, 1}));
  std::vector<TaskId> tasks;
  TaskId prev = -1;
  auto chain = [&](trace::Task t) {
    TaskId id = prev < 0 ? tr.Add(t) : tr.Add(t, {prev});
    prev = id;
    tasks.push_back(id);
  };
  for (auto group : {intra, inter}) {
    for (auto kind : {CollectiveKind::kAllReduce, CollectiveKind::kAllGather, CollectiveKind::kReduceScatter,
                      CollectiveKind::kAllToAll}) {
      trace::Task t;
      t.kind = trace::TaskKind::kCollective;
      t.stream = st;
      t.comm.kind = kind;
      t.comm.bytes = Bytes{1e9};
      t.comm.group = group;
      chain(t);
    }
  }
  // Hierarchical all-to-all across the 4 nodes: NIC-bound, then NVLink-bound.
  for (double scale_out : {0.4e9, 0.05e9}) {
    trace::Task t;
    t.kind = trace::TaskKind::kCollective;
    t.stream = st;
    t.comm.kind = CollectiveKind::kAllToAll;
    t.comm.bytes = Bytes{1e9};
    t.comm.scale_out_bytes = Bytes{scale_out};
    t.comm.group = inter;
    chain(t);
  }
  for (auto pair : {near, far}) {
    trace::Task t;
    t.kind = trace::TaskKind::kTransfer;
    t.stream = st;
    t.transfer.dst = 1;
    t.transfer.bytes = Bytes{2e8};
    t.transfer.group = pair;
    chain(t);
  }
  engine::ReplayResult r = Replay(sg, tr);
  for (TaskId id : tasks) {
    const trace::Task& t = tr.task(id);
    engine::CommCost c = t.kind == trace::TaskKind::kTransfer ? an.Transfer(t.transfer, tr.group(t.transfer.group))
                                                               : an.Collective(t.comm, tr.group(t.comm.group));
    double expect = (c.latency + c.transfer).seconds();
    double got = (r.timings[id].end - r.timings[id].start).seconds();
    EXPECT_NEAR(got / expect, 1.0, 0.03) << "task " << id << " group " << tr.group(t.kind == trace::TaskKind::kTransfer ? t.transfer.group : t.comm.group).size
                                         << " kind " << static_cast<int>(t.comm.kind) << ": " << got << " s vs " << expect;
    std::printf("task %d: simgrid %.6f s, analytic %.6f s, ratio %.5f\n", id, got, expect, got / expect);
  }
}

TEST(SimGridNetwork, TwoToOneOversubscribedLeafHalvesTheRingAcrossPods) {
  // DP all-reduce over 128 nodes, one member per pod of 4 nodes (the other
  // 31 GPUs of each pod run their own DP groups: siblings at stride 1), on
  // a fat tree whose leaves have 2:1 oversubscribed uplinks. Every ring edge
  // climbs to the spine, so the uplinks carry twice what they can.
  TopologyConfig topo = Dgx(2.0, 4);
  ProfileConfig prof = FlatProfile();
  SimGridNetwork sg(topo, prof, 128 * 32);
  AnalyticNetwork blocking_free(Dgx(1.0, 4), prof);
  trace::Trace tr;
  tr.InternName("x");
  tr.InternLabel("l");
  trace::StreamId st = tr.InternStream("s");
  CommGroup dp = Placed(0, 32, 128, 1, {0});
  dp.siblings = 32;
  dp.sibling_stride = 1;
  auto g = tr.AddGroup(dp);
  trace::Task t;
  t.kind = trace::TaskKind::kCollective;
  t.stream = st;
  t.comm.kind = CollectiveKind::kAllReduce;
  t.comm.bytes = Bytes{1e9};
  t.comm.group = g;
  TaskId id = tr.Add(t);
  engine::ReplayResult r = Replay(sg, tr);
  engine::CommCost free = blocking_free.Collective(t.comm, dp);
  double transfer = (r.timings[id].end - r.timings[id].start - free.latency).seconds();
  double slowdown = transfer / free.transfer.seconds();
  std::printf("2:1 slowdown of the inter-node transfer: %.4f (%.6f s vs %.6f s)\n", slowdown, transfer,
              free.transfer.seconds());
  EXPECT_NEAR(slowdown, 2.0, 0.1);
  ASSERT_FALSE(r.bottlenecks.empty());
  EXPECT_NE(r.bottlenecks[0].find("uplink"), std::string::npos) << r.bottlenecks[0];
}

TEST(SimGridNetwork, TwoTransfersSharingANicTakeTwiceAsLong) {
  // GPU 0 sends to node 1 and node 2 at once: both leave through NIC 0.
  TopologyConfig topo = Dgx();
  ProfileConfig prof = FlatProfile();
  SimGridNetwork sg(topo, prof, 32);
  trace::Trace tr;
  tr.SetRankCount(3);
  tr.InternName("x");
  tr.InternLabel("l");
  trace::StreamId a = tr.InternStream("a");
  trace::StreamId b = tr.InternStream("b");
  auto p1 = tr.AddGroup(Placed(0, 8, 2, 1, {0, 1}));
  auto p2 = tr.AddGroup(Placed(0, 16, 2, 1, {0, 2}));
  std::vector<TaskId> ids;
  for (auto [stream, pair, dst] : {std::tuple{a, p1, 1}, std::tuple{b, p2, 2}}) {
    trace::Task t;
    t.kind = trace::TaskKind::kTransfer;
    t.stream = stream;
    t.transfer.dst = dst;
    t.transfer.bytes = Bytes{4.5e8};  // 10 ms at 45 GB/s
    t.transfer.group = pair;
    ids.push_back(tr.Add(t));
  }
  engine::ReplayResult r = Replay(sg, tr);
  engine::CommCost c = sg.Transfer(tr.task(ids[0]).transfer, tr.group(p1));
  for (TaskId id : ids) {
    EXPECT_NEAR(r.contention[id].seconds() / c.transfer.seconds(), 1.0, 0.02);
  }
  ASSERT_FALSE(r.bottlenecks.empty());
  EXPECT_EQ(r.bottlenecks[0].rfind("node 0 NIC 0 (up)", 0), 0u) << r.bottlenecks[0];
}

TEST(SimGridNetwork, SecondSessionInOneProcessThrows) {
  SimGridNetwork sg(Dgx(), FlatProfile(), 16);
  trace::Trace tr;
  auto s1 = sg.StartSession(tr);
  EXPECT_THROW(sg.StartSession(tr), std::logic_error);
}

TEST(SimGridFabric, RailTrafficStaysOnItsLeafAndCrossRailClimbs) {
  Fabric f(Dgx(2.0, 4), 360 * kGB, 45 * kGB, 128);
  std::vector<int32_t> route;
  f.RouteLinks(0, 8, &route);  // node 0 GPU 0 -> node 1 GPU 0: same pod, same rail
  ASSERT_EQ(route.size(), 2u);
  EXPECT_EQ(f.links()[route[0]].name, "node 0 NIC 0");
  EXPECT_EQ(f.links()[route[1]].name, "node 1 NIC 0");
  route.clear();
  f.RouteLinks(0, 32 + 9, &route);  // pod 0 rail 0 -> pod 1 rail 1
  ASSERT_EQ(route.size(), 4u);
  EXPECT_EQ(f.links()[route[1]].name, "leaf 0 rail 0 -> spine uplink");
  EXPECT_EQ(f.links()[route[2]].name, "leaf 1 rail 1 -> spine uplink");
  EXPECT_DOUBLE_EQ(f.links()[route[1]].bandwidth, 4 * 45 * kGB / 2);
  route.clear();
  f.RouteLinks(3, 5, &route);  // inside node 0: NVLink ports
  ASSERT_EQ(route.size(), 2u);
  EXPECT_EQ(f.links()[route[0]].name, "node 0 GPU 3 NVLink port");
}

}  // namespace
}  // namespace stacksim::net

namespace stacksim::net {
namespace {

TEST(SimGridNetwork, ScatteredNodesGoRoundRobinOverThePods) {
  // 128 nodes in 32-node pods: node i -> pod i % 4, slot i / 4.
  SimGridNetwork packed(Dgx(2.0), FlatProfile(), 1024, config::NodeOrder::kPacked);
  SimGridNetwork scattered(Dgx(2.0), FlatProfile(), 1024, config::NodeOrder::kScattered);
  EXPECT_EQ(packed.PhysicalNode(5), 5);
  EXPECT_EQ(packed.physical_nodes(), 128);
  EXPECT_EQ(scattered.PhysicalNode(0), 0);
  EXPECT_EQ(scattered.PhysicalNode(1), 32);
  EXPECT_EQ(scattered.PhysicalNode(3), 96);
  EXPECT_EQ(scattered.PhysicalNode(4), 1);
  EXPECT_EQ(scattered.PhysicalNode(127), 127);
  EXPECT_EQ(scattered.physical_nodes(), 128);
  // 40 nodes need two pods: 20 in each, the pods' last 12 slots stay empty.
  SimGridNetwork partial(Dgx(2.0), FlatProfile(), 320, config::NodeOrder::kScattered);
  EXPECT_EQ(partial.PhysicalNode(39), 32 + 19);
  EXPECT_EQ(partial.physical_nodes(), 52);
}

}  // namespace
}  // namespace stacksim::net
