// Wall time of `stacksim search` over a whole plan space, scenario already
// loaded: enumeration, bounds, memory checks and the replays the bounds could
// not rule out, on all cores. Target (issue 6): GPT-3 175B on 1024 H100 in at
// most 10 s on a 2-core machine.
//
// Counters: plans_per_s = enumerated plans (the whole space) per second of
// wall time; candidates_per_s = valid, distinct plans per second;
// replays = simulations run; replays_per_s = simulations per second.
#include <benchmark/benchmark.h>
#include <malloc.h>

#include <string>

#include "sim/config/scenario.h"
#include "sim/search/search.h"

namespace {

using namespace stacksim;

void SearchScenario(benchmark::State& state, const std::string& name, int top, search::Objective objective,
                    int lo_gpus = 0, int hi_gpus = 0) {
  // As the CLI does: keep freed trace memory in the heap.
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  auto scenario = config::LoadScenario(std::string(STACKSIM_SOURCE_DIR) + "/scenarios/" + name, {});
  search::SearchSpace space;
  space.scenario = scenario;
  if (lo_gpus > 0) space.gpu_counts = search::GpuCountsInRange(lo_gpus, hi_gpus, scenario.topology);
  search::SearchOptions options;
  options.top = top;
  options.objective = objective;
  options.economics = search::LookUpEconomics(scenario);
  search::SearchResult r;
  for (auto _ : state) {
    r = search::Search(space, options);
    benchmark::DoNotOptimize(r.plans);
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["enumerated"] = static_cast<double>(r.counts.enumeration.enumerated);
  state.counters["candidates"] = static_cast<double>(r.counts.enumeration.candidates);
  state.counters["replays"] = static_cast<double>(r.counts.simulations);
  state.counters["plans_per_s"] =
      benchmark::Counter(static_cast<double>(r.counts.enumeration.enumerated) * n, benchmark::Counter::kIsRate);
  state.counters["candidates_per_s"] =
      benchmark::Counter(static_cast<double>(r.counts.enumeration.candidates) * n, benchmark::Counter::kIsRate);
  state.counters["replays_per_s"] =
      benchmark::Counter(static_cast<double>(r.counts.simulations) * n, benchmark::Counter::kIsRate);
  state.counters["best_step_s"] = r.plans.empty() ? 0.0 : r.plans[0].step.seconds();
}

void BM_SearchGpt3_175B_1024xH100_Top10(benchmark::State& state) {
  SearchScenario(state, "gpt3-175b-1024xh100.json", 10, search::Objective::kTime);
}
void BM_SearchGpt3_175B_1024xH100_Top20(benchmark::State& state) {
  SearchScenario(state, "gpt3-175b-1024xh100.json", 20, search::Objective::kTime);
}
void BM_SearchLlama3_70B_32to128xA100_Cost(benchmark::State& state) {
  SearchScenario(state, "llama3-70b-64xa100.json", 10, search::Objective::kCost, 32, 128);
}

BENCHMARK(BM_SearchGpt3_175B_1024xH100_Top10)->Unit(benchmark::kSecond)->UseRealTime()->Iterations(3);
BENCHMARK(BM_SearchGpt3_175B_1024xH100_Top20)->Unit(benchmark::kSecond)->UseRealTime()->Iterations(1);
BENCHMARK(BM_SearchLlama3_70B_32to128xA100_Cost)->Unit(benchmark::kSecond)->UseRealTime()->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
