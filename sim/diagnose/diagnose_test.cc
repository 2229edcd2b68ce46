#include "sim/diagnose/diagnose.h"

#include <gtest/gtest.h>

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
  return !d.remedies.empty() && d.remedies[0].status == "simulated" ? &d.remedies[0] : nullptr;
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
  EXPECT_GT(d.layer_gap[3], Time::Zero());
  const Remedy* top = Top(d);
  ASSERT_NE(top, nullptr);
  EXPECT_EQ(top->layer, 4);
  EXPECT_EQ(top->plan_changes, nlohmann::json({{"kernels", "fused"}}));
  EXPECT_GT(top->gain, Time::Zero());
  // The predicted step is what simulating the changed plan gives.
  config::ScenarioConfig fused = d.result.scenario;
  fused.plan.kernels = config::KernelFusion::kFused;
  EXPECT_EQ(top->predicted, simulate::Simulate(fused).iteration);
  // Nothing communicates and nothing recomputes.
  EXPECT_EQ(d.layer_gap[4], Time::Zero());
  for (const Remedy& r : d.remedies) EXPECT_NE(r.layer, 5) << r.change;
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
  int largest = 0;
  for (int l = 0; l < 5; ++l) {
    if (d.layer_gap[l] > d.layer_gap[largest]) largest = l;
  }
  EXPECT_EQ(largest, 1) << "parallelization";
  // The pipeline's idle: the bubble proper, and the last stage's wait for
  // stage 0 at the tied-embedding all-reduce (the drain of the pipeline).
  const auto& parts = d.layer_parts[1];
  double pipeline = parts["bubble_s"].get<double>() + parts["cross_stage_wait_s"].get<double>();
  for (const auto& [key, v] : parts.items()) {
    if (v.is_number()) {
      EXPECT_LE(v.get<double>(), pipeline) << key;
    }
  }
  EXPECT_GT(parts["cross_stage_wait_s"].get<double>(), 0);
  EXPECT_GT(pipeline, 0.3 * d.step.seconds());  // (p-1)/(m+p-1) = 7/15 of a 1F1B pipeline, less the comm
  const Remedy* top = Top(d);
  ASSERT_NE(top, nullptr);
  EXPECT_EQ(top->layer, 2);
  EXPECT_TRUE(top->plan_changes.contains("schedule") || top->plan_changes.contains("vp")) << top->plan_changes;
  EXPECT_GT(top->gain, d.step * 0.1);
  // Remedies together are kept only when they beat the best one alone.
  if (!d.combined.status.empty()) {
    EXPECT_EQ(d.combined.status, "simulated");
    EXPECT_LT(d.combined.predicted, top->predicted);
  }
  // Ranked by gain.
  for (size_t i = 1; i < d.remedies.size(); ++i) {
    if (d.remedies[i].status != "simulated") break;
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
  EXPECT_EQ(d.step_class, "communication-bound");
  bool pcie = false;
  for (const auto& line : d.layer_findings[4]) pcie |= line.find("binding link: PCIe") != std::string::npos;
  EXPECT_TRUE(pcie);
  const Remedy* top = Top(d);
  ASSERT_NE(top, nullptr);
  EXPECT_EQ(top->layer, 2);
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
      EXPECT_EQ(r.status, "invalid");
      EXPECT_FALSE(r.reason.empty());
      invalid = true;
    }
  }
  EXPECT_TRUE(invalid);
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
  EXPECT_EQ(j["layers"][2]["parts"]["stragglers"], "not modelled");
  ASSERT_FALSE(j["findings"].empty());
  for (const auto& f : j["findings"]) {
    for (const char* key : {"layer", "finding", "change", "plan_changes", "status"}) EXPECT_TRUE(f.contains(key)) << key;
  }
  EXPECT_FALSE(j["ops"].empty());
  EXPECT_TRUE(j["ops"][0].contains("roofline"));
}

}  // namespace
}  // namespace stacksim::diagnose
