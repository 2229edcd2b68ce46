// Offload of the optimizer step (and, with ZeRO-Infinity, of the 16-bit
// parameters) to the host: the trace tasks one rank's training step gains.
//
// Frameworks modelled: DeepSpeed ZeRO-Offload (Ren et al., USENIX ATC 2021)
// and ZeRO-Infinity (Rajbhandari et al., SC'21), Megatron-Core's optimizer CPU
// offload (--optimizer-cpu-offload, --optimizer-offload-fraction,
// --overlap-cpu-optimizer-d2h-h2d). Per rank, of its optimizer shard of P_s
// parameters the fraction f = plan.offload_optimizer_fraction goes to the host:
//   1. gradients D2H over PCIe: f P_s x the reduced gradient's bytes (ZeRO-3
//      ships every micro-batch's reduce-scatter result, accumulated on the
//      host: m times that);
//   2. NVMe (offload_optimizer "nvme"): the fp32 master weights and Adam
//      moments (12 B/param) read before and written after the host step;
//   3. the host Adam step (CPU Adam), memory-bound on host DRAM;
//   4. the updated 16-bit parameters H2D (not with parameter offload: ZeRO-3
//      then fetches each layer's shard H2D before its gather, see
//      EmitParamFetch).
// The GPU runs the remaining (1 - f) of the optimizer step meanwhile.
//
// The trace contract has no host or PCIe device, so transfers and host work are
// kDelay tasks whose duration is computed here from the topology and profile:
// a kTransfer is a send between two GPU ranks priced by the network model
// (which knows NICs and NVLink, not the host bridge), and a memory-bound
// kCompute is priced at the GPU's HBM bandwidth. Streams per rank: "d2h" and
// "h2d" (the GPU's two copy engines, so the directions overlap), "host" (the
// CPU's optimizer step) and "nvme" (the drives); role trace::TaskRole::kOffload. A
// zero-length "offload-wait" task on the compute stream ends the step when the
// last offload task does, so the breakdown charges the wait to "offload".
//
// Overlap (plan.overlap_offload): each gradient bucket's D2H starts when its
// reduce-scatter ends (during the backward), and the host step runs in chunks
// of kOffloadChunkParams whose H2D (and NVMe write) follows each chunk while the
// next computes (DeepSpeed CPU Adam's tiled step-and-copy); NVMe reads run one
// chunk ahead. Without overlap every phase waits for the previous one, all after
// the backward. The host step waits for every gradient in both cases (gradient
// clipping needs the global norm).
#ifndef STACKSIM_SIM_WORKLOAD_OFFLOAD_H_
#define STACKSIM_SIM_WORKLOAD_OFFLOAD_H_

#include <vector>

#include "sim/config/scenario.h"
#include "sim/trace/trace.h"
#include "sim/util/units.h"

namespace stacksim::workload {

// fp32 master weights and the two Adam moments, per parameter: what leaves
// for the host (or NVMe) with the optimizer (ZeRO-Offload §4: 12 bytes).
inline constexpr double kOffloadStateBytesPerParam = 12.0;
// Parameters per pipelined host-step chunk: DeepSpeed CPU Adam's TILE
// (csrc/includes/simd.h, 128 Mi elements), after each of which the updated
// 16-bit copy goes to the GPU while the next tile computes.
inline constexpr double kOffloadChunkParams = 128.0 * 1024 * 1024;

// Bytes per parameter of the gradient as it is reduced and copied to the host:
// plan.grad_reduce_precision (Megatron's fp32 main gradients by default; the
// compute dtype under ZeRO-3 unless the plan says otherwise).
double OffloadGradientBytes(const config::PlanConfig& plan);
// Bytes per parameter of the working copy of the weights (2; 4 in fp32 training).
double OffloadParamBytes(const config::PlanConfig& plan);
// DRAM traffic of the host Adam step per parameter: read master, moments and
// gradient, write master and moments (2 x 12 + gradient), plus the 16-bit copy
// written for the GPU (none in fp32 training, where the master is the weight).
double HostAdamBytesPerParam(const config::PlanConfig& plan);
// Share of the optimizer step that stays on the GPU (1 - f; 1 without offload).
double GpuOptimizerShare(const config::PlanConfig& plan);

// Rates one GPU gets; the GPUs of a node share its DRAM and drives equally.
struct OffloadRates {
  Bandwidth pcie;         // pinned copy, each direction: min(node.pcie_bandwidth, profile host_bandwidth)
  Bandwidth host_memory;  // node.host.memory_bandwidth x kHostMemoryEfficiency / gpus_per_node
  Bandwidth nvme_read;    // node.nvme.bandwidth_read / gpus_per_node
  Bandwidth nvme_write;   // node.nvme.bandwidth_write / gpus_per_node
};
// Fraction of the DRAM peak the host Adam step streams at.
inline constexpr double kHostMemoryEfficiency = 0.7;
// REQUIRES: config::ValidateOffload(s) passed (node.host present when offloading).
OffloadRates RatesFor(const config::ScenarioConfig& s);

// Emits the offloaded part of `rank`'s optimizer step. `shard_params` is the
// rank's optimizer shard (P_s), `grads_ready` the tasks after which all its
// gradients are reduced (its data-parallel reduce-scatters, whose order and
// sizes pace the overlapped D2H, and the end of its backward), `gpu_step` the
// GPU's optimizer task. Returns the task the rank's compute stream now ends
// with: `gpu_step` itself without optimizer offload.
trace::TaskId EmitOffloadedOptimizerStep(trace::Trace& t, const config::ScenarioConfig& s, int rank,
                                         double shard_params, const std::vector<trace::TaskId>& grads_ready,
                                         trace::TaskId gpu_step);

// ZeRO-Infinity parameter offload: before a ZeRO-3 gather, this rank's shard of
// the layer (`shard` bytes) comes H2D, read from NVMe first when the
// parameters live there. `deps` gate it (the gather's own prefetch gate).
// Returns the task the gather must wait for, or -1 without parameter offload.
trace::TaskId EmitParamFetch(trace::Trace& t, const config::ScenarioConfig& s, int rank, Bytes shard,
                             const std::vector<trace::TaskId>& deps, int layer, int micro_batch);

}  // namespace stacksim::workload

#endif  // STACKSIM_SIM_WORKLOAD_OFFLOAD_H_
