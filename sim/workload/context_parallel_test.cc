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

LayerShape Shape(int cp, int tp = 2, config::CpComm comm = config::CpComm::kP2p, bool torch_ring = false) {
  config::PlanConfig plan;
  plan.tp = tp;
  plan.cp = cp;
  plan.cp_comm = comm;
  plan.cp_torch_ring = torch_ring;
  plan.sequence_parallel = true;
  plan.micro_batch = 1;
  return LayerShape::From(Llama(), plan, 16384, testing::RoundProfile());
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
  const auto bwd = LayerBackward(Shape(4));  // named: Find points into it
  const Op* b = Find(bwd, "cp-kv-exchange-bwd");
  ASSERT_NE(b, nullptr);
  EXPECT_DOUBLE_EQ(b->bytes.value, 2 * 4 * block);  // K/V plus dK/dV
  EXPECT_EQ(Find(LayerForward(Shape(1)), "cp-kv-exchange"), nullptr);
  // The projection waits for the exchange (overlapped with attention).
  int xi = static_cast<int>(x - fwd.data());
  EXPECT_EQ(Find(fwd, "attn-proj")->wait_for, xi);
  // Attention: 4096 local queries against all 16384 keys, 1/cp of the causal
  // FLOPs, in one kernel per ring step over a block of 16384 / 4 keys (the
  // key length the kernel's efficiency is read at); the all-gather variant
  // runs one kernel over all 16384 gathered keys, PyTorch's ring one per step.
  const auto fwd1 = LayerForward(Shape(1));
  const Op* a1 = Find(fwd1, "attention");
  const Op* a4 = Find(fwd, "attention");
  EXPECT_EQ(a4->compute.m, 4096);
  EXPECT_EQ(a4->compute.n, 4096);
  EXPECT_EQ(Find(LayerForward(Shape(4, 2, config::CpComm::kAllGather)), "attention")->compute.n, 16384);
  EXPECT_EQ(Find(LayerForward(Shape(4, 2, config::CpComm::kAllGather, true)), "attention")->compute.n, 4096);
  EXPECT_EQ(a1->compute.n, 16384);
  EXPECT_DOUBLE_EQ(a4->compute.flops.value * 4, a1->compute.flops.value);
  EXPECT_DOUBLE_EQ(Find(fwd, "fc1")->compute.flops.value * 4, Find(LayerForward(Shape(1)), "fc1")->compute.flops.value);
}

int Index(const std::vector<Op>& ops, const std::string& name) {
  const Op* op = Find(ops, name);
  return op == nullptr ? -1 : static_cast<int>(op - ops.data());
}

// PyTorch's ring attention (torchtitan), same shape: K/V after repeat_kv are
// query-heads wide (16 per tp rank), so the block is 2 x 4096 x 16 x 128 x 2
// bytes; the backward gathers K/V again and sends fp32 dK/dV: 1 + 4/2 = 3x.
// Merges, E = 4096 x 16 x 128 output elements of 2 bytes, cp - 1 = 3 steps:
// per step the K/V concat 8E and the merge (whole 38E, half 19E + 8E cat,
// over ranks 32.5E), then 6E back to bf16: 3 x 40.5E + 6E = 127.5E. The
// backward: 12E zeros, 3 x 8E concats, step 0 3 x 10E + 16E, steps 1-3
// 3 x (10E + 13E) / 2 + 16E each, 6E + 12E back to bf16: 251.5E.
TEST(ContextParallel, TorchRingMergesInFp32AndSendsRepeatedKv) {
  const double E = 4096.0 * 16 * 128;
  const double block = 2.0 * 4096 * 16 * 128 * 2;
  const auto fwd = LayerForward(Shape(4, 2, config::CpComm::kP2p, true));
  const auto bwd = LayerBackward(Shape(4, 2, config::CpComm::kP2p, true));
  EXPECT_DOUBLE_EQ(Find(fwd, "cp-kv-exchange")->bytes.value, 4 * block);
  EXPECT_DOUBLE_EQ(Find(bwd, "cp-kv-exchange-bwd")->bytes.value, 3 * 4 * block);
  const Op* merge = Find(fwd, "cp-ring-merge");
  ASSERT_NE(merge, nullptr);
  EXPECT_DOUBLE_EQ(merge->compute.bytes.value, 127.5 * E);
  EXPECT_EQ(Index(fwd, "cp-ring-merge"), Index(fwd, "attention") + 1);
  const Op* grad = Find(bwd, "cp-ring-grad-accum");
  ASSERT_NE(grad, nullptr);
  EXPECT_DOUBLE_EQ(grad->compute.bytes.value, 251.5 * E);
  // Megatron/TE's fused ring and PyTorch without CP have none of it.
  EXPECT_EQ(Find(LayerForward(Shape(4)), "cp-ring-merge"), nullptr);
  EXPECT_EQ(Find(LayerForward(Shape(1, 2, config::CpComm::kP2p, true)), "cp-ring-merge"), nullptr);
}


// All-gather CP (Llama 3, arXiv:2407.21783 §3.3.2), same shape as above:
// forward, one all-gather of all 4 K/V blocks (32 MiB buffer) on the compute
// stream right before attention; backward, the same gather again before the
// attention backward and a reduce-scatter of the full-sequence dK/dV (32 MiB)
// right after it. Nothing overlaps: no op waits on a side-stream exchange.
TEST(ContextParallel, AllGatherVariantGathersKvBeforeAttentionAndReduceScattersDkDv) {
  const double block = 2.0 * 4096 * 4 * 128 * 2;
  const auto ag = Shape(4, 2, config::CpComm::kAllGather);
  const auto fwd = LayerForward(ag);
  EXPECT_EQ(Find(fwd, "cp-kv-exchange"), nullptr);
  const Op* x = Find(fwd, "cp-kv-allgather");
  ASSERT_NE(x, nullptr);
  EXPECT_TRUE(x->is_collective && x->cp_group);
  EXPECT_FALSE(x->async);
  EXPECT_EQ(x->collective, trace::CollectiveKind::kAllGather);
  EXPECT_DOUBLE_EQ(x->bytes.value, 4 * block);
  EXPECT_EQ(Index(fwd, "cp-kv-allgather") + 1, Index(fwd, "attention"));
  for (const Op& op : fwd) EXPECT_EQ(op.wait_for, -1) << op.name;

  const auto bwd = LayerBackward(ag);
  EXPECT_EQ(Find(bwd, "cp-kv-exchange-bwd"), nullptr);
  const Op* g = Find(bwd, "cp-kv-allgather-bwd");
  const Op* rs = Find(bwd, "cp-dkv-reduce-scatter");
  ASSERT_NE(g, nullptr);
  ASSERT_NE(rs, nullptr);
  EXPECT_FALSE(g->async || rs->async);
  EXPECT_TRUE(g->cp_group && rs->cp_group);
  EXPECT_EQ(g->collective, trace::CollectiveKind::kAllGather);
  EXPECT_EQ(rs->collective, trace::CollectiveKind::kReduceScatter);
  EXPECT_DOUBLE_EQ(g->bytes.value, 4 * block);
  EXPECT_DOUBLE_EQ(rs->bytes.value, 4 * block);
  EXPECT_EQ(Index(bwd, "cp-kv-allgather-bwd") + 1, Index(bwd, "attention-bwd"));
  EXPECT_EQ(Index(bwd, "attention-bwd") + 1, Index(bwd, "cp-dkv-reduce-scatter"));
  EXPECT_EQ(Find(bwd, "qkv-dgrad")->wait_for, -1);

  // The attention itself is the same kernel as under ring attention.
  const auto ring = LayerForward(Shape(4));
  const Op* a_ring = Find(ring, "attention");
  const Op* a_ag = Find(fwd, "attention");
  EXPECT_EQ(a_ag->compute.m, a_ring->compute.m);
  EXPECT_DOUBLE_EQ(a_ag->compute.flops.value, a_ring->compute.flops.value);
  // cp 1: no CP collectives whichever variant the plan names.
  for (const Op& op : LayerBackward(Shape(1, 2, config::CpComm::kAllGather))) EXPECT_FALSE(op.cp_group) << op.name;
}

// Hand count of one layer's saved activations, cp 4, tp 2 with SP, seq 16384,
// micro-batch 1, bf16, flash attention (the model: h 4096, 32 heads of 128,
// 8 KV heads, GeLU MLP of 16384, no dropout). Per rank: T = 16384 / 4 = 4096
// tokens, Tn = T / 2 = 2048 in the SP region; q = 16 x 128 = 2048 and
// kv = 4 x 128 = 512 columns; f = 8192.
//   attention: norm input 2 Tn h + QKV input 2 Tn h + Q,K 2 T (q + kv)
//              + V 2 T kv + proj input 2 T q + fp32 LSE 4 T 16
//            = 16777216 + 16777216 + 20971520 + 4194304 + 16777216 + 262144 = 75759616
//   MLP:       norm input 2 Tn h + FC1 input 2 Tn h + GeLU input 2 T f + FC2 input 2 T f
//            = 16777216 + 16777216 + 67108864 + 67108864 = 167772160
//   total 243531776 bytes (selective = none under flash attention); full
//   recomputation keeps the layer input, 2 Tn h = 16777216. The all-gather
//   variant saves the same (the gathered K/V are re-gathered for the backward).
TEST(ContextParallel, ActivationMemoryUnderCpMatchesHandCount) {
  for (auto comm : {config::CpComm::kP2p, config::CpComm::kAllGather}) {
    const LayerShape s = Shape(4, 2, comm);
    EXPECT_DOUBLE_EQ(memory::LayerActivations(s, config::Recompute::kNone).value, 243531776.0);
    EXPECT_DOUBLE_EQ(memory::LayerActivations(s, config::Recompute::kSelective).value, 243531776.0);
    EXPECT_DOUBLE_EQ(memory::LayerActivations(s, config::Recompute::kFull).value, 16777216.0);
  }
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

// The same step with the K/V all-gathered (Llama 3's CP) instead of passed
// around the ring: the gathers and the dK/dV reduce-scatter block the compute
// stream, so the exposed TP/CP row grows. The step itself may come out a
// little either way: the ring's attention runs as per-step chunks, each a
// smaller launch grid on the SMs (sim/cost/attention_grid.h), where the
// all-gather runs one kernel over all keys.
TEST(ContextParallel, AllGatherCpExposesWhatTheRingOverlaps) {
  config::PlanConfig plan;
  plan.tp = 2;
  plan.sequence_parallel = true;
  plan.dp = 2;
  plan.cp = 2;
  plan.global_batch = 8;
  plan.sharding = config::Sharding::kZero1;
  // What the gathers expose, not what they take from compute beside them.
  plan.overlap_comm_sms = 0;
  auto s = testing::Scenario(Llama(), 8, 16384, plan);
  simulate::Options o;
  o.simulate_if_out_of_memory = true;
  auto ring = simulate::Simulate(s, o);
  s.plan.cp_comm = config::CpComm::kAllGather;
  auto ag = simulate::Simulate(s, o);
  EXPECT_GT(ag.breakdown.tp_exposed.seconds(), ring.breakdown.tp_exposed.seconds());
  EXPECT_GT(ag.iteration.seconds(), 0.97 * ring.iteration.seconds());
  EXPECT_LT(ag.iteration.seconds(), 1.5 * ring.iteration.seconds());
  EXPECT_DOUBLE_EQ(ag.model_flops.value, ring.model_flops.value);
}

}  // namespace
}  // namespace stacksim::workload
