// Qwen3-Next's Gated DeltaNet layers: the layer map and parameter counts
// against the published totals, the chunked rule's FLOPs against a hand
// count, the tensor-parallel split, gated attention on the full layers,
// and plans that cannot split the heads.
#include <string>

#include <gtest/gtest.h>

#include "sim/config/scenario.h"
#include "sim/memory/memory_model.h"
#include "sim/workload/gated_delta_net.h"
#include "sim/workload/layer_ops.h"
#include "tests/fixtures.h"
#include "tests/input_error.h"
#include "tests/ops.h"

namespace stacksim::workload {
namespace {

using config::LayerKind;
using testing::FlopsNamed;
using testing::HasOp;

config::ModelConfig Next() {
  return config::LoadModelFile(std::string(STACKSIM_SOURCE_DIR) + "/models/qwen3-next-80b-a3b.json");
}

config::PlanConfig Plan(int tp) {
  config::PlanConfig p;
  p.tp = tp;
  p.sequence_parallel = tp > 1;
  p.micro_batch = 1;
  return p;
}

LayerShape Layer(LayerKind kind, int tp = 1) {
  const config::ModelConfig m = Next();
  return LayerShape::From(m, Plan(tp), 4096, testing::RoundProfile()).Kind(m, Plan(tp), kind);
}

// Published (Hugging Face, Qwen/Qwen3-Next-80B-A3B-Instruct): 79,674,391,296
// parameters, 3,874,929,408 active. stacksim leaves out the 12 attention
// layers' q/k norms (2 x 256 each), as for every Qwen3 model.
TEST(GatedDeltaNet, Qwen3NextParametersMatchThePublishedTotals) {
  const config::ModelConfig m = Next();
  EXPECT_EQ(m.ParameterCount(), 79674391296 - 12 * 512);
  EXPECT_EQ(m.ActiveParameterCount(), 3874929408 - 12 * 512);
  // in_proj_qkvz 2048 x 12288, in_proj_ba 2048 x 64, the convolution
  // 8192 x 4, dt_bias and A_log 2 x 32, the norm 128, out_proj 4096 x 2048.
  EXPECT_EQ(m.GatedDeltaNetParameterCount(), 33718464);
  EXPECT_EQ(m.AttentionLayerCount(), 12);
  EXPECT_EQ(m.LayerKindAt(0), LayerKind::kGdnMoe);
  EXPECT_EQ(m.LayerKindAt(3), LayerKind::kMoe);  // every fourth layer: gated full attention
}

// Per token and value head (C = 64, dk = dv = 128): K K^T 2 x 64 x 128, the
// solve 2 x 64 x 64, W and U 2 x 256 x 64, the state's update and use
// 2 x 2 x 128 x 128, Q K^T 2 x 64 x 128, the output 2 x 128 x 192:
// 188,416; x 32 value heads = 6,029,312.
TEST(GatedDeltaNet, ChunkedRuleFlopsMatchHandCount) {
  const std::vector<Op> fwd = LayerForward(Layer(LayerKind::kGdnMoe));
  const double T = 4096;
  EXPECT_DOUBLE_EQ(FlopsNamed(fwd, "gdn-") / T - FlopsNamed(fwd, "gdn-in-proj") / T - FlopsNamed(fwd, "gdn-out-proj") / T,
                   6029312.0);
  EXPECT_DOUBLE_EQ(GatedDeltaRuleForwardFlops(Next().gdn, T) / T, 6029312.0);
  EXPECT_DOUBLE_EQ(FlopsNamed(fwd, "gdn-in-proj") / T, 2.0 * 2048 * (2 * 2048 + 2 * 4096 + 64));
  EXPECT_FALSE(HasOp(fwd, "attention"));
  EXPECT_TRUE(HasOp(fwd, "expert-fc1"));
  const std::vector<Op> bwd = LayerBackward(Layer(LayerKind::kGdnMoe));
  EXPECT_DOUBLE_EQ(FlopsNamed(bwd, "gdn-out-proj-"), 2.0 * FlopsNamed(fwd, "gdn-out-proj"));
  EXPECT_GT(FlopsNamed(bwd, "gdn-kkt"), 2.0 * FlopsNamed(fwd, "gdn-kkt"));  // recomputed, then two products
}

TEST(GatedDeltaNet, TensorParallelismSplitsTheHeads) {
  const std::vector<Op> one = LayerForward(Layer(LayerKind::kGdnDense, 1));
  const std::vector<Op> two = LayerForward(Layer(LayerKind::kGdnDense, 2));
  EXPECT_DOUBLE_EQ(FlopsNamed(two, "gdn-kkt"), FlopsNamed(one, "gdn-kkt") / 2);
  EXPECT_DOUBLE_EQ(FlopsNamed(two, "gdn-in-proj"), FlopsNamed(one, "gdn-in-proj") / 2);
}

// The full-attention layers' query projection also gives the output gate:
// QKV is (2 x 16 + 2 x 2) x 256 wide, and a gate op follows attention.
TEST(GatedDeltaNet, FullLayersRunGatedAttention) {
  const std::vector<Op> fwd = LayerForward(Layer(LayerKind::kMoe));
  EXPECT_DOUBLE_EQ(FlopsNamed(fwd, "qkv") / 4096, 2.0 * 2048 * (2 * 16 + 2 * 2) * 256);
  EXPECT_TRUE(HasOp(fwd, "attn-gate"));
  EXPECT_GT(memory::LayerActivations(Layer(LayerKind::kGdnMoe), config::Recompute::kNone).value, 0.0);
}

TEST(GatedDeltaNet, PlansMustSplitWholeHeads) {
  config::PlanConfig p = Plan(8);
  p.dp = 2;
  p.global_batch = 2;
  const config::ScenarioConfig ok = testing::Scenario(Next(), 16, 4096, p);
  EXPECT_NO_THROW(config::ValidatePlan(ok, "next.json"));
  config::ModelConfig odd = Next();
  odd.gdn.key_heads = 4;
  odd.gdn.value_heads = 4;
  const InputError e = testing::ErrorFrom([&] { config::ValidatePlan(testing::Scenario(odd, 16, 4096, p), "next.json"); });
  EXPECT_EQ(e.key_path(), "plan.tp") << e.what();
}

}  // namespace
}  // namespace stacksim::workload
