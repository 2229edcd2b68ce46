#include "sim/net/graph_pricing.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "sim/net/collective_flows.h"
#include "sim/util/error.h"

namespace stacksim::net {

using trace::CollectiveKind;

GraphPricing::GraphPricing(std::shared_ptr<const GraphFabric> fabric, Time intra_step, Time inter_step)
    : fabric_(std::move(fabric)), intra_step_(intra_step), inter_step_(inter_step) {}

double GraphPricing::Load::Max(double a, double b) const {
  double best = 0;
  for (const auto& [ta, tb] : terms) best = std::max(best, ta * a + tb * b);
  return best;
}

const GraphPricing::Load& GraphPricing::LoadOf(const trace::CommGroup& g, Pattern pattern) const {
  const auto key = std::make_tuple(static_cast<int>(pattern), g.first_rank, g.stride, g.size, g.siblings,
                                   g.sibling_stride, g.sibling_run, g.sibling_run_stride);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = cache_.find(key);
  if (it != cache_.end()) return it->second;
  return cache_.emplace(key, Compute(g, pattern)).first->second;
}

GraphPricing::Load GraphPricing::Compute(const trace::CommGroup& g, Pattern pattern) const {
  const GraphFabric& f = *fabric_;
  const int p = pattern == Pattern::kSend ? 2 : std::max(1, g.size);
  const int64_t last = static_cast<int64_t>(p - 1) * g.stride;
  auto inside = [&](int64_t off) {
    const int64_t a = g.first_rank + off, b = a + last;
    return std::min(a, b) >= 0 && std::max(a, b) < f.gpus();
  };
  if (!inside(0)) {
    throw InputError("", "fabric",
                     "group '" + g.name + "' places ranks " + std::to_string(g.first_rank) + " to " +
                         std::to_string(g.first_rank + last) + " beyond the fabric graph's " +
                         std::to_string(f.gpus()) + " GPUs (" + f.graph().name + ")");
  }
  Load out;
  out.shape = pattern == Pattern::kSend ? GroupShape{2, 1, false} : f.Shape(g);
  const int n = out.shape.domains, gl = out.shape.per_domain;

  // Loads of every copy's flows, twice for the hierarchical all-to-all's two byte counts.
  std::unordered_map<int32_t, std::pair<double, double>> load;
  std::vector<GpuFlow> flows;
  auto add = [&](bool second) {
    for (const GpuFlow& fl : flows) {
      if (fl.src == fl.dst || !(fl.bytes > 0)) continue;
      const fabric::Route& r = f.Route(fl.src, fl.dst);
      for (size_t i = 0; i < r.links.size(); ++i) {
        auto& l = load[r.directed[i]];
        (second ? l.second : l.first) += fl.bytes * r.links[i].second;
      }
    }
    flows.clear();
  };
  const int copies = std::max(1, g.siblings);
  for (int j = 0; j < copies; ++j) {
    const int64_t off = g.SiblingOffset(j);
    if (j > 0 && (g.sibling_stride == 0 || !inside(off))) continue;
    auto at = [&](int k, int c) { return g.first_rank + off + (static_cast<int64_t>(k) * gl + c) * g.stride; };
    switch (pattern) {
      case Pattern::kRing: RingFlows(at, n, gl, 1.0 / gl, &flows); add(false); break;
      case Pattern::kPairwise: PairwiseFlows(at, n, gl, 1.0, &flows); add(false); break;
      case Pattern::kHierarchical:
        HierarchicalFlows(at, n, gl, 0.0, 1.0, &flows);
        add(false);
        HierarchicalFlows(at, n, gl, 1.0, 0.0, &flows);
        add(true);
        break;
      case Pattern::kSend: flows.push_back({at(0, 0), at(1, 0), 1.0}); add(false); break;
    }
  }
  std::vector<std::pair<double, double>> terms;
  for (const auto& [link, ab] : load) {
    const double bw = f.bandwidth(link);
    terms.emplace_back(ab.first / bw, ab.second / bw);
    out.links |= f.network(link) ? engine::kScaleOutLink : engine::kScaleUpLink;
  }
  // The Pareto front, so that pricing an op scans a handful of terms.
  std::sort(terms.begin(), terms.end(), [](const auto& x, const auto& y) {
    return x.first != y.first ? x.first > y.first : x.second > y.second;
  });
  double best_b = -1;
  for (const auto& t : terms) {
    if (t.second > best_b) {
      out.terms.push_back(t);
      best_b = t.second;
    }
  }

  // Latencies over the representative copy's routes.
  auto member = [&](int i) { return g.first_rank + static_cast<int64_t>(i) * g.stride; };
  auto step = [&](int a, int b) {
    return f.StepLatency(f.Route(member(a), member(b)), intra_step_, inter_step_).seconds();
  };
  if (pattern == Pattern::kRing || pattern == Pattern::kSend) {
    double sum = 0;
    for (int i = 0; i < p; ++i) {
      const double s = step(i, (i + 1) % p);
      sum += s;
      out.slowest_step = std::max(out.slowest_step, s);
      if (pattern == Pattern::kSend) break;
    }
    out.ring_steps = pattern == Pattern::kSend ? sum : sum - out.slowest_step;
  } else {
    for (int i = 1; i < p; ++i) out.peer_steps += step(0, i);
    for (int c = 1; c < gl; ++c) out.domain_steps += step(0, c);
    for (int k = 1; k < n; ++k) out.domain_steps += step(0, k * gl);
  }
  return out;
}

engine::CommCost GraphPricing::Collective(const trace::CommOp& op, const trace::CommGroup& g) const {
  const double s = op.bytes.value;
  const double pd = g.size;
  auto cost = [](double latency, double transfer, uint8_t links, const char* algorithm) {
    return engine::CommCost{Time::FromSeconds(latency), Time::FromSeconds(transfer), links, algorithm};
  };
  if (op.kind == CollectiveKind::kAllToAll) {
    if (op.scale_out_bytes.value >= 0) {
      const Load& l = LoadOf(g, Pattern::kHierarchical);
      return cost(l.domain_steps, l.Max(op.scale_out_bytes.value, s), l.links, "hierarchical");
    }
    const Load& l = LoadOf(g, Pattern::kPairwise);
    return cost(l.peer_steps, l.Max(s, 0), l.links, "pairwise");
  }
  const Load& l = LoadOf(g, Pattern::kRing);
  const double per_byte = l.Max(1, 0);  // 1 / bus bandwidth
  switch (op.kind) {
    case CollectiveKind::kAllReduce: {
      const double ring_t = 2.0 * (pd - 1) / pd * s * per_byte, ring_l = 2.0 * l.ring_steps;
      const double tree_t = 2.0 * s * per_byte / kTreeBandwidthShare;
      const double tree_l = 2.0 * ((l.shape.per_domain - 1) * intra_step_.seconds() +
                                   std::floor(std::log2(static_cast<double>(l.shape.domains))) * l.slowest_step);
      if (tree_t + tree_l < ring_t + ring_l) return cost(tree_l, tree_t, l.links, "tree");
      return cost(ring_l, ring_t, l.links, "ring");
    }
    case CollectiveKind::kAllGather:
    case CollectiveKind::kReduceScatter: return cost(l.ring_steps, (pd - 1) / pd * s * per_byte, l.links, "ring");
    default: return cost(l.ring_steps, s * per_byte, l.links, "ring");
  }
}

engine::CommCost GraphPricing::Transfer(const trace::TransferOp& op, const trace::CommGroup& pair) const {
  const Load& l = LoadOf(pair, Pattern::kSend);
  return {Time::FromSeconds(l.ring_steps), Time::FromSeconds(op.bytes.value * l.Max(1, 0)), l.links, "p2p"};
}

double GraphPricing::RingSecondsPerByte(const trace::CommGroup& group) const {
  return LoadOf(group, Pattern::kRing).Max(1, 0);
}

}  // namespace stacksim::net
