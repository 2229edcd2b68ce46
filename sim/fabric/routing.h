// Routes on the fabric graph, as the fabric routes them:
//
// - ShortestRoute: the shortest paths (by link count) between two vertices,
//   and how one flow spreads over them under ECMP, each vertex splitting
//   what it forwards evenly over its next hops on a shortest path (per-hop
//   hashing, as switches do; a GPU forwarding through its NVSwitch to a
//   peer's NIC counts as one more equal-cost choice, as NCCL's PXN does).
//   On a dragonfly this is minimal routing (local, global, local hops, over
//   every global link that gives a minimal path).
// - DimensionOrderRoute: on a torus (FabricGraph::torus_dims), the one path
//   that corrects the first dimension, then the second, then the third,
//   each the short way round (the positive way when both are as short), as
//   torus networks route deadlock-free.
// - Router: the fabric's own choice of the two between GPUs, each pair
//   routed once and kept, so that a collective's ring edges and every
//   sibling copy's cost one route each however often they are priced.
//
// Links are named by direction: 2 x FabricLink::id when crossed from the
// lower-numbered vertex, 2 x id + 1 the other way (links are full duplex).
#ifndef STACKSIM_SIM_FABRIC_ROUTING_H_
#define STACKSIM_SIM_FABRIC_ROUTING_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <string>
#include <vector>

#include "sim/fabric/fabric_graph.h"
#include "sim/util/units.h"

namespace stacksim::fabric {

struct Route {
  int hops = -1;          // links on a shortest path; -1: unreachable
  int64_t paths = 0;      // distinct paths the flow takes (saturates at 2^62)
  // Each link crossed, with the fraction of the flow it carries (0, 1].
  std::vector<std::pair<Edge, double>> links;
  std::vector<int32_t> directed;  // per links[i], the direction crossed (see above)
  // The most one flow gets with the fabric to itself: min over its links
  // of bandwidth / fraction.
  Bandwidth bandwidth;
  Time latency;  // summed link latency of its slowest path
};

// Directed link id of `e` crossed from `from`.
int32_t DirectedLink(const Graph& g, Edge e, Vertex from);

// REQUIRES: src != dst.
Route ShortestRoute(const FabricGraph& fabric, Vertex src, Vertex dst);
// REQUIRES: fabric.torus_dims set (a Torus()), src != dst, both GPUs.
Route DimensionOrderRoute(const FabricGraph& fabric, Vertex src, Vertex dst);

// Routes between GPUs by rank (FabricGraph::gpus), dimension order on a
// torus and shortest paths with ECMP elsewhere, computed once per ordered
// pair. Holds a reference to the fabric, which must outlive it. Safe to
// call from several threads; returned references stay valid for its life.
class Router {
 public:
  explicit Router(const FabricGraph& fabric);
  ~Router();
  // REQUIRES: 0 <= src, dst < fabric.gpus.size(), src != dst.
  const Route& Between(int64_t src, int64_t dst) const;
  const FabricGraph& fabric() const { return fabric_; }
  size_t routed_pairs() const;

 private:
  struct Scratch;
  const FabricGraph& fabric_;
  mutable std::mutex mu_;
  mutable std::unordered_map<int64_t, Route> cache_;
  mutable std::unique_ptr<Scratch> scratch_;
};

}  // namespace stacksim::fabric

#endif  // STACKSIM_SIM_FABRIC_ROUTING_H_
