#include "sim/net/network_factory.h"

#include "sim/net/analytic_network.h"
#include "sim/net/simgrid_network.h"
#include "sim/util/error.h"

namespace stacksim::net {

std::unique_ptr<engine::NetworkModel> MakeNetwork(const std::string& name, const config::TopologyConfig& topology,
                                                  const config::ProfileConfig& profile, int cluster_gpus,
                                                  config::NodeOrder order) {
  if (name == "simgrid") {
    if (topology.sites) {
      throw InputError(topology.fabric.file, "sites",
                       "topology sites (an inter-site link) are priced by the analytic network model only; use "
                       "--network analytic");
    }
    return MakeSimGridNetwork(topology, profile, cluster_gpus, order);
  }
  if (name == "analytic") return std::make_unique<AnalyticNetwork>(topology, profile, cluster_gpus);
  throw InputError("", "--network", "unknown network model '" + name + "' (analytic, simgrid)");
}

}  // namespace stacksim::net
