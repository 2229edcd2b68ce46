#include "sim/diagnose/remedy_rules.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "tests/fixtures.h"

namespace stacksim::diagnose {
namespace {

using testing::GptModel;
using testing::Scenario;

// A step as the rules see it, built by hand: a 100 ms step of an 8-layer GPT
// on one 8-GPU node, nothing exposed until a test says so.
struct Step {
  simulate::SimulationResult result;
  StepAccounting accounting;
  LayerSplit split;

  explicit Step(const config::PlanConfig& plan) {
    result.scenario = Scenario(GptModel(8, 1024, 16, 32000), 8, 1024, plan);
    split.step = Time::Ms(100);
  }
  // The candidates of one rule, as Candidates gives them.
  std::vector<Candidate> Fired(const std::string& rule) const {
    std::vector<Candidate> out;
    for (Candidate& c : Candidates(RemedyContext{result, accounting, split})) {
      if (c.rule == rule) out.push_back(std::move(c));
    }
    return out;
  }
};

config::PlanConfig Dp8() {
  config::PlanConfig p;
  p.dp = 8;
  p.global_batch = 64;
  return p;
}

TEST(RemedyRules, NamesAreUniqueAndTheTableKeepsTheFamiliesOrder) {
  const auto& rules = RemedyRules();
  std::set<std::string> names;
  for (const RemedyRule& r : rules) EXPECT_TRUE(names.insert(r.name).second) << r.name;
  ASSERT_EQ(rules.size(), 29u);
  // Compilation first, then model definition, hardware, parallelization and
  // placement last: the order the remedies were always listed in.
  EXPECT_EQ(rules.front().layer, StackLayer::kCompilation);
  EXPECT_EQ(std::string(rules[4].name), "larger-micro-batch");
  EXPECT_EQ(rules[4].layer, StackLayer::kModelDefinition);
  EXPECT_EQ(rules[5].layer, StackLayer::kHardware);
  EXPECT_EQ(rules.back().layer, StackLayer::kRuntimeOrchestration);
}

TEST(RemedyRules, NothingFiresOnAFusedStepThatHidesEverything) {
  Step s(Dp8());
  s.split.step_class = StepClass::kMemoryBound;
  EXPECT_TRUE(Candidates(RemedyContext{s.result, s.accounting, s.split}).empty());
}

TEST(RemedyRules, EagerKernelsProposeFusionInTheCompilationLayer) {
  config::PlanConfig plan = Dp8();
  plan.kernels = config::KernelFusion::kEager;
  Step s(plan);
  s.accounting.eager_excess = Time::Ms(20);
  std::vector<Candidate> c = s.Fired("fused-kernels");
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].layer, StackLayer::kCompilation);
  EXPECT_EQ(c[0].plan.kernels, config::KernelFusion::kFused);
  EXPECT_NE(c[0].finding.find("0.020 s beyond fused ones (20.0% of the step)"), std::string::npos) << c[0].finding;
  EXPECT_TRUE(Step(Dp8()).Fired("fused-kernels").empty());
}

TEST(RemedyRules, ExposedGradientsUnderOnePercentOfTheStepAreNoise) {
  config::PlanConfig plan = Dp8();
  plan.overlap_grad_reduce = false;
  Step s(plan);
  s.result.breakdown.dp_exposed = Time::Us(900);
  EXPECT_TRUE(s.Fired("overlap-grad-reduce").empty());
  s.result.breakdown.dp_exposed = Time::Ms(5);
  std::vector<Candidate> c = s.Fired("overlap-grad-reduce");
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].layer, StackLayer::kParallelization);
  EXPECT_TRUE(c[0].plan.overlap_grad_reduce);
  // The same symptom with the overlap already on: nothing to propose.
  s.result.scenario.plan.overlap_grad_reduce = true;
  EXPECT_TRUE(s.Fired("overlap-grad-reduce").empty());
  // dp 8 -> tp 2 dp 4 fits the 8-GPU domain.
  std::vector<Candidate> tp = s.Fired("more-tp");
  ASSERT_EQ(tp.size(), 1u);
  EXPECT_EQ(tp[0].plan.tp, 2);
  EXPECT_EQ(tp[0].plan.dp, 4);
}

TEST(RemedyRules, ABubbleProposesInterleavingZeroBubbleAndFewerStages) {
  config::PlanConfig plan;
  plan.pp = 4;
  plan.dp = 2;
  plan.global_batch = 16;
  Step s(plan);
  EXPECT_TRUE(s.Fired("interleaved-schedule").empty());
  EXPECT_TRUE(s.Fired("zero-bubble").empty());
  s.result.breakdown.bubble = Time::Ms(30);
  // 8 layers over pp 4: vp 2 divides, vp 3, 4, 6 and 8 do not.
  std::vector<Candidate> vp = s.Fired("interleaved-schedule");
  ASSERT_EQ(vp.size(), 1u);
  EXPECT_EQ(vp[0].plan.vp, 2);
  EXPECT_EQ(vp[0].plan.schedule, config::PipelineScheduleKind::kInterleaved);
  EXPECT_EQ(s.Fired("zero-bubble").size(), 1u);
  std::vector<Candidate> fewer = s.Fired("fewer-stages");
  ASSERT_EQ(fewer.size(), 1u);
  EXPECT_EQ(fewer[0].plan.pp, 2);
  EXPECT_EQ(fewer[0].plan.dp, 4);
  EXPECT_TRUE(s.Fired("smaller-micro-batch").empty()) << "micro-batch 1 cannot halve";
}

TEST(RemedyRules, LargerMicroBatchesOnlyForComputeBoundSteps) {
  Step s(Dp8());
  s.split.step_class = StepClass::kComputeBound;
  std::vector<Candidate> c = s.Fired("larger-micro-batch");
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].layer, StackLayer::kModelDefinition);
  EXPECT_EQ(c[0].plan.micro_batch, 2);
  s.split.step_class = StepClass::kCommunicationBound;
  EXPECT_TRUE(s.Fired("larger-micro-batch").empty());
}

TEST(RemedyRules, ScatteredNodesWithExposedTrafficProposePackedNodesAndKeepThePlan) {
  Step s(Dp8());
  s.result.scenario.node_order = config::NodeOrder::kScattered;
  EXPECT_TRUE(s.Fired("packed-nodes").empty()) << "nothing exposed";
  s.result.breakdown.dp_exposed = Time::Us(10);
  std::vector<Candidate> c = s.Fired("packed-nodes");
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].layer, StackLayer::kRuntimeOrchestration);
  EXPECT_EQ(c[0].node_order, config::NodeOrder::kPacked);
  EXPECT_EQ(config::PlanToJson(c[0].plan), config::PlanToJson(s.result.scenario.plan));
  s.result.scenario.node_order = config::NodeOrder::kPacked;
  EXPECT_TRUE(s.Fired("packed-nodes").empty());
}

TEST(RemedyRules, RecomputationAndOffloadAreHardwareRemedies) {
  config::PlanConfig plan = Dp8();
  plan.recompute = config::Recompute::kFull;
  plan.overlap_offload = false;
  Step s(plan);
  s.accounting.recompute = Time::Ms(25);
  s.result.breakdown.offload_exposed = Time::Ms(3);
  for (const char* rule : {"selective-recompute", "no-recompute", "overlap-offload", "no-offload"}) {
    std::vector<Candidate> c = s.Fired(rule);
    ASSERT_EQ(c.size(), 1u) << rule;
    EXPECT_EQ(c[0].layer, StackLayer::kHardware) << rule;
  }
  s.result.breakdown.offload_exposed = Time::Zero();
  EXPECT_TRUE(s.Fired("overlap-offload").empty());
  EXPECT_TRUE(s.Fired("no-offload").empty());
}

// What search often ranks first, diagnose can try: context parallelism for
// half the tensor parallelism (exposed TP) or half the stages (a bubble).
TEST(RemedyRules, ExposedTpOrABubbleProposeMoreContextParallelism) {
  config::PlanConfig plan;
  plan.tp = 4;
  plan.pp = 2;
  plan.sequence_parallel = true;
  plan.global_batch = 64;
  Step s(plan);
  EXPECT_TRUE(s.Fired("more-cp").empty());
  s.result.breakdown.tp_exposed = Time::Ms(10);
  std::vector<Candidate> c = s.Fired("more-cp");
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].plan.tp, 2);
  EXPECT_EQ(c[0].plan.cp, 2);
  EXPECT_EQ(c[0].plan.pp, 2);
  EXPECT_EQ(c[0].layer, StackLayer::kParallelization);
  EXPECT_NE(c[0].change.find("tp 4 -> 2, cp 1 -> 2"), std::string::npos) << c[0].change;
  s.result.breakdown.bubble = Time::Ms(10);
  c = s.Fired("more-cp");
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[1].plan.pp, 1);
  EXPECT_EQ(c[1].plan.cp, 2);
  EXPECT_EQ(c[1].plan.tp, 4);
}

}  // namespace
}  // namespace stacksim::diagnose
