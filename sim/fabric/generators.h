// Generators: code that builds the fabrics people compare as FabricGraphs
// (fabric_graph.h). Each states how it numbers GPUs (rank order) and which
// bundles of links it aggregates into one edge.
//
// Nodes (fat tree, multi-plane, rail-only, dragonfly) come from the
// topology's node block: per node its GPUs, one NVSwitch per NVLink domain
// (a node, or a rack of them for NVL72: domain_gpus / gpus_per_node nodes
// share one NVSwitch vertex standing for all the domain's switch chips), or
// a PCIe switch, or, for an NVLink mesh, direct GPU-GPU links of
// bandwidth_per_gpu / (gpus - 1); per node its NICs, GPU c on NIC
// c x nics / gpus over a PCIe link. Latencies: a GPU-NVSwitch edge carries
// half the domain's hop latency, a NIC-switch edge half the NIC-to-NIC
// latency, a switch-switch edge half the upper level's hop latency, so a
// path up and down sums to the file's figures.
//
// Scale-out links of topologies built from the file's fabric levels are
// kind "ib": the topology file does not say InfiniBand or RoCE.
#ifndef STACKSIM_SIM_FABRIC_GENERATORS_H_
#define STACKSIM_SIM_FABRIC_GENERATORS_H_

#include <cstdint>
#include <vector>

#include "sim/config/topology.h"
#include "sim/fabric/fabric_graph.h"
#include "sim/util/units.h"

namespace stacksim::fabric {

// Today's parametric fat tree, built as the SimGrid platform builds it
// (sim/net/simgrid_fabric.h): level 0 is one leaf vertex per pod of
// levels[0].nodes_below nodes, and per rail when rail-optimized (NIC k of
// every node of the pod on leaf k); level i >= 1 is one vertex per group of
// levels[i].nodes_below nodes, standing for all its switches. Each vertex
// below the top has one uplink edge to its group's vertex above, of the
// bandwidth below it / that level's oversubscription. The top is the lowest
// level whose group holds all `nodes` (a "core" vertex when none does; a
// top vertex joining the rails when the leaf already holds them all).
// With `planes` > 1 (multi-plane rails) every NIC is split into `planes`
// ports of bandwidth / planes, each on its own copy of the tree.
// REQUIRES: nodes >= 1, planes >= 1, topology.fabric.levels not empty.
FabricGraph FatTree(const config::TopologyConfig& topology, int64_t nodes, int planes = 1);

// Rail-only (Wang, Ghobadi, Shakeri, Zhang, Hasani, "Rail-only: A Low-Cost
// High-Performance Network for Training LLMs with Trillion Parameters",
// arXiv:2307.12169):
// NIC k of every node on rail switch k and no spine, so traffic between
// rails crosses NVLink first. One vertex per rail stands for the rail's
// switches, non-blocking across all nodes.
FabricGraph RailOnly(const config::TopologyConfig& topology, int64_t nodes, Time hop_latency);

// A 2-D or 3-D torus of GPUs with wrap-around links, as TPU pods wire
// their chips: GPU i has coordinates in row-major order over `dims` (the
// last dimension fastest). A dimension of 2 gets one link between its two
// GPUs, a dimension of 1 none.
struct TorusSpec {
  std::vector<int> dims;
  LinkKind link_kind = LinkKind::kIci;
  Bandwidth link_bandwidth;  // per neighbour, per direction
  Time link_latency;
};
FabricGraph Torus(const TorusSpec& spec);

// A dragonfly (Kim, Dally, Scott, Abts, "Technology-Driven, Highly-Scalable
// Dragonfly Topology", ISCA 2008): `groups` groups of
// `routers_per_group` routers, all-to-all inside a group (local links);
// each router has `global_links_per_router` global links, and every pair
// of groups is joined by routers_per_group x global_links_per_router /
// (groups - 1) of them (REQUIRES: that divides exactly). Group i's global
// ports, numbered router by router, go to the other groups in ascending
// order. `nodes_per_router` nodes hang off each router (all their NICs).
// Nodes, hence GPUs, are numbered group by group.
struct DragonflySpec {
  int groups = 0;
  int routers_per_group = 0;
  int nodes_per_router = 0;
  int global_links_per_router = 0;
  LinkKind link_kind = LinkKind::kInfiniBand;
  Bandwidth local_bandwidth;   // one router-router link inside a group
  Bandwidth global_bandwidth;  // one global link
  Time hop_latency;            // per router traversal
};
FabricGraph Dragonfly(const config::TopologyConfig& topology, const DragonflySpec& spec);

}  // namespace stacksim::fabric

#endif  // STACKSIM_SIM_FABRIC_GENERATORS_H_
