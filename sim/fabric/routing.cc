#include "sim/fabric/routing.h"

#include <boost/graph/breadth_first_search.hpp>

#include <algorithm>
#include <limits>

namespace stacksim::fabric {

Route ShortestRoute(const FabricGraph& f, Vertex src, Vertex dst) {
  const Graph& g = f.graph;
  Route route;
  // Distances to dst (Boost BFS from dst).
  std::vector<int> dist(boost::num_vertices(g), -1);
  dist[dst] = 0;
  auto distance = boost::make_iterator_property_map(dist.begin(), boost::get(boost::vertex_index, g));
  boost::breadth_first_search(
      g, dst, boost::visitor(boost::make_bfs_visitor(boost::record_distances(distance, boost::on_tree_edge()))));
  if (dist[src] < 0) return route;
  route.hops = dist[src];

  // Vertices on some shortest path, by distance to dst, from src down.
  std::vector<std::vector<Vertex>> layer(route.hops + 1);
  std::vector<double> share(boost::num_vertices(g), 0.0);
  std::vector<int64_t> count(boost::num_vertices(g), 0);
  std::vector<bool> seen(boost::num_vertices(g), false);
  layer[route.hops].push_back(src);
  seen[src] = true;
  share[src] = 1.0;
  count[src] = 1;
  constexpr int64_t kMaxPaths = int64_t{1} << 62;
  for (int d = route.hops; d > 0; --d) {
    for (Vertex u : layer[d]) {
      int next = 0;
      for (auto [e, end] = boost::out_edges(u, g); e != end; ++e) next += dist[boost::target(*e, g)] == d - 1;
      for (auto [e, end] = boost::out_edges(u, g); e != end; ++e) {
        Vertex w = boost::target(*e, g);
        if (dist[w] != d - 1) continue;
        const double part = share[u] / next;
        route.links.emplace_back(*e, part);
        share[w] += part;
        count[w] = std::min(kMaxPaths, count[w] + count[u]);
        if (!seen[w]) {
          seen[w] = true;
          layer[d - 1].push_back(w);
        }
      }
    }
  }
  route.paths = count[dst];
  double best = std::numeric_limits<double>::infinity();
  for (const auto& [e, part] : route.links) best = std::min(best, g[e].bandwidth.value / part);
  route.bandwidth = Bandwidth{best};
  return route;
}

}  // namespace stacksim::fabric
