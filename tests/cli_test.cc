// Scenario tests: run the stacksim command as a user would and check its
// structured output (JSON numbers, exit status, error text naming file and key).
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/run_stacksim.h"

namespace {

using stacksim::testing::CmdResult;
using stacksim::testing::Stacksim;

const std::string kRoot = STACKSIM_SOURCE_DIR;
const std::string kFlagship = kRoot + "/scenarios/gpt3-175b-1024xh100.json";

std::string WriteTemp(const std::string& name, const std::string& text) {
  std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

TEST(Cli, FlagshipJsonHasTheContractKeysAndConsistentNumbers) {
  CmdResult r = Stacksim("simulate " + kFlagship + " --format json");
  ASSERT_EQ(r.status, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  double it = j.at("iteration_s").get<double>();
  EXPECT_GT(it, 1.0);
  EXPECT_LT(it, 60.0);
  // tokens/s = global batch x seq / step time
  EXPECT_NEAR(j.at("tokens_per_s").get<double>(), 1536.0 * 2048 / it, 1.0);
  EXPECT_GT(j.at("mfu").get<double>(), 0.2);
  EXPECT_LT(j.at("mfu").get<double>(), 0.8);
  EXPECT_EQ(j.at("memory_peak_bytes").size(), 8u);
  const auto& b = j.at("breakdown");
  double sum = b.at("gemm_s").get<double>() + b.at("attention_s").get<double>() + b.at("memory_bound_s").get<double>() +
               b.at("optimizer_s").get<double>() + b.at("tp_exposed_s").get<double>() +
               b.at("dp_exposed_s").get<double>() + b.at("pp_exposed_s").get<double>() +
               b.at("bubble_s").get<double>() + b.at("other_s").get<double>();
  EXPECT_NEAR(sum, it, 1e-6 * it);
}

TEST(Cli, SameInputGivesTheSameOutput) {
  CmdResult a = Stacksim("simulate " + kFlagship + " --format json");
  CmdResult b = Stacksim("simulate " + kFlagship + " --format json");
  auto ja = nlohmann::json::parse(a.out), jb = nlohmann::json::parse(b.out);
  ja.erase("wall_s");
  jb.erase("wall_s");
  EXPECT_EQ(ja, jb);
}

// A profile with a power block (sim/cost/power_state.h): the 500 W H100 runs
// the flagship's step at a lower clock than the 700 W one, slower, and says so.
TEST(Cli, PowerLimitedProfileSlowsTheStepAndSaysWhy) {
  CmdResult full = Stacksim("simulate " + kFlagship);
  CmdResult limited = Stacksim("simulate " + kFlagship + " --profile " + kRoot + "/profiles/h100-sxm-96gb.json");
  ASSERT_EQ(full.status, 0) << full.err;
  ASSERT_EQ(limited.status, 0) << limited.err;
  EXPECT_EQ(full.out.find("power:"), std::string::npos);
  EXPECT_NE(limited.out.find("power: the step's compute draws about 500 W"), std::string::npos) << limited.out;
  EXPECT_NE(limited.out.find("board limit 500 W, which binds"), std::string::npos) << limited.out;
  CmdResult fj = Stacksim("simulate " + kFlagship + " --format json");
  CmdResult lj = Stacksim("simulate " + kFlagship + " --profile " + kRoot + "/profiles/h100-sxm-96gb.json --format json");
  const auto f = nlohmann::json::parse(fj.out), l = nlohmann::json::parse(lj.out);
  EXPECT_GT(l.at("iteration_s").get<double>(), f.at("iteration_s").get<double>());
}

TEST(Cli, SetOverridesThePlan) {
  CmdResult r = Stacksim("simulate " + kFlagship + " --format json --set plan.tp=4 --set plan.pp=16 --set plan.vp=1 "
                   "--set plan.schedule=1f1b");
  ASSERT_EQ(r.status, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("plan").at("tp").get<int>(), 4);
  EXPECT_EQ(j.at("plan").at("pp").get<int>(), 16);
  EXPECT_EQ(j.at("memory_peak_bytes").size(), 16u);
}

TEST(Cli, TraceIsChromeTraceJson) {
  std::string path = ::testing::TempDir() + "step_trace.json";
  CmdResult r = Stacksim("simulate " + kRoot + "/scenarios/llama3-8b-8xh100.json --trace " + path);
  ASSERT_EQ(r.status, 0) << r.err;
  std::ifstream in(path);
  auto j = nlohmann::json::parse(in);
  ASSERT_TRUE(j.contains("traceEvents"));
  int complete = 0;
  for (const auto& e : j["traceEvents"]) complete += e.at("ph") == "X";
  EXPECT_GT(complete, 100);
}

TEST(Cli, ImpossiblePlanIsAnInputErrorNamingTheKey) {
  CmdResult r = Stacksim("simulate " + kFlagship + " --set plan.tp=16 --set plan.dp=8");  // TP beyond the NVLink domain
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("plan.tp"), std::string::npos) << r.err;
}

TEST(Cli, MalformedScenarioNamesTheFileAndLine) {
  std::string path = WriteTemp("broken.json", "{\n  \"name\": \"x\",\n  \"model\": \n}\n");
  CmdResult r = Stacksim("simulate " + path);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find(path), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("line 4"), std::string::npos) << r.err;
}

TEST(Cli, UnknownModelIsAnInputError) {
  CmdResult r = Stacksim("simulate " + kFlagship + " --set model=no-such-model");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("no-such-model"), std::string::npos) << r.err;
}

TEST(Cli, MissingFileAndBadFlagsExitWithStatusTwo) {
  EXPECT_EQ(Stacksim("simulate /nonexistent/scenario.json").status, 2);
  EXPECT_EQ(Stacksim("simulate " + kFlagship + " --format xml").status, 2);
  EXPECT_EQ(Stacksim("frobnicate").status, 2);
}

TEST(Cli, OutOfMemoryPlanIsReportedNotSimulated) {
  // GPT-3 175B on 8 GPUs, one stage: weights and optimizer state alone exceed 80 GB.
  CmdResult r = Stacksim("simulate " + kFlagship +
                   " --format json --set gpus=8 --set plan.tp=8 --set plan.pp=1 --set plan.dp=1 --set plan.vp=1"
                   " --set plan.schedule=1f1b --set plan.sharding=none --set training.global_batch=8");
  ASSERT_EQ(r.status, 3) << r.err;  // out of memory: an answer (printed), told apart by its status
  auto j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j.at("out_of_memory").get<bool>());
  EXPECT_GT(j.at("memory_peak_bytes")[0].get<double>(), 80e9);
}

}  // namespace

namespace {

TEST(Cli, CalibrateWithoutAGpuSaysSoInOneLineAndExitsTwo) {
  // Either the harness was not built (no CUDA) or it finds no GPU: both say so.
  CmdResult r = Stacksim("calibrate --quick --out " + ::testing::TempDir() + "local.json");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("nothing measured"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST(Cli, ProjectedProfileRunsAndSaysItIsProjected) {
  std::string out = ::testing::TempDir() + "h100-from-h200.json";
  CmdResult p = Stacksim("project-profile " + kRoot + "/profiles/h200-sxm-141gb.json --to h100-sxm-80gb --out " + out);
  ASSERT_EQ(p.status, 0) << p.err;
  CmdResult r = Stacksim("simulate " + kFlagship + " --format json --profile " + out);
  ASSERT_EQ(r.status, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("profile").at("kind"), "projected");
  CmdResult text = Stacksim("simulate " + kFlagship + " --profile " + out);
  EXPECT_NE(text.out.find("projected:"), std::string::npos);
  CmdResult datasheet = Stacksim("simulate " + kFlagship);
  EXPECT_NE(datasheet.out.find("datasheet-derived"), std::string::npos);
}

// project-profile states the error to expect: the measured profile's step
// check on its own GPU (here the recorded fixture, made-up times), or that
// none was measured; a --step-check folder without measurements is an input
// error naming the file.
TEST(Cli, ProjectedProfileStatesTheStepChecksError) {
  const std::string measured = kRoot + "/profiles/h200-sxm-141gb.json";
  const std::string out = ::testing::TempDir() + "h100-from-h200-checked.json";
  CmdResult none = Stacksim("project-profile " + measured + " --to h100-sxm-80gb --out " + out);
  ASSERT_EQ(none.status, 0) << none.err;
  EXPECT_NE(none.err.find("Expected error: unknown"), std::string::npos) << none.err;
  CmdResult checked = Stacksim("project-profile " + measured + " --to h100-sxm-80gb --out " + out +
                               " --step-check " + kRoot + "/tests/data/stepcheck/fixture-raw");
  ASSERT_EQ(checked.status, 0) << checked.err;
  const std::string provenance = nlohmann::json::parse(std::ifstream(out)).at("provenance").get<std::string>();
  EXPECT_NE(provenance.find("the step check on"), std::string::npos) << provenance;
  EXPECT_NE(provenance.find("layer steps with mean |error|"), std::string::npos) << provenance;
  EXPECT_NE(provenance.find("lower bound"), std::string::npos) << provenance;
  CmdResult empty = Stacksim("project-profile " + measured + " --to h100-sxm-80gb --out " + out + " --step-check " +
                             ::testing::TempDir());
  EXPECT_EQ(empty.status, 2);
  EXPECT_NE(empty.err.find("step_measured.csv"), std::string::npos) << empty.err;
}

TEST(Cli, ProjectingADatasheetProfileIsAnInputError) {
  CmdResult p = Stacksim("project-profile " + kRoot + "/profiles/h100-sxm-80gb.json --to a100-sxm-80gb --out " +
                         ::testing::TempDir() + "x.json");
  EXPECT_EQ(p.status, 2);
  EXPECT_NE(p.err.find("kind"), std::string::npos) << p.err;
}

}  // namespace

namespace {

double ExposedDp(const std::string& extra) {
  CmdResult r = Stacksim("simulate " + kRoot + "/scenarios/contention-dp-allreduce-2to1.json --format json " + extra);
  EXPECT_EQ(r.status, 0) << r.err;
  return nlohmann::json::parse(r.out).at("breakdown").at("dp_exposed_s").get<double>();
}

// Contention scenario (a): the data-parallel all-reduce crosses 2:1
// oversubscribed leaf uplinks; its exposed time should nearly double.
TEST(Cli, OversubscribedLeafNearlyDoublesTheDataParallelAllReduce) {
  double blocking = ExposedDp("");
  double nonblocking = ExposedDp("--set topology=dgx-h100");
  EXPECT_GT(blocking / nonblocking, 1.7);
  EXPECT_LT(blocking / nonblocking, 2.1);
}

}  // namespace
