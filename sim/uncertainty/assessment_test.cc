#include "sim/uncertainty/assessment.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

namespace stacksim::uncertainty {
namespace {

RunFeatures Hopper(int gpus, const std::string& parallelism = "tp+pp+zero1", const std::string& family = "tp/pp") {
  RunFeatures f;
  f.gpu = "h100-sxm-80gb";
  f.gpu_kind = "datasheet";
  f.gpu_class = "hopper";
  f.gpus = gpus;
  f.scale_band = ScaleBand(gpus);
  f.parallelism = parallelism;
  f.family = family;
  f.precision = "bf16";
  f.schedule = "interleaved";
  f.recompute = "selective";
  f.attention = "mha-gqa";
  f.offload = "none";
  f.seq_len = 2048;
  return f;
}

ErrorTable Table(const std::vector<std::pair<RunFeatures, double>>& runs) {
  ErrorTable t;
  int i = 0;
  for (const auto& [f, e] : runs) {
    ErrorTableRun r;
    r.id = "run" + std::to_string(i++);
    r.features = f;
    r.measured_s = 1.0;
    r.predicted_s = 1.0 + e;
    r.error = e;
    t.runs.push_back(r);
  }
  return t;
}

const std::vector<double> kErrors = {0.30, -0.30, -0.20, 0.50, -0.15, -0.10, -0.05, 0.00, 0.05, 0.10, 0.20};

bool Has(const std::vector<std::string>& warnings, const std::string& part) {
  return std::any_of(warnings.begin(), warnings.end(),
                     [&](const std::string& w) { return w.find(part) != std::string::npos; });
}

TEST(PredictiveQuantile, InterpolatesAtPositionQTimesNPlusOne) {
  // Sorted: -0.30 -0.20 -0.15 -0.10 -0.05 0 0.05 0.10 0.20 0.30 0.50 (n = 11).
  // p10 at position 1.2: -0.30 + 0.2 x 0.10; p90 at 10.8: 0.30 + 0.8 x 0.20.
  EXPECT_NEAR(PredictiveQuantile(kErrors, 0.10), -0.28, 1e-12);
  EXPECT_NEAR(PredictiveQuantile(kErrors, 0.90), 0.46, 1e-12);
  EXPECT_NEAR(PredictiveQuantile(kErrors, 0.50), 0.0, 1e-12);
}

TEST(PredictiveQuantile, ClampsToTheExtremesForFewValues) {
  EXPECT_EQ(PredictiveQuantile({0.3, -0.1, 0.2}, 0.10), -0.1);  // position 0.4 < 1
  EXPECT_EQ(PredictiveQuantile({0.3, -0.1, 0.2}, 0.90), 0.3);   // position 3.6 > 3
  EXPECT_EQ(PredictiveQuantile({0.25}, 0.5), 0.25);
}

TEST(StepRange, IsPredictedOverOnePlusTheErrorQuantiles) {
  std::vector<std::pair<RunFeatures, double>> runs;
  for (double e : kErrors) runs.push_back({Hopper(1024), e});
  runs.push_back({Hopper(16, "zero3", "sharded-dp"), 2.0});  // not similar: must not count
  ErrorTable t = Table(runs);
  auto r = EstimateStepRange(t, Hopper(2048), 10.0);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->n, 11);
  EXPECT_NEAR(r->error_low, -0.28, 1e-12);
  EXPECT_NEAR(r->error_high, 0.46, 1e-12);
  // The simulator ran 46% slow at worst (p90): the true step is 10 / 1.46.
  EXPECT_NEAR(r->low_s, 10.0 / 1.46, 1e-9);
  EXPECT_NEAR(r->high_s, 10.0 / 0.72, 1e-9);
  EXPECT_EQ(r->widened, "");
  EXPECT_EQ(r->basis, "p10-p90 of the errors of 11 validated hopper runs at 513-4096 GPUs with tp/pp");
}

TEST(StepRange, WidensToOtherScaleBandsAndSaysWhy) {
  std::vector<std::pair<RunFeatures, double>> runs;
  for (double e : {0.1, 0.2, 0.3, 0.4}) runs.push_back({Hopper(1024), e});  // 4 < 5 in the band
  for (double e : {-0.1, -0.2, -0.3}) runs.push_back({Hopper(128), e});
  auto r = EstimateStepRange(Table(runs), Hopper(2048), 10.0);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->n, 7);
  EXPECT_NE(r->widened.find("other scale bands"), std::string::npos) << r->widened;
  EXPECT_NE(r->widened.find("4 validated hopper runs at 513-4096 GPUs with tp/pp (fewer than 5)"), std::string::npos)
      << r->widened;
}

TEST(StepRange, WidensToAllGpusWhenTheClassHasNoRuns) {
  std::vector<std::pair<RunFeatures, double>> runs;
  for (double e : kErrors) runs.push_back({Hopper(1024), e});
  RunFeatures b200 = Hopper(1024);
  b200.gpu = "b200";
  b200.gpu_class = "blackwell";
  auto r = EstimateStepRange(Table(runs), b200, 10.0);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->n, 11);
  EXPECT_NE(r->widened.find("widened to all GPUs"), std::string::npos) << r->widened;
}

TEST(StepRange, LeaveOneOutDropsTheRunItself) {
  std::vector<std::pair<RunFeatures, double>> runs;
  for (double e : kErrors) runs.push_back({Hopper(1024), e});
  ErrorTable t = Table(runs);
  auto r = EstimateStepRange(t, Hopper(1024), 10.0, {}, "run3");  // the +50% run
  ASSERT_TRUE(r);
  EXPECT_EQ(r->n, 10);
  EXPECT_EQ(std::count(r->run_ids.begin(), r->run_ids.end(), "run3"), 0);
  EXPECT_LT(r->error_high, 0.46);
  EXPECT_FALSE(EstimateStepRange(ErrorTable{}, Hopper(1024), 10.0));
}

TEST(Coverage, ProfileKindsWarnUnlessMeasured) {
  ErrorTable t = Table({{Hopper(1024), 0.1}});
  RunFeatures f = Hopper(1024);
  EXPECT_TRUE(Has(CoverageWarnings(t, f), "no measured profile for h100-sxm-80gb"));
  f.gpu_kind = "projected";
  EXPECT_TRUE(Has(CoverageWarnings(t, f), "projected from another GPU"));
  f.gpu_kind = "measured";
  EXPECT_FALSE(Has(CoverageWarnings(t, f), "no measured profile"));
  EXPECT_FALSE(Has(CoverageWarnings(t, f), "projected"));
}

TEST(Coverage, GpusBeyondTheLargestValidatedRunWarn) {
  ErrorTable t = Table({{Hopper(1024), 0.1}, {Hopper(6144), 0.1}});
  EXPECT_FALSE(Has(CoverageWarnings(t, Hopper(4096)), "beyond the largest"));
  EXPECT_TRUE(Has(CoverageWarnings(t, Hopper(16384)), "16384 GPUs is beyond the largest validated run (6144 GPUs)"));
  RunFeatures a100 = Hopper(1024);
  a100.gpu = "a100-sxm-80gb";
  a100.gpu_class = "ampere";
  ErrorTable mixed = Table({{a100, 0.1}, {Hopper(6144), 0.1}});
  EXPECT_FALSE(Has(CoverageWarnings(mixed, Hopper(2048)), "beyond"));
  a100.gpus = 2048;
  EXPECT_TRUE(Has(CoverageWarnings(mixed, a100), "beyond the largest validated ampere run (1024 GPUs)"));
}

TEST(Coverage, GpuWithoutRunsWarns) {
  ErrorTable t = Table({{Hopper(1024), 0.1}});
  RunFeatures h200 = Hopper(1024);
  h200.gpu = "h200-sxm-141gb";
  EXPECT_TRUE(Has(CoverageWarnings(t, h200), "no validated runs on h200-sxm-141gb"));
  RunFeatures b200 = h200;
  b200.gpu = "b200";
  b200.gpu_class = "blackwell";
  EXPECT_TRUE(Has(CoverageWarnings(t, b200), "no validated runs on any blackwell-class GPU"));
}

TEST(Coverage, ParallelismNeverValidatedTogetherWarns) {
  ErrorTable t = Table({{Hopper(64, "tp+cp", "cp"), 0.1}, {Hopper(64, "pp+ep+moe", "moe"), 0.1}});
  auto w = CoverageWarnings(t, Hopper(64, "cp+ep+moe", "moe"));
  EXPECT_TRUE(Has(w, "cp>1 with ep>1 with moe were never validated together")) << ::testing::PrintToString(w);
  EXPECT_TRUE(Has(w, "only 1 validated run uses cp>1"));
  EXPECT_TRUE(Has(CoverageWarnings(t, Hopper(64, "tp+zero3", "tp/pp")), "zero3 was never validated"));
  EXPECT_FALSE(Has(CoverageWarnings(t, Hopper(64, "tp+cp", "cp")), "together"));
}

TEST(Coverage, PrecisionScheduleAndSequenceLengthOutsideValidationWarn) {
  ErrorTable t = Table({{Hopper(64), 0.1}});
  RunFeatures f = Hopper(64);
  f.precision = "fp8";
  f.schedule = "dualpipe";
  f.seq_len = 131072;
  auto w = CoverageWarnings(t, f);
  EXPECT_TRUE(Has(w, "precision fp8 was never validated"));
  EXPECT_TRUE(Has(w, "pipeline schedule dualpipe was never validated"));
  EXPECT_TRUE(Has(w, "sequence length 131072 is outside the validated 2048-2048"));
  EXPECT_FALSE(Has(CoverageWarnings(t, Hopper(64)), "never validated"));
}

// A plan family is the parallelism signature, the recomputation and, when
// pipelined, the schedule: a new family is flagged, and without pp the
// schedule is a name that changes nothing (no schedule warning, no family
// split).
TEST(PlanFamily, IsTheSignatureTheRecomputationAndThePipelineSchedule) {
  ErrorTable t = Table({{Hopper(1024), 0.1}, {Hopper(1024), 0.0}, {Hopper(64, "cp+zero1", "cp"), 0.1}});
  RunFeatures f = Hopper(1024);  // tp+pp+zero1 with interleaved (recompute selective)
  EXPECT_EQ(PlanFamilyName(f), "tp+pp+zero1 with interleaved (recompute selective)");
  EXPECT_EQ(PlanFamilyRuns(t, f), 2);
  EXPECT_EQ(PlanFamilyRuns(t, f, "run0"), 1);
  f.schedule = "dualpipe";
  EXPECT_EQ(PlanFamilyRuns(t, f), 0);
  Assessment a = Assess(t, f, 10.0);
  EXPECT_FALSE(a.plan_family_validated());
  EXPECT_TRUE(Has(a.warnings, "plan family tp+pp+zero1 with dualpipe (recompute selective) has no validated run"));
  // No validated run without recomputation: another family, and a warning.
  RunFeatures none = Hopper(1024);
  none.recompute = "none";
  EXPECT_EQ(PlanFamilyRuns(t, none), 0);
  a = Assess(t, none, 10.0);
  EXPECT_FALSE(a.plan_family_validated());
  EXPECT_TRUE(Has(a.warnings, "recompute none was never validated"));
  // Not pipelined: any schedule is the same family.
  RunFeatures cp = Hopper(64, "cp+zero1", "cp");
  cp.schedule = "zb-h1";
  EXPECT_EQ(PlanFamilyName(cp), "cp+zero1 (recompute selective)");
  EXPECT_EQ(PlanFamilyRuns(t, cp), 1);
  a = Assess(t, cp, 10.0);
  EXPECT_TRUE(a.plan_family_validated());
  EXPECT_FALSE(Has(a.warnings, "pipeline schedule"));
  EXPECT_FALSE(Has(a.warnings, "plan family"));
  // The assessment of a scenario is the assessment of its features.
  EXPECT_EQ(PlanFamilyJson(a)["validated_runs"], 1);
}

// The calibrated margin widens in log(1 + e), on each side. Errors -0.2
// -0.1 -0.1 0 0 0 0.1 0.1 0.3 (n = 9): p10 at position 1 is -0.2, p90 at 9
// is 0.3. A margin of log(1.1): 0.8 / 1.1 - 1 and 1.3 x 1.1 - 1 = 0.43, so a
// 10 s prediction reads 10 / 1.43 - 10 x 1.1 / 0.8 s.
TEST(StepRange, MarginWidensBothQuantilesInLogSpace) {
  std::vector<std::pair<RunFeatures, double>> runs;
  for (double e : {-0.2, -0.1, -0.1, 0.0, 0.0, 0.0, 0.1, 0.1, 0.3}) runs.push_back({Hopper(128), e});
  RangeOptions o;
  o.margin = std::log(1.1);
  auto r = EstimateStepRange(Table(runs), Hopper(128), 10.0, o);
  ASSERT_TRUE(r.has_value());
  EXPECT_NEAR(r->error_low, 0.8 / 1.1 - 1.0, 1e-12);
  EXPECT_NEAR(r->error_high, 0.43, 1e-12);
  EXPECT_NEAR(r->low_s, 10.0 / 1.43, 1e-9);
  EXPECT_NEAR(r->high_s, 10.0 * 1.1 / 0.8, 1e-9);
  EXPECT_NE(r->basis.find("widened by a factor 1.10 each way"), std::string::npos) << r->basis;
  // Without a margin, the quantiles as they are.
  auto plain = EstimateStepRange(Table(runs), Hopper(128), 10.0);
  EXPECT_NEAR(plain->error_low, -0.2, 1e-12);
  EXPECT_NEAR(plain->error_high, 0.3, 1e-12);
}

// Two sources of five runs with the same features, so each source's runs get
// the other's [min, max] (type 6 clamps p10/p90 at n = 5) widened by the
// margin m. A: -0.1 0 0 0 0.1; B: 0 0.05 0.15 0.25 0.5. With no margin, B's
// [0, 0.5] holds four of A's runs and A's [-0.1, 0.1] two of B's: 60%. B's
// 0.15 enters A's range when 1.1 e^m >= 1.15 (m >= 0.0445, grid 0.05), A's
// -0.1 enters B's when e^-m <= 0.9 (m >= 0.1054, grid 0.11): 8 of 10, the
// fitted margin. Refitted without A, B alone has no other source (no range
// at any margin: the grid's last, 1), and at m = 1 all of A falls inside B's
// [e^-1 - 1, 1.5 e - 1]; likewise all of B inside A's [0.9/e - 1, 1.1 e - 1]:
// 10 of 10.
TEST(RangeCalibration, FitsTheSmallestMarginThatHoldsEightyPercentOfLeftOutSources) {
  ErrorTable t;
  auto add = [&](const std::string& id, double e) {
    ErrorTableRun r;
    r.id = id;
    r.features = Hopper(128);
    r.measured_s = 1.0;
    r.predicted_s = 1.0 + e;
    r.error = e;
    t.runs.push_back(r);
  };
  int i = 0;
  for (double e : {-0.1, 0.0, 0.0, 0.0, 0.1}) add("a-" + std::to_string(i++), e);
  for (double e : {0.0, 0.05, 0.15, 0.25, 0.5}) add("b-" + std::to_string(i++), e);
  RangeCalibration c = CalibrateRangeMargin(t);
  EXPECT_EQ(c.runs, 10);
  EXPECT_NEAR(c.margin, 0.11, 1e-9);
  EXPECT_NEAR(c.coverage_pct, 80.0, 1e-9);
  EXPECT_NEAR(c.unwidened_pct, 60.0, 1e-9);
  EXPECT_NEAR(c.refit_coverage_pct, 100.0, 1e-9);
  // The table's options carry it; a run's range leaves its whole source out.
  t.calibration = c;
  RangeOptions o = OptionsFor(t);
  EXPECT_NEAR(o.margin, 0.11, 1e-9);
  o.exclude_source = true;
  auto r = EstimateStepRange(t, Hopper(128), 1.0, o, "a-0");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->n, 5);
  for (const auto& id : r->run_ids) EXPECT_EQ(RunSource(id), "b");
  EXPECT_EQ(RunSource("dgxc-gpt3-175b-bf16-128gpu"), "dgxc");
}

TEST(RangeCalibration, NeedsTwoSources) {
  ErrorTable t = Table({{Hopper(128), 0.0}, {Hopper(128), 0.1}});
  t.runs[0].id = "dgxc-a";  // both from source "dgxc"
  t.runs[1].id = "dgxc-b";
  EXPECT_THROW(CalibrateRangeMargin(t), std::invalid_argument);
}

}  // namespace
}  // namespace stacksim::uncertainty
