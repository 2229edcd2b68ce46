// Context parallelism: ring attention's K/V exchange, the 1/cp split of the
// per-token work and activation memory, and the dp x cp gradient group.
#include <string>

#include <gtest/gtest.h>

#include "sim/memory/memory_model.h"
#include "sim/simulate/simulate.h"
#include "sim/workload/layer_ops.h"
#include "sim/workload/placement.h"
#include "tests/fixtures.h"

namespace stacksim::workload {
namespace {

config::ModelConfig Llama() {
  config::ModelConfig m = testing::GptModel(2, 4096, 32, 32000);
  m.num_kv_heads = 8;  // GQA
  m.dropout = false;
  m.attention_bias = m.mlp_bias = false;
  m.position_embedding = config::PositionEmbedding::kRope;
  m.learned_position_embeddings = false;
  m.max_position_embeddings = 131072;
  return m;
}

LayerShape Shape(int cp, int tp = 2) {
  config::PlanConfig plan;
  plan.tp = tp;
  plan.cp = cp;
  plan.sequence_parallel = true;
  plan.micro_batch = 1;
  return LayerShape::From(Llama(), plan, 16384);
}

const Op* Find(const std::vector<Op>& ops, const std::string& name) {
  for (const Op& op : ops) {
    if (op.name == name) return &op;
  }
  return nullptr;
}

// Hand count, cp 4, tp 2, seq 16384, 8 KV heads of 128: each rank holds
// 16384 / 4 = 4096 tokens and 8 / 2 = 4 KV heads; its K and V blocks are
// 2 x 4096 x 4 x 128 x 2 bytes = 8 MiB. The ring passes cp - 1 = 3 of them
// through every rank (24 MiB); the all-gather buffer is all 4 blocks.
TEST(ContextParallel, KvExchangeVolumePerLayerMatchesHandCount) {
  const double block = 2.0 * 4096 * 4 * 128 * 2;
  const auto fwd = LayerForward(Shape(4));
  const Op* x = Find(fwd, "cp-kv-exchange");
  ASSERT_NE(x, nullptr);
  EXPECT_TRUE(x->is_collective && x->async && x->cp_group);
  EXPECT_EQ(x->collective, trace::CollectiveKind::kAllGather);
  EXPECT_DOUBLE_EQ(x->bytes.value, 4 * block);
  EXPECT_DOUBLE_EQ(x->bytes.value * 3 / 4, 3 * block);  // sent per rank over the ring
  const Op* b = Find(LayerBackward(Shape(4)), "cp-kv-exchange-bwd");
  ASSERT_NE(b, nullptr);
  EXPECT_DOUBLE_EQ(b->bytes.value, 2 * 4 * block);  // K/V plus dK/dV
  EXPECT_EQ(Find(LayerForward(Shape(1)), "cp-kv-exchange"), nullptr);
  // The projection waits for the exchange (overlapped with attention).
  int xi = static_cast<int>(x - fwd.data());
  EXPECT_EQ(Find(fwd, "attn-proj")->wait_for, xi);
  // Attention: 4096 local queries against all 16384 keys, 1/cp of the causal FLOPs.
  const Op* a1 = Find(LayerForward(Shape(1)), "attention");
  const Op* a4 = Find(fwd, "attention");
  EXPECT_EQ(a4->compute.m, 4096);
  EXPECT_EQ(a4->compute.n, 16384);
  EXPECT_DOUBLE_EQ(a4->compute.flops.value * 4, a1->compute.flops.value);
  EXPECT_DOUBLE_EQ(Find(fwd, "fc1")->compute.flops.value * 4, Find(LayerForward(Shape(1)), "fc1")->compute.flops.value);
}

TEST(ContextParallel, ActivationMemoryIsOneOverCp) {
  for (auto r : {config::Recompute::kNone, config::Recompute::kSelective, config::Recompute::kFull}) {
    const double one = memory::LayerActivations(Shape(1), r).value;
    const double four = memory::LayerActivations(Shape(4), r).value;
    EXPECT_NEAR(four * 4, one, one * 1e-12);
  }
}

TEST(ContextParallel, GradientsReduceOverDpTimesCp) {
  config::PlanConfig plan;
  plan.tp = 2;
  plan.cp = 2;
  plan.dp = 2;
  auto g = PlacePlan(plan, testing::DgxTopology());
  EXPECT_EQ(g.dp.size, 4);
  EXPECT_EQ(g.dp.stride, 2);
  EXPECT_EQ(g.cp.size, 2);
  EXPECT_EQ(g.cp.stride, 2);
  EXPECT_EQ(g.tp.size, 2);
}

TEST(ContextParallel, StepRunsAndCpShortensTheStep) {
  config::PlanConfig plan;
  plan.tp = 2;
  plan.sequence_parallel = true;
  plan.dp = 4;
  plan.global_batch = 8;
  plan.sharding = config::Sharding::kZero1;
  auto s = testing::Scenario(Llama(), 8, 16384, plan);
  simulate::Options o;
  o.simulate_if_out_of_memory = true;
  auto base = simulate::Simulate(s, o);
  s.plan.dp = 2;
  s.plan.cp = 2;
  auto cp = simulate::Simulate(s, o);
  EXPECT_GT(cp.iteration.seconds(), 0.0);
  // Same GPUs, same batch: cp 2 halves each rank's tokens but doubles its
  // micro-batches; the step time stays within a factor of the cp 1 step.
  EXPECT_LT(cp.iteration.seconds(), 1.5 * base.iteration.seconds());
  EXPECT_GT(cp.iteration.seconds(), 0.6 * base.iteration.seconds());
}

}  // namespace
}  // namespace stacksim::workload
