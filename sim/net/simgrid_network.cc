#include "sim/net/simgrid_network.h"

#include <simgrid/kernel/resource/Model.hpp>
#include <simgrid/kernel/routing/NetPoint.hpp>
#include <simgrid/kernel/routing/NetZoneImpl.hpp>
#include <simgrid/s4u.hpp>
#include <xbt/log.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sim/net/bus_bandwidth.h"
#include "sim/net/collective_flows.h"
#include "sim/net/graph_platform.h"
#include "sim/net/simgrid_fabric.h"
#include "sim/util/error.h"

namespace stacksim::net {
namespace {

namespace sg4 = simgrid::s4u;
using simgrid::kernel::routing::NetPoint;
using simgrid::kernel::routing::Route;
using trace::CollectiveKind;
using trace::TaskId;
using trace::TaskKind;

// SimGrid allows one engine per process.
std::atomic<bool> session_started{false};

// A zone whose routes are computed by Fabric (no n^2 routing table): hosts
// are the GPUs in order, so a host's netpoint id is its GPU index.
class FabricZone : public simgrid::kernel::routing::NetZoneImpl {
 public:
  FabricZone(const Platform& fabric, std::vector<simgrid::kernel::resource::StandardLinkImpl*>* links)
      : NetZoneImpl("stacksim-fabric"), fabric_(fabric), links_(*links) {}
  void get_local_route(const NetPoint* src, const NetPoint* dst, Route* into, double* latency) override {
    scratch_.clear();
    fabric_.RouteLinks(static_cast<int64_t>(src->id()) - first_id_, static_cast<int64_t>(dst->id()) - first_id_,
                       &scratch_);
    for (int32_t l : scratch_) into->link_list_.push_back(links_[l]);
    (void)latency;  // links have no latency: it is added analytically
  }
  void set_first_id(int64_t id) { first_id_ = id; }

 private:
  const Platform& fabric_;
  std::vector<simgrid::kernel::resource::StandardLinkImpl*>& links_;
  std::vector<int32_t> scratch_;
  int64_t first_id_ = 0;
};

struct Flow {
  int32_t op;       // slot in SimGridSession::ops_
  int64_t src, dst; // GPUs
  double bytes;
  double start = 0, end = -1;  // seconds
};

struct Op {
  TaskId task;
  int64_t seq;      // start order
  int32_t pending;  // flows not finished
};

class SimGridSession : public engine::FlowSession {
 public:
  SimGridSession(const SimGridNetwork& net, const trace::Trace& trace)
      : net_(net),
        trace_(trace),
        fabric_(MakePlatform(net)) {
    gpn_ = std::max(1, net.topology().gpus_per_node);
    const int64_t nodes = (std::max(1, net.cluster_gpus()) + gpn_ - 1) / gpn_;
    logical_gpus_ = nodes * gpn_;
    node_map_.resize(nodes);
    for (int64_t i = 0; i < nodes; ++i) node_map_[i] = net.PhysicalNode(i);
    xbt_log_control_set("root.thres:critical");
    int argc = 1;
    char arg0[] = "stacksim";
    char* argv[] = {arg0, nullptr};
    engine_ = std::make_unique<sg4::Engine>(&argc, argv);
    sg4::Engine::set_config("network/model:CM02");
    sg4::Engine::set_config("network/TCP-gamma:0");
    sg4::Engine::set_config("network/crosstraffic:0");
    BuildPlatform();
    sg4::Activity::on_completion_cb([this](const sg4::Activity& a) { OnCompletion(a); });
  }

  ~SimGridSession() override {
    if (std::getenv("STACKSIM_SIMGRID_STATS")) {
      std::fprintf(stderr, "simgrid: %zu ops, %zu flows, start %.2fs run %.2fs next %.2fs\n", ops_.size(), flows_.size(),
                   t_start_, t_run_, t_next_);
    }
  }
  double t_start_ = 0, t_run_ = 0, t_next_ = 0;
  using Clk = std::chrono::steady_clock;
  static double Since(Clk::time_point t0) { return std::chrono::duration<double>(Clk::now() - t0).count(); }

  void Start(const engine::CommPhase& phase, Time now) override {
    const TaskId task = phase.task;  // flows come from the task and its group, not from the phase's links
    auto t0 = Clk::now();
    struct Acc { double& d; Clk::time_point t; ~Acc() { d += Since(t); } } acc{t_start_, t0};
    // The engine has drained every completion up to `now`, so SimGrid can
    // catch up with it before the new flows join.
    if (now.ns() > clock_ns_) {
      engine_->run_until(static_cast<double>(now.ns()) * 1e-9);
      clock_ns_ = now.ns();
      Release();
    }
    now_s_ = static_cast<double>(now.ns()) * 1e-9;
    int32_t slot = static_cast<int32_t>(ops_.size());
    ops_.push_back({task, seq_++, 0});
    scratch_.clear();
    const trace::Task& t = trace_.task(task);
    if (t.kind == TaskKind::kTransfer) {
      AddTransferFlows(t, &scratch_);
    } else {
      AddCollectiveFlows(t, &scratch_);
    }
    for (const FlowSpec& f : scratch_) {
      if (f.src == f.dst || !(f.bytes > 0)) continue;
      int32_t id = static_cast<int32_t>(flows_.size());
      const int64_t src = Physical(f.src), dst = Physical(f.dst);
      flows_.push_back({slot, src, dst, f.bytes, now_s_, -1});
      ++ops_[slot].pending;
      sg4::CommPtr c = sg4::Comm::sendto_init(hosts_[src], hosts_[dst]);
      c->set_payload_size(static_cast<uint64_t>(std::llround(f.bytes)));
      c->set_data(reinterpret_cast<void*>(static_cast<intptr_t>(id) + 1));
      c->start();
      comms_.push_back(c);
    }
    if (ops_[slot].pending == 0) done_.push_back(slot);
  }

  Time NextCompletion() override {
    if (!done_.empty()) return Time::Ns(clock_ns_);
    struct Acc { double& d; Clk::time_point t; ~Acc() { d += Since(t); } } acc{t_next_, Clk::now()};
    if (active_flows() == 0) return Time::Max();
    double now = sg4::Engine::get_clock();
    double delta = model_->next_occurring_event(now);
    if (delta < 0) return Time::Max();
    int64_t t = static_cast<int64_t>(std::ceil((now + delta) * 1e9 - 1e-3));
    return Time::Ns(std::max(t, clock_ns_ + (stalled_ ? 1 : 0)));
  }

  void AdvanceTo(Time t, std::vector<TaskId>* out) override {
    struct Acc { double& d; Clk::time_point t; ~Acc() { d += Since(t); } } acc{t_run_, Clk::now()};
    if (t.ns() > clock_ns_) {
      engine_->run_until(static_cast<double>(t.ns()) * 1e-9);
      clock_ns_ = t.ns();
      Release();
    }
    stalled_ = done_.empty();
    std::sort(done_.begin(), done_.end(), [&](int32_t a, int32_t b) { return ops_[a].seq < ops_[b].seq; });
    for (int32_t slot : done_) out->push_back(ops_[slot].task);
    done_.clear();
  }

  std::vector<std::string> ContentionReport() const override;

 private:
  using FlowSpec = GpuFlow;
  static std::unique_ptr<Platform> MakePlatform(const SimGridNetwork& net) {
    if (const GraphPricing* graph = net.analytic().graph()) {
      return std::make_unique<GraphPlatform>(graph->shared_fabric());
    }
    return std::make_unique<Fabric>(net.topology(), net.port_bandwidth(), net.nic_bandwidth(),
                                    static_cast<int>(net.physical_nodes() * std::max(1, net.topology().gpus_per_node)));
  }

  size_t active_flows() const { return flows_.size() - finished_flows_; }
  // Frees the comms of finished flows (not inside SimGrid's completion
  // callback, where the activity is still in use).
  void Release() {
    for (int32_t id : released_) comms_[id] = nullptr;
    released_.clear();
  }
  // The fabric GPU (physical) of a job rank (logical).
  int64_t Physical(int64_t rank) const { return node_map_[rank / gpn_] * gpn_ + rank % gpn_; }
  void BuildPlatform();
  void OnCompletion(const sg4::Activity& a);
  // Flows of the task's copies that Expanded() keeps.
  void AddCollectiveFlows(const trace::Task& t, std::vector<FlowSpec>* out);
  void AddTransferFlows(const trace::Task& t, std::vector<FlowSpec>* out);
  // Flows of one copy (offset `off` from the representative), logical ranks.
  void CollectiveCopy(const trace::Task& t, const engine::CommCost& cost, int64_t off,
                      std::vector<FlowSpec>* out) const;
  // Candidate sibling offsets (span rule) and, among them, the copies kept:
  // those linked to the representative through shared links (cached per
  // group and flow pattern).
  std::vector<int64_t> Siblings(const trace::CommGroup& g, int64_t first_span) const;
  const std::vector<int64_t>& Expanded(const trace::Task& t, const trace::CommGroup& g, int64_t key, int64_t last,
                                       const std::function<void(int64_t, std::vector<FlowSpec>*)>& copy);

  const SimGridNetwork& net_;
  const trace::Trace& trace_;
  std::unique_ptr<Platform> fabric_;
  int gpn_ = 1;
  int64_t logical_gpus_ = 0;        // the job's ranks, whole nodes
  std::vector<int64_t> node_map_;   // logical node -> physical node
  std::unique_ptr<sg4::Engine> engine_;
  simgrid::kernel::resource::Model* model_ = nullptr;
  std::vector<sg4::Host*> hosts_;
  std::vector<simgrid::kernel::resource::StandardLinkImpl*> link_impls_;
  std::vector<Op> ops_;
  std::vector<Flow> flows_;
  std::vector<sg4::CommPtr> comms_;  // per flow, freed when it finished
  std::vector<int32_t> done_;        // op slots finished, not yet returned
  std::vector<FlowSpec> scratch_;
  std::unordered_map<int64_t, std::vector<int64_t>> expanded_;  // (group, pattern) -> kept offsets
  std::vector<int32_t> released_;    // flows finished whose comm can be freed
  size_t finished_flows_ = 0;
  int64_t seq_ = 0;
  int64_t clock_ns_ = 0;
  bool stalled_ = false;
  double now_s_ = 0;
};

void SimGridSession::BuildPlatform() {
  auto* zone = new FabricZone(*fabric_, &link_impls_);
  sg4::NetZone* iface = zone->get_iface();
  const int64_t gpus = fabric_->gpus();
  hosts_.reserve(gpus);
  for (int64_t g = 0; g < gpus; ++g) {
    hosts_.push_back(iface->create_host("gpu " + std::to_string(g), 1e9));
    hosts_.back()->seal();
    if (g == 0) zone->set_first_id(static_cast<int64_t>(hosts_.back()->get_netpoint()->id()));
  }
  link_impls_.resize(fabric_->links().size());
  for (size_t l = 0; l < fabric_->links().size(); l += 2) {
    // Fabric links come in (up, down) pairs of one full-duplex link.
    sg4::SplitDuplexLink* link = iface->create_split_duplex_link(fabric_->links()[l].name, fabric_->links()[l].bandwidth);
    link->set_latency(0);
    link->seal();
    link_impls_[l] = link->get_link_up()->get_impl();
    link_impls_[l + 1] = link->get_link_down()->get_impl();
  }
  iface->seal();
  // The network model's next event is not public API: Model is its primary
  // base, so the pointer converts (Itanium ABI). See docs/network.md.
  model_ = reinterpret_cast<simgrid::kernel::resource::Model*>(zone->get_network_model().get());
}

void SimGridSession::OnCompletion(const sg4::Activity& a) {
  auto tag = reinterpret_cast<intptr_t>(a.get_data<void>());
  if (tag <= 0) return;
  Flow& f = flows_[tag - 1];
  if (f.end >= 0) return;
  f.end = sg4::Engine::get_clock();
  ++finished_flows_;
  released_.push_back(static_cast<int32_t>(tag - 1));
  if (--ops_[f.op].pending == 0) done_.push_back(f.op);
}

// Sibling copies to expand: every copy whose offset stays within the span of
// one leaf switch group (gpus_per_node x leaf nodes_below): those share the
// representative's nodes (NVLink ports, NICs) or its leaf switches and their
// uplinks. Copies further away load other, symmetric leaves. Copies that fall
// outside the cluster are dropped.
std::vector<int64_t> SimGridSession::Siblings(const trace::CommGroup& g, int64_t last_member_offset) const {
  std::vector<int64_t> offsets{0};
  // Scattered nodes: the ranks that share the representative's pods are
  // spread over the whole job, so every copy is expanded.
  int64_t span = net_.node_order() == config::NodeOrder::kScattered ? logical_gpus_ : fabric_->leaf_span_gpus();
  for (int j = 1; j < g.siblings && g.sibling_stride > 0; ++j) {
    int64_t off = g.SiblingOffset(j);  // grows with j
    if (off >= span) break;
    if (g.first_rank + off + last_member_offset >= logical_gpus_ || g.first_rank + off < 0) break;
    offsets.push_back(off);
  }
  return offsets;
}

// Of the candidate copies, keep the representative and every copy linked to
// it through shared links (transitively: a copy that shares a link with a
// kept copy is kept). Copies whose flows touch none of those links load
// other, symmetric links (another node's NVLink ports, another rail's NIC
// and leaf) and would change nothing the representative's ops see: e.g. a
// tensor-parallel all-reduce inside a node keeps one copy, a DP ring on a
// rail-optimized fabric keeps its own rail. On a non-rail fabric or with
// fewer NICs than GPUs the copies share NICs and leaf uplinks and are kept.
const std::vector<int64_t>& SimGridSession::Expanded(
    const trace::Task& t, const trace::CommGroup& g, int64_t key, int64_t last,
    const std::function<void(int64_t, std::vector<FlowSpec>*)>& copy) {
  (void)t;
  auto it = expanded_.find(key);
  if (it != expanded_.end()) return it->second;
  std::vector<int64_t> cands = Siblings(g, last);
  std::vector<std::vector<int32_t>> links(cands.size());
  std::vector<FlowSpec> specs;
  for (size_t i = 0; i < cands.size(); ++i) {
    specs.clear();
    copy(cands[i], &specs);
    for (const FlowSpec& f : specs) {
      if (f.src == f.dst) continue;
      fabric_->RouteLinks(Physical(f.src), Physical(f.dst), &links[i]);
    }
    std::sort(links[i].begin(), links[i].end());
    links[i].erase(std::unique(links[i].begin(), links[i].end()), links[i].end());
  }
  std::vector<char> mark(fabric_->links().size(), 0), kept(cands.size(), 0);
  auto keep = [&](size_t i) {
    kept[i] = 1;
    for (int32_t l : links[i]) mark[l] = 1;
  };
  keep(0);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 1; i < cands.size(); ++i) {
      if (kept[i]) continue;
      for (int32_t l : links[i]) {
        if (mark[l]) {
          keep(i);
          changed = true;
          break;
        }
      }
    }
  }
  std::vector<int64_t> out;
  for (size_t i = 0; i < cands.size(); ++i)
    if (kept[i]) out.push_back(cands[i]);
  return expanded_.emplace(key, std::move(out)).first->second;
}

void SimGridSession::AddTransferFlows(const trace::Task& t, std::vector<FlowSpec>* out) {
  const trace::CommGroup& g = trace_.group(t.transfer.group);
  int64_t a = g.first_rank, b = g.first_rank + g.stride;
  bool swapped = false;
  if (g.simulated.size() == 2) {
    swapped = g.simulated[0] != t.rank;
  } else if ((t.transfer.dst - t.rank > 0) != (g.stride > 0)) {
    // Pipeline pairs list the lower stage first; a send against the pair's
    // direction starts at its second member.
    swapped = true;
  }
  if (swapped) std::swap(a, b);
  if (a < 0 || b < 0 || a >= logical_gpus_ || b >= logical_gpus_) return;
  int64_t hi = std::max<int64_t>(0, std::max(a, b) - g.first_rank);
  const double bytes = t.transfer.bytes.value;
  auto copy = [&](int64_t off, std::vector<FlowSpec>* o) { o->push_back({a + off, b + off, bytes}); };
  for (int64_t off : Expanded(t, g, (static_cast<int64_t>(t.transfer.group) << 3) | (swapped ? 1 : 0), hi, copy)) {
    copy(off, out);
  }
}

void SimGridSession::AddCollectiveFlows(const trace::Task& t, std::vector<FlowSpec>* out) {
  const trace::CommGroup& g = trace_.group(t.comm.group);
  if (g.size <= 1) return;
  engine::CommCost cost = net_.Collective(t.comm, g);
  int64_t last = static_cast<int64_t>(g.size - 1) * g.stride;
  auto copy = [&](int64_t off, std::vector<FlowSpec>* o) { CollectiveCopy(t, cost, off, o); };
  // The flows' links depend on the group and on all-to-all vs ring only.
  int64_t key = (static_cast<int64_t>(t.comm.group) << 3) | 2 | (t.comm.kind == CollectiveKind::kAllToAll ? 4 : 0);
  for (int64_t off : Expanded(t, g, key, last, copy)) copy(off, out);
}

void SimGridSession::CollectiveCopy(const trace::Task& t, const engine::CommCost& cost, int64_t off,
                                    std::vector<FlowSpec>* out) const {
  const trace::CommGroup& g = trace_.group(t.comm.group);
  const int p = g.size;
  int gl = std::max(1, g.ranks_per_node);
  int n = std::max(1, g.nodes);
  if (const GraphPricing* graph = net_.analytic().graph()) {
    // A graph fabric: the members' scale-up domains as the graph has them.
    const GroupShape shape = graph->fabric().Shape(g, off);
    n = shape.one_switch ? 1 : shape.domains;
    gl = shape.one_switch ? p : shape.per_domain;
  }
  const double s = t.comm.bytes.value;
  auto member = [&](int64_t o, int i) { return g.first_rank + o + static_cast<int64_t>(i) * g.stride; };
  if (n == 1) {
    // Inside the node the measured curve defines the time: each port
    // carries what the analytic transfer time moves at the port's rate
    // (factor x S for a ring; less for NVLS).
    double port_bytes = cost.transfer.seconds() * net_.port_bandwidth();
    if (t.comm.kind == CollectiveKind::kAllToAll) {
      for (int i = 0; i < p; ++i)
        for (int j = 0; j < p; ++j)
          if (i != j) out->push_back({member(off, i), member(off, j), port_bytes / (p - 1)});
    } else {
      for (int i = 0; i < p; ++i) out->push_back({member(off, i), member(off, (i + 1) % p), port_bytes});
    }
    return;
  }
  // Across nodes: members node-major, gl per node.
  auto at = [&](int node, int c) { return member(off, node * gl + c); };
  if (t.comm.kind == CollectiveKind::kAllToAll && t.comm.scale_out_bytes.value >= 0) {
    HierarchicalFlows(at, n, gl, s, t.comm.scale_out_bytes.value, out);
    return;
  }
  if (t.comm.kind == CollectiveKind::kAllToAll) {
    PairwiseFlows(at, n, gl, s, out);
    return;
  }
  // Ring (or tree, priced on the same edges): gl rings, one per rail; each
  // inter-node edge carries E, each GPU forwards gl-1 rings over NVLink.
  double factor = 1.0;
  switch (t.comm.kind) {
    case CollectiveKind::kAllReduce:
      factor = cost.algorithm == "tree" ? 2.0 / kTreeBandwidthShare : 2.0 * (p - 1.0) / p;
      break;
    case CollectiveKind::kAllGather:
    case CollectiveKind::kReduceScatter:
      factor = (p - 1.0) / p;
      break;
    default:
      factor = 1.0;
  }
  // The protocol's framing (NCCL's LL128) travels on the links too.
  RingFlows(at, n, gl, factor * s / (gl * cost.bandwidth_share), out);
}

std::vector<std::string> SimGridSession::ContentionReport() const {
  // Per directed link: bytes carried, busy time (union of its flows' active
  // intervals) and the time its flows lost against their unshared time,
  // charged to each flow's most loaded link.
  const auto& links = fabric_->links();
  std::vector<double> bytes(links.size(), 0), lost(links.size(), 0);
  std::vector<std::vector<std::pair<double, double>>> spans(links.size());
  std::vector<int32_t> route;
  std::vector<std::vector<int32_t>> routes(flows_.size());
  for (size_t i = 0; i < flows_.size(); ++i) {
    const Flow& f = flows_[i];
    fabric_->RouteLinks(f.src, f.dst, &routes[i]);
    for (int32_t l : routes[i]) {
      bytes[l] += f.bytes;
      if (f.end >= 0) spans[l].push_back({f.start, f.end});
    }
  }
  std::vector<double> busy(links.size(), 0);
  for (size_t l = 0; l < links.size(); ++l) {
    auto& sp = spans[l];
    std::sort(sp.begin(), sp.end());
    double cur_s = -1, cur_e = -1;
    for (auto [s, e] : sp) {
      if (s > cur_e) {
        if (cur_e > cur_s) busy[l] += cur_e - cur_s;
        cur_s = s;
        cur_e = e;
      } else {
        cur_e = std::max(cur_e, e);
      }
    }
    if (cur_e > cur_s) busy[l] += cur_e - cur_s;
  }
  for (size_t i = 0; i < flows_.size(); ++i) {
    const Flow& f = flows_[i];
    if (f.end < 0 || routes[i].empty()) continue;
    double min_bw = 1e300;
    int32_t worst = routes[i][0];
    for (int32_t l : routes[i]) {
      min_bw = std::min(min_bw, links[l].bandwidth);
      if (bytes[l] / links[l].bandwidth > bytes[worst] / links[worst].bandwidth) worst = l;
    }
    double slow = (f.end - f.start) - f.bytes / min_bw;
    if (slow > 1e-9) lost[worst] += slow;
  }
  std::vector<size_t> order;
  for (size_t l = 0; l < links.size(); ++l)
    if (lost[l] > 0) order.push_back(l);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return lost[a] != lost[b] ? lost[a] > lost[b] : a < b;
  });
  if (order.size() > 5) order.resize(5);
  std::vector<std::string> out;
  for (size_t l : order) {
    char line[512];
    std::snprintf(line, sizeof line, "%s %s: %.3g GB, busy %.3f ms, flows slowed by %.3f ms in all",
                  links[l].name.c_str(), l % 2 == 0 ? "(up)" : "(down)", bytes[l] * 1e-9, busy[l] * 1e3,
                  lost[l] * 1e3);
    out.push_back(line);
  }
  return out;
}

}  // namespace

SimGridNetwork::SimGridNetwork(const config::TopologyConfig& topology, const config::ProfileConfig& profile,
                               int cluster_gpus, config::NodeOrder order)
    : topology_(topology), analytic_(topology, profile, cluster_gpus), cluster_gpus_(cluster_gpus), order_(order) {
  // Mirror AnalyticNetwork::IntraRingPeak: the ring curve's peak scaled to
  // this system's link, or the raw link without a curve.
  double link = topology.scale_up.per_gpu_bandwidth.value;
  if (topology.scale_up.kind == config::ScaleUpKind::kPcie && topology.pcie_bandwidth.value > 0) {
    link = topology.pcie_bandwidth.value;
  }
  config::BusBandwidthCurve ring = profile.intra_ring;
  if (ring.points.empty()) ring = profile.intra_all_reduce;
  double reference = profile.intra_reference_link.value.value;
  if (!(reference > 0)) reference = link;
  double peak = ring.points.empty() ? 0 : MeasuredBusBandwidth(ring.points).peak().value;
  port_bw_ = peak > 0 ? peak * link / reference : link;
  nic_bw_ = topology.nics.bandwidth.value * profile.nic_efficiency.value;
}

namespace {
// Nodes of one leaf group (pod) and pods the job's nodes need.
std::pair<int64_t, int64_t> Pods(const config::TopologyConfig& t, int64_t nodes) {
  int64_t k = t.fabric.levels.empty() ? nodes : std::max(1, t.fabric.levels[0].nodes_below);
  k = std::max<int64_t>(1, k);
  return {k, (nodes + k - 1) / k};
}
}  // namespace

int64_t SimGridNetwork::PhysicalNode(int64_t i) const {
  if (order_ != config::NodeOrder::kScattered) return i;
  const int gpn = std::max(1, topology_.gpus_per_node);
  auto [k, pods] = Pods(topology_, (std::max(1, cluster_gpus_) + gpn - 1) / gpn);
  return (i % pods) * k + i / pods;
}

int64_t SimGridNetwork::physical_nodes() const {
  const int gpn = std::max(1, topology_.gpus_per_node);
  const int64_t nodes = (std::max(1, cluster_gpus_) + gpn - 1) / gpn;
  if (order_ != config::NodeOrder::kScattered) return nodes;
  int64_t last = 0;
  for (int64_t i = 0; i < nodes; ++i) last = std::max(last, PhysicalNode(i));
  return last + 1;
}

std::unique_ptr<engine::FlowSession> SimGridNetwork::StartSession(const trace::Trace& trace) const {
  if (session_started.exchange(true)) {
    throw std::logic_error(
        "SimGridNetwork: SimGrid allows one simulation per process and this process already ran one; "
        "run each SimGrid replay in its own process");
  }
  return std::make_unique<SimGridSession>(*this, trace);
}

std::unique_ptr<engine::NetworkModel> MakeSimGridNetwork(const config::TopologyConfig& topology,
                                                         const config::ProfileConfig& profile, int cluster_gpus,
                                                         config::NodeOrder order) {
  // One host and a few links per GPU: 131,072 GPUs take 0.9 GB and ~25 CPU-s
  // (docs/scale.md); beyond 2^18 GPUs memory, not the model, binds.
  constexpr int kMaxSimGridGpus = 1 << 18;
  if (cluster_gpus > kMaxSimGridGpus) {
    throw InputError("", "--network", "the SimGrid model builds one host per GPU: " + std::to_string(cluster_gpus) +
                                          " GPUs is more than it simulates (at most " +
                                          std::to_string(kMaxSimGridGpus) + "); use --network analytic");
  }
  return std::make_unique<SimGridNetwork>(topology, profile, cluster_gpus, order);
}

}  // namespace stacksim::net
