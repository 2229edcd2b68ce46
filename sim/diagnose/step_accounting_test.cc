#include "sim/diagnose/step_accounting.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/fixtures.h"

namespace stacksim::diagnose {
namespace {

using testing::GptModel;
using testing::Scenario;

TEST(StepAccounting, RooflineNamesAreTheReportsWords) {
  EXPECT_EQ(std::string(RooflineName(Roofline::kCompute)), "compute");
  EXPECT_EQ(std::string(RooflineName(Roofline::kMemory)), "memory");
  EXPECT_EQ(std::string(RooflineName(Roofline::kLaunch)), "launch");
}

StepAccounting OneGpuStep(config::KernelFusion kernels, config::Recompute recompute) {
  config::PlanConfig plan;
  plan.micro_batch = 4;
  plan.global_batch = 4;
  plan.kernels = kernels;
  plan.recompute = recompute;
  simulate::Options so;
  so.keep_trace = true;
  return AccountStep(simulate::Simulate(Scenario(GptModel(4, 2048, 16, 32000), 1, 2048, plan), so));
}

// Eager kernels: the memory-bound ops run below fused speed and the excess
// is theirs; the matmuls are compute-bound and have none.
TEST(StepAccounting, EagerKernelsShowAsExcessOfMemoryBoundOps) {
  StepAccounting eager = OneGpuStep(config::KernelFusion::kEager, config::Recompute::kNone);
  StepAccounting fused = OneGpuStep(config::KernelFusion::kFused, config::Recompute::kNone);
  EXPECT_GT(eager.eager_excess, Time::Zero());
  EXPECT_EQ(fused.eager_excess, Time::Zero());
  EXPECT_EQ(eager.recompute, Time::Zero());
  Time excess;
  bool compute = false, memory = false;
  for (const OpStat& o : eager.ops) {
    excess += o.eager_excess;
    if (o.roofline == Roofline::kCompute) {
      compute = true;
      EXPECT_EQ(o.eager_excess, Time::Zero()) << o.name;
    }
    memory |= o.roofline == Roofline::kMemory;
  }
  EXPECT_TRUE(compute);
  EXPECT_TRUE(memory);
  EXPECT_EQ(excess, eager.eager_excess);
  // Largest time beyond ideal first.
  for (size_t i = 1; i < eager.ops.size(); ++i) {
    EXPECT_GE(eager.ops[i - 1].time - eager.ops[i - 1].ideal, eager.ops[i].time - eager.ops[i].ideal);
  }
  // One GPU: no communication, all of it on one stage.
  EXPECT_TRUE(eager.comm_busy.empty());
  EXPECT_EQ(eager.tp_link, "");
  EXPECT_EQ(eager.rank_ideal, eager.mean_stage);
}

TEST(StepAccounting, FullRecomputationIsCountedApartFromTheModelWork) {
  StepAccounting full = OneGpuStep(config::KernelFusion::kFused, config::Recompute::kFull);
  StepAccounting none = OneGpuStep(config::KernelFusion::kFused, config::Recompute::kNone);
  EXPECT_GT(full.recompute, Time::Zero());
  EXPECT_EQ(none.recompute, Time::Zero());
  EXPECT_EQ(full.rank_ideal, none.rank_ideal);
  bool recomputed = false;
  for (const OpStat& o : full.ops) recomputed |= o.recompute;
  EXPECT_TRUE(recomputed);
}

}  // namespace
}  // namespace stacksim::diagnose
