// The physical links of a cluster, as the SimGrid platform holds them, and the
// route between any two GPUs, computed in code (no routing table, so a
// 16,384-GPU platform builds quickly).
//
// Per GPU a full-duplex scale-up port (NVLink into the NVSwitch, or PCIe to
// the host bridge); per node its NICs; a fat tree of switch groups whose
// uplinks carry what climbs above them: level 0 is one leaf per rail and pod
// when rail-optimized (GPU i of each node on leaf i of its pod), else one per
// pod; level i >= 1 aggregates its pod's switches. An uplink's bandwidth is
// the bandwidth below it divided by that level's oversubscription. Switches
// themselves do not limit bandwidth. Links are stored as (up, down) pairs of
// one full-duplex link: index 2k is the direction towards the core (or out of
// the GPU), 2k+1 the way back. Bandwidths in bytes/s.
#ifndef STACKSIM_SIM_NET_SIMGRID_FABRIC_H_
#define STACKSIM_SIM_NET_SIMGRID_FABRIC_H_

#include <cstdint>
#include <string>
#include <vector>

#include "sim/config/topology.h"

namespace stacksim::net {

struct FabricLink {
  std::string name;  // "node 17 NIC 2", "leaf 3 rail 2 -> spine uplink"
  double bandwidth;  // bytes/s, per direction
};

// What the SimGrid platform needs of a fabric: its directed links, in
// (up, down) pairs, and one path of them between two GPUs. Fabric (below)
// is the parametric fat tree; GraphPlatform (graph_platform.h) a graph.
class Platform {
 public:
  virtual ~Platform() = default;
  virtual int64_t gpus() const = 0;
  // GPUs under one leaf switch group (a pod): siblings closer than this
  // share switches (all of them, where the fabric has no such span).
  virtual int64_t leaf_span_gpus() const = 0;
  virtual const std::vector<FabricLink>& links() const = 0;
  // Appends the directed links from GPU src to GPU dst (REQUIRES: src != dst).
  virtual void RouteLinks(int64_t src, int64_t dst, std::vector<int32_t>* out) const = 0;
};

class Fabric : public Platform {
 public:
  // port_bw: per-GPU scale-up port; nic_bw: one NIC.
  Fabric(const config::TopologyConfig& topology, double port_bw, double nic_bw, int cluster_gpus);

  int64_t gpus() const override { return gpus_; }
  int64_t leaf_span_gpus() const override { return leaf_span_; }
  const std::vector<FabricLink>& links() const override { return links_; }
  void RouteLinks(int64_t src, int64_t dst, std::vector<int32_t>* out) const override;

 private:
  int32_t AddLink(std::string name, double bw);
  int gpn_;
  int nics_;   // NICs per node (0: none)
  int rails_;  // leaves per pod at level 0
  int64_t nodes_, gpus_, leaf_span_;
  std::vector<int64_t> below_;          // nodes under one group, per level
  std::vector<int32_t> uplink_base_;    // first link pair of each level's uplinks, -1: none
  int32_t nic_base_ = 0;
  std::vector<FabricLink> links_;
};

}  // namespace stacksim::net

#endif  // STACKSIM_SIM_NET_SIMGRID_FABRIC_H_
