// Speed of the fabric graph at 16,384 GPUs: building it (fat tree, torus,
// dragonfly), its bisection by max-flow, and the whole `stacksim topology`
// summary (bisection, diameter from 257 GPUs, injection, oversubscription).
//   build/bench/fabric_bench
// Target (issue 20): routing and platform construction for 16,384 GPUs
// within a second: BM_RouteAndPlatform_* build the graph, route and price
// a ring over all 16,384 GPUs and a data-parallel ring (stride 8) with its
// 8 sibling copies for the analytic model (graph_pricing.h), and build the
// SimGrid platform's links and one path per ring flow (graph_platform.h;
// SimGrid's own engine runs once per process and is not built here).
#include <benchmark/benchmark.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sim/config/topology.h"
#include "sim/fabric/fabric_metrics.h"
#include "sim/fabric/generators.h"
#include "sim/fabric/graph_spec.h"
#include "sim/fabric/routing.h"
#include "sim/net/graph_platform.h"
#include "sim/net/graph_pricing.h"

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

trace::CommGroup Ring(int64_t stride, int size, int siblings) {
  trace::CommGroup g;
  g.name = "ring";
  g.size = size;
  g.stride = stride;
  g.siblings = siblings;
  g.sibling_stride = 1;
  return g;
}

void RouteAndPlatform(benchmark::State& state, const config::TopologyConfig& t,
                      const std::function<fabric::FabricGraph()>& build) {
  for (auto _ : state) {
    auto f = std::make_shared<const net::GraphFabric>(build(), t, 0.82, 0.94);
    net::GraphPricing pricing(f, Time::Us(2), Time::Us(3.4));
    const double whole = pricing.RingSecondsPerByte(Ring(1, 16384, 1));
    const double dp = pricing.RingSecondsPerByte(Ring(8, 2048, 8));
    net::GraphPlatform platform(f);
    std::vector<int32_t> path;
    for (int64_t g = 0; g < 16384; ++g) platform.RouteLinks(g, (g + 1) % 16384, &path);
    state.counters["ring_GBps"] = 1e-9 / whole;
    state.counters["dp_ring_GBps"] = 1e-9 / dp;
    state.counters["routes"] = static_cast<double>(f->router().routed_pairs());
    state.counters["links"] = static_cast<double>(platform.links().size());
  }
}

void BM_RouteAndPlatform_RailOnly_16384Gpus(benchmark::State& state) {
  config::TopologyConfig t =
      config::LoadTopologyFile(std::string(STACKSIM_SOURCE_DIR) + "/topologies/dgx-h100-rail-only.json");
  RouteAndPlatform(state, t, [&] { return fabric::BuildFabric(t, 2048); });
}

void BM_RouteAndPlatform_Torus_16384Gpus(benchmark::State& state) {
  config::TopologyConfig t = DgxH100();
  RouteAndPlatform(state, t, [] { return Torus16k(); });
}

void BM_RouteAndPlatform_Dragonfly_16384Gpus(benchmark::State& state) {
  config::TopologyConfig t = DgxH100();
  RouteAndPlatform(state, t, [&] { return Dragonfly16k(t); });
}

BENCHMARK(BM_RouteAndPlatform_RailOnly_16384Gpus)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_RouteAndPlatform_Torus_16384Gpus)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_RouteAndPlatform_Dragonfly_16384Gpus)->Unit(benchmark::kMillisecond);
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
