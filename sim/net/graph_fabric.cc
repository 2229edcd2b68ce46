#include "sim/net/graph_fabric.h"

#include <algorithm>
#include <utility>

namespace stacksim::net {

using fabric::LinkKind;
using fabric::VertexKind;

GraphFabric::GraphFabric(fabric::FabricGraph graph, const config::TopologyConfig& topology,
                         double scale_up_efficiency, double nic_efficiency)
    : graph_(std::make_unique<fabric::FabricGraph>(std::move(graph))),
      router_(std::make_unique<fabric::Router>(*graph_)),
      nic_hop_(topology.nics.latency),
      scale_up_hop_(topology.scale_up.latency) {
  const fabric::Graph& g = graph_->graph;
  const size_t edges = boost::num_edges(g);
  bandwidth_.assign(2 * edges, 0);
  network_.assign(2 * edges, 0);
  edges_.resize(edges);
  for (auto [e, end] = boost::edges(g); e != end; ++e) {
    const fabric::FabricLink& l = g[*e];
    edges_[l.id] = *e;
    const bool nic = g[boost::source(*e, g)].kind == VertexKind::kNic || g[boost::target(*e, g)].kind == VertexKind::kNic;
    const bool out = fabric::IsScaleOut(l.kind) || nic;
    const double bw = l.bandwidth.value * (out ? nic_efficiency : scale_up_efficiency);
    for (int dir = 0; dir < 2; ++dir) {
      bandwidth_[2 * l.id + dir] = bw;
      network_[2 * l.id + dir] = out;
    }
  }
  domain_.resize(graph_->gpus.size());
  for (size_t i = 0; i < graph_->gpus.size(); ++i) {
    domain_[i] = -1 - static_cast<int64_t>(i);
    for (auto [e, end] = boost::out_edges(graph_->gpus[i], g); e != end; ++e) {
      const fabric::Vertex w = boost::target(*e, g);
      if (g[w].kind == VertexKind::kNvSwitch) domain_[i] = static_cast<int64_t>(w);
    }
  }
}

std::string GraphFabric::LinkName(int32_t link) const {
  const fabric::Graph& g = graph_->graph;
  const fabric::Edge e = edges_[link / 2];
  fabric::Vertex a = std::min(boost::source(e, g), boost::target(e, g));
  fabric::Vertex b = std::max(boost::source(e, g), boost::target(e, g));
  if (link % 2) std::swap(a, b);
  return g[a].name + " -> " + g[b].name;
}

bool GraphFabric::CrossesNetwork(const fabric::Route& route) const {
  for (int32_t l : route.directed)
    if (network_[l]) return true;
  return false;
}

Time GraphFabric::StepLatency(const fabric::Route& route, Time intra_step, Time inter_step) const {
  const bool out = CrossesNetwork(route);
  const Time extra = route.latency - (out ? nic_hop_ : scale_up_hop_);
  return (out ? inter_step : intra_step) + std::max(Time::Zero(), extra);
}

GroupShape GraphFabric::Shape(const trace::CommGroup& group, int64_t offset) const {
  GroupShape s;
  const int p = std::max(1, group.size);
  auto domain = [&](int i) { return Domain(group.first_rank + offset + static_cast<int64_t>(i) * group.stride); };
  int runs = 1, run = 1, first_run = 0;
  bool even = true;
  for (int i = 1; i <= p; ++i) {
    if (i < p && domain(i) == domain(i - 1)) {
      ++run;
      continue;
    }
    if (first_run == 0) first_run = run;
    even = even && run == first_run;
    if (i < p) ++runs;
    run = 1;
  }
  if (even) {
    s.domains = runs;
    s.per_domain = first_run;
  } else {
    s.domains = p;
    s.per_domain = 1;
  }
  s.one_switch = p > 1 && runs == 1 && domain(0) >= 0;
  return s;
}

}  // namespace stacksim::net
