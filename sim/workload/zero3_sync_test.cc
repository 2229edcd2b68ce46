// ZeRO-3 as DeepSpeed v0.3.13 ran it (plan.zero3_gather sync-per-parameter):
// one all-gather and one reduce-scatter per weight tensor, each with the
// list API's per-rank copies, nothing overlapped with compute, and tensors
// re-gathered after the recompute forward by the reuse-distance rule.
// Counts and sizes are checked against hand counts on a 4-layer GPT.
#include <gtest/gtest.h>

#include <map>
#include <utility>

#include "sim/config/scenario.h"
#include "sim/simulate/simulate.h"
#include "sim/workload/training_step.h"
#include "tests/fixtures.h"

namespace stacksim::workload {
namespace {

using trace::CollectiveKind;

constexpr int kHidden = 1024;

config::ScenarioConfig SyncZero3(int dp, config::Recompute recompute) {
  config::ModelConfig model = testing::GptModel(4, kHidden, 16, 32000);
  config::PlanConfig plan;
  plan.dp = dp;
  plan.sharding = config::Sharding::kZero3;
  plan.zero3_gather = config::Zero3Gather::kSyncPerParameter;
  plan.recompute = recompute;
  plan.micro_batch = 1;
  plan.global_batch = dp;
  return testing::Scenario(model, dp, 2048, plan);
}

struct Counts {
  std::vector<double> gathers, scatters;  // bytes, in trace order
  int copies = 0;
  double copy_bytes = 0;
  int copy_kernels = 0;
};

Counts Count(const trace::Trace& t) {
  Counts c;
  for (const auto& task : t.tasks()) {
    if (task.role != trace::TaskRole::kDpComm) continue;
    if (task.kind == trace::TaskKind::kCompute) {
      ++c.copies;
      c.copy_bytes += task.compute.bytes.value;
      c.copy_kernels = task.compute.kernels;
    } else if (task.comm.kind == CollectiveKind::kAllGather) {
      c.gathers.push_back(task.comm.bytes.value);
    } else if (task.comm.kind == CollectiveKind::kReduceScatter) {
      c.scatters.push_back(task.comm.bytes.value);
    }
  }
  return c;
}

// Weights of a GPT layer: QKV 3h^2, projection h^2, fc1 and fc2 4h^2 each.
TEST(Zero3SyncGather, OneGatherAndOneReduceScatterPerWeightTensor) {
  const config::ScenarioConfig s = SyncZero3(8, config::Recompute::kNone);
  const Counts c = Count(BuildTrainingStep(s));
  ASSERT_EQ(c.gathers.size(), 4u * 2 * 4);  // 4 tensors, forward and backward, 4 layers
  ASSERT_EQ(c.scatters.size(), 4u * 4);
  const double layer = static_cast<double>(s.model.LayerParameterCount()) * 2;  // fp16/bf16 bytes
  // Forward order: QKV, projection, fc1, fc2, as shares of the weights.
  EXPECT_NEAR(c.gathers[0], layer * 3 / 12, 1);
  EXPECT_NEAR(c.gathers[1], layer * 1 / 12, 1);
  EXPECT_NEAR(c.gathers[2], layer * 4 / 12, 1);
  EXPECT_NEAR(c.gathers[3], layer * 4 / 12, 1);
  double sum = 0;
  for (double b : c.gathers) sum += b;
  EXPECT_NEAR(sum, layer * 2 * 4, 4 * 8);  // the same bytes as one gather per layer and pass
  // Each collective's list-API copies: every byte read and written, one
  // launch per member of the 8-rank group.
  EXPECT_EQ(c.copies, static_cast<int>(c.gathers.size() + c.scatters.size()));
  EXPECT_EQ(c.copy_kernels, 8);
  double scattered = 0;
  for (double b : c.scatters) scattered += b;
  EXPECT_NEAR(c.copy_bytes, 2 * (sum + scattered), 1e3);
}

// After a layer's recompute forward, tensor i is kept only if the weights
// used before its backward (the later tensors, forward and backward) are
// fewer than zero3_max_reuse_distance elements: fc2 (0 in between), fc1
// (2 x 4h^2 = 8.4M), projection (2 x 8h^2 = 16.8M), QKV (2 x 9h^2 = 18.9M).
TEST(Zero3SyncGather, RecomputeRegathersWhatTheReuseDistanceReleases) {
  config::ScenarioConfig s = SyncZero3(8, config::Recompute::kFull);
  const double h2 = static_cast<double>(kHidden) * kHidden;
  auto gathers = [&](double distance) {
    s.plan.zero3_max_reuse_distance = distance;
    return Count(BuildTrainingStep(s)).gathers.size();
  };
  EXPECT_EQ(gathers(1e12), 4u * 2 * 4);        // all kept: forward and backward gathers only
  EXPECT_EQ(gathers(12 * h2), 4u * (2 * 4 + 2));  // projection and QKV released
  EXPECT_EQ(gathers(0), 4u * (2 * 4 + 4));     // everything released
}

// Synchronous gathers and reduce-scatters add to the compute instead of
// hiding under it, and the breakdown charges the whole wait to DP
// communication (the chain of gathers and copies on the DP stream).
TEST(Zero3SyncGather, NothingOverlapsComputeAndTheWaitIsDpComm) {
  config::ScenarioConfig s = SyncZero3(16, config::Recompute::kFull);
  simulate::Options o;
  o.simulate_if_out_of_memory = true;
  const auto sync = simulate::Simulate(s, o);
  s.plan.zero3_gather = config::Zero3Gather::kPrefetchPerLayer;
  const auto prefetch = simulate::Simulate(s, o);
  EXPECT_GT(sync.iteration.seconds(), prefetch.iteration.seconds());
  EXPECT_GT(sync.breakdown.dp_exposed.seconds(), prefetch.breakdown.dp_exposed.seconds());
  EXPECT_LT(sync.breakdown.other.seconds(), 0.01 * sync.iteration.seconds());
  EXPECT_NEAR(sync.breakdown.total().seconds(), sync.iteration.seconds(), 1e-3 * sync.iteration.seconds());
}

// Pipelined gathers (XLA's latency-hiding scheduler): in the backward the
// next layer's gather is queued on the DP stream before this layer's
// reduce-scatter, so it runs while this layer computes; per-layer prefetch
// queues it behind the reduce-scatter, which waits for the layer's backward.
TEST(Zero3Pipelined, NextLayersGatherIsQueuedBeforeThisLayersReduceScatter) {
  config::ScenarioConfig s = SyncZero3(8, config::Recompute::kNone);
  // In the backward, the DP-stream position of each layer's gather and reduce-scatter.
  auto backward_order = [&](config::Zero3Gather mode) {
    s.plan.zero3_gather = mode;
    const trace::Trace t = BuildTrainingStep(s);
    std::map<int, int> gather, scatter;
    int position = 0, gathers_seen = 0;
    for (const auto& task : t.tasks()) {
      if (task.rank != 0 || task.kind != trace::TaskKind::kCollective || task.role != trace::TaskRole::kDpComm) continue;
      ++position;
      if (task.comm.kind == CollectiveKind::kAllGather && ++gathers_seen > 4) gather[task.layer] = position;
      if (task.comm.kind == CollectiveKind::kReduceScatter) scatter[task.layer] = position;
    }
    EXPECT_EQ(gather.size(), 4u);
    EXPECT_EQ(scatter.size(), 4u);
    return std::make_pair(gather, scatter);
  };
  const auto [pipelined_gather, pipelined_scatter] = backward_order(config::Zero3Gather::kPipelined);
  const auto [queued_gather, queued_scatter] = backward_order(config::Zero3Gather::kPrefetchPerLayer);
  for (int l = 1; l < 4; ++l) {
    EXPECT_LT(pipelined_gather.at(l - 1), pipelined_scatter.at(l)) << "layer " << l;
    EXPECT_GT(queued_gather.at(l - 1), queued_scatter.at(l)) << "layer " << l;
  }
}

// With communication as long as the compute (a slow fabric), the pipelined
// backward hides the gathers that per-layer prefetch leaves exposed.
TEST(Zero3Pipelined, HidesTheBackwardGathersThatPerLayerPrefetchExposes) {
  config::ScenarioConfig s = SyncZero3(16, config::Recompute::kNone);
  simulate::Options o;
  o.simulate_if_out_of_memory = true;
  s.plan.zero3_gather = config::Zero3Gather::kPrefetchPerLayer;
  const auto queued = simulate::Simulate(s, o);
  s.plan.zero3_gather = config::Zero3Gather::kPipelined;
  const auto pipelined = simulate::Simulate(s, o);
  EXPECT_GT(queued.breakdown.dp_exposed.seconds(), 0);
  EXPECT_LT(pipelined.breakdown.dp_exposed.seconds(), 0.9 * queued.breakdown.dp_exposed.seconds());
  EXPECT_LT(pipelined.iteration.seconds(), queued.iteration.seconds());
}

}  // namespace
}  // namespace stacksim::workload
