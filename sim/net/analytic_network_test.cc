#include "sim/net/analytic_network.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "sim/util/error.h"

namespace stacksim::net {
namespace {

using config::BusBandwidthCurve;
using config::FatTreeLevel;
using config::ProfileConfig;
using config::ScaleUpKind;
using config::TopologyConfig;
using engine::CommCost;
using trace::CollectiveKind;
using trace::CommGroup;
using trace::CommOp;
using trace::TransferOp;

constexpr double kGB = 1e9;
// NCCL's protocols across nodes (analytic_network.cc InterNode): LL128 rings
// at 0.92 of the bandwidth and trees at 0.915 of theirs, with the profile's
// per-step latencies, or Simple rings at the full bandwidth with steps
// 3.4/1.9 (NVLink) and 9.6/4.0 (network) as long; the faster runs.
constexpr double kLl128 = 0.92;
constexpr double kLl128Tree = 0.915;
constexpr double kSimpleIntra = 3.4 / 1.9;
constexpr double kSimpleInter = 9.6 / 4.0;

// DGX-H100-like: 8 GPUs, 450 GB/s NVLink per direction, 8x 400 Gb/s NICs,
// 3-level non-blocking fat tree with 0.5 us per level.
TopologyConfig DgxH100() {
  TopologyConfig t;
  t.name = "test-dgx-h100";
  t.gpu = "test-h100";
  t.gpus_per_node = 8;
  t.scale_up = {ScaleUpKind::kNvSwitch, 8, Bandwidth{450 * kGB}, Time::Us(1)};
  t.pcie_bandwidth = Bandwidth{64 * kGB};
  t.nics = {8, Bandwidth{50 * kGB}, Time::Us(2)};
  t.fabric.rail_optimized = true;
  t.fabric.levels = {{"leaf", 32, 1.0, Time::Ns(500)},
                     {"spine", 1024, 1.0, Time::Ns(500)},
                     {"core", 16384, 1.0, Time::Ns(500)}};
  return t;
}

BusBandwidthCurve Flat(double gbps) {
  BusBandwidthCurve c;
  c.points = {{Bytes{1e3}, Bandwidth{gbps * kGB}}, {Bytes{8e9}, Bandwidth{gbps * kGB}}};
  c.gpus = 8;
  return c;
}

// Flat curves at 80% of the 450 GB/s reference link: busbw 360 GB/s at every
// size. B = 8 * 50 / 8 * 0.9 = 45 GB/s per GPU. Inter step 5 us + fabric hops.
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

CommGroup Group(int g, int n) {
  CommGroup group;
  group.name = "test";
  group.size = g * n;
  group.ranks_per_node = g;
  group.nodes = n;
  return group;
}

CommOp Op(CollectiveKind kind, double bytes) {
  CommOp op;
  op.kind = kind;
  op.bytes = Bytes{bytes};
  return op;
}

double Total(const CommCost& c) { return (c.latency + c.transfer).seconds(); }

// Relative tolerance 0.1% (times are rounded to whole nanoseconds).
void ExpectNear(double actual, double expected) {
  EXPECT_NEAR(actual, expected, 1e-3 * std::abs(expected) + 1e-9) << "expected " << expected;
}

TEST(AnalyticNetwork, SizeOneGroupAndEmptyBufferCostNothing) {
  AnalyticNetwork net(DgxH100(), FlatProfile());
  EXPECT_EQ(net.name(), "analytic");
  CommCost c = net.Collective(Op(CollectiveKind::kAllReduce, 1e9), Group(1, 1));
  EXPECT_EQ(c.latency, Time::Zero());
  EXPECT_EQ(c.transfer, Time::Zero());
  EXPECT_EQ(c.links, engine::kNoLinks);
  c = net.Collective(Op(CollectiveKind::kAllGather, 0), Group(8, 4));
  EXPECT_EQ(Total(c), 0);
}

TEST(AnalyticNetwork, IntraNodeAllGatherIsBusFactorOverBusbw) {
  AnalyticNetwork net(DgxH100(), FlatProfile());
  const double s = 1e9;
  CommCost c = net.Collective(Op(CollectiveKind::kAllGather, s), Group(8, 1));
  ExpectNear(c.transfer.seconds(), 7.0 / 8 * s / (360 * kGB));
  ExpectNear(c.latency.seconds(), 2e-6);  // flat curve: only the latency floor
  EXPECT_EQ(c.links, engine::kScaleUpLink);
  EXPECT_EQ(c.algorithm, "ring");
  // 4 GPUs: (p-1)/p = 3/4 at the same busbw (ring busbw flat in p, nccl#1455).
  c = net.Collective(Op(CollectiveKind::kReduceScatter, s), Group(4, 1));
  ExpectNear(c.transfer.seconds(), 3.0 / 4 * s / (360 * kGB));
}

TEST(AnalyticNetwork, IntraNodeAllReduceMovesTwiceTheRingFactor) {
  AnalyticNetwork net(DgxH100(), FlatProfile());
  const double s = 256e6;
  CommCost c = net.Collective(Op(CollectiveKind::kAllReduce, s), Group(8, 1));
  ExpectNear(c.transfer.seconds(), 2.0 * 7 / 8 * s / (360 * kGB));
  EXPECT_EQ(c.algorithm, "ring");  // all-reduce curve no faster than ring: no NVLS
  c = net.Collective(Op(CollectiveKind::kBroadcast, s), Group(8, 1));
  ExpectNear(c.transfer.seconds(), s / (360 * kGB));
  c = net.Collective(Op(CollectiveKind::kAllToAll, s), Group(8, 1));
  ExpectNear(c.transfer.seconds(), 7.0 / 8 * s / (360 * kGB));
  EXPECT_EQ(c.algorithm, "pairwise");
}

// A direct-link mesh (AMD's 8-GPU xGMI platform: 7 links of 64 GB/s per GPU,
// scale_up type nvlink-mesh): a group of p GPUs uses p - 1 of each GPU's 7
// links, a pipeline pair one; the whole node prices as the switch does.
TEST(AnalyticNetwork, MeshGroupsUseOnlyTheirOwnLinks) {
  TopologyConfig mesh = DgxH100();
  mesh.scale_up = {ScaleUpKind::kNvLinkMesh, 8, Bandwidth{448 * kGB}, Time::Us(1)};
  ProfileConfig p = FlatProfile();
  p.intra_reference_link.value = Bandwidth{448 * kGB};
  AnalyticNetwork net(mesh, p), sw(DgxH100(), FlatProfile());
  const double s = 1e9;
  ExpectNear(net.Collective(Op(CollectiveKind::kAllGather, s), Group(8, 1)).transfer.seconds(),
             sw.Collective(Op(CollectiveKind::kAllGather, s), Group(8, 1)).transfer.seconds());
  ExpectNear(net.Collective(Op(CollectiveKind::kAllGather, s), Group(4, 1)).transfer.seconds(),
             3.0 / 4 * s / (360 * kGB * 3.0 / 7));
  ExpectNear(net.Collective(Op(CollectiveKind::kAllReduce, s), Group(2, 1)).transfer.seconds(),
             2.0 * 1 / 2 * s / (360 * kGB / 7));
  TransferOp x;
  x.bytes = Bytes{s};
  ExpectNear(net.Transfer(x, Group(2, 1)).transfer.seconds(), s / (360 * kGB / 7));
  ExpectNear(sw.Transfer(x, Group(2, 1)).transfer.seconds(), s / (360 * kGB));
}

// Ring curve 100 GB/s at 1 MB rising to 400 GB/s at 1 GB on a 450 GB/s
// reference link.
ProfileConfig RisingProfile() {
  ProfileConfig p = FlatProfile();
  p.intra_ring.points = {{Bytes{1e6}, Bandwidth{100 * kGB}}, {Bytes{1e9}, Bandwidth{400 * kGB}}};
  p.intra_all_reduce = p.intra_ring;
  return p;
}

TEST(AnalyticNetwork, CurveTimeSplitsIntoOverheadAndPeakTransfer) {
  AnalyticNetwork net(DgxH100(), RisingProfile());
  const double s = 1e6;
  CommCost c = net.Collective(Op(CollectiveKind::kAllGather, s), Group(8, 1));
  // Measured time 7/8 * 1 MB / 100 GB/s = 8.75 us, all of it reproduced.
  ExpectNear(Total(c), 8.75e-6);
  ExpectNear(c.transfer.seconds(), 7.0 / 8 * s / (400 * kGB));   // 2.1875 us at peak
  ExpectNear(c.latency.seconds(), 8.75e-6 - 2.1875e-6);           // 6.5625 us overhead
  // Below the first measured point the overhead is held, the transfer shrinks.
  c = net.Collective(Op(CollectiveKind::kAllGather, 1e3), Group(8, 1));
  ExpectNear(c.latency.seconds(), 6.5625e-6);
  ExpectNear(c.transfer.seconds(), 7.0 / 8 * 1e3 / (400 * kGB));
}

TEST(AnalyticNetwork, FasterLinkScalesTransferButNotOverhead) {
  TopologyConfig t = DgxH100();
  t.scale_up.per_gpu_bandwidth = Bandwidth{900 * kGB};  // twice the reference link
  AnalyticNetwork net(t, RisingProfile());
  CommCost c = net.Collective(Op(CollectiveKind::kAllGather, 1e6), Group(8, 1));
  ExpectNear(c.transfer.seconds(), 7.0 / 8 * 1e6 / (800 * kGB));
  ExpectNear(c.latency.seconds(), 6.5625e-6);
  // Large messages: busbw never above link * the curve's peak efficiency
  // (400/450); the overhead stays at its running maximum.
  c = net.Collective(Op(CollectiveKind::kAllGather, 4e9), Group(8, 1));
  ExpectNear(c.transfer.seconds(), 7.0 / 8 * 4e9 / (800 * kGB));
  ExpectNear(c.latency.seconds(), 6.5625e-6);
}

// NVLS all-reduce curve flat at 480 GB/s, ring at 370 (8x H100, nccl#1455).
ProfileConfig NvlsProfile() {
  ProfileConfig p = FlatProfile();
  p.intra_all_reduce = Flat(480);
  p.intra_ring = Flat(370);
  return p;
}

TEST(AnalyticNetwork, NvlsAllReduceGrowsWithGpuCount) {
  AnalyticNetwork net(DgxH100(), NvlsProfile());
  const double s = 2e9;
  CommCost c = net.Collective(Op(CollectiveKind::kAllReduce, s), Group(8, 1));
  EXPECT_EQ(c.algorithm, "nvls");
  ExpectNear(c.transfer.seconds(), 2.0 * 7 / 8 * s / (480 * kGB));
  c = net.Collective(Op(CollectiveKind::kAllReduce, s), Group(6, 1));
  EXPECT_EQ(c.algorithm, "nvls");
  ExpectNear(c.transfer.seconds(), 2.0 * 5 / 6 * s / (440 * kGB));  // nccl#1455: 440 at 6
  c = net.Collective(Op(CollectiveKind::kAllReduce, s), Group(4, 1));
  EXPECT_EQ(c.algorithm, "ring");
  ExpectNear(c.transfer.seconds(), 2.0 * 3 / 4 * s / (370 * kGB));  // 370 at 2-4
  // All-gather never uses the all-reduce curve.
  c = net.Collective(Op(CollectiveKind::kAllGather, s), Group(8, 1));
  ExpectNear(c.transfer.seconds(), 7.0 / 8 * s / (370 * kGB));
  EXPECT_DOUBLE_EQ(NvlsShare(5, 8), 50.0 / 110);
  EXPECT_DOUBLE_EQ(NvlsShare(16, 8), 1.0);
}

TEST(AnalyticNetwork, NvlsNeedsNvSwitchAndPcieUsesPcieRing) {
  TopologyConfig mesh = DgxH100();
  mesh.scale_up.kind = ScaleUpKind::kNvLinkMesh;
  const double s = 2e9;
  CommCost c = AnalyticNetwork(mesh, NvlsProfile()).Collective(Op(CollectiveKind::kAllReduce, s), Group(8, 1));
  EXPECT_EQ(c.algorithm, "ring");
  ExpectNear(c.transfer.seconds(), 2.0 * 7 / 8 * s / (370 * kGB));

  TopologyConfig pcie = DgxH100();
  pcie.scale_up.kind = ScaleUpKind::kPcie;
  AnalyticNetwork net(pcie, NvlsProfile());
  // 64 GB/s PCIe at the ring curve's efficiency 370/450.
  double bw = 64 * kGB * 370.0 / 450.0;
  c = net.Collective(Op(CollectiveKind::kAllReduce, s), Group(8, 1));
  EXPECT_EQ(c.algorithm, "ring");
  ExpectNear(c.transfer.seconds(), 2.0 * 7 / 8 * s / bw);
  c = net.Transfer(TransferOp{1, Bytes{s}, 0}, Group(2, 1));
  ExpectNear(c.transfer.seconds(), s / bw);
}

TEST(AnalyticNetwork, RingAllReduceAcrossNodesIsAlphaBeta) {
  AnalyticNetwork net(DgxH100(), FlatProfile());
  ExpectNear(net.scale_out_bandwidth().value, 45 * kGB);
  // 16 nodes fit under one leaf group: 5 us + 2 x 0.5 us leaf hop.
  const double alpha = 6e-6, b = 45 * kGB, s = 1e9;
  EXPECT_EQ(net.InterNodeStepLatency(16), Time::Us(6));
  CommCost c = net.Collective(Op(CollectiveKind::kAllReduce, s), Group(1, 16));
  EXPECT_EQ(c.algorithm, "ring");
  EXPECT_EQ(c.links, engine::kScaleOutLink);
  // 1 GB runs Simple: LL128 would lose 8% of 41.7 ms, Simple's longer steps
  // cost 30 x 6 us x 1.4.
  ExpectNear(c.transfer.seconds(), 2.0 * 15 / 16 * s / b);
  ExpectNear(c.latency.seconds(), 2.0 * 15 * alpha * kSimpleInter);
  ExpectNear(Total(c), 2.0 * 15 / 16 * s / b + 2.0 * 15 * alpha * kSimpleInter);
}

// NCCL runs each call with the protocol its model prices fastest: LL128's
// short steps win below the size where its 8% of lost bandwidth outweighs
// Simple's longer steps, S* = 15 x 6 us x 1.4 / (15/16 x 0.087 / b) = 69.6
// MB for an all-gather over 16 nodes.
TEST(AnalyticNetwork, Ll128BelowTheCrossoverSimpleAbove) {
  AnalyticNetwork net(DgxH100(), FlatProfile());
  const double alpha = 6e-6, b = 45 * kGB;
  const double s_star = 15 * alpha * (kSimpleInter - 1) / (15.0 / 16 / b * (1 / kLl128 - 1));
  EXPECT_NEAR(s_star, 69.6e6, 0.1e6);
  CommCost small = net.Collective(Op(CollectiveKind::kAllGather, 0.98 * s_star), Group(1, 16));
  ExpectNear(small.latency.seconds(), 15 * alpha);
  ExpectNear(small.transfer.seconds(), 15.0 / 16 * 0.98 * s_star / (kLl128 * b));
  CommCost large = net.Collective(Op(CollectiveKind::kAllGather, 1.02 * s_star), Group(1, 16));
  ExpectNear(large.latency.seconds(), 15 * alpha * kSimpleInter);
  ExpectNear(large.transfer.seconds(), 15.0 / 16 * 1.02 * s_star / b);
}

TEST(AnalyticNetwork, TreeForSmallMessagesRingForLarge) {
  AnalyticNetwork net(DgxH100(), FlatProfile());
  const double alpha = 6e-6, b = 45 * kGB;
  CommCost small = net.Collective(Op(CollectiveKind::kAllReduce, 64e3), Group(1, 16));
  EXPECT_EQ(small.algorithm, "tree");
  ExpectNear(small.latency.seconds(), 2.0 * 4 * alpha);  // 2 log2(16) steps
  ExpectNear(small.transfer.seconds(), 2.0 * 64e3 / (0.9 * kLl128Tree * b));
  CommCost large = net.Collective(Op(CollectiveKind::kAllReduce, 64e6), Group(1, 16));
  EXPECT_EQ(large.algorithm, "ring");
  // Crossover with both in LL128 (the ring's Simple only wins above 70
  // MB): 2(n-1)a + 2(n-1)/n S/(0.92 b) = 2 log2(n) a + 2 S/(0.9 x 0.915 b):
  // S* = (30 - 8) a / (2/(0.8235 b) - 1.875/(0.92 b)) = 15.2 MB.
  double s_star = 22 * alpha / (2.0 / (0.9 * kLl128Tree * b) - 1.875 / (kLl128 * b));
  EXPECT_NEAR(s_star, 15.2e6, 0.1e6);
  EXPECT_EQ(net.Collective(Op(CollectiveKind::kAllReduce, 0.98 * s_star), Group(1, 16)).algorithm, "tree");
  EXPECT_EQ(net.Collective(Op(CollectiveKind::kAllReduce, 1.02 * s_star), Group(1, 16)).algorithm, "ring");
}

TEST(AnalyticNetwork, HierarchicalAllReduceUsesAllRailsOfTheNode) {
  AnalyticNetwork net(DgxH100(), FlatProfile());
  const double s = 1e9;
  CommCost c = net.Collective(Op(CollectiveKind::kAllReduce, s), Group(8, 16));
  EXPECT_EQ(c.algorithm, "ring");
  EXPECT_EQ(c.links, engine::kScaleOutLink | engine::kScaleUpLink);
  // busbw = g * B = 360 GB/s (NVLink bound 360 * 8/7 does not bind), in
  // LL128: its 0.48 ms of lost bandwidth beat Simple's 0.61 ms of longer
  // steps.
  ExpectNear(c.transfer.seconds(), 2.0 * 127 / 128 * s / (kLl128 * 8 * 45 * kGB));
  // 2(p-n) = 224 intra steps of 2 us, 2(n-1) = 30 inter steps of 6 us.
  ExpectNear(c.latency.seconds(), 224 * 2e-6 + 30 * 6e-6);

  // A slow scale-up link bounds the ring: 90 GB/s * 0.8 * 8/7 = 82.3 GB/s,
  // in Simple (24 ms of transfer).
  TopologyConfig slow = DgxH100();
  slow.scale_up.per_gpu_bandwidth = Bandwidth{90 * kGB};
  c = AnalyticNetwork(slow, FlatProfile()).Collective(Op(CollectiveKind::kAllReduce, s), Group(8, 16));
  ExpectNear(c.transfer.seconds(), 2.0 * 127 / 128 * s / (72 * kGB * 8 / 7));
}

TEST(AnalyticNetwork, ReduceScatterAndAllGatherAcrossNodes) {
  AnalyticNetwork net(DgxH100(), FlatProfile());
  const double s = 512e6;
  for (CollectiveKind kind : {CollectiveKind::kReduceScatter, CollectiveKind::kAllGather}) {
    CommCost c = net.Collective(Op(kind, s), Group(8, 4));
    EXPECT_EQ(c.algorithm, "ring");
    ExpectNear(c.transfer.seconds(), 31.0 / 32 * s / (360 * kGB));
    // (p-n) intra, (n-1) inter steps, in Simple
    ExpectNear(c.latency.seconds(), 28 * 2e-6 * kSimpleIntra + 3 * 6e-6 * kSimpleInter);
  }
  CommCost g1 = net.Collective(Op(CollectiveKind::kReduceScatter, s), Group(1, 4));
  ExpectNear(g1.transfer.seconds(), 3.0 / 4 * s / (45 * kGB));
}

TEST(AnalyticNetwork, AllToAllAndBroadcastAcrossNodes) {
  AnalyticNetwork net(DgxH100(), FlatProfile());
  const double s = 1e9;
  // 3/4 of the buffer leaves the node on this GPU's one NIC.
  CommCost c = net.Collective(Op(CollectiveKind::kAllToAll, s), Group(8, 4));
  EXPECT_EQ(c.algorithm, "pairwise");
  ExpectNear(c.transfer.seconds(), 3.0 / 4 * s / (45 * kGB));
  ExpectNear(c.latency.seconds(), 7 * 2e-6 + 24 * 6e-6);  // one step per peer
  c = net.Collective(Op(CollectiveKind::kBroadcast, s), Group(8, 2));
  EXPECT_EQ(c.algorithm, "ring");
  ExpectNear(c.transfer.seconds(), s / (360 * kGB));
  ExpectNear(c.latency.seconds(), 14 * 2e-6 * kSimpleIntra + 1 * 6e-6 * kSimpleInter);
}

// DeepSeek-V3-style dispatch over 8 nodes x 8 GPUs: the NIC carries the
// deduplicated scale-out bytes, NVLink 7/8 of the deliveries; the slower sets
// the time. One inter step per remote node, one NVLink step per local peer.
TEST(AnalyticNetwork, HierarchicalAllToAllSplitsNicAndNvlinkBytes) {
  AnalyticNetwork net(DgxH100(), FlatProfile());
  const double deliveries = 1e9;
  CommOp op = Op(CollectiveKind::kAllToAll, deliveries);
  op.scale_out_bytes = Bytes{0.4e9};
  CommCost c = net.Collective(op, Group(8, 8));
  EXPECT_EQ(c.algorithm, "hierarchical");
  EXPECT_EQ(c.links, engine::kScaleOutLink | engine::kScaleUpLink);
  ExpectNear(c.transfer.seconds(), 0.4e9 / (45 * kGB));  // IB-bound: 8.9 ms vs NVLink 2.4 ms
  ExpectNear(c.latency.seconds(), 7 * 2e-6 + 7 * 6e-6);
  // NVLink-bound when little leaves the node.
  op.scale_out_bytes = Bytes{0.05e9};
  c = net.Collective(op, Group(8, 8));
  ExpectNear(c.transfer.seconds(), 7.0 / 8 * deliveries / (360 * kGB));
  // Flat pairwise for comparison: 7/8 of the (undeduplicated) buffer on the NIC.
  c = net.Collective(Op(CollectiveKind::kAllToAll, deliveries), Group(8, 8));
  EXPECT_EQ(c.algorithm, "pairwise");
  ExpectNear(c.transfer.seconds(), 7.0 / 8 * deliveries / (45 * kGB));
  // Inside one node the scale-out bytes play no part: the intra-node curve.
  op.scale_out_bytes = Bytes{0.4e9};
  ExpectNear(Total(net.Collective(op, Group(8, 1))),
             Total(net.Collective(Op(CollectiveKind::kAllToAll, deliveries), Group(8, 1))));
}

TEST(AnalyticNetwork, OversubscriptionSlowsGroupsSpanningLeafGroups) {
  TopologyConfig t = DgxH100();
  t.fabric.levels[0].nodes_below = 4;
  t.fabric.levels[0].oversubscription = 2.0;
  AnalyticNetwork tapered(t, FlatProfile());
  t.fabric.levels[0].oversubscription = 1.0;
  AnalyticNetwork full(t, FlatProfile());
  const double s = 4e9;  // Simple rings both ways (a protocol change would hide the taper)
  CommOp op = Op(CollectiveKind::kAllReduce, s);
  // 16 nodes > 4 under a leaf: 2:1 doubles the inter-node transfer.
  ExpectNear(tapered.Collective(op, Group(1, 16)).transfer.seconds(),
             2 * full.Collective(op, Group(1, 16)).transfer.seconds());
  ExpectNear(tapered.Collective(op, Group(8, 16)).transfer.seconds(),
             2 * full.Collective(op, Group(8, 16)).transfer.seconds());
  // 4 nodes stay under one leaf group: no change.
  EXPECT_EQ(tapered.Collective(op, Group(1, 4)).transfer, full.Collective(op, Group(1, 4)).transfer);
  // Tapers compound: a further 2:1 above the spine group of 8 nodes.
  t.fabric.levels[0].oversubscription = 2.0;
  t.fabric.levels[1].nodes_below = 8;
  t.fabric.levels[1].oversubscription = 2.0;
  EXPECT_DOUBLE_EQ(AnalyticNetwork(t, FlatProfile()).Oversubscription(16), 4.0);
}

TEST(AnalyticNetwork, HopLatencyCountsLevelsClimbed) {
  TopologyConfig t = DgxH100();
  AnalyticNetwork net(t, FlatProfile());
  EXPECT_EQ(net.InterNodeStepLatency(2), Time::Us(6));      // leaf: 5 + 2 x 0.5
  EXPECT_EQ(net.InterNodeStepLatency(64), Time::Us(7));     // spine: 5 + 2 x (0.5 + 0.5)
  EXPECT_EQ(net.InterNodeStepLatency(2048), Time::Us(8));   // core
  CommCost c = net.Collective(Op(CollectiveKind::kAllGather, 1e9), Group(1, 64));
  ExpectNear(c.latency.seconds(), 63 * 7e-6 * kSimpleInter);
  // Without rail optimization every inter-node step crosses the spine.
  t.fabric.rail_optimized = false;
  EXPECT_EQ(AnalyticNetwork(t, FlatProfile()).InterNodeStepLatency(2), Time::Us(7));
}

TEST(AnalyticNetwork, PointToPointIntraVersusInterNode) {
  AnalyticNetwork net(DgxH100(), FlatProfile());
  const double s = 100e6;
  TransferOp op{1, Bytes{s}, 0};
  CommCost intra = net.Transfer(op, Group(2, 1));
  EXPECT_EQ(intra.links, engine::kScaleUpLink);
  ExpectNear(intra.transfer.seconds(), s / (360 * kGB));  // 450 x peak efficiency 0.8
  ExpectNear(intra.latency.seconds(), 2e-6);
  CommCost inter = net.Transfer(op, Group(1, 2));
  EXPECT_EQ(inter.links, engine::kScaleOutLink);
  ExpectNear(inter.transfer.seconds(), s / (45 * kGB));
  ExpectNear(inter.latency.seconds(), 6e-6);
  EXPECT_EQ(Total(net.Transfer(TransferOp{1, Bytes{0}, 0}, Group(1, 2))), 0);
}

// Measured 8x H100 curves (Azure/AI-benchmarking-guide, hardware.md 3a) and a
// ring curve with the same shape scaled to a 370 GB/s peak.
ProfileConfig H100Profile() {
  ProfileConfig p = FlatProfile();
  std::vector<std::pair<double, double>> ar = {{1e3, 0.07},   {64e3, 2.72},  {1e6, 43.70},
                                               {16e6, 234.45}, {64e6, 361.78}, {256e6, 423.38},
                                               {1e9, 466.35},  {8e9, 478.87}};
  for (auto [s, b] : ar) {
    p.intra_all_reduce.points.push_back({Bytes{s}, Bandwidth{b * kGB}});
  }
  p.intra_ring.points.clear();
  for (auto [s, b] : ar) p.intra_ring.points.push_back({Bytes{s}, Bandwidth{b * 370 / 478.87 * kGB}});
  p.intra_latency.value = Time::Us(3);
  return p;
}

TEST(AnalyticNetwork, TimeGrowsWithSizeForEveryCollective) {
  for (double link : {450.0, 900.0, 200.0}) {
    TopologyConfig t = DgxH100();
    t.scale_up.per_gpu_bandwidth = Bandwidth{link * kGB};
    AnalyticNetwork net(t, H100Profile());
    for (CollectiveKind kind : {CollectiveKind::kAllReduce, CollectiveKind::kAllGather,
                                CollectiveKind::kReduceScatter, CollectiveKind::kAllToAll,
                                CollectiveKind::kBroadcast}) {
      for (CommGroup group : {Group(8, 1), Group(2, 1), Group(6, 1), Group(8, 4), Group(1, 16), Group(8, 64)}) {
        double prev = 0;
        for (double s = 256; s <= 16e9; s *= 1.5) {
          double t_s = Total(net.Collective(Op(kind, s), group));
          EXPECT_GE(t_s, prev) << "link " << link << " kind " << static_cast<int>(kind) << " p "
                               << group.size << " size " << s;
          prev = t_s;
        }
      }
    }
  }
}

TEST(AnalyticNetwork, ReproducesMeasuredCurveOnTheReferenceSystem) {
  AnalyticNetwork net(DgxH100(), H100Profile());
  // 16 MB all-reduce on 8 GPUs: 2 * 7/8 * 16 MB / 234.45 GB/s = 119.4 us.
  CommCost c = net.Collective(Op(CollectiveKind::kAllReduce, 16e6), Group(8, 1));
  EXPECT_EQ(c.algorithm, "nvls");
  ExpectNear(Total(c), 1.75 * 16e6 / (234.45 * kGB));
}

TEST(AnalyticNetwork, MultiNodeGroupWithoutNicsIsAnInputError) {
  TopologyConfig t = DgxH100();
  t.nics.per_node = 0;
  AnalyticNetwork net(t, FlatProfile());
  EXPECT_THROW(net.Collective(Op(CollectiveKind::kAllReduce, 1e6), Group(8, 2)), InputError);
  EXPECT_NO_THROW(net.Collective(Op(CollectiveKind::kAllReduce, 1e6), Group(8, 1)));
}

}  // namespace
}  // namespace stacksim::net
