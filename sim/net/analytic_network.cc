#include "sim/net/analytic_network.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "sim/fabric/graph_spec.h"
#include "sim/net/collective_flows.h"
#include "sim/util/error.h"

namespace stacksim::net {

using config::ScaleUpKind;
using engine::CommCost;
using trace::CollectiveKind;

// Below this ratio of peaks an all-reduce curve is treated as a ring
// all-reduce (no NVLink SHARP): measurement noise between two ring curves is
// a few percent, while NVLS is ~30% above ring on H100 (480 vs 370 GB/s).
constexpr double kNvlsPeakRatio = 1.05;

// NCCL's protocols across nodes (InterNode; NCCL 2.x src/graph/tuning.cc):
// LL128 rings keep 0.92 of the bandwidth (120 data bytes of 128), LL128
// trees 0.915 of theirs; Simple's ring steps as long as hwLat says.
constexpr double kLl128RingShare = 0.92;
constexpr double kLl128TreeShare = 0.915;
constexpr double kSimpleIntraStepRatio = 3.4 / 1.9;
constexpr double kSimpleInterStepRatio = 9.6 / 4.0;

struct AnalyticNetwork::Phase {
  double latency = 0;   // seconds
  double transfer = 0;  // seconds
  uint8_t links = engine::kNoLinks;
  std::string algorithm;
  double bandwidth_share = 1.0;  // CommCost::bandwidth_share
  double total() const { return latency + transfer; }
};

namespace {

CommCost ToCost(double latency_s, double transfer_s, uint8_t links, std::string algorithm) {
  return {Time::FromSeconds(latency_s), Time::FromSeconds(transfer_s), links, std::move(algorithm)};
}

// nccl-tests bus-bandwidth factor: busbw = algbw * factor, so that busbw is
// comparable with link bandwidth (nccl-tests doc/PERFORMANCE.md).
double BusFactor(CollectiveKind kind, int p) {
  double pd = p;
  switch (kind) {
    case CollectiveKind::kAllReduce: return 2.0 * (pd - 1) / pd;
    case CollectiveKind::kAllGather:
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kAllToAll: return (pd - 1) / pd;
    case CollectiveKind::kBroadcast: return 1.0;
  }
  return 1.0;
}

}  // namespace

double NvlsShare(int gpus, int measured_gpus) {
  // NVLS busbw minus ring busbw (GB/s) on 8x H100 by GPU count, nccl#1455.
  auto gain = [](int n) -> double {
    if (n <= 4) return 0;
    if (n >= 8) return 110;  // 480 - 370
    return 20.0 * n - 50;    // 50, 70, 90 at 5, 6, 7 GPUs
  };
  if (measured_gpus <= 0) measured_gpus = 8;
  if (gpus >= measured_gpus) return 1.0;
  double ref = gain(measured_gpus);
  if (ref <= 0) return 1.0;  // curve measured where NVLS gains nothing: use it as is
  return std::clamp(gain(gpus) / ref, 0.0, 1.0);
}

AnalyticNetwork::AnalyticNetwork(const config::TopologyConfig& topology,
                                 const config::ProfileConfig& profile, int64_t cluster_gpus)
    : scale_up_kind_(topology.scale_up.kind),
      all_reduce_curve_(profile.intra_all_reduce),
      ring_curve_(profile.intra_ring),
      intra_latency_(profile.intra_latency.value.seconds()),
      inter_latency_(profile.inter_latency.value.seconds()),
      rail_optimized_(topology.fabric.rail_optimized),
      levels_(topology.fabric.levels),
      sites_(topology.sites),
      gpus_per_node_(std::max(1, topology.gpus_per_node)) {
  if (sites_ && !topology.fabric.graph.is_null()) {
    throw InputError(topology.fabric.file, "sites",
                     "topology sites (an inter-site link) are priced on parametric fat trees only, not on a fabric "
                     "given as a graph or generator");
  }
  // PCIe systems have no NVLink: peers talk over PCIe through the host
  // bridge, and NCCL uses a ring.
  link_ = topology.scale_up.per_gpu_bandwidth.value;
  if (scale_up_kind_ == ScaleUpKind::kPcie && topology.pcie_bandwidth.value > 0) {
    link_ = topology.pcie_bandwidth.value;
  }
  if (!(link_ > 0)) {
    throw InputError("", "node.scale_up.bandwidth_per_gpu",
                     "topology '" + topology.name + "' needs a positive per-GPU scale-up bandwidth");
  }
  if (topology.gpus_per_node <= 0) {
    throw InputError("", "node.gpus_per_node",
                     "topology '" + topology.name + "' needs a positive GPU count per node");
  }
  if (scale_up_kind_ == ScaleUpKind::kNvLinkMesh) mesh_links_ = topology.gpus_per_node - 1;
  reference_link_ = profile.intra_reference_link.value.value;
  if (!(reference_link_ > 0)) reference_link_ = link_;  // curves taken as measured on this system
  // Empty curves stand in for each other.
  if (all_reduce_curve_.points.empty()) all_reduce_curve_ = ring_curve_;
  if (ring_curve_.points.empty()) ring_curve_ = all_reduce_curve_;
  ring_ = MeasuredBusBandwidth(ring_curve_.points);
  // An all-reduce curve well above the ring one was measured with NVLink
  // SHARP. NVLS lives in the NVSwitch, so elsewhere (NVLink mesh, PCIe) NCCL
  // falls back to the ring; on NVSwitch its gain over ring depends on the
  // GPU count (NvlsShare). A curve without NVLS is a ring all-reduce: as is.
  bool nvls_curve = PeakBusBandwidth(all_reduce_curve_).value >
                    kNvlsPeakRatio * PeakBusBandwidth(ring_curve_).value;
  all_reduce_ = nvls_curve ? ring_ : MeasuredBusBandwidth(all_reduce_curve_.points);
  if (scale_up_kind_ == ScaleUpKind::kPcie) all_reduce_ = ring_;
  if (nvls_curve && scale_up_kind_ == ScaleUpKind::kNvSwitch) {
    int measured = all_reduce_curve_.gpus > 0 ? all_reduce_curve_.gpus : 8;
    for (int gpus = 0; gpus <= measured; ++gpus) {
      nvls_.emplace_back(BlendCurves(ring_curve_, all_reduce_curve_, NvlsShare(gpus, measured)));
    }
  }

  double nic_efficiency = profile.nic_efficiency.value;
  if (topology.nics.per_node > 0 && !(nic_efficiency > 0 && nic_efficiency <= 1)) {
    throw InputError("", "collectives.inter_node.nic_efficiency",
                     "profile '" + profile.name + "' needs a NIC efficiency in (0, 1]");
  }
  // Each GPU drives its own share of the node's NICs (rail-optimized nodes
  // have one NIC per GPU).
  scale_out_ = Bandwidth{topology.nics.per_node * topology.nics.bandwidth.value /
                         topology.gpus_per_node * nic_efficiency};

  if (!topology.fabric.graph.is_null()) {
    const int64_t nodes = cluster_gpus > 0 ? (cluster_gpus + topology.gpus_per_node - 1) / topology.gpus_per_node : 0;
    auto fabric = std::make_shared<const GraphFabric>(fabric::BuildFabric(topology, nodes), topology,
                                                      IntraRingPeak() / link_, nic_efficiency > 0 ? nic_efficiency : 1.0);
    graph_ = std::make_shared<const GraphPricing>(std::move(fabric), Time::FromSeconds(intra_latency_),
                                                  Time::FromSeconds(inter_latency_));
  }
}

double AnalyticNetwork::Oversubscription(int nodes) const {
  // The group's nodes are assumed packed under as few switches as possible.
  // Traffic that must climb above level i shares that level's uplinks, so
  // each level the group outgrows divides the bandwidth by its taper; tapers
  // compound (a 2:1 leaf under a 2:1 spine leaves 1/4 at the core). This is
  // the loaded-fabric view: in a full job every leaf's uplinks carry the
  // rings of many groups at once.
  double factor = 1.0;
  for (const auto& level : levels_) {
    if (nodes > level.nodes_below) factor *= std::max(1.0, level.oversubscription);
  }
  return factor;
}

Time AnalyticNetwork::InterNodeStepLatency(int nodes) const {
  // Highest level the traffic climbs to: the first whose switch group holds
  // all the group's nodes (on a rail-optimized fabric same-rail traffic of
  // up to nodes_below nodes stays one leaf away, DGX SuperPOD RA). Without
  // rail optimization every inter-node step is charged as crossing the
  // spine: simple and conservative, as which nodes share a top-of-rack
  // switch is not modelled.
  double hops = 0;
  if (!levels_.empty() && nodes > 1) {
    int top = static_cast<int>(levels_.size()) - 1;
    for (int i = 0; i < static_cast<int>(levels_.size()); ++i) {
      if (nodes <= levels_[i].nodes_below) { top = i; break; }
    }
    if (!rail_optimized_) top = std::max(top, std::min(1, static_cast<int>(levels_.size()) - 1));
    // Each level up to the top is traversed twice: once up, once down.
    for (int i = 0; i <= top; ++i) hops += 2 * levels_[i].hop_latency.seconds();
  }
  return Time::FromSeconds(inter_latency_ + hops);
}

double AnalyticNetwork::IntraRingPeak() const {
  double peak = ring_.peak().value;
  if (!(peak > 0)) return link_;  // no curve: the link at full rate
  return peak * (link_ / reference_link_);
}

double AnalyticNetwork::MeshShare(int p) const {
  if (mesh_links_ <= 0) return 1.0;
  return std::clamp(static_cast<double>(p - 1) / mesh_links_, 0.0, 1.0);
}

const MeasuredBusBandwidth& AnalyticNetwork::IntraCurve(CollectiveKind kind, int p) const {
  if (kind != CollectiveKind::kAllReduce) return ring_;
  if (nvls_.empty()) return all_reduce_;
  return nvls_[std::min<size_t>(p, nvls_.size() - 1)];
}

// Inside one node: the measured curve, split into a bandwidth part and a
// fixed part. The curves are nccl-tests measurements, so at small sizes their
// busbw already includes latency; adding a separate alpha would count it
// twice. So (MeasuredBusBandwidth):
//   factor * S / busbw_ref(S) = factor * S / peak_ref + factor * overhead(S)
//   transfer = factor * S / (peak_ref * link / reference_link)
//   latency  = max(factor * overhead(S), intra_latency)
// The transfer is the bytes at the curve's best efficiency on this system's
// links, so the effective busbw never exceeds link * the curve's own peak
// efficiency. The latency is what the reference system lost at this size to
// per-step and protocol overhead, which does not scale with link bandwidth
// (a 1 kB all-reduce is not twice as fast on a link twice as wide). On the
// reference system the sum reproduces the measured points; intra_latency is
// only a floor, for curves (such as flat ones) that carry no latency.
// The curves are measured at 8 GPUs; ring busbw is flat in the GPU count
// (nccl#1455), so the same curve prices 2-8 GPUs through the factor.
AnalyticNetwork::Phase AnalyticNetwork::IntraNode(CollectiveKind kind, double bytes, int p) const {
  Phase out;
  out.links = engine::kScaleUpLink;
  double factor = BusFactor(kind, p);
  out.algorithm = kind == CollectiveKind::kAllToAll ? "pairwise" : "ring";
  if (kind == CollectiveKind::kAllReduce && !nvls_.empty() &&
      NvlsShare(p, static_cast<int>(nvls_.size()) - 1) > 0 &&
      InterpolateBusBandwidth(all_reduce_curve_, Bytes{bytes}) >
          InterpolateBusBandwidth(ring_curve_, Bytes{bytes})) {
    out.algorithm = "nvls";
  }
  const MeasuredBusBandwidth& curve = IntraCurve(kind, p);
  if (curve.empty()) {  // no measurements at all: the raw link, latency only as the floor
    out.transfer = factor * bytes / (link_ * MeshShare(p));
    out.latency = intra_latency_;
    return out;
  }
  out.transfer = factor * bytes / (curve.peak().value * (link_ * MeshShare(p) / reference_link_));
  out.latency = std::max(factor * curve.OverheadPerFactor(Bytes{bytes}), intra_latency_);
  return out;
}

// Across nodes, NCCL's ring runs through all p ranks, g per node; each of the
// g channels leaves the node on a different GPU's NIC, so every NIC carries
// one ring's inter-node hop. A ring all-reduce therefore moves
// 2(p-1)/p * S / g bytes through each NIC, i.e. busbw = g * B (NCCL
// tuning.cc: busBw = nChannels * speedInter). The NVLink hops of the same
// rings run concurrently (the ring is pipelined chunk by chunk), so they only
// matter if they are the slower link: each GPU forwards (g-1) of the g rings
// over NVLink, bounding busbw by intra_peak * g / (g-1).
// Measured: 4 nodes x 8 H100 with 8x NDR: all-reduce busbw 330.9, all-gather
// 323.5 (aigatech/vpbenchmarking); ~380 without SHARP (nccl#1649); g * B =
// 8 * 50 * 0.94 = 376. A sequential reduce-scatter / inter all-reduce /
// all-gather would predict ~220, and a pipelined 2-D hierarchy with
// 2(n-1)/n inter traffic ~490, so the flat ring is the better model.
// Latency, NCCL tuning.cc: ring (nsteps - nInterSteps) * intraLat +
// nInterSteps * interLat with nsteps = 2(p-1), nInterSteps = 2(n-1) for
// all-reduce and p-1, n-1 for all-gather / reduce-scatter; tree
// 2 * ((p/n - 1) * intraLat + log2i(n) * interLat).
// Protocol: NCCL prices each call under each protocol and runs the fastest
// (tuning.cc ncclTopoTuneModel, ncclTopoGetAlgoTime). The profile's
// per-step latencies are measured with small messages and sit at
// tuning.cc's LL128 values (the profiles cite them), so they are LL128's:
// its rings move kLl128RingShare of the bandwidth, its trees
// kLl128TreeShare of theirs. Simple moves the full bandwidth with longer
// steps, tuning.cc's ring hwLat Simple over LL128: 3.4 / 1.9 us on NVLink,
// 9.6 / 4.0 us on the network. A ring runs the faster of the two; a tree
// runs LL128 (its Simple steps, 28 and 50 us a hop in tuning.cc, never win
// against the ring). Large messages on long rings (ZeRO-3's gathers over
// thousands of ranks) thus pay Simple's steps.
AnalyticNetwork::Phase AnalyticNetwork::InterNode(CollectiveKind kind, double bytes, int p, int g,
                                                  int n) const {
  Phase out;
  out.links = engine::kScaleOutLink | (g > 1 ? engine::kScaleUpLink : 0);
  double b = scale_out_.value / Oversubscription(n);
  double alpha = InterNodeStepLatency(n).seconds();
  double a = intra_latency_;
  double up = IntraRingPeak();
  double ring_bw = g * b;
  if (g > 1) ring_bw = std::min(ring_bw, up * g / (g - 1));
  double pd = p;

  // A ring of `steps` steps, `inter_steps` of them between nodes, moving
  // `factor` x bytes through each rank: the faster of LL128 and Simple.
  auto ring_phase = [&](double factor, int steps, int inter_steps) {
    Phase ll128 = out, simple = out;
    ll128.algorithm = simple.algorithm = "ring";
    ll128.transfer = factor * bytes / (kLl128RingShare * ring_bw);
    ll128.bandwidth_share = kLl128RingShare;
    ll128.latency = (steps - inter_steps) * a + inter_steps * alpha;
    simple.transfer = factor * bytes / ring_bw;
    simple.latency = (steps - inter_steps) * a * kSimpleIntraStepRatio + inter_steps * alpha * kSimpleInterStepRatio;
    return simple.total() < ll128.total() ? simple : ll128;
  };

  switch (kind) {
    case CollectiveKind::kAllReduce: {
      Phase ring = ring_phase(2.0 * (pd - 1) / pd, 2 * (p - 1), 2 * (n - 1)), tree = out;
      // Double binary tree (LL128): intra-node chain, then log2(n) levels up
      // and down.
      tree.algorithm = "tree";
      tree.transfer = 2.0 * bytes / (kTreeBandwidthShare * kLl128TreeShare * ring_bw);
      tree.bandwidth_share = kLl128TreeShare;
      tree.latency = 2.0 * ((g - 1) * a + std::floor(std::log2(static_cast<double>(n))) * alpha);
      return tree.total() < ring.total() ? tree : ring;  // as NCCL: the faster at this size
    }
    case CollectiveKind::kAllGather:
    case CollectiveKind::kReduceScatter:
      return ring_phase((pd - 1) / pd, p - 1, n - 1);
    case CollectiveKind::kBroadcast:
      // Pipelined ring: every rank receives S and forwards it; the chain
      // fills in p-1 hops, n-1 of them between nodes.
      return ring_phase(1.0, p - 1, n - 1);
    case CollectiveKind::kAllToAll: {
      // Pairwise exchange (Thakur, Rabenseifner & Gropp 2005): S/p to each
      // peer; (n-1)/n of the buffer leaves the node, through this GPU's own
      // NIC (NCCL alltoall cannot aggregate NICs, nccl-tests#267), while the
      // (g-1)/p that stays goes over NVLink at the same time.
      out.algorithm = "pairwise";
      double inter = (n - 1.0) / n * bytes / b;
      double intra = (g - 1.0) / pd * bytes / up;
      out.transfer = std::max(inter, intra);
      out.latency = (g - 1) * a + (p - g) * alpha;  // one step per peer
      return out;
    }
  }
  return out;
}

// Hierarchical all-to-all (DeepSeek-V3 §3.2.2; DeepEP's normal kernels):
// each token goes once to every destination node, over IB to the GPU of the
// sender's own local index there (the same rail), which forwards it over
// NVLink to the GPUs holding its experts. The sender's NIC carries
// scale_out_bytes; each GPU's NVLink port the deliveries that do not land on
// their destination, (g-1)/g of the deliveries by symmetry. The two stages
// are pipelined chunk by chunk, so the slower link sets the time. Latency:
// one inter-node step per remote node (a rank talks to one GPU per node) and
// one NVLink step per local peer.
AnalyticNetwork::Phase AnalyticNetwork::HierarchicalAllToAll(double bytes, double scale_out_bytes, int g,
                                                             int n) const {
  Phase out;
  out.links = engine::kScaleOutLink | (g > 1 ? engine::kScaleUpLink : 0);
  out.algorithm = "hierarchical";
  double b = scale_out_.value / Oversubscription(n);
  double inter = scale_out_bytes / b;
  double intra = (g - 1.0) / g * bytes / IntraRingPeak();
  out.transfer = std::max(inter, intra);
  out.latency = (g - 1) * intra_latency_ + (n - 1) * InterNodeStepLatency(n).seconds();
  return out;
}

CommCost AnalyticNetwork::Collective(const trace::CommOp& op, const trace::CommGroup& group) const {
  int p = group.size;
  if (p <= 1 || op.bytes.value <= 0) return {Time::Zero(), Time::Zero(), engine::kNoLinks, "none"};
  int n = std::max(1, group.nodes);
  int g = std::max(1, group.ranks_per_node);
  if (graph_) {
    if (!graph_->fabric().Shape(group).one_switch) return graph_->Collective(op, group);
    n = 1;  // one NVSwitch: the measured curves
  }
  Phase phase;
  if (n == 1) {
    phase = IntraNode(op.kind, op.bytes.value, p);
  } else {
    if (!(scale_out_.value > 0)) {
      throw InputError("", "node.nics",
                       "group '" + group.name + "' spans " + std::to_string(n) +
                           " nodes but the topology has no scale-out NICs");
    }
    phase = op.kind == CollectiveKind::kAllToAll && op.scale_out_bytes.value >= 0
                ? HierarchicalAllToAll(op.bytes.value, op.scale_out_bytes.value, g, n)
                : InterNode(op.kind, op.bytes.value, p, g, n);
  }
  const Phase cross = CrossSite(&op.kind, op.bytes.value, group);
  CommCost cost = ToCost(phase.latency + cross.latency, phase.transfer + cross.transfer, phase.links | cross.links,
                         std::move(phase.algorithm));
  cost.bandwidth_share = phase.bandwidth_share;
  return cost;
}

CommCost AnalyticNetwork::Transfer(const trace::TransferOp& op, const trace::CommGroup& pair) const {
  if (op.bytes.value <= 0) return {Time::Zero(), Time::Zero(), engine::kNoLinks, "none"};
  const bool one_switch = graph_ && graph_->fabric().Shape(pair).one_switch;
  if (graph_ && !one_switch) return graph_->Transfer(op, pair);
  if (pair.nodes <= 1 || one_switch) {
    // Same node: one NVLink (or PCIe) peer copy at the ring's best efficiency
    // (on a direct-link mesh, over the pair's one link).
    return ToCost(intra_latency_, op.bytes.value / (IntraRingPeak() * MeshShare(2)), engine::kScaleUpLink, "p2p");
  }
  if (!(scale_out_.value > 0)) {
    throw InputError("", "node.nics",
                     "transfer '" + pair.name + "' crosses nodes but the topology has no scale-out NICs");
  }
  int n = std::max(2, pair.nodes);
  double b = scale_out_.value / Oversubscription(n);
  const Phase cross = CrossSite(nullptr, op.bytes.value, pair);
  return ToCost(InterNodeStepLatency(n).seconds() + cross.latency, op.bytes.value / b + cross.transfer,
                engine::kScaleOutLink, "p2p");
}

// Sites (data centres) joined by one wide-area link. The job fills site 0's
// nodes first (packed node order). A group whose first and last members sit
// in different sites spans W = last - first + 1 sites with m = size / W
// members in each, and is priced as the hierarchical form: inside each site
// as the fabric prices it (above), plus, in series, the inter-site exchange
// of each member's 1/m share: 2(W-1)/W of it for an all-reduce, (W-1)/W for
// a reduce-scatter or all-gather, (W-1)/W of the whole buffer for an
// all-to-all, the share itself for a broadcast and the whole message for a
// transfer. Every GPU of a site is taken to send at once (the loaded view,
// as Oversubscription), so each gets link / GPUs per site. Latency: one link
// crossing per inter-site step of the ring over sites (2(W-1) for an
// all-reduce, W-1 otherwise, one for a transfer).
AnalyticNetwork::Phase AnalyticNetwork::CrossSite(const CollectiveKind* kind, double bytes,
                                                  const trace::CommGroup& group) const {
  Phase out;
  if (!sites_ || group.size < 2 || !(bytes > 0)) return out;
  const int64_t site_gpus = static_cast<int64_t>(sites_->nodes_per_site) * gpus_per_node_;
  const int64_t a = group.first_rank;
  const int64_t b = group.first_rank + static_cast<int64_t>(group.size - 1) * group.stride;
  const int64_t first = std::min(a, b) / site_gpus, last = std::max(a, b) / site_gpus;
  if (first == last) return out;
  const double w = static_cast<double>(last - first + 1);
  const double m = std::max(1.0, group.size / w);
  const double share = sites_->link_bandwidth.value / static_cast<double>(site_gpus);
  const double link_latency = sites_->link_latency.seconds();
  double crossing = bytes, steps = 1;
  if (kind != nullptr) {
    switch (*kind) {
      case CollectiveKind::kAllReduce: crossing = 2.0 * (w - 1) / w * bytes / m; steps = 2.0 * (w - 1); break;
      case CollectiveKind::kAllGather:
      case CollectiveKind::kReduceScatter: crossing = (w - 1) / w * bytes / m; steps = w - 1; break;
      case CollectiveKind::kAllToAll: crossing = (w - 1) / w * bytes; steps = w - 1; break;
      case CollectiveKind::kBroadcast: crossing = bytes / m; steps = w - 1; break;
    }
  }
  out.transfer = crossing / share;
  out.latency = steps * link_latency;
  out.links = engine::kScaleOutLink;
  return out;
}

}  // namespace stacksim::net
