// A GPU system and the cluster built from it, parsed from topologies/*.json.
//
// The node: GPU type (names a profile), GPUs per node, the scale-up domain
// (NVLink/NVSwitch or PCIe) and its per-GPU bandwidth, the NICs. The cluster:
// scale-out fat tree (levels, rail-optimized or not, oversubscription, hop
// latency) and how many nodes it may hold. Bandwidths are per direction.
// Optional per-node host resources (DRAM and its bandwidth) and local NVMe:
// what optimizer/parameter offload uses (and checkpoints may, later); a node
// that does not describe them cannot offload. Optional cluster storage (a
// parallel file system's aggregate bandwidth): where checkpoints go.
#ifndef STACKSIM_SIM_CONFIG_TOPOLOGY_H_
#define STACKSIM_SIM_CONFIG_TOPOLOGY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/util/json_reader.h"
#include "sim/util/units.h"

namespace stacksim::config {

enum class ScaleUpKind { kNvSwitch, kNvLinkMesh, kPcie };
const char* ScaleUpKindName(ScaleUpKind k);  // "nvswitch", "nvlink-mesh", "pcie"

struct ScaleUp {
  ScaleUpKind kind = ScaleUpKind::kNvSwitch;
  int domain_gpus = 0;            // GPUs that share the NVLink domain (8; 72 for NVL72)
  Bandwidth per_gpu_bandwidth;    // per GPU, per direction (NVLink4: 450 GB/s)
  Time latency;                   // one hop through the domain
};

struct Nics {
  int per_node = 0;               // scale-out NICs for compute traffic
  Bandwidth bandwidth;            // per NIC, per direction (NDR: 400 Gb/s = 50 GB/s)
  Time latency;                   // NIC-to-NIC through one switch
};

// The host side of one node (both CPU sockets together).
struct HostResources {
  Bytes memory;                   // DRAM capacity (DGX H100: 2 TB)
  Bandwidth memory_bandwidth;     // DRAM peak, all channels of all sockets (read + write combined)
};

// The node's local NVMe drives (all of them, striped as one volume).
struct NvmeStorage {
  Bytes capacity;                 // usable bytes of all drives
  Bandwidth bandwidth_read;       // sequential read, all drives together
  Bandwidth bandwidth_write;      // sequential write, all drives together
};

// The cluster's shared storage as a whole job sees it: aggregate bandwidth
// when all of its nodes write (checkpoint) or read (restart) together.
struct ClusterStorage {
  Bandwidth write_bandwidth;
  Bandwidth read_bandwidth;
  std::string source;             // where the figures come from (required)
};

// Two or more data centres (sites) joined by a wide-area link: the job's
// nodes fill site 0 first, `nodes_per_site` nodes to a site. A collective or
// transfer whose members sit in different sites also crosses the link, which
// every GPU of a site shares equally (docs/network.md "Sites").
struct Sites {
  int nodes_per_site = 0;
  Bandwidth link_bandwidth;       // between two sites, per direction, all of it
  Time link_latency;              // one crossing (propagation and equipment)
  std::string source;             // where the figures come from (required)
};

struct FatTreeLevel {
  std::string name;               // "leaf", "spine", "core"
  int nodes_below = 0;            // nodes reachable under one switch group of this level
  double oversubscription = 1.0;  // downlink : uplink bandwidth ratio at this level (>= 1)
  Time hop_latency;               // added per traversal of this level
};

struct Fabric {
  bool rail_optimized = true;     // GPU i of every node sits on rail (leaf) i
  std::vector<FatTreeLevel> levels;  // leaf first
  // A fabric given as a graph instead of levels: the "fabric" object as
  // written, {"graph": FILE} or {"generator": NAME, ...}, which sim/fabric
  // reads (graph_spec.h); `levels` is then empty. Null: a fat tree.
  nlohmann::json graph;
  std::string file;               // the topology file the object came from
};

struct TopologyConfig {
  std::string name;
  std::string gpu;                // profile name, e.g. "h100-sxm-80gb"
  int gpus_per_node = 0;
  ScaleUp scale_up;
  Bandwidth pcie_bandwidth;       // host link per GPU, per direction
  Nics nics;
  std::optional<HostResources> host;  // node.host (absent: no offload to host memory)
  std::optional<NvmeStorage> nvme;    // node.nvme (absent: no NVMe offload)
  Fabric fabric;
  std::optional<ClusterStorage> storage;  // "storage" (absent: a campaign must be told)
  std::optional<Sites> sites;             // "sites" (absent: one site)
  int max_nodes = 0;              // largest cluster this fabric describes (0: unbounded)
  double gpu_hour_usd = 0;        // price, for cost objectives (0: not given)
  std::string source;             // where the figures come from (the file's "source")
  std::string notes;
};

// Rejects, besides unknown/missing keys and wrong units: gpus_per_node < 1,
// domain_gpus < gpus_per_node or not a multiple of it (a PCIe domain is exactly
// the node), oversubscription < 1, levels that do not grow, max_nodes beyond
// the top level.
TopologyConfig ParseTopology(const JsonNode& node);
TopologyConfig LoadTopologyFile(const std::string& path);
// The topology in the file format; ParseTopology reads it back.
nlohmann::json TopologyToJson(const TopologyConfig& t);

// Grows the fat tree to hold `nodes` nodes when the file describes fewer
// (nodes > max_nodes > 0): the cluster is built the way the file builds it,
// with more of its units. Every level below the top keeps its switch groups
// (a leaf still spans its nodes_below, a spine its own), there are just more
// of them, and the top level's group spans the whole cluster in whole groups
// of the level below. Oversubscription and hop latency stay as the file
// gives them per level. max_nodes becomes the new size. Returns the change in
// words for the scenario's notes, or "" when nothing had to grow.
std::string GrowFabricTo(TopologyConfig& t, int64_t nodes);

// The shipped system (topologies/<name>.json) a GPU profile comes in, for
// published runs that name only the GPU: "h100-sxm-80gb" -> "dgx-h100",
// "gb200" -> "gb200-nvl72" (72-GPU NVLink domains), "mi300x" ->
// "mi300x-platform". The H100 SXM 96GB sits in the DGX H100's system. ""
// for a GPU with no shipped system.
std::string SystemTopologyFor(const std::string& gpu_profile);

}  // namespace stacksim::config

#endif  // STACKSIM_SIM_CONFIG_TOPOLOGY_H_
