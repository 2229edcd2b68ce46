// `stacksim import` as a user runs it: each shipped example in
// scenarios/imports/ imports to the scenario docs/import.md describes, and
// that scenario simulates; bad input exits 2 naming the file and the flag.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/run_stacksim.h"

namespace stacksim::testing {
namespace {

const std::string kExamples = std::string(STACKSIM_SOURCE_DIR) + "/scenarios/imports/";

// Imports, then simulates the written scenario; returns {scenario, report}.
std::pair<nlohmann::json, nlohmann::json> ImportAndSimulate(const std::string& args, const std::string& name) {
  const std::string out = ::testing::TempDir() + "import_cli_" + name + ".json";
  CmdResult imported = Stacksim("import " + args + " --out " + out);
  EXPECT_EQ(imported.status, 0) << imported.err;
  std::ifstream in(out);
  nlohmann::json scenario = nlohmann::json::parse(in, nullptr, false);
  CmdResult sim = Stacksim("simulate " + out + " --format json");
  EXPECT_EQ(sim.status, 0) << sim.err;
  return {scenario, sim.status == 0 ? nlohmann::json::parse(sim.out) : nlohmann::json()};
}

TEST(ImportCli, MegatronLlama3_70bLaunchScriptImportsAndSimulates) {
  auto [s, report] = ImportAndSimulate(kExamples + "megatron-llama3-70b.sh --topology dgx-h100 --gpus 64", "megatron");
  const nlohmann::json& p = s["plan"];
  EXPECT_EQ(p["tp"], 8);
  EXPECT_EQ(p["pp"], 4);
  EXPECT_EQ(p["dp"], 2);  // 64 GPUs / (8 x 4)
  EXPECT_EQ(p["vp"], 4);  // 80 layers / pp 4 / 5 layers per virtual stage
  EXPECT_EQ(p["sequence_parallel"], true);
  EXPECT_EQ(p["sharding"], "zero1");
  EXPECT_EQ(p["recompute"], "selective");
  EXPECT_EQ(s["model"]["num_hidden_layers"], 80);
  EXPECT_EQ(s["model"]["vocab_size"], 129024);  // 128256 padded to a multiple of 128 x 8
  EXPECT_EQ(s["training"]["global_batch"], 128);
  EXPECT_GT(report["iteration_s"].get<double>(), 0);
  // --nnodes is $SLURM_NNODES, unset in the script: --gpus says it.
  CmdResult no_gpus = Stacksim("import " + kExamples + "megatron-llama3-70b.sh --topology dgx-h100");
  EXPECT_EQ(no_gpus.status, 2);
  EXPECT_NE(no_gpus.err.find("--gpus"), std::string::npos) << no_gpus.err;
}

TEST(ImportCli, DeepSpeedZero3CpuOffloadFp16ImportsAndSimulates) {
  auto [s, report] = ImportAndSimulate(
      kExamples + "deepspeed-zero3-offload-fp16.json --model llama2-13b --topology dgx-h100 --seq-len 4096", "deepspeed");
  const nlohmann::json& p = s["plan"];
  EXPECT_EQ(s["gpus"], 8);
  EXPECT_EQ(p["sharding"], "zero3");
  EXPECT_EQ(p["offload_optimizer"], "host");
  EXPECT_EQ(p["precision"], "fp16");
  EXPECT_GT(report["iteration_s"].get<double>(), 0);
  // The offload is simulated: per GPU, 13.0B parameters / 8 x (12 bytes of
  // fp32 master weights and Adam moments + 2 bytes of fp16 gradient copy) on
  // the host (docs/formats.md, Offload).
  ASSERT_TRUE(report["offload"].is_object());
  EXPECT_EQ(report["offload"]["optimizer"], "host");
  const double expected = 13.0e9 / 8 * (12 + 2);
  EXPECT_NEAR(report["offload"]["host_bytes_per_gpu"][0].get<double>(), expected, 0.02 * expected);
}

TEST(ImportCli, TorchtitanLlama3_8bFsdpImportsAndSimulates) {
  auto [s, report] = ImportAndSimulate(kExamples + "torchtitan-llama3-8b.toml --topology dgx-h100 --gpus 8", "torchtitan");
  EXPECT_EQ(s["model"], "llama3.1-8b");
  EXPECT_EQ(s["framework"], "torchtitan");
  EXPECT_EQ(s["plan"]["dp"], 8);
  EXPECT_EQ(s["plan"]["sharding"], "zero3");
  EXPECT_EQ(s["training"]["global_batch"], 8);
  EXPECT_TRUE(s["import"]["unmapped"].empty()) << s["import"]["unmapped"].dump();  // every key of the example is read
  EXPECT_GT(report["iteration_s"].get<double>(), 0);
}

TEST(ImportCli, MegatronBridgeLlama3_70bConfigDumpImportsAndSimulates) {
  auto [s, report] =
      ImportAndSimulate(kExamples + "megatron-bridge-llama3-70b.yaml --topology dgx-h100 --gpus 64", "megatron_bridge");
  EXPECT_EQ(s["framework"], "megatron-bridge");
  EXPECT_EQ(s["plan"]["tp"], 4);
  EXPECT_EQ(s["plan"]["vp"], 5);
  EXPECT_EQ(s["plan"]["precision"], "fp8");
  EXPECT_EQ(s["model"]["num_hidden_layers"], 80);
  EXPECT_TRUE(s["import"]["unmapped"].empty()) << s["import"]["unmapped"].dump();
  EXPECT_GT(report["iteration_s"].get<double>(), 0);
  // A YAML line the reader does not take names its line.
  const std::string bad = ::testing::TempDir() + "import_cli_bad.yaml";
  std::ofstream(bad) << "_target_: megatron.bridge.training.config.ConfigContainer\nmodel: &m\n  num_layers: 2\n";
  CmdResult r = Stacksim("import " + bad + " --topology dgx-h100 --gpus 8");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("line 2"), std::string::npos) << r.err;
}

TEST(ImportCli, UnmappedFlagsGoToStandardErrorAndContradictionsExitTwo) {
  const std::string dir = ::testing::TempDir();
  std::ofstream(dir + "import_cli_args.txt") << "--micro-batch-size 2 --global-batch-size 100 --seq-length 2048\n";
  CmdResult batch = Stacksim("import " + dir + "import_cli_args.txt --model llama3-8b --topology dgx-h100 --gpus 8");
  EXPECT_EQ(batch.status, 2);
  EXPECT_NE(batch.err.find("import_cli_args.txt: --global-batch-size:"), std::string::npos) << batch.err;
  std::ofstream(dir + "import_cli_unknown.txt") << "--micro-batch-size 1 --seq-length 2048 --bf16 --frobnicate 7\n";
  CmdResult unknown = Stacksim("import " + dir + "import_cli_unknown.txt --model llama3-8b --topology dgx-h100 --gpus 8");
  EXPECT_EQ(unknown.status, 0) << unknown.err;
  EXPECT_NE(unknown.err.find("unmapped: --frobnicate 7"), std::string::npos) << unknown.err;
  EXPECT_NE(unknown.out.find("\"--frobnicate\""), std::string::npos);
}

}  // namespace
}  // namespace stacksim::testing
