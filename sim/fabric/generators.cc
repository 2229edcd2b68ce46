#include "sim/fabric/generators.h"

#include <algorithm>
#include <string>

namespace stacksim::fabric {
namespace {

std::string Str(int64_t v) { return std::to_string(v); }

// Adds nodes [0, nodes) of `topology`: GPUs, their scale-up domain, NICs.
// Returns each node's NIC vertices, node-major.
std::vector<std::vector<Vertex>> AddNodes(FabricGraph& fg, const config::TopologyConfig& t, int64_t nodes) {
  const int gpn = std::max(1, t.gpus_per_node);
  const int nics = std::max(0, t.nics.per_node);
  const int64_t domain_nodes = std::max(1, t.scale_up.domain_gpus / gpn);
  const Time half_hop = Time::Ns(t.scale_up.latency.ns() / 2);
  const bool pcie = t.scale_up.kind == config::ScaleUpKind::kPcie;
  const bool mesh = t.scale_up.kind == config::ScaleUpKind::kNvLinkMesh;
  std::vector<std::vector<Vertex>> node_nics(nodes);
  Vertex domain_switch = 0;
  for (int64_t n = 0; n < nodes; ++n) {
    if (!mesh && n % domain_nodes == 0) {
      domain_switch = pcie ? fg.AddVertex(VertexKind::kPcieSwitch, "node " + Str(n) + " PCIe switch")
                           : fg.AddVertex(VertexKind::kNvSwitch, "domain " + Str(n / domain_nodes) + " NVSwitch");
    }
    std::vector<Vertex> gpus;
    for (int c = 0; c < gpn; ++c) {
      Vertex g = fg.AddVertex(VertexKind::kGpu, "node " + Str(n) + " GPU " + Str(c));
      gpus.push_back(g);
      if (!mesh) {
        fg.AddLink(g, domain_switch, pcie ? LinkKind::kPcie : LinkKind::kNvLink, t.scale_up.per_gpu_bandwidth,
                   half_hop);
      }
    }
    if (mesh && gpn > 1) {
      const Bandwidth per_peer = t.scale_up.per_gpu_bandwidth / (gpn - 1);
      for (int a = 0; a < gpn; ++a) {
        for (int b = a + 1; b < gpn; ++b) fg.AddLink(gpus[a], gpus[b], LinkKind::kNvLink, per_peer, t.scale_up.latency);
      }
    }
    for (int k = 0; k < nics; ++k) {
      node_nics[n].push_back(fg.AddVertex(VertexKind::kNic, "node " + Str(n) + " NIC " + Str(k)));
    }
    for (int c = 0; c < gpn && nics > 0; ++c) {
      fg.AddLink(gpus[c], node_nics[n][c * nics / gpn], LinkKind::kPcie, t.pcie_bandwidth, Time::Zero());
    }
  }
  return node_nics;
}

Time Half(Time t) { return Time::Ns(t.ns() / 2); }

}  // namespace

FabricGraph FatTree(const config::TopologyConfig& t, int64_t nodes, int planes) {
  FabricGraph fg;
  fg.name = (planes > 1 ? Str(planes) + "-plane fat tree " : "fat tree ") + t.name;
  std::vector<std::vector<Vertex>> node_nics = AddNodes(fg, t, nodes);
  const int nics = std::max(0, t.nics.per_node);
  if (nics == 0 || t.fabric.levels.empty()) return fg;
  const int rails = t.fabric.rail_optimized ? nics : 1;
  const auto& levels = t.fabric.levels;
  const Bandwidth port = t.nics.bandwidth / planes;
  const Time nic_half = Half(t.nics.latency);

  for (int plane = 0; plane < planes; ++plane) {
    const std::string prefix = planes > 1 ? "plane " + Str(plane) + " " : "";
    // Level 0: a leaf per pod (and rail).
    const int64_t below0 = std::max(1, levels[0].nodes_below);
    const int64_t pods = (nodes + below0 - 1) / below0;
    std::vector<Vertex> current;  // this level's vertices, group-major, rail-minor at level 0
    for (int64_t p = 0; p < pods; ++p) {
      for (int r = 0; r < rails; ++r) {
        std::string name = prefix + levels[0].name + " " + Str(p) + (rails > 1 ? " rail " + Str(r) : "");
        current.push_back(fg.AddVertex(VertexKind::kSwitch, name, 0));
      }
    }
    for (int64_t n = 0; n < nodes; ++n) {
      for (int k = 0; k < nics; ++k) {
        Vertex leaf = current[(n / below0) * rails + (rails > 1 ? k : 0)];
        fg.AddLink(node_nics[n][k], leaf, LinkKind::kInfiniBand, port, nic_half);
      }
    }
    // Bandwidth below one vertex of level 0, then up the tree.
    Bandwidth down = port * static_cast<double>(below0 * (nics / rails));
    int64_t below = below0;
    int per_group = rails;  // vertices of the current level per group of the current level
    for (size_t i = 0;; ++i) {
      const bool top = below >= nodes;
      if (top && (i > 0 || rails == 1)) break;
      const Bandwidth up = down / std::max(1.0, levels[i].oversubscription);
      // The level above: the next one in the file, or a core (or, when the
      // leaf holds every node, a top joining the rails).
      const bool next_exists = i + 1 < levels.size() && !top;
      const int64_t above_below = next_exists ? std::max<int64_t>(below + 1, levels[i + 1].nodes_below) : nodes;
      const std::string above_name = next_exists ? levels[i + 1].name : top ? "top" : "core";
      const Time latency = next_exists ? Half(levels[i + 1].hop_latency) : Time::Zero();
      const int64_t groups = (nodes + above_below - 1) / above_below;
      std::vector<Vertex> above;
      for (int64_t q = 0; q < groups; ++q) {
        above.push_back(fg.AddVertex(VertexKind::kSwitch, prefix + above_name + (groups > 1 ? " " + Str(q) : ""),
                                     static_cast<int>(i + 1)));
      }
      for (size_t v = 0; v < current.size(); ++v) {
        const int64_t group = static_cast<int64_t>(v) / per_group;  // of the current level
        fg.AddLink(current[v], above[group * below / above_below], LinkKind::kInfiniBand, up, latency);
      }
      // What one vertex above has below it.
      // Whole groups below, as the SimGrid platform counts them.
      const int64_t children = std::max<int64_t>(1, above_below / below) * per_group;
      down = up * static_cast<double>(children);
      current = std::move(above);
      below = above_below;
      per_group = 1;
      if (!next_exists) break;
    }
  }
  return fg;
}

FabricGraph RailOnly(const config::TopologyConfig& t, int64_t nodes, Time hop_latency) {
  FabricGraph fg;
  fg.name = "rail-only " + t.name;
  std::vector<std::vector<Vertex>> node_nics = AddNodes(fg, t, nodes);
  const int nics = std::max(0, t.nics.per_node);
  std::vector<Vertex> rails;
  for (int r = 0; r < nics; ++r) rails.push_back(fg.AddVertex(VertexKind::kSwitch, "rail " + Str(r), 0));
  const Time latency = Half(t.nics.latency + hop_latency);
  for (int64_t n = 0; n < nodes; ++n) {
    for (int k = 0; k < nics; ++k) fg.AddLink(node_nics[n][k], rails[k], LinkKind::kInfiniBand, t.nics.bandwidth, latency);
  }
  return fg;
}

FabricGraph Torus(const TorusSpec& spec) {
  FabricGraph fg;
  std::string shape;
  int64_t total = 1;
  for (int d : spec.dims) {
    shape += (shape.empty() ? "" : "x") + Str(d);
    total *= d;
  }
  fg.name = "torus " + shape;
  fg.torus_dims = spec.dims;
  for (int64_t i = 0; i < total; ++i) fg.AddVertex(VertexKind::kGpu, "GPU " + Str(i));
  // Stride of each dimension in row-major order (last fastest).
  std::vector<int64_t> stride(spec.dims.size(), 1);
  for (size_t d = spec.dims.size(); d-- > 1;) stride[d - 1] = stride[d] * spec.dims[d];
  for (int64_t i = 0; i < total; ++i) {
    for (size_t d = 0; d < spec.dims.size(); ++d) {
      const int64_t k = spec.dims[d];
      const int64_t coord = (i / stride[d]) % k;
      if (k < 2) continue;
      if (k == 2 && coord == 1) continue;  // the one link of a pair, added from coordinate 0
      const int64_t next = i + ((coord + 1) % k - coord) * stride[d];
      fg.AddLink(fg.gpus[i], fg.gpus[next], spec.link_kind, spec.link_bandwidth, spec.link_latency);
    }
  }
  return fg;
}

FabricGraph Dragonfly(const config::TopologyConfig& t, const DragonflySpec& s) {
  FabricGraph fg;
  fg.name = "dragonfly " + t.name;
  const int64_t nodes = static_cast<int64_t>(s.groups) * s.routers_per_group * s.nodes_per_router;
  std::vector<std::vector<Vertex>> node_nics = AddNodes(fg, t, nodes);
  std::vector<Vertex> routers;
  for (int g = 0; g < s.groups; ++g) {
    for (int r = 0; r < s.routers_per_group; ++r) {
      routers.push_back(fg.AddVertex(VertexKind::kSwitch, "group " + Str(g) + " router " + Str(r), 0));
    }
  }
  for (int64_t n = 0; n < nodes; ++n) {
    Vertex router = routers[n / s.nodes_per_router];
    for (Vertex nic : node_nics[n]) {
      fg.AddLink(nic, router, s.link_kind, t.nics.bandwidth, Half(t.nics.latency));
    }
  }
  for (int g = 0; g < s.groups; ++g) {
    for (int a = 0; a < s.routers_per_group; ++a) {
      for (int b = a + 1; b < s.routers_per_group; ++b) {
        fg.AddLink(routers[g * s.routers_per_group + a], routers[g * s.routers_per_group + b], s.link_kind,
                   s.local_bandwidth, s.hop_latency);
      }
    }
  }
  if (s.groups < 2) return fg;
  const int per_pair = s.routers_per_group * s.global_links_per_router / (s.groups - 1);
  // Port q of group g (q = k-th partner x per_pair + link) sits on router q / h.
  auto port_router = [&](int g, int partner, int link) {
    const int rank = partner < g ? partner : partner - 1;  // partner's place among g's partners
    const int q = rank * per_pair + link;
    return routers[g * s.routers_per_group + q / s.global_links_per_router];
  };
  for (int g = 0; g < s.groups; ++g) {
    for (int h = g + 1; h < s.groups; ++h) {
      for (int l = 0; l < per_pair; ++l) {
        fg.AddLink(port_router(g, h, l), port_router(h, g, l), s.link_kind, s.global_bandwidth,
                   s.hop_latency);
      }
    }
  }
  return fg;
}

}  // namespace stacksim::fabric
