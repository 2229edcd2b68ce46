#include "sim/campaign/checkpoint.h"

#include <gtest/gtest.h>

#include "sim/campaign/training_campaign.h"
#include "tests/input_error.h"

namespace stacksim::campaign {
namespace {

using testing::ErrorFrom;

const std::string kSourceDir = STACKSIM_SOURCE_DIR;

config::ScenarioConfig Llama405b() {
  return config::LoadScenario(kSourceDir + "/scenarios/llama3-405b-16384xh100.json", {});
}

TEST(Checkpoint, BytesPerParameterFollowThePrecision) {
  config::PlanConfig plan;
  plan.precision = config::Precision::kBf16;
  EXPECT_EQ(CheckpointBytesPerParameter(plan), 14);  // bf16 weights, fp32 master, two fp32 moments
  plan.precision = config::Precision::kFp8;
  EXPECT_EQ(CheckpointBytesPerParameter(plan), 14);  // the fp8 copy is derived, not saved
  plan.precision = config::Precision::kFp32;
  EXPECT_EQ(CheckpointBytesPerParameter(plan), 12);  // no separate master copy
}

TEST(Checkpoint, Llama405bOnMetasStorage) {
  config::ScenarioConfig s = Llama405b();
  ASSERT_TRUE(s.topology.storage.has_value());
  EXPECT_DOUBLE_EQ(s.topology.storage->write_bandwidth.value, 2e12);  // Tectonic, 2 TB/s sustained
  CheckpointCost c = CheckpointCostOf(s, *s.topology.storage);
  const double params = static_cast<double>(s.model.ParameterCount());
  EXPECT_NEAR(params, 405.9e9, 1e9);
  EXPECT_DOUBLE_EQ(c.bytes.value, 14 * params);
  EXPECT_NEAR(c.write.seconds(), 14 * params / 2e12, 1e-6);  // ~2.8 s
  EXPECT_NEAR(c.bytes_per_gpu.value, 14 * params / 16384, 1);
  // Llama 3 paper: each GPU saves 1 MB to 4 GB; an even share is ~350 MB.
  EXPECT_GT(c.bytes_per_gpu.value, 1e6);
  EXPECT_LT(c.bytes_per_gpu.value, 4e9);
  EXPECT_NEAR(c.snapshot.seconds(), c.bytes_per_gpu.value / 64e9, 1e-6);  // over 64 GB/s PCIe
}

TEST(Checkpoint, TopologyStorageIsStrict) {
  nlohmann::json doc = ReadJsonFile(kSourceDir + "/topologies/meta-h100-roce.json");
  auto parse = [&](const nlohmann::json& d) { return config::ParseTopology(JsonNode(d, "t.json", "")); };
  config::TopologyConfig t = parse(doc);
  ASSERT_TRUE(t.storage.has_value());
  EXPECT_DOUBLE_EQ(t.storage->read_bandwidth.value, 2e12);
  // TopologyToJson writes it back in the file format.
  nlohmann::json again = config::TopologyToJson(t);
  EXPECT_DOUBLE_EQ(parse(again).storage->write_bandwidth.value, 2e12);

  for (auto [edit, key] : std::vector<std::pair<std::function<void(nlohmann::json&)>, std::string>>{
           {[](nlohmann::json& d) { d["storage"].erase("source"); }, "storage.source"},
           {[](nlohmann::json& d) { d["storage"]["write_bandwidth"] = 2000; }, "storage.write_bandwidth"},
           {[](nlohmann::json& d) { d["storage"]["read_bandwidth"] = "0 GB/s"; }, "storage.read_bandwidth"},
           {[](nlohmann::json& d) { d["storage"]["iops"] = 1; }, "storage.iops"}}) {
    nlohmann::json d = doc;
    edit(d);
    InputError e = ErrorFrom([&] { parse(d); });
    EXPECT_EQ(e.file(), "t.json");
    EXPECT_EQ(e.key_path(), key) << e.what();
  }
}

TEST(Checkpoint, CampaignWithoutStorageNamesTheTopologyField) {
  config::ScenarioConfig s = config::LoadScenario(kSourceDir + "/scenarios/llama3-8b-8xh100.json", {});
  ASSERT_FALSE(s.topology.storage.has_value());
  CampaignRequest request;
  request.tokens = 1'000'000'000;
  request.reliability = LoadReliabilityFile(DefaultReliabilityFile());
  request.mc.trials = 2;
  InputError e = ErrorFrom([&] { RunTrainingCampaign(s, Time::FromSeconds(1), request); });
  EXPECT_EQ(e.key_path(), "storage");
  EXPECT_NE(e.file().find("dgx-h100"), std::string::npos) << e.file();
  // Given on the command line instead, it runs.
  request.storage_write = Bandwidth{10e9};
  request.storage_read = Bandwidth{20e9};
  TrainingCampaign c = RunTrainingCampaign(s, Time::FromSeconds(1), request);
  EXPECT_EQ(c.storage_from, "command line");
  EXPECT_NEAR(c.checkpoint.read.seconds(), c.checkpoint.bytes.value / 20e9, 1e-6);
}

}  // namespace
}  // namespace stacksim::campaign
