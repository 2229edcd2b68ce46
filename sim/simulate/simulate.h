// One training step of a scenario, end to end: build the execution trace,
// check memory, replay it, and attribute the step's time.
//
// Owns nothing global; each call builds its own trace, models and engine.
#ifndef STACKSIM_SIM_SIMULATE_SIMULATE_H_
#define STACKSIM_SIM_SIMULATE_SIMULATE_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/config/scenario.h"
#include "sim/engine/engine.h"
#include "sim/simulate/dp_sync_step.h"
#include "sim/simulate/input_pipeline.h"
#include "sim/simulate/utilization.h"
#include "sim/trace/trace.h"
#include "sim/util/units.h"

namespace stacksim::simulate {

// Memory of one GPU of one pipeline stage, at its peak.
struct StageMemory {
  int stage = 0;
  Bytes weights;      // parameters as the GPU holds them (bf16/fp16 copy; gathered buffers for ZeRO-3)
  Bytes gradients;    // gradient buffers (fp32 main grads in Megatron)
  Bytes optimizer;    // fp32 master weights + Adam moments (sharded per ZeRO stage)
  Bytes activations;  // saved for backward, peak over the schedule, incl. logits on the last stage
  Bytes other;        // CUDA context, communication buffers, workspace
  Bytes total() const { return weights + gradients + optimizer + activations + other; }
};

// Where one rank's step time goes. The parts add up to the step time.
struct Breakdown {
  Time gemm;
  Time attention;
  Time memory_bound;     // norms, activations, elementwise, embeddings, loss
  Time optimizer;        // optimizer step and gradient clipping
  Time tp_exposed;       // tensor-parallel communication not hidden by compute
  Time dp_exposed;       // data-parallel (incl. ZeRO/FSDP gathers) not hidden
  Time pp_exposed;       // pipeline send/recv waited on
  Time ep_exposed;       // expert-parallel dispatch/combine all-to-all (blocking)
  Time offload_exposed;  // offload (gradient D2H, host optimizer step, NVMe, parameter H2D) not hidden
  Time bubble;           // idle, waiting on other pipeline stages
  Time other;
  Time input_stall;      // waiting for the input pipeline (training.data_loader; input_pipeline.h)
  Time compute() const { return gemm + attention + memory_bound + optimizer; }
  Time total() const;
};

struct Options {
  bool keep_trace = false;  // keep the trace and replay in the result (for --trace)
  // Replay a plan even when the memory model says it does not fit (validation
  // of runs that did run); the result is still marked out_of_memory.
  bool simulate_if_out_of_memory = false;
  std::string network = "analytic";  // "analytic" or "simgrid" (flow-level, contention)
};

struct SimulationResult {
  config::ScenarioConfig scenario;
  std::string network_model;   // "analytic"
  std::vector<std::string> notes;  // choices stacksim made, warnings

  bool out_of_memory = false;
  std::vector<StageMemory> memory;  // per pipeline stage
  Bytes capacity;                   // HBM per GPU
  // Offload: per pipeline stage, what one GPU keeps in host memory and on
  // NVMe (empty without offload); the fullest node's sums.
  std::vector<Bytes> host_offload, nvme_offload;
  Bytes host_offload_per_node;
  Bytes nvme_offload_per_node;

  Time iteration;              // one optimizer step
  double tokens_per_s = 0;
  double tokens_per_s_per_gpu = 0;
  Flops model_flops;           // per step, whole job, without recomputation (MFU)
  Flops hardware_flops;        // per step, whole job, with recomputation (HFU)
  double mfu = 0;              // model FLOP/s per GPU / dense peak
  double hfu = 0;
  double model_tflops_per_gpu = 0;

  Breakdown breakdown;          // of the slowest simulated rank
  int breakdown_stage = 0;
  std::vector<Breakdown> per_stage;
  // training.data_loader: the input pipeline, and the stall it adds to the
  // replayed step (iteration includes it).
  std::optional<InputPipeline> input;
  // Nsight-style figures (utilization.h): of the breakdown rank, and per stage.
  Utilization utilization;
  std::vector<Utilization> per_stage_utilization;
  std::vector<std::string> algorithms;  // collective algorithm choices
  std::vector<std::string> bottlenecks; // flow-level network: links where contention added time

  // Mixture of experts (zero / one for dense models).
  double moe_load_factor = 1.0;   // tokens on the busiest EP rank / mean (or the capacity factor)
  double moe_dropped_fraction = 0;  // routed tokens over capacity (capacity-factor mode)
  // Time the breakdown rank spends because routing is not balanced: its expert
  // GEMMs, expert activations and all-to-alls scale with the load factor, so
  // their time x (1 - 1/factor) (to first order: GEMM quantization aside).
  Time moe_imbalance_cost;
  Time moe_expert_time;           // that rank's grouped expert GEMMs and activations
  Time moe_alltoall_time;         // that rank's EP dispatch/combine collectives, hidden or not (any stream)

  // plan.dp_sync other than every-step, or a token budget (training.tokens):
  // the step what-if and the time to the budget (dp_sync_step.h).
  std::optional<DpSyncResult> dp_sync;

  size_t tasks = 0;
  int simulated_ranks = 0;
  double wall_seconds = 0;     // time stacksim took

  std::shared_ptr<const trace::Trace> trace;         // with Options::keep_trace
  std::shared_ptr<const engine::ReplayResult> replay;
};

// Throws InputError for scenarios that cannot run (validated first).
SimulationResult Simulate(const config::ScenarioConfig& scenario, const Options& options = {});

}  // namespace stacksim::simulate

#endif  // STACKSIM_SIM_SIMULATE_SIMULATE_H_
