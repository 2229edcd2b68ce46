// Which layer of the stack holds a training step back, and what to change.
//
// Diagnose simulates a scenario, then splits the gap between the simulated
// step and an ideal step (every model FLOP of the step at the GPU's dense peak
// for the plan's precision, spread evenly over all GPUs) over the five layers
// of DESIGN.md, on the breakdown rank (the pipeline stage with the most
// compute, as SimulationResult.breakdown). The split is exact:
//   ideal + model + parallelization + runtime + compilation + hardware = step.
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
// Then every remedy that fits the findings is applied to a copy of the plan,
// validated (config::ValidatePlan), checked for memory and re-simulated;
// remedies are ranked by the step time they save.
//
// Times are stacksim::Time (the JSON writes seconds). Owns nothing global.
#ifndef STACKSIM_SIM_DIAGNOSE_DIAGNOSE_H_
#define STACKSIM_SIM_DIAGNOSE_DIAGNOSE_H_

#include <array>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/config/scenario.h"
#include "sim/simulate/simulate.h"
#include "sim/util/units.h"

namespace stacksim::diagnose {

// One op name on the breakdown rank's compute stream (all layers and
// micro-batches together).
struct OpStat {
  std::string name;         // trace task name, e.g. "fc1", "recompute-attention"
  bool recompute = false;   // re-run in the backward pass (trace::Task::recompute)
  std::string roofline;     // "compute", "memory" or "launch" bound
  int64_t calls = 0;
  int64_t kernels = 0;      // kernel launches over all calls
  Time time;                // simulated
  Time ideal;               // its FLOPs at the plan precision's dense peak
  Time launch_excess;       // issue time beyond kernel time (launch-bound part)
  Time eager_excess;        // eager kernel time beyond the fused kernel's
  double flops = 0;         // over all calls
  double bytes = 0;
};

// A finding and the change proposed for it, re-simulated.
struct Remedy {
  int layer = 0;             // 1..5
  std::string finding;       // what was observed
  std::string change;        // the concrete plan change, e.g. "kernels fused"
  // {"kernels": "fused"}: plan keys and their new values; also "node_order",
  // the one scenario key a remedy may change.
  nlohmann::json plan_changes;
  // "simulated", "invalid" (ValidatePlan said why), "out of memory", or "not
  // simulated" (the network model in use cannot see the change: node order
  // under the analytic model).
  std::string status;
  std::string reason;        // for invalid / out of memory / not simulated
  Time predicted;            // simulated step with the change (status "simulated")
  Time gain;                 // step - predicted (may be negative: the change hurts)
  config::PlanConfig plan;   // the changed plan
  config::NodeOrder node_order = config::NodeOrder::kPacked;  // the scenario's, with the change
};

struct Diagnosis {
  simulate::SimulationResult result;  // the scenario as given (keep_trace off)
  Time ideal;
  Time step;
  std::array<Time, 5> layer_gap{};   // layers 1..5 at index 0..4
  std::array<std::vector<std::string>, 5> layer_findings;  // lines, per layer
  // Parts (seconds) that make up each layer's gap, for the JSON.
  std::array<nlohmann::json, 5> layer_parts;
  std::string step_class;            // "compute-bound", "memory-bound", "communication-bound"
  std::vector<OpStat> ops;           // by time beyond ideal, largest first
  std::vector<Remedy> remedies;      // simulated ones by gain, largest first; then the rest
  // The remedies that gain, applied together where they change different plan
  // keys (greedily, best first, each kept only if the plan stays valid, fits
  // and gets faster), re-simulated; layer 0, status "" when fewer than two
  // combine.
  Remedy combined;
};

struct DiagnoseOptions {
  // The analytic model: every remedy is a further simulation, and SimGrid
  // allows one session per process.
  std::string network = "analytic";
  bool simulate_remedies = true;
};

// Throws InputError when the scenario itself cannot run, or does not fit in
// memory (nothing to diagnose).
Diagnosis Diagnose(const config::ScenarioConfig& scenario, const DiagnoseOptions& options = {});

std::string DiagnosisText(const Diagnosis& d);
nlohmann::json DiagnosisJson(const Diagnosis& d);

}  // namespace stacksim::diagnose

#endif  // STACKSIM_SIM_DIAGNOSE_DIAGNOSE_H_
