#include "sim/report/text_report.h"

#include "sim/report/json_report.h"

#include <algorithm>
#include <string>

#include <gtest/gtest.h>

namespace stacksim::report {
namespace {

Bytes GiBytes(double g) { return Bytes{g * kGiB}; }

// A 10 s step whose GEMMs take exactly half of it.
simulate::SimulationResult TenSecondStep() {
  simulate::SimulationResult r;
  r.scenario.name = "test scenario";
  r.scenario.model.name = "tiny-gpt";
  r.scenario.topology.name = "dgx-h100";
  r.scenario.topology.gpus_per_node = 8;
  r.scenario.profile.name = "h100-sxm-80gb";
  r.scenario.profile.gpu = "NVIDIA H100 SXM5 80GB";
  r.scenario.profile.kind = config::ProfileKind::kDatasheet;
  r.scenario.gpus = 16;
  r.scenario.seq_len = 2048;
  r.scenario.plan.tp = 4;
  r.scenario.plan.pp = 2;
  r.scenario.plan.dp = 2;
  r.scenario.plan.global_batch = 64;
  r.network_model = "analytic";
  r.notes = {"selective recomputation assumed"};
  r.algorithms = {"all-reduce tp: ring"};
  r.capacity = GiBytes(80);
  for (int stage = 0; stage < 2; ++stage) {
    simulate::StageMemory m;
    m.stage = stage;
    m.weights = GiBytes(10);
    m.gradients = GiBytes(20);
    m.optimizer = GiBytes(15);
    m.activations = GiBytes(stage == 0 ? 20 : 10);
    m.other = GiBytes(2.5);
    r.memory.push_back(m);
  }
  r.iteration = Time::FromSeconds(10);
  r.tokens_per_s = 13107.2;
  r.tokens_per_s_per_gpu = 819.2;
  r.mfu = 0.4123;
  r.hfu = 0.5;
  r.model_tflops_per_gpu = 407.8;
  simulate::Breakdown& b = r.breakdown;
  b.gemm = Time::FromSeconds(5);
  b.attention = Time::FromSeconds(1);
  b.memory_bound = Time::FromSeconds(1);
  b.optimizer = Time::FromSeconds(0.5);
  b.tp_exposed = Time::FromSeconds(0.5);
  b.dp_exposed = Time::FromSeconds(0.25);
  b.pp_exposed = Time::FromSeconds(0.25);
  b.bubble = Time::FromSeconds(1.25);
  b.other = Time::FromSeconds(0.25);
  r.breakdown_stage = 1;
  r.per_stage = {b, b};
  r.tasks = 123456;
  r.simulated_ranks = 2;
  r.wall_seconds = 0.5;
  return r;
}

bool Contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The breakdown row of `part`, or "" if there is none.
std::string Row(const std::string& text, const std::string& part) {
  size_t at = text.find("  " + part + " ");
  if (at == std::string::npos) return "";
  return text.substr(at, text.find('\n', at) - at);
}

TEST(TextReport, ShowsStepTimeAndPercentOfStep) {
  std::string text = TextReport(TenSecondStep());
  EXPECT_TRUE(Contains(text, "step time           10.000 s")) << text;
  EXPECT_TRUE(Contains(Row(text, "GEMM"), " 5.000 s  50.0%")) << text;
  EXPECT_TRUE(Contains(Row(text, "GEMM"), std::string(15, '#'))) << text;
  EXPECT_FALSE(Contains(Row(text, "GEMM"), std::string(16, '#'))) << text;
  EXPECT_TRUE(Contains(Row(text, "pipeline bubble"), " 1.250 s  12.5%")) << text;
  EXPECT_TRUE(Contains(Row(text, "exposed DP comm"), "2.5%")) << text;
  EXPECT_TRUE(Contains(text, "MFU / HFU           41.2% / 50.0%")) << text;
  EXPECT_TRUE(Contains(text, "13,107 tokens/s")) << text;
  EXPECT_TRUE(Contains(text, "time breakdown (stage 1")) << text;
  EXPECT_FALSE(Contains(text, "OUT OF MEMORY")) << text;
}

TEST(TextReport, ShortStepsKeepFourSignificantDigits) {
  simulate::SimulationResult r = TenSecondStep();
  r.iteration = Time::Ms(40);
  r.breakdown = {};
  r.breakdown.gemm = Time::Ms(30);
  r.breakdown.bubble = Time::Ms(10);
  std::string text = TextReport(r);
  EXPECT_TRUE(Contains(text, "step time           0.04000 s")) << text;
  EXPECT_TRUE(Contains(Row(text, "GEMM"), " 0.03000 s  75.0%")) << text;
  EXPECT_TRUE(Contains(Row(text, "pipeline bubble"), " 0.01000 s  25.0%")) << text;
}

TEST(TextReport, DescribesScenarioPlanAndProvenance) {
  std::string text = TextReport(TenSecondStep());
  EXPECT_TRUE(Contains(text, "test scenario")) << text;
  EXPECT_TRUE(Contains(text, "16 x NVIDIA H100 SXM5 80GB on dgx-h100, 2 nodes")) << text;
  EXPECT_TRUE(Contains(text, "TP 4 PP 2 DP 2 VP 1")) << text;
  EXPECT_TRUE(Contains(text, "(32 micro-batches/step)")) << text;
  EXPECT_TRUE(Contains(text, "numbers are datasheet-derived")) << text;
  EXPECT_TRUE(Contains(text, "network   analytic")) << text;
  EXPECT_TRUE(Contains(text, "note: selective recomputation assumed\n")) << text;
  EXPECT_TRUE(Contains(text, "all-reduce tp: ring")) << text;
  EXPECT_TRUE(Contains(text, "123,456 tasks")) << text;

  simulate::SimulationResult measured = TenSecondStep();
  measured.scenario.profile.kind = config::ProfileKind::kMeasured;
  measured.scenario.profile.provenance = "H200, driver 570, 2025-01-02";
  EXPECT_TRUE(Contains(TextReport(measured), "measured: H200, driver 570, 2025-01-02"));
}

TEST(TextReport, MemoryTableInGiBWithHeadroom) {
  std::string text = TextReport(TenSecondStep());
  // stage 0: 10 + 20 + 15 + 20 + 2.5 = 67.5 GiB of 80, 12.5 left.
  EXPECT_TRUE(Contains(text, "    0     10.0    20.0      15.0        20.0    2.5    67.5     80.0     12.5\n"))
      << text;
  EXPECT_TRUE(Contains(text, "    1     10.0    20.0      15.0        10.0    2.5    57.5     80.0     22.5\n"))
      << text;
}

TEST(TextReport, ManyStagesShowFirstFullestAndLast) {
  simulate::SimulationResult r = TenSecondStep();
  r.memory.clear();
  for (int stage = 0; stage < 16; ++stage) {
    simulate::StageMemory m;
    m.stage = stage;
    m.activations = GiBytes(stage == 9 ? 50 : 10);
    r.memory.push_back(m);
  }
  std::string text = TextReport(r);
  EXPECT_TRUE(Contains(text, "\n    2 ")) << text;
  EXPECT_FALSE(Contains(text, "\n    3 ")) << text;
  EXPECT_TRUE(Contains(text, "\n    9 ")) << text;
  EXPECT_TRUE(Contains(text, "\n   15 ")) << text;
  EXPECT_TRUE(Contains(text, "\n  ...\n")) << text;
}

TEST(TextReport, OutOfMemorySaysWhyAndSkipsBreakdown) {
  simulate::SimulationResult r = TenSecondStep();
  r.out_of_memory = true;
  r.memory[0].activations = GiBytes(70);  // 117.5 GiB
  r.iteration = Time::Zero();
  r.breakdown = {};
  std::string text = TextReport(r);
  EXPECT_TRUE(Contains(text, "OUT OF MEMORY: stage 0 needs 117.5 GiB of 80.0 GiB per GPU")) << text;
  EXPECT_TRUE(Contains(text, "-37.5  over")) << text;
  EXPECT_FALSE(Contains(text, "time breakdown")) << text;
  EXPECT_FALSE(Contains(text, "step time")) << text;
}

TEST(TextReport, UncertaintyGoesUnderTheStepTimeAndAfterTheReport) {
  uncertainty::Assessment trust;
  trust.range = uncertainty::StepRange{};
  trust.range->predicted_s = 10;
  trust.range->low_s = 9;
  trust.range->high_s = 12;
  trust.range->low_quantile = 0.1;
  trust.range->high_quantile = 0.9;
  trust.range->n = 7;
  trust.range->basis = "p10-p90 of 7 runs";
  trust.warnings = {"no validated run had FP8"};
  std::string text = TextReport(TenSecondStep(), trust);
  EXPECT_TRUE(Contains(text, "step time           10.000 s\nlikely              ")) << text;
  EXPECT_TRUE(Contains(text, "of 7 similar validated runs; see uncertainty)\nthroughput")) << text;
  EXPECT_TRUE(Contains(text, " s\n\nuncertainty\n  step 10.0")) << text;  // after "simulated ... in 0.50 s"
  EXPECT_TRUE(text.size() > 30 && Contains(text.substr(text.size() - 30), "no validated run had FP8\n")) << text;
  // Without the assessment, neither.
  std::string plain = TextReport(TenSecondStep());
  EXPECT_FALSE(Contains(plain, "likely")) << plain;
  EXPECT_FALSE(Contains(plain, "uncertainty")) << plain;
}

TEST(TextReport, FlagshipSizedReportStaysShort) {
  simulate::SimulationResult r = TenSecondStep();
  r.memory.resize(8, r.memory[0]);
  r.algorithms.assign(12, "all-gather dp: ring");
  std::string text = TextReport(r);
  size_t lines = std::count(text.begin(), text.end(), '\n');
  EXPECT_LE(lines, 50u) << text;
  EXPECT_TRUE(Contains(text, "... and 4 more")) << text;
}

}  // namespace
}  // namespace stacksim::report

namespace stacksim::report {
namespace {

TEST(TextReport, ListsContentionBottlenecksOfAFlowLevelNetwork) {
  simulate::SimulationResult r;
  r.scenario.name = "x";
  r.network_model = "simgrid";
  r.iteration = Time::FromSeconds(1);
  r.bottlenecks = {"leaf 3 rail 2 -> spine uplink: 12.0 GB, busy 0.25 s, 0.12 s lost"};
  std::string text = TextReport(r);
  EXPECT_NE(text.find("contention (simgrid network"), std::string::npos) << text;
  EXPECT_NE(text.find("leaf 3 rail 2 -> spine uplink"), std::string::npos) << text;
  EXPECT_EQ(JsonReport(r).at("bottlenecks").size(), 1u);
}

}  // namespace
}  // namespace stacksim::report

namespace stacksim::report {
namespace {

TEST(TextReport, PlanLineNamesContextAndExpertParallelismWhenUsed) {
  simulate::SimulationResult r = TenSecondStep();
  std::string plain = TextReport(r);
  EXPECT_NE(plain.find("TP 4 PP 2 DP 2 VP 1"), std::string::npos);
  r.scenario.plan.cp = 2;
  r.scenario.plan.cp_comm = config::CpComm::kAllGather;
  r.scenario.plan.ep = 4;
  std::string both = TextReport(r);
  EXPECT_NE(both.find("TP 4 PP 2 DP 2 CP 2 (all-gather) EP 4 VP 1"), std::string::npos) << both;
  EXPECT_EQ(both.find("all-to-alls overlapped"), std::string::npos);
  r.scenario.plan.moe_a2a_overlap = true;
  const std::string overlapped = TextReport(r);
  EXPECT_NE(overlapped.find("with the all-to-alls overlapped"), std::string::npos) << overlapped;
}

// The TP overlap shows where it is not the Megatron family's default.
TEST(TextReport, PlanLineNamesTheTpOverlapWhenNotTheDefault) {
  simulate::SimulationResult r = TenSecondStep();
  r.scenario.plan.tp_comm_overlap = config::TpCommOverlap::kBackward;
  EXPECT_EQ(TextReport(r).find("TP collectives"), std::string::npos);
  r.scenario.plan.tp_comm_overlap = config::TpCommOverlap::kGemm;
  EXPECT_NE(TextReport(r).find("SP off, TP collectives pipelined with their GEMMs (userbuffers)"), std::string::npos)
      << TextReport(r);
  r.scenario.plan.tp_comm_overlap = config::TpCommOverlap::kNone;
  EXPECT_NE(TextReport(r).find("TP collectives blocking"), std::string::npos);
  r.scenario.plan.tp = 1;
  EXPECT_EQ(TextReport(r).find("TP collectives"), std::string::npos);
  r.scenario.plan.recompute = config::Recompute::kFull;
  r.scenario.plan.recompute_layers = 2;
  EXPECT_NE(TextReport(r).find("recompute full (the first 2 layers of each model chunk)"), std::string::npos);
}

}  // namespace
}  // namespace stacksim::report
