// Selective recomputation by module (plan.recompute_modules, Megatron-Core's
// --recompute-modules): per module, the activation bytes a layer stops
// keeping and the forward work it re-runs, hand-counted for a small dense
// model and for DeepSeek-V3; the default ["core_attn"] is the old selective
// recomputation; bad input is an error naming plan.recompute_modules.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "sim/config/scenario.h"
#include "sim/memory/memory_model.h"
#include "sim/simulate/simulate.h"
#include "sim/workload/layer_ops.h"
#include "tests/fixtures.h"
#include "tests/input_error.h"

namespace stacksim::workload {
namespace {

using config::Precision;
using config::Recompute;
using config::RecomputeModule;
using config::RecomputeModules;

const std::string kRoot = std::string(STACKSIM_SOURCE_DIR) + "/";

RecomputeModules Only(std::initializer_list<RecomputeModule> list) {
  RecomputeModules m;
  for (RecomputeModule x : list) m.Add(x);
  return m;
}

LayerShape With(LayerShape s, RecomputeModules m) {
  s.recompute_modules = m;
  return s;
}

double Act(const LayerShape& s, Recompute r = Recompute::kSelective) { return memory::LayerActivations(s, r).value; }

const Op* Find(const std::vector<Op>& ops, const std::string& name) {
  for (const Op& op : ops) {
    if (op.name == name) return &op;
  }
  return nullptr;
}

std::vector<std::string> Names(const std::vector<Op>& ops) {
  std::vector<std::string> out;
  for (const Op& op : ops) out.push_back(op.name);
  return out;
}

// Bytes moved by the memory-bound kernels of a list.
double MemoryBoundBytes(const std::vector<Op>& ops) {
  double b = 0;
  for (const Op& op : ops) {
    if (!op.is_collective && op.compute.op_class == trace::OpClass::kMemoryBound) b += op.compute.bytes.value;
  }
  return b;
}

// ---- A small dense model ----
//
// Llama-like: hidden 1024, 16 heads of 64, 4 KV heads, SwiGLU 2816, RMSNorm,
// no biases or dropout; tp 2 with SP, micro-batch 1, seq 2048, bf16, flash
// attention. T = 2048 tokens, Tn = 1024 per rank in the norm region; per rank
// 8 query heads (512 wide), 2 KV heads (128), FFN 1408 per gated half.
config::ModelConfig SmallDense() { return testing::SmallLlamaModel(2); }

config::PlanConfig DensePlan(config::AttentionImpl attention = config::AttentionImpl::kFlash) {
  config::PlanConfig p;
  p.tp = 2;
  p.sequence_parallel = true;
  p.micro_batch = 1;
  p.attention = attention;
  p.recompute = Recompute::kSelective;
  return p;
}

LayerShape Dense(RecomputeModules m, config::AttentionImpl attention = config::AttentionImpl::kFlash) {
  return With(LayerShape::From(SmallDense(), DensePlan(attention), 2048, testing::RoundProfile()), m);
}

// Hand count without recomputation (bytes, e = 2):
//   attention: norm input 2 x 1024 x 1024 = 2,097,152; QKV input (the norm's
//   output, kept by TE's LayerNormLinear) 2,097,152; Q and K 2 x 2048 x 640 =
//   2,621,440; V 2 x 2048 x 128 = 524,288; projection input 2 x 2048 x 512 =
//   2,097,152; log-sum-exp 4 x 2048 x 8 = 65,536: 9,502,720.
//   MLP: norm input 2,097,152; FC1 input 2,097,152; SwiGLU input 2 x 2048 x
//   2816 = 11,534,336; FC2 input 2 x 2048 x 1408 = 5,767,168: 21,495,808.
//   Layer: 30,998,528.
constexpr double kDenseLayer = 30998528.0;
constexpr double kDenseMlpInside = 2097152.0 + 11534336.0 + 5767168.0;  // 19,398,656

TEST(RecomputeModules, DefaultIsTheOldSelectiveRecomputation) {
  EXPECT_EQ(config::PlanConfig{}.recompute_modules, RecomputeModules::Default());
  EXPECT_EQ(LayerShape{}.recompute_modules, RecomputeModules::Default());
  // Flash attention: nothing to recompute, nothing dropped (as before).
  const LayerShape flash = Dense(RecomputeModules::Default());
  EXPECT_DOUBLE_EQ(Act(flash, Recompute::kNone), kDenseLayer);
  EXPECT_DOUBLE_EQ(Act(flash), kDenseLayer);
  EXPECT_TRUE(SelectiveRecompute(flash).empty());
  // Unfused attention: the scores go (Korthikanti et al.), and QK^T, softmax,
  // PV are re-run: 8 heads x 2048^2 scores, softmax output and dropout output
  // 2 bytes each, no dropout mask: 4 x 33,554,432 = 134,217,728 bytes.
  const LayerShape unfused = Dense(RecomputeModules::Default(), config::AttentionImpl::kUnfused);
  const double scores = 4.0 * 8 * 2048 * 2048;
  EXPECT_DOUBLE_EQ(Act(unfused, Recompute::kNone), kDenseLayer - 65536.0 + scores);
  EXPECT_DOUBLE_EQ(Act(unfused), kDenseLayer - 65536.0);
  const auto ops = SelectiveRecompute(unfused);
  EXPECT_EQ(Names(ops), (std::vector<std::string>{"recompute-attention-qk", "recompute-softmax", "recompute-attention-pv"}));
  // QK^T and PV: 2 x 2 x 2048^2 x 64 x 8 heads.
  EXPECT_DOUBLE_EQ(SumFlops(ops).value, 2.0 * 2 * 2048.0 * 2048 * 64 * 8);
  // An empty module list keeps the scores and re-runs nothing.
  EXPECT_DOUBLE_EQ(Act(Dense({}, config::AttentionImpl::kUnfused)), kDenseLayer - 65536.0 + scores);
  EXPECT_TRUE(SelectiveRecompute(Dense({}, config::AttentionImpl::kUnfused)).empty());
}

// Megatron-LM 2021-22's unfused attention: the fused scale-mask-softmax has
// no dropout, torch.nn.Dropout follows it as an eager kernel of its own
// (megatron/model/transformer.py, fused_softmax.py). Per score (8 heads x
// 2048^2 on the rank, e = 2): softmax 4 bytes; dropout reads 2, writes 2 and
// a 1-byte mask, at the eager dropout rate even when the framework fuses its
// other kernels; backward: dropout 5 bytes, then the softmax's 6.
TEST(RecomputeModules, UnfusedAttentionDropsOutInAKernelOfItsOwn) {
  LayerShape s = Dense(RecomputeModules::Default(), config::AttentionImpl::kUnfused);
  s.dropout = true;
  ASSERT_TRUE(s.kernels.fused);
  const double scores = 8.0 * 2048 * 2048;
  const auto fwd = LayerForward(s);
  const Op* softmax = Find(fwd, "softmax");
  const Op* dropout = Find(fwd, "attention-dropout");
  ASSERT_NE(softmax, nullptr);
  ASSERT_NE(dropout, nullptr);
  EXPECT_EQ(dropout - softmax, 1);  // right after the softmax, before P x V
  EXPECT_DOUBLE_EQ(softmax->compute.bytes.value, 4.0 * scores);
  EXPECT_DOUBLE_EQ(dropout->compute.bytes.value, 5.0 * scores);
  EXPECT_EQ(dropout->role, trace::TaskRole::kAttention);
  EXPECT_FLOAT_EQ(dropout->compute.bandwidth_efficiency, static_cast<float>(2415.0 / 4152));
  const auto bwd = LayerBackward(s);
  const Op* dropout_bwd = Find(bwd, "attention-dropout-bwd");
  const Op* softmax_bwd = Find(bwd, "softmax-bwd");
  ASSERT_NE(dropout_bwd, nullptr);
  ASSERT_NE(softmax_bwd, nullptr);
  EXPECT_LT(dropout_bwd, softmax_bwd);  // the gradient reaches the dropout first
  EXPECT_DOUBLE_EQ(dropout_bwd->compute.bytes.value, 5.0 * scores);
  EXPECT_DOUBLE_EQ(softmax_bwd->compute.bytes.value, 6.0 * scores);
  // Without dropout, no kernel for it.
  s.dropout = false;
  EXPECT_EQ(Find(LayerForward(s), "attention-dropout"), nullptr);
  EXPECT_EQ(Find(LayerBackward(s), "attention-dropout-bwd"), nullptr);
}

// torchtitan's op policy on the small dense model (tp 2, SP): the block's
// input 2,097,152; the 1st, 3rd, 5th and 7th mm outputs: wq 2 x 2048 x 512 =
// 2,097,152, wv 2 x 2048 x 128 = 524,288, w1 2 x 2048 x 1408 = 5,767,168, w2
// 2 x 2048 x 1024 = 4,194,304; SDPA's output 2,097,152 and log-sum-exp
// 65,536; the two reduce-scatters' outputs 2 x 2,097,152: 21,037,056.
TEST(RecomputeModules, OpPolicySavesEveryOtherMatmulSdpaAndReduceScatters) {
  LayerShape s = Dense(RecomputeModules::Default());
  s.selective_policy = config::SelectivePolicy::kOpPolicy;
  EXPECT_DOUBLE_EQ(Act(s), 21037056.0);
  EXPECT_DOUBLE_EQ(Act(s, Recompute::kNone), kDenseLayer);  // only selective changes
  // The backward re-runs wk, wo and w3 (2 x 2048 x n x k each), not wq, wv,
  // w1 or w2, and the norms, RoPE and SwiGLU.
  const auto ops = SelectiveRecompute(s);
  for (const char* name : {"recompute-wk", "recompute-wo", "recompute-w3", "recompute-swiglu", "recompute-rope",
                           "recompute-input-norm", "recompute-mlp-norm"}) {
    EXPECT_NE(Find(ops, name), nullptr) << name;
  }
  for (const char* name : {"recompute-wq", "recompute-wv", "recompute-w1", "recompute-w2", "recompute-qkv"}) {
    EXPECT_EQ(Find(ops, name), nullptr) << name;
  }
  EXPECT_DOUBLE_EQ(SumFlops(ops).value, 2.0 * 2048 * (128.0 * 1024 + 1024.0 * 512 + 1408.0 * 1024));
  for (const Op& op : ops) EXPECT_TRUE(op.recompute) << op.name;
}

// MaxText's save_qkv_proj on the same model: the layer's input 2 x 1024 x
// 1024 = 2,097,152 and the QKV outputs 2 x 2048 x (512 + 2 x 128) =
// 3,145,728 are kept; the backward re-runs the whole forward but the QKV
// GEMM (2 x 2048 x 768 x 1024 FLOPs).
TEST(RecomputeModules, SaveQkvProjKeepsTheLayerInputAndTheProjections) {
  LayerShape s = Dense(RecomputeModules::Default());
  s.selective_policy = config::SelectivePolicy::kSaveQkvProj;
  EXPECT_DOUBLE_EQ(Act(s), 2097152.0 + 3145728.0);
  EXPECT_DOUBLE_EQ(Act(s, Recompute::kNone), kDenseLayer);
  const auto ops = SelectiveRecompute(s);
  EXPECT_EQ(Find(ops, "recompute-qkv"), nullptr);
  for (const char* name : {"recompute-attn-proj", "recompute-fc1", "recompute-fc2", "recompute-input-norm"}) {
    EXPECT_NE(Find(ops, name), nullptr) << name;
  }
  const double forward = SumFlops(LayerForward(s)).value;
  EXPECT_DOUBLE_EQ(SumFlops(ops).value, forward - 2.0 * 2048 * 768 * 1024);
  for (const Op& op : ops) EXPECT_TRUE(op.recompute) << op.name;
}

// DTensor's sequence parallelism (torchtitan) keeps the all-gathered input
// of the QKV and FC1 linears: 2 x (2048 - 1024) x 1024 bytes more each.
TEST(RecomputeModules, DtensorSequenceParallelKeepsTheGatheredLinearInputs) {
  LayerShape s = Dense(RecomputeModules::Default());
  s.sp_keeps_gathered_inputs = true;
  EXPECT_DOUBLE_EQ(Act(s, Recompute::kNone), kDenseLayer + 2 * 2.0 * 1024 * 1024);
}

TEST(RecomputeModules, DenseMlpKeepsOnlyItsInput) {
  const LayerShape s = Dense(Only({RecomputeModule::kMlp}));
  EXPECT_DOUBLE_EQ(Act(s), kDenseLayer - kDenseMlpInside);  // 11,599,872
  // Only with selective recomputation.
  EXPECT_DOUBLE_EQ(Act(s, Recompute::kNone), kDenseLayer);
  const auto ops = SelectiveRecompute(s);
  EXPECT_EQ(Names(ops), (std::vector<std::string>{"recompute-mlp-norm", "recompute-ag-mlp", "recompute-fc1",
                                                  "recompute-swiglu", "recompute-fc2", "recompute-tp-mlp"}));
  // FC1 2 x 2048 x 2816 x 1024 + FC2 2 x 2048 x 1024 x 1408.
  EXPECT_DOUBLE_EQ(SumFlops(ops).value, 11811160064.0 + 5905580032.0);
  // Norm (read and write 1024 x 1024) and SwiGLU (read 2 x 1408, write 1408 per token).
  EXPECT_DOUBLE_EQ(MemoryBoundBytes(ops), 2.0 * 2 * 1024 * 1024 + 2.0 * 3 * 2048 * 1408);
  // The SP all-gather before FC1 and the reduce-scatter after FC2, 2048 x 1024 x 2 each.
  EXPECT_TRUE(Find(ops, "recompute-ag-mlp")->is_collective);
  EXPECT_DOUBLE_EQ(Find(ops, "recompute-ag-mlp")->bytes.value, 4194304.0);
  EXPECT_EQ(Find(ops, "recompute-tp-mlp")->collective, trace::CollectiveKind::kReduceScatter);
  EXPECT_DOUBLE_EQ(Find(ops, "recompute-tp-mlp")->bytes.value, 4194304.0);
}

TEST(RecomputeModules, ModulesADenseLayerDoesNotHaveChangeNothing) {
  // The norms are fused into QKV and FC1 (TE LayerNormLinear, Megatron-Core's
  // IdentityOp norms): layernorm has nothing to recompute here; MoE and MLA
  // modules have no module to act on.
  for (RecomputeModule m : {RecomputeModule::kLayerNorm, RecomputeModule::kMlaUpProj, RecomputeModule::kMoeAct,
                            RecomputeModule::kMoe, RecomputeModule::kSharedExperts}) {
    const LayerShape s = Dense(Only({m}));
    EXPECT_DOUBLE_EQ(Act(s), kDenseLayer) << config::RecomputeModuleName(m);
    EXPECT_TRUE(SelectiveRecompute(s).empty()) << config::RecomputeModuleName(m);
  }
}

TEST(RecomputeModules, DenseStepRecomputesTheMlpAndSavesMemory) {
  auto scenario = [](RecomputeModules m) {
    config::PlanConfig plan = DensePlan();
    plan.dp = 4;
    plan.global_batch = 8;
    plan.recompute_modules = m;
    return testing::Scenario(SmallDense(), 8, 2048, plan);
  };
  simulate::Options o;
  o.keep_trace = true;
  const auto base = simulate::Simulate(scenario(RecomputeModules::Default()), o);
  const auto mlp = simulate::Simulate(scenario(Only({RecomputeModule::kMlp})), o);
  // 2 layers x 2 micro-batches re-run their MLP: slower, and 1 micro-batch in
  // flight x 2 layers x 19,398,656 bytes fewer, plus one layer's MLP back
  // during its backward.
  EXPECT_GT(mlp.iteration.seconds(), base.iteration.seconds());
  const auto base_mem = memory::EstimateMemory(scenario(RecomputeModules::Default()));
  const auto mlp_mem = memory::EstimateMemory(scenario(Only({RecomputeModule::kMlp})));
  EXPECT_DOUBLE_EQ(base_mem[0].activations.value - mlp_mem[0].activations.value,
                   base_mem[0].in_flight_micro_batches * 2 * kDenseMlpInside - kDenseMlpInside);
  int fc1 = 0;
  for (size_t i = 0; i < mlp.trace->size(); ++i) {
    if (mlp.trace->name(mlp.trace->task(static_cast<trace::TaskId>(i)).name) == "recompute-fc1") ++fc1;
  }
  EXPECT_EQ(fc1, 2 * 2);
}

// ---- DeepSeek-V3 ----
//
// tp 1 (as DeepSeek trained), seq 4096, micro-batch 1, flash attention, EP 64
// with uniform routing: T = Tn = 4096 tokens, 4 local experts of 8192 tokens
// each (32,768 routed copies = 4096 x top-8), h 7168, expert FFN 2048, one
// shared expert of 2048, 128 heads of 192 (Q, K) and 128 (V), latents 1536 +
// 512, RoPE key 64.
config::ModelConfig DeepSeekV3() { return config::LoadModelFile(kRoot + "models/deepseek-v3.json"); }

config::PlanConfig V3Plan(Precision precision) {
  config::PlanConfig p;
  p.micro_batch = 1;
  p.ep = 64;
  p.dp = 64;
  p.precision = precision;
  p.recompute = Recompute::kSelective;
  return p;
}

LayerShape V3Dense(RecomputeModules m, Precision precision = Precision::kBf16) {
  return With(LayerShape::From(DeepSeekV3(), V3Plan(precision), 4096, testing::RoundProfile()), m);
}

LayerShape V3Moe(RecomputeModules m, Precision precision = Precision::kBf16) {
  const auto model = DeepSeekV3();
  const auto plan = V3Plan(precision);
  return With(LayerShape::From(model, plan, 4096, testing::RoundProfile()).Moe(model, plan), m);
}

// Hand count, bf16, without recomputation (mla_test.cc has the attention
// terms): attention 824,180,736 (input norm input and output 58,720,256 each,
// latents before and after their norms 16,777,216 each, Q/K/V 536,870,912,
// O 134,217,728, log-sum-exp 2,097,152).
// Dense MLP (layers 0-2): 570,425,344 (norm input and FC1 input 58,720,256
// each, SwiGLU input 2 x 4096 x 36864 = 301,989,888, FC2 input 150,994,944).
// MoE block (layers 3-60): norm input 58,720,256; router input (the norm's
// output) 58,720,256; fp32 router probabilities 4 x 4096 x 256 = 4,194,304;
// dispatched copies (expert FC1 input) 2 x 32768 x 7168 = 469,762,048; SwiGLU
// input 2 x 32768 x 4096 = 268,435,456; expert FC2 input 2 x 32768 x 2048 =
// 134,217,728; expert outputs for the combine 469,762,048; shared expert FC1
// input 58,720,256, SwiGLU input 33,554,432, FC2 input 16,777,216:
// 1,572,864,000.
constexpr double kV3Attention = 824180736.0;
constexpr double kV3DenseLayer = kV3Attention + 570425344.0;  // 1,394,606,080
constexpr double kV3MoeLayer = kV3Attention + 1572864000.0;   // 2,397,044,736

TEST(RecomputeModules, DeepSeekV3LayersWithoutRecomputeMatchHandCount) {
  EXPECT_DOUBLE_EQ(Act(V3Dense({}), Recompute::kNone), kV3DenseLayer);
  EXPECT_DOUBLE_EQ(Act(V3Moe({}), Recompute::kNone), kV3MoeLayer);
  // The default drops nothing (flash attention).
  EXPECT_DOUBLE_EQ(Act(V3Moe(RecomputeModules::Default())), kV3MoeLayer);
}

// layernorm: MLA's input norm and the MoE layer's norm are modules of their
// own. Dropped: the input norm's output 58,720,256; on a MoE layer also the
// MoE norm's output (the router's input) 58,720,256 and the shared expert
// FC1's input (the same output) 58,720,256. The dense MLP's norm is fused
// into FC1 and stays.
TEST(RecomputeModules, DeepSeekV3LayerNorm) {
  const auto m = Only({RecomputeModule::kLayerNorm});
  EXPECT_DOUBLE_EQ(kV3DenseLayer - Act(V3Dense(m)), 58720256.0);
  EXPECT_DOUBLE_EQ(kV3MoeLayer - Act(V3Moe(m)), 3 * 58720256.0);
  const auto dense_ops = SelectiveRecompute(V3Dense(m));
  EXPECT_EQ(Names(dense_ops), (std::vector<std::string>{"recompute-input-norm"}));
  const auto moe_ops = SelectiveRecompute(V3Moe(m));
  EXPECT_EQ(Names(moe_ops), (std::vector<std::string>{"recompute-mlp-norm", "recompute-input-norm"}));
  EXPECT_DOUBLE_EQ(SumFlops(moe_ops).value, 0.0);
  // Each norm reads and writes 4096 x 7168 in bf16.
  EXPECT_DOUBLE_EQ(MemoryBoundBytes(moe_ops), 2 * 2.0 * 2 * 4096 * 7168);
}

// mla_up_proj keeps only its inputs (the latents, and the 64-wide RoPE key,
// 2 x 4096 x 64 = 524,288, which K held before) and drops the normed latents
// 16,777,216 and Q, K, V 536,870,912: 553,123,840 fewer bytes. It re-runs the
// latent norms, the up-projections (q-up 75,497,472 + kv-up 33,554,432 FLOPs
// per token) and RoPE.
TEST(RecomputeModules, DeepSeekV3MlaUpProjection) {
  const auto m = Only({RecomputeModule::kMlaUpProj});
  EXPECT_DOUBLE_EQ(kV3DenseLayer - Act(V3Dense(m)), 553123840.0);
  EXPECT_DOUBLE_EQ(kV3MoeLayer - Act(V3Moe(m)), 553123840.0);
  const auto ops = SelectiveRecompute(V3Moe(m));
  EXPECT_EQ(Names(ops), (std::vector<std::string>{"recompute-q-norm", "recompute-kv-norm", "recompute-q-up",
                                                  "recompute-kv-up", "recompute-mla-rope"}));
  EXPECT_DOUBLE_EQ(SumFlops(ops).value, 4096.0 * (75497472.0 + 33554432.0));
  // The same kernels as the forward's.
  const auto fwd = LayerForward(V3Moe(m));
  for (const char* name : {"q-norm", "kv-norm", "q-up", "kv-up", "mla-rope"}) {
    EXPECT_DOUBLE_EQ(Find(ops, std::string("recompute-") + name)->compute.bytes.value,
                     Find(fwd, name)->compute.bytes.value)
        << name;
  }
}

// Under SP (tp 8) the recomputation gathers the normed latents again (the
// RoPE key was gathered in the forward and kept): 4096 x (1536 + 512) x 2.
TEST(RecomputeModules, MlaUpProjectionRegathersTheLatentsUnderSequenceParallelism) {
  const auto model = DeepSeekV3();
  config::PlanConfig plan = V3Plan(Precision::kBf16);
  plan.tp = 8;
  plan.sequence_parallel = true;
  const LayerShape s =
      With(LayerShape::From(model, plan, 4096, testing::RoundProfile()), Only({RecomputeModule::kMlaUpProj}));
  const auto ops = SelectiveRecompute(s);
  const Op* ag = Find(ops, "recompute-ag-attn");
  ASSERT_NE(ag, nullptr);
  EXPECT_EQ(ag->collective, trace::CollectiveKind::kAllGather);
  EXPECT_DOUBLE_EQ(ag->bytes.value, 4096.0 * 2048 * 2);
  // Memory: the dropped terms are per token shard or per local head (1/8 of
  // tp 1's), but the kept RoPE key is the gathered one, all 4096 tokens:
  // (16,777,216 + 536,870,912) / 8 - 524,288.
  EXPECT_DOUBLE_EQ(Act(With(s, {})) - Act(s), 553648128.0 / 8 - 524288.0);
}

// moe_act drops the expert activation's output (FC2's input, 134,217,728) and
// re-runs the activation: read 2 x 2048, write 2048 per routed copy.
TEST(RecomputeModules, DeepSeekV3MoeActivation) {
  const auto m = Only({RecomputeModule::kMoeAct});
  EXPECT_DOUBLE_EQ(kV3MoeLayer - Act(V3Moe(m)), 134217728.0);
  EXPECT_DOUBLE_EQ(Act(V3Dense(m)), kV3DenseLayer);  // dense layers have no experts
  const auto ops = SelectiveRecompute(V3Moe(m));
  EXPECT_EQ(Names(ops), (std::vector<std::string>{"recompute-expert-act"}));
  EXPECT_DOUBLE_EQ(MemoryBoundBytes(ops), 2.0 * 3 * 32768 * 2048);
  EXPECT_DOUBLE_EQ(Find(ops, "recompute-expert-act")->compute.bytes.value,
                   Find(LayerForward(V3Moe(m)), "expert-act")->compute.bytes.value);
}

// shared_experts drops the shared expert's FC1 input, SwiGLU input and FC2
// input (58,720,256 + 33,554,432 + 16,777,216) and re-runs its MLP: 2 x 3 x
// 7168 x 2048 FLOPs per token.
TEST(RecomputeModules, DeepSeekV3SharedExperts) {
  const auto m = Only({RecomputeModule::kSharedExperts});
  EXPECT_DOUBLE_EQ(kV3MoeLayer - Act(V3Moe(m)), 109051904.0);
  const auto ops = SelectiveRecompute(V3Moe(m));
  EXPECT_EQ(Names(ops), (std::vector<std::string>{"recompute-shared-fc1", "recompute-shared-act", "recompute-shared-fc2"}));
  EXPECT_DOUBLE_EQ(SumFlops(ops).value, 4096.0 * 2 * 3 * 7168 * 2048);
}

// moe keeps the MoE block's input (the norm's output) and drops everything
// inside: probabilities, dispatched copies, SwiGLU input, FC2 input, expert
// outputs and the shared expert: 1,455,423,488. It re-runs the router (2 x
// 7168 x 256 per token), the routed experts (8 per token, 2 x 3 x 7168 x
// 2048 each), the shared expert, and both all-to-alls.
TEST(RecomputeModules, DeepSeekV3WholeMoe) {
  const auto m = Only({RecomputeModule::kMoe});
  EXPECT_DOUBLE_EQ(kV3MoeLayer - Act(V3Moe(m)), 1455423488.0);
  // moe subsumes moe_act and shared_experts.
  const auto all = Only({RecomputeModule::kMoe, RecomputeModule::kMoeAct, RecomputeModule::kSharedExperts});
  EXPECT_DOUBLE_EQ(Act(V3Moe(all)), Act(V3Moe(m)));
  EXPECT_EQ(Names(SelectiveRecompute(V3Moe(all))), Names(SelectiveRecompute(V3Moe(m))));
  const auto ops = SelectiveRecompute(V3Moe(m));
  const double per_token = 2.0 * 7168 * 256 + 8 * 2.0 * 3 * 7168 * 2048 + 2.0 * 3 * 7168 * 2048;
  EXPECT_DOUBLE_EQ(SumFlops(ops).value, 4096.0 * per_token);
  // Every expert-parallel collective of the forward runs again.
  std::vector<std::string> fwd_ep, re_ep;
  for (const Op& op : LayerForward(V3Moe(m))) {
    if (op.is_collective && op.ep_group) fwd_ep.push_back("recompute-" + op.name);
  }
  for (const Op& op : ops) {
    if (op.is_collective && op.ep_group) re_ep.push_back(op.name);
  }
  EXPECT_FALSE(fwd_ep.empty());
  EXPECT_EQ(re_ep, fwd_ep);
  EXPECT_NE(Find(ops, "recompute-ep-dispatch"), nullptr);
  EXPECT_NE(Find(ops, "recompute-ep-combine"), nullptr);
}

// The dense MLP of layers 0-2: FC1 input, SwiGLU input and FC2 input
// (58,720,256 + 301,989,888 + 150,994,944); 2 x 3 x 7168 x 18432 FLOPs per token.
TEST(RecomputeModules, DeepSeekV3DenseMlp) {
  const auto m = Only({RecomputeModule::kMlp});
  EXPECT_DOUBLE_EQ(kV3DenseLayer - Act(V3Dense(m)), 511705088.0);
  EXPECT_DOUBLE_EQ(Act(V3Moe(m)), kV3MoeLayer);  // mlp is for dense layers only, as in Megatron-Core
  EXPECT_DOUBLE_EQ(SumFlops(SelectiveRecompute(V3Dense(m))).value, 4096.0 * 792723456.0);
}

// DeepSeek's choice (arXiv:2412.19437 §3.2.3): layernorm + mla_up_proj +
// moe_act. bf16 MoE layer: 176,160,768 + 553,123,840 + 134,217,728 =
// 863,502,336 fewer bytes (the savings add up: no tensor is counted twice).
// FP8 (linear inputs kept in one byte): the input norm's output as two FP8
// copies 58,720,256, router input 58,720,256, shared FC1's FP8 input
// 29,360,128; normed latents 8,388,608 + Q/K/V 536,870,912 - RoPE key 524,288;
// expert FC2's FP8 input 67,108,864: 758,644,736 fewer of 2,116,026,368.
TEST(RecomputeModules, DeepSeekV3AsDeepSeekTrainedIt) {
  const auto m = Only({RecomputeModule::kLayerNorm, RecomputeModule::kMlaUpProj, RecomputeModule::kMoeAct});
  EXPECT_DOUBLE_EQ(kV3MoeLayer - Act(V3Moe(m)), 863502336.0);
  EXPECT_DOUBLE_EQ(Act(V3Moe({}, Precision::kFp8), Recompute::kNone), 2116026368.0);
  EXPECT_DOUBLE_EQ(Act(V3Moe({}, Precision::kFp8)) - Act(V3Moe(m, Precision::kFp8)), 758644736.0);
  // Under FP8 the linear layers that kept an FP8 copy of a recomputed tensor
  // cast it again in the backward: the down-projections' and shared FC1's
  // inputs (4096 x 7168) and expert FC2's input (32768 x 2048), 3 bytes per
  // element (read bf16, write FP8).
  const auto ops = SelectiveRecompute(V3Moe(m, Precision::kFp8));
  for (const char* name : {"recompute-shared-fc1-cast-x", "recompute-q-down-cast-x", "recompute-kv-down-cast-x"}) {
    ASSERT_NE(Find(ops, name), nullptr) << name;
    EXPECT_DOUBLE_EQ(Find(ops, name)->compute.bytes.value, 3.0 * 4096 * 7168) << name;
  }
  EXPECT_DOUBLE_EQ(Find(ops, "recompute-expert-fc2-cast-x")->compute.bytes.value, 3.0 * 32768 * 2048);
  EXPECT_EQ(Find(SelectiveRecompute(V3Moe(m)), "recompute-q-down-cast-x"), nullptr);  // bf16: no casts
  // Up-projection FLOPs are the only GEMM work re-run.
  EXPECT_DOUBLE_EQ(SumFlops(ops).value, 4096.0 * (75497472.0 + 33554432.0));
}

// A DeepSeek-V3-shaped step (3 dense + 1 MoE layer, 8 GPUs) with DeepSeek's
// modules holds less and re-runs the up-projections in its trace.
TEST(RecomputeModules, DeepSeekV3StepRecomputes) {
  auto scenario = [](RecomputeModules m) {
    config::ModelConfig model = DeepSeekV3();
    model.num_layers = 4;
    config::PlanConfig plan;
    plan.tp = 8;
    plan.sequence_parallel = true;
    plan.ep = 8;
    plan.micro_batch = 1;
    plan.global_batch = 2;
    plan.sharding = config::Sharding::kZero1;
    plan.recompute = Recompute::kSelective;
    plan.recompute_modules = m;
    return testing::Scenario(model, 8, 4096, plan);
  };
  const auto m = Only({RecomputeModule::kLayerNorm, RecomputeModule::kMlaUpProj, RecomputeModule::kMoeAct});
  simulate::Options o;
  o.keep_trace = true;
  o.simulate_if_out_of_memory = true;
  const auto base = simulate::Simulate(scenario(RecomputeModules::Default()), o);
  const auto ds = simulate::Simulate(scenario(m), o);
  EXPECT_GT(ds.iteration.seconds(), base.iteration.seconds());
  EXPECT_LT(memory::EstimateMemory(scenario(m))[0].activations.value,
            memory::EstimateMemory(scenario(RecomputeModules::Default()))[0].activations.value);
  int up = 0;
  for (size_t i = 0; i < ds.trace->size(); ++i) {
    if (ds.trace->name(ds.trace->task(static_cast<trace::TaskId>(i)).name) == "recompute-kv-up") ++up;
  }
  EXPECT_EQ(up, 5 * 2);  // (4 layers and the MTP module's) x 2 micro-batches
}

// ---- Input ----

TEST(RecomputeModules, SetOnTheCommandLineAsAJsonArray) {
  const nlohmann::json doc = ReadJsonFile(kRoot + "scenarios/llama3-8b-8xh100.json");
  config::ScenarioOptions opt;
  opt.overrides = {"plan.recompute=selective", R"(plan.recompute_modules=["layernorm","mlp"])"};
  const auto s = config::ParseScenario(doc, "llama3-8b-8xh100.json", opt);
  EXPECT_TRUE(s.plan.recompute_modules.Has(RecomputeModule::kMlp));
  EXPECT_TRUE(s.plan.recompute_modules.Has(RecomputeModule::kLayerNorm));
  EXPECT_FALSE(s.plan.recompute_modules.Has(RecomputeModule::kCoreAttn));

  opt.overrides = {"plan.recompute=selective", R"(plan.recompute_modules=["mlp","rmsnorm"])"};
  InputError bad = testing::ErrorFrom([&] { config::ParseScenario(doc, "x.json", opt); });
  EXPECT_EQ(bad.file(), "--set");
  EXPECT_EQ(bad.key_path(), "plan.recompute_modules[1]");
  // The file's recompute is "full": modules need selective.
  opt.overrides = {R"(plan.recompute_modules=["mlp"])"};
  InputError mode = testing::ErrorFrom([&] { config::ParseScenario(doc, "x.json", opt); });
  EXPECT_EQ(mode.key_path(), "plan.recompute_modules");
}

}  // namespace
}  // namespace stacksim::workload
