// The analytic model's prices on a fabric given as a graph (graph_fabric.h):
// a collective costs what its flows (collective_flows.h, as NCCL builds its
// rings, trees and exchanges) put on the most loaded link of the routes
// they take.
//
// Transfer: the flows of the collective and of its sibling copies (the
// symmetric groups the trace stands one for, CommGroup::siblings: in a full
// job they run at once, the loaded-fabric view the fat-tree model takes
// with its tapers) are routed, each link's load summed (bytes x ECMP
// share), and the time is max over links of load / achieved bandwidth. For
// one flow alone that is bytes / min over links of bandwidth / share.
// A ring's bus bandwidth is therefore the bottleneck of every channel's
// edges at once, NVLink forwarding included.
//
// Latency: NCCL's step counts (src/graph/tuning.cc) with each step priced
// over its own route (GraphFabric::StepLatency): a ring through the members
// in rank order takes sum(steps) - max(step) per pass (one pass for
// all-gather, reduce-scatter and broadcast, two for all-reduce); the double
// binary tree 2((g-1) intra + floor(log2 n) x slowest step); a pairwise
// all-to-all one step per peer; the hierarchical one a step per domain peer
// and per remote domain.
//
// Each (group placement, flow pattern) is routed and loaded once and kept:
// a trace prices the same group thousands of times. Thread-safe.
#ifndef STACKSIM_SIM_NET_GRAPH_PRICING_H_
#define STACKSIM_SIM_NET_GRAPH_PRICING_H_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "sim/engine/network_model.h"
#include "sim/net/graph_fabric.h"
#include "sim/trace/trace.h"
#include "sim/util/units.h"

namespace stacksim::net {

class GraphPricing {
 public:
  // intra_step / inter_step: the profile's per-step latencies.
  GraphPricing(std::shared_ptr<const GraphFabric> fabric, Time intra_step, Time inter_step);

  const GraphFabric& fabric() const { return *fabric_; }
  const std::shared_ptr<const GraphFabric>& shared_fabric() const { return fabric_; }
  // REQUIRES: !fabric().Shape(group).one_switch (the measured curves price those).
  engine::CommCost Collective(const trace::CommOp& op, const trace::CommGroup& group) const;
  // The pair's first member sends to its second. REQUIRES: they do not share an NVSwitch.
  engine::CommCost Transfer(const trace::TransferOp& op, const trace::CommGroup& pair) const;

  // Seconds per byte of the busiest link for a ring over the group (all
  // copies loaded): 1 / the ring's bus bandwidth. Tests and reports.
  double RingSecondsPerByte(const trace::CommGroup& group) const;

 private:
  enum class Pattern { kRing, kPairwise, kHierarchical, kSend };
  struct Load {
    // max over links of (a x A + b x B) / bandwidth, kept as the Pareto
    // front of (a / bw, b / bw); A, B: the pattern's two byte counts (for
    // every pattern but the hierarchical all-to-all, B is unused).
    std::vector<std::pair<double, double>> terms;
    double ring_steps = 0;    // seconds: sum - max over the rank-order ring's steps
    double slowest_step = 0;  // seconds
    double peer_steps = 0;    // seconds: one step to each other member (pairwise)
    double domain_steps = 0;  // seconds: to each domain peer and each remote domain (hierarchical)
    uint8_t links = engine::kNoLinks;
    GroupShape shape;
    double Max(double a, double b) const;
  };
  const Load& LoadOf(const trace::CommGroup& group, Pattern pattern) const;
  Load Compute(const trace::CommGroup& group, Pattern pattern) const;

  std::shared_ptr<const GraphFabric> fabric_;
  Time intra_step_, inter_step_;
  mutable std::mutex mu_;
  mutable std::map<std::tuple<int, int64_t, int64_t, int, int, int64_t, int, int64_t>, Load> cache_;
};

}  // namespace stacksim::net

#endif  // STACKSIM_SIM_NET_GRAPH_PRICING_H_
