// A cluster's fabric as a graph (Boost.Graph adjacency_list): vertices are
// GPUs, NVSwitches (or a node's PCIe switch), NICs and network switches;
// each edge is one full-duplex link with its kind, its bandwidth per
// direction and its latency. Generators (generators.h) and graph files
// (graph_file.h) build one; fabric_metrics.h measures it.
//
// Conventions, the same for every producer:
// - One edge per physical link or per aggregated bundle (a leaf's uplinks to
//   its spine group are one edge of their summed bandwidth: ECMP as one fat
//   link, as the SimGrid platform builds it).
// - GPUs are numbered in the order they were added (FabricGraph::gpus): a
//   generator adds them node by node, rank order, so GPU i is global rank i.
// - A switch's `level` is its tier (0 for leaves, routers and rail switches,
//   1 for spines, 2 for cores); -1 for every other vertex.
// - Bandwidth in bytes/s per direction; latency per traversal of the link.
#ifndef STACKSIM_SIM_FABRIC_FABRIC_GRAPH_H_
#define STACKSIM_SIM_FABRIC_FABRIC_GRAPH_H_

#include <boost/graph/adjacency_list.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/util/units.h"

namespace stacksim::fabric {

enum class VertexKind { kGpu, kNvSwitch, kPcieSwitch, kNic, kSwitch };
enum class LinkKind { kNvLink, kPcie, kInfiniBand, kRoce, kIci };
inline constexpr int kVertexKinds = 5;
inline constexpr int kLinkKinds = 5;

// The names files use: "gpu", "nvswitch", "pcie-switch", "nic", "switch";
// "nvlink", "pcie", "ib", "roce", "ici" (a TPU-style chip-to-chip link).
const char* VertexKindName(VertexKind k);
const char* LinkKindName(LinkKind k);
std::optional<VertexKind> ParseVertexKind(std::string_view name);
std::optional<LinkKind> ParseLinkKind(std::string_view name);
// NVLink, PCIe and ICI join GPUs to their scale-up domain or neighbours; IB
// and RoCE are the scale-out network.
bool IsScaleOut(LinkKind k);

struct FabricVertex {
  VertexKind kind = VertexKind::kGpu;
  std::string name;  // "node 3 GPU 5", "leaf 0 rail 2"
  int level = -1;    // switches: tier (0 = leaf/router); others -1
};

struct FabricLink {
  LinkKind kind = LinkKind::kNvLink;
  Bandwidth bandwidth;  // per direction
  Time latency;
  int32_t id = -1;      // the link's place in the order links were added (FabricGraph::AddLink)
};

using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS, FabricVertex, FabricLink>;
using Vertex = boost::graph_traits<Graph>::vertex_descriptor;
using Edge = boost::graph_traits<Graph>::edge_descriptor;

struct FabricGraph {
  std::string name;          // what built it: "fat-tree dgx-h100", a file name
  Graph graph;
  std::vector<Vertex> gpus;  // in rank order
  // Set by the torus generator: its dimensions, GPU i at row-major
  // coordinates (the last fastest). Routing then follows dimension order
  // (routing.h) instead of spreading over every shortest path.
  std::vector<int> torus_dims;

  Vertex AddVertex(VertexKind kind, std::string name, int level = -1);
  void AddLink(Vertex a, Vertex b, LinkKind kind, Bandwidth bandwidth, Time latency);
};

}  // namespace stacksim::fabric

#endif  // STACKSIM_SIM_FABRIC_FABRIC_GRAPH_H_
