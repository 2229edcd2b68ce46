// Memory one GPU needs at the peak of a training step, per pipeline stage.
//
// Model state follows mixed-precision Adam (Micikevicius et al. 2018; ZeRO,
// Rajbhandari et al. 2020): 16-bit weights, fp32 main gradients, fp32 master
// weights and two fp32 moments, sharded over data-parallel ranks by ZeRO stage.
// Activations follow Korthikanti et al. 2022 (Reducing Activation
// Recomputation in Large Transformer Models, §4), generalised to GQA, gated
// MLPs and fused flash attention (which stores no s x s scores), and counted
// over the micro-batches a schedule keeps in flight.
#ifndef STACKSIM_SIM_MEMORY_MEMORY_MODEL_H_
#define STACKSIM_SIM_MEMORY_MEMORY_MODEL_H_

#include <string>
#include <vector>

#include "sim/config/scenario.h"
#include "sim/util/units.h"
#include "sim/workload/layer_ops.h"

namespace stacksim::memory {

struct StageFootprint {
  int stage = 0;
  Bytes weights, gradients, optimizer, activations, other;
  int in_flight_micro_batches = 0;  // peak, in whole-stage micro-batches (may be fractional for interleaving; rounded up)
  Bytes total() const { return weights + gradients + optimizer + activations + other; }
};

// Activations one layer saves for its backward, for one micro-batch on one
// tensor-parallel rank, without recomputation or with the given mode. Full
// recomputation keeps only the layer's input; selective recomputation drops
// what the modules in shape.recompute_modules would keep (each keeps only its
// input; see workload::SelectiveRecompute).
Bytes LayerActivations(const workload::LayerShape& shape, config::Recompute recompute);

// Memory not tied to the model: CUDA context, NCCL buffers, library
// workspaces, each sized from its source (reserve.h RuntimeMemory).
Bytes RuntimeOverhead(const config::ScenarioConfig& s);

std::vector<StageFootprint> EstimateMemory(const config::ScenarioConfig& s);

// Offload (plan.offload_optimizer / offload_params): what one GPU of a stage
// keeps outside GPU memory. Empty without optimizer offload.
struct OffloadFootprint {
  int stage = 0;
  Bytes host;  // host DRAM per GPU
  Bytes nvme;  // NVMe per GPU
};
std::vector<OffloadFootprint> EstimateOffload(const config::ScenarioConfig& s);

// The node that offloads the most (its GPUs' footprints summed; ranks in
// Megatron's order, so a node holds one stage's GPUs or several small stages).
struct OffloadPerNode {
  Bytes host, nvme;
};
OffloadPerNode OffloadOfFullestNode(const config::ScenarioConfig& s);

// Throws InputError (file, plan.offload_optimizer or plan.offload_params) when
// the fullest node's offloaded state exceeds node.host.memory or
// node.nvme.capacity. REQUIRES: config::ValidatePlan(s) passed.
void CheckOffloadCapacity(const config::ScenarioConfig& s, const std::string& file);

}  // namespace stacksim::memory

#endif  // STACKSIM_SIM_MEMORY_MEMORY_MODEL_H_
