#include "sim/config/scenario.h"

#include <cstdlib>
#include <filesystem>
#include <functional>

#include <gtest/gtest.h>

#include "tests/input_error.h"

namespace stacksim::config {
namespace {

const std::string kSourceDir = STACKSIM_SOURCE_DIR;
const std::string kData = kSourceDir + "/tests/data/config/";
const std::string kTestProfile = kData + "profile-test.json";

using testing::ErrorFrom;

bool Mentions(const InputError& e, const std::string& text) {
  return std::string(e.what()).find(text) != std::string::npos;
}

// A small valid scenario: an 8-layer model with 8 heads (4 KV heads) on one DGX H100.
nlohmann::json Base() {
  return {{"name", "t"},
          {"model", kData + "tiny-model.json"},
          {"topology", "dgx-h100"},
          {"profile", kTestProfile},
          {"gpus", 8},
          {"training", {{"seq_len", 1024}, {"global_batch", 16}}},
          {"plan", {{"tp", 2}, {"pp", 2}, {"dp", 2}}}};
}

ScenarioConfig Parse(const nlohmann::json& doc, std::vector<std::string> overrides = {}) {
  ScenarioOptions options;
  options.overrides = std::move(overrides);
  return ParseScenario(doc, "s.json", options);
}

InputError ParseError(const nlohmann::json& doc, std::vector<std::string> overrides = {}) {
  return ErrorFrom([&] { Parse(doc, overrides); });
}

// Loads a shipped scenario; while profiles/ lacks the topology's GPU, with the test profile.
ScenarioConfig LoadShipped(const std::string& path, ScenarioOptions options = {}) {
  try {
    return LoadScenario(path, options);
  } catch (const InputError& e) {
    if (!Mentions(e, "no profile for GPU")) throw;
    options.profile_path = kTestProfile;
    return LoadScenario(path, options);
  }
}

TEST(Scenario, ParsesAndJoinsTheParts) {
  ScenarioConfig s = Parse(Base());
  EXPECT_EQ(s.name, "t");
  EXPECT_EQ(s.model.name, "tiny");
  EXPECT_EQ(s.model_file, kData + "tiny-model.json");
  EXPECT_EQ(s.topology.name, "dgx-h100");
  EXPECT_EQ(s.topology_file, DataRoot() + "/topologies/dgx-h100.json");
  EXPECT_EQ(s.profile.name, "test-h100");
  EXPECT_EQ(s.gpus, 8);
  EXPECT_EQ(s.nodes(), 1);
  EXPECT_EQ(s.seq_len, 1024);
  EXPECT_EQ(s.plan.global_batch, 16);
  EXPECT_EQ(s.plan.micro_batches(), 8);
  EXPECT_EQ(s.tokens_per_step(), 16 * 1024);
}

// Megatron-Core's micro-batch groups: pp to all of the micro-batches per
// group, the last group empty or at least pp; with them a micro-batch count
// that is not a multiple of pp runs.
TEST(Scenario, MicroBatchGroupsFollowMegatronCoresRules) {
  nlohmann::json doc = Base();
  doc["plan"] = {{"tp", 2}, {"pp", 4}, {"dp", 1}, {"vp", 2}, {"schedule", "interleaved"}};  // 16 micro-batches
  doc["plan"]["microbatch_group"] = 6;  // groups of 6, 6, 4
  EXPECT_EQ(Parse(doc).plan.microbatch_group, 6);
  for (int bad : {3, 5, 17}) {  // below pp; a last group of 1; more than the micro-batches
    doc["plan"]["microbatch_group"] = bad;
    EXPECT_EQ(ParseError(doc).key_path(), "plan.microbatch_group") << bad;
  }
  doc["training"]["global_batch"] = 10;  // 10 micro-batches: not a multiple of pp
  doc["plan"].erase("microbatch_group");
  EXPECT_EQ(ParseError(doc).key_path(), "training.global_batch");
  doc["plan"]["microbatch_group"] = 6;  // groups of 6 and 4
  EXPECT_EQ(Parse(doc).plan.micro_batches(), 10);
  doc["plan"]["schedule"] = "1f1b";  // other schedules ignore it
  doc["plan"]["vp"] = 1;
  doc["plan"]["microbatch_group"] = 2;
  EXPECT_EQ(Parse(doc).plan.microbatch_group, 2);
}

// overlap_comm_sms: unset by default (the fitted constant decides), 0 or
// more, and with comm_sms below the profile's SMs.
TEST(Scenario, OverlapCommSmsIsReadAndBounded) {
  nlohmann::json doc = Base();
  EXPECT_FALSE(Parse(doc).plan.overlap_comm_sms.has_value());
  doc["plan"]["overlap_comm_sms"] = 16;
  EXPECT_EQ(Parse(doc).plan.overlap_comm_sms, 16);
  doc["plan"]["overlap_comm_sms"] = -1;
  EXPECT_EQ(ParseError(doc).key_path(), "plan.overlap_comm_sms");
  const int64_t sms = Parse(Base()).profile.sm_count.value;
  doc["plan"]["overlap_comm_sms"] = sms;
  EXPECT_EQ(ParseError(doc).key_path(), "plan.overlap_comm_sms");
}

TEST(Scenario, ResolvesPathsRelativeToTheScenarioFile) {
  ScenarioConfig s = LoadScenario(kData + "scenario-relative.json", {});
  EXPECT_EQ(s.model_file, std::filesystem::path(kData + "tiny-model.json").lexically_normal().string());
  EXPECT_EQ(s.profile_file, std::filesystem::path(kData + "profile-test.json").lexically_normal().string());
  EXPECT_EQ(s.plan.schedule, PipelineScheduleKind::kInterleaved);
  EXPECT_EQ(s.question.empty(), false);
}

TEST(Scenario, ResolveDataFileLooksUpNamesUnderTheDataRoot) {
  EXPECT_EQ(ResolveDataFile("models", "gpt3-175b", "x/y/s.json"), DataRoot() + "/models/gpt3-175b.json");
  EXPECT_EQ(ResolveDataFile("models", "m.json", "x/y/s.json"), "x/y/m.json");
  EXPECT_EQ(ResolveDataFile("models", "../m/a.json", "x/y/s.json"), "x/m/a.json");
  EXPECT_EQ(ResolveDataFile("models", "/abs/a.json", "x/y/s.json"), "/abs/a.json");
}

TEST(Scenario, DataRootFollowsTheEnvironment) {
  const char* old = std::getenv("STACKSIM_DATA_DIR");
  std::string saved = old ? old : "";
  setenv("STACKSIM_DATA_DIR", "/tmp/stacksim-data", 1);
  EXPECT_EQ(DataRoot(), "/tmp/stacksim-data");
  EXPECT_EQ(ResolveDataFile("topologies", "dgx-h100", ""), "/tmp/stacksim-data/topologies/dgx-h100.json");
  if (old) {
    setenv("STACKSIM_DATA_DIR", saved.c_str(), 1);
  } else {
    unsetenv("STACKSIM_DATA_DIR");
    EXPECT_EQ(DataRoot(), kSourceDir);
  }
}

TEST(Scenario, UnknownModelNameNamesTheKey) {
  nlohmann::json doc = Base();
  doc["model"] = "no-such-model";
  InputError e = ParseError(doc);
  EXPECT_EQ(e.file(), "s.json");
  EXPECT_EQ(e.key_path(), "model");
  EXPECT_TRUE(Mentions(e, "unknown model 'no-such-model'"));
  doc = Base();
  doc["topology"] = "dgx-h1000";
  EXPECT_EQ(ParseError(doc).key_path(), "topology");
}

TEST(Scenario, ModelTopologyAndProfileMayBeInline) {
  nlohmann::json doc = Base();
  doc["model"] = ReadJsonFile(kData + "tiny-model.json");
  doc["topology"] = ReadJsonFile(DataRoot() + "/topologies/dgx-h100.json");
  doc["profile"] = ReadJsonFile(kTestProfile);
  ScenarioConfig s = Parse(doc);
  EXPECT_EQ(s.model_file, "s.json");
  EXPECT_EQ(s.model.num_kv_heads, 4);
  doc["model"]["num_hidden_layers"] = 0;
  InputError e = ParseError(doc);
  EXPECT_EQ(e.file(), "s.json");
  EXPECT_EQ(e.key_path(), "model.num_hidden_layers");
}

TEST(Scenario, ProfileComesFromFlagThenScenarioThenTopology) {
  ScenarioOptions options;
  options.profile_path = kData + "profile-test-no-fp8.json";
  EXPECT_EQ(ParseScenario(Base(), "s.json", options).profile.name, "test-a100");
  EXPECT_EQ(Parse(Base()).profile.name, "test-h100");
  nlohmann::json doc = Base();
  doc.erase("profile");
  doc["topology"] = ReadJsonFile(DataRoot() + "/topologies/dgx-h100.json");
  doc["topology"]["node"]["gpu"] = "no-such-gpu";
  InputError e = ParseError(doc);
  EXPECT_EQ(e.file(), "s.json");
  EXPECT_EQ(e.key_path(), "topology.node.gpu");
  EXPECT_TRUE(Mentions(e, "no profile for GPU 'no-such-gpu'"));
}

TEST(Scenario, UnknownAndMissingKeysAreErrors) {
  nlohmann::json doc = Base();
  doc["trainig"] = doc["training"];
  EXPECT_EQ(ParseError(doc).key_path(), "trainig");
  doc = Base();
  doc["plan"].erase("tp");
  InputError e = ParseError(doc);
  EXPECT_EQ(e.key_path(), "plan.tp");
  EXPECT_TRUE(Mentions(e, "missing"));
  doc = Base();
  doc["training"].erase("global_batch");
  EXPECT_EQ(ParseError(doc).key_path(), "training.global_batch");
  doc = Base();
  doc["training"]["seq_len"] = 0;
  EXPECT_EQ(ParseError(doc).key_path(), "training.seq_len");
  doc = Base();
  doc["gpus"] = -8;
  EXPECT_EQ(ParseError(doc).key_path(), "gpus");
}

TEST(Scenario, GpuProductMustMatch) {
  nlohmann::json doc = Base();
  doc["plan"]["dp"] = 4;
  InputError e = ParseError(doc);
  EXPECT_EQ(e.file(), "s.json");
  EXPECT_EQ(e.key_path(), "plan.dp");
  EXPECT_TRUE(Mentions(e, "2 x 2 x 4 x 1 = 16 GPUs, but gpus is 8")) << e.what();
}

TEST(Scenario, TpMustDivideTheHeads) {
  nlohmann::json doc = Base();
  doc["model"] = ReadJsonFile(kData + "tiny-model.json");
  doc["model"]["num_attention_heads"] = 4;  // tp 8 cannot split 4 heads
  doc["model"]["num_key_value_heads"] = 4;
  doc["plan"] = {{"tp", 8}, {"pp", 1}, {"dp", 1}};
  doc["training"]["global_batch"] = 8;
  InputError e = ParseError(doc);
  EXPECT_EQ(e.key_path(), "plan.tp");
  EXPECT_TRUE(Mentions(e, "attention heads"));
}

TEST(Scenario, KvHeadsMayBeSplitOrReplicatedAcrossTp) {
  nlohmann::json doc = Base();  // 4 KV heads
  doc["plan"] = {{"tp", 8}, {"pp", 1}, {"dp", 1}};
  EXPECT_EQ(Parse(doc).plan.tp, 8);  // each KV head replicated on 2 ranks
  doc["model"] = ReadJsonFile(kData + "tiny-model.json");
  doc["model"]["num_attention_heads"] = 24;
  doc["model"]["num_key_value_heads"] = 6;
  doc["model"]["head_dim"] = 64;
  doc["plan"] = {{"tp", 4}, {"pp", 2}, {"dp", 1}};
  InputError e = ParseError(doc);  // 6 and 4 do not divide one another
  EXPECT_EQ(e.key_path(), "plan.tp");
  EXPECT_TRUE(Mentions(e, "KV heads"));
}

TEST(Scenario, TpMustFitTheNvlinkDomain) {
  nlohmann::json doc = Base();
  doc["model"] = ReadJsonFile(kData + "tiny-model.json");
  doc["model"]["num_attention_heads"] = 16;
  doc["model"]["num_key_value_heads"] = 16;
  doc["gpus"] = 16;
  doc["plan"] = {{"tp", 16}, {"pp", 1}, {"dp", 1}};
  InputError e = ParseError(doc);
  EXPECT_EQ(e.key_path(), "plan.tp");
  EXPECT_TRUE(Mentions(e, "TP must fit the NVLink domain")) << e.what();
  doc["topology"] = "gb200-nvl72";  // 72-GPU domain: tp 16 does not divide it
  EXPECT_TRUE(Mentions(ParseError(doc), "72 GPUs"));
  doc["plan"] = {{"tp", 8}, {"pp", 1}, {"dp", 2}};  // spans two 4-GPU trays in one domain
  EXPECT_EQ(Parse(doc).plan.tp, 8);
}

TEST(Scenario, PcieTopologyAllowsTpUpToTheNode) {
  nlohmann::json doc = Base();
  doc["topology"] = "pcie-l40s";
  doc["plan"] = {{"tp", 8}, {"pp", 1}, {"dp", 1}};
  EXPECT_EQ(Parse(doc).plan.tp, 8);
  doc["gpus"] = 16;
  doc["model"] = ReadJsonFile(kData + "tiny-model.json");
  doc["model"]["num_attention_heads"] = 16;
  doc["plan"] = {{"tp", 16}, {"pp", 1}, {"dp", 1}};
  InputError e = ParseError(doc);
  EXPECT_EQ(e.key_path(), "plan.tp");
  EXPECT_TRUE(Mentions(e, "PCIe"));
}

TEST(Scenario, LayersMustSplitIntoEqualStages) {
  nlohmann::json doc = Base();  // 8 layers
  doc["gpus"] = 24;
  doc["plan"] = {{"tp", 2}, {"pp", 3}, {"dp", 4}};
  doc["training"]["global_batch"] = 24;
  InputError e = ParseError(doc);
  EXPECT_EQ(e.key_path(), "plan.pp");
  EXPECT_TRUE(Mentions(e, "Megatron-LM requires"));
  doc = Base();
  doc["plan"]["vp"] = 3;  // 8 % (2 x 3) != 0
  doc["training"]["global_batch"] = 12;
  e = ParseError(doc);
  EXPECT_EQ(e.key_path(), "plan.vp");
  EXPECT_TRUE(Mentions(e, "Megatron-LM requires"));
}

TEST(Scenario, UnevenStagesMustBeAskedFor) {
  nlohmann::json doc = Base();  // 8 layers
  doc["gpus"] = 24;
  doc["plan"] = {{"tp", 2}, {"pp", 3}, {"dp", 4}, {"uneven_stages", true}};
  doc["training"]["global_batch"] = 24;
  EXPECT_NO_THROW(ParseScenario(doc, "mem.json", {}));
  doc["gpus"] = 72;
  doc["plan"] = {{"tp", 2}, {"pp", 9}, {"dp", 4}, {"uneven_stages", true}};  // 9 stages, 8 layers
  doc["training"]["global_batch"] = 36;
  InputError e = ParseError(doc);
  EXPECT_EQ(e.key_path(), "plan.pp");
}

TEST(Scenario, VirtualStagesNeedAPipeline) {
  nlohmann::json doc = Base();
  doc["plan"] = {{"tp", 2}, {"pp", 1}, {"dp", 4}, {"vp", 2}};
  EXPECT_EQ(ParseError(doc).key_path(), "plan.vp");
}

// SMs held by communication (plan.comm_sms) must leave some to compute.
TEST(Scenario, CommunicationMustLeaveSmsToCompute) {
  nlohmann::json doc = Base();
  doc["plan"]["comm_sms"] = 20;
  const ScenarioConfig s = Parse(doc);
  EXPECT_EQ(s.plan.comm_sms, 20);
  doc["plan"]["comm_sms"] = s.profile.sm_count.value;
  InputError e = ParseError(doc);
  EXPECT_EQ(e.key_path(), "plan.comm_sms");
  EXPECT_TRUE(Mentions(e, "none would be left")) << e.what();
  doc["plan"]["comm_sms"] = -1;
  EXPECT_EQ(ParseError(doc).key_path(), "plan.comm_sms");
}

TEST(Scenario, GlobalBatchMustDivideIntoMicroBatches) {
  nlohmann::json doc = Base();
  doc["training"]["global_batch"] = 15;
  InputError e = ParseError(doc);
  EXPECT_EQ(e.key_path(), "training.global_batch");
  EXPECT_TRUE(Mentions(e, "micro_batch x dp = 1 x 2 = 2"));
  doc = Base();
  doc["plan"]["micro_batch"] = 16;  // 16 x 2 > 16
  EXPECT_EQ(ParseError(doc).key_path(), "training.global_batch");
}

TEST(Scenario, InterleavingNeedsMicroBatchesInMultiplesOfPp) {
  nlohmann::json doc = Base();
  doc["gpus"] = 16;
  doc["plan"] = {{"tp", 2}, {"pp", 4}, {"dp", 2}, {"vp", 2}};
  doc["training"]["global_batch"] = 12;  // 6 micro-batches per pipeline, pp 4
  InputError e = ParseError(doc);
  EXPECT_EQ(e.key_path(), "training.global_batch");
  EXPECT_TRUE(Mentions(e, "interleaved"));
  doc["training"]["global_batch"] = 16;
  EXPECT_EQ(Parse(doc).plan.micro_batches(), 8);
}

TEST(Scenario, ContextParallelismNeedsTwoChunksPerRank) {
  nlohmann::json doc = Base();
  doc["plan"]["cp"] = 2;
  doc["plan"]["dp"] = 1;
  EXPECT_EQ(Parse(doc).plan.cp, 2);
  doc["training"]["seq_len"] = 1026;  // not divisible by 2 x cp
  InputError e = ParseError(doc);
  EXPECT_EQ(e.file(), "s.json");
  EXPECT_EQ(e.key_path(), "plan.cp");
  doc["training"]["seq_len"] = 1024;
  doc["plan"]["attention"] = "unfused";
  EXPECT_EQ(ParseError(doc).key_path(), "plan.attention");
}

TEST(Scenario, PipelineInnerRankOrderNeedsEvenlyStridedGroups) {
  nlohmann::json doc = Base();
  doc["plan"]["rank_order"] = "tp-cp-pp-dp";
  EXPECT_EQ(Parse(doc).plan.rank_order, RankOrder::kTpCpPpDp);
  // cp > 1: the gradient group (dp x cp) would have two strides.
  doc["plan"]["cp"] = 2;
  doc["plan"]["dp"] = 1;
  InputError e = ParseError(doc);
  EXPECT_EQ(e.key_path(), "plan.rank_order");
  EXPECT_TRUE(Mentions(e, "context parallelism")) << e.what();
  // tp x pp = 6 neither divides nor is a multiple of the 8-GPU domain.
  doc = Base();
  doc["gpus"] = 48;
  doc["plan"] = {{"tp", 2}, {"pp", 3}, {"dp", 8}, {"rank_order", "tp-cp-pp-dp"}};
  doc["training"]["global_batch"] = 48;
  doc["model"] = {{"name", "six-layer"},        {"hidden_size", 512},      {"num_hidden_layers", 6},
                  {"num_attention_heads", 8},   {"num_key_value_heads", 4}, {"intermediate_size", 1024},
                  {"vocab_size", 1000},         {"hidden_act", "silu"},    {"rms_norm_eps", 1e-5}};
  e = ParseError(doc);
  EXPECT_EQ(e.key_path(), "plan.rank_order") << e.what();
}

TEST(Scenario, GpusMustBeWholeNodesAndFitTheCluster) {
  nlohmann::json doc = Base();
  doc["gpus"] = 12;
  doc["plan"] = {{"tp", 2}, {"pp", 2}, {"dp", 3}};
  doc["training"]["global_batch"] = 12;
  EXPECT_EQ(ParseError(doc).key_path(), "gpus");
  doc["gpus"] = 4;  // less than one node is fine
  doc["plan"] = {{"tp", 2}, {"pp", 2}, {"dp", 1}};
  EXPECT_EQ(Parse(doc).nodes(), 1);
  doc["topology"] = ReadJsonFile(DataRoot() + "/topologies/dgx-h100.json");
  doc["topology"]["max_nodes"] = 1;
  doc["gpus"] = 16;
  doc["plan"] = {{"tp", 2}, {"pp", 2}, {"dp", 4}};
  doc["training"]["global_batch"] = 16;
  // More nodes than the file describes: the fabric grows, and says so.
  ScenarioConfig grown = Parse(doc);
  EXPECT_EQ(grown.topology.max_nodes, 256);  // whole spine groups of 256 nodes
  EXPECT_NE(grown.topology.notes.find("fabric grown from the 1 nodes"), std::string::npos) << grown.topology.notes;
}

// MegaScale's GPT-3 175B on 12,288 A100 (arXiv:2402.15627 Table 2: tp 8, pp
// 8, dp 192) on the 560-node dgx-a100 fabric, grown to 1,540 nodes.
TEST(Scenario, TwelveThousandA100sGetAGrownFabric) {
  nlohmann::json doc = Base();
  doc["model"] = "gpt3-175b";
  doc["topology"] = "dgx-a100";
  doc["gpus"] = 12288;
  doc["plan"] = {{"tp", 8}, {"pp", 8}, {"dp", 192}, {"vp", 6}, {"sequence_parallel", true}};
  doc["training"] = {{"seq_len", 2048}, {"global_batch", 6144}};
  ScenarioConfig s = Parse(doc);
  EXPECT_EQ(s.nodes(), 1536);
  EXPECT_EQ(s.topology.max_nodes, 1540);
  EXPECT_EQ(s.topology.fabric.levels.back().nodes_below, 1540);
}

TEST(Scenario, SequenceMustFitLearnedPositions) {
  nlohmann::json doc = Base();
  doc["model"] = "gpt-1.7b";  // 2048 learned positions, 24 heads, 24 layers
  doc["training"]["seq_len"] = 4096;
  EXPECT_EQ(ParseError(doc).key_path(), "training.seq_len");
  doc["training"]["seq_len"] = 2048;
  EXPECT_EQ(Parse(doc).seq_len, 2048);
}

TEST(Scenario, SetOverridesAnyField) {
  ScenarioConfig s = Parse(Base(), {"plan.tp=1", "plan.dp=4", "training.global_batch=32", "plan.recompute=full"});
  EXPECT_EQ(s.plan.tp, 1);
  EXPECT_EQ(s.plan.dp, 4);
  EXPECT_EQ(s.plan.global_batch, 32);
  EXPECT_EQ(s.plan.recompute, Recompute::kFull);
  EXPECT_EQ(s.overrides.size(), 4u);
}

TEST(Scenario, SetToANonexistentPathIsAnError) {
  InputError e = ParseError(Base(), {"planz.tp=4"});
  EXPECT_EQ(e.file(), "--set");
  EXPECT_EQ(e.key_path(), "planz.tp");
  e = ParseError(Base(), {"plan.tpp=4"});
  EXPECT_EQ(e.file(), "--set");
  EXPECT_EQ(e.key_path(), "plan.tpp");
  EXPECT_TRUE(Mentions(e, "unknown key"));
  e = ParseError(Base(), {"plan.recompute=sometimes"});
  EXPECT_EQ(e.file(), "--set");
  EXPECT_EQ(e.key_path(), "plan.recompute");
  e = ParseError(Base(), {"plan.tp"});
  EXPECT_EQ(e.file(), "--set");
}

TEST(Scenario, ResolvedConfigIsCompleteAndReadsBack) {
  ScenarioConfig s = Parse(Base(), {"plan.vp=2"});
  nlohmann::json j = ResolvedConfigJson(s);
  EXPECT_EQ(j["files"]["scenario"], "s.json");
  EXPECT_EQ(j["files"]["model"], kData + "tiny-model.json");
  EXPECT_EQ(j["overrides"][0], "plan.vp=2");
  for (const char* key : {"tp", "pp", "dp", "cp", "ep", "vp", "micro_batch", "sequence_parallel", "recompute",
                          "sharding", "schedule", "precision", "overlap_grad_reduce", "overlap_param_gather",
                          "grad_bucket", "cuda_graphs", "attention", "grad_reduce_precision"}) {
    EXPECT_TRUE(j["plan"].contains(key)) << key;
  }
  EXPECT_EQ(j["plan"]["schedule"], "interleaved");
  EXPECT_EQ(j["derived"]["parameters"], s.model.ParameterCount());
  EXPECT_EQ(j["derived"]["micro_batches_per_pipeline"], 8);
  EXPECT_EQ(j["training"]["global_batch"], 16);

  nlohmann::json again = j;
  again.erase("files");
  again.erase("overrides");
  again.erase("derived");
  ScenarioConfig back = ParseScenario(again, "r.json", {});
  EXPECT_EQ(ResolvedConfigJson(back)["plan"], j["plan"]);
  EXPECT_EQ(ResolvedConfigJson(back)["model"], j["model"]);
  EXPECT_EQ(ResolvedConfigJson(back)["topology"], j["topology"]);
  EXPECT_EQ(ResolvedConfigJson(back)["profile"], j["profile"]);
}

TEST(Scenario, FlagshipGpt3On1024H100) {
  ScenarioConfig s = LoadShipped(kSourceDir + "/scenarios/gpt3-175b-1024xh100.json");
  EXPECT_EQ(s.model.ParameterCount(), 174615846912);
  EXPECT_EQ(s.topology.name, "dgx-h100");
  EXPECT_EQ(s.gpus, 1024);
  EXPECT_EQ(s.nodes(), 128);
  EXPECT_EQ(s.plan.tp * s.plan.pp * s.plan.dp, 1024);
  EXPECT_EQ(s.plan.vp, 3);
  EXPECT_EQ(s.plan.schedule, PipelineScheduleKind::kInterleaved);
  EXPECT_EQ(s.plan.micro_batches(), 96);
  EXPECT_EQ(s.tokens_per_step(), 1536 * 2048);
  // --set reaches into a shipped scenario too.
  ScenarioOptions options;
  options.overrides = {"plan.vp=2"};
  EXPECT_EQ(LoadShipped(kSourceDir + "/scenarios/gpt3-175b-1024xh100.json", options).plan.vp, 2);
}

// A topology names its GPU's profile; once profiles/ holds any, each topology's must be there.
TEST(Scenario, EveryShippedTopologyHasItsGpuProfile) {
  bool any = false;
  if (!std::filesystem::is_directory(kSourceDir + "/profiles")) GTEST_SKIP() << "no profiles/ yet";
  for (const auto& entry : std::filesystem::directory_iterator(kSourceDir + "/profiles")) {
    any = any || entry.path().extension() == ".json";
  }
  if (!any) GTEST_SKIP() << "no profiles/*.json yet";
  for (const auto& entry : std::filesystem::directory_iterator(kSourceDir + "/topologies")) {
    if (entry.path().extension() != ".json") continue;
    TopologyConfig t = LoadTopologyFile(entry.path().string());
    std::string profile = ResolveDataFile("profiles", t.gpu, "");
    EXPECT_TRUE(std::filesystem::is_regular_file(profile)) << t.name << " needs " << profile;
  }
}

TEST(Scenario, EveryShippedScenarioLoads) {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kSourceDir + "/scenarios")) {
    if (entry.path().extension() != ".json") continue;
    // Cluster scenarios (stacksim cluster) and serving scenarios (stacksim
    // serve) are other formats, with their own tests in
    // sim/cluster/cluster_scenario_test.cc and sim/serve/serve_sim_test.cc.
    if (entry.path().filename().string().rfind("cluster-", 0) == 0) continue;
    if (entry.path().filename().string().rfind("serve-", 0) == 0) continue;
    SCOPED_TRACE(entry.path().string());
    try {
      ScenarioConfig s = LoadShipped(entry.path().string());
      EXPECT_FALSE(s.question.empty());
      EXPECT_EQ(s.plan.gpus(), s.gpus);
    } catch (const InputError& e) {
      ADD_FAILURE() << e.what();
    }
    ++count;
  }
  EXPECT_GE(count, 4);
}

TEST(Scenario, OffloadNeedsTheNodesHostResources) {
  nlohmann::json doc = Base();
  doc["plan"] = {{"tp", 1}, {"pp", 1}, {"dp", 8}, {"sharding", "zero1"}, {"offload_optimizer", "host"}};
  ScenarioConfig s = Parse(doc);  // dgx-h100 describes node.host and node.nvme
  EXPECT_EQ(s.plan.offload_optimizer, OffloadTarget::kHost);
  doc["topology"] = "h100-pcie-node";  // no node.host
  InputError e = ParseError(doc);
  EXPECT_EQ(e.file(), "s.json");
  EXPECT_EQ(e.key_path(), "plan.offload_optimizer");
  EXPECT_TRUE(Mentions(e, "node.host"));
  EXPECT_TRUE(Mentions(e, "h100-pcie-node.json"));
  doc["topology"] = "hgx-h200";  // node.host, no node.nvme
  doc["plan"]["offload_optimizer"] = "nvme";
  e = ParseError(doc);
  EXPECT_EQ(e.key_path(), "plan.offload_optimizer");
  EXPECT_TRUE(Mentions(e, "node.nvme"));
  doc["topology"] = "dgx-h100";
  doc["plan"]["sharding"] = "none";
  EXPECT_TRUE(Mentions(ParseError(doc), "sharded optimizer"));
}

}  // namespace
}  // namespace stacksim::config
