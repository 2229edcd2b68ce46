// LoRA / QLoRA fine-tuning (plan.finetune): the op lists, the gradients the
// data-parallel group reduces, the optimizer step and the memory of frozen
// base weights, each checked against a hand count on a small Llama-like model.
#include "sim/workload/lora.h"

#include <gtest/gtest.h>

#include "sim/config/scenario.h"
#include "sim/memory/memory_model.h"
#include "sim/workload/gradient_buckets.h"
#include "sim/workload/layer_ops.h"
#include "sim/workload/stage_layers.h"
#include "sim/workload/training_step.h"
#include "tests/fixtures.h"
#include "tests/input_error.h"

namespace stacksim::workload {
namespace {

using config::FinetuneMethod;
using config::LoraTarget;

// Llama-like: gated MLP, RMSNorm, GQA 16/4, no biases, untied embeddings.
config::ModelConfig Llama() { return testing::SmallLlamaModel(4); }

constexpr int64_t kRank = 8;
constexpr int64_t kSeq = 512;

config::FinetuneConfig Lora(FinetuneMethod method, std::initializer_list<LoraTarget> targets) {
  config::FinetuneConfig f;
  f.method = method;
  f.rank = kRank;
  for (LoraTarget t : targets) f.targets |= 1u << static_cast<int>(t);
  return f;
}

const std::initializer_list<LoraTarget> kAll = {LoraTarget::kQ,    LoraTarget::kK,  LoraTarget::kV,   LoraTarget::kO,
                                                LoraTarget::kGate, LoraTarget::kUp, LoraTarget::kDown};

config::ScenarioConfig Scenario(config::FinetuneConfig f, config::Sharding sharding = config::Sharding::kNone,
                                int tp = 1, int dp = 2) {
  config::PlanConfig plan;
  plan.tp = tp;
  plan.dp = dp;
  plan.sharding = sharding;
  plan.micro_batch = 1;
  plan.global_batch = dp;
  plan.finetune = f;
  return testing::Scenario(Llama(), tp * dp, kSeq, plan);
}

LayerShape Shape(const config::ScenarioConfig& s) { return LayerShape::From(s.model, s.plan, s.seq_len, s.profile); }

// Adapter parameters of one layer, by hand: r x (d_in + d_out) per projection,
// h = 1024, q = 16 x 64 = 1024, kv = 4 x 64 = 256, ffn 2816.
double HandAdapters(bool all) {
  const double h = 1024, q = 1024, kv = 256, f = 2816, r = kRank;
  if (!all) return r * (h + q) + r * (h + kv);  // q and v
  return r * ((h + q) + 2 * (h + kv) + (q + h) + 2 * (h + f) + (f + h));
}

struct GemmFlops {
  double weight_grad = 0, other = 0;
};
GemmFlops Flops(const std::vector<Op>& ops) {
  GemmFlops g;
  for (const Op& op : ops) {
    if (op.is_collective || op.compute.op_class != trace::OpClass::kGemm) continue;
    (op.weight_grad ? g.weight_grad : g.other) += op.compute.flops.value;
  }
  return g;
}

double MemoryBoundBytes(const std::vector<Op>& ops) {
  double b = 0;
  for (const Op& op : ops) {
    if (!op.is_collective && op.role == trace::TaskRole::kMemoryBound) b += op.compute.bytes.value;
  }
  return b;
}

TEST(Lora, CountsAdapterParametersPerProjection) {
  EXPECT_DOUBLE_EQ(LayerAdapterParameters(Llama(), Scenario(Lora(FinetuneMethod::kLora, kAll)).plan), HandAdapters(true));
  EXPECT_DOUBLE_EQ(LayerAdapterParameters(Llama(), Scenario(Lora(FinetuneMethod::kLora, {LoraTarget::kQ, LoraTarget::kV})).plan),
                   HandAdapters(false));
  EXPECT_DOUBLE_EQ(LayerAdapterParameters(Llama(), Scenario(config::FinetuneConfig{}).plan), 0.0);
}

// Frozen weights: the backward keeps every data-gradient GEMM of the base
// layer, drops its weight-gradient GEMMs, and adds the adapters' four
// products (two of them weight gradients, 2 T r d FLOPs each).
TEST(Lora, FrozenWeightsGetNoWeightGradientsButKeepDataGradients) {
  const LayerShape full = Shape(Scenario(config::FinetuneConfig{}));
  const LayerShape lora = Shape(Scenario(Lora(FinetuneMethod::kLora, kAll)));
  const double T = kSeq;
  const GemmFlops f = Flops(LayerBackward(full)), l = Flops(LayerBackward(lora));
  const double adapters = HandAdapters(true);
  // The adapters' weight gradients only: dA and dB, 2 T x params.
  EXPECT_DOUBLE_EQ(l.weight_grad, 2 * T * adapters);
  // The base layer's data gradients unchanged, plus dh and dx of each adapter.
  EXPECT_DOUBLE_EQ(l.other, f.other + 2 * T * adapters);
  // What LoRA saves: full training's weight gradients, 2 T x the four linear weights.
  const double linear = 1024.0 * (1024 + 2 * 256) + 1024.0 * 1024 + 1024.0 * 2 * 2816 + 2816.0 * 1024;
  EXPECT_DOUBLE_EQ(f.weight_grad, 2 * T * linear);
  // Forward: the adapters' two products on top of the base GEMMs.
  EXPECT_DOUBLE_EQ(Flops(LayerForward(lora)).other, Flops(LayerForward(full)).other + 2 * T * adapters);
}

// QLoRA: each of the four frozen linear weights is dequantized before the
// forward GEMM and again before the data-gradient GEMM: reading 4.127 bits,
// writing the fp32 block absmax (4 bytes per 64) and the bf16 weight.
TEST(Qlora, DequantizesBeforeEveryGemmThatReadsAFrozenWeight) {
  const LayerShape lora = Shape(Scenario(Lora(FinetuneMethod::kLora, kAll)));
  const LayerShape qlora = Shape(Scenario(Lora(FinetuneMethod::kQlora, kAll)));
  const double h = 1024, qkv = 1024 + 2 * 256, f = 2816;
  const double weights = h * qkv + 1024 * h + h * 2 * f + f * h;
  const double per_weight = 4.127 / 8 + 4.0 / 64 + 2.0;
  EXPECT_NEAR(MemoryBoundBytes(LayerForward(qlora)) - MemoryBoundBytes(LayerForward(lora)), weights * per_weight,
              weights * 0.0002 / 8);  // 4.127 is 4.12695 rounded
  EXPECT_NEAR(MemoryBoundBytes(LayerBackward(qlora)) - MemoryBoundBytes(LayerBackward(lora)), weights * per_weight,
              weights * 0.0002 / 8);
  // The GEMMs themselves are LoRA's.
  EXPECT_DOUBLE_EQ(Flops(LayerBackward(qlora)).other, Flops(LayerBackward(lora)).other);
}

// Only q and v adapted: the o, gate, up and down projections train nothing,
// so under sequence parallelism the MLP input is not re-gathered for the
// backward (nothing needs it), while QKV's is (dA of q and v needs it).
TEST(Lora, OnlyAdaptedProjectionsRegatherTheirInputUnderSp) {
  config::ScenarioConfig s = Scenario(Lora(FinetuneMethod::kLora, {LoraTarget::kQ, LoraTarget::kV}),
                                      config::Sharding::kNone, 2, 1);
  s.plan.sequence_parallel = true;
  int gathers = 0;
  for (const Op& op : LayerBackward(Shape(s))) {
    if (op.is_collective && op.collective == trace::CollectiveKind::kAllGather && op.async) ++gathers;
  }
  EXPECT_EQ(gathers, 1);
  s.plan.finetune = config::FinetuneConfig{};
  gathers = 0;
  for (const Op& op : LayerBackward(Shape(s))) {
    if (op.is_collective && op.collective == trace::CollectiveKind::kAllGather && op.async) ++gathers;
  }
  EXPECT_EQ(gathers, 2);  // full training: QKV's and FC1's, for their weight gradients
}

// Data parallelism reduces the adapters' gradients only (fp32 main
// gradients): no layer weights, no embedding or head.
TEST(Lora, DataParallelTrafficIsAdapterSized) {
  const config::ScenarioConfig s = Scenario(Lora(FinetuneMethod::kLora, kAll));
  config::ValidatePlan(s, "test");
  const trace::Trace t = BuildTrainingStep(s);
  double reduced = 0;
  for (const auto& task : t.tasks()) {
    if (task.kind == trace::TaskKind::kCollective && task.role == trace::TaskRole::kDpComm) {
      reduced += task.comm.bytes.value;
    }
  }
  EXPECT_DOUBLE_EQ(reduced, 4 * HandAdapters(true) * 4.0);  // 4 layers, fp32
  EXPECT_DOUBLE_EQ(ComputeGradientSizes(s).dense[0].value, HandAdapters(true) * 4.0);
  // The optimizer steps the adapters: 38 bytes per parameter (training_step.cc).
  double optimizer = 0;
  for (const auto& task : t.tasks()) {
    if (task.role == trace::TaskRole::kOptimizer) optimizer += task.compute.bytes.value;
  }
  EXPECT_DOUBLE_EQ(optimizer, 4 * HandAdapters(true) * 38.0);
}

// FSDP gathers each layer's frozen weights (NF4 under QLoRA) with its adapters
// and reduce-scatters the adapters' gradients only.
TEST(Qlora, FsdpGathersFourBitWeightsAndScattersAdapterGradients) {
  const config::ScenarioConfig s = Scenario(Lora(FinetuneMethod::kQlora, kAll), config::Sharding::kZero3);
  config::ValidatePlan(s, "test");
  const double linear = 1024.0 * (1024 + 2 * 256) + 1024.0 * 1024 + 3 * 1024.0 * 2816;
  const double norms = 2 * 1024.0;
  const double layer_bytes = linear * config::kNf4BitsPerParam / 8 + norms * 2 + HandAdapters(true) * 2;
  const trace::Trace t = BuildTrainingStep(s);
  int gathers = 0, scatters = 0;
  for (const auto& task : t.tasks()) {
    if (task.kind != trace::TaskKind::kCollective || task.role != trace::TaskRole::kDpComm) continue;
    if (task.comm.kind == trace::CollectiveKind::kAllGather) {
      ++gathers;
      EXPECT_NEAR(task.comm.bytes.value, layer_bytes, 1e-6 * layer_bytes);
    } else {
      ++scatters;
      // ZeRO-3 reduces in the compute dtype (bf16) unless told otherwise.
      EXPECT_DOUBLE_EQ(task.comm.bytes.value, HandAdapters(true) * 2);
    }
  }
  EXPECT_EQ(gathers, 8);   // 4 layers, forward and backward
  EXPECT_EQ(scatters, 4);
}

// Memory: the frozen weights in bf16 (LoRA) or NF4 (QLoRA), gradients and
// Adam state for the adapters only.
TEST(Lora, MemoryHoldsFrozenWeightsAndAdapterStateOnly) {
  const config::ScenarioConfig lora = Scenario(Lora(FinetuneMethod::kLora, kAll));
  const config::ScenarioConfig full = Scenario(config::FinetuneConfig{});
  const double adapters = 4 * HandAdapters(true);
  const double params = static_cast<double>(StageParameters(full, 0));
  const auto ml = memory::EstimateMemory(lora)[0];
  const auto mf = memory::EstimateMemory(full)[0];
  EXPECT_DOUBLE_EQ(mf.weights.value, 2 * params);
  EXPECT_DOUBLE_EQ(ml.weights.value, 2 * params + 2 * adapters);
  EXPECT_DOUBLE_EQ(ml.gradients.value, 4 * adapters);
  EXPECT_DOUBLE_EQ(ml.optimizer.value, 12 * adapters);  // fp32 master + two moments
  EXPECT_DOUBLE_EQ(mf.optimizer.value, 12 * params);

  const config::ScenarioConfig qlora = Scenario(Lora(FinetuneMethod::kQlora, kAll));
  const double linear = 4 * (1024.0 * (1024 + 2 * 256) + 1024.0 * 1024 + 3 * 1024.0 * 2816);
  const double largest = 1024.0 * 2 * 2816;  // gate and up, one GEMM
  const auto mq = memory::EstimateMemory(qlora)[0];
  EXPECT_NEAR(mq.weights.value,
              linear * config::kNf4BitsPerParam / 8 + (params - linear) * 2 + 2 * adapters + 2 * largest, 1.0);
  EXPECT_DOUBLE_EQ(mq.optimizer.value, ml.optimizer.value);
}

TEST(Lora, PlansItCannotModelAreRefused) {
  config::ScenarioConfig s = Scenario(Lora(FinetuneMethod::kLora, kAll));
  s.model.activation = config::Activation::kGelu;  // no gate projection
  InputError e = testing::ErrorFrom([&] { config::ValidatePlan(s, "f.json"); });
  EXPECT_EQ(e.key_path(), "plan.finetune.targets");
  s = Scenario(Lora(FinetuneMethod::kLora, kAll));
  s.plan.precision = config::Precision::kFp8;
  e = testing::ErrorFrom([&] { config::ValidatePlan(s, "f.json"); });
  EXPECT_EQ(e.key_path(), "plan.precision");
  s = Scenario(Lora(FinetuneMethod::kLora, kAll));
  s.plan.finetune.rank = 4096;
  e = testing::ErrorFrom([&] { config::ValidatePlan(s, "f.json"); });
  EXPECT_EQ(e.key_path(), "plan.finetune.rank");
  s = Scenario(Lora(FinetuneMethod::kLora, kAll));
  s.model.num_experts = 8;
  s.model.experts_per_token = 2;
  s.model.moe_intermediate_size = 512;
  e = testing::ErrorFrom([&] { config::ValidatePlan(s, "f.json"); });
  EXPECT_EQ(e.key_path(), "plan.finetune");
}

}  // namespace
}  // namespace stacksim::workload
