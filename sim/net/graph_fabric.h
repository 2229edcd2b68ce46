// A fabric given as a graph (a topology whose "fabric" names a generator or
// a GraphML/DOT file: sim/fabric/graph_spec.h) as both network models see
// it: the graph, its routes (fabric::Router: dimension order on a torus,
// shortest paths with ECMP elsewhere, each pair routed once), what each
// directed link achieves, and how a communication group's members sit in
// its scale-up domains.
//
// Achieved bandwidth: an IB/RoCE link or a link to a NIC runs at line rate x
// the profile's nic_efficiency; every other link (NVLink, PCIe, ICI) at
// line rate x the ring curve's peak efficiency (its peak bus bandwidth over
// the link it was measured on), as the parametric models price a NIC and an
// NVLink port. Latency of one ring step over a route: the profile's
// per-step figure (intra_latency inside the scale-up links, inter_latency
// when the route crosses the network) plus what the route's links add
// beyond one hop of its kind (the topology's NIC-to-NIC latency, or its
// scale-up latency): a dragonfly's router-to-router hops, a torus's
// further hops, a fat tree's spine. Immutable after construction; its
// Router is thread-safe.
#ifndef STACKSIM_SIM_NET_GRAPH_FABRIC_H_
#define STACKSIM_SIM_NET_GRAPH_FABRIC_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sim/config/topology.h"
#include "sim/fabric/fabric_graph.h"
#include "sim/fabric/routing.h"
#include "sim/trace/trace.h"
#include "sim/util/units.h"

namespace stacksim::net {

// How a group's members (in rank order) sit in scale-up domains.
struct GroupShape {
  int domains = 1;     // distinct domains, in member order
  int per_domain = 1;  // members in each (1 when the runs are uneven: then every member is its own)
  bool one_switch = false;  // every member on one NVSwitch: the measured intra-domain curves apply
};

class GraphFabric {
 public:
  // scale_up_efficiency, nic_efficiency in (0, 1].
  GraphFabric(fabric::FabricGraph graph, const config::TopologyConfig& topology, double scale_up_efficiency,
              double nic_efficiency);

  int64_t gpus() const { return static_cast<int64_t>(graph_->gpus.size()); }
  const fabric::FabricGraph& graph() const { return *graph_; }
  const fabric::Router& router() const { return *router_; }
  // REQUIRES: src != dst, both < gpus().
  const fabric::Route& Route(int64_t src, int64_t dst) const { return router_->Between(src, dst); }

  // Per directed link (fabric::DirectedLink): achieved bandwidth in
  // bytes/s, whether it is a network link, and a name for reports
  // ("node 3 NIC 2 -> rail 2").
  int32_t directed_links() const { return static_cast<int32_t>(bandwidth_.size()); }
  double bandwidth(int32_t link) const { return bandwidth_[link]; }
  bool network(int32_t link) const { return network_[link]; }
  std::string LinkName(int32_t link) const;

  // Whether the route crosses a network link, and the latency of one
  // collective step over it (see above).
  bool CrossesNetwork(const fabric::Route& route) const;
  Time StepLatency(const fabric::Route& route, Time intra_step, Time inter_step) const;

  // Members first_rank + offset + i x stride, i < size.
  GroupShape Shape(const trace::CommGroup& group, int64_t offset = 0) const;

 private:
  // Outside the graph: a domain of its own (the pricing then names the group).
  int64_t Domain(int64_t gpu) const {
    return gpu >= 0 && gpu < gpus() ? domain_[gpu] : -1 - gpu - gpus();
  }
  std::unique_ptr<fabric::FabricGraph> graph_;  // owned; the router points into it
  std::unique_ptr<fabric::Router> router_;
  std::vector<fabric::Edge> edges_;  // by FabricLink::id
  std::vector<double> bandwidth_;
  std::vector<char> network_;
  std::vector<int64_t> domain_;  // per GPU: its NVSwitch vertex, or -1 - gpu when it has none
  Time nic_hop_, scale_up_hop_;
};

}  // namespace stacksim::net

#endif  // STACKSIM_SIM_NET_GRAPH_FABRIC_H_
