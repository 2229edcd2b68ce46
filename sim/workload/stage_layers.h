// Where the model sits on the pipeline: the transformer layers of each
// virtual stage, and the parameters one GPU of a stage holds.
#ifndef STACKSIM_SIM_WORKLOAD_STAGE_LAYERS_H_
#define STACKSIM_SIM_WORKLOAD_STAGE_LAYERS_H_

#include <cstdint>
#include <vector>

#include "sim/config/scenario.h"

namespace stacksim::workload {

// Transformer layers in each of the pp*vp virtual stages (virtual stage
// c*pp + s is chunk c of pipeline rank s). Layers that do not divide evenly
// are taken from the first and last virtual stages, which also hold the
// embedding and the output head (as Llama 3 did; Dubey et al. 2024, §3.3.2).
std::vector<int> LayersPerVirtualStage(int layers, int pp, int vp);

// Parameters of transformer layer `layer` (0-based) one GPU holds: routed
// experts split over ep x etp, everything else over tp.
int64_t LayerParametersPerGpu(const config::ModelConfig& model, const config::PlanConfig& plan, int64_t layer);
// Parameters one GPU of `stage` holds (before any ZeRO sharding).
// Routed experts are split over ep, everything else over tp.
int64_t StageParameters(const config::ScenarioConfig& s, int stage);
// The routed-expert part of StageParameters (0 for dense models).
int64_t StageExpertParameters(const config::ScenarioConfig& s, int stage);

// Parameters one GPU of `stage` trains (before any ZeRO sharding): all of
// StageParameters, or under LoRA / QLoRA (plan.finetune) the adapters only.
double StageTrainableParameters(const config::ScenarioConfig& s, int stage);
// Under LoRA / QLoRA: the frozen weights one GPU of `stage` holds, in bytes
// (before ZeRO-3 sharding): the layers' (lora.h LayerFrozenBytes) and the
// embedding, output head and final norm, which stay 16-bit (bitsandbytes
// quantizes the layers' linear modules only). 0 without LoRA.
double StageFrozenBytes(const config::ScenarioConfig& s, int stage, double element_bytes);

}  // namespace stacksim::workload

#endif  // STACKSIM_SIM_WORKLOAD_STAGE_LAYERS_H_
