#include "sim/fabric/routing.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

namespace stacksim::fabric {

// Per-vertex state of one search, sized to the graph once and reset after
// each route through the list of vertices it touched (a BFS that stops at
// the source touches a few hundred of a 35,000-vertex fabric's vertices
// for a ring's neighbours).
struct Router::Scratch {
  std::vector<int> dist;         // links to dst, -1: not reached
  std::vector<double> share;     // fraction of the flow through the vertex
  std::vector<int64_t> count;    // shortest paths from src to the vertex
  std::vector<int64_t> latency;  // ns, slowest path from src to the vertex
  std::vector<char> via_gpu;     // reached from a GPU (a NIC then forwards only to the network)
  std::vector<Vertex> touched;   // BFS order from dst
  explicit Scratch(size_t n) : dist(n, -1), share(n, 0.0), count(n, 0), latency(n, 0), via_gpu(n, 0) {}
};

int32_t DirectedLink(const Graph& g, Edge e, Vertex from) {
  const Vertex other = boost::source(e, g) == from ? boost::target(e, g) : boost::source(e, g);
  return 2 * g[e].id + (from < other ? 0 : 1);
}

namespace {

void Finish(const Graph& g, Route* route) {
  double best = std::numeric_limits<double>::infinity();
  for (const auto& [e, part] : route->links) best = std::min(best, g[e].bandwidth.value / part);
  route->bandwidth = Bandwidth{best};
}

// Shortest paths from src to dst with ECMP shares, by a breadth-first
// search from dst that stops once it reaches src: every vertex on a
// shortest path is nearer dst than src, so its distance is known by then.
Route Shortest(const Graph& g, Vertex src, Vertex dst, std::vector<int>& dist, std::vector<double>& share,
               std::vector<int64_t>& count, std::vector<int64_t>& lat, std::vector<char>& via_gpu,
               std::vector<Vertex>& touched) {
  Route route;
  touched.clear();
  dist[dst] = 0;
  touched.push_back(dst);
  // A NIC forwards between its GPUs and the network, never from one GPU
  // to another (two GPUs sharing a NIC talk over their PCIe switch or
  // NVLink): a NIC reached from a GPU leads on only to switches.
  auto kind = [&](Vertex v) { return g[v].kind; };
  // The search stops as soon as it knows every neighbour of src on a
  // shortest path: once one is found at distance L, the rest of layer L-1
  // is scanned for the others only, and nothing beyond. Vertices on a
  // shortest path are nearer dst than src's neighbours, so they are all
  // known by then. (For a source of more than 16 links, a plain search
  // until src is reached.)
  std::vector<Vertex> near;
  for (auto [e, end] = boost::out_edges(src, g); e != end; ++e) near.push_back(boost::target(*e, g));
  const bool early = near.size() <= 16;
  auto is_near = [&](Vertex v) { return early && std::find(near.begin(), near.end(), v) != near.end(); };
  int found = is_near(dst) ? 0 : -1;  // distance of src's nearest neighbours
  // Whether src's neighbour n is reached from u (scanning n's few links,
  // not u's many: a rail switch has thousands).
  auto reaches = [&](Vertex u, Vertex n) {
    if (dist[n] >= 0) return false;
    if (kind(u) == VertexKind::kNic && via_gpu[u] && kind(n) == VertexKind::kGpu) return false;
    if (kind(n) == VertexKind::kNic && kind(u) == VertexKind::kGpu && kind(src) == VertexKind::kGpu) return false;
    for (auto [e, end] = boost::out_edges(n, g); e != end; ++e)
      if (boost::target(*e, g) == u) return true;
    return false;
  };
  for (size_t head = 0; head < touched.size() && dist[src] < 0; ++head) {
    const Vertex u = touched[head];
    if (found >= 0 && dist[u] >= found) break;
    if (early) {
      bool any = false;
      for (Vertex n : near) any = any || reaches(u, n);
      if (any || found >= 0) {
        // This layer holds src's nearest neighbours: record them, nothing else.
        for (Vertex n : near) {
          if (!reaches(u, n)) continue;
          dist[n] = dist[u] + 1;
          via_gpu[n] = kind(u) == VertexKind::kGpu;
          touched.push_back(n);
          found = dist[n];
        }
        continue;
      }
    }
    for (auto [e, end] = boost::out_edges(u, g); e != end; ++e) {
      const Vertex w = boost::target(*e, g);
      if (dist[w] >= 0) continue;
      if (kind(u) == VertexKind::kNic && via_gpu[u] && kind(w) == VertexKind::kGpu) continue;
      // A NIC reached from a GPU does not lead on to a GPU source.
      const bool hit = is_near(w) && !(kind(w) == VertexKind::kNic && kind(u) == VertexKind::kGpu &&
                                       kind(src) == VertexKind::kGpu);
      if (found >= 0 && !hit) continue;
      dist[w] = dist[u] + 1;
      via_gpu[w] = kind(u) == VertexKind::kGpu;
      touched.push_back(w);
      if (hit && found < 0) found = dist[w];
      if (w == src) break;
    }
  }
  if (dist[src] < 0 && found >= 0) {
    dist[src] = found + 1;
    touched.push_back(src);
  }
  if (dist[src] >= 0) {
    route.hops = dist[src];
    // Vertices on some shortest path, by distance to dst, from src down.
    std::vector<std::vector<Vertex>> layer(route.hops + 1);
    layer[route.hops].push_back(src);
    share[src] = 1.0;
    count[src] = 1;
    constexpr int64_t kMaxPaths = int64_t{1} << 62;
    // Next hop w of u on a shortest path; from a GPU, a NIC only if it
    // leads on to something other than a GPU.
    auto next_hop = [&](Vertex u, Vertex w, int d) {
      if (dist[w] != d - 1) return false;
      if (kind(u) != VertexKind::kGpu || kind(w) != VertexKind::kNic || w == dst) return true;
      for (auto [e, end] = boost::out_edges(w, g); e != end; ++e) {
        const Vertex x = boost::target(*e, g);
        if (dist[x] == d - 2 && kind(x) != VertexKind::kGpu) return true;
      }
      return false;
    };
    for (int d = route.hops; d > 0; --d) {
      for (Vertex u : layer[d]) {
        int next = 0;
        for (auto [e, end] = boost::out_edges(u, g); e != end; ++e) next += next_hop(u, boost::target(*e, g), d);
        for (auto [e, end] = boost::out_edges(u, g); e != end; ++e) {
          const Vertex w = boost::target(*e, g);
          if (!next_hop(u, w, d)) continue;
          const double part = share[u] / next;
          route.links.emplace_back(*e, part);
          route.directed.push_back(DirectedLink(g, *e, u));
          if (count[w] == 0) layer[d - 1].push_back(w);
          share[w] += part;
          count[w] = std::min(kMaxPaths, count[w] + count[u]);
          lat[w] = std::max(lat[w], lat[u] + g[*e].latency.ns());
        }
      }
    }
    route.paths = count[dst];
    route.latency = Time::Ns(lat[dst]);
    for (const auto& l : layer) {
      for (Vertex v : l) share[v] = 0, count[v] = 0, lat[v] = 0;
    }
  }
  for (Vertex v : touched) dist[v] = -1, via_gpu[v] = 0;
  Finish(g, &route);
  return route;
}

}  // namespace

Route ShortestRoute(const FabricGraph& f, Vertex src, Vertex dst) {
  const size_t n = boost::num_vertices(f.graph);
  std::vector<int> dist(n, -1);
  std::vector<double> share(n, 0.0);
  std::vector<int64_t> count(n, 0), lat(n, 0);
  std::vector<char> via_gpu(n, 0);
  std::vector<Vertex> touched;
  return Shortest(f.graph, src, dst, dist, share, count, lat, via_gpu, touched);
}

Route DimensionOrderRoute(const FabricGraph& f, Vertex src, Vertex dst) {
  const Graph& g = f.graph;
  const std::vector<int>& dims = f.torus_dims;
  // GPUs are the torus's first vertices, in rank order (generators.h).
  auto rank = [&](Vertex v) { return static_cast<int64_t>(v - f.gpus.front()); };
  std::vector<int64_t> stride(dims.size(), 1);
  for (size_t d = dims.size(); d-- > 1;) stride[d - 1] = stride[d] * dims[d];
  Route route;
  route.hops = 0;
  route.paths = 1;
  int64_t at = rank(src);
  const int64_t to = rank(dst);
  int64_t latency = 0;
  for (size_t d = 0; d < dims.size(); ++d) {
    const int64_t k = dims[d];
    const int64_t from_c = (at / stride[d]) % k, to_c = (to / stride[d]) % k;
    const int64_t ahead = ((to_c - from_c) % k + k) % k;
    if (ahead == 0) continue;
    const int step = ahead <= k - ahead ? 1 : -1;
    for (int64_t moves = step > 0 ? ahead : k - ahead; moves > 0; --moves) {
      const int64_t c = (at / stride[d]) % k;
      const int64_t next = at + (((c + step) % k + k) % k - c) * stride[d];
      const Vertex u = f.gpus[at], w = f.gpus[next];
      auto [e, found] = boost::edge(u, w, g);
      if (!found) throw std::logic_error("torus: no link between GPUs " + std::to_string(at) + " and " + std::to_string(next));
      route.links.emplace_back(e, 1.0);
      route.directed.push_back(DirectedLink(g, e, u));
      latency += g[e].latency.ns();
      ++route.hops;
      at = next;
    }
  }
  route.latency = Time::Ns(latency);
  Finish(g, &route);
  return route;
}

Router::Router(const FabricGraph& fabric) : fabric_(fabric) {}
Router::~Router() = default;

size_t Router::routed_pairs() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cache_.size();
}

const Route& Router::Between(int64_t src, int64_t dst) const {
  const int64_t n = static_cast<int64_t>(fabric_.gpus.size());
  const int64_t key = src * n + dst;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = cache_.find(key);
  if (it != cache_.end()) return it->second;
  const Vertex a = fabric_.gpus[src], b = fabric_.gpus[dst];
  if (!fabric_.torus_dims.empty()) return cache_.emplace(key, DimensionOrderRoute(fabric_, a, b)).first->second;
  if (!scratch_) scratch_ = std::make_unique<Scratch>(boost::num_vertices(fabric_.graph));
  Scratch& s = *scratch_;
  return cache_.emplace(key, Shortest(fabric_.graph, a, b, s.dist, s.share, s.count, s.latency, s.via_gpu, s.touched))
      .first->second;
}

}  // namespace stacksim::fabric
