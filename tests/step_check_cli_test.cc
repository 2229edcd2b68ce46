// calibrate's step check from the command line (--check-only), and the
// harness's shape list (calibrate/fit/step_shapes.h) predicted in full with
// the shipped H200 profile: the prediction side runs in CI even though the
// measured side needs a GPU.
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "calibrate/fit/step_shapes.h"
#include "sim/stepcheck/step_check.h"
#include "sim/util/csv.h"
#include "tests/run_stacksim.h"

namespace stacksim {
namespace {

namespace fs = std::filesystem;
using testing::CmdResult;
using testing::Stacksim;

const std::string kRoot = STACKSIM_SOURCE_DIR;
const std::string kProfile = kRoot + "/profiles/h200-sxm-141gb.json";
const std::string kFixture = kRoot + "/tests/data/stepcheck/fixture-raw/step_measured.csv";

fs::path FreshDir(const std::string& name) {
  fs::path dir = fs::path(::testing::TempDir()) / ("step_check_cli_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

TEST(StepCheckCli, CheckOnlyWritesCsvAndReportSection) {
  fs::path dir = FreshDir("ok");
  fs::copy_file(kFixture, dir / "step_measured.csv");
  CmdResult r = Stacksim("calibrate --check-only " + kProfile + " --raw " + dir.string());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("step check: 4 shapes, mean |error| "), std::string::npos) << r.err;
  CsvTable csv = CsvTable::Read((dir / "step_check.csv").string());
  ASSERT_EQ(csv.rows(), 4u);
  EXPECT_EQ(csv.Text(3, "shape"), "mixtral-8x7b tp=1 seq=4096 mb=1");
  std::ifstream in(dir / "fit_report.md");
  std::stringstream report;
  report << in.rdbuf();
  EXPECT_EQ(report.str().rfind("## Step check\n", 0), 0u) << report.str();
  // The profile's own folder is the default when it holds the measurements.
  fs::copy_file(kProfile, dir / "profile.json");
  fs::remove(dir / "step_check.csv");
  CmdResult own = Stacksim("calibrate --check-only " + (dir / "profile.json").string());
  ASSERT_EQ(own.status, 0) << own.err;
  EXPECT_TRUE(fs::exists(dir / "step_check.csv"));
}

TEST(StepCheckCli, BadInputNamesFileAndFieldAndExitsTwo) {
  fs::path dir = FreshDir("bad");
  std::ifstream in(kFixture);
  std::stringstream text;
  text << in.rdbuf();
  std::string broken = text.str();
  broken.replace(broken.find(",0.012,"), 7, ",fast,");
  std::ofstream(dir / "step_measured.csv") << broken;
  CmdResult r = Stacksim("calibrate --check-only " + kProfile + " --raw " + dir.string());
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find((dir / "step_measured.csv").string()), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("measured_s"), std::string::npos) << r.err;
  CmdResult missing = Stacksim("calibrate --check-only " + kProfile + " --raw " + FreshDir("empty").string());
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.err.find("step_measured.csv"), std::string::npos) << missing.err;
  EXPECT_EQ(Stacksim("calibrate --check-only").status, 2);
  CmdResult help = Stacksim("calibrate --help");
  EXPECT_NE(help.out.find("stacksim calibrate --check-only PROFILE [--raw DIR]"), std::string::npos) << help.out;
  EXPECT_EQ(Stacksim("calibrate --check-only " + kProfile + " --quick").status, 2);
}

// `stacksim calibrate --out P` runs the harness, then the step check on what
// it wrote. A stand-in harness (a script that writes the fixture's
// measurements and a profile, as the real one would) beside a copy of
// stacksim exercises that path without a GPU.
TEST(StepCheckCli, CalibrateRunsTheStepCheckAfterTheHarness) {
  fs::path dir = FreshDir("fake_harness");
  fs::copy_file(STACKSIM_BINARY, dir / "stacksim");
  fs::permissions(dir / "stacksim", fs::perms::owner_all);
  std::ofstream(dir / "stacksim-calibrate") << "#!/bin/sh\n"
                                               "# stand-in: --out P writes P and P.raw/step_measured.csv\n"
                                               "while [ $# -gt 0 ]; do [ \"$1\" = --out ] && out=$2; shift; done\n"
                                               "mkdir -p \"$out.raw\" && cp "
                                            << kFixture << " \"$out.raw/\" && cp " << kProfile
                                            << " \"$out\" && echo '# Fit report' > \"$out.raw/fit_report.md\"\n"
                                               "exit 1\n";
  fs::permissions(dir / "stacksim-calibrate", fs::perms::owner_all);
  std::string out = (dir / "p.json").string();
  std::string cmd = (dir / "stacksim").string() + " calibrate --quick --out " + out + " 2>&1";
  const CmdResult run = testing::Shell(cmd);
  const std::string& text = run.out;
  ASSERT_NE(run.status, -1) << text;
  EXPECT_EQ(run.status, 1) << text;  // the harness's own status passes through
  EXPECT_NE(text.find("step check: 4 shapes"), std::string::npos) << text;
  EXPECT_EQ(CsvTable::Read(out + ".raw/step_check.csv").rows(), 4u);
  std::ifstream in(out + ".raw/fit_report.md");
  std::stringstream report;
  report << in.rdbuf();
  EXPECT_EQ(report.str().rfind("# Fit report\n\n## Step check\n", 0), 0u) << report.str();
}

// Every shape the harness times, predicted through the same path as a real
// run (a step_measured.csv with the harness's columns): the widths must match
// the model files, and the predictions must order as the work does.
TEST(StepCheckCli, EveryHarnessShapeIsPredictedFromItsModelFile) {
  const auto& shapes = calibrate::StepShapes();
  ASSERT_EQ(shapes.size(), 17u);
  std::string csv = CsvLine({"shape", "model", "tp", "seq", "micro_batch", "hidden", "ffn", "heads", "kv_heads",
                             "head_dim", "experts", "top_k", "expert_ffn", "measured_s", "min_s", "spread", "stable"});
  auto n = [](int64_t v) { return std::to_string(v); };
  for (const auto& s : shapes) {
    csv += CsvLine({s.Name(), s.model, n(s.tp), n(s.seq), n(s.micro_batch), n(s.hidden), n(s.ffn), n(s.heads),
                    n(s.kv_heads), n(s.head_dim), n(s.experts), n(s.top_k), n(s.expert_ffn), "1", "1", "0", "1"});
  }
  std::string path = (FreshDir("shapes") / "step_measured.csv").string();
  std::ofstream(path) << csv;
  auto measured = stepcheck::ReadStepMeasurements(path);
  auto rows = stepcheck::RunStepCheck(measured, path, config::LoadProfileFile(kProfile), kRoot + "/models");
  ASSERT_EQ(rows.size(), shapes.size());
  std::map<std::string, double> predicted, passes;
  for (const auto& r : rows) {
    predicted[r.shape] = r.predicted_s;
    passes[r.shape] = (r.prediction.forward + r.prediction.backward).seconds();
  }
  for (const auto& s : shapes) {
    EXPECT_GT(predicted[s.Name()], 0) << s.Name();
    if (s.tp > 1) {
      calibrate::StepShape wider = s;
      wider.tp = s.tp / 2;
      EXPECT_LT(predicted[s.Name()], predicted[wider.Name()]) << s.Name();
    }
    if (s.seq == 8192) {
      calibrate::StepShape shorter = s;
      shorter.seq = 2048;
      // 4x the tokens: the linear layers' work 4x, causal attention's 16x
      // (the optimizer's, over the same parameters, not at all); but at 2K
      // our attention backward fills fewer SMs (16 blocks at Llama 3 8B TP 8:
      // measured 3.74x there on the H200, 2026-12-04).
      EXPECT_GT(passes[s.Name()], 3.5 * passes[shorter.Name()]) << s.Name();
    }
  }
  EXPECT_EQ(shapes.back().TokensPerExpert(), 4096 * 2 / 8);
}

// tools/gpu/step_check_torch.py times the same layers in PyTorch; its list
// must be the harness's.
TEST(StepCheckCli, TorchCrossCheckListsTheHarnessShapes) {
  std::string cmd = "python3 " + kRoot + "/tools/gpu/step_check_torch.py --list-shapes 2>&1";
  const CmdResult run = testing::Shell(cmd);
  const std::string& out = run.out;
  if (run.status == 127) GTEST_SKIP() << "no python3 on this machine";
  ASSERT_EQ(run.status, 0) << out;
  std::string expected;
  for (const auto& s : calibrate::StepShapes()) expected += s.Name() + "\n";
  EXPECT_EQ(out, expected);
}

}  // namespace
}  // namespace stacksim
