// The accounting of one simulated training step on its breakdown rank (the
// pipeline stage with the most compute, as SimulationResult.breakdown): per-op
// statistics of the compute stream (simulated time, time at peak, launch and
// eager-kernel excess, roofline class), recomputation, the context-parallel
// part of TP's exposed time, and how long each kind of communication kept
// which links busy. What the five-layer split and the remedy rules read.
//
// Times are stacksim::Time; FLOPs and bytes are plain counts over all calls;
// peak is FLOP/s. Owns its copies; keeps nothing of the trace.
#ifndef STACKSIM_SIM_DIAGNOSE_STEP_ACCOUNTING_H_
#define STACKSIM_SIM_DIAGNOSE_STEP_ACCOUNTING_H_

#include <map>
#include <string>
#include <vector>

#include "sim/simulate/simulate.h"
#include "sim/trace/trace.h"
#include "sim/util/units.h"

namespace stacksim::diagnose {

// Which roof an op sits under: its FLOPs at peak, its bytes at memory
// bandwidth, or kernel issue (launch time beyond kernel time is over half its
// time).
enum class Roofline { kCompute, kMemory, kLaunch };
// "compute", "memory", "launch".
const char* RooflineName(Roofline r);

// One op name on the breakdown rank's compute stream (all layers and
// micro-batches together).
struct OpStat {
  std::string name;         // trace task name, e.g. "fc1", "recompute-attention"
  bool recompute = false;   // re-run in the backward pass (trace::Task::recompute)
  Roofline roofline = Roofline::kCompute;
  int64_t calls = 0;
  int64_t kernels = 0;      // kernel launches over all calls
  Time time;                // simulated
  Time ideal;               // its FLOPs at the plan precision's dense peak
  Time launch_excess;       // issue time beyond kernel time (launch-bound part)
  Time eager_excess;        // eager kernel time beyond the fused kernel's
  double flops = 0;         // over all calls
  double bytes = 0;
};

// How long one kind of communication (a task role) was busy on the breakdown
// rank, and the links it crossed: "NVLink", "PCIe" or "NIC", joined by "+"
// when it crossed more than one.
struct CommBusy {
  Time busy;
  std::string links;
};

struct StepAccounting {
  double peak = 0;           // FLOP/s: dense peak of the plan's precision (tf32 for fp32)
  std::vector<OpStat> ops;   // by time beyond ideal, largest first (then by name)
  // Over the non-recomputed ops.
  Time launch_excess;
  Time eager_excess;
  Time recompute;            // recomputed ops' time
  // Context-parallel K/V traffic inside TP's exposed time (its collectives
  // are TP-role tasks on CP groups): blocking ones on the compute stream, and
  // compute waiting on one off it; at most TP's exposed time.
  Time cp_exposed;
  Time rank_ideal;           // the rank's non-recomputed FLOPs at peak
  Time mean_stage;           // the same, averaged over the simulated stages
  // Time of the non-recomputed ops beyond ideal, launch and eager excess, by
  // roofline class.
  Time memory_class;
  Time compute_class;
  Time launch_class;
  std::map<trace::TaskRole, CommBusy> comm_busy;
  std::string tp_link;       // TP traffic's links ("" without TP traffic)
};

// REQUIRES: result kept its trace and replay (simulate::Options::keep_trace).
StepAccounting AccountStep(const simulate::SimulationResult& result);

}  // namespace stacksim::diagnose

#endif  // STACKSIM_SIM_DIAGNOSE_STEP_ACCOUNTING_H_
