#include "sim/fabric/fabric_metrics.h"

#include <boost/graph/breadth_first_search.hpp>
#include <boost/graph/push_relabel_max_flow.hpp>

#include <algorithm>
#include <cmath>
#include <map>

namespace stacksim::fabric {
namespace {

// The flow network: per link and direction an arc of the link's bandwidth
// and its zero-capacity reverse (push-relabel wants reverse arcs of capacity
// 0), plus a source feeding the first half of the GPUs and a sink draining
// the second. Capacities are whole bytes/s.
using FlowTraits = boost::adjacency_list_traits<boost::vecS, boost::vecS, boost::directedS>;
using FlowGraph = boost::adjacency_list<
    boost::vecS, boost::vecS, boost::directedS, boost::no_property,
    boost::property<boost::edge_capacity_t, int64_t,
                    boost::property<boost::edge_residual_capacity_t, int64_t,
                                    boost::property<boost::edge_reverse_t, FlowTraits::edge_descriptor>>>>;

void AddArc(FlowGraph& g, size_t a, size_t b, int64_t cap) {
  auto capacity = boost::get(boost::edge_capacity, g);
  auto reverse = boost::get(boost::edge_reverse, g);
  auto ab = boost::add_edge(a, b, g).first;
  auto ba = boost::add_edge(b, a, g).first;
  capacity[ab] = cap;
  capacity[ba] = 0;
  reverse[ab] = ba;
  reverse[ba] = ab;
}

int64_t Capacity(Bandwidth b) { return static_cast<int64_t>(std::llround(b.value)); }

// Most links from `source` to any GPU (-1 when one is unreachable).
int FarthestGpu(const FabricGraph& f, Vertex source, std::vector<int>& dist) {
  std::fill(dist.begin(), dist.end(), -1);
  dist[source] = 0;
  auto distance = boost::make_iterator_property_map(dist.begin(), boost::get(boost::vertex_index, f.graph));
  boost::breadth_first_search(
      f.graph, source, boost::visitor(boost::make_bfs_visitor(boost::record_distances(distance, boost::on_tree_edge()))));
  int far = 0;
  for (Vertex g : f.gpus) {
    if (dist[g] < 0) return -1;
    far = std::max(far, dist[g]);
  }
  return far;
}

}  // namespace

Bandwidth BisectionBandwidth(const FabricGraph& f) {
  const size_t n = f.gpus.size();
  if (n < 2) return Bandwidth{0};
  const size_t v = boost::num_vertices(f.graph);
  FlowGraph g(v + 2);
  const size_t source = v, sink = v + 1;
  for (auto [e, end] = boost::edges(f.graph); e != end; ++e) {
    const int64_t cap = Capacity(f.graph[*e].bandwidth);
    AddArc(g, boost::source(*e, f.graph), boost::target(*e, f.graph), cap);
    AddArc(g, boost::target(*e, f.graph), boost::source(*e, f.graph), cap);
  }
  // A GPU sends or receives at most its links' sum: no overflow however large.
  for (size_t i = 0; i < n; ++i) {
    int64_t own = 0;
    for (auto [e, end] = boost::out_edges(f.gpus[i], f.graph); e != end; ++e) own += Capacity(f.graph[*e].bandwidth);
    if (i < n / 2) {
      AddArc(g, source, f.gpus[i], own);
    } else {
      AddArc(g, f.gpus[i], sink, own);
    }
  }
  const int64_t flow = boost::push_relabel_max_flow(g, source, sink);
  return Bandwidth{static_cast<double>(flow)};
}

FabricSummary Summarize(const FabricGraph& f) {
  FabricSummary s;
  const Graph& g = f.graph;
  s.gpus = static_cast<int64_t>(f.gpus.size());
  for (auto [v, end] = boost::vertices(g); v != end; ++v) ++s.vertices[static_cast<int>(g[*v].kind)];
  for (auto [e, end] = boost::edges(g); e != end; ++e) {
    LinkTally& t = s.links[static_cast<int>(g[*e].kind)];
    ++t.count;
    t.total += g[*e].bandwidth;
  }
  s.bisection = BisectionBandwidth(f);

  // Diameter over GPUs.
  std::vector<int> dist(boost::num_vertices(g));
  std::vector<size_t> sources;
  if (s.gpus <= kExactDiameterGpus) {
    for (size_t i = 0; i < f.gpus.size(); ++i) sources.push_back(i);
  } else {
    s.diameter_exact = false;
    for (int k = 0; k <= 256; ++k) sources.push_back(static_cast<size_t>((s.gpus - 1) * k / 256));
  }
  for (size_t i : sources) {
    int far = FarthestGpu(f, f.gpus[i], dist);
    if (far < 0) {
      s.diameter_hops = -1;
      break;
    }
    s.diameter_hops = std::max(s.diameter_hops, far);
  }

  // Injection per GPU.
  bool first = true;
  for (Vertex gpu : f.gpus) {
    Bandwidth up{0}, out{0};
    for (auto [e, end] = boost::out_edges(gpu, g); e != end; ++e) {
      Vertex w = boost::target(*e, g);
      if (g[w].kind != VertexKind::kNic) {
        up += g[*e].bandwidth;
        continue;
      }
      Bandwidth network{0};
      int sharing = 0;
      for (auto [ne, nend] = boost::out_edges(w, g); ne != nend; ++ne) {
        Vertex x = boost::target(*ne, g);
        if (g[x].kind == VertexKind::kGpu) {
          ++sharing;
        } else {
          network += g[*ne].bandwidth;
        }
      }
      out += std::min(g[*e].bandwidth, network / std::max(1, sharing));
    }
    if (first || up < s.scale_up_min) s.scale_up_min = up;
    if (first || up > s.scale_up_max) s.scale_up_max = up;
    if (first || out < s.scale_out_min) s.scale_out_min = out;
    if (first || out > s.scale_out_max) s.scale_out_max = out;
    first = false;
  }

  // Oversubscription by switch level.
  std::map<int, LevelOversubscription> levels;
  for (auto [v, end] = boost::vertices(g); v != end; ++v) {
    if (g[*v].kind != VertexKind::kSwitch || g[*v].level < 0) continue;
    const int level = g[*v].level;
    Bandwidth down{0}, up{0};
    for (auto [e, eend] = boost::out_edges(*v, g); e != eend; ++e) {
      const FabricVertex& w = g[boost::target(*e, g)];
      const bool is_switch = w.kind == VertexKind::kSwitch && w.level >= 0;
      if (is_switch && w.level > level) {
        up += g[*e].bandwidth;
      } else if (!is_switch || w.level < level) {
        down += g[*e].bandwidth;
      }
    }
    if (!(up.value > 0)) continue;
    const double ratio = down / up;
    auto [it, added] = levels.try_emplace(level, LevelOversubscription{level, 0, ratio, ratio});
    ++it->second.switches;
    it->second.min = std::min(it->second.min, ratio);
    it->second.max = std::max(it->second.max, ratio);
  }
  for (const auto& [level, o] : levels) s.oversubscription.push_back(o);
  return s;
}

}  // namespace stacksim::fabric
