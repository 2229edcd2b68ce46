// What a new user hit (issue 18), each checked as a class through the
// command as a user runs it: exit status 2 with the file or flag and the key
// for every mistake, no silent non-result, progress for long work, the
// build's version. docs/errors.md.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/run_stacksim.h"

namespace {

using stacksim::testing::CmdResult;
using stacksim::testing::Stacksim;

const std::string kRoot = STACKSIM_SOURCE_DIR;
const std::string kSmall = kRoot + "/scenarios/llama3-8b-8xh100.json";
const std::string kServe = kRoot + "/scenarios/serve-llama3-70b-8xh100.json";

std::string WriteTemp(const std::string& name, const std::string& text) {
  std::string path = ::testing::TempDir() + "cli_inputs_" + name;
  std::ofstream(path) << text;
  return path;
}

nlohmann::json ReadJson(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

bool Has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A user's mistake: status 2, a message naming where, no "internal error".
void ExpectInputError(const CmdResult& r, const std::string& where) {
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_FALSE(Has(r.err, "internal error")) << r.err;
  EXPECT_TRUE(Has(r.err, where)) << "expected '" << where << "' in: " << r.err;
}

TEST(CliInputs, DeepNestingInAFreeTextFieldIsAnErrorNotACrash) {
  nlohmann::json s = ReadJson(kSmall);
  s.erase("notes");
  std::string text = s.dump();
  text.pop_back();
  text += R"(, "notes": )" + std::string(300000, '[') + std::string(300000, ']') + "}";
  const std::string path = WriteTemp("deep.json", text);
  CmdResult r = Stacksim("simulate " + path);
  ExpectInputError(r, path + ": notes[0]");
  EXPECT_TRUE(Has(r.err, "nested deeper than 128 levels")) << r.err;
}

TEST(CliInputs, AKeyGivenTwiceIsAnErrorAtItsPath) {
  std::string text = ReadJson(kSmall).dump();
  const size_t plan = text.find("\"plan\":{");
  ASSERT_NE(plan, std::string::npos);
  text.insert(plan + 8, "\"tp\":2,");
  const std::string path = WriteTemp("dup.json", text);
  ExpectInputError(Stacksim("simulate " + path), path + ": plan.tp: key given twice");
}

TEST(CliInputs, ADirectoryWhereAFileIsExpectedIsNamed) {
  const std::string dir = kRoot + "/scenarios";
  ExpectInputError(Stacksim("simulate " + dir), dir + ": is a directory");
  ExpectInputError(Stacksim("simulate " + kSmall + " --profile " + kRoot + "/profiles"), "is a directory");
  ExpectInputError(Stacksim("validate " + dir + " --quiet"), "is a directory");
  ExpectInputError(Stacksim("replay " + dir), "is a directory");
}

TEST(CliInputs, Fp8OnAGpuWithoutItIsAnInputErrorInEveryCommand) {
  const std::string fp8_on_a100 = "--set plan.precision=fp8 --profile " + kRoot + "/profiles/a100-sxm-80gb.json";
  ExpectInputError(Stacksim("simulate " + kSmall + " " + fp8_on_a100), "plan.precision");
  ExpectInputError(Stacksim("search " + kSmall + " " + fp8_on_a100), "plan.precision");
  CmdResult compare = Stacksim("compare --model llama3-8b --tokens 1T --cluster dgx-a100:8 --precision fp8");
  EXPECT_NE(compare.status, 1) << compare.err;
  EXPECT_FALSE(Has(compare.err, "internal error")) << compare.err;
  EXPECT_TRUE(Has(compare.out + compare.err, "fp8")) << compare.out << compare.err;
}

TEST(CliInputs, AnUnknownRunIdIsAnErrorNotZeroOfZero) {
  CmdResult r = Stacksim("validate " + kRoot + "/validation/training_runs.json --run no-such-run --quiet");
  ExpectInputError(r, "--run: no run has the id 'no-such-run'");
  ExpectInputError(Stacksim("serve-validate " + kRoot + "/validation/serving_runs.json --run no-such-run"),
                   "--run: no entry has the id 'no-such-run'");
}

// A benchmark client's result file replaces the scenario's workload and
// its measurements sit beside the predictions; it cannot be mixed with the
// workload flags.
TEST(CliInputs, ServeReplaysABenchmarkResultAndComparesWithIt) {
  const std::string result = kRoot + "/tests/data/serve/vllm_result.json";
  CmdResult r = Stacksim("serve " + kServe + " --requests-from " + result);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("measured by the benchmark client (5 requests (1 failed, left out)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("mean_ttft_ms"), std::string::npos) << r.out;
  CmdResult j = Stacksim("serve " + kServe + " --requests-from " + result + " --format json");
  ASSERT_EQ(j.status, 0) << j.err;
  const auto doc = nlohmann::json::parse(j.out);
  EXPECT_EQ(doc.at("benchmark").at("failed"), 1);
  EXPECT_GE(doc.at("benchmark").at("compared").size(), 10u);
  ExpectInputError(Stacksim("serve " + kServe + " --requests-from " + result + " --rate 3"), "--requests-from");
  ExpectInputError(Stacksim("serve " + kServe + " --requests-from " + kRoot + "/README.md"), "README.md");
}

TEST(CliInputs, NumericFlagsAreCheckedAlikeEverywhere) {
  ExpectInputError(Stacksim("run-campaign " + kSmall + " --tokens 1T --seed -1"), "--seed: '-1' is not a seed");
  ExpectInputError(Stacksim("serve " + kServe + " --seed -1"), "--seed");
  ExpectInputError(Stacksim("simulate " + kSmall + " --stragglers 1%:2x --seed -5"), "--seed");
  CmdResult usd = Stacksim("search " + kSmall + " --gpu-hour-usd -1");
  ExpectInputError(usd, "--gpu-hour-usd: '-1' is not a number > 0");
  EXPECT_LT(usd.err.size(), 200u) << "no 309-digit bound: " << usd.err;
  ExpectInputError(Stacksim("run-campaign " + kSmall + " --tokens 1T --trials 10000000"), "--trials");
  ExpectInputError(Stacksim("simulate " + kSmall + " --stragglers 1%:2x --straggler-steps 1000000"),
                   "--straggler-steps");
  ExpectInputError(Stacksim("replay " + kRoot + "/tests/data/kineto/h200-gpt-small-step.json.gz --params -5"),
                   "--params");
}

TEST(CliInputs, WhatIfsBeyondTheTopologyAreRefusedAtOnce) {
  ExpectInputError(Stacksim("search " + kSmall + " --gpus 8..1000000"), "--gpus: '8..1000000' goes up to");
  ExpectInputError(Stacksim("search " + kSmall + " --gpus 8..16384"), "GPU counts");
  ExpectInputError(Stacksim("replay " + kRoot + "/tests/data/kineto/h200-gpt-small-step.json.gz --topology " +
                            "dgx-h100 --dp 100000"),
                   "--dp: 100000 ranks need 12500 nodes");
}

TEST(CliInputs, HardwareThatDoesNotGoTogetherIsSaid) {
  // A PCIe L40S priced over an NVSwitch: an error.
  ExpectInputError(Stacksim("simulate " + kSmall + " --profile " + kRoot + "/profiles/l40s.json"), "profile: profile 'l40s' was measured");
  // An H200's NVLS all-reduce on a DGX A100's older NVSwitch: a note.
  CmdResult r = Stacksim("simulate " + kRoot + "/scenarios/llama3-70b-64xa100.json --profile " + kRoot + "/profiles/h200-sxm-141gb.json "
                         "--format json");
  ASSERT_EQ(r.status, 0) << r.err;
  bool noted = false;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  for (const auto& n : j.at("notes")) noted |= Has(n.get<std::string>(), "NVLS");
  EXPECT_TRUE(noted) << r.out;
}

TEST(CliInputs, ServeSearchSaysWhyNoConfigurationIsValid) {
  CmdResult r = Stacksim("serve-search " + kServe + " --slo ttft_p99=2s --tp 3");
  ExpectInputError(r, "--tp: no replica shape");
  EXPECT_TRUE(Has(r.err, "attention heads")) << r.err;
}

TEST(CliInputs, ServingWorkloadsThatCannotBeDrawnOrScheduledAreErrors) {
  nlohmann::json s = ReadJson(kServe);
  s["workload"]["prompt_tokens"]["max"] = 500;  // median 1000
  ExpectInputError(Stacksim("serve " + WriteTemp("serve-max.json", s.dump())),
                   "workload.prompt_tokens.max: max 500 is below the median 1000");
  s = ReadJson(kServe);
  s["scheduler"]["max_batched_tokens"] = 2048;  // prompts up to 6000, continuous
  ExpectInputError(Stacksim("serve " + WriteTemp("serve-budget.json", s.dump())),
                   "scheduler.max_batched_tokens: max_batched_tokens 2048 is below the longest prompt");
  s["scheduler"]["kind"] = "chunked-prefill";  // splits prompts: fine
  EXPECT_EQ(Stacksim("serve " + WriteTemp("serve-chunked.json", s.dump()) + " --requests 20").status, 0);
}

TEST(CliInputs, VpOneOnAnInterleavedScenarioSaysWhichScheduleToSet) {
  CmdResult r = Stacksim("simulate " + kRoot + "/scenarios/gpt3-175b-1024xh100.json --set plan.tp=4 "
                         "--set plan.pp=16 --set plan.vp=1");
  ExpectInputError(r, "plan.schedule=1f1b");
  EXPECT_EQ(Stacksim("simulate " + kRoot + "/scenarios/gpt3-175b-1024xh100.json --set plan.tp=4 --set plan.pp=16 "
                     "--set plan.vp=1 --set plan.schedule=1f1b --format json")
                .status,
            0);
}

// Every README simulate example that reads only shipped files runs as the
// README gives it (those writing files, or reading a profile calibrate
// writes, are run by their own tests).
TEST(CliInputs, TheReadmesSimulateExamplesRunAsWritten) {
  std::ifstream readme(kRoot + "/README.md");
  std::string line;
  int ran = 0;
  while (std::getline(readme, line)) {
    if (line.rfind("build/stacksim simulate ", 0) != 0) continue;
    std::string command = line.substr(0, line.find('#'));
    if (Has(command, "--chakra") || Has(command, "--trace") || Has(command, "profiles/local")) continue;
    std::string args = command.substr(std::string("build/stacksim ").size());
    args = std::regex_replace(args, std::regex(" (scenarios|profiles)/"), " " + kRoot + "/$1/");
    CmdResult r = Stacksim(args);
    EXPECT_EQ(r.status, 0) << command << "\n" << r.err;
    ++ran;
  }
  EXPECT_GE(ran, 8);
}

// The README's MoE example, run as the README gives it: it fits in memory and
// the skewed router slows the step against uniform routing.
TEST(CliInputs, TheReadmesZipfExampleShowsASkewedRouterSlowingTheStep) {
  std::ifstream readme(kRoot + "/README.md");
  std::string line, command;
  while (std::getline(readme, line)) {
    if (Has(line, "moe_routing=zipf")) command = line.substr(0, line.find('#'));
  }
  ASSERT_EQ(command.rfind("build/stacksim simulate ", 0), 0u) << command;
  // The README runs from the checkout: its relative scenario path, from here.
  const std::string args = std::regex_replace(command.substr(std::string("build/stacksim ").size()),
                                              std::regex(" scenarios/"), " " + kRoot + "/scenarios/");
  CmdResult zipf = Stacksim(args + " --format json");
  ASSERT_EQ(zipf.status, 0) << zipf.err;
  const nlohmann::json z = nlohmann::json::parse(zipf.out);
  EXPECT_FALSE(z.at("out_of_memory").get<bool>());
  EXPECT_GT(z.at("moe").at("load_factor").get<double>(), 1.5);
  std::string uniform_args = args;
  uniform_args.erase(uniform_args.find("--set plan.moe_routing=zipf"), std::string("--set plan.moe_routing=zipf").size());
  CmdResult uniform = Stacksim(uniform_args + " --format json");
  ASSERT_EQ(uniform.status, 0) << uniform.err;
  EXPECT_GT(z.at("iteration_s").get<double>(),
            1.5 * nlohmann::json::parse(uniform.out).at("iteration_s").get<double>());
}

TEST(CliInputs, VersionIsPrintedAndInEveryJsonReport) {
  CmdResult v = Stacksim("--version");
  ASSERT_EQ(v.status, 0) << v.err;
  EXPECT_TRUE(std::regex_search(v.out, std::regex("^stacksim \\S+"))) << v.out;
  const std::string version = v.out.substr(9, v.out.find('\n') - 9);
  CmdResult sim = Stacksim("simulate " + kSmall + " --format json");
  ASSERT_EQ(sim.status, 0) << sim.err;
  EXPECT_EQ(nlohmann::json::parse(sim.out).at("version"), version);
  CmdResult replay = Stacksim("replay " + kRoot + "/tests/data/kineto/h200-gpt-small-step.json.gz --format json");
  ASSERT_EQ(replay.status, 0) << replay.err;
  EXPECT_EQ(nlohmann::json::parse(replay.out).at("version"), version);
}

TEST(CliInputs, CalibrateHelpListsTheHarnessOptions) {
  CmdResult r = Stacksim("calibrate --help");
  EXPECT_EQ(r.status, 0) << r.err;
  for (const char* flag : {"--quick", "--out", "--raw", "--base", "--seed", "--skip", "--gpus"}) {
    EXPECT_TRUE(Has(r.out, flag)) << flag << " missing from: " << r.out;
  }
}

TEST(CliInputs, LongWorkShowsProgressWithTimeLeft) {
  CmdResult r = Stacksim("run-campaign " + kSmall +
                         " --tokens 100B --trials 50 --storage-write 1TB/s --storage-read 1TB/s --format json");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(Has(r.err, "run-campaign progress: 0/")) << r.err;
  EXPECT_TRUE(std::regex_search(r.err, std::regex("run-campaign progress: (\\d+)/\\1 trials"))) << r.err;
  CmdResult v = Stacksim("validate " + kRoot + "/validation/training_runs.json --run " +
                         ReadJson(kRoot + "/validation/training_runs.json")["runs"][0]["id"].get<std::string>());
  ASSERT_EQ(v.status, 0) << v.err;
  EXPECT_TRUE(Has(v.err, "validate progress: 0/1 runs")) << v.err;
  EXPECT_TRUE(Has(v.err, "validate progress: 1/1 runs")) << v.err;
}

}  // namespace
