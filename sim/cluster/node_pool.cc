#include "sim/cluster/node_pool.h"

#include <algorithm>
#include <numeric>

namespace stacksim::cluster {
namespace {

// Takes `count` nodes from groups of available nodes with as few groups as
// possible: the smallest group that holds all that is left (best fit keeps
// big holes for big jobs), else the largest group whole, and again.
// groups[i] lists group i's available nodes. Appends to `out`.
void TakeFewestGroups(std::vector<std::vector<int>>& groups, int count, std::vector<int>& out) {
  while (count > 0) {
    int best_fit = -1, largest = -1;
    for (int g = 0; g < static_cast<int>(groups.size()); ++g) {
      const int n = static_cast<int>(groups[g].size());
      if (n == 0) continue;
      if (n >= count && (best_fit < 0 || n < static_cast<int>(groups[best_fit].size()))) best_fit = g;
      if (largest < 0 || n > static_cast<int>(groups[largest].size())) largest = g;
    }
    const int g = best_fit >= 0 ? best_fit : largest;
    const int take = std::min(count, static_cast<int>(groups[g].size()));
    out.insert(out.end(), groups[g].begin(), groups[g].begin() + take);
    groups[g].clear();
    count -= take;
  }
}

// `take` available nodes of leaf `leaf`, whole NVLink domains first.
void TakeFromLeaf(const ClusterShape& shape, const Availability& avail, int leaf, int take, std::vector<int>& out) {
  const int first = leaf * shape.nodes_per_leaf;
  const int last = std::min(shape.nodes, first + shape.nodes_per_leaf);
  if (shape.nodes_per_domain <= 1) {
    for (int n = first; n < last && take > 0; ++n) {
      if (avail.node[n]) {
        out.push_back(n);
        --take;
      }
    }
    return;
  }
  std::vector<std::vector<int>> domains;
  int current = -1;
  for (int n = first; n < last; ++n) {
    if (!avail.node[n]) continue;
    if (n / shape.nodes_per_domain != current) {
      current = n / shape.nodes_per_domain;
      domains.emplace_back();
    }
    domains.back().push_back(n);
  }
  TakeFewestGroups(domains, take, out);
}

// Leaves (indices into [first, last)) in the order a fewest-leaves placement
// takes them, and how many nodes from each; empty if they cannot hold count.
std::vector<std::pair<int, int>> FewestLeaves(const Availability& avail, int first, int last, int count) {
  std::vector<std::pair<int, int>> plan;
  int total = 0;
  for (int l = first; l < last; ++l) total += avail.per_leaf[l];
  if (total < count) return plan;
  std::vector<int> order;
  for (int l = first; l < last; ++l) {
    if (avail.per_leaf[l] > 0) order.push_back(l);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return avail.per_leaf[a] > avail.per_leaf[b]; });
  size_t next = 0;  // largest leaf not yet taken
  while (count > 0) {
    // The smallest untaken leaf that holds the rest (order is descending, so
    // scan from the back).
    int fit = -1;
    for (size_t i = order.size(); i-- > next;) {
      if (avail.per_leaf[order[i]] >= count) {
        fit = static_cast<int>(i);
        break;
      }
    }
    if (fit >= 0) {
      plan.emplace_back(order[fit], count);
      return plan;
    }
    plan.emplace_back(order[next], avail.per_leaf[order[next]]);
    count -= avail.per_leaf[order[next]];
    ++next;
  }
  return plan;
}

}  // namespace

const char* PlacementName(PlacementPolicy p) { return p == PlacementPolicy::kTopology ? "topology" : "first-fit"; }

ClusterShape ShapeOf(const config::TopologyConfig& topology, int nodes) {
  ClusterShape s;
  s.nodes = nodes;
  s.gpus_per_node = std::max(1, topology.gpus_per_node);
  const auto& levels = topology.fabric.levels;
  s.nodes_per_leaf = levels.empty() ? nodes : std::max(1, levels[0].nodes_below);
  s.nodes_per_spine = levels.size() > 1 ? std::max(s.nodes_per_leaf, levels[1].nodes_below) : std::max(nodes, 1);
  s.nodes_per_domain = std::max(1, topology.scale_up.domain_gpus / s.gpus_per_node);
  return s;
}

std::vector<int> ChooseNodes(const ClusterShape& shape, const Availability& avail, int count, PlacementPolicy policy) {
  std::vector<int> out;
  if (count <= 0 || avail.total < count) return out;
  out.reserve(count);
  const int leaves = shape.leaves();
  if (policy == PlacementPolicy::kFirstFit) {
    for (int l = 0; l < leaves && static_cast<int>(out.size()) < count; ++l) {
      if (avail.per_leaf[l] == 0) continue;
      TakeFromLeaf(shape, avail, l, std::min(avail.per_leaf[l], count - static_cast<int>(out.size())), out);
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  // Fewest leaves: first inside one spine group (fewest leaves, then the
  // tightest group), else over the whole fabric.
  const int leaves_per_spine = std::max(1, shape.nodes_per_spine / shape.nodes_per_leaf);
  std::vector<std::pair<int, int>> best;
  int best_spare = 0;
  for (int first = 0; first < leaves; first += leaves_per_spine) {
    const int last = std::min(leaves, first + leaves_per_spine);
    std::vector<std::pair<int, int>> plan = FewestLeaves(avail, first, last, count);
    if (plan.empty()) continue;
    int spare = -count;
    for (int l = first; l < last; ++l) spare += avail.per_leaf[l];
    if (best.empty() || plan.size() < best.size() || (plan.size() == best.size() && spare < best_spare)) {
      best = std::move(plan);
      best_spare = spare;
    }
  }
  if (best.empty()) best = FewestLeaves(avail, 0, leaves, count);
  for (auto [leaf, take] : best) TakeFromLeaf(shape, avail, leaf, take, out);
  std::sort(out.begin(), out.end());
  return out;
}

Spread SpreadOf(const ClusterShape& shape, const std::vector<int>& nodes) {
  Spread s;
  if (nodes.empty()) return s;
  std::vector<int> per_leaf;  // nodes are ascending, so a leaf's nodes are adjacent
  int current = -1;
  for (int n : nodes) {
    if (shape.leaf(n) != current) {
      current = shape.leaf(n);
      per_leaf.push_back(0);
    }
    ++per_leaf.back();
  }
  s.leaves = static_cast<int>(per_leaf.size());
  s.min_leaves = shape.MinLeaves(static_cast<int>(nodes.size()));
  std::sort(per_leaf.begin(), per_leaf.end(), std::greater<>());
  const int inside = std::accumulate(per_leaf.begin(), per_leaf.begin() + std::min(s.leaves, s.min_leaves), 0);
  s.outside_fraction = 1.0 - static_cast<double>(inside) / static_cast<double>(nodes.size());
  return s;
}

NodePool::NodePool(const ClusterShape& shape)
    : shape_(shape), down_flag_(shape.nodes, 0), allocated_(shape.nodes, 0) {
  free_.node.assign(shape.nodes, 1);
  free_.per_leaf.assign(shape.leaves(), 0);
  for (int n = 0; n < shape.nodes; ++n) ++free_.per_leaf[shape.leaf(n)];
  free_.total = shape.nodes;
}

void NodePool::SetFree(int node, bool free) {
  if ((free_.node[node] != 0) == free) return;
  free_.node[node] = free ? 1 : 0;
  const int d = free ? 1 : -1;
  free_.per_leaf[shape_.leaf(node)] += d;
  free_.total += d;
}

void NodePool::Allocate(const std::vector<int>& nodes) {
  for (int n : nodes) {
    allocated_[n] = 1;
    SetFree(n, false);
  }
}

void NodePool::Release(const std::vector<int>& nodes) {
  for (int n : nodes) {
    allocated_[n] = 0;
    if (!down_flag_[n]) SetFree(n, true);
  }
}

void NodePool::MarkDown(int node) {
  down_flag_[node] = 1;
  ++down_;
  SetFree(node, false);
}

void NodePool::MarkUp(int node) {
  down_flag_[node] = 0;
  --down_;
  if (!allocated_[node]) SetFree(node, true);
}

}  // namespace stacksim::cluster
