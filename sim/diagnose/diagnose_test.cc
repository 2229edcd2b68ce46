#include "sim/diagnose/diagnose.h"

#include <gtest/gtest.h>

#include "sim/diagnose/diagnosis_report.h"

#include "tests/fixtures.h"

namespace stacksim::diagnose {
namespace {

using testing::GptModel;
using testing::Scenario;

Time Sum(const Diagnosis& d) {
  Time s = d.ideal;
  for (Time g : d.layer_gap) s += g;
  return s;
}

const Remedy* Top(const Diagnosis& d) {
  return !d.remedies.empty() && d.remedies[0].status == RemedyStatus::kSimulated ? &d.remedies[0] : nullptr;
}

// One GPU, eager kernels: the memory-bound work runs at eager bandwidth, and
// fusing it is the remedy that saves most (the profile has no fp8 and there
// is no communication, so compilation is where the gap is).
TEST(Diagnose, EagerKernelsMakeFusionTheTopRemedy) {
  config::PlanConfig plan;
  plan.micro_batch = 4;
  plan.global_batch = 4;
  plan.kernels = config::KernelFusion::kEager;
  Diagnosis d = Diagnose(Scenario(GptModel(4, 2048, 16, 32000), 1, 2048, plan));
  EXPECT_EQ(Sum(d), d.step);
  EXPECT_EQ(d.step, d.result.iteration);
  EXPECT_GT(d.layer_gap[StackLayer::kCompilation], Time::Zero());
  const Remedy* top = Top(d);
  ASSERT_NE(top, nullptr);
  EXPECT_EQ(top->layer, StackLayer::kCompilation);
  EXPECT_EQ(top->plan_changes, nlohmann::json({{"kernels", "fused"}}));
  EXPECT_GT(top->gain, Time::Zero());
  // The predicted step is what simulating the changed plan gives.
  config::ScenarioConfig fused = d.result.scenario;
  fused.plan.kernels = config::KernelFusion::kFused;
  EXPECT_EQ(top->predicted, simulate::Simulate(fused).iteration);
  // Nothing communicates and nothing recomputes.
  EXPECT_EQ(d.layer_gap[StackLayer::kHardware], Time::Zero());
  for (const Remedy& r : d.remedies) EXPECT_NE(r.layer, StackLayer::kHardware) << r.change;
}

// pp 8 with 8 micro-batches per pipeline: 1F1B idles 7 of 15 slots, the
// bubble is the largest gap, and a pipeline-schedule change ranks first.
TEST(Diagnose, FewMicroBatchesMakeTheBubbleTheGapAndTheScheduleTheRemedy) {
  config::PlanConfig plan;
  plan.pp = 8;
  plan.micro_batch = 1;
  plan.global_batch = 8;
  Diagnosis d = Diagnose(Scenario(GptModel(32, 2048, 16, 32000), 8, 2048, plan));
  EXPECT_EQ(Sum(d), d.step);
  StackLayer largest = StackLayer::kModelDefinition;
  for (StackLayer l : kStackLayers) {
    if (d.layer_gap[l] > d.layer_gap[largest]) largest = l;
  }
  EXPECT_EQ(largest, StackLayer::kParallelization) << "parallelization";
  // The pipeline's idle: the bubble proper, including the last stage's wait
  // for stage 0 at the tied-embedding all-reduce (the drain of the
  // pipeline), which simulate counts as bubble, not "other".
  const auto& parts = d.layer_parts[StackLayer::kParallelization];
  double pipeline = parts["bubble_s"].get<double>();
  for (const auto& [key, v] : parts.items()) {
    if (v.is_number()) {
      EXPECT_LE(v.get<double>(), pipeline) << key;
    }
  }
  EXPECT_LT(d.layer_parts[StackLayer::kRuntimeOrchestration]["other_idle_s"].get<double>(), 0.01 * d.step.seconds());
  EXPECT_GT(pipeline, 0.3 * d.step.seconds());  // (p-1)/(m+p-1) = 7/15 of a 1F1B pipeline, less the comm
  const Remedy* top = Top(d);
  ASSERT_NE(top, nullptr);
  EXPECT_EQ(top->layer, StackLayer::kParallelization);
  EXPECT_TRUE(top->plan_changes.contains("schedule") || top->plan_changes.contains("vp")) << top->plan_changes;
  EXPECT_GT(top->gain, d.step * 0.1);
  // Remedies together are kept only when they beat the best one alone.
  if (d.combined.status != RemedyStatus::kNone) {
    EXPECT_EQ(d.combined.status, RemedyStatus::kSimulated);
    EXPECT_LT(d.combined.predicted, top->predicted);
  }
  // Ranked by gain.
  for (size_t i = 1; i < d.remedies.size(); ++i) {
    if (d.remedies[i].status != RemedyStatus::kSimulated) break;
    EXPECT_GE(d.remedies[i - 1].gain, d.remedies[i].gain);
  }
}

// tp 8 on a PCIe node (no NVLink): the TP collectives crawl over PCIe, which
// is named as the binding link, and less tensor parallelism ranks first.
TEST(Diagnose, TpOverPcieIsCommunicationBoundAndLessTpRanksFirst) {
  config::PlanConfig plan;
  plan.tp = 8;
  plan.sequence_parallel = true;
  plan.micro_batch = 1;
  plan.global_batch = 8;
  config::ScenarioConfig s = Scenario(GptModel(4, 4096, 32, 32000), 8, 2048, plan);
  s.topology.scale_up.kind = config::ScaleUpKind::kPcie;
  s.topology.scale_up.per_gpu_bandwidth = Bandwidth{16e9};
  Diagnosis d = Diagnose(s);
  EXPECT_EQ(Sum(d), d.step);
  EXPECT_EQ(d.step_class, StepClass::kCommunicationBound);
  bool pcie = false;
  for (const auto& line : d.layer_findings[StackLayer::kHardware]) pcie |= line.find("binding link: PCIe") != std::string::npos;
  EXPECT_TRUE(pcie);
  const Remedy* top = Top(d);
  ASSERT_NE(top, nullptr);
  EXPECT_EQ(top->layer, StackLayer::kParallelization);
  EXPECT_LT(top->plan_changes.value("tp", 8), 8) << top->change;
  EXPECT_GT(top->gain, d.step * 0.2);
}

// Remedies that break the plan's rules are listed as invalid, never simulated.
TEST(Diagnose, InvalidRemediesAreReportedNotSimulated) {
  config::PlanConfig plan;
  plan.pp = 4;
  plan.micro_batch = 1;
  plan.global_batch = 6;  // 6 micro-batches: interleaving needs a multiple of pp
  Diagnosis d = Diagnose(Scenario(GptModel(8, 1024, 16, 32000), 4, 1024, plan));
  EXPECT_EQ(Sum(d), d.step);
  bool invalid = false;
  for (const Remedy& r : d.remedies) {
    if (r.plan_changes.contains("vp") && r.plan_changes["vp"] == 2) {
      EXPECT_EQ(r.status, RemedyStatus::kInvalid);
      EXPECT_FALSE(r.reason.empty());
      invalid = true;
    }
  }
  EXPECT_TRUE(invalid);
}

const Remedy* Find(const Diagnosis& d, const std::string& key) {
  for (const Remedy& r : d.remedies) {
    if (r.plan_changes.contains(key)) return &r;
  }
  return nullptr;
}

// tp 4 pp 2 dp 2 on two 8-GPU nodes with slow (2 GB/s) NICs, 128
// micro-batches per pipeline: in Megatron-LM's order each node holds one
// stage, so every activation and gradient send crosses the NICs while the
// gradient all-reduce (once per step, overlapped with the backward) stays on
// NVLink. The pipeline-inner order swaps the two: 256 sends of 1 MB move to
// NVLink, one all-reduce of a stage's gradients (four 1024-wide layers, 50 MB
// over tp 4) moves to the NICs, and the step gets faster.
TEST(Diagnose, CrossNodePipelineSendsProposeThePipelineInnerRankOrder) {
  config::PlanConfig plan;
  plan.tp = 4;
  plan.pp = 2;
  plan.dp = 2;
  plan.sequence_parallel = true;
  plan.micro_batch = 1;
  plan.global_batch = 256;
  config::ScenarioConfig s = Scenario(GptModel(8, 1024, 16, 51200), 16, 2048, plan);
  s.topology.nics.bandwidth = Bandwidth{2e9};
  Diagnosis d = Diagnose(s);
  ASSERT_GT(d.result.breakdown.pp_exposed, d.step * 0.01);
  const Remedy* r = Find(d, "rank_order");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->plan_changes, nlohmann::json({{"rank_order", "tp-cp-pp-dp"}}));
  EXPECT_EQ(r->status, RemedyStatus::kSimulated) << r->reason;
  EXPECT_GT(r->gain, d.step * 0.05);
  // With 8 micro-batches per pipeline the sends are few and the same remedy
  // loses: the NICs then carry more in the gradient all-reduce.
  s.plan.global_batch = 16;
  Diagnosis few = Diagnose(s);
  const Remedy* lost = Find(few, "rank_order");
  ASSERT_NE(lost, nullptr);
  EXPECT_LT(lost->gain, Time::Zero());
}

// The reverse: the pipeline-inner order with two micro-batches per pipeline
// and the gradient all-reduce after the backward (not overlapped): the
// all-reduce over the NICs is exposed, and putting the replicas back next to
// each other (on NVLink) gains.
TEST(Diagnose, ExposedGradientsUnderThePipelineInnerOrderProposeTheDefault) {
  config::PlanConfig plan;
  plan.tp = 4;
  plan.pp = 2;
  plan.dp = 2;
  plan.sequence_parallel = true;
  plan.micro_batch = 1;
  plan.global_batch = 4;
  plan.overlap_grad_reduce = false;
  plan.rank_order = config::RankOrder::kTpCpPpDp;
  Diagnosis d = Diagnose(Scenario(GptModel(8, 4096, 32, 51200), 16, 2048, plan));
  ASSERT_GT(d.result.breakdown.dp_exposed, d.step * 0.01);
  const Remedy* r = Find(d, "rank_order");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->plan_changes["rank_order"], "tp-cp-dp-pp");
  EXPECT_EQ(r->status, RemedyStatus::kSimulated) << r->reason;
  EXPECT_GT(r->gain, Time::Zero());
}

// Scattered nodes: the remedy is packed nodes, a scenario key; the analytic
// model cannot price it, so it is listed (with how to measure it), never
// ranked or combined.
TEST(Diagnose, ScatteredNodesProposePackedNodesForTheFlowLevelModel) {
  config::PlanConfig plan;
  plan.tp = 8;
  plan.dp = 2;
  plan.sequence_parallel = true;
  plan.micro_batch = 1;
  plan.global_batch = 4;
  plan.overlap_grad_reduce = false;
  config::ScenarioConfig s = Scenario(GptModel(4, 4096, 32, 51200), 16, 2048, plan);
  s.node_order = config::NodeOrder::kScattered;
  Diagnosis d = Diagnose(s);
  const Remedy* r = Find(d, "node_order");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->plan_changes, nlohmann::json({{"node_order", "packed"}}));
  EXPECT_EQ(r->layer, StackLayer::kRuntimeOrchestration);
  EXPECT_EQ(r->status, RemedyStatus::kNotSimulated);
  EXPECT_NE(r->reason.find("--network simgrid --set node_order=packed"), std::string::npos) << r->reason;
  EXPECT_NE(DiagnosisText(d).find("not measured here"), std::string::npos);
  // Packed nodes propose nothing.
  s.node_order = config::NodeOrder::kPacked;
  EXPECT_EQ(Find(Diagnose(s), "node_order"), nullptr);
}

// 32 routed experts over ep 32 on four 8-GPU nodes: the token all-to-all
// crosses the NICs. Expert parallelism inside one node (ep 8) puts it on
// NVLink and gains; ep 16 (halved) and the hierarchical dispatcher are
// offered too.
TEST(Diagnose, ExposedExpertAllToAllProposesEpInsideTheDomain) {
  config::ModelConfig m = GptModel(4, 2048, 16, 32000);
  m.num_experts = 32;
  m.experts_per_token = 2;
  m.moe_intermediate_size = 2048;
  config::PlanConfig plan;
  plan.dp = 32;
  plan.ep = 32;
  plan.micro_batch = 1;
  plan.global_batch = 64;
  plan.sharding = config::Sharding::kZero1;
  Diagnosis d = Diagnose(Scenario(m, 32, 2048, plan));
  ASSERT_GT(d.result.breakdown.ep_exposed, d.step * 0.01);
  const Remedy *inside = nullptr, *halved = nullptr, *hier = nullptr;
  for (const Remedy& r : d.remedies) {
    if (r.plan_changes == nlohmann::json({{"ep", 8}})) inside = &r;
    if (r.plan_changes == nlohmann::json({{"ep", 16}})) halved = &r;
    if (r.plan_changes.contains("moe_dispatcher")) hier = &r;
  }
  ASSERT_NE(inside, nullptr);
  ASSERT_NE(halved, nullptr);
  ASSERT_NE(hier, nullptr);
  EXPECT_EQ(inside->status, RemedyStatus::kSimulated) << inside->reason;
  EXPECT_GT(inside->gain, Time::Zero());
  EXPECT_NE(inside->change.find("inside the NVLink domain"), std::string::npos) << inside->change;
  // Inside one node already: neither the in-domain nor the hierarchical remedy.
  plan.dp = 8;
  plan.ep = 8;
  plan.global_batch = 16;
  Diagnosis node = Diagnose(Scenario(m, 8, 2048, plan));
  for (const Remedy& r : node.remedies) {
    EXPECT_FALSE(r.plan_changes.contains("moe_dispatcher")) << r.change;
    EXPECT_EQ(r.change.find("inside the NVLink domain"), std::string::npos) << r.change;
  }
}

// All-gather context parallelism over two nodes (cp 8, tp 2): the blocking
// K/V gathers cross the NICs and sit in TP's exposed time. Offered: the ring
// exchange (overlapped with attention) and cp 4 with dp 2.
TEST(Diagnose, ExposedContextParallelTrafficProposesTheOtherCpCommAndLessCp) {
  config::PlanConfig plan;
  plan.tp = 2;
  plan.cp = 8;
  plan.sequence_parallel = true;
  plan.cp_comm = config::CpComm::kAllGather;
  plan.micro_batch = 1;
  plan.global_batch = 2;
  config::ModelConfig m = GptModel(4, 4096, 32, 51200);
  m.max_position_embeddings = 32768;
  Diagnosis d = Diagnose(Scenario(m, 16, 32768, plan));
  const Remedy *p2p = nullptr, *less = nullptr;
  for (const Remedy& r : d.remedies) {
    if (r.plan_changes.contains("cp_comm")) p2p = &r;
    if (r.plan_changes.value("cp", 8) == 4) less = &r;
  }
  ASSERT_NE(p2p, nullptr);
  ASSERT_NE(less, nullptr);
  EXPECT_EQ(p2p->plan_changes, nlohmann::json({{"cp_comm", "p2p"}}));
  EXPECT_EQ(less->plan_changes, nlohmann::json({{"cp", 4}, {"dp", 2}}));
  EXPECT_EQ(p2p->status, RemedyStatus::kSimulated) << p2p->reason;
  // The overlapped ring hides most of what the gathers expose.
  EXPECT_GT(p2p->gain, Time::Zero());
}

TEST(Diagnose, JsonCarriesTheSplitAndTheRankedFindings) {
  config::PlanConfig plan;
  plan.tp = 2;
  plan.dp = 4;
  plan.sequence_parallel = true;
  plan.micro_batch = 1;
  plan.global_batch = 8;
  plan.recompute = config::Recompute::kFull;
  Diagnosis d = Diagnose(Scenario(GptModel(4, 2048, 16, 32000), 8, 2048, plan));
  nlohmann::json j = DiagnosisJson(d);
  double sum = j["ideal_step_s"].get<double>();
  ASSERT_EQ(j["layers"].size(), 5u);
  for (const auto& l : j["layers"]) sum += l["gap_s"].get<double>();
  EXPECT_NEAR(sum, j["step_s"].get<double>(), 1e-6);
  EXPECT_GT(j["layers"][4]["parts"]["recompute_s"].get<double>(), 0);
  EXPECT_NE(j["layers"][2]["parts"]["stragglers"].get<std::string>().find("--stragglers"), std::string::npos);
  ASSERT_FALSE(j["findings"].empty());
  for (const auto& f : j["findings"]) {
    for (const char* key : {"layer", "finding", "change", "plan_changes", "status"}) EXPECT_TRUE(f.contains(key)) << key;
  }
  EXPECT_FALSE(j["ops"].empty());
  EXPECT_TRUE(j["ops"][0].contains("roofline"));
}

}  // namespace
}  // namespace stacksim::diagnose
