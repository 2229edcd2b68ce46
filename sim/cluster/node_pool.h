// The cluster's nodes as a scheduler sees them, and where a job's nodes go.
//
// Jobs get whole nodes. Nodes are numbered as the fabric is cabled: leaf
// switch group l holds nodes [l*K, (l+1)*K) with K = the topology's
// levels[0].nodes_below; a spine group holds levels[1].nodes_below nodes; an
// NVLink domain holds domain_gpus / gpus_per_node consecutive nodes (one node
// on 8-GPU servers, a rack's compute trays on GB200 NVL72).
//
// NodePool keeps each node's state and the free nodes per leaf (counts kept
// up to date on every change), so a placement looks at the leaves' counts and
// then only inside the leaves it takes: no scan of the whole cluster per job.
#ifndef STACKSIM_SIM_CLUSTER_NODE_POOL_H_
#define STACKSIM_SIM_CLUSTER_NODE_POOL_H_

#include <cstdint>
#include <vector>

#include "sim/config/topology.h"

namespace stacksim::cluster {

struct ClusterShape {
  int nodes = 0;
  int gpus_per_node = 1;
  int nodes_per_leaf = 1;    // fabric.levels[0].nodes_below
  int nodes_per_spine = 1;   // fabric.levels[1].nodes_below (= all nodes with one level)
  int nodes_per_domain = 1;  // NVLink domain in nodes
  int leaves() const { return (nodes + nodes_per_leaf - 1) / nodes_per_leaf; }
  int leaf(int node) const { return node / nodes_per_leaf; }
  int gpus() const { return nodes * gpus_per_node; }
  int NodesFor(int gpus) const { return (gpus + gpus_per_node - 1) / gpus_per_node; }
  // Fewest leaves that can hold `n` nodes.
  int MinLeaves(int n) const { return (n + nodes_per_leaf - 1) / nodes_per_leaf; }
};

// REQUIRES: nodes >= 1.
ClusterShape ShapeOf(const config::TopologyConfig& topology, int nodes);

// kTopology: as few leaf switches as possible (a single leaf by best fit,
// else whole leaves largest first, inside one spine group when one can hold
// the job), and inside a leaf whole NVLink domains first. kFirstFit: the
// lowest-numbered free nodes, whatever leaves they sit under.
enum class PlacementPolicy { kTopology, kFirstFit };
const char* PlacementName(PlacementPolicy p);  // "topology", "first-fit"

// Nodes a placement may use: node[n] != 0, and per_leaf[l] of them in leaf l.
struct Availability {
  std::vector<uint8_t> node;
  std::vector<int> per_leaf;
  int total = 0;
};

// `count` nodes out of `avail`, ascending; empty if fewer are available.
std::vector<int> ChooseNodes(const ClusterShape& shape, const Availability& avail, int count, PlacementPolicy policy);

// How a set of nodes sits in the fabric.
struct Spread {
  int leaves = 0;      // leaf groups touched
  int min_leaves = 0;  // fewest that could hold as many nodes
  // Share of the nodes outside the best min_leaves of the leaves touched:
  // 0 for a job on its minimal leaf set, towards 1 when scattered.
  double outside_fraction = 0;
};
Spread SpreadOf(const ClusterShape& shape, const std::vector<int>& nodes);

class NodePool {
 public:
  explicit NodePool(const ClusterShape& shape);

  const ClusterShape& shape() const { return shape_; }
  // Free (up and unallocated) nodes: node[n] = 1 when free.
  const Availability& free() const { return free_; }
  int down_nodes() const { return down_; }
  bool is_down(int node) const { return down_flag_[node] != 0; }
  bool is_free(int node) const { return free_.node[node] != 0; }

  // REQUIRES: every node free.
  void Allocate(const std::vector<int>& nodes);
  // Back to free, except nodes that went down meanwhile (they stay down).
  void Release(const std::vector<int>& nodes);
  // A node fails: it leaves the free set if it was there (a job on it must
  // be released by the caller). REQUIRES: up.
  void MarkDown(int node);
  // Repaired: free again unless still allocated. REQUIRES: down.
  void MarkUp(int node);

 private:
  void SetFree(int node, bool free);
  ClusterShape shape_;
  Availability free_;
  std::vector<uint8_t> down_flag_;
  std::vector<uint8_t> allocated_;
  int down_ = 0;
};

}  // namespace stacksim::cluster

#endif  // STACKSIM_SIM_CLUSTER_NODE_POOL_H_
