// The LoRA / QLoRA fine-tuning scenarios and the AMD Instinct profiles as a
// user runs them: they simulate, their numbers follow from the mechanism
// (frozen weights, adapter-only state), an AMD cluster gets a plan beside an
// H100 one in compare and carries the no-validated-run warning, and the
// calibration harness says it is CUDA-only.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "tests/run_stacksim.h"

namespace stacksim::testing {
namespace {

const std::string kScenarios = std::string(STACKSIM_SOURCE_DIR) + "/scenarios/";

// Llama 3 70B's adapters at rank 16 on all seven projections, per layer:
// 16 x ((h+q) + 2(h+kv) + (q+h) + 2(h+ffn) + (ffn+h)), h = q = 8192, kv = 1024,
// ffn = 28672.
constexpr double kAdaptersPerLayer = 16.0 * ((8192 + 8192) + 2 * (8192 + 1024) + (8192 + 8192) +
                                             2 * (8192 + 28672) + (28672 + 8192));
constexpr double kAdapters = 80 * kAdaptersPerLayer;  // 207.1M

nlohmann::json Simulate(const std::string& args, int want_status = 0) {
  CmdResult r = Stacksim("simulate " + args + " --format json");
  EXPECT_EQ(r.status, want_status) << r.err;
  if (r.status != want_status || r.out.empty()) return nlohmann::json::object();
  return nlohmann::json::parse(r.out);
}

// FSDP over 8 H100s: the frozen bf16 weights are sharded 8 ways; gradients
// and Adam state exist for the adapters only.
TEST(FinetuneCli, LoraFineTuneOf70bFitsOneNodeWithAdapterOnlyState) {
  nlohmann::json j = Simulate(kScenarios + "llama3-70b-lora-8xh100.json");
  ASSERT_TRUE(j.contains("memory")) << j.dump();
  EXPECT_FALSE(j["out_of_memory"].get<bool>());
  EXPECT_EQ(j["plan"]["finetune"]["method"], "lora");
  const nlohmann::json& m = j["memory"][0];
  EXPECT_DOUBLE_EQ(m["optimizer_bytes"].get<double>(), 12 * kAdapters / 8);  // fp32 master + 2 moments, sharded
  const double frozen_shard = 2 * 70.55e9 / 8;                                // 141 GB of bf16 over 8 GPUs
  EXPECT_GT(m["weights_bytes"].get<double>(), frozen_shard);
  EXPECT_LT(m["weights_bytes"].get<double>(), frozen_shard + 4e9);  // + the gathered layers
  EXPECT_LT(m["gradients_bytes"].get<double>(), 1e9);
  EXPECT_GT(j["iteration_s"].get<double>(), 0);
  // LoRA's model FLOPs are 4N + 6 x adapters per token (plus attention): an
  // MFU in a plausible band, not the 6N of full training.
  EXPECT_GT(j["mfu"].get<double>(), 0.05);
  EXPECT_LT(j["mfu"].get<double>(), 0.8);
  std::string warnings;
  for (const auto& w : j["warnings"]) warnings += w.get<std::string>() + "\n";
  EXPECT_NE(warnings.find("lora fine-tuning was never validated"), std::string::npos) << warnings;
}

// QLoRA's NF4 weights let each GPU hold the whole model: plain data
// parallelism fits; the same plan with 16-bit frozen weights does not.
TEST(FinetuneCli, FourBitWeightsLetEachGpuHoldTheWholeModel) {
  const std::string file = kScenarios + "llama3-70b-qlora-8xh100.json";
  nlohmann::json q = Simulate(file);
  ASSERT_TRUE(q.contains("memory")) << q.dump();
  EXPECT_FALSE(q["out_of_memory"].get<bool>());
  const double weights = q["memory"][0]["weights_bytes"].get<double>();
  EXPECT_GT(weights, 35e9);  // 68.4B linear weights at 4.127 bits + 4.2 GB of bf16 embedding and head
  EXPECT_LT(weights, 42e9);
  EXPECT_DOUBLE_EQ(q["memory"][0]["optimizer_bytes"].get<double>(), 12 * kAdapters);  // not sharded
  nlohmann::json l = Simulate(file + " --set plan.finetune.method=lora", 3);
  EXPECT_TRUE(l.is_object());
}

TEST(FinetuneCli, TextReportNamesTheAdapters) {
  CmdResult r = Stacksim("simulate " + kScenarios + "llama3-70b-qlora-8xh100.json");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("QLoRA rank 16 on 7 projections (frozen base)"), std::string::npos) << r.out;
}

// The MI300X scenario simulates, and its prediction says that no run on a
// CDNA 3 GPU backs it.
TEST(AmdCli, Mi300xSimulatesAndWarnsThatNoRunValidatesIt) {
  nlohmann::json j = Simulate(kScenarios + "compare-mi300x-h100-llama3-70b.json");
  ASSERT_TRUE(j.contains("warnings")) << j.dump();
  std::string all;
  for (const auto& w : j["warnings"]) all += w.get<std::string>() + "\n";
  EXPECT_NE(all.find("cdna3"), std::string::npos) << all;
  EXPECT_FALSE(j["out_of_memory"].get<bool>());
}

TEST(AmdCli, CompareGivesMi300xAndH100EachAPlan) {
  CmdResult r = Stacksim("compare --scenario " + kScenarios +
                         "compare-mi300x-h100-llama3-70b.json --tokens 10B --cluster mi300x-platform:8 "
                         "--cluster dgx-h100:8 --format json");
  ASSERT_EQ(r.status, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["clusters"].size(), 2u);
  EXPECT_EQ(j["clusters"][0]["gpu"], "mi300x");
  EXPECT_EQ(j["clusters"][1]["gpu"], "h100-sxm-80gb");
  for (const auto& c : j["clusters"]) {
    ASSERT_TRUE(c["fits"].get<bool>()) << c.dump();
    ASSERT_GE(c["plans"].size(), 1u);
    EXPECT_GT(c["days"].get<double>(), 0);
  }
  std::string warnings;
  for (const auto& w : j["clusters"][0]["plans"][0]["warnings"]) warnings += w.get<std::string>() + "\n";
  EXPECT_NE(warnings.find("cdna3"), std::string::npos) << warnings;
}

TEST(AmdCli, CalibrateSaysItIsCudaOnly) {
  CmdResult r = Stacksim("calibrate --help");
  EXPECT_NE((r.out + r.err).find("CUDA only"), std::string::npos) << r.out << r.err;
  EXPECT_NE((r.out + r.err).find("AMD Instinct"), std::string::npos) << r.out << r.err;
}

}  // namespace
}  // namespace stacksim::testing
