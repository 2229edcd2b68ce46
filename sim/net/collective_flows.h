// The flows NCCL's algorithms put on the fabric for one copy of a
// collective whose members span `domains` scale-up domains (nodes, or
// NVSwitch domains of a graph fabric) with `per_domain` members each,
// domain-major: member(k * per_domain + c) is the GPU of member c of
// domain k. Both network models use them: SimGrid starts one flow each,
// the analytic model prices a graph fabric by the load they put on its
// links. Bytes are what each flow carries over the whole collective.
#ifndef STACKSIM_SIM_NET_COLLECTIVE_FLOWS_H_
#define STACKSIM_SIM_NET_COLLECTIVE_FLOWS_H_

#include <cstdint>
#include <functional>
#include <vector>

namespace stacksim::net {

struct GpuFlow {
  int64_t src, dst;  // GPUs (job ranks)
  double bytes;
};

// NCCL's tree all-reduce runs at 90% of the ring's bus bandwidth and moves
// 2S per rank (src/graph/tuning.cc: "busBw = std::min(busBw*.9, maxTreeBw)",
// "ratio = (a != NCCL_ALGO_RING) ? .5 : nRanks/nsteps"); its flows are
// priced on the ring's edges.
inline constexpr double kTreeBandwidthShare = 0.9;

using MemberGpu = std::function<int64_t(int domain, int c)>;

// Ring (and tree, priced on the same edges): one ring per channel c < per_domain
// (NCCL's channels leave the domain on different GPUs' NICs); each edge
// between domains, (k, c) -> (k+1, c), carries edge_bytes, and with
// per_domain > 1 each GPU forwards the other per_domain - 1 rings to its
// domain neighbour (k, c) -> (k, c+1), (per_domain - 1) x edge_bytes.
void RingFlows(const MemberGpu& member, int domains, int per_domain, double edge_bytes, std::vector<GpuFlow>* out);

// Pairwise all-to-all of a `bytes` send buffer over p = domains x
// per_domain members, aggregated per domain pair and channel: GPU c of
// domain k sends what it owes domain l's GPUs through its own NIC, to GPU
// c there (per_domain x bytes / p), and bytes / p to each domain peer.
// REQUIRES: domains > 1.
void PairwiseFlows(const MemberGpu& member, int domains, int per_domain, double bytes, std::vector<GpuFlow>* out);

// Hierarchical all-to-all (trace::CommOp::scale_out_bytes): GPU c of
// domain k sends scale_out_bytes, split evenly over the other domains, to
// GPU c there; inside each domain every GPU forwards (per_domain - 1) /
// per_domain of its `bytes` of deliveries, evenly to its peers.
// REQUIRES: domains > 1.
void HierarchicalFlows(const MemberGpu& member, int domains, int per_domain, double bytes, double scale_out_bytes,
                       std::vector<GpuFlow>* out);

}  // namespace stacksim::net

#endif  // STACKSIM_SIM_NET_COLLECTIVE_FLOWS_H_
