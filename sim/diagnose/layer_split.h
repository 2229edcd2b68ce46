// The five-layer split of one training step: the gap between the simulated
// step and an ideal step (every model FLOP of the step at the GPU's dense peak
// for the plan's precision, spread evenly over all GPUs), attributed to the
// layers of DESIGN.md on the breakdown rank, with the parts of each layer's
// gap, the findings in words, and what kind of step it is. The split is
// exact: ideal + the five gaps = step.
//   1 model definition: matmuls below peak (shapes, tile/wave quantization,
//     attention kernels), memory-bound ops at fused speed, work beyond the
//     model-FLOP count; launch floor under CUDA graphs.
//   2 parallelization: exposed TP/DP/PP/EP communication, pipeline bubble,
//     the busiest stage's compute beyond the stages' mean, MoE imbalance.
//   3 runtime orchestration: host waits ("other"); one healthy step has no
//     stragglers or failures: the findings point to `simulate --stragglers`
//     and `run-campaign`, which model them (never invented here).
//   4 compilation: eager (unfused) kernels beyond their fused time, kernel
//     launch cost beyond kernel time without CUDA graphs.
//   5 hardware: recomputation (the price of the memory capacity), offload
//     traffic over PCIe not hidden.
//
// Times are stacksim::Time; the parts are JSON numbers of seconds.
#ifndef STACKSIM_SIM_DIAGNOSE_LAYER_SPLIT_H_
#define STACKSIM_SIM_DIAGNOSE_LAYER_SPLIT_H_

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/config/scenario.h"
#include "sim/diagnose/stack_layer.h"
#include "sim/diagnose/step_accounting.h"
#include "sim/simulate/simulate.h"
#include "sim/util/units.h"

namespace stacksim::diagnose {

// What binds the step: exposed communication and the pipeline bubble, the
// memory-bound and launch-bound ops' time, or the rest of the compute
// (whichever is largest; communication wins ties, then compute).
enum class StepClass { kComputeBound, kMemoryBound, kCommunicationBound };
// "compute-bound", "memory-bound", "communication-bound".
const char* StepClassName(StepClass c);

struct LayerSplit {
  Time ideal;
  Time step;                                 // the breakdown rank's total
  PerLayer<Time> gap;
  PerLayer<nlohmann::json> parts;            // what makes up each gap, in seconds
  PerLayer<std::vector<std::string>> findings;  // lines, per layer
  StepClass step_class = StepClass::kComputeBound;
};

LayerSplit SplitByLayer(const simulate::SimulationResult& result, const StepAccounting& a);

// Whether any pair of neighbouring pipeline stages sits in different domains.
bool PipelineCrossesDomains(const config::PlanConfig& p, const config::TopologyConfig& topo);

// "12.3 GiB", as findings and reasons print memory.
std::string GibText(Bytes b);

}  // namespace stacksim::diagnose

#endif  // STACKSIM_SIM_DIAGNOSE_LAYER_SPLIT_H_
