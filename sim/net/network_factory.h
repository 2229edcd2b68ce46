// The network model a run asks for by name (--network, simulate::Options):
// "analytic", the hierarchical alpha-beta model (analytic_network.h, fast),
// or "simgrid", SimGrid's flow-level model on the fabric (simgrid_network.h,
// contention between concurrent collectives). Every command that replays a
// trace gets its network model here, so the names mean the same everywhere.
#ifndef STACKSIM_SIM_NET_NETWORK_FACTORY_H_
#define STACKSIM_SIM_NET_NETWORK_FACTORY_H_

#include <memory>
#include <string>

#include "sim/config/profile.h"
#include "sim/config/scenario.h"
#include "sim/config/topology.h"
#include "sim/engine/network_model.h"

namespace stacksim::net {

// cluster_gpus and order place the job in the fabric (SimGridNetwork's
// constructor); the analytic model does not use them. Any other name is an
// InputError naming --network.
std::unique_ptr<engine::NetworkModel> MakeNetwork(const std::string& name, const config::TopologyConfig& topology,
                                                  const config::ProfileConfig& profile, int cluster_gpus,
                                                  config::NodeOrder order = config::NodeOrder::kPacked);

}  // namespace stacksim::net

#endif  // STACKSIM_SIM_NET_NETWORK_FACTORY_H_
