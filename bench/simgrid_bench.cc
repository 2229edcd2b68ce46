// Wall time of one training step replayed with the SimGrid network model
// (trace generation excluded; platform construction and replay included).
// SimGrid allows one simulation per process, so run one benchmark per
// process:
//   build/simgrid_bench --benchmark_filter=1024
//   build/simgrid_bench --benchmark_filter=16384
// Targets (issue 4): 1024 GPUs at most 60 s on the 2-core machine; 16,384 GPUs finishes.
#include <benchmark/benchmark.h>

#include <stdexcept>
#include <string>

#include "sim/config/scenario.h"
#include "sim/cost/profile_cost_model.h"
#include "sim/engine/engine.h"
#include "sim/net/simgrid_network.h"
#include "sim/workload/training_step.h"

namespace {

void ReplayWithSimGrid(benchmark::State& state, const std::string& name) {
  auto scenario = stacksim::config::LoadScenario(std::string(STACKSIM_SOURCE_DIR) + "/scenarios/" + name, {});
  auto trace = stacksim::workload::BuildTrainingStep(scenario);
  stacksim::cost::ProfileCostModel cost(scenario.profile, scenario.plan.cuda_graphs);
  auto network = stacksim::net::MakeSimGridNetwork(scenario.topology, scenario.profile, scenario.gpus, scenario.node_order);
  stacksim::engine::Engine engine(cost, *network);
  for (auto _ : state) {
    try {
      auto result = engine.Replay(trace);
      state.counters["step_s"] = result.makespan.seconds();
      state.counters["bottlenecks"] = static_cast<double>(result.bottlenecks.size());
    } catch (const std::logic_error& e) {
      state.SkipWithError(e.what());
      break;
    }
  }
  state.counters["tasks"] = static_cast<double>(trace.size());
}

void BM_SimGrid_Gpt3_175B_1024xH100(benchmark::State& state) { ReplayWithSimGrid(state, "gpt3-175b-1024xh100.json"); }
void BM_SimGrid_Llama3_405B_16384xH100(benchmark::State& state) {
  ReplayWithSimGrid(state, "llama3-405b-16384xh100.json");
}

BENCHMARK(BM_SimGrid_Gpt3_175B_1024xH100)->Unit(benchmark::kSecond)->Iterations(1);
BENCHMARK(BM_SimGrid_Llama3_405B_16384xH100)->Unit(benchmark::kSecond)->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
