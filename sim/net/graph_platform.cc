#include "sim/net/graph_platform.h"

#include <algorithm>
#include <string>
#include <utility>

namespace stacksim::net {

GraphPlatform::GraphPlatform(std::shared_ptr<const GraphFabric> fabric) : fabric_(std::move(fabric)) {
  links_.reserve(fabric_->directed_links());
  // Parallel links (a dragonfly's global links between two routers) get
  // their number among the pair's links: SimGrid names must be unique.
  const fabric::Graph& g = fabric_->graph().graph;
  std::vector<fabric::Edge> by_id(boost::num_edges(g));
  for (auto [e, end] = boost::edges(g); e != end; ++e) by_id[g[*e].id] = *e;
  const int64_t n = static_cast<int64_t>(boost::num_vertices(g));
  std::unordered_map<int64_t, int> seen;
  for (int32_t l = 0; l < fabric_->directed_links(); ++l) {
    const fabric::Edge e = by_id[l / 2];
    const int64_t a = static_cast<int64_t>(boost::source(e, g)), b = static_cast<int64_t>(boost::target(e, g));
    const int k = seen[(std::min(a, b) * n + std::max(a, b)) * 2 + l % 2]++;
    std::string name = fabric_->LinkName(l);
    if (k > 0) name += " #" + std::to_string(k + 1);
    links_.push_back({std::move(name), fabric_->bandwidth(l)});
  }
}

void GraphPlatform::RouteLinks(int64_t src, int64_t dst, std::vector<int32_t>* out) const {
  const int64_t key = src * fabric_->gpus() + dst;
  auto it = paths_.find(key);
  if (it == paths_.end()) {
    const fabric::Graph& g = fabric_->graph().graph;
    const fabric::Route& r = fabric_->Route(src, dst);
    // From each vertex, the route's links leaving it (a link crossed in
    // direction 0 leaves its lower-numbered end).
    std::unordered_map<fabric::Vertex, std::vector<size_t>> leaving;
    for (size_t i = 0; i < r.links.size(); ++i) {
      const fabric::Edge e = r.links[i].first;
      const fabric::Vertex lo = std::min(boost::source(e, g), boost::target(e, g));
      const fabric::Vertex hi = std::max(boost::source(e, g), boost::target(e, g));
      leaving[r.directed[i] % 2 == 0 ? lo : hi].push_back(i);
    }
    std::vector<int32_t> path;
    fabric::Vertex at = fabric_->graph().gpus[src];
    const fabric::Vertex to = fabric_->graph().gpus[dst];
    for (int hop = 0; at != to && hop < r.hops; ++hop) {
      const std::vector<size_t>& next = leaving[at];
      // A deterministic hash of the flow and the hop (splitmix64's mixer).
      uint64_t h = static_cast<uint64_t>(key) * 0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(at);
      h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL;
      h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL;
      h ^= h >> 31;
      const size_t i = next[h % next.size()];
      path.push_back(r.directed[i]);
      const fabric::Edge e = r.links[i].first;
      at = boost::source(e, g) == at ? boost::target(e, g) : boost::source(e, g);
    }
    it = paths_.emplace(key, std::move(path)).first;
  }
  out->insert(out->end(), it->second.begin(), it->second.end());
}

}  // namespace stacksim::net
