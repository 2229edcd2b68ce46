// The eager kernel efficiencies come from the scenario's hardware profile:
// a profile with other eager_kernels values changes the memory-bound ops'
// bandwidth efficiency (and nothing under fused kernels), in the layer op
// lists and in the training step built from a scenario.
#include "sim/workload/op_builders.h"

#include <algorithm>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "sim/workload/layer_ops.h"
#include "sim/workload/training_step.h"
#include "tests/fixtures.h"

namespace stacksim::workload {
namespace {

using config::EagerKernel;

config::PlanConfig Plan(config::KernelFusion kernels) {
  config::PlanConfig p;
  p.micro_batch = 1;
  p.global_batch = 1;
  p.kernels = kernels;
  return p;
}

config::ProfileConfig With(EagerKernel kind, double efficiency) {
  config::ProfileConfig p = testing::RoundProfile();
  p.eager_kernels[static_cast<int>(kind)].value = efficiency;
  return p;
}

// The bandwidth efficiency of the op named `name` (-1: no such op).
float EfficiencyOf(const std::vector<Op>& ops, const std::string& name) {
  auto it = std::find_if(ops.begin(), ops.end(), [&](const Op& op) { return op.name == name; });
  return it == ops.end() ? -1.0f : it->compute.bandwidth_efficiency;
}

TEST(EagerKernels, TheProfilesEfficiencyReachesTheOps) {
  const config::ModelConfig model = testing::GptModel(2, 1024, 16, 32000);  // LayerNorm, GeLU, dropout
  const config::PlanConfig eager = Plan(config::KernelFusion::kEager);
  // The embedding lookup is an elementwise kernel; the loss a softmax; the
  // norms LayerNorms.
  const LayerShape a = LayerShape::From(model, eager, 2048, With(EagerKernel::kElementwise, 0.5));
  const LayerShape b = LayerShape::From(model, eager, 2048, With(EagerKernel::kElementwise, 0.25));
  EXPECT_EQ(EfficiencyOf(EmbeddingForward(a), "embedding"), 0.5f);
  EXPECT_EQ(EfficiencyOf(EmbeddingForward(b), "embedding"), 0.25f);
  const LayerShape c = LayerShape::From(model, eager, 2048, With(EagerKernel::kSoftmax, 0.125));
  EXPECT_EQ(EfficiencyOf(HeadForward(c), "cross-entropy"), 0.125f);
  const LayerShape d = LayerShape::From(model, eager, 2048, With(EagerKernel::kLayerNorm, 0.375));
  EXPECT_EQ(EfficiencyOf(LayerForward(d), "input-norm"), 0.375f);
  EXPECT_EQ(EfficiencyOf(LayerForward(d), "gelu"),
            static_cast<float>(testing::RoundProfile().EagerEfficiency(EagerKernel::kGelu)));
  // Fused kernels run at copy speed whatever the profile says of eager ones.
  const LayerShape fused =
      LayerShape::From(model, Plan(config::KernelFusion::kFused), 2048, With(EagerKernel::kElementwise, 0.5));
  EXPECT_EQ(EfficiencyOf(EmbeddingForward(fused), "embedding"), 1.0f);
}

// The training step takes the efficiencies from its scenario's profile.
TEST(EagerKernels, TheTrainingStepUsesTheScenariosProfile) {
  config::ScenarioConfig s =
      testing::Scenario(testing::GptModel(2, 1024, 16, 32000), 1, 2048, Plan(config::KernelFusion::kEager));
  auto efficiencies = [](const config::ScenarioConfig& sc) {
    std::set<float> out;
    const trace::Trace trace = BuildTrainingStep(sc);  // tasks() of a temporary would dangle
    for (const trace::Task& t : trace.tasks()) {
      if (t.kind == trace::TaskKind::kCompute && t.compute.op_class == trace::OpClass::kMemoryBound) {
        out.insert(t.compute.bandwidth_efficiency);
      }
    }
    return out;
  };
  EXPECT_EQ(efficiencies(s).count(0.5f), 0u);
  s.profile.eager_kernels[static_cast<int>(EagerKernel::kElementwise)].value = 0.5;
  EXPECT_EQ(efficiencies(s).count(0.5f), 1u);
}

}  // namespace
}  // namespace stacksim::workload
