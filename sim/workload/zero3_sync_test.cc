// ZeRO-3 as DeepSpeed v0.3.13 ran it (plan.zero3_gather sync-per-parameter):
// one all-gather and one reduce-scatter per weight tensor, each with the
// list API's per-rank copies, nothing overlapped with compute, and tensors
// re-gathered after the recompute forward by the reuse-distance rule.
// Counts and sizes are checked against hand counts on a 4-layer GPT.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
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
  std::vector<double> zeros;  // bytes of each gather's torch.zeros
  std::vector<double> views;  // seconds of each Python loop over the ranks
};

Counts Count(const trace::Trace& t) {
  Counts c;
  for (const auto& task : t.tasks()) {
    if (task.role != trace::TaskRole::kDpComm && task.role != trace::TaskRole::kOther) continue;
    const std::string& name = t.name(task.name);
    if (name.rfind("zero3-persistent", 0) == 0) continue;  // after the optimizer step (its own test)
    if (name == "zero3-gather-zeros") {
      c.zeros.push_back(task.compute.bytes.value);
    } else if (name == "zero3-rank-views") {
      EXPECT_EQ(task.kind, trace::TaskKind::kDelay);
      EXPECT_EQ(task.role, trace::TaskRole::kOther);  // host work
      c.views.push_back(task.duration.seconds());
    } else if (task.kind == trace::TaskKind::kCompute) {
      EXPECT_EQ(name, "zero3-list-copies");
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

// DeepSpeed v0.3.13's own work around each collective: _allgather_param
// zeroes the whole gathered tensor and takes one narrow() per rank,
// _reduce_scatter_gradient a view(-1).narrow() pair per rank; each view
// costs an eager op's dispatch without its launch, 6.908 - 4.683 us (the
// H200 node's launch.csv and launch_cuda.csv).
TEST(Zero3SyncGather, ZeroesEachGatheredTensorAndLoopsOverTheRanksInPython) {
  const int dp = 8;
  const Counts c = Count(BuildTrainingStep(SyncZero3(dp, config::Recompute::kNone)));
  ASSERT_EQ(c.zeros.size(), c.gathers.size());
  for (size_t i = 0; i < c.gathers.size(); ++i) EXPECT_NEAR(c.zeros[i], c.gathers[i], 1) << i;
  ASSERT_EQ(c.views.size(), c.gathers.size() + c.scatters.size());
  const double view = 2.225e-6;
  int one = 0, two = 0;
  for (double v : c.views) {
    if (std::fabs(v - dp * view) < 1e-9) ++one;
    if (std::fabs(v - 2 * dp * view) < 1e-9) ++two;
  }
  EXPECT_EQ(one, static_cast<int>(c.gathers.size()));
  EXPECT_EQ(two, static_cast<int>(c.scatters.size()));
}

// The loop is host work that grows with the ranks; a gather's zeroing and
// views come just before its collective on the rank.
TEST(Zero3SyncGather, TheRankLoopComesBeforeEachGatherAndGrowsWithTheRanks) {
  const trace::Trace t = BuildTrainingStep(SyncZero3(8, config::Recompute::kNone));
  std::vector<std::string> names;
  for (const auto& task : t.tasks()) {
    if (task.rank == 0 && (task.role == trace::TaskRole::kDpComm || task.role == trace::TaskRole::kOther)) {
      names.push_back(t.name(task.name));
    }
  }
  int gathers = 0;
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] != "fsdp-gather") continue;
    ++gathers;
    ASSERT_GE(i, 2u);
    EXPECT_EQ(names[i - 1], "zero3-rank-views");
    EXPECT_EQ(names[i - 2], "zero3-gather-zeros");
  }
  EXPECT_EQ(gathers, 4 * 2 * 4);
  // A reduce-scatter's loop waits for the gradients, not for the previous
  // tensor's reduce-scatter, which DeepSpeed leaves running.
  int scatter_loops = 0;
  for (trace::TaskId id = 0; id < static_cast<trace::TaskId>(t.size()); ++id) {
    if (t.rank(id) != 0 || t.name(t.task(id).name) != "zero3-rank-views") continue;
    bool before_scatter = false;
    for (trace::TaskId next = id + 1; next < static_cast<trace::TaskId>(t.size()); ++next) {
      if (t.rank(next) != 0 || t.task(next).role != trace::TaskRole::kDpComm) continue;  // not the loops
      const std::string& n = t.name(t.task(next).name);
      if (n == "zero3-list-copies") continue;
      before_scatter = n == "fsdp-reduce-scatter";
      break;
    }
    if (!before_scatter) continue;
    ++scatter_loops;
    for (const trace::TaskId* d = t.deps_begin(id); d != t.deps_end(id); ++d) {
      EXPECT_NE(t.name(t.task(*d).name), "fsdp-reduce-scatter");
    }
  }
  EXPECT_EQ(scatter_loops, 4 * 4);
  const double small = Count(t).views.front();
  const double large = Count(BuildTrainingStep(SyncZero3(32, config::Recompute::kNone))).views.front();
  EXPECT_NEAR(large, 4 * small, 1e-12);
}

// The persistent tensors (fewer than 1e5 elements: here every norm and
// bias, 8 per GPT layer and the final norm's 2) are partitioned at the end
// of the backward and gathered again after the optimizer step: one list-API
// all-gather, then per tensor and rank a narrow, a view, a narrow and a
// copy_ from Python (DeepSpeed v0.3.13 _post_step / _allgather_params).
TEST(Zero3SyncGather, PersistentTensorsAreGatheredAfterTheStepRankByRank) {
  const int dp = 8;
  const trace::Trace t = BuildTrainingStep(SyncZero3(dp, config::Recompute::kNone));
  int gathers = 0, views = 0, copies = 0;
  bool after_step = false;
  for (const auto& task : t.tasks()) {
    if (task.rank != 0) continue;
    const std::string& name = t.name(task.name);
    if (name == "optimizer-step") after_step = true;
    if (name.rfind("zero3-persistent", 0) != 0) continue;
    EXPECT_TRUE(after_step) << name;
    if (name == "zero3-persistent-rank-views") {
      EXPECT_NEAR(task.duration.seconds(), dp * 2.225e-6, 1e-9);  // the flat buffer's narrow per rank
    } else if (name == "zero3-persistent-list-copies") {
      EXPECT_EQ(task.compute.kernels, dp);
    } else if (name == "zero3-persistent-gather") {
      ++gathers;
      // 34 tensors of 1024 or 3072 or 4096 elements, 2 bytes each
      EXPECT_NEAR(task.comm.bytes.value, 2.0 * (4 * (4 * 1024 + 3 * 1024 + 1024 + 4096 + 1024) + 2 * 1024), 1);
    } else if (name == "zero3-persistent-views") {
      ++views;
      EXPECT_NEAR(task.duration.seconds(), 4 * dp * 2.225e-6, 1e-9);
    } else {
      EXPECT_EQ(name, "zero3-persistent-copies");
      ++copies;
      EXPECT_EQ(task.compute.kernels, dp);
    }
  }
  EXPECT_EQ(gathers, 1);
  EXPECT_EQ(views, 4 * 8 + 2);
  EXPECT_EQ(copies, 4 * 8 + 2);
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
// hiding under it. The breakdown charges the wait for this chain to DP
// communication (gathers and copies on the DP stream), except DeepSpeed's
// Python loops where no DP communication runs beside them: host work,
// "other" (runtime orchestration in diagnose).
TEST(Zero3SyncGather, NothingOverlapsComputeAndTheWaitIsDpCommOrHostWork) {
  config::ScenarioConfig s = SyncZero3(16, config::Recompute::kFull);
  simulate::Options o;
  o.simulate_if_out_of_memory = true;
  const auto sync = simulate::Simulate(s, o);
  double loops = 0;  // rank 0's host loops, seconds
  const trace::Trace t = BuildTrainingStep(s);
  for (const auto& task : t.tasks()) {
    if (task.rank == 0 && task.role == trace::TaskRole::kOther) loops += task.duration.seconds();
  }
  s.plan.zero3_gather = config::Zero3Gather::kPrefetchPerLayer;
  const auto prefetch = simulate::Simulate(s, o);
  EXPECT_GT(sync.iteration.seconds(), prefetch.iteration.seconds());
  EXPECT_GT(sync.breakdown.dp_exposed.seconds(), prefetch.breakdown.dp_exposed.seconds());
  EXPECT_GT(loops, 0);
  // At most the loops (some run beside a reduce-scatter), at least the
  // gathers' loops, which nothing runs beside.
  EXPECT_LE(sync.breakdown.other.seconds(), loops + 1e-6 * sync.iteration.seconds());
  EXPECT_GT(sync.breakdown.other.seconds(), 0.5 * loops);
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
