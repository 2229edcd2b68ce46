// Multi-head latent attention (DeepSeek-V2/V3): forward and backward FLOPs
// against a hand count, the tensor-parallel split (heads split, the
// down-projections replicated), the reduction to ordinary attention when the
// widths agree, FP8, activation memory, and a whole DeepSeek-V3-shaped step.
#include <string>

#include <gtest/gtest.h>

#include "sim/config/scenario.h"
#include "sim/memory/memory_model.h"
#include "sim/simulate/simulate.h"
#include "sim/util/error.h"
#include "sim/workload/layer_ops.h"
#include "sim/workload/stage_layers.h"
#include "tests/fixtures.h"

namespace stacksim::workload {
namespace {

const std::string kModels = std::string(STACKSIM_SOURCE_DIR) + "/models/";

config::ModelConfig DeepSeekV3() { return config::LoadModelFile(kModels + "deepseek-v3.json"); }

config::PlanConfig Plan(int tp, bool sp, config::Precision precision = config::Precision::kBf16) {
  config::PlanConfig p;
  p.tp = tp;
  p.sequence_parallel = sp;
  p.micro_batch = 1;
  p.precision = precision;
  return p;
}

// A DeepSeek-V3 layer with a dense MLP (layers 0-2), sequence 4096.
LayerShape V3(int tp, bool sp = true, config::Precision precision = config::Precision::kBf16) {
  return LayerShape::From(DeepSeekV3(), Plan(tp, sp, precision), 4096, testing::RoundProfile());
}

const Op* Find(const std::vector<Op>& ops, const std::string& name) {
  for (const Op& op : ops) {
    if (op.name == name) return &op;
  }
  return nullptr;
}

double FlopsOf(const std::vector<Op>& ops, const std::string& name) {
  const Op* op = Find(ops, name);
  EXPECT_NE(op, nullptr) << name;
  return op ? op->compute.flops.value : 0.0;
}

// The MLA linear GEMMs of one layer's forward.
double MlaLinearFlops(const std::vector<Op>& ops) {
  double f = 0;
  for (const char* name : {"q-down", "kv-down", "q-up", "kv-up", "attn-proj"}) f += FlopsOf(ops, name);
  return f;
}

// Hand count per token, DeepSeek-V3, tp 1 (2 FLOPs per multiply-add):
//   W_DQ      2 x 7168 x 1536        =  22,020,096
//   W_DKV+W_KR 2 x 7168 x (512 + 64) =   8,257,536
//   W_UQ      2 x 1536 x 128 x 192   =  75,497,472
//   W_UK/W_UV 2 x 512 x 128 x 256    =  33,554,432
//   W_O       2 x 128 x 128 x 7168   = 234,881,024
//   sum 374,210,560 = 2 x the 187,105,280 attention weights (norms aside).
// Causal flash attention, seq 4096: a token meets 2048 keys on average, per
// head 2 x (192 for QK^T + 128 for PV): 2048 x 128 x 640 = 167,772,160.
TEST(Mla, ForwardFlopsPerTokenMatchHandCount) {
  const auto fwd = LayerForward(V3(1));
  const double T = 4096;
  EXPECT_DOUBLE_EQ(FlopsOf(fwd, "q-down") / T, 22020096.0);
  EXPECT_DOUBLE_EQ(FlopsOf(fwd, "kv-down") / T, 8257536.0);
  EXPECT_DOUBLE_EQ(FlopsOf(fwd, "q-up") / T, 75497472.0);
  EXPECT_DOUBLE_EQ(FlopsOf(fwd, "kv-up") / T, 33554432.0);
  EXPECT_DOUBLE_EQ(FlopsOf(fwd, "attn-proj") / T, 234881024.0);
  EXPECT_DOUBLE_EQ(MlaLinearFlops(fwd) / T, 374210560.0);
  EXPECT_DOUBLE_EQ(FlopsOf(fwd, "attention") / T, 167772160.0);
  EXPECT_EQ(Find(fwd, "qkv"), nullptr);  // no fused QKV GEMM under MLA
  // The whole layer adds the dense SwiGLU MLP, 2 x 3 x 7168 x 18432 = 792,723,456.
  EXPECT_DOUBLE_EQ(SumFlops(fwd).value / T, 374210560.0 + 167772160.0 + 792723456.0);
  // Backward: every GEMM twice (dgrad, wgrad); flash attention recomputes S and
  // runs dQ, dK over 192 and dP, dV over 128: 2048 x 128 x 2 x (3 x 192 + 2 x 128)
  // = 436,207,616 per token (2.6x the forward, not the 2.5x of equal widths).
  const auto bwd = LayerBackward(V3(1));
  EXPECT_DOUBLE_EQ(FlopsOf(bwd, "attention-bwd") / T, 436207616.0);
  EXPECT_DOUBLE_EQ(SumFlops(bwd).value / T, 2 * 374210560.0 + 436207616.0 + 2 * 792723456.0);
}

// TP 8 with SP: the down-projections run on each rank's 512-token shard, the
// up-projections and W_O on all 4096 tokens for 16 of the 128 heads.
TEST(Mla, TensorParallelSplitsHeadsAndReplicatesDownProjections) {
  const auto fwd = LayerForward(V3(8));
  auto shape = [&](const char* name) {
    const Op* op = Find(fwd, name);
    EXPECT_NE(op, nullptr) << name;
    return op ? std::vector<int64_t>{op->compute.m, op->compute.n, op->compute.k} : std::vector<int64_t>{};
  };
  EXPECT_EQ(shape("q-down"), (std::vector<int64_t>{512, 1536, 7168}));
  EXPECT_EQ(shape("kv-down"), (std::vector<int64_t>{512, 576, 7168}));
  EXPECT_EQ(shape("q-up"), (std::vector<int64_t>{4096, 16 * 192, 1536}));
  EXPECT_EQ(shape("kv-up"), (std::vector<int64_t>{4096, 16 * 256, 512}));
  EXPECT_EQ(shape("attn-proj"), (std::vector<int64_t>{4096, 7168, 16 * 128}));
  // With SP every token's work is done once: 8 ranks' linear FLOPs = tp 1's.
  EXPECT_DOUBLE_EQ(8 * MlaLinearFlops(fwd), MlaLinearFlops(LayerForward(V3(1))));
  EXPECT_DOUBLE_EQ(8 * FlopsOf(fwd, "attention"), FlopsOf(LayerForward(V3(1)), "attention"));
  // Without SP each rank runs the replicated down-projections on all 4096
  // tokens: 7 extra copies of 4096 x (22,020,096 + 8,257,536).
  const auto no_sp = LayerForward(V3(8, /*sp=*/false));
  EXPECT_DOUBLE_EQ(8 * MlaLinearFlops(no_sp),
                   MlaLinearFlops(LayerForward(V3(1))) + 7.0 * 4096 * (22020096.0 + 8257536.0));

  // SP gathers the latents and the RoPE key, 4096 x (1536 + 512 + 64) x 2
  // bytes = 17,301,504, not the 4096 x 7168 x 2 = 58,720,256 of the hidden state.
  const Op* ag = Find(fwd, "ag-attn");
  ASSERT_NE(ag, nullptr);
  EXPECT_EQ(ag->collective, trace::CollectiveKind::kAllGather);
  EXPECT_DOUBLE_EQ(ag->bytes.value, 17301504.0);
  EXPECT_EQ(Find(no_sp, "ag-attn"), nullptr);
  // Backward: the latents re-gathered (async) for the up-projections' wgrad,
  // 4096 x (1536 + 512) x 2 = 16,777,216; the latent gradients
  // reduce-scattered before the down-projections (all-reduced without SP).
  const auto bwd = LayerBackward(V3(8));
  const Op* regather = Find(bwd, "ag-attn-input");
  ASSERT_NE(regather, nullptr);
  EXPECT_TRUE(regather->async);
  EXPECT_DOUBLE_EQ(regather->bytes.value, 16777216.0);
  const int regather_index = static_cast<int>(regather - bwd.data());
  EXPECT_EQ(Find(bwd, "q-up-wgrad")->wait_for, regather_index);
  EXPECT_EQ(Find(bwd, "kv-up-wgrad")->wait_for, regather_index);
  const Op* reduce = Find(bwd, "tp-attn-grad");
  ASSERT_NE(reduce, nullptr);
  EXPECT_EQ(reduce->collective, trace::CollectiveKind::kReduceScatter);
  EXPECT_DOUBLE_EQ(reduce->bytes.value, 17301504.0);
  EXPECT_LT(reduce - bwd.data(), Find(bwd, "kv-down-dgrad") - bwd.data());
  const auto bwd_no_sp = LayerBackward(V3(8, false));  // named: Find points into it
  const Op* reduce_no_sp = Find(bwd_no_sp, "tp-attn-grad");
  ASSERT_NE(reduce_no_sp, nullptr);
  EXPECT_EQ(reduce_no_sp->collective, trace::CollectiveKind::kAllReduce);
  EXPECT_EQ(Find(LayerBackward(V3(1)), "tp-attn-grad"), nullptr);
}

// Weight gradients go through GemmBackward, which marks them for the
// zero-bubble schedules; wgrad of W_DQ is x^T dy: 7168 x 1536 over 512 tokens.
TEST(Mla, WeightGradientsAreMarked) {
  const auto bwd = LayerBackward(V3(8));
  for (const char* name : {"q-down-wgrad", "kv-down-wgrad", "q-up-wgrad", "kv-up-wgrad", "attn-proj-wgrad"}) {
    const Op* op = Find(bwd, name);
    ASSERT_NE(op, nullptr) << name;
    EXPECT_TRUE(op->weight_grad) << name;
  }
  for (const Op& op : bwd) {
    if (op.name.find("-dgrad") != std::string::npos) {
      EXPECT_FALSE(op.weight_grad) << op.name;
    }
  }
  const Op* w = Find(bwd, "q-down-wgrad");
  EXPECT_EQ(w->compute.m, 7168);
  EXPECT_EQ(w->compute.n, 1536);
  EXPECT_EQ(w->compute.k, 512);
}

// With the value as wide as the query/key the MLA core is ordinary attention:
// the same flash (and unfused) kernels as an MHA layer of that head size.
TEST(Mla, EqualWidthsReduceToOrdinaryAttention) {
  for (bool flash : {true, false}) {
    LayerShape mla = V3(8);
    mla.attention.flash = flash;
    mla.mla.v_head_dim = mla.attention.head_dim;  // 192
    LayerShape mha = mla;
    mha.mla.enabled = false;
    std::vector<Op> a, b;
    for (bool backward : {false, true}) {
      a = backward ? LayerBackward(mla) : LayerForward(mla);
      b = backward ? LayerBackward(mha) : LayerForward(mha);
      auto core = [](const std::vector<Op>& ops) {
        std::vector<Op> out;
        for (const Op& op : ops) {
          if (op.role == trace::TaskRole::kAttention) out.push_back(op);
        }
        return out;
      };
      const auto ca = core(a), cb = core(b);
      ASSERT_EQ(ca.size(), cb.size());
      ASSERT_FALSE(ca.empty());
      for (size_t i = 0; i < ca.size(); ++i) {
        EXPECT_EQ(ca[i].name, cb[i].name);
        EXPECT_DOUBLE_EQ(ca[i].compute.flops.value, cb[i].compute.flops.value) << ca[i].name;
        EXPECT_DOUBLE_EQ(ca[i].compute.bytes.value, cb[i].compute.bytes.value) << ca[i].name;
      }
    }
  }
  // With DeepSeek-V3's widths the forward core costs what MHA with the mean
  // width (192 + 128) / 2 = 160 would.
  LayerShape mha160 = V3(8);
  mha160.mla.enabled = false;
  mha160.attention.head_dim = 160;
  EXPECT_DOUBLE_EQ(FlopsOf(LayerForward(V3(8)), "attention"), FlopsOf(LayerForward(mha160), "attention"));
}

// FP8: the five MLA GEMMs run in FP8 (the up-projections read the fused
// latent norm's FP8 output; the down-projections cast the input norm's
// output), flash attention stays bf16.
TEST(Mla, Fp8RunsLinearLayersInFp8AndAttentionInBf16) {
  const auto fwd = LayerForward(V3(8, true, config::Precision::kFp8));
  for (const char* name : {"q-down", "kv-down", "q-up", "kv-up", "attn-proj"}) {
    ASSERT_NE(Find(fwd, name), nullptr) << name;
    EXPECT_EQ(Find(fwd, name)->compute.precision, config::Precision::kFp8) << name;
    EXPECT_NE(Find(fwd, std::string(name) + "-cast-w"), nullptr) << name;
  }
  EXPECT_EQ(Find(fwd, "attention")->compute.precision, config::Precision::kBf16);
  EXPECT_NE(Find(fwd, "q-down-cast-x"), nullptr);
  EXPECT_NE(Find(fwd, "kv-down-cast-x"), nullptr);
  EXPECT_EQ(Find(fwd, "q-up-cast-x"), nullptr);
  EXPECT_EQ(Find(fwd, "kv-up-cast-x"), nullptr);
  const auto bwd = LayerBackward(V3(8, true, config::Precision::kFp8));
  EXPECT_EQ(Find(bwd, "kv-down-wgrad")->compute.precision, config::Precision::kFp8);
  EXPECT_EQ(Find(bwd, "attention-bwd")->compute.precision, config::Precision::kBf16);
}

// Hand count, DeepSeek-V3 dense-MLP layer, tp 1, seq 4096, bf16 (2 bytes),
// no dropout, flash attention:
//   input norm input 2 x 4096 x 7168                    =  58,720,256
//   its output (read by W_DQ and W_DKV, one tensor)       =  58,720,256
//   latents before the norms 2 x 4096 x (1536 + 512)      =  16,777,216
//   normed latents (the up-projections' inputs)           =  16,777,216
//   Q, K, V 2 x 4096 x 128 x (192 + 192 + 128)            = 536,870,912
//   attention output 2 x 4096 x 128 x 128                 = 134,217,728
//   log-sum-exp 4 x 4096 x 128                            =   2,097,152
//   MLP: norm input and output 2 x 58,720,256, SwiGLU input 2 x 4096 x 36864,
//   FC2 input 2 x 4096 x 18432: 570,425,344.
//   Total 1,394,606,080.
// FP8: the down-projections' input as two 1-byte copies (no change), the normed
// latents 1 byte (-8,388,608), W_O's 1-byte copy of O (+67,108,864), the MLP's
// FC1/FC2 inputs 1 byte (-29,360,128 - 75,497,472): 1,348,468,736.
TEST(Mla, ActivationMemoryMatchesHandCount) {
  using config::Recompute;
  EXPECT_DOUBLE_EQ(memory::LayerActivations(V3(1, false), Recompute::kNone).value, 1394606080.0);
  EXPECT_DOUBLE_EQ(memory::LayerActivations(V3(1, false, config::Precision::kFp8), Recompute::kNone).value,
                   1348468736.0);
  // Every term is per token or per local head: TP 8 with SP holds exactly 1/8.
  EXPECT_DOUBLE_EQ(memory::LayerActivations(V3(8, true), Recompute::kNone).value, 1394606080.0 / 8);
  // Flash attention keeps no scores: selective recomputation saves nothing;
  // full recomputation keeps the layer input.
  EXPECT_DOUBLE_EQ(memory::LayerActivations(V3(1, false), Recompute::kSelective).value, 1394606080.0);
  EXPECT_DOUBLE_EQ(memory::LayerActivations(V3(1, false), Recompute::kFull).value, 58720256.0);
}

// A DeepSeek-V3-shaped step (4 of its layers: 3 dense, 1 MoE) on 8 GPUs
// simulates, with the MLA GEMMs in the trace and MFU below 1.
TEST(Mla, DeepSeekV3StepSimulates) {
  config::ModelConfig m = DeepSeekV3();
  m.num_layers = 4;
  m.mtp_modules = 0;  // MtpModuleIsALastPipelineLayerWithItsOwnHead
  config::PlanConfig plan = Plan(8, true);
  plan.ep = 8;
  plan.global_batch = 2;
  plan.sharding = config::Sharding::kZero1;
  auto s = testing::Scenario(m, 8, 4096, plan);
  simulate::Options o;
  o.keep_trace = true;
  o.simulate_if_out_of_memory = true;
  auto r = simulate::Simulate(s, o);
  ASSERT_GT(r.iteration.seconds(), 0.0);
  EXPECT_GT(r.mfu, 0.0);
  EXPECT_LT(r.mfu, 1.0);
  int kv_up = 0;
  for (size_t i = 0; i < r.trace->size(); ++i) {
    const auto& task = r.trace->task(static_cast<trace::TaskId>(i));
    if (r.trace->name(task.name) == "kv-up") ++kv_up;
  }
  EXPECT_EQ(kv_up, 4 * 2);  // 4 layers x 2 micro-batches on the one simulated rank

  // Model FLOPs: 6 x active non-embedding parameters (with the head) per token
  // plus causal attention fwd+bwd, 3 x layers x heads x seq x (192 + 128)
  // per token: QK^T over nope+rope, PV over v_head_dim.
  double params = static_cast<double>(m.vocab_size) * m.hidden_size;
  for (int64_t l = 0; l < m.num_layers; ++l) params += static_cast<double>(m.ActiveLayerParameterCount(l));
  const double tokens = 2.0 * 4096;
  const double attention = 3.0 * 4 * 128 * 4096.0 * (192 + 128);
  EXPECT_NEAR(r.model_flops.value / (tokens * (6.0 * params + attention)), 1.0, 1e-12);
}

// Sliding windows: the fused attention kernels do the mean fraction of
// causal work over the layers (GPT-OSS: a 128-token window on half of them).
TEST(Attention, SlidingWindowsScaleTheFusedKernelsWork) {
  config::ModelConfig oss = config::LoadModelFile(kModels + "gpt-oss-120b.json");
  config::ModelConfig full = oss;
  full.sliding_window = 0;
  full.sliding_window_layers = 0;
  const config::PlanConfig plan = Plan(1, false);
  const auto windowed = LayerForward(LayerShape::From(oss, plan, 4096, testing::RoundProfile()));
  const auto causal = LayerForward(LayerShape::From(full, plan, 4096, testing::RoundProfile()));
  EXPECT_NEAR(FlopsOf(windowed, "attention") / FlopsOf(causal, "attention"), oss.AttentionWorkFraction(4096), 1e-12);
  EXPECT_DOUBLE_EQ(FlopsOf(windowed, "qkv"), FlopsOf(causal, "qkv"));
}

// DeepSeek-V3's multi-token prediction (§2.2): the module's layer is one
// more pipeline layer after the last, its projection and second loss run
// with the head; model FLOPs (MFU) count the main model only.
TEST(Mla, MtpModuleIsALastPipelineLayerWithItsOwnHead) {
  config::ModelConfig m = DeepSeekV3();
  ASSERT_EQ(m.mtp_modules, 1);  // num_nextn_predict_layers in the published config
  m.num_layers = 4;
  EXPECT_EQ(m.PipelineLayerCount(), 5);
  config::PlanConfig plan = Plan(8, true);
  plan.ep = 8;
  plan.global_batch = 2;
  plan.sharding = config::Sharding::kZero1;
  simulate::Options o;
  o.keep_trace = true;
  o.simulate_if_out_of_memory = true;
  auto with = simulate::Simulate(testing::Scenario(m, 8, 4096, plan), o);
  config::ModelConfig plain = m;
  plain.mtp_modules = 0;
  auto without = simulate::Simulate(testing::Scenario(plain, 8, 4096, plan), o);
  auto count = [](const simulate::SimulationResult& r, const std::string& name) {
    int n = 0;
    for (size_t i = 0; i < r.trace->size(); ++i) {
      if (r.trace->name(r.trace->task(static_cast<trace::TaskId>(i)).name) == name) ++n;
    }
    return n;
  };
  EXPECT_EQ(count(with, "kv-up"), 5 * 2);     // 4 layers + the module's, 2 micro-batches
  EXPECT_EQ(count(with, "mtp-proj"), 2);
  EXPECT_EQ(count(with, "logits"), 2 * 2);    // the main head and the module's
  EXPECT_EQ(count(without, "mtp-proj"), 0);
  EXPECT_GT(with.iteration, without.iteration);
  EXPECT_DOUBLE_EQ(with.model_flops.value, without.model_flops.value);
}

// The pipeline splits the layers with the MTP modules' after them: 3 + 1
// layers divide into 2 equal stages, and the last stage holds the module's
// layer, projection and norms.
TEST(Mla, PipelineSplitCountsTheMtpLayer) {
  config::ModelConfig m = DeepSeekV3();
  m.num_layers = 3;
  config::PlanConfig plan = Plan(1, false);
  plan.pp = 2;
  plan.ep = 1;
  plan.dp = 4;
  plan.global_batch = 8;
  const config::ScenarioConfig s = testing::Scenario(m, 8, 4096, plan);
  EXPECT_NO_THROW(config::ValidatePlan(s, "s.json"));
  config::ModelConfig plain = m;
  plain.mtp_modules = 0;
  const config::ScenarioConfig s0 = testing::Scenario(plain, 8, 4096, plan);
  EXPECT_THROW(config::ValidatePlan(s0, "s.json"), InputError);  // 3 layers on pp 2, not uneven
  const double total = static_cast<double>(StageParameters(s, 0) + StageParameters(s, 1));
  const double total0 = static_cast<double>(StageParameters(s0, 0) + StageParameters(s0, 1));
  EXPECT_DOUBLE_EQ(total - total0, static_cast<double>(m.MtpParameterCount()));
}

}  // namespace
}  // namespace stacksim::workload
