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

// The op with this name (it must exist).
const Op& Named(const std::vector<Op>& ops, const std::string& name) {
  auto it = std::find_if(ops.begin(), ops.end(), [&](const Op& op) { return op.name == name; });
  EXPECT_NE(it, ops.end()) << name;
  return *it;
}

// The layer shape of a two-layer small Llama at 2048 tokens.
LayerShape SmallLlama(const config::PlanConfig& plan, const config::ProfileConfig& profile) {
  return LayerShape::From(testing::SmallLlamaModel(2), plan, 2048, profile);
}

double BytesOf(const std::vector<Op>& ops, const std::string& name) { return Named(ops, name).compute.bytes.value; }

// torchtitan's RMSNorm and RoPE as PyTorch tensor ops on an fp32 upcast
// (config::EagerModules::kFp32TensorOps): per element, the norm moves
// 4e + 7f bytes forward in 7 kernels and 8e + 18f backward in 14 (e = 2,
// f = 4); RoPE (2e + 16) each way in 6 kernels over Q and K. Library
// kernels, fused kernels and LayerNorm models keep the one-kernel counts.
TEST(EagerModules, TorchtitansNormAndRopeRunAsFp32TensorOps) {
  config::PlanConfig plan = Plan(config::KernelFusion::kEager);
  plan.eager_modules = config::EagerModules::kFp32TensorOps;
  const config::ProfileConfig profile = With(EagerKernel::kElementwise, 0.75);
  const LayerShape s = SmallLlama(plan, profile);
  const double n = 2048.0 * 1024;       // tokens x hidden
  const double qk = 2048.0 * (16 + 4) * 64;  // tokens x (Q + K heads) x head_dim
  const std::vector<Op> fwd = LayerForward(s);
  const std::vector<Op> bwd = LayerBackward(s);
  EXPECT_DOUBLE_EQ(BytesOf(fwd, "input-norm"), 36 * n);
  EXPECT_EQ(Named(fwd, "input-norm").compute.kernels, 7);
  // Its two casts (2(e + f) of the 36 bytes) run at the profile's cast
  // efficiency, the rest at its element-wise one.
  const double cast = profile.EagerEfficiency(EagerKernel::kCast);
  EXPECT_FLOAT_EQ(Named(fwd, "input-norm").compute.bandwidth_efficiency, 36 / (24 / 0.75 + 12 / cast));
  EXPECT_FLOAT_EQ(Named(fwd, "rope").compute.bandwidth_efficiency, 20 / (8 / 0.75 + 12 / cast));
  EXPECT_DOUBLE_EQ(BytesOf(bwd, "input-norm-bwd"), 88 * n);
  EXPECT_EQ(Named(bwd, "input-norm-bwd").compute.kernels, 14);
  EXPECT_DOUBLE_EQ(BytesOf(fwd, "rope"), 20 * qk);
  EXPECT_DOUBLE_EQ(BytesOf(bwd, "rope-bwd"), 20 * qk);
  EXPECT_EQ(Named(fwd, "rope").compute.kernels, 6);

  plan.eager_modules = config::EagerModules::kLibrary;
  const LayerShape library = SmallLlama(plan, profile);
  EXPECT_DOUBLE_EQ(BytesOf(LayerForward(library), "input-norm"), 4 * n);
  EXPECT_DOUBLE_EQ(BytesOf(LayerForward(library), "rope"), 4 * qk);

  plan.eager_modules = config::EagerModules::kFp32TensorOps;
  plan.kernels = config::KernelFusion::kFused;  // torch.compile fuses the norm
  const LayerShape fused = SmallLlama(plan, profile);
  EXPECT_DOUBLE_EQ(BytesOf(LayerForward(fused), "input-norm"), 4 * n);
  // but runs the complex RoPE as ATen fallback kernels.
  EXPECT_DOUBLE_EQ(BytesOf(LayerBackward(fused), "rope-bwd"), 20 * qk);
  plan.eager_modules = config::EagerModules::kLibrary;
  const LayerShape fused_library = SmallLlama(plan, profile);
  EXPECT_DOUBLE_EQ(BytesOf(LayerBackward(fused_library), "rope-bwd"), 4 * qk);
  plan.eager_modules = config::EagerModules::kFp32TensorOps;

  plan.kernels = config::KernelFusion::kEager;  // nn.LayerNorm is one ATen kernel
  const LayerShape layer_norm = LayerShape::From(testing::GptModel(2, 1024, 16, 32000), plan, 2048, profile);
  EXPECT_DOUBLE_EQ(BytesOf(LayerForward(layer_norm), "input-norm"), 4 * n);
}

// Hugging Face's Llama modules (config::EagerModules::kHfTensorOps): the
// same fp32 RMSNorm, and RoPE as q * cos + rotate_half(q) * sin in 16 bits,
// 10e bytes an element forward in 10 kernels, 14e backward in 16; fused
// under torch.compile.
TEST(EagerModules, HuggingFacesRopeIsRotateHalfIn16Bits) {
  config::PlanConfig plan = Plan(config::KernelFusion::kEager);
  plan.eager_modules = config::EagerModules::kHfTensorOps;
  const config::ProfileConfig profile = testing::RoundProfile();
  const LayerShape s = SmallLlama(plan, profile);
  const double n = 2048.0 * 1024;
  const double qk = 2048.0 * (16 + 4) * 64;
  EXPECT_DOUBLE_EQ(BytesOf(LayerForward(s), "input-norm"), 36 * n);
  EXPECT_DOUBLE_EQ(BytesOf(LayerForward(s), "rope"), 20 * qk);
  EXPECT_EQ(Named(LayerForward(s), "rope").compute.kernels, 10);
  EXPECT_DOUBLE_EQ(BytesOf(LayerBackward(s), "rope-bwd"), 28 * qk);
  EXPECT_EQ(Named(LayerBackward(s), "rope-bwd").compute.kernels, 16);
  plan.kernels = config::KernelFusion::kFused;
  const LayerShape fused = SmallLlama(plan, profile);
  EXPECT_DOUBLE_EQ(BytesOf(LayerForward(fused), "rope"), 4 * qk);
  EXPECT_DOUBLE_EQ(BytesOf(LayerForward(fused), "input-norm"), 4 * n);
}

// The loss as torchtitan runs it, F.cross_entropy(pred.float(), labels)
// (plan.loss_logits "upcast"): forward a cast (e + 4 bytes a logit) and
// log_softmax (8), backward nll_loss's gradient (4), log_softmax's (12) and
// the cast back (4 + e); Megatron's in-place loss moves e + 8 and 4 + e.
// With only the layers compiled, the head runs eager kernels.
TEST(EagerModules, TheUpcastLossAndTheHeadOutsideCompiledLayers) {
  config::PlanConfig plan = Plan(config::KernelFusion::kFused);
  const config::ProfileConfig profile = With(EagerKernel::kSoftmax, 0.25);
  const double logits = 2048.0 * 32000;
  const LayerShape inplace = SmallLlama(plan, profile);
  EXPECT_DOUBLE_EQ(BytesOf(HeadForward(inplace), "cross-entropy"), 10 * logits);
  EXPECT_DOUBLE_EQ(BytesOf(HeadBackward(inplace), "cross-entropy-bwd"), 6 * logits);
  plan.loss_logits = config::LossLogits::kUpcast;
  const LayerShape upcast = SmallLlama(plan, profile);
  EXPECT_DOUBLE_EQ(BytesOf(HeadForward(upcast), "cross-entropy"), 14 * logits);
  EXPECT_DOUBLE_EQ(BytesOf(HeadBackward(upcast), "cross-entropy-bwd"), 22 * logits);
  EXPECT_EQ(Named(HeadForward(upcast), "cross-entropy").compute.bandwidth_efficiency, 1.0f);  // fused

  plan.compiled_layers_only = true;
  plan.eager_modules = config::EagerModules::kFp32TensorOps;
  const LayerShape compiled = SmallLlama(plan, profile);
  const double cast = profile.EagerEfficiency(EagerKernel::kCast);
  EXPECT_FLOAT_EQ(Named(HeadForward(compiled), "cross-entropy").compute.bandwidth_efficiency,
                  14 / (6 / cast + 8 / 0.25));
  EXPECT_DOUBLE_EQ(BytesOf(HeadForward(compiled), "final-norm"), 36 * 2048.0 * 1024);
  // The layers stay compiled.
  EXPECT_DOUBLE_EQ(BytesOf(LayerForward(compiled), "input-norm"), 4 * 2048.0 * 1024);
}

// torchtitan's repeat_kv (plan.repeat_kv_copies): K and V copied out to the
// query heads before flash attention, the copies' gradients summed after
// its backward: 2 x (kv + q) x head_dim elements a token each way; none
// without GQA or without the key.
TEST(EagerModules, RepeatKvCopiesWidenKAndV) {
  config::PlanConfig plan = Plan(config::KernelFusion::kFused);
  plan.repeat_kv_copies = true;
  const config::ProfileConfig profile = testing::RoundProfile();
  const LayerShape s = SmallLlama(plan, profile);  // 16 q, 4 kv heads of 64
  const double bytes = 2.0 * 2048 * (4 + 16) * 64 * 2;
  EXPECT_DOUBLE_EQ(BytesOf(LayerForward(s), "repeat-kv"), bytes);
  EXPECT_DOUBLE_EQ(BytesOf(LayerBackward(s), "repeat-kv-bwd"), bytes);
  plan.repeat_kv_copies = false;
  const std::vector<Op> off = LayerForward(SmallLlama(plan, profile));
  EXPECT_TRUE(std::none_of(off.begin(), off.end(), [](const Op& op) { return op.name == "repeat-kv"; }));
  plan.repeat_kv_copies = true;  // multi-head attention: nothing to repeat
  const std::vector<Op> mha = LayerForward(LayerShape::From(testing::GptModel(2, 1024, 16, 32000), plan, 2048, profile));
  EXPECT_TRUE(std::none_of(mha.begin(), mha.end(), [](const Op& op) { return op.name == "repeat-kv"; }));
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
