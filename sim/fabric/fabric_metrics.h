// What `stacksim topology` prints about a fabric graph: its vertices and
// links by kind, bisection bandwidth, diameter, per-GPU injection
// bandwidth and oversubscription by switch level.
//
// Bisection: the GPUs are split by rank, the first floor(n/2) against the
// rest, and the bisection bandwidth is the maximum flow from one half to
// the other (Boost.Graph's push-relabel max-flow; each link carries its
// bandwidth in each direction), which equals the minimum cut between them.
// The generators number GPUs so that this split is the one the fabric's
// bisection is quoted for: half the pods of a fat tree, half a torus cut
// across its first dimension, half the groups of a dragonfly. It is not a
// search over all balanced cuts (NP-hard in general).
//
// Diameter: the most links on a shortest path between two GPUs (breadth-
// first search from each GPU; above kExactDiameterGpus GPUs, from 257
// evenly spaced ones, which the generators' symmetric fabrics make exact,
// and `diameter_exact` says so).
//
// Injection, per GPU: scale-up is the sum of its NVLink/ICI/PCIe links to
// its domain or neighbours; scale-out is, over its NICs, each NIC's
// network links' bandwidth shared equally by the GPUs on that NIC, capped
// by the GPU's own link to the NIC. The minimum and maximum over GPUs.
//
// Oversubscription, per switch level that has links to a higher level:
// bandwidth down (to NICs, GPUs and lower levels) over bandwidth up, the
// minimum and maximum over the level's switches.
#ifndef STACKSIM_SIM_FABRIC_FABRIC_METRICS_H_
#define STACKSIM_SIM_FABRIC_FABRIC_METRICS_H_

#include <array>
#include <cstdint>
#include <vector>

#include "sim/fabric/fabric_graph.h"
#include "sim/util/units.h"

namespace stacksim::fabric {

inline constexpr int64_t kExactDiameterGpus = 4096;

struct LinkTally {
  int64_t count = 0;
  Bandwidth total;  // sum of per-direction bandwidths
};

struct LevelOversubscription {
  int level = 0;
  int64_t switches = 0;
  double min = 0, max = 0;  // down : up
};

struct FabricSummary {
  std::array<int64_t, kVertexKinds> vertices{};  // by VertexKind
  std::array<LinkTally, kLinkKinds> links{};     // by LinkKind
  int64_t gpus = 0;
  Bandwidth bisection;         // per direction, GPUs [0, n/2) against [n/2, n)
  int diameter_hops = 0;       // -1: some GPUs cannot reach each other
  bool diameter_exact = true;
  Bandwidth scale_up_min, scale_up_max;
  Bandwidth scale_out_min, scale_out_max;
  std::vector<LevelOversubscription> oversubscription;  // by level, ascending
};

// Max-flow between the two halves of the GPUs (see above). 0 with < 2 GPUs.
Bandwidth BisectionBandwidth(const FabricGraph& fabric);
FabricSummary Summarize(const FabricGraph& fabric);

}  // namespace stacksim::fabric

#endif  // STACKSIM_SIM_FABRIC_FABRIC_METRICS_H_
