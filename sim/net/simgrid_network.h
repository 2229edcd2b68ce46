// The SimGrid network model: SimGrid's flow-level (max-min sharing) model on
// a platform built from the topology, so that concurrent collectives share
// NVLink ports, NICs and fat-tree uplinks and contention emerges.
//
// Costs (Collective / Transfer) are the analytic model's: the latency part is
// added by the engine, and the transfer part is the "unshared" reference the
// engine measures contention against. StartSession builds the platform and
// returns a FlowSession that decomposes each communication into flows the way
// NCCL runs it (one flow per ring edge per collective, carrying the bytes that
// edge carries over the whole collective; pairwise flows for all-to-all,
// per rail and node pair plus NVLink forwarding for the hierarchical one) and
// lets SimGrid share bandwidth among them.
//
// SimGrid allows one engine per process: a process can run ONE session; a
// second StartSession throws std::logic_error. The model settings are CM02,
// TCP-gamma 0, crosstraffic 0 (alpha-beta exactly), link latencies 0 (latency
// comes from CommCost.latency, analytically). Bandwidths in bytes/s.
#ifndef STACKSIM_SIM_NET_SIMGRID_NETWORK_H_
#define STACKSIM_SIM_NET_SIMGRID_NETWORK_H_

#include <memory>
#include <string>

#include "sim/config/profile.h"
#include "sim/config/scenario.h"
#include "sim/config/topology.h"
#include "sim/engine/network_model.h"
#include "sim/net/analytic_network.h"

namespace stacksim::net {

class SimGridNetwork : public engine::NetworkModel {
 public:
  // cluster_gpus: GPUs of the whole job (rounded up to whole nodes). order:
  // how the job's nodes sit in the fabric. kPacked: logical node i is
  // physical node i. kScattered: with K = fabric.levels[0].nodes_below nodes
  // per leaf group (pod) and P = ceil(nodes / K) pods, logical node i is
  // slot i / P of pod i % P (physical node (i % P) x K + i / P), as a
  // fragmented scheduler hands nodes out round-robin over the pods.
  SimGridNetwork(const config::TopologyConfig& topology, const config::ProfileConfig& profile, int cluster_gpus,
                 config::NodeOrder order = config::NodeOrder::kPacked);

  engine::CommCost Collective(const trace::CommOp& op, const trace::CommGroup& group) const override {
    return analytic_.Collective(op, group);
  }
  engine::CommCost Transfer(const trace::TransferOp& op, const trace::CommGroup& pair) const override {
    return analytic_.Transfer(op, pair);
  }
  // Throws std::logic_error if this process already ran a SimGrid session.
  std::unique_ptr<engine::FlowSession> StartSession(const trace::Trace& trace) const override;
  std::string name() const override { return "simgrid"; }

  const config::TopologyConfig& topology() const { return topology_; }
  const AnalyticNetwork& analytic() const { return analytic_; }
  int cluster_gpus() const { return cluster_gpus_; }
  config::NodeOrder node_order() const { return order_; }
  // Physical node of the job's logical node (see the constructor), and the
  // number of physical nodes the platform needs to hold them all.
  int64_t PhysicalNode(int64_t logical_node) const;
  int64_t physical_nodes() const;
  // Per-GPU scale-up port (NVLink, or PCIe): the link times the ring curve's
  // peak efficiency, as the analytic model prices intra-node transfers.
  double port_bandwidth() const { return port_bw_; }
  // One physical NIC at the profile's achieved fraction of line rate.
  double nic_bandwidth() const { return nic_bw_; }

 private:
  config::TopologyConfig topology_;
  AnalyticNetwork analytic_;
  int cluster_gpus_;
  config::NodeOrder order_;
  double port_bw_ = 0;
  double nic_bw_ = 0;
};

std::unique_ptr<engine::NetworkModel> MakeSimGridNetwork(const config::TopologyConfig& topology,
                                                         const config::ProfileConfig& profile, int cluster_gpus,
                                                         config::NodeOrder order = config::NodeOrder::kPacked);

}  // namespace stacksim::net

#endif  // STACKSIM_SIM_NET_SIMGRID_NETWORK_H_
