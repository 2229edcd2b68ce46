#include "sim/workload/training_step.h"

#include <map>
#include <set>

#include <gtest/gtest.h>

#include "sim/memory/memory_model.h"
#include "sim/workload/layer_ops.h"
#include "sim/workload/stage_layers.h"
#include "tests/fixtures.h"

namespace stacksim::workload {
namespace {

config::PlanConfig Plan(int tp, int pp, int dp, int64_t mb, int64_t gb) {
  config::PlanConfig p;
  p.tp = tp;
  p.pp = pp;
  p.dp = dp;
  p.micro_batch = mb;
  p.global_batch = gb;
  return p;
}

double TraceFlops(const trace::Trace& t) {
  double f = 0;
  for (const auto& task : t.tasks()) {
    if (task.kind == trace::TaskKind::kCompute) f += task.compute.flops.value;
  }
  return f;
}

// Tasks of `rank` named `name` in `t`.
int TasksNamed(const trace::Trace& t, int rank, const std::string& name) {
  int n = 0;
  for (const auto& task : t.tasks()) n += task.rank == rank && t.name(task.name) == name;
  return n;
}

// Narayanan et al. SC'21, eq. 3: FLOPs per iteration with full recomputation
// and attention over the full s x s square: 96 B s l h^2 (1 + s/6h + V/16lh).
double MegatronFlops(double B, double s, double l, double h, double V) {
  return 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
}

TEST(TrainingStep, HardwareFlopsMatchMegatronFormulaWithFullRecompute) {
  auto model = testing::GptModel(4, 1024, 16, 51200);
  auto plan = Plan(1, 1, 1, 2, 8);
  plan.recompute = config::Recompute::kFull;
  plan.attention = config::AttentionImpl::kUnfused;
  auto s = testing::Scenario(model, 1, 2048, plan);
  auto t = BuildTrainingStep(s);
  EXPECT_NEAR(TraceFlops(t) / MegatronFlops(8, 2048, 4, 1024, 51200), 1.0, 1e-9);
}

// Recomputation re-runs forward work: the tasks flagged recompute carry
// exactly the FLOPs full recomputation adds, and nothing is flagged without it.
TEST(TrainingStep, RecomputeFlagMarksExactlyTheAddedForwardWork) {
  auto model = testing::GptModel(4, 1024, 16, 51200);
  auto plan = Plan(1, 2, 1, 2, 8);
  auto none = BuildTrainingStep(testing::Scenario(model, 2, 2048, plan));
  plan.recompute = config::Recompute::kFull;
  auto full = BuildTrainingStep(testing::Scenario(model, 2, 2048, plan));
  double flagged = 0;
  for (const auto& task : full.tasks()) {
    if (task.recompute) flagged += task.compute.flops.value;
  }
  for (const auto& task : none.tasks()) EXPECT_FALSE(task.recompute);
  EXPECT_GT(flagged, 0);
  EXPECT_NEAR(flagged / (TraceFlops(full) - TraceFlops(none)), 1.0, 1e-12);
}

// Megatron-Core's block method recomputes the first recompute_layers layers
// of each model chunk: with 8 layers over pp 2 x vp 2 (2 per chunk) and one
// layer per chunk, half of full recomputation's added forward work, and the
// activations of the layers it leaves alone kept whole.
TEST(TrainingStep, BlockRecomputeRecomputesTheFirstLayersOfEachChunk) {
  auto model = testing::GptModel(8, 1024, 16, 51200);
  auto plan = Plan(1, 2, 1, 1, 8);
  plan.vp = 2;
  plan.schedule = config::PipelineScheduleKind::kInterleaved;
  const auto none_s = testing::Scenario(model, 2, 2048, plan);
  auto none = BuildTrainingStep(none_s);
  plan.recompute = config::Recompute::kFull;
  const auto full_s = testing::Scenario(model, 2, 2048, plan);
  auto full = BuildTrainingStep(full_s);
  plan.recompute_layers = 1;
  const auto block_s = testing::Scenario(model, 2, 2048, plan);
  auto block = BuildTrainingStep(block_s);
  const double added_full = TraceFlops(full) - TraceFlops(none);
  const double added_block = TraceFlops(block) - TraceFlops(none);
  EXPECT_NEAR(added_block / added_full, 0.5, 1e-12);
  EXPECT_TRUE(plan.RecomputesLayer(0));
  EXPECT_FALSE(plan.RecomputesLayer(1));
  plan.recompute_layers = 2;  // every layer of a 2-layer chunk: full recomputation
  EXPECT_NEAR(TraceFlops(BuildTrainingStep(testing::Scenario(model, 2, 2048, plan))), TraceFlops(full), 1.0);

  // Memory: a recomputed layer keeps its input, the other its activations;
  // the saved part is half of each (the transient of the layer being
  // recomputed is full recomputation's).
  const auto m_none = memory::EstimateMemory(none_s);
  const auto m_full = memory::EstimateMemory(full_s);
  const auto m_block = memory::EstimateMemory(block_s);
  for (size_t st = 0; st < m_block.size(); ++st) {
    EXPECT_GT(m_block[st].activations.value, m_full[st].activations.value);
    EXPECT_LT(m_block[st].activations.value, m_none[st].activations.value);
  }
}

// Groups say which parallel dimension they span; the data-parallel gradient
// reduction runs on the data-parallel group.
TEST(TrainingStep, GroupsCarryTheirParallelDimension) {
  auto model = testing::GptModel(4, 1024, 16, 51200);
  auto t = BuildTrainingStep(testing::Scenario(model, 8, 2048, Plan(2, 2, 2, 1, 8)));
  std::map<trace::GroupRole, int> roles;
  for (const auto& g : t.groups()) ++roles[g.role];
  EXPECT_EQ(roles[trace::GroupRole::kTp], 2);  // one per stage
  EXPECT_EQ(roles[trace::GroupRole::kDp], 2);
  EXPECT_EQ(roles[trace::GroupRole::kPipelinePair], 4);  // next and previous per stage
  EXPECT_EQ(roles[trace::GroupRole::kOther], 0);
  // Data-parallel traffic: the gradient reduction over the DP group, and
  // (tied embeddings, pp > 1) the embedding gradient between first and last stage.
  int over_dp = 0;
  for (const auto& task : t.tasks()) {
    if (task.kind != trace::TaskKind::kCollective || task.role != trace::TaskRole::kDpComm) continue;
    const trace::CommGroup& g = t.group(task.comm.group);
    if (g.role == trace::GroupRole::kDp) {
      ++over_dp;
      EXPECT_EQ(g.size, 2);
    } else {
      EXPECT_EQ(g.role, trace::GroupRole::kEmbedding);
      EXPECT_EQ(g.simulated, (std::vector<trace::RankId>{0, 1}));
    }
  }
  EXPECT_GT(over_dp, 0);
}

TEST(TrainingStep, FlopsSplitEvenlyOverTensorAndPipelineRanks) {
  auto model = testing::GptModel(8, 1024, 16, 51200);
  auto plan = Plan(4, 2, 1, 1, 8);
  plan.recompute = config::Recompute::kFull;
  plan.attention = config::AttentionImpl::kUnfused;
  auto s = testing::Scenario(model, 8, 2048, plan);
  auto t = BuildTrainingStep(s);
  // Each simulated rank stands for its 4 TP peers.
  EXPECT_NEAR(TraceFlops(t) * 4 / MegatronFlops(8, 2048, 8, 1024, 51200), 1.0, 1e-9);
}

TEST(TrainingStep, FlashAttentionDoesCausalHalfAndBackwardTwoAndAHalfTimes) {
  auto model = testing::GptModel(1, 1024, 16, 1024);
  LayerShape s = LayerShape::From(model, Plan(1, 1, 1, 1, 1), 4096, testing::RoundProfile());
  auto fwd = LayerForward(s);
  auto bwd = LayerBackward(s);
  double attn_f = 0, attn_b = 0;
  for (auto& op : fwd) if (op.role == trace::TaskRole::kAttention) attn_f += op.compute.flops.value;
  for (auto& op : bwd) if (op.role == trace::TaskRole::kAttention) attn_b += op.compute.flops.value;
  EXPECT_DOUBLE_EQ(attn_f, 4.0 * 4096.0 * 4096.0 * 1024 * 0.5);
  EXPECT_DOUBLE_EQ(attn_b, 2.5 * attn_f);
}

TEST(TrainingStep, SequenceParallelTurnsAllReducesIntoReduceScatterAndAllGather) {
  auto model = testing::GptModel(1, 1024, 16, 1024);
  auto plan = Plan(4, 1, 1, 1, 1);
  auto count = [&](bool sp) {
    plan.sequence_parallel = sp;
    std::map<trace::CollectiveKind, int> n;
    for (auto& op : LayerForward(LayerShape::From(model, plan, 2048, testing::RoundProfile()))) {
      if (op.is_collective) n[op.collective]++;
    }
    return n;
  };
  auto plain = count(false);
  EXPECT_EQ(plain[trace::CollectiveKind::kAllReduce], 2);
  auto sp = count(true);
  EXPECT_EQ(sp[trace::CollectiveKind::kAllReduce], 0);
  EXPECT_EQ(sp[trace::CollectiveKind::kReduceScatter], 2);
  EXPECT_EQ(sp[trace::CollectiveKind::kAllGather], 2);
}

TEST(TrainingStep, LayersSplitEvenlyOrFromTheEnds) {
  EXPECT_EQ(LayersPerVirtualStage(96, 8, 3), std::vector<int>(24, 4));
  auto v = LayersPerVirtualStage(126, 16, 1);  // Llama 3 405B: 8 per stage, one fewer on the ends
  EXPECT_EQ(v.front(), 7);
  EXPECT_EQ(v.back(), 7);
  EXPECT_EQ(v[1], 8);
  int sum = 0;
  for (int x : v) sum += x;
  EXPECT_EQ(sum, 126);
}

TEST(TrainingStep, TraceIsConsistentForEveryScheduleAndSharding) {
  auto model = testing::GptModel(8, 512, 8, 4096);
  for (auto sharding : {config::Sharding::kNone, config::Sharding::kZero1, config::Sharding::kZero3}) {
    for (int pp : {1, 2, 4}) {
      auto plan = Plan(2, pp, 2, 1, 16);
      plan.sharding = sharding;
      if (pp > 1 && sharding == config::Sharding::kZero3) continue;
      if (pp == 2) {
        plan.vp = 2;
        plan.schedule = config::PipelineScheduleKind::kInterleaved;
      }
      auto t = BuildTrainingStep(testing::Scenario(model, 4 * pp, 1024, plan));
      EXPECT_EQ(t.Check(), "") << pp;
      EXPECT_EQ(t.rank_count(), pp);
    }
  }
}

// FSDP2 (plan.fsdp_copies): every gather of a layer is followed by a copy of
// its gathered bytes out of the flat buffer on the compute stream, which the
// layer waits for; every reduce-scatter by a copy-in of its 16-bit gradients
// into the reduce dtype, on the reduce-scatter's stream before it.
TEST(TrainingStep, Fsdp2CopiesOutEachGatherAndInEachReduceScatter) {
  auto model = testing::GptModel(4, 512, 8, 4096);
  auto plan = Plan(1, 1, 4, 1, 8);  // 2 micro-batches
  plan.sharding = config::Sharding::kZero3;
  const auto flat = BuildTrainingStep(testing::Scenario(model, 4, 1024, plan));
  EXPECT_EQ(TasksNamed(flat, 0, "fsdp-copy-out"), 0);
  EXPECT_EQ(TasksNamed(flat, 0, "fsdp-reduce-copy-in"), 0);

  plan.fsdp_copies = true;
  const auto s = testing::Scenario(model, 4, 1024, plan);
  const auto t = BuildTrainingStep(s);
  EXPECT_EQ(t.Check(), "");
  const int gathers = TasksNamed(t, 0, "fsdp-gather");
  EXPECT_EQ(gathers, 4 * 2 * 2);  // layers x (forward, backward) x micro-batches
  EXPECT_EQ(TasksNamed(t, 0, "fsdp-copy-out"), gathers);
  EXPECT_EQ(TasksNamed(t, 0, "fsdp-reduce-copy-in"), TasksNamed(t, 0, "fsdp-reduce-scatter"));
  const double layer_params = static_cast<double>(model.LayerParameterCount());
  for (trace::TaskId id = 0; id < static_cast<trace::TaskId>(t.tasks().size()); ++id) {
    const trace::Task& task = t.tasks()[id];
    if (task.rank != 0) continue;
    const std::string name = t.name(task.name);
    if (name == "fsdp-copy-out") {
      EXPECT_EQ(task.stream, t.compute_stream());
      EXPECT_DOUBLE_EQ(task.compute.bytes.value, layer_params * 2.0 * 2.0);  // bf16, read and written
      ASSERT_EQ(t.deps_end(id) - t.deps_begin(id), 1);
      EXPECT_EQ(t.name(t.tasks()[*t.deps_begin(id)].name), "fsdp-gather");
    }
    if (name == "fsdp-reduce-copy-in") {
      EXPECT_NE(task.stream, t.compute_stream());
      // bf16 gradients read, written in the plan's reduce dtype.
      const double reduce = config::PrecisionBytes(plan.GradReducePrecision());
      EXPECT_DOUBLE_EQ(task.compute.bytes.value, layer_params * (2.0 + reduce));
    }
  }
}

// ZeRO-3 under PP without resharding (torchtitan's FSDP2 with
// reshard_after_forward=False and the pipeline schedule's no-sync backward):
// a layer is gathered once per step and reduce-scattered once, after its
// last micro-batch; in between each micro-batch's 16-bit gradients go into
// the fp32 accumulator (cast once, then added). Resharding plans gather and
// reduce-scatter every micro-batch.
TEST(TrainingStep, Fsdp2UnderPipelineKeepsParametersGatheredThroughTheStep) {
  auto model = testing::GptModel(4, 512, 8, 4096);
  auto plan = Plan(1, 2, 2, 1, 8);  // 4 micro-batches per pipeline, 2 layers per stage
  plan.sharding = config::Sharding::kZero3;
  plan.grad_reduce_precision = config::Precision::kFp32;
  const auto resharding = BuildTrainingStep(testing::Scenario(model, 4, 1024, plan));
  EXPECT_EQ(TasksNamed(resharding, 0, "fsdp-gather"), 2 * 2 * 4);  // layers x (forward, backward) x micro-batches
  EXPECT_EQ(TasksNamed(resharding, 0, "fsdp-reduce-scatter"), 2 * 4);
  EXPECT_EQ(TasksNamed(resharding, 0, "fsdp-grad-accumulate"), 0);

  plan.fsdp_pp_reshard = false;
  const auto s = testing::Scenario(model, 4, 1024, plan);
  const auto kept = BuildTrainingStep(s);
  EXPECT_EQ(kept.Check(), "");
  EXPECT_EQ(TasksNamed(kept, 0, "fsdp-gather"), 2);
  EXPECT_EQ(TasksNamed(kept, 0, "fsdp-reduce-scatter"), 2);
  EXPECT_EQ(TasksNamed(kept, 0, "fsdp-grad-accumulate"), 2 * 4);
  const double elements = static_cast<double>(model.LayerParameterCount());
  double bytes = 0;
  for (const auto& task : kept.tasks()) {
    if (task.rank == 0 && kept.name(task.name) == "fsdp-grad-accumulate") {
      EXPECT_EQ(task.stream, kept.compute_stream());
      bytes += task.compute.bytes.value;
    }
  }
  // Per layer: a cast (2 + 4 bytes) on the first micro-batch, an add (2 + 4 + 4) on the other three.
  EXPECT_DOUBLE_EQ(bytes, 2 * elements * (6.0 + 3 * 10.0));
}

// The distributed optimizer's overlapped parameter all-gather moves the
// 16-bit weights, or one byte a parameter with FP8 weights (plan.fp8_params);
// the embedding and head stay 16-bit. The step's weight cast becomes the
// FP8 weights' transpose.
TEST(TrainingStep, Fp8WeightsAreGatheredInOneByte) {
  auto model = testing::GptModel(4, 512, 8, 4096);
  auto plan = Plan(1, 1, 4, 1, 4);
  plan.sharding = config::Sharding::kZero1;
  plan.overlap_param_gather = true;
  plan.precision = config::Precision::kFp8;
  auto bytes_of = [](const trace::Trace& t, const std::string& name) {
    double b = 0;
    for (const auto& task : t.tasks()) {
      if (task.rank == 0 && t.name(task.name) == name) b += task.comm.bytes.value;
    }
    return b;
  };
  const double layers = 4.0 * static_cast<double>(model.LayerParameterCount());
  const double embedding = 4096.0 * 512;  // the first and last stage's: one rank holds both
  const auto bf16 = BuildTrainingStep(testing::Scenario(model, 4, 1024, plan));
  plan.fp8_params = true;
  const auto fp8 = BuildTrainingStep(testing::Scenario(model, 4, 1024, plan));
  EXPECT_EQ(fp8.Check(), "");
  EXPECT_NEAR(bytes_of(bf16, "param-gather") - bytes_of(fp8, "param-gather"), layers, 1.0);
  EXPECT_GT(bytes_of(fp8, "param-gather"), layers + embedding);  // the 16-bit embedding and head
  EXPECT_GT(TasksNamed(fp8, 0, "qkv-transpose-w"), 0);
  EXPECT_EQ(TasksNamed(fp8, 0, "qkv-cast-w"), 0);
}

// A model with a multi-token-prediction module (DeepSeek-V3) under the same
// plan: the MTP module is a pipeline layer of the last stage, kept gathered
// like the others (once per step), not indexed past the per-layer state.
TEST(TrainingStep, Fsdp2UnderPipelineKeepsTheMtpLayerGatheredToo) {
  auto model = testing::GptModel(4, 512, 8, 4096);
  model.mtp_modules = 1;
  auto plan = Plan(1, 2, 2, 1, 8);
  plan.sharding = config::Sharding::kZero3;
  plan.fsdp_pp_reshard = false;
  const auto t = BuildTrainingStep(testing::Scenario(model, 4, 1024, plan));
  EXPECT_EQ(t.Check(), "");
  // 5 pipeline layers (4 + the MTP module) over 2 stages, each gathered and
  // reduce-scattered once on its stage's rank.
  EXPECT_EQ(TasksNamed(t, 0, "fsdp-gather") + TasksNamed(t, 1, "fsdp-gather"), 5);
  EXPECT_EQ(TasksNamed(t, 0, "fsdp-reduce-scatter") + TasksNamed(t, 1, "fsdp-reduce-scatter"), 5);
}

// DeepSpeed's BF16_Optimizer under the pipeline engine: after each
// micro-batch's backward the rank's 16-bit gradients are added into fp32
// buffers (18 bytes a parameter), before the gradient goes upstream; the
// step all-reduces the fp32 gradients in full instead of reduce-scattering
// them, and still all-gathers the parameters after the step.
// Megatron-LM through early 2023 pipelines tensor-parallel ranks by
// scatter/gather: without sequence parallelism each TP rank sends 1/t of the
// activation and the receivers all-gather the pieces before using them
// (p2p_communication.py gather_split_1d_tensor); and its sends block
// (batch_isend_irecv, wait, torch.cuda.synchronize()): a rank's next pass
// waits for its last send (plan.pp_blocking_sends).
TEST(TrainingStep, PipelineSendsAreGatheredOnArrivalAndCanBlockTheSender) {
  auto model = testing::GptModel(4, 512, 8, 4096);
  auto plan = Plan(2, 2, 1, 1, 4);  // 4 micro-batches through 2 stages, tp 2
  const auto async_step = BuildTrainingStep(testing::Scenario(model, 4, 1024, plan));
  EXPECT_EQ(async_step.Check(), "");
  // Stage 1 gathers each micro-batch's activation, stage 0 each gradient.
  EXPECT_EQ(TasksNamed(async_step, 0, "pp-recv-gather"), 4);
  EXPECT_EQ(TasksNamed(async_step, 1, "pp-recv-gather"), 4);
  for (const auto& task : async_step.tasks()) {
    if (async_step.name(task.name) == "pp-recv-gather") {
      EXPECT_EQ(task.kind, trace::TaskKind::kCollective);
      EXPECT_EQ(task.comm.kind, trace::CollectiveKind::kAllGather);
      EXPECT_DOUBLE_EQ(task.comm.bytes.value, 1024.0 * 512 * 2);  // the whole activation, 16-bit
    }
  }
  // How many of `rank`'s own sends a later task of the rank waits for.
  auto waits_on_own_send = [](const trace::Trace& t, int rank) {
    std::set<trace::TaskId> sends;
    for (trace::TaskId id = 0; id < static_cast<trace::TaskId>(t.size()); ++id) {
      if (t.tasks()[id].rank != rank || t.tasks()[id].kind == trace::TaskKind::kTransfer) continue;
      for (const trace::TaskId* d = t.deps_begin(id); d != t.deps_end(id); ++d) {
        if (t.tasks()[*d].kind == trace::TaskKind::kTransfer && t.tasks()[*d].rank == rank) sends.insert(*d);
      }
    }
    return static_cast<int>(sends.size());
  };
  EXPECT_EQ(waits_on_own_send(async_step, 0), 0);
  plan.pp_blocking_sends = true;
  const auto blocking = BuildTrainingStep(testing::Scenario(model, 4, 1024, plan));
  EXPECT_EQ(blocking.Check(), "");
  // 1F1B on two stages: stage 0 runs F0 F1 B0 F2 B1 F3 B2 B3 and sends after
  // each forward, so all 4 of its sends hold a later pass; stage 1 runs F0 B0
  // F1 B1 ... and sends after each backward, the last with nothing after it.
  EXPECT_EQ(waits_on_own_send(blocking, 0), 4);
  EXPECT_EQ(waits_on_own_send(blocking, 1), 3);
  // Sequence parallelism splits the sends already: nothing to gather.
  plan.sequence_parallel = true;
  const auto sp = BuildTrainingStep(testing::Scenario(model, 4, 1024, plan));
  EXPECT_EQ(TasksNamed(sp, 0, "pp-recv-gather") + TasksNamed(sp, 1, "pp-recv-gather"), 0);
}

TEST(TrainingStep, Bf16OptimizerAddsIntoFp32AndAllReducesInFull) {
  auto model = testing::GptModel(8, 512, 8, 4096);
  auto plan = Plan(1, 2, 2, 1, 8);  // 4 micro-batches per pipeline
  plan.sharding = config::Sharding::kZero1;
  plan.overlap_param_gather = false;
  auto dp_kinds = [](const trace::Trace& t) {
    std::map<trace::CollectiveKind, int> kinds;
    for (const auto& task : t.tasks()) {
      if (task.kind == trace::TaskKind::kCollective && task.role == trace::TaskRole::kDpComm) ++kinds[task.comm.kind];
    }
    return kinds;
  };
  const auto plain_s = testing::Scenario(model, 4, 1024, plan);
  const auto plain = BuildTrainingStep(plain_s);
  EXPECT_EQ(TasksNamed(plain, 1, "grad-accumulate"), 0);
  EXPECT_GT(dp_kinds(plain)[trace::CollectiveKind::kReduceScatter], 0);

  plan.grad_accumulation = config::GradAccumulation::kFp32UpcastAdd;
  plan.zero_grad_all_reduce = true;
  const auto s = testing::Scenario(model, 4, 1024, plan);
  const auto t = BuildTrainingStep(s);
  EXPECT_EQ(t.Check(), "");
  for (int rank : {0, 1}) {
    EXPECT_EQ(TasksNamed(t, rank, "grad-accumulate"), 4) << rank;
    for (const auto& task : t.tasks()) {
      if (task.rank == rank && t.name(task.name) == "grad-accumulate") {
        EXPECT_DOUBLE_EQ(task.compute.bytes.value, StageTrainableParameters(s, rank) * 18.0);
      }
    }
  }
  // Stage 1's gradient for stage 0 leaves after the add.
  int sends_after_add = 0;
  for (trace::TaskId id = 0; id < static_cast<trace::TaskId>(t.tasks().size()); ++id) {
    for (const trace::TaskId* d = t.deps_begin(id); d != t.deps_end(id); ++d) {
      const trace::TaskId dep = *d;
      if (t.tasks()[dep].rank == 1 && t.name(t.tasks()[dep].name) == "grad-accumulate" &&
          t.tasks()[id].kind == trace::TaskKind::kTransfer) {
        ++sends_after_add;
      }
    }
  }
  EXPECT_EQ(sends_after_add, 4);
  // Autograd's accumulation skips each step's first micro-batch (6 bytes a
  // parameter); Megatron-LM 2021's fp32 hook runs on every one (10 bytes).
  plan.grad_accumulation = config::GradAccumulation::kAutogradAdd;
  const auto autograd = BuildTrainingStep(testing::Scenario(model, 4, 1024, plan));
  EXPECT_EQ(TasksNamed(autograd, 0, "grad-accumulate"), 3);
  plan.grad_accumulation = config::GradAccumulation::kFp32Add;
  const auto hook = BuildTrainingStep(testing::Scenario(model, 4, 1024, plan));
  EXPECT_EQ(TasksNamed(hook, 0, "grad-accumulate"), 4);
  for (const auto& task : hook.tasks()) {
    if (task.rank == 0 && hook.name(task.name) == "grad-accumulate") {
      EXPECT_DOUBLE_EQ(task.compute.bytes.value, StageTrainableParameters(s, 0) * 10.0);
    }
  }
  auto kinds = dp_kinds(t);
  EXPECT_EQ(kinds[trace::CollectiveKind::kReduceScatter], 0);
  EXPECT_GT(kinds[trace::CollectiveKind::kAllReduce], 0);
  EXPECT_GT(kinds[trace::CollectiveKind::kAllGather], 0);  // the parameters, after the step
}

}  // namespace
}  // namespace stacksim::workload
