// Wall time of the scale limits (hardening issue): one training step of
// Llama 3.1 405B on 131,072 GPUs (dp 1,024: symmetry keeps one rank per
// pipeline stage, 105K tasks) and of a 1,000-layer model over 125 pipeline
// stages (125 micro-batches per replica: 4.7M tasks), with everything but the
// scenario loading timed (trace, memory model, replay, attribution). The
// straggler and SimGrid cases expand ranks and links and are slower; SimGrid
// allows one simulation per process, so run that one alone:
//   build/bench/scale_bench --benchmark_filter='Analytic|Stragglers'
//   build/bench/scale_bench --benchmark_filter=SimGrid
// Measured wall time and peak memory are in docs/scale.md.
#include <benchmark/benchmark.h>

#include <stdexcept>
#include <string>

#include "sim/config/scenario.h"
#include "sim/simulate/simulate.h"
#include "sim/straggler/straggler.h"
#include "sim/straggler/straggler_spec.h"

namespace {

stacksim::config::ScenarioConfig Load(const std::string& name) {
  return stacksim::config::LoadScenario(std::string(STACKSIM_SOURCE_DIR) + "/scenarios/" + name, {});
}

void SimulateScenario(benchmark::State& state, const std::string& name, const std::string& network) {
  const auto scenario = Load(name);
  stacksim::simulate::Options options;
  options.network = network;
  size_t tasks = 0;
  for (auto _ : state) {
    try {
      auto result = stacksim::simulate::Simulate(scenario, options);
      tasks = result.tasks;
      state.counters["step_s"] = result.iteration.seconds();
    } catch (const std::logic_error& e) {  // a second SimGrid run in this process
      state.SkipWithError(e.what());
      break;
    }
  }
  state.counters["tasks"] = static_cast<double>(tasks);
}

void BM_Analytic_Llama3_405B_131072xB200(benchmark::State& state) {
  SimulateScenario(state, "llama3-405b-131072xb200.json", "analytic");
}
void BM_Analytic_Deep1000Layers_1000xH100(benchmark::State& state) {
  SimulateScenario(state, "deep-1000-layer-1000xh100.json", "analytic");
}
void BM_SimGrid_Llama3_405B_131072xB200(benchmark::State& state) {
  SimulateScenario(state, "llama3-405b-131072xb200.json", "simgrid");
}

// 0.1% of the 16,384 nodes 1.5x slower: 16 slow replicas cloned out of 1,024.
void BM_Stragglers_Llama3_405B_131072xB200(benchmark::State& state) {
  const auto scenario = Load("llama3-405b-131072xb200.json");
  const auto spec = stacksim::straggler::ParseStragglerText("0.1%:1.5x", "--stragglers");
  stacksim::straggler::StragglerOptions options;
  for (auto _ : state) {
    auto result = stacksim::straggler::AnalyzeStragglers(scenario, spec, options);
    state.counters["step_s"] = result.mean.seconds();
    state.counters["replays"] = static_cast<double>(result.replays);
  }
}

BENCHMARK(BM_Analytic_Llama3_405B_131072xB200)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_Analytic_Deep1000Layers_1000xH100)->Unit(benchmark::kSecond)->Iterations(1);
BENCHMARK(BM_Stragglers_Llama3_405B_131072xB200)->Unit(benchmark::kSecond)->Iterations(1);
BENCHMARK(BM_SimGrid_Llama3_405B_131072xB200)->Unit(benchmark::kSecond)->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
