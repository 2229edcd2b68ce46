// Zero-bubble (ZB-H1) and DualPipe schedules in a whole training step: same
// work as 1F1B, smaller bubble, DualPipe's two model copies and its
// overlapped forward-backward chunks hiding the expert all-to-all.
#include <gtest/gtest.h>

#include <string>

#include "sim/config/scenario.h"
#include "sim/memory/memory_model.h"
#include "sim/simulate/simulate.h"
#include "sim/util/error.h"
#include "sim/workload/pipeline_schedule.h"
#include "sim/workload/training_step.h"
#include "tests/fixtures.h"
#include "tests/input_error.h"

namespace stacksim::workload {
namespace {

using config::PipelineScheduleKind;

config::PlanConfig PipePlan(int pp, int dp, int64_t gb, PipelineScheduleKind kind) {
  config::PlanConfig p;
  p.tp = 2;
  p.sequence_parallel = true;
  p.pp = pp;
  p.dp = dp;
  p.micro_batch = 1;
  p.global_batch = gb;
  p.sharding = config::Sharding::kZero1;
  p.schedule = kind;
  return p;
}

double ComputeFlops(const trace::Trace& t) {
  double f = 0;
  for (const auto& task : t.tasks()) {
    if (task.kind == trace::TaskKind::kCompute) f += task.compute.flops.value;
  }
  return f;
}

simulate::SimulationResult SimulateStep(const config::ScenarioConfig& s) {
  simulate::Options o;
  o.simulate_if_out_of_memory = true;
  return simulate::Simulate(s, o);
}

TEST(ZeroBubble, TracesAreConsistentAndDoTheSameWorkAsOneFOneB) {
  auto model = testing::GptModel(8, 1024, 16, 8192);
  const auto base = BuildTrainingStep(testing::Scenario(model, 16, 1024, PipePlan(4, 2, 32, PipelineScheduleKind::kOneFOneB)));
  for (auto kind : {PipelineScheduleKind::kZeroBubbleH1, PipelineScheduleKind::kDualPipe}) {
    for (auto sharding : {config::Sharding::kNone, config::Sharding::kZero1}) {
      auto plan = PipePlan(4, 2, 32, kind);
      plan.sharding = sharding;
      auto t = BuildTrainingStep(testing::Scenario(model, 16, 1024, plan));
      EXPECT_EQ(t.Check(), "") << config::ScheduleName(kind);
      EXPECT_EQ(t.rank_count(), 4);
      // Every micro-batch passes every layer once, forward and backward: the
      // split into B and W and the two model copies move work, not add it.
      EXPECT_NEAR(ComputeFlops(t) / ComputeFlops(base), 1.0, 1e-9) << config::ScheduleName(kind);
    }
  }
}

// A split backward's gradient accumulation pass follows its W pass, once per
// micro-batch and chunk, as an unsplit backward's follows the backward.
TEST(ZeroBubble, GradientAccumulationFollowsTheWeightPass) {
  auto model = testing::GptModel(8, 1024, 16, 8192);
  for (auto kind : {PipelineScheduleKind::kOneFOneB, PipelineScheduleKind::kZeroBubbleH1}) {
    auto plan = PipePlan(4, 2, 32, kind);
    plan.grad_accumulation = config::GradAccumulation::kFp32Add;
    auto t = BuildTrainingStep(testing::Scenario(model, 16, 1024, plan));
    EXPECT_EQ(t.Check(), "");
    int passes = 0;
    for (const auto& task : t.tasks()) passes += task.rank == 0 && t.name(task.name) == "grad-accumulate";
    EXPECT_EQ(passes, 16) << config::ScheduleName(kind);  // 32 sequences over dp 2, micro-batch 1
  }
}

TEST(ZeroBubble, ZeroBubbleH1ShrinksTheBubble) {
  // Balanced stages (small vocabulary) and no tensor parallelism, so the
  // bubble is the schedule's.
  auto model = testing::GptModel(16, 2048, 16, 1024);
  auto plan = PipePlan(8, 1, 16, PipelineScheduleKind::kOneFOneB);
  plan.tp = 1;
  plan.sequence_parallel = false;
  auto s = testing::Scenario(model, 8, 2048, plan);
  auto one = SimulateStep(s);
  s.plan.schedule = PipelineScheduleKind::kZeroBubbleH1;
  auto zb = SimulateStep(s);
  EXPECT_LT(zb.iteration, one.iteration);
  // With W about a third of F+B+W the bubble shrinks toward a third of 1F1B's
  // (Qi et al. 2024 §2.1); communication and the uneven F/B/W make it less.
  auto bubble = [](const simulate::SimulationResult& r) {
    double b = 0;
    for (const auto& st : r.per_stage) b += st.bubble.seconds();
    return b;
  };
  EXPECT_LT(bubble(zb), 0.6 * bubble(one));
  EXPECT_GT(bubble(zb), 0.2 * bubble(one));
}

TEST(ZeroBubble, DualPipeRanksHoldTwoStagesAndTheirMirror) {
  auto model = testing::GptModel(8, 1024, 16, 8192);
  auto s = testing::Scenario(model, 16, 1024, PipePlan(4, 2, 32, PipelineScheduleKind::kDualPipe));
  const int64_t layer = model.LayerParameterCount() / 2;  // per TP rank
  const int64_t emb = model.vocab_size * model.hidden_size / 2;
  const int64_t head = emb + 2 * model.hidden_size;  // untied? tied copies: see below
  // Stages of 2 layers; ranks 0 and 3 hold stage 0 (embedding) and stage 3
  // (head) of the two copies; ranks 1 and 2 hold stages 1 and 2.
  EXPECT_EQ(StageParameters(s, 1), 4 * layer);
  EXPECT_EQ(StageParameters(s, 2), 4 * layer);
  const int64_t ends = 4 * layer + emb + (model.tie_word_embeddings ? emb : head - 2 * model.hidden_size) +
                       2 * model.hidden_size + (model.learned_position_embeddings ? model.max_position_embeddings * model.hidden_size : 0);
  EXPECT_EQ(StageParameters(s, 0), ends);
  EXPECT_EQ(StageParameters(s, 3), ends);

  // Memory: twice the weights of a 1F1B stage in the middle.
  auto dual = memory::EstimateMemory(s);
  s.plan.schedule = PipelineScheduleKind::kOneFOneB;
  auto one = memory::EstimateMemory(s);
  EXPECT_NEAR(dual[1].weights.value / one[1].weights.value, 2.0, 1e-9);
}

TEST(ZeroBubble, DualPipeOverlapsTheExpertAllToAll) {
  config::ModelConfig m = config::LoadModelFile(std::string(STACKSIM_SOURCE_DIR) + "/models/mixtral-8x7b.json");
  m.num_layers = 8;
  config::PlanConfig plan;
  plan.pp = 4;
  plan.dp = 16;
  plan.ep = 8;
  plan.micro_batch = 1;
  plan.global_batch = 16 * 16;
  plan.sharding = config::Sharding::kZero1;
  plan.schedule = PipelineScheduleKind::kOneFOneB;
  auto s = testing::Scenario(m, 64, 4096, plan);
  auto one = SimulateStep(s);
  s.plan.schedule = PipelineScheduleKind::kDualPipe;
  auto dual = SimulateStep(s);
  // The forward of one chunk runs while the other chunk's all-to-all is in
  // flight (and vice versa): much less of the all-to-all is exposed.
  EXPECT_LT(dual.breakdown.ep_exposed.seconds(), 0.6 * one.breakdown.ep_exposed.seconds());
  EXPECT_LT(dual.iteration, one.iteration);
  // 1F1B blocks on every all-to-all; DualPipe issues the same ones and waits
  // for under half of their time.
  EXPECT_NEAR(one.breakdown.ep_exposed.seconds() / one.moe_alltoall_time.seconds(), 1.0, 0.05);
  EXPECT_LT(dual.breakdown.ep_exposed.seconds(), 0.6 * dual.moe_alltoall_time.seconds());
}

// Megatron-Core's 1F1B all-to-all overlap (plan.moe_a2a_overlap): each
// steady-state forward runs with the backward of an earlier micro-batch, one
// more warm-up forward per rank, the all-to-alls on their own stream.
TEST(ZeroBubble, AllToAllOverlapPairsTheSteadyState) {
  for (bool interleaved : {false, true}) {
    const int v = interleaved ? 2 : 1;
    auto sched = BuildSchedule(interleaved ? PipelineScheduleKind::kInterleaved : PipelineScheduleKind::kOneFOneB, 4, v,
                               8, true);
    auto plain = BuildSchedule(interleaved ? PipelineScheduleKind::kInterleaved : PipelineScheduleKind::kOneFOneB, 4, v,
                               8, false);
    for (int s = 0; s < 4; ++s) {
      int pairs = 0, fwd = 0, bwd = 0;
      for (size_t i = 0; i < sched[s].size(); ++i) {
        const PipelineStep& st = sched[s][i];
        (st.forward() ? fwd : bwd) += 1;
        if (!st.overlap_with_next) continue;
        ++pairs;
        ASSERT_LT(i + 1, sched[s].size());
        const PipelineStep& next = sched[s][i + 1];
        EXPECT_TRUE(st.forward());
        EXPECT_EQ(next.pass, Pass::kBackward);
        // Never a micro-batch's own backward: that one waits for this forward.
        EXPECT_FALSE(next.micro_batch == st.micro_batch && next.chunk == st.chunk) << s << " " << i;
      }
      EXPECT_EQ(fwd, 8 * v);
      EXPECT_EQ(bwd, 8 * v);
      EXPECT_GT(pairs, 0);
      EXPECT_GE(PeakInFlightChunks(sched[s]), PeakInFlightChunks(plain[s]));
    }
  }
  EXPECT_THROW(BuildSchedule(PipelineScheduleKind::kDualPipe, 4, 1, 8, true), std::invalid_argument);
}

TEST(ZeroBubble, AllToAllOverlapHidesPartOfTheExpertAllToAll) {
  // Qwen3-30B-A3B's 128 experts over EP 16: the all-to-all crosses nodes.
  config::ModelConfig m = config::LoadModelFile(std::string(STACKSIM_SOURCE_DIR) + "/models/qwen3-30b-a3b.json");
  m.num_layers = 8;
  config::PlanConfig plan;
  plan.pp = 4;
  plan.vp = 2;
  plan.dp = 16;
  plan.ep = 16;
  plan.micro_batch = 1;
  plan.global_batch = 16 * 16;
  plan.sharding = config::Sharding::kZero1;
  plan.schedule = PipelineScheduleKind::kInterleaved;
  auto s = testing::Scenario(m, 64, 4096, plan);
  EXPECT_NO_THROW(config::ValidatePlan(s, "s.json"));
  auto one = SimulateStep(s);
  s.plan.moe_a2a_overlap = true;
  EXPECT_NO_THROW(config::ValidatePlan(s, "s.json"));
  auto paired = SimulateStep(s);
  EXPECT_LT(paired.breakdown.ep_exposed.seconds(), 0.8 * one.breakdown.ep_exposed.seconds());
  EXPECT_LT(paired.iteration, one.iteration);
  // One more micro-batch of activations held on every rank.
  EXPECT_GT(memory::EstimateMemory(s)[0].activations.value, one.memory[0].activations.value);

  // Without pipeline parallelism: the next micro-batch's forward runs with
  // this one's backward.
  config::ScenarioConfig flat = s;
  flat.plan.pp = 1;
  flat.plan.vp = 1;
  flat.plan.dp = 64;
  flat.plan.global_batch = 64 * 8;
  flat.plan.schedule = PipelineScheduleKind::kOneFOneB;
  EXPECT_NO_THROW(config::ValidatePlan(flat, "s.json"));
  auto flat_paired = SimulateStep(flat);
  flat.plan.moe_a2a_overlap = false;
  auto flat_one = SimulateStep(flat);
  EXPECT_LT(flat_paired.iteration, flat_one.iteration);

  // Bad plans name the key: plain 1F1B under pp (paired steps would wait
  // on each other across stages), a schedule with its own order, a dense
  // model.
  s.plan.schedule = PipelineScheduleKind::kOneFOneB;
  s.plan.vp = 1;
  InputError e = testing::ErrorFrom([&] { config::ValidatePlan(s, "s.json"); });
  EXPECT_EQ(e.key_path(), "plan.moe_a2a_overlap");
  s.plan.schedule = PipelineScheduleKind::kDualPipe;
  e = testing::ErrorFrom([&] { config::ValidatePlan(s, "s.json"); });
  EXPECT_EQ(e.key_path(), "plan.moe_a2a_overlap");
  s.plan.schedule = PipelineScheduleKind::kInterleaved;
  s.plan.vp = 2;
  s.plan.ep = 1;
  e = testing::ErrorFrom([&] { config::ValidatePlan(s, "s.json"); });
  EXPECT_EQ(e.key_path(), "plan.moe_a2a_overlap");
}

TEST(ZeroBubble, DualPipeNeedsEvenPipelineAndEnoughMicroBatches) {
  auto model = testing::GptModel(8, 1024, 16, 8192);
  auto s = testing::Scenario(model, 12, 1024, PipePlan(3, 2, 32, PipelineScheduleKind::kDualPipe));
  EXPECT_THROW(config::ValidatePlan(s, "s.json"), InputError);
  s = testing::Scenario(model, 16, 1024, PipePlan(4, 2, 12, PipelineScheduleKind::kDualPipe));  // 6 micro-batches < 8
  EXPECT_THROW(config::ValidatePlan(s, "s.json"), InputError);
}

}  // namespace
}  // namespace stacksim::workload

namespace stacksim::workload {
namespace {

// The shipped DeepSeek-V3 scenario (TP 1, PP 16, EP 64, ZeRO-1, DualPipe on
// 2048 H800) fits, holds two stages per rank and hides part of its all-to-all.
TEST(ZeroBubble, DeepSeekV3ScenarioFitsAndHidesPartOfItsAllToAll) {
  auto s = config::LoadScenario(std::string(STACKSIM_SOURCE_DIR) + "/scenarios/deepseek-v3-2048xh800.json", {});
  ASSERT_EQ(s.plan.schedule, PipelineScheduleKind::kDualPipe);
  auto r = simulate::Simulate(s);
  EXPECT_FALSE(r.out_of_memory);
  ASSERT_GT(r.iteration.seconds(), 0.0);
  ASSERT_EQ(r.memory.size(), 16u);
  EXPECT_GT(r.breakdown.ep_exposed.seconds(), 0.0);
  // Ranks 0 and 15 both hold the embedding, the output head and the MTP
  // module (stage 0's three dense layers and stage 15's last two layers
  // with the module): the slowest rank, with few all-to-alls to hide.
  EXPECT_NEAR(r.memory[0].weights.value, r.memory[15].weights.value, 1.0);
  EXPECT_GT(r.memory[0].weights.value, r.memory[1].weights.value);
  // Without the module the slowest rank holds MoE layers in both its
  // chunks, and DualPipe hides part of their all-to-all.
  s.model.mtp_modules = 0;
  auto plain = simulate::Simulate(s);
  EXPECT_LT(plain.iteration, r.iteration);
  EXPECT_GT(plain.breakdown.ep_exposed.seconds(), 0.0);
  EXPECT_LT(plain.breakdown.ep_exposed.seconds(), 0.8 * plain.moe_alltoall_time.seconds());
}

}  // namespace
}  // namespace stacksim::workload
