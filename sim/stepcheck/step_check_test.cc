#include "sim/stepcheck/step_check.h"

#include <cmath>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "sim/config/plan.h"
#include "sim/cost/profile_cost_model.h"
#include "sim/util/csv.h"
#include "sim/workload/layer_ops.h"
#include "sim/workload/layer_shape.h"
#include "tests/input_error.h"

namespace stacksim::stepcheck {
namespace {

namespace fs = std::filesystem;
using testing::ErrorFrom;

const std::string kRoot = STACKSIM_SOURCE_DIR;
const std::string kFixture = kRoot + "/tests/data/stepcheck/fixture-raw/step_measured.csv";

config::ProfileConfig H200() { return config::LoadProfileFile(kRoot + "/profiles/h200-sxm-141gb.json"); }
config::ModelConfig Model(const std::string& name) { return config::LoadModelFile(kRoot + "/models/" + name + ".json"); }

std::string WriteTemp(const std::string& name, const std::string& text) {
  std::string path = ::testing::TempDir() + "step_check_" + name;
  std::ofstream(path) << text;
  return path;
}

std::string FixtureText() {
  std::ifstream in(kFixture);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(StepCheck, ForwardIsNoFasterThanItsFlopsAtPeakAndBackwardCostsMore) {
  const config::ProfileConfig profile = H200();
  const config::ModelConfig model = Model("llama3-8b");
  LayerStepPrediction p = PredictLayerStep(model, 1, 2048, 1, profile);
  // 2 x tokens x the layer's matmul parameters (norms aside), at bf16 peak.
  const double matmul_params = static_cast<double>(model.LayerParameterCount() - 2 * model.hidden_size);
  const double peak = profile.peak_flops[static_cast<int>(config::Precision::kBf16)]->value.value;
  EXPECT_GT(p.forward.seconds(), 2.0 * 2048 * matmul_params / peak);
  EXPECT_GT(p.backward.seconds(), 1.8 * p.forward.seconds());
  EXPECT_LT(p.backward.seconds(), 3.0 * p.forward.seconds());
  EXPECT_EQ(p.parameters, static_cast<double>(model.LayerParameterCount()));
  EXPECT_EQ(p.left_out_ops, 0);  // tp 1: no collectives
  EXPECT_GT(p.priced_ops, 10);
}

TEST(StepCheck, OptimizerStreamsThirtyEightBytesPerParameterAtCopyBandwidth) {
  const config::ProfileConfig profile = H200();
  LayerStepPrediction p = PredictLayerStep(Model("llama3-70b"), 2, 2048, 1, profile);
  cost::ProfileCostModel cost(profile, false);
  const double expected = p.parameters * 38.0 / cost.memory_bandwidth().value;
  EXPECT_NEAR(p.optimizer.seconds(), expected, 0.01 * expected);
  EXPECT_EQ(p.parameters, static_cast<double>(Model("llama3-70b").LayerParameterCount() / 2));
}

TEST(StepCheck, TensorParallelSliceIsCheaperAndLeavesItsCollectivesOut) {
  const config::ProfileConfig profile = H200();
  const config::ModelConfig model = Model("llama3-70b");
  LayerStepPrediction tp1 = PredictLayerStep(model, 1, 8192, 1, profile);
  LayerStepPrediction tp8 = PredictLayerStep(model, 8, 8192, 1, profile);
  // Measured on the H200 (2026-12-04): 16.96 ms against 90.83 ms, 1/5.4: more
  // than 1/8, since the attention backward's grid thins with the K/V heads.
  EXPECT_LT(tp8.total().seconds(), tp1.total().seconds() / 4);
  EXPECT_GT(tp8.total().seconds(), tp1.total().seconds() / 8);
  EXPECT_GT(tp8.left_out_ops, 0);
}

TEST(StepCheck, MoeLayerPricesEveryExpertOnOneGpu) {
  const config::ModelConfig model = Model("mixtral-8x7b");
  LayerStepPrediction p = PredictLayerStep(model, 1, 4096, 1, H200());
  EXPECT_EQ(p.parameters, static_cast<double>(model.LayerParameterCount(0)));
  EXPECT_GT(p.parameters, 8.0 * 3 * 4096 * 14336);
  // Each token runs top_k = 2 experts: at least twice a dense 14336-wide MLP's FLOPs.
  LayerStepPrediction dense = PredictLayerStep(Model("llama3-8b"), 1, 4096, 1, H200());
  EXPECT_GT(p.forward.seconds(), 1.5 * dense.forward.seconds());
}

TEST(StepCheck, FixtureJoinsWithThePredictionAndErrorIsRelativeToMeasured) {
  std::vector<StepMeasurement> m = ReadStepMeasurements(kFixture);
  ASSERT_EQ(m.size(), 4u);
  EXPECT_EQ(m[1].shape, "llama3-8b tp=8 seq=8192 mb=1");
  EXPECT_EQ(m[1].tp, 8);
  EXPECT_EQ(m[1].seq, 8192);
  EXPECT_DOUBLE_EQ(m[1].measured_s, 0.009);
  EXPECT_EQ(m[3].experts, 8);
  EXPECT_FALSE(m[3].stable);
  EXPECT_EQ(m[0].line, 3);  // after the comment and the header
  EXPECT_DOUBLE_EQ(m[0].backward_s, 0.0066);
  const config::ProfileConfig profile = H200();
  std::vector<StepCheckRow> rows = RunStepCheck(m, kFixture, profile, kRoot + "/models");
  ASSERT_EQ(rows.size(), 4u);
  for (size_t i = 0; i < rows.size(); ++i) {
    const StepMeasurement& in = m[i];
    double predicted = PredictLayerStep(Model(in.model), in.tp, in.seq, in.micro_batch, profile).total().seconds();
    EXPECT_DOUBLE_EQ(rows[i].predicted_s, predicted) << in.shape;
    EXPECT_NEAR(rows[i].error_pct, 100.0 * (predicted - in.measured_s) / in.measured_s, 1e-9) << in.shape;
  }
  CsvTable csv = CsvTable::Parse(StepCheckCsv(rows), "step_check.csv");
  EXPECT_EQ(csv.header(), (std::vector<std::string>{"shape", "measured_s", "predicted_s", "error_pct"}));
  ASSERT_EQ(csv.rows(), 4u);
  EXPECT_EQ(csv.Text(2, "shape"), "llama3-70b tp=4 seq=2048 mb=1");
  EXPECT_NEAR(csv.Number(2, "measured_s"), 0.02, 1e-9);
  EXPECT_NEAR(csv.Number(2, "predicted_s"), rows[2].predicted_s, 1e-6 * rows[2].predicted_s);
  EXPECT_NEAR(csv.Number(2, "error_pct"), rows[2].error_pct, 0.006);
  std::string section = StepCheckSection(rows, "the H200 profile");
  EXPECT_NE(section.find("| llama3-8b tp=1 seq=2048 mb=1 | 12.000 | "), std::string::npos) << section;
  EXPECT_NE(section.find(" | 3.500 / 6.600 / 1.900 | "), std::string::npos) << section;
  EXPECT_NE(section.find("mixtral-8x7b tp=1 seq=4096 mb=1 (unstable)"), std::string::npos) << section;
}

StepCheckRow Row(const std::string& shape, double measured, double error_pct, bool stable = true) {
  StepCheckRow r;
  r.shape = shape;
  r.measured_s = measured;
  r.error_pct = error_pct;
  r.predicted_s = measured * (1 + error_pct / 100);
  r.stable = stable;
  return r;
}

TEST(StepCheck, SectionGivesMeanAbsoluteErrorAndNamesShapesAboveTarget) {
  std::string s = StepCheckSection({Row("a", 0.01, 2.0), Row("b", 0.02, -7.0), Row("c", 0.03, 12.0, false)}, "P");
  EXPECT_EQ(s.rfind("## Step check\n", 0), 0u);
  EXPECT_NE(s.find("Mean |error| over 3 shapes: 7.0%."), std::string::npos) << s;
  EXPECT_NE(s.find("Above 5%: b (-7.0%); c (+12.0%)."), std::string::npos) << s;
  EXPECT_NE(s.find("| b | 20.000 | 18.600 |"), std::string::npos) << s;
  EXPECT_NE(s.find("Unstable timings (spread above the threshold after retries): c."), std::string::npos) << s;
  std::string ok = StepCheckSection({Row("a", 0.01, 4.9)}, "P");
  EXPECT_NE(ok.find("Every shape is within 5% of its prediction."), std::string::npos) << ok;
}

// The sweep's own forward GEMMs beside the measured forward: summed from
// gemm.csv's bf16 rows of the layer's labels at its tokens, only when all four are there.
TEST(StepCheck, SweepForwardGemmsSumTheLayersFourGemms) {
  StepMeasurement m;
  m.model = "llama3-70b";
  m.tp = 2;
  m.seq = 2048;
  std::vector<StepMeasurement> measured = {m, m};
  measured[1].tp = 4;
  std::vector<StepCheckRow> rows = {Row("tp2", 0.013, 5.0), Row("tp4", 0.008, 5.0)};
  rows[0].measured_forward_s = rows[1].measured_forward_s = 0.002;
  auto sample = [](const std::string& label, int64_t m, double us, const char* dtype = "bf16") {
    calibrate::GemmSample g;
    g.dtype = dtype;
    g.label = label;
    g.m = m;
    g.median_us = us;
    return g;
  };
  std::vector<calibrate::GemmSample> gemm = {
      sample("llama3-70b/tp2/qkv/fwd", 2048, 300), sample("llama3-70b/tp2/proj/fwd", 2048, 200),
      sample("llama3-70b/tp2/fc1/fwd", 2048, 1300), sample("llama3-70b/tp2/fc2/fwd", 2048, 700),
      sample("llama3-70b/tp2/fc2/fwd", 8192, 9999),         // other tokens
      sample("llama3-70b/tp2/qkv/fwd", 2048, 9, "fp8_e4m3"),  // other precision
      sample("llama3-70b/tp4/qkv/fwd", 2048, 150)};         // tp 4 lacks three
  AddSweepForwardGemms(gemm, measured, &rows);
  EXPECT_NEAR(rows[0].sweep_forward_gemms_s, 2.5e-3, 1e-12);
  EXPECT_LT(rows[1].sweep_forward_gemms_s, 0);
  std::string s = StepCheckSection(rows, "P");
  EXPECT_NE(s.find("| tp2 | 2.500 | 2.000 | 1.25 |"), std::string::npos) << s;
  EXPECT_EQ(s.find("| tp4 | 0.150"), std::string::npos) << s;
}

// step_torch.csv's eager and compiled times land on their shapes and in a
// table of their own; a bad mode names the file, the column and the line.
TEST(StepCheck, TorchStepsStandBesideTheHarnesss) {
  const std::string path = ::testing::TempDir() + "step_torch.csv";
  std::ofstream(path) << "shape,mode,measured_s,min_s\n"
                         "a,eager,0.009,0.008\n"
                         "a,compile,0.0075,0.007\n"
                         "other,eager,1,1\n";
  std::vector<StepCheckRow> rows = {Row("a", 0.007, 1.0), Row("b", 0.002, 1.0)};
  AddTorchSteps(path, &rows);
  EXPECT_DOUBLE_EQ(rows[0].torch_eager_s, 0.009);
  EXPECT_DOUBLE_EQ(rows[0].torch_compile_s, 0.0075);
  EXPECT_LT(rows[1].torch_eager_s, 0);
  std::string s = StepCheckSection(rows, "P");
  EXPECT_NE(s.find("| a | 7.000 | 9.000 | 7.500 |"), std::string::npos) << s;
  EXPECT_NE(s.find("| b | 2.000 | - | - |"), std::string::npos) << s;
  EXPECT_EQ(StepCheckSection({Row("a", 0.007, 1.0)}, "P").find("PyTorch"), std::string::npos);
  std::ofstream(path) << "shape,mode,measured_s\na,jit,0.009\n";
  try {
    AddTorchSteps(path, &rows);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("mode"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("line 2"), std::string::npos) << e.what();
  }
}

TEST(StepCheck, SectionReplacesItselfAndKeepsTheRest) {
  const std::string report = "# Fit\n\n## GEMM\n\ntext\n\n## Step check\n\nold\n\n## Partial profile\n\nend\n";
  std::string once = WithStepCheckSection(report, "## Step check\n\nnew\n\n");
  EXPECT_EQ(once, "# Fit\n\n## GEMM\n\ntext\n\n## Step check\n\nnew\n\n## Partial profile\n\nend\n");
  EXPECT_EQ(WithStepCheckSection(once, "## Step check\n\nnew\n\n"), once);
  EXPECT_EQ(WithStepCheckSection("# Fit\n\n## GEMM\nx\n", "## Step check\n\nnew\n\n"),
            "# Fit\n\n## GEMM\nx\n\n## Step check\n\nnew\n\n");
  EXPECT_EQ(WithStepCheckSection("", "## Step check\n"), "## Step check\n");
}

// The fixture with one cell of one row changed (row 1: the first data row).
std::string FixtureWith(const std::string& column, const std::string& value) {
  CsvTable t = CsvTable::Parse(FixtureText(), "fixture", CsvOptions{true});
  std::string out = CsvLine(t.header());
  for (size_t r = 0; r < t.rows(); ++r) {
    std::vector<std::string> cells;
    for (const std::string& c : t.header()) cells.push_back(r == 0 && c == column ? value : t.Text(r, c));
    out += CsvLine(cells);
  }
  return out;
}

TEST(StepCheck, BadMeasurementsNameFileColumnAndLine) {
  struct Case {
    std::string column, value, key, text;
  } cases[] = {
      {"measured_s", "-1", "measured_s", "line 2"},
      {"stable", "2", "stable", "must be 0 or 1"},
      {"tp", "3", "heads", "does not divide by tp 3"},
      {"min_s", "1", "min_s", "above measured_s"},
      {"shape", "llama3-8b tp=8 seq=8192 mb=1", "shape", "given twice"},
      {"ffn", "1.5", "ffn", "not a whole number"},
      {"model", "../x", "model", "not a model name"},
  };
  for (const Case& c : cases) {
    std::string path = WriteTemp(c.column + ".csv", FixtureWith(c.column, c.value));
    InputError e = ErrorFrom([&] { ReadStepMeasurements(path); });
    EXPECT_EQ(e.file(), path) << c.column;
    EXPECT_EQ(e.key_path(), c.key) << c.column;
    EXPECT_NE(std::string(e.what()).find(c.text), std::string::npos) << e.what();
  }
  std::string no_column = WriteTemp("no_column.csv", "shape,model\nx,llama3-8b\n");
  EXPECT_EQ(ErrorFrom([&] { ReadStepMeasurements(no_column); }).file(), no_column);
  std::string header_only = WriteTemp("header_only.csv", FixtureText().substr(0, FixtureText().find("llama3-8b tp=1")));
  EXPECT_NE(std::string(ErrorFrom([&] { ReadStepMeasurements(header_only); }).what()).find("no measured shapes"),
            std::string::npos);
}

TEST(StepCheck, ShapesThatDisagreeWithTheModelFileAreRejected) {
  const config::ProfileConfig profile = H200();
  std::string drift = WriteTemp("drift.csv", FixtureWith("hidden", "4097"));
  auto m = ReadStepMeasurements(drift);
  InputError e = ErrorFrom([&] { RunStepCheck(m, drift, profile, kRoot + "/models"); });
  EXPECT_EQ(e.file(), drift);
  EXPECT_EQ(e.key_path(), "hidden");
  EXPECT_NE(std::string(e.what()).find("built 4097 but"), std::string::npos) << e.what();
  std::string unknown = WriteTemp("unknown.csv", FixtureWith("model", "no-such-model"));
  auto u = ReadStepMeasurements(unknown);
  EXPECT_EQ(ErrorFrom([&] { RunStepCheck(u, unknown, profile, kRoot + "/models"); }).key_path(), "model");
}

TEST(StepCheck, PricedOpsAreTotalledByKernelClass) {
  const LayerStepPrediction p = PredictLayerStep(Model("llama3-8b"), 8, 2048, 1, H200());
  double sum = 0;
  for (double v : p.by_class.seconds) sum += v;
  EXPECT_NEAR(sum, p.total().seconds(), 1e-12);
  KernelTotals t = p.by_class;
  EXPECT_GT(t.SecondsOf(KernelClass::kGemm), 0);
  EXPECT_GT(t.SecondsOf(KernelClass::kAttentionBackward), t.SecondsOf(KernelClass::kAttentionForward));
  EXPECT_DOUBLE_EQ(t.SecondsOf(KernelClass::kOptimizer), p.optimizer.seconds());
  EXPECT_EQ(t.KernelsOf(KernelClass::kAttentionForward), 1);
  EXPECT_GE(t.KernelsOf(KernelClass::kGemm), 12);  // four GEMMs, each with its two backward GEMMs
}

TEST(StepCheck, KernelsAreClassedByTheNamesTheHarnessRecords) {
  // Names as CUPTI recorded them on the H200 (2026-12-04).
  EXPECT_EQ(ClassifyStepKernel("forward", "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"), KernelClass::kGemm);
  EXPECT_EQ(ClassifyStepKernel("forward", "_ZN8stacksim7kernels45_GLOBAL__N__bb22463f_12_attention_cu_f9abd12813AttnFwdKernelILi128EE"),
            KernelClass::kAttentionForward);
  EXPECT_EQ(ClassifyStepKernel("backward", "_ZN8stacksim7kernels45_GLOBAL__N__bb22463f_12_attention_cu_f9abd12823AttnBwdPreprocessKern"),
            KernelClass::kAttentionBackward);
  EXPECT_EQ(ClassifyStepKernel("backward", "_ZN8stacksim9calibrate48_GLOBAL__N__0d8121fa_15_step_kernels_cu_0c07f66721RmsNormBackwardK"),
            KernelClass::kMemoryBound);
  EXPECT_EQ(ClassifyStepKernel("optimizer", "_ZN8stacksim9calibrate_AdamKernel"), KernelClass::kOptimizer);
}

TEST(StepCheck, RecordedKernelsStandBesideThePricedOps) {
  const std::string path = ::testing::TempDir() + "step_kernels.csv";
  std::ofstream(path) << "shape,part,index,kernel,start_us,duration_us\n"
                         "a,forward,0,nvjet_gemm,0,100\n"
                         "a,forward,1,stacksim_AttnFwdKernel,101,50\n"
                         "a,backward,0,stacksim_RmsNormBackward,0,20\n"
                         "a,optimizer,0,stacksim_Adam,0,30\n"
                         "other,forward,0,nvjet_gemm,0,5\n";
  std::vector<StepCheckRow> rows = {Row("a", 0.0002, 1.0), Row("b", 0.002, 1.0)};
  rows[0].prediction.by_class.SecondsOf(KernelClass::kGemm) = 110e-6;
  rows[0].prediction.by_class.KernelsOf(KernelClass::kGemm) = 1;
  AddStepKernels(ReadStepKernels(path), &rows);
  ASSERT_TRUE(rows[0].has_kernels);
  EXPECT_FALSE(rows[1].has_kernels);
  EXPECT_NEAR(rows[0].measured_kernels.SecondsOf(KernelClass::kGemm), 100e-6, 1e-12);
  EXPECT_EQ(rows[0].measured_kernels.KernelsOf(KernelClass::kMemoryBound), 1);
  std::string s = StepCheckSection(rows, "P");
  // GEMM 0.100 measured, 0.110 predicted (+10%); 4 kernels recorded, 1 priced;
  // the step's 0.200 ms less the kernels' 0.200 ms leaves nothing between them.
  EXPECT_NE(s.find("| a | 0.100 / 0.110 (+10%) | 0.050 / 0.000 (-100%) |"), std::string::npos) << s;
  EXPECT_NE(s.find("| 4 / 1 | 0.000 |"), std::string::npos) << s;
  EXPECT_NE(s.find("By class over the shapes (prediction's error, mean and range): GEMM +10% (+10% to +10%, 1 "
                   "shape); attention fwd -100% (-100% to -100%, 1 shape)"),
            std::string::npos)
      << s;
  EXPECT_EQ(s.find("| b |", s.find("between kernels")), std::string::npos) << s;
  EXPECT_EQ(s.find("predicted minus recorded"), std::string::npos) << s;  // within target: nothing to explain
  // Above target: the shape's miss by class, largest first.
  rows[0].error_pct = 10.0;
  rows[0].predicted_s = 0.00022;
  s = StepCheckSection(rows, "P");
  EXPECT_NE(s.find("- a (+10.0%, +0.020 ms), predicted minus recorded: attention fwd -0.050 ms (-100%), "
                   "optimizer -0.030 ms (-100%), memory-bound -0.020 ms (-100%), GEMM +0.010 ms (+10%), "
                   "between kernels +0.000 ms"),
            std::string::npos)
      << s;
  std::ofstream(path) << "shape,part,index,kernel,start_us,duration_us\na,sideways,0,k,0,1\n";
  try {
    ReadStepKernels(path);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("part"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("line 2"), std::string::npos) << e.what();
  }
  std::ofstream(path) << "shape,part,index,kernel,start_us,duration_us\na,forward,0,k,0,-1\n";
  EXPECT_NE(std::string(ErrorFrom([&] { ReadStepKernels(path); }).what()).find("duration_us"), std::string::npos);
}

// The shipped measurement (soaked steps with their CUPTI kernels): the check
// reproduces the folder's step_check.csv against the shipped profile, and
// every shape's kernels join.
TEST(StepCheck, ShippedMeasurementReproducesItsStepCheck) {
  // The newest recording; its step_check.csv is the shipped profile's check of it.
  const fs::path shipped = fs::path(kRoot) / "profiles/measured/h200-sxm-141gb-2026-12-04c-power/step_check";
  fs::path dir = fs::path(::testing::TempDir()) / "step_check_shipped";
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const char* f : {"step_measured.csv", "step_kernels.csv"}) fs::copy_file(shipped / f, dir / f);
  auto rows = CheckRawFolder(dir.string(), kRoot + "/profiles/h200-sxm-141gb.json", kRoot + "/models");
  CsvTable expected = CsvTable::Read((shipped / "step_check.csv").string());
  ASSERT_EQ(rows.size(), expected.rows());
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].shape, expected.Text(i, "shape"));
    EXPECT_NEAR(rows[i].error_pct, expected.Number(i, "error_pct"), 0.01) << rows[i].shape;
    EXPECT_TRUE(rows[i].has_kernels) << rows[i].shape;
  }
}

TEST(StepCheck, RawFolderGetsCsvAndReportSection) {
  fs::path dir = fs::path(::testing::TempDir()) / "step_check_raw";
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy_file(kFixture, dir / "step_measured.csv");
  std::ofstream(dir / "fit_report.md") << "# Fit report\n\n## GEMM\n\nrows\n";
  auto rows = CheckRawFolder(dir.string(), kRoot + "/profiles/h200-sxm-141gb.json", kRoot + "/models");
  EXPECT_EQ(rows.size(), 4u);
  EXPECT_EQ(CsvTable::Read((dir / "step_check.csv").string()).rows(), 4u);
  std::ifstream in(dir / "fit_report.md");
  std::stringstream report;
  report << in.rdbuf();
  EXPECT_EQ(report.str().rfind("# Fit report\n\n## GEMM\n\nrows\n\n## Step check\n", 0), 0u) << report.str();
  fs::remove(dir / "step_measured.csv");
  EXPECT_NE(std::string(ErrorFrom([&] {
              CheckRawFolder(dir.string(), kRoot + "/profiles/h200-sxm-141gb.json", kRoot + "/models");
            }).what()).find("no step measurements"),
            std::string::npos);
}

}  // namespace
}  // namespace stacksim::stepcheck
