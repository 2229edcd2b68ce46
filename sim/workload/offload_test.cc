// Offload of the optimizer (and ZeRO-Infinity parameters) to host memory and
// NVMe: GPU memory, host footprint, the step time with and without overlap,
// NVMe against host, and the errors for plans a node cannot run.
#include "sim/workload/offload.h"

#include <string>

#include <gtest/gtest.h>

#include "sim/engine/engine.h"
#include "sim/memory/memory_model.h"
#include "sim/simulate/simulate.h"
#include "sim/workload/training_step.h"
#include "tests/fixtures.h"
#include "tests/input_error.h"

namespace stacksim::workload {
namespace {

using config::OffloadTarget;

// Round numbers: PCIe copies at 50 GB/s (the profile's host_bandwidth, below
// the 64 GB/s link), host DRAM 800 GB/s x 0.7 / 8 GPUs = 70 GB/s per GPU,
// NVMe 16 / 8 = 2 GB/s read and 8 / 8 = 1 GB/s write per GPU.
constexpr double kPcie = 50e9;
constexpr double kHostPerGpu = 800e9 * kHostMemoryEfficiency / 8;
constexpr double kNvmeRead = 2e9, kNvmeWrite = 1e9;

config::TopologyConfig OffloadTopology() {
  config::TopologyConfig t = testing::DgxTopology();
  t.host = config::HostResources{Bytes{2e12}, Bandwidth{800e9}};
  t.nvme = config::NvmeStorage{Bytes{30e12}, Bandwidth{16e9}, Bandwidth{8e9}};
  return t;
}

// 4 GPT layers of hidden 1024 (vocabulary 32000, tied) on 8 GPUs, data-
// parallel, distributed optimizer: 85.25M parameters, a shard of 10.66M per
// GPU. 8 x 1024 tokens per micro-batch, so that each layer's backward
// (~0.5 ms) is longer than its gradient shard's copy (~0.13 ms); 40 MB
// buckets, so each layer's gradients (50 MB in fp32) are reduced as soon as
// they exist, and the embedding's (131 MB) last.
config::ScenarioConfig Small(OffloadTarget target, bool overlap) {
  config::PlanConfig plan;
  plan.dp = 8;
  plan.micro_batch = 8;
  plan.global_batch = 64;
  plan.sharding = config::Sharding::kZero1;
  plan.grad_bucket = Bytes{40e6};
  plan.offload_optimizer = target;
  plan.overlap_offload = overlap;
  auto s = testing::Scenario(testing::GptModel(4, 1024, 16, 32000), 8, 1024, plan);
  s.file = "x.json";
  s.topology = OffloadTopology();
  return s;
}

double ShardParams(const config::ScenarioConfig& s) { return static_cast<double>(StageParameters(s, 0)) / 8; }

struct StepRun {
  simulate::SimulationResult result;
  double optimizer_s = 0;  // the GPU optimizer task
  double last_d2h_s = 0;   // the gradient copy that ended last
  double d2h_s = 0;        // all gradient copies
};

StepRun Simulate(const config::ScenarioConfig& s) {
  simulate::Options options;
  options.keep_trace = true;
  StepRun run{simulate::Simulate(s, options)};
  const trace::Trace& t = *run.result.trace;
  Time last_end = Time::Zero();
  for (size_t i = 0; i < t.size(); ++i) {
    const auto& timing = run.result.replay->timings[i];
    const double d = (timing.end - timing.start).seconds();
    const std::string& name = t.name(t.task(static_cast<trace::TaskId>(i)).name);
    if (name == "optimizer-step") run.optimizer_s = d;
    if (name == "offload-grad-d2h") {
      run.d2h_s += d;
      if (timing.end > last_end) {
        last_end = timing.end;
        run.last_d2h_s = d;
      }
    }
  }
  return run;
}

TEST(Offload, GpuMemoryDropsByTheOffloadedOptimizerState) {
  auto s = Small(OffloadTarget::kNone, true);
  const auto gpu = memory::EstimateMemory(s)[0];
  const double shard = ShardParams(s);
  s.plan.offload_optimizer = OffloadTarget::kHost;
  s.plan.offload_optimizer_fraction = 0.25;
  const auto off = memory::EstimateMemory(s)[0];
  // bf16 training: fp32 master + two moments = 12 bytes per parameter of the
  // rank's shard; a quarter of it leaves.
  EXPECT_DOUBLE_EQ(gpu.optimizer.value, 12 * shard);
  EXPECT_DOUBLE_EQ(gpu.optimizer.value - off.optimizer.value, 0.25 * 12 * shard);
  EXPECT_EQ(off.weights, gpu.weights);
  EXPECT_EQ(off.gradients, gpu.gradients);
  EXPECT_EQ(off.activations, gpu.activations);
  // The host holds that state plus the fp32 gradient copy: 0.25 x 16 B/param
  // per GPU, 8 GPUs per node.
  const auto host = memory::EstimateOffload(s);
  ASSERT_EQ(host.size(), 1u);
  EXPECT_DOUBLE_EQ(host[0].host.value, 0.25 * (12 + 4) * shard);
  EXPECT_EQ(host[0].nvme.value, 0.0);
  EXPECT_DOUBLE_EQ(memory::OffloadOfFullestNode(s).host.value, 8 * 0.25 * 16 * shard);
  // To NVMe: the state goes to the drives, the gradient copy stays in DRAM.
  s.plan.offload_optimizer = OffloadTarget::kNvme;
  EXPECT_DOUBLE_EQ(memory::EstimateOffload(s)[0].nvme.value, 0.25 * 12 * shard);
  EXPECT_DOUBLE_EQ(memory::EstimateOffload(s)[0].host.value, 0.25 * 4 * shard);
}

TEST(Offload, ParameterOffloadLeavesOnlyTheGatheredLayers) {
  auto s = Small(OffloadTarget::kNone, true);
  s.plan.sharding = config::Sharding::kZero3;
  const auto gpu = memory::EstimateMemory(s)[0];
  const double P = static_cast<double>(StageParameters(s, 0));
  s.plan.offload_optimizer = OffloadTarget::kHost;
  s.plan.offload_params = OffloadTarget::kNvme;
  const auto off = memory::EstimateMemory(s)[0];
  EXPECT_DOUBLE_EQ(gpu.weights.value - off.weights.value, 2 * P / 8);  // the bf16 shard
  EXPECT_DOUBLE_EQ(off.optimizer.value, 0.0);
  // Host: state + the bf16 gradient (ZeRO-3 reduces in the training
  // precision); NVMe: the bf16 parameter shard.
  EXPECT_DOUBLE_EQ(memory::EstimateOffload(s)[0].host.value, (12 + 2) * P / 8);
  EXPECT_DOUBLE_EQ(memory::EstimateOffload(s)[0].nvme.value, 2 * P / 8);
  // The step runs, each gather fetching its shard first (from NVMe, then H2D).
  auto r = simulate::Simulate(s, {});
  EXPECT_GT(r.iteration.seconds(), 0.0);
}

// Without overlap the gradient copy, the host Adam step and the parameter copy
// follow one another after the gradients are reduced; the GPU's own step
// (nothing left of it but its launches) runs meanwhile. By hand: the step
// grows by D2H + host + H2D, less the GPU optimizer step it no longer runs.
TEST(Offload, StepGrowsByTheTransfersWhenNotOverlapped) {
  const StepRun base = Simulate(Small(OffloadTarget::kNone, false));
  const auto s = Small(OffloadTarget::kHost, false);
  const StepRun off = Simulate(s);
  const double shard = ShardParams(s);
  const double d2h = shard * 4 / kPcie;          // fp32 main gradients
  const double host = shard * 30 / kHostPerGpu;  // CPU Adam: 2 x 12 + 4 + 2 bytes per parameter
  const double h2d = shard * 2 / kPcie;          // bf16 parameters back
  EXPECT_NEAR(off.d2h_s, d2h, 1e-8);
  const double grown = off.result.iteration.seconds() - base.result.iteration.seconds();
  EXPECT_NEAR(grown, d2h + host + h2d - base.optimizer_s, 1e-7);
  // The wait after the GPU's step is charged to offload.
  EXPECT_NEAR(off.result.breakdown.offload_exposed.seconds(), d2h + host + h2d - off.optimizer_s, 1e-7);
  EXPECT_NEAR(off.result.breakdown.total().seconds(), off.result.iteration.seconds(), 1e-8);
  EXPECT_EQ(base.result.breakdown.offload_exposed, Time::Zero());
  // Numbers: 10.66M parameters per shard: 0.85 + 4.57 + 0.43 ms.
  EXPECT_NEAR(shard, 10.66e6, 0.01e6);
  EXPECT_NEAR(d2h + host + h2d, 5.85e-3, 0.01e-3);
}

// With overlap each bucket's shard goes D2H as soon as its reduce-scatter
// ends, behind the rest of the backward: only the last bucket's copy (the
// embedding's, 40% of the bytes) is left on the critical path.
TEST(Offload, OverlapHidesTheGradientCopyBehindTheBackward) {
  const StepRun base = Simulate(Small(OffloadTarget::kNone, true));
  const auto s = Small(OffloadTarget::kHost, true);
  const StepRun on = Simulate(s);
  const StepRun off = Simulate(Small(OffloadTarget::kHost, false));
  const double shard = ShardParams(s);
  const double host = shard * 30 / kHostPerGpu;
  const double h2d = shard * 2 / kPcie;  // one chunk (shard < 128 Mi parameters): not hidden
  EXPECT_NEAR(on.d2h_s, shard * 4 / kPcie, 1e-7);  // the same bytes, in pieces
  EXPECT_LT(on.last_d2h_s, 0.45 * on.d2h_s);
  const double grown = on.result.iteration.seconds() - base.result.iteration.seconds();
  EXPECT_NEAR(grown, on.last_d2h_s + host + h2d - base.optimizer_s, 1e-7);
  EXPECT_NEAR(off.result.iteration.seconds() - on.result.iteration.seconds(), on.d2h_s - on.last_d2h_s, 1e-7);
}

TEST(Offload, NvmeIsSlowerThanHostMemoryByTheStateReadAndWrite) {
  const auto s = Small(OffloadTarget::kHost, false);
  const StepRun host = Simulate(s);
  const StepRun nvme = Simulate(Small(OffloadTarget::kNvme, false));
  const double shard = ShardParams(s);
  // ZeRO-Infinity: fp32 master and moments (12 B/param) read before and
  // written after the host step, at the drives' per-GPU share.
  const double io = shard * 12 / kNvmeRead + shard * 12 / kNvmeWrite;
  EXPECT_NEAR(nvme.result.iteration.seconds() - host.result.iteration.seconds(), io, 1e-7);
  EXPECT_GT(nvme.result.iteration.seconds(), 2 * host.result.iteration.seconds());
}

// One rank, a 1 ms backward, then an offloaded shard of four host-step chunks
// (DeepSpeed's CPU Adam tile: 128 Mi parameters), replayed on its own.
engine::ReplayResult ReplayShard(OffloadTarget target, bool overlap) {
  auto s = Small(target, overlap);
  trace::Trace t;
  t.SetRankCount(1);
  trace::Task bwd;
  bwd.stream = t.InternStream("compute");
  bwd.label = t.InternLabel("gemm");
  bwd.compute.flops = Flops{1e9};
  const trace::TaskId last = t.Add(bwd);
  EmitOffloadedOptimizerStep(t, s, 0, 4 * kOffloadChunkParams, {last}, last);
  EXPECT_EQ(t.Check(), "");
  engine::FixedCostModel cost(FlopRate{1e12});
  engine::FixedNetworkModel net(Time::Zero(), Bandwidth{1e9});
  return engine::Engine(cost, net).Replay(t);
}

TEST(Offload, ChunksPipelineTheParameterCopyBehindTheHostStep) {
  const double chunk = kOffloadChunkParams;
  const double d2h = 4 * chunk * 4 / kPcie, host = chunk * 30 / kHostPerGpu, h2d = chunk * 2 / kPcie;
  // Overlapped: each chunk's parameters go H2D while the next chunk steps.
  EXPECT_NEAR(ReplayShard(OffloadTarget::kHost, true).makespan.seconds(), 1e-3 + d2h + 4 * host + h2d, 1e-7);
  EXPECT_NEAR(ReplayShard(OffloadTarget::kHost, false).makespan.seconds(), 1e-3 + d2h + 4 * (host + h2d), 1e-7);
  // NVMe: the drives are the bottleneck; overlapped they stay busy (reads one
  // chunk ahead, each write after its chunk's step), hiding the host step.
  const double read = chunk * 12 / kNvmeRead, write = chunk * 12 / kNvmeWrite;
  EXPECT_NEAR(ReplayShard(OffloadTarget::kNvme, true).makespan.seconds(), 1e-3 + d2h + 4 * (read + write), 1e-7);
  EXPECT_NEAR(ReplayShard(OffloadTarget::kNvme, false).makespan.seconds(),
              1e-3 + d2h + 4 * (read + host + write + h2d), 1e-7);
}

TEST(Offload, FractionSplitsTheStepBetweenGpuAndHost) {
  auto s = Small(OffloadTarget::kHost, false);
  s.plan.offload_optimizer_fraction = 0.5;
  const StepRun half = Simulate(s);
  const StepRun full = Simulate(Small(OffloadTarget::kHost, false));
  const double shard = ShardParams(s);
  // Half the copies and half the host step; the GPU steps the other half.
  EXPECT_NEAR(half.d2h_s, 0.5 * shard * 4 / kPcie, 1e-8);
  EXPECT_GT(half.optimizer_s, full.optimizer_s);
  EXPECT_LT(half.result.iteration, full.result.iteration);
}

TEST(Offload, NodeWithoutHostResourcesCannotOffload) {
  auto s = Small(OffloadTarget::kHost, true);
  s.topology.host.reset();
  InputError e = testing::ErrorFrom([&] { config::ValidatePlan(s, s.file); });
  EXPECT_EQ(e.file(), "x.json");
  EXPECT_EQ(e.key_path(), "plan.offload_optimizer");
  EXPECT_NE(std::string(e.what()).find("node.host"), std::string::npos);

  s = Small(OffloadTarget::kNvme, true);
  s.topology.nvme.reset();
  e = testing::ErrorFrom([&] { config::ValidatePlan(s, s.file); });
  EXPECT_EQ(e.key_path(), "plan.offload_optimizer");
  EXPECT_NE(std::string(e.what()).find("node.nvme"), std::string::npos);

  s = Small(OffloadTarget::kHost, true);
  s.plan.sharding = config::Sharding::kZero3;
  s.plan.offload_params = OffloadTarget::kNvme;
  s.topology.nvme.reset();
  e = testing::ErrorFrom([&] { config::ValidatePlan(s, s.file); });
  EXPECT_EQ(e.key_path(), "plan.offload_params");
  EXPECT_NE(std::string(e.what()).find("node.nvme"), std::string::npos);
}

TEST(Offload, PlansTheFrameworksCannotRunAreErrors) {
  auto s = Small(OffloadTarget::kHost, true);
  s.plan.sharding = config::Sharding::kNone;
  InputError e = testing::ErrorFrom([&] { config::ValidatePlan(s, s.file); });
  EXPECT_EQ(e.key_path(), "plan.offload_optimizer");
  EXPECT_NE(std::string(e.what()).find("sharded optimizer"), std::string::npos);

  s = Small(OffloadTarget::kHost, true);
  s.plan.offload_params = OffloadTarget::kHost;  // zero1: no per-layer gathers to fetch for
  e = testing::ErrorFrom([&] { config::ValidatePlan(s, s.file); });
  EXPECT_EQ(e.key_path(), "plan.offload_params");
  EXPECT_NE(std::string(e.what()).find("zero3"), std::string::npos);

  s = Small(OffloadTarget::kNone, true);
  s.plan.sharding = config::Sharding::kZero3;
  s.plan.offload_params = OffloadTarget::kHost;
  EXPECT_EQ(testing::ErrorFrom([&] { config::ValidatePlan(s, s.file); }).key_path(), "plan.offload_params");

  s.plan.offload_optimizer = OffloadTarget::kHost;
  s.plan.offload_optimizer_fraction = 0.5;
  EXPECT_EQ(testing::ErrorFrom([&] { config::ValidatePlan(s, s.file); }).key_path(),
            "plan.offload_optimizer_fraction");
}

TEST(Offload, HostMemoryMustHoldTheNodesOffloadedState) {
  auto s = Small(OffloadTarget::kHost, true);
  const double node = memory::OffloadOfFullestNode(s).host.value;  // 8 GPUs x 16 B x shard: 1.36 GB
  s.topology.host->memory = Bytes{0.9 * node};
  s.topology_file = "topo.json";
  InputError e = testing::ErrorFrom([&] { simulate::Simulate(s, {}); });
  EXPECT_EQ(e.file(), "x.json");
  EXPECT_EQ(e.key_path(), "plan.offload_optimizer");
  EXPECT_NE(std::string(e.what()).find("node.host.memory"), std::string::npos);
  EXPECT_NE(std::string(e.what()).find("topo.json"), std::string::npos);
  s.topology.host->memory = Bytes{1.01 * node};
  EXPECT_NO_THROW(simulate::Simulate(s, {}));

  s = Small(OffloadTarget::kNvme, true);
  s.topology.nvme->capacity = Bytes{1e6};
  e = testing::ErrorFrom([&] { simulate::Simulate(s, {}); });
  EXPECT_EQ(e.key_path(), "plan.offload_optimizer");
  EXPECT_NE(std::string(e.what()).find("node.nvme.capacity"), std::string::npos);
}

}  // namespace
}  // namespace stacksim::workload
