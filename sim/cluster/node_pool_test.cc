#include "sim/cluster/node_pool.h"

#include <gtest/gtest.h>

namespace stacksim::cluster {
namespace {

ClusterShape Shape(int nodes, int per_leaf, int per_spine, int per_domain) {
  ClusterShape s;
  s.nodes = nodes;
  s.gpus_per_node = 8;
  s.nodes_per_leaf = per_leaf;
  s.nodes_per_spine = per_spine;
  s.nodes_per_domain = per_domain;
  return s;
}

TEST(NodePool, KeepsFreeCountsPerLeaf) {
  NodePool pool(Shape(10, 4, 10, 1));  // leaves of 4, 4, 2
  EXPECT_EQ(pool.free().per_leaf, (std::vector<int>{4, 4, 2}));
  pool.Allocate({0, 1, 5});
  pool.MarkDown(9);
  EXPECT_EQ(pool.free().per_leaf, (std::vector<int>{2, 3, 1}));
  EXPECT_EQ(pool.free().total, 6);
  pool.MarkDown(5);  // fails while allocated; the job's release must not free it
  pool.Release({0, 1, 5});
  EXPECT_FALSE(pool.is_free(5));
  EXPECT_EQ(pool.free().total, 8);
  pool.MarkUp(5);
  pool.MarkUp(9);
  EXPECT_EQ(pool.free().total, 10);
  EXPECT_EQ(pool.down_nodes(), 0);
}

TEST(NodePool, TopologyPlacementUsesFewestLeavesBestFit) {
  const ClusterShape s = Shape(16, 4, 16, 1);
  NodePool pool(s);
  pool.Allocate({0, 1, 4, 8, 9, 10});  // free: leaf 0: 2, leaf 1: 3, leaf 2: 1, leaf 3: 4
  EXPECT_EQ(ChooseNodes(s, pool.free(), 3, PlacementPolicy::kTopology), (std::vector<int>{5, 6, 7}));
  EXPECT_EQ(ChooseNodes(s, pool.free(), 2, PlacementPolicy::kTopology), (std::vector<int>{2, 3}));
  // 5 nodes: leaf 3 whole, then the smallest leaf holding the last one.
  EXPECT_EQ(ChooseNodes(s, pool.free(), 5, PlacementPolicy::kTopology), (std::vector<int>{11, 12, 13, 14, 15}));
  EXPECT_EQ(ChooseNodes(s, pool.free(), 3, PlacementPolicy::kFirstFit), (std::vector<int>{2, 3, 5}));
  EXPECT_TRUE(ChooseNodes(s, pool.free(), 11, PlacementPolicy::kTopology).empty());
}

TEST(NodePool, TopologyPlacementStaysInOneSpineGroup) {
  const ClusterShape s = Shape(16, 4, 8, 1);  // spine groups: leaves {0, 1} and {2, 3}
  NodePool pool(s);
  pool.Allocate({0, 1, 4, 5, 8});  // spine 0: 2 + 2 free, spine 1: 3 + 4
  // 6 nodes: two leaves either way, but only spine 1 holds them.
  const std::vector<int> nodes = ChooseNodes(s, pool.free(), 6, PlacementPolicy::kTopology);
  ASSERT_EQ(nodes.size(), 6u);
  for (int n : nodes) EXPECT_GE(n, 8);
}

TEST(NodePool, RackScaleDomainsAreTakenWhole) {
  // Leaves of 8 nodes, NVLink domains of 4 (a rack's trays).
  const ClusterShape s = Shape(8, 8, 8, 4);
  NodePool pool(s);
  pool.Allocate({0, 1, 2});  // domain 0: node 3 free; domain 1: 4 free
  EXPECT_EQ(ChooseNodes(s, pool.free(), 4, PlacementPolicy::kTopology), (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(ChooseNodes(s, pool.free(), 1, PlacementPolicy::kTopology), (std::vector<int>{3}));
}

TEST(NodePool, SpreadCountsNodesOutsideTheMinimalLeaves) {
  const ClusterShape s = Shape(16, 4, 16, 1);
  Spread a = SpreadOf(s, {0, 1, 2, 3});
  EXPECT_EQ(a.leaves, 1);
  EXPECT_DOUBLE_EQ(a.outside_fraction, 0);
  Spread b = SpreadOf(s, {2, 3, 4, 8, 12, 13});  // 6 nodes need 2 leaves; best two hold 4
  EXPECT_EQ(b.leaves, 4);
  EXPECT_EQ(b.min_leaves, 2);
  EXPECT_DOUBLE_EQ(b.outside_fraction, 2.0 / 6);
}

}  // namespace
}  // namespace stacksim::cluster
