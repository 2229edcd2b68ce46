// Routes on the fabric graph: the shortest paths (by link count) between
// two vertices, and how one flow spreads over them under ECMP, each vertex
// splitting what it forwards evenly over its next hops on a shortest path
// (per-hop hashing, as switches do; a GPU forwarding through its NVSwitch
// to a peer's NIC counts as one more equal-cost choice, as NCCL's PXN
// does). Not yet read by the network models (docs/fabric.md, "Open").
#ifndef STACKSIM_SIM_FABRIC_ROUTING_H_
#define STACKSIM_SIM_FABRIC_ROUTING_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "sim/fabric/fabric_graph.h"
#include "sim/util/units.h"

namespace stacksim::fabric {

struct Route {
  int hops = -1;          // links on a shortest path; -1: unreachable
  int64_t paths = 0;      // distinct shortest paths (saturates at 2^62)
  // Each link crossed, with the fraction of the flow it carries (0, 1].
  std::vector<std::pair<Edge, double>> links;
  // The most one flow gets with the fabric to itself: min over its links
  // of bandwidth / fraction.
  Bandwidth bandwidth;
};

// REQUIRES: src != dst.
Route ShortestRoute(const FabricGraph& fabric, Vertex src, Vertex dst);

}  // namespace stacksim::fabric

#endif  // STACKSIM_SIM_FABRIC_ROUTING_H_
