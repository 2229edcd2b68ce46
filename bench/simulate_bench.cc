// Wall time of one simulated training step of the flagship scenarios and of
// the MoE one (DeepSeek-V3 on 2048 H800 with DualPipe, EP 64):
// scenario already loaded, everything else (trace generation, memory model,
// replay, attribution) timed. Target: at most 1 s per step on a 2-core machine.
// BM_BuildTrace_*: the trace generation alone (workload::BuildTrainingStep),
// with the bytes its tasks and dependencies take per task (Trace::StorageBytes).
#include <benchmark/benchmark.h>

#include <string>

#include "sim/config/scenario.h"
#include "sim/simulate/simulate.h"
#include "sim/workload/training_step.h"

namespace {

void SimulateScenario(benchmark::State& state, const std::string& name) {
  auto scenario = stacksim::config::LoadScenario(std::string(STACKSIM_SOURCE_DIR) + "/scenarios/" + name, {});
  size_t tasks = 0;
  for (auto _ : state) {
    auto result = stacksim::simulate::Simulate(scenario);
    tasks = result.tasks;
    benchmark::DoNotOptimize(result.iteration);
  }
  state.counters["tasks"] = static_cast<double>(tasks);
  state.counters["tasks_per_s"] = benchmark::Counter(static_cast<double>(tasks) * state.iterations(),
                                                     benchmark::Counter::kIsRate);
}

void BM_Gpt3_175B_1024xH100(benchmark::State& state) { SimulateScenario(state, "gpt3-175b-1024xh100.json"); }
void BM_Llama3_405B_16384xH100(benchmark::State& state) { SimulateScenario(state, "llama3-405b-16384xh100.json"); }
void BM_DeepSeekV3_2048xH800(benchmark::State& state) { SimulateScenario(state, "deepseek-v3-2048xh800.json"); }

void BuildTrace(benchmark::State& state, const std::string& name) {
  auto scenario = stacksim::config::LoadScenario(std::string(STACKSIM_SOURCE_DIR) + "/scenarios/" + name, {});
  size_t tasks = 0, bytes = 0;
  for (auto _ : state) {
    stacksim::trace::Trace t = stacksim::workload::BuildTrainingStep(scenario);
    tasks = t.size();
    bytes = t.StorageBytes();
    benchmark::DoNotOptimize(tasks);
  }
  state.counters["tasks"] = static_cast<double>(tasks);
  state.counters["bytes_per_task"] = static_cast<double>(bytes) / static_cast<double>(tasks);
  state.counters["tasks_per_s"] = benchmark::Counter(static_cast<double>(tasks) * state.iterations(),
                                                     benchmark::Counter::kIsRate);
}

void BM_BuildTrace_Gpt3_175B_1024xH100(benchmark::State& state) { BuildTrace(state, "gpt3-175b-1024xh100.json"); }
void BM_BuildTrace_DeepSeekV3_2048xH800(benchmark::State& state) { BuildTrace(state, "deepseek-v3-2048xh800.json"); }

BENCHMARK(BM_Gpt3_175B_1024xH100)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_Llama3_405B_16384xH100)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_DeepSeekV3_2048xH800)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_BuildTrace_Gpt3_175B_1024xH100)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_BuildTrace_DeepSeekV3_2048xH800)->Unit(benchmark::kMillisecond)->MinTime(2.0);

}  // namespace

BENCHMARK_MAIN();
