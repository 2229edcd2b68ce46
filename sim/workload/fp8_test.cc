// FP8 training (Transformer Engine style): which GEMMs run in FP8, the
// casting overhead, the FP8 weight copy, and GPUs without FP8.
#include <map>
#include <string>
#include <utility>

#include <gtest/gtest.h>

#include "sim/cost/profile_cost_model.h"
#include "sim/memory/memory_model.h"
#include "sim/simulate/simulate.h"
#include "sim/workload/layer_ops.h"
#include "sim/workload/training_step.h"
#include "tests/fixtures.h"
#include "tests/input_error.h"

namespace stacksim::workload {
namespace {

using config::Precision;

config::ProfileConfig Fp8Profile() {
  config::ProfileConfig p = testing::RoundProfile();
  p.peak_flops[static_cast<int>(Precision::kFp8)] = config::Sourced<FlopRate>{FlopRate{2000e12}, "test"};
  p.gemm.max_efficiency[static_cast<int>(Precision::kFp8)] = config::Sourced<double>{0.6, "test"};
  return p;
}

LayerShape Shape(Precision precision) {
  auto model = testing::GptModel(1, 4096, 32, 51200);
  config::PlanConfig plan;
  plan.micro_batch = 2;
  plan.precision = precision;
  return LayerShape::From(model, plan, 2048, testing::RoundProfile());
}

const Op& Find(const std::vector<Op>& ops, const std::string& name) {
  for (const Op& op : ops) {
    if (op.name == name) return op;
  }
  ADD_FAILURE() << "no op " << name;
  return ops.front();
}

TEST(Fp8, LinearGemmsRunAtTheFp8PeakTimesEfficiency) {
  const config::ProfileConfig profile = Fp8Profile();
  cost::ProfileCostModel cost(profile, /*cuda_graphs=*/false);
  const auto fwd = LayerForward(Shape(Precision::kFp8));
  const Op& fc1 = Find(fwd, "fc1");
  EXPECT_EQ(fc1.compute.precision, Precision::kFp8);
  // 4096 tokens x 16384 x 4096: compute-bound at 2000 TFLOP/s x the fp8 efficiency
  // (bf16 would be 1000 TFLOP/s x 0.8: 1.5x slower).
  const double eff = cost.GemmEfficiency(4096, 16384, 4096, 1, Precision::kFp8);
  EXPECT_LT(eff, 0.6 + 1e-12);
  EXPECT_GT(eff, 0.5);
  const double expected = 2.0 * 4096 * 16384 * 4096 / (2000e12 * eff);
  EXPECT_NEAR(cost.ComputeTime(fc1.compute).seconds(), expected, expected * 1e-6);
  const double bf16 = cost.ComputeTime(Find(LayerForward(Shape(Precision::kBf16)), "fc1").compute).seconds();
  EXPECT_NEAR(bf16 / expected, 2000 * 0.6 / (1000 * 0.8), 1e-6);
  // Attention and the logits stay bf16.
  EXPECT_EQ(Find(fwd, "attention").compute.precision, Precision::kBf16);
  EXPECT_EQ(Find(HeadForward(Shape(Precision::kFp8)), "logits").compute.precision, Precision::kBf16);
  EXPECT_EQ(Find(LayerBackward(Shape(Precision::kFp8)), "fc2-wgrad").compute.precision, Precision::kFp8);
}

double CastBytes(const std::vector<Op>& ops) {
  double bytes = 0;
  for (const Op& op : ops) {
    if (op.name.find("-cast-") != std::string::npos) bytes += op.compute.bytes.value;
  }
  return bytes;
}

// Hand count for one GPT layer (tp 1, h = 4096, T = 4096 tokens, MLP 4h): each
// cast reads bf16 and writes fp8, 3 bytes per element. Forward: the four
// weights (3h^2 + h^2 + 4h^2 + 4h^2 = 12h^2) and the inputs of the projection
// (T h) and FC2 (4 T h); QKV and FC1 take FP8 from the fused norm. Backward:
// the output gradient of each GEMM (FC2 T h, FC1 4 T h, proj T h, QKV 3 T h).
// TP 4 with SP, 4096 tokens (micro-batch 2 x 2048) of hidden 4096: each SP
// all-gather moves the 4096 x 4096 activation or gradient. With the
// framework gathering FP8 (Transformer Engine), the gathers that feed the
// layer's FP8 GEMMs move 1 byte an element (16 MiB), forward and backward;
// the output layer's gather, which feeds a 16-bit GEMM, and every
// reduce-scatter stay 2 bytes (32 MiB). Without the fact, or in bf16, all 2.
TEST(Fp8, SequenceParallelGathersMoveFp8WhenTheFrameworkDoes) {
  auto shape = [](Precision precision, bool fp8_gather) {
    config::PlanConfig plan;
    plan.micro_batch = 2;
    plan.precision = precision;
    plan.tp = 4;
    plan.sequence_parallel = true;
    plan.fp8_tp_gather = fp8_gather;
    return LayerShape::From(testing::GptModel(1, 4096, 32, 51200), plan, 2048, testing::RoundProfile());
  };
  const double elements = 4096.0 * 4096;
  const LayerShape te = shape(Precision::kFp8, true);
  const auto fwd = LayerForward(te);
  const auto bwd = LayerBackward(te);
  EXPECT_DOUBLE_EQ(Find(fwd, "ag-attn").bytes.value, elements);
  EXPECT_DOUBLE_EQ(Find(fwd, "ag-mlp").bytes.value, elements);
  EXPECT_DOUBLE_EQ(Find(bwd, "ag-mlp-grad").bytes.value, elements);
  EXPECT_DOUBLE_EQ(Find(bwd, "ag-mlp-input").bytes.value, elements);
  for (const Op& op : fwd) {
    if (op.is_collective && op.collective == trace::CollectiveKind::kReduceScatter) {
      EXPECT_DOUBLE_EQ(op.bytes.value, 2 * elements) << op.name;
    }
  }
  EXPECT_DOUBLE_EQ(Find(HeadForward(te), "ag-head").bytes.value, 2 * elements);
  EXPECT_DOUBLE_EQ(Find(LayerForward(shape(Precision::kFp8, false)), "ag-attn").bytes.value, 2 * elements);
  EXPECT_DOUBLE_EQ(Find(LayerForward(shape(Precision::kBf16, true)), "ag-attn").bytes.value, 2 * elements);
}

TEST(Fp8, CastBytesPerLayerMatchHandCount) {
  const double h = 4096, T = 4096;
  EXPECT_DOUBLE_EQ(CastBytes(LayerForward(Shape(Precision::kFp8))), 3.0 * (12 * h * h + 5 * T * h));
  EXPECT_DOUBLE_EQ(CastBytes(LayerBackward(Shape(Precision::kFp8))), 3.0 * (9 * T * h));
  EXPECT_EQ(CastBytes(LayerForward(Shape(Precision::kBf16))), 0.0);
  EXPECT_EQ(CastBytes(LayerBackward(Shape(Precision::kBf16))), 0.0);
  for (const Op& op : LayerForward(Shape(Precision::kFp8))) {
    if (op.name.find("-cast-") != std::string::npos) {
      EXPECT_EQ(op.role, trace::TaskRole::kMemoryBound);
    }
  }
}

// Transformer Engine's casts (plan.fp8_casts): every cast also writes the
// FP8 transpose (16 + 8 + 8 bits an element), the norm's FP8 outputs before
// QKV and FC1 are transposed in the backward (8 + 8 bits), and only the
// weight casts are marked to run once a step.
TEST(Fp8, TransformerEngineCastsWriteTheTransposeAndCacheTheWeights) {
  const double h = 4096, T = 4096;
  LayerShape te = Shape(Precision::kFp8);
  te.fp8_casts = config::Fp8Casts::kTransformerEngine;
  EXPECT_DOUBLE_EQ(CastBytes(LayerForward(te)), 4.0 * (12 * h * h + 5 * T * h));
  EXPECT_DOUBLE_EQ(CastBytes(LayerBackward(te)), 4.0 * (9 * T * h));
  EXPECT_DOUBLE_EQ(Find(LayerBackward(te), "qkv-transpose-x").compute.bytes.value, 2.0 * T * h);
  EXPECT_DOUBLE_EQ(Find(LayerBackward(te), "fc1-transpose-x").compute.bytes.value, 2.0 * T * h);
  for (const Op& op : LayerForward(te)) {
    const bool weight = op.name.size() > 7 && op.name.compare(op.name.size() - 7, 7, "-cast-w") == 0;
    EXPECT_EQ(op.once_per_step, weight) << op.name;
  }
  for (const Op& op : LayerForward(Shape(Precision::kFp8))) EXPECT_FALSE(op.once_per_step) << op.name;
  // Folded into the producers (XLA): only the weights are cast, every forward,
  // read 16 bits and write 8; no gradient cast and no transpose.
  LayerShape xla = Shape(Precision::kFp8);
  xla.fp8_casts = config::Fp8Casts::kIntoProducers;
  EXPECT_DOUBLE_EQ(CastBytes(LayerForward(xla)), 3.0 * 12 * h * h);
  EXPECT_DOUBLE_EQ(CastBytes(LayerBackward(xla)), 0.0);
  for (const Op& op : LayerForward(xla)) EXPECT_FALSE(op.once_per_step) << op.name;
  for (const Op& op : LayerBackward(Shape(Precision::kFp8))) {
    EXPECT_EQ(op.name.find("-transpose-x"), std::string::npos) << op.name;
  }
}

// FP8 training of 4 GPT layers on an interleaved pipeline: pp 2, vp 2 (one
// layer a chunk), micro-batches of one sequence, tp x dp ranks a stage.
config::ScenarioConfig Fp8PipelineScenario(int tp, int dp, int64_t global_batch) {
  config::PlanConfig plan;
  plan.tp = tp;
  plan.pp = 2;
  plan.vp = 2;
  plan.schedule = config::PipelineScheduleKind::kInterleaved;
  plan.dp = dp;
  plan.micro_batch = 1;
  plan.global_batch = global_batch;
  plan.sequence_parallel = tp > 1;
  plan.precision = Precision::kFp8;
  config::ScenarioConfig s = testing::Scenario(testing::GptModel(4, 1024, 16, 51200), tp * 2 * dp, 2048, plan);
  s.profile = Fp8Profile();
  return s;
}

// In the step, a cached weight cast runs on the first micro-batch of each
// chunk only and never in a recomputed forward; per-forward casts run on
// every micro-batch.
TEST(Fp8, CachedWeightCastsRunOnTheFirstMicroBatchOnly) {
  config::ScenarioConfig s = Fp8PipelineScenario(/*tp=*/1, /*dp=*/1, /*global_batch=*/4);
  s.plan.recompute = config::Recompute::kFull;
  auto count = [](const trace::Trace& t) {
    std::map<std::pair<int, bool>, int> n;  // (micro-batch, recompute) -> fc1 weight casts
    for (const auto& task : t.tasks()) {
      const std::string name(t.name(task.name));
      if (name.find("fc1-cast-w") != std::string::npos) ++n[{task.micro_batch, task.recompute}];
    }
    return n;
  };
  const auto per_forward = count(BuildTrainingStep(s));
  s.plan.fp8_casts = config::Fp8Casts::kTransformerEngine;
  const auto cached = count(BuildTrainingStep(s));
  // 2 stages x 2 chunks x 1 layer each: 4 layer copies, 4 micro-batches.
  for (int mb = 0; mb < 4; ++mb) {
    EXPECT_EQ((per_forward.count({mb, false}) ? per_forward.at({mb, false}) : 0), 4) << mb;
    EXPECT_EQ((per_forward.count({mb, true}) ? per_forward.at({mb, true}) : 0), 4) << mb;
    EXPECT_EQ((cached.count({mb, false}) ? cached.at({mb, false}) : 0), mb == 0 ? 4 : 0) << mb;
    EXPECT_EQ(cached.count({mb, true}), 0u) << mb;
  }
}

// Delayed scaling's amax reduction (plan.fp8_amax_reduction): one blocking
// all-reduce over every rank of the stage after each chunk's forward and one
// after its backward, sized by the chunk's FP8 GEMMs; nothing under BF16 or
// without the fact.
TEST(Fp8, DelayedScalingReducesAmaxesOverTheStageAfterEachChunk) {
  config::ScenarioConfig s = Fp8PipelineScenario(/*tp=*/2, /*dp=*/4, /*global_batch=*/12);
  s.plan.fp8_amax_reduction = true;
  const trace::Trace t = BuildTrainingStep(s);
  int reductions = 0;
  for (const auto& task : t.tasks()) {
    if (t.name(task.name) != "fp8-amax-reduce" || task.rank != 0) continue;
    ++reductions;
    EXPECT_EQ(task.kind, trace::TaskKind::kCollective);
    EXPECT_EQ(task.comm.kind, trace::CollectiveKind::kAllReduce);
    const trace::CommGroup& g = t.group(task.comm.group);
    EXPECT_EQ(g.role, trace::GroupRole::kStage);
    EXPECT_EQ(g.size, 8);  // tp 2 x dp 4
    // One layer a chunk, four FP8 GEMMs: 3 amaxes each forward, 2 backward.
    EXPECT_TRUE(task.comm.bytes.value == 4.0 * 3 * 4 || task.comm.bytes.value == 4.0 * 2 * 4) << task.comm.bytes.value;
  }
  EXPECT_EQ(reductions, 3 * 2 * 2);  // 3 micro-batches x 2 chunks x (forward, backward)
  auto count = [](const trace::Trace& tr) {
    int n = 0;
    for (const auto& task : tr.tasks()) n += tr.name(task.name) == "fp8-amax-reduce";
    return n;
  };
  s.plan.fp8_amax_reduction = false;
  EXPECT_EQ(count(BuildTrainingStep(s)), 0);
  s.plan.fp8_amax_reduction = true;
  s.plan.precision = Precision::kBf16;
  EXPECT_EQ(count(BuildTrainingStep(s)), 0);
}

TEST(Fp8, MemoryHoldsAnFp8WeightCopy) {
  auto model = testing::GptModel(4, 2048, 16, 32000);
  config::PlanConfig plan;
  plan.dp = 8;
  plan.global_batch = 8;
  auto s = testing::Scenario(model, 8, 2048, plan);
  s.profile = Fp8Profile();
  const auto bf16 = memory::EstimateMemory(s)[0];
  s.plan.precision = Precision::kFp8;
  const auto fp8 = memory::EstimateMemory(s)[0];
  const double params = bf16.weights.value / 2;
  EXPECT_NEAR(fp8.weights.value, 3 * params, 1.0);  // bf16 weights + fp8 copy
  EXPECT_DOUBLE_EQ(fp8.optimizer.value, bf16.optimizer.value);
  // Linear inputs (QKV, proj, FC1, FC2) are kept as fp8: fewer activation bytes.
  EXPECT_LT(fp8.activations.value, bf16.activations.value);
}

TEST(Fp8, GpuWithoutFp8IsAnInputErrorOnPrecision) {
  auto model = testing::GptModel(2, 1024, 16, 32000);
  config::PlanConfig plan;
  plan.dp = 8;
  plan.global_batch = 8;
  plan.precision = Precision::kFp8;
  auto s = testing::Scenario(model, 8, 1024, plan);  // round profile: no fp8 (as A100)
  InputError e = testing::ErrorFrom([&] { simulate::Simulate(s, simulate::Options{}); });
  EXPECT_EQ(e.key_path(), "plan.precision");
  s.profile = Fp8Profile();
  auto r = simulate::Simulate(s, simulate::Options{});
  EXPECT_GT(r.iteration.seconds(), 0.0);
}

}  // namespace
}  // namespace stacksim::workload
