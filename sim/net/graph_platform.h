// The SimGrid platform of a fabric given as a graph (graph_fabric.h): one
// split-duplex link per graph edge at its achieved bandwidth (link pair k
// is edge k; "up" is the direction from its lower-numbered vertex), and
// per pair of GPUs one path: the fabric's route (dimension order on a
// torus, shortest paths elsewhere), where that spreads over several
// equal-cost paths the one a per-flow ECMP hash of (src, dst) picks at
// each hop, as switches place a flow on one path. The analytic model
// instead splits a flow evenly over them (graph_pricing.h); both agree
// wherever a route has one path. Paths are kept per pair.
#ifndef STACKSIM_SIM_NET_GRAPH_PLATFORM_H_
#define STACKSIM_SIM_NET_GRAPH_PLATFORM_H_

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "sim/net/graph_fabric.h"
#include "sim/net/simgrid_fabric.h"

namespace stacksim::net {

class GraphPlatform : public Platform {
 public:
  explicit GraphPlatform(std::shared_ptr<const GraphFabric> fabric);

  int64_t gpus() const override { return fabric_->gpus(); }
  int64_t leaf_span_gpus() const override { return fabric_->gpus(); }
  const std::vector<FabricLink>& links() const override { return links_; }
  void RouteLinks(int64_t src, int64_t dst, std::vector<int32_t>* out) const override;

 private:
  std::shared_ptr<const GraphFabric> fabric_;
  std::vector<FabricLink> links_;
  mutable std::unordered_map<int64_t, std::vector<int32_t>> paths_;
};

}  // namespace stacksim::net

#endif  // STACKSIM_SIM_NET_GRAPH_PLATFORM_H_
