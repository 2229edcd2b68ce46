#include "sim/fabric/fabric_graph.h"

#include <utility>

namespace stacksim::fabric {

const char* VertexKindName(VertexKind k) {
  switch (k) {
    case VertexKind::kGpu: return "gpu";
    case VertexKind::kNvSwitch: return "nvswitch";
    case VertexKind::kPcieSwitch: return "pcie-switch";
    case VertexKind::kNic: return "nic";
    case VertexKind::kSwitch: return "switch";
  }
  return "?";
}

const char* LinkKindName(LinkKind k) {
  switch (k) {
    case LinkKind::kNvLink: return "nvlink";
    case LinkKind::kPcie: return "pcie";
    case LinkKind::kInfiniBand: return "ib";
    case LinkKind::kRoce: return "roce";
    case LinkKind::kIci: return "ici";
  }
  return "?";
}

std::optional<VertexKind> ParseVertexKind(std::string_view name) {
  for (int i = 0; i < kVertexKinds; ++i) {
    if (name == VertexKindName(static_cast<VertexKind>(i))) return static_cast<VertexKind>(i);
  }
  return std::nullopt;
}

std::optional<LinkKind> ParseLinkKind(std::string_view name) {
  for (int i = 0; i < kLinkKinds; ++i) {
    if (name == LinkKindName(static_cast<LinkKind>(i))) return static_cast<LinkKind>(i);
  }
  return std::nullopt;
}

bool IsScaleOut(LinkKind k) { return k == LinkKind::kInfiniBand || k == LinkKind::kRoce; }

Vertex FabricGraph::AddVertex(VertexKind kind, std::string vertex_name, int level) {
  Vertex v = boost::add_vertex(FabricVertex{kind, std::move(vertex_name), level}, graph);
  if (kind == VertexKind::kGpu) gpus.push_back(v);
  return v;
}

void FabricGraph::AddLink(Vertex a, Vertex b, LinkKind kind, Bandwidth bandwidth, Time latency) {
  const auto id = static_cast<int32_t>(boost::num_edges(graph));
  boost::add_edge(a, b, FabricLink{kind, bandwidth, latency, id}, graph);
}

}  // namespace stacksim::fabric
