// The analytic network model: hierarchical alpha-beta costs for NCCL-style
// collectives and point-to-point transfers, with per-message-size efficiency
// inside the NVLink domain taken from the profile's measured bus-bandwidth
// curves.
//
// Inside one node (group.nodes == 1) the cost follows the nccl-tests bus
// bandwidth convention: time = factor * S / busbw, factor 2(p-1)/p for
// all-reduce, (p-1)/p for all-gather, reduce-scatter and all-to-all, 1 for
// broadcast, with the measured curve split into peak bandwidth and per-size
// overhead (bus_bandwidth.h) so that only the bandwidth part scales with
// the topology's link bandwidth. Across nodes it follows NCCL's own tuning model
// (src/graph/tuning.cc): a ring through all p ranks whose inter-node hops run
// on the members' share of the node's NICs, or, for all-reduce, a double
// binary tree when that is faster; all-to-all is a pairwise exchange, or,
// when the op gives scale_out_bytes, a hierarchical exchange (one copy per
// destination node over IB, forwarded over NVLink inside the node).
//
// A fabric given as a graph (a generator or a GraphML/DOT file) is priced
// on the graph instead (graph_pricing.h): a group whose members share one
// NVSwitch still gets the measured curves above; any other group or pair
// costs what its NCCL flows put on the busiest link of their routes.
//
// The model copies what it needs from the topology and profile; it holds no
// references to them. It is immutable after construction and safe to share.
// Impossible inputs (no scale-up bandwidth, a multi-node group on a topology
// without NICs) throw InputError.
//
// Units: sizes in Bytes, bandwidths in bytes/s per direction, times in Time
// (integer ns). Every cost splits into CommCost.latency (fixed; does not
// stretch when links are shared) and CommCost.transfer (the bytes at the full,
// unshared rate of the bottleneck link).
#ifndef STACKSIM_SIM_NET_ANALYTIC_NETWORK_H_
#define STACKSIM_SIM_NET_ANALYTIC_NETWORK_H_

#include <optional>
#include <memory>
#include <string>
#include <vector>

#include "sim/config/profile.h"
#include "sim/config/topology.h"
#include "sim/engine/network_model.h"
#include "sim/net/bus_bandwidth.h"
#include "sim/net/graph_pricing.h"
#include "sim/trace/trace.h"
#include "sim/util/units.h"

namespace stacksim::net {

// Fraction of NVLink SHARP's all-reduce advantage over ring that a group of
// `gpus` in one NVSwitch domain gets, relative to a curve measured with
// `measured_gpus` (1 at the measured count and above, 0 at 4 GPUs or fewer).
// Measured on 8x H100 at 2-4 GB (nccl#1455): ring busbw 365-370 for 2-8 GPUs;
// NVLS 370 at 2-4 GPUs, 420 / 440 / 460 / 480 at 5 / 6 / 7 / 8.
double NvlsShare(int gpus, int measured_gpus);

class AnalyticNetwork : public engine::NetworkModel {
 public:
  // cluster_gpus: how many GPUs a graph fabric that grows with the job
  // (rail-only, multi-plane) is built for (0: the topology's max_nodes);
  // the parametric fat tree does not use it.
  AnalyticNetwork(const config::TopologyConfig& topology, const config::ProfileConfig& profile,
                  int64_t cluster_gpus = 0);

  // REQUIRES: group.size == group.ranks_per_node * group.nodes.
  engine::CommCost Collective(const trace::CommOp& op, const trace::CommGroup& group) const override;
  // REQUIRES: pair.nodes is 1 (same node) or 2.
  // With topology sites, a group whose members sit in different sites also
  // pays the inter-site link (CrossSite in the .cc; docs/network.md "Sites").
  engine::CommCost Transfer(const trace::TransferOp& op, const trace::CommGroup& pair) const override;
  std::string name() const override { return "analytic"; }

  // Per-GPU scale-out bandwidth B: the GPU's share of the node's NICs at the
  // profile's achieved fraction of line rate, before oversubscription.
  Bandwidth scale_out_bandwidth() const { return scale_out_; }
  // Per-step latency of an inter-node hop for a group spanning `nodes`
  // nodes: profile inter_latency plus fabric hop latency up and down.
  Time InterNodeStepLatency(int nodes) const;
  // Factor by which a group spanning `nodes` nodes divides B (>= 1).
  double Oversubscription(int nodes) const;
  // The graph fabric's prices, or null for a parametric fat tree.
  const GraphPricing* graph() const { return graph_.get(); }

 private:
  struct Phase;  // one costed piece, in seconds (defined in the .cc)

  Phase IntraNode(trace::CollectiveKind kind, double bytes, int p) const;
  Phase InterNode(trace::CollectiveKind kind, double bytes, int p, int g, int n) const;
  // Hierarchical all-to-all across n nodes (trace::CommOp::scale_out_bytes).
  Phase HierarchicalAllToAll(double bytes, double scale_out_bytes, int g, int n) const;
  // With topology sites: what crossing the inter-site link adds to a
  // collective (or, kind absent, a transfer) of `group` (zero within a site).
  Phase CrossSite(const trace::CollectiveKind* kind, double bytes, const trace::CommGroup& group) const;
  // The reference measurement that prices `kind` over p GPUs in one node.
  const MeasuredBusBandwidth& IntraCurve(trace::CollectiveKind kind, int p) const;
  // Peak ring busbw inside the node on this topology, bytes/s: the link
  // bandwidth times the ring curve's own peak efficiency.
  double IntraRingPeak() const;
  // The share of a GPU's scale-up bandwidth that p GPUs of one node use: 1
  // behind a switch; on a direct-link mesh (scale_up type nvlink-mesh, e.g.
  // AMD's xGMI) each GPU has one link per peer, and a group of p uses p - 1
  // of its gpus_per_node - 1 links (a pair: one link).
  double MeshShare(int p) const;

  config::ScaleUpKind scale_up_kind_;
  int mesh_links_ = 0;     // links per GPU on a direct-link mesh (gpus_per_node - 1); 0 otherwise
  double link_;            // per-GPU scale-up bandwidth, bytes/s (NVLink, or PCIe for kPcie)
  double reference_link_;  // per-GPU link bandwidth the curves were measured on, bytes/s
  config::BusBandwidthCurve all_reduce_curve_;  // as given (for naming the algorithm)
  config::BusBandwidthCurve ring_curve_;
  MeasuredBusBandwidth ring_;        // all-gather, reduce-scatter, all-to-all, broadcast
  MeasuredBusBandwidth all_reduce_;  // all-reduce without NVLS
  std::vector<MeasuredBusBandwidth> nvls_;  // NVLS all-reduce by GPU count (empty: no NVLS)
  double intra_latency_;   // seconds per intra-node step; also the floor of any intra collective
  double inter_latency_;   // seconds per inter-node step, before fabric hops
  Bandwidth scale_out_;    // B, per GPU
  bool rail_optimized_;
  std::vector<config::FatTreeLevel> levels_;  // leaf first
  std::optional<config::Sites> sites_;         // data centres and the link between them
  int gpus_per_node_ = 1;
  std::shared_ptr<const GraphPricing> graph_;  // shared by copies
};

}  // namespace stacksim::net

#endif  // STACKSIM_SIM_NET_ANALYTIC_NETWORK_H_
