// Speed of the fabric graph at 16,384 GPUs: building it (fat tree, torus,
// dragonfly), its bisection by max-flow, and the whole `stacksim topology`
// summary (bisection, diameter from 257 GPUs, injection, oversubscription).
//   build/bench/fabric_bench
// Target (issue 20): routing and platform construction for 16,384 GPUs
// within a second; graph construction is the part built so far.
#include <benchmark/benchmark.h>

#include <string>

#include "sim/config/topology.h"
#include "sim/fabric/fabric_metrics.h"
#include "sim/fabric/generators.h"
#include "sim/fabric/routing.h"

namespace {

using namespace stacksim;

config::TopologyConfig DgxH100() {
  return config::LoadTopologyFile(std::string(STACKSIM_SOURCE_DIR) + "/topologies/dgx-h100.json");
}

fabric::FabricGraph Torus16k() {
  return fabric::Torus({{16, 32, 32}, fabric::LinkKind::kIci, Bandwidth{75e9}, Time::Ns(1000)});
}

// 32 groups x 32 routers x 2 nodes x 8 GPUs = 16,384 GPUs; 31 global links per router.
fabric::FabricGraph Dragonfly16k(const config::TopologyConfig& t) {
  return fabric::Dragonfly(t, {32, 32, 2, 31, fabric::LinkKind::kInfiniBand, Bandwidth{50e9}, Bandwidth{50e9},
                               Time::Ns(500)});
}

void BM_BuildFatTree_16384Gpus(benchmark::State& state) {
  config::TopologyConfig t = DgxH100();
  for (auto _ : state) benchmark::DoNotOptimize(fabric::FatTree(t, 2048));
}

void BM_BuildTorus_16384Gpus(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(Torus16k());
}

void BM_BuildDragonfly_16384Gpus(benchmark::State& state) {
  config::TopologyConfig t = DgxH100();
  for (auto _ : state) benchmark::DoNotOptimize(Dragonfly16k(t));
}

void BM_BisectionFatTree_16384Gpus(benchmark::State& state) {
  fabric::FabricGraph f = fabric::FatTree(DgxH100(), 2048);
  for (auto _ : state) state.counters["TBps"] = fabric::BisectionBandwidth(f).value / 1e12;
}

void BM_SummarizeFatTree_16384Gpus(benchmark::State& state) {
  fabric::FabricGraph f = fabric::FatTree(DgxH100(), 2048);
  for (auto _ : state) benchmark::DoNotOptimize(fabric::Summarize(f));
}

void BM_SummarizeTorus_16384Gpus(benchmark::State& state) {
  fabric::FabricGraph f = Torus16k();
  for (auto _ : state) benchmark::DoNotOptimize(fabric::Summarize(f));
}

void BM_SummarizeDragonfly_16384Gpus(benchmark::State& state) {
  fabric::FabricGraph f = Dragonfly16k(DgxH100());
  for (auto _ : state) benchmark::DoNotOptimize(fabric::Summarize(f));
}

// One GPU's ECMP route to a GPU in another pod and on another rail.
void BM_RouteFatTree_16384Gpus(benchmark::State& state) {
  fabric::FabricGraph f = fabric::FatTree(DgxH100(), 2048);
  for (auto _ : state) benchmark::DoNotOptimize(fabric::ShortestRoute(f, f.gpus[0], f.gpus[16383]));
}

BENCHMARK(BM_RouteFatTree_16384Gpus)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_BuildFatTree_16384Gpus)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_BuildTorus_16384Gpus)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_BuildDragonfly_16384Gpus)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_BisectionFatTree_16384Gpus)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SummarizeFatTree_16384Gpus)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SummarizeTorus_16384Gpus)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SummarizeDragonfly_16384Gpus)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
