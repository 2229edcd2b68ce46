// The fabric graph of a topology (topologies/*.json): its parametric fat
// tree ("fabric": {"rail_optimized", "levels"}), or what its "fabric"
// object names instead:
//
//   {"graph": "FILE"}                 a GraphML or DOT file (graph_file.h),
//                                     relative to the topology file
//   {"generator": "rail-only", "hop_latency": "0.5 us"}
//   {"generator": "multi-plane", "planes": 2, "rail_optimized": true,
//    "levels": [...]}                 a fat tree per plane (levels as usual)
//   {"generator": "torus", "dims": [8, 8, 8], "link_kind": "nvlink",
//    "link_bandwidth": "75 GB/s", "link_latency": "1 us"}
//   {"generator": "dragonfly", "groups": 9, "routers_per_group": 8,
//    "nodes_per_router": 2, "global_links_per_router": 4,
//    "link_kind": "ib", "local_bandwidth": "400 Gb/s",
//    "global_bandwidth": "400 Gb/s", "hop_latency": "0.5 us"}
//
// Parsing is strict: unknown or missing keys and impossible values are
// InputError naming the topology file and the key path ("fabric.dims").
#ifndef STACKSIM_SIM_FABRIC_GRAPH_SPEC_H_
#define STACKSIM_SIM_FABRIC_GRAPH_SPEC_H_

#include <cstdint>

#include "sim/config/topology.h"
#include "sim/fabric/fabric_graph.h"

namespace stacksim::fabric {

// `nodes`: how many nodes a fat tree, multi-plane or rail-only fabric is
// built for (0: the topology's max_nodes, else its top level's span).
// Torus, dragonfly and graph files have the size they describe; asking for
// more nodes than they hold is an error.
FabricGraph BuildFabric(const config::TopologyConfig& topology, int64_t nodes = 0);

}  // namespace stacksim::fabric

#endif  // STACKSIM_SIM_FABRIC_GRAPH_SPEC_H_
