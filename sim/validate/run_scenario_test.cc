#include "sim/validate/run_scenario.h"

#include <algorithm>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "sim/config/scenario.h"
#include "sim/validate/plan_choice.h"
#include "tests/coverage_runs.h"
#include "tests/input_error.h"
#include "tests/run_stacksim.h"

namespace stacksim::validate {
namespace {

using testing::CoverageRun;
using testing::kCoverageRuns;

// DeepSeek-V3's architecture as the development files give it.
nlohmann::json DeepSeekV3Model() {
  return {{"name", "DeepSeek-V3 671B (37B active)"}, {"layers", 61}, {"hidden", 7168}, {"heads", 128},
          {"kv_heads", nullptr}, {"ffn_hidden", 18432}, {"vocab", 129280}, {"seq_len", 4096},
          {"activation", "swiglu"},
          {"moe", {{"experts", 256}, {"top_k", 8}, {"expert_ffn_hidden", 2048}, {"shared_experts", 1},
                   {"dense_layers", 3}}},
          {"attention", "mla"}};
}

bool Chose(const RunScenario& r, const std::string& text) {
  for (const std::string& c : r.choices) {
    if (c.find(text) != std::string::npos) return true;
  }
  return false;
}

// Each GPU of the synthetic file runs on its shipped system; GB200's
// gpus_per_node (72) is its NVLink domain, built of 4-GPU trays.
TEST(RunScenario, NewerGpusMapToTheirSystems) {
  RunScenario h200 = ScenarioForRun(CoverageRun("synthetic-h200-hsdp"), kCoverageRuns, "runs[0]");
  EXPECT_EQ(h200.scenario.topology.name, "hgx-h200");
  EXPECT_EQ(h200.scenario.profile.name.empty(), false);
  EXPECT_EQ(h200.scenario.plan.shard_group, 8);  // dp 16, hybrid-sharded in 8s
  RunScenario b200 = ScenarioForRun(CoverageRun("synthetic-b200-tp2"), kCoverageRuns, "runs[1]");
  EXPECT_EQ(b200.scenario.topology.name, "dgx-b200");
  RunScenario gb200 = ScenarioForRun(CoverageRun("synthetic-gb200-nvl72"), kCoverageRuns, "runs[2]");
  EXPECT_EQ(gb200.scenario.topology.name, "gb200-nvl72");
  EXPECT_EQ(gb200.scenario.topology.scale_up.domain_gpus, 72);
  EXPECT_EQ(gb200.scenario.topology.gpus_per_node, 4);
  EXPECT_EQ(gb200.scenario.topology.nics.per_node, 4);  // one 400 Gb/s NIC per GPU

  nlohmann::json odd = CoverageRun("synthetic-gb200-nvl72");
  odd["hardware"]["gpus_per_node"] = 6;  // not whole trays
  EXPECT_EQ(testing::ErrorFrom([&] { ScenarioForRun(odd, kCoverageRuns, "runs[2]"); }).key_path(),
            "runs[2].hardware.gpus_per_node");
}

// torchtitan's Interleaved 1F1B without split points: two virtual stages per
// rank (pipelining_utils.py generate_split_points at 9dec370); 126 layers
// over 16 stages as 7, 14 x 8, 7. Its 1F1B keeps one stage per rank.
TEST(RunScenario, TorchtitanInterleavedRunsTwoStagesPerRank) {
  nlohmann::json run = CoverageRun("synthetic-h200-hsdp");
  run["model"]["layers"] = 126;
  run["plan"]["pp"] = 2;
  run["plan"]["dp"] = run["plan"]["dp"].get<int>() / 2;
  run["plan"]["shard_group"] = 8;
  run["plan"]["vp"] = nullptr;
  run["plan"]["micro_batch"] = nullptr;
  run["framework"] = "torchtitan (FSDP+TP+PP interleaved 1F1B + compile + Float8 + AsyncTP)";
  RunScenario r = ScenarioForRun(run, kCoverageRuns, "runs[0]");
  EXPECT_EQ(r.scenario.plan.vp, 2);
  EXPECT_EQ(r.scenario.plan.schedule, config::PipelineScheduleKind::kInterleaved);
  EXPECT_TRUE(r.scenario.plan.uneven_stages);
  EXPECT_TRUE(Chose(r, "vp=2 (the framework's default interleaved 1F1B stages per rank)"));
  run["framework"] = "torchtitan (FSDP+TP+PP 1F1B + compile + Float8 + AsyncTP)";
  EXPECT_EQ(ScenarioForRun(run, kCoverageRuns, "runs[0]").scenario.plan.vp, 1);
}

// A MaxText run's FSDP gathers are pipelined (frameworks/maxtext.json) and
// the choices say so; a Megatron-Core ZeRO-3 run keeps per-layer prefetch.
TEST(RunScenario, MaxTextGathersArePipelined) {
  nlohmann::json run = CoverageRun("synthetic-h200-hsdp");
  RunScenario megatron = ScenarioForRun(run, kCoverageRuns, "runs[0]");
  EXPECT_EQ(megatron.scenario.plan.zero3_gather, config::Zero3Gather::kPrefetchPerLayer);
  EXPECT_FALSE(Chose(megatron, "FSDP gathers pipelined"));
  run["framework"] = "MaxText (JAX) 25.01";
  RunScenario maxtext = ScenarioForRun(run, kCoverageRuns, "runs[0]");
  EXPECT_EQ(maxtext.scenario.plan.zero3_gather, config::Zero3Gather::kPipelined);
  EXPECT_TRUE(Chose(maxtext, "FSDP gathers pipelined"));
}

// Megatron-LM of 2023 all-gathers the distributed optimizer's parameters
// after the step; Megatron-Core's performance runs overlap it. The plan and
// the choices say which.
TEST(RunScenario, DistributedOptimizerGatherFollowsTheFramework) {
  nlohmann::json run = CoverageRun("synthetic-h200-hsdp");
  run["plan"]["sharding"] = "zero1";
  run["plan"]["shard_group"] = nullptr;
  RunScenario core = ScenarioForRun(run, kCoverageRuns, "runs[0]");
  EXPECT_TRUE(core.scenario.plan.overlap_param_gather);
  EXPECT_FALSE(Chose(core, "parameter all-gather after the optimizer step"));
  run["framework"] = "Megatron-LM commit 285068c8 (baseline)";
  RunScenario old = ScenarioForRun(run, kCoverageRuns, "runs[0]");
  EXPECT_FALSE(old.scenario.plan.overlap_param_gather);
  EXPECT_TRUE(Chose(old, "parameter all-gather after the optimizer step (no overlap)"));
}

// A run trained with DeepSeek-V3's framework gets its schedule, dispatch,
// communication SMs and recomputed modules from frameworks/hai-llm.json.
TEST(RunScenario, HaiLlmRunsGetDualPipe) {
  nlohmann::json run = CoverageRun("synthetic-b200-tp2");
  run["model"] = DeepSeekV3Model();
  run["framework"] = "HAI-LLM (DualPipe, custom all-to-all)";
  run["plan"]["tp"] = 1;
  run["plan"]["pp"] = 2;
  run["plan"]["dp"] = run["hardware"]["gpus"].get<int>() / 2;
  run["plan"]["ep"] = 2;
  run["plan"]["recompute"] = "selective";
  RunScenario r = ScenarioForRun(run, kCoverageRuns, "runs[1]");
  const config::PlanConfig& p = r.scenario.plan;
  EXPECT_EQ(p.schedule, config::PipelineScheduleKind::kDualPipe);
  EXPECT_EQ(p.vp, 1);
  EXPECT_EQ(p.dispatcher, config::MoeDispatcher::kHierarchical);
  EXPECT_EQ(p.comm_sms, 20);
  EXPECT_TRUE(p.recompute_modules.Has(config::RecomputeModule::kMlaUpProj));
  EXPECT_FALSE(p.recompute_modules.Has(config::RecomputeModule::kCoreAttn));
  EXPECT_TRUE(Chose(r, "schedule=dualpipe"));
  EXPECT_TRUE(Chose(r, "moe_dispatcher=hierarchical"));
  EXPECT_TRUE(Chose(r, "comm_sms=20"));
}

// A Megatron-Bridge run of DeepSeek-V3 takes the recipe's dispatcher; the
// same model under Megatron-LM's own command line (no such recipe) keeps
// the all-to-all one.
TEST(RunScenario, MegatronBridgeDeepSeekV3TakesTheRecipesDispatcher) {
  nlohmann::json run = CoverageRun("synthetic-b200-tp2");
  run["model"] = DeepSeekV3Model();
  run["model"]["name"] = "DeepSeekV3";
  run["framework"] = "NeMo 25.09 container / Megatron-Bridge (Megatron-Core)";
  run["plan"]["tp"] = 1;
  run["plan"]["pp"] = 2;
  run["plan"]["dp"] = run["hardware"]["gpus"].get<int>() / 2;
  run["plan"]["ep"] = 2;
  RunScenario mb = ScenarioForRun(run, kCoverageRuns, "runs[1]");
  EXPECT_EQ(mb.scenario.plan.dispatcher, config::MoeDispatcher::kHierarchical);
  EXPECT_TRUE(Chose(mb, "moe_dispatcher=hierarchical (the framework's recipe for DeepSeekV3)"));
  // NeMo 2.x's recipe: DeepEP with whole experts per rank (NeMo's default
  // would be etp = tp, which the hierarchical dispatcher does not model).
  run["framework"] = "NeMo 25.04 (Megatron-Core)";
  run["plan"]["tp"] = 2;
  run["plan"]["dp"] = run["hardware"]["gpus"].get<int>() / 4;
  RunScenario nemo = ScenarioForRun(run, kCoverageRuns, "runs[1]");
  EXPECT_EQ(nemo.scenario.plan.dispatcher, config::MoeDispatcher::kHierarchical);
  EXPECT_EQ(nemo.scenario.plan.etp, 1);
  EXPECT_FALSE(Chose(nemo, "etp="));
  run["plan"]["tp"] = 1;
  run["plan"]["dp"] = run["hardware"]["gpus"].get<int>() / 2;
  run["framework"] = "Megatron-LM (Megatron-Core, TE)";
  RunScenario megatron = ScenarioForRun(run, kCoverageRuns, "runs[1]");
  EXPECT_EQ(megatron.scenario.plan.dispatcher, config::MoeDispatcher::kAllToAll);
  EXPECT_FALSE(Chose(megatron, "moe_dispatcher="));
}

// Llama 4 Maverick as a run's model block states it (experts on every layer
// from dense_layers on, as far as the schema says): the published config
// adds MoE every second layer and chunked attention on 36 of 48 layers.
TEST(RunScenario, Llama4TakesItsLayoutFromThePublishedConfig) {
  nlohmann::json run = CoverageRun("synthetic-b200-tp2");
  run["model"] = {{"name", "Llama-4-Maverick"}, {"layers", 48}, {"hidden", 5120}, {"heads", 40}, {"kv_heads", 8},
                  {"ffn_hidden", 16384}, {"vocab", 202048}, {"seq_len", 8192}, {"activation", "swiglu"},
                  {"moe", {{"experts", 128}, {"top_k", 1}, {"expert_ffn_hidden", 8192}, {"shared_experts", 1}}},
                  {"attention", "mha-gqa"}};
  run["plan"]["tp"] = 8;
  run["plan"]["dp"] = run["hardware"]["gpus"].get<int>() / 8;
  run["plan"]["ep"] = 2;
  RunScenario r = ScenarioForRun(run, kCoverageRuns, "runs[1]");
  const config::ModelConfig& m = r.scenario.model;
  EXPECT_EQ(m.moe_layer_step, 2);
  EXPECT_EQ(m.MoeLayerCount(), 24);
  EXPECT_EQ(m.attention_chunk, 8192);
  EXPECT_EQ(m.chunked_attention_layers, 36);
  EXPECT_TRUE(Chose(r, "MoE every 2 layers from Llama-4-Maverick"));
  EXPECT_TRUE(Chose(r, "attention_chunk=8192"));
  EXPECT_NEAR(m.ParameterCount() / 400e9, 1.0, 0.01);
}

// A shape the source leaves null is the shipped published config's of the
// same model (Llama 3 70B: GQA with 8 KV heads, not MHA), said in the
// choices; with no config of that name it stays an error at the field. A
// head width the run gives wins over the published one; run-level notes are
// accepted.
TEST(RunScenario, NullShapesComeFromThePublishedConfigOfTheSameModel) {
  nlohmann::json run = CoverageRun("synthetic-b200-tp2");
  run["model"] = {{"name", "LLAMA3_70B"}, {"layers", nullptr}, {"hidden", 8192}, {"heads", 64},
                  {"kv_heads", nullptr}, {"ffn_hidden", nullptr}, {"vocab", nullptr}, {"seq_len", 8192},
                  {"activation", "swiglu"}, {"moe", nullptr}, {"attention", "mha-gqa"}};
  run["plan"]["tp"] = 8;
  run["plan"]["dp"] = run["hardware"]["gpus"].get<int>() / 8;
  run["notes"] = "a source's remark";
  RunScenario r = ScenarioForRun(run, kCoverageRuns, "runs[1]");
  const config::ModelConfig& m = r.scenario.model;
  EXPECT_EQ(m.num_layers, 80);
  EXPECT_EQ(m.num_kv_heads, 8);
  EXPECT_EQ(m.intermediate_size, 28672);
  EXPECT_EQ(m.vocab_size, 128256);
  EXPECT_TRUE(Chose(r, "layers=80 from Llama 3 70B's published config"));
  EXPECT_TRUE(Chose(r, "kv_heads=8 from Llama 3 70B's published config"));

  nlohmann::json gpt_oss = CoverageRun("synthetic-b200-tp2");
  gpt_oss["model"] = {{"name", "GPT-OSS-120B"}, {"layers", 36}, {"hidden", 2880}, {"heads", 64}, {"kv_heads", 8},
                      {"ffn_hidden", 2880}, {"vocab", 201088}, {"seq_len", 4096}, {"activation", "swiglu"},
                      {"moe", {{"experts", 128}, {"top_k", 4}, {"expert_ffn_hidden", 2880}}}, {"attention", "mha-gqa"}};
  gpt_oss["plan"]["tp"] = 8;
  gpt_oss["plan"]["dp"] = gpt_oss["hardware"]["gpus"].get<int>() / 8;
  EXPECT_EQ(ScenarioForRun(gpt_oss, kCoverageRuns, "runs[1]").scenario.model.head_dim, 64);  // published
  gpt_oss["model"]["head_dim"] = 96;
  EXPECT_EQ(ScenarioForRun(gpt_oss, kCoverageRuns, "runs[1]").scenario.model.head_dim, 96);  // the run's own

  run["model"]["name"] = "Zorblax 70B";  // no published config of that name
  EXPECT_EQ(testing::ErrorFrom([&] { ScenarioForRun(run, kCoverageRuns, "runs[1]"); }).key_path(),
            "runs[1].model.layers");
}

// A null attention kind, activation or expert block is the published
// config's too, said in the choices ("moe": null of a model whose config
// routes experts is read as not given); with no config of that name a null
// attention stays an error at its field.
TEST(RunScenario, NullArchitectureComesFromThePublishedConfig) {
  nlohmann::json run = CoverageRun("synthetic-b200-tp2");
  run["model"] = {{"name", "Mixtral 8x7B"}, {"layers", nullptr}, {"hidden", nullptr}, {"heads", nullptr},
                  {"kv_heads", nullptr}, {"ffn_hidden", nullptr}, {"vocab", nullptr}, {"seq_len", 4096},
                  {"activation", nullptr}, {"moe", nullptr}, {"attention", nullptr}};
  run["plan"]["tp"] = 8;
  run["plan"]["dp"] = run["hardware"]["gpus"].get<int>() / 8;
  RunScenario r = ScenarioForRun(run, kCoverageRuns, "runs[1]");
  const config::ModelConfig& m = r.scenario.model;
  EXPECT_EQ(m.activation, config::Activation::kSwiglu);
  EXPECT_EQ(m.num_experts, 8);
  EXPECT_EQ(m.experts_per_token, 2);
  EXPECT_EQ(m.moe_intermediate_size, 14336);
  EXPECT_FALSE(m.is_mla());
  EXPECT_TRUE(Chose(r, "attention=mha-gqa from Mixtral 8x7B's published config"));
  EXPECT_TRUE(Chose(r, "activation=swiglu from Mixtral 8x7B's published config"));
  EXPECT_TRUE(Chose(r, "experts from Mixtral 8x7B's published config"));

  nlohmann::json v3 = run;
  v3["model"]["name"] = "DeepSeek-V3";
  v3["plan"]["ep"] = 8;
  RunScenario d = ScenarioForRun(v3, kCoverageRuns, "runs[1]");
  EXPECT_TRUE(d.scenario.model.is_mla());
  EXPECT_EQ(d.scenario.model.num_experts, 256);
  EXPECT_TRUE(Chose(d, "attention=mla from DeepSeek-V3's published config"));

  run["model"] = DeepSeekV3Model();
  run["model"]["name"] = "Zorblax 70B";  // no published config of that name
  run["model"]["attention"] = nullptr;
  EXPECT_EQ(testing::ErrorFrom([&] { ScenarioForRun(run, kCoverageRuns, "runs[1]"); }).key_path(),
            "runs[1].model.attention");
}

// A Blackwell run in MXFP8 is simulated as FP8 GEMMs, and says so; a
// precision the simulator has no rate for stays an error at the field.
TEST(RunScenario, MxFp8RunsAtTheFp8Rate) {
  nlohmann::json run = CoverageRun("synthetic-b200-tp2");
  run["plan"]["precision"] = "mxfp8";
  RunScenario r = ScenarioForRun(run, kCoverageRuns, "runs[1]");
  EXPECT_EQ(r.scenario.plan.precision, config::Precision::kFp8);
  EXPECT_TRUE(Chose(r, "precision mxfp8 read as fp8"));
  run["plan"]["precision"] = "nvfp4";
  EXPECT_EQ(testing::ErrorFrom([&] { ScenarioForRun(run, kCoverageRuns, "runs[1]"); }).key_path(),
            "runs[1].plan.precision");
}

// The schema gives no MLA ranks: they come from the model's published
// config.json (models/deepseek-v3.json, ...); an unknown MLA model is refused.
TEST(RunScenario, MlaRanksComeFromTheModelFamily) {
  nlohmann::json run = CoverageRun("synthetic-b200-tp2");
  run["model"] = DeepSeekV3Model();
  RunScenario r = ScenarioForRun(run, kCoverageRuns, "runs[1]");
  const config::ModelConfig& m = r.scenario.model;
  EXPECT_EQ(m.q_lora_rank, 1536);
  EXPECT_EQ(m.kv_lora_rank, 512);
  EXPECT_EQ(m.qk_rope_head_dim, 64);
  EXPECT_EQ(m.qk_nope_head_dim, 128);
  EXPECT_EQ(m.v_head_dim, 128);
  EXPECT_EQ(m.head_dim, 192);
  EXPECT_TRUE(m.is_mla());
  EXPECT_TRUE(Chose(r, "MLA ranks from DeepSeek-V3")) << r.choices.size();
  // DeepSeek-V3's config has one MTP module, trained with the model.
  EXPECT_EQ(m.mtp_modules, 1);
  EXPECT_TRUE(Chose(r, "1 MTP module(s)"));

  // Kimi-K2 (models/kimi-k2.json): the same ranks over 64 heads, no MTP.
  run["model"]["name"] = "Kimi K2";
  InputError e = testing::ErrorFrom([&] { ScenarioForRun(run, kCoverageRuns, "runs[1]"); });
  EXPECT_EQ(e.key_path(), "runs[1].model.hidden");  // 128 heads are not Kimi-K2's 64
  run["model"]["heads"] = 64;
  run["model"]["moe"]["experts"] = 384;
  run["model"]["moe"]["dense_layers"] = 1;
  run["model"]["vocab"] = 163840;
  RunScenario kimi = ScenarioForRun(run, kCoverageRuns, "runs[1]");
  EXPECT_EQ(kimi.scenario.model.kv_lora_rank, 512);
  EXPECT_EQ(kimi.scenario.model.mtp_modules, 0);
  EXPECT_TRUE(Chose(kimi, "MLA ranks from Kimi-K2"));
  EXPECT_FALSE(Chose(kimi, "MTP module"));

  // DeepSeek-V2-Lite (models/deepseek-v2-lite.json): the longest shipped
  // name that begins the run's ("DeepSeek-V2" begins it too), no query
  // compression.
  run["model"] = {{"name", "DeepSeek-V2-Lite 16B"}, {"layers", 27}, {"hidden", 2048}, {"heads", 16},
                  {"kv_heads", 16}, {"ffn_hidden", 10944}, {"vocab", 102400}, {"seq_len", 4096},
                  {"activation", "swiglu"}, {"attention", "mla"},
                  {"moe", {{"experts", 64}, {"top_k", 6}, {"expert_ffn_hidden", 1408}, {"shared_experts", 2},
                           {"dense_layers", 1}}}};
  RunScenario lite = ScenarioForRun(run, kCoverageRuns, "runs[1]");
  EXPECT_EQ(lite.scenario.model.q_lora_rank, 0);
  EXPECT_EQ(lite.scenario.model.kv_lora_rank, 512);
  EXPECT_TRUE(Chose(lite, "MLA ranks from DeepSeek-V2-Lite"));

  run["model"]["name"] = "Some MLA model";
  e = testing::ErrorFrom([&] { ScenarioForRun(run, kCoverageRuns, "runs[1]"); });
  EXPECT_EQ(e.key_path(), "runs[1].model.name");
  EXPECT_EQ(e.file(), kCoverageRuns);
}

// A run that does not state its recomputation gets the cheapest setting that
// fits. Megatron-Bridge's guide widens the selective modules before full
// recomputation (frameworks/megatron-bridge.json recompute_escalation):
// DeepSeek-V3 on 1,024 H100s (the recipe's tp2 pp8 vp4 ep64) does not fit
// with core_attn alone but does with MLA's up-projections, the experts'
// activation and the norms recomputed. NeMo 24.07 has no such guide: full.
TEST(RunScenario, MegatronBridgeWidensSelectiveRecomputeBeforeFull) {
  nlohmann::json run = CoverageRun("synthetic-b200-tp2");
  run["model"] = DeepSeekV3Model();
  run["hardware"] = {{"gpu", "h100-sxm-80gb"}, {"gpus", 1024}, {"gpus_per_node", 8}, {"nic_gbps_per_gpu", 400}};
  run["plan"] = {{"tp", 2}, {"pp", 8}, {"dp", 64}, {"cp", 1}, {"ep", 64}, {"vp", 4}, {"sequence_parallel", nullptr},
                 {"micro_batch", 1}, {"global_batch", 8192}, {"recompute", nullptr}, {"precision", "fp8"},
                 {"sharding", "zero1"}, {"shard_group", nullptr}};
  run["framework"] = "NeMo 25.09 container / Megatron-Bridge (Megatron-Core)";
  RunScenario r = ScenarioForRun(run, kCoverageRuns, "runs[1]");
  ASSERT_EQ(r.recompute_escalation.size(), 3u);
  simulate::SimulationResult result;
  std::vector<std::string> choices;
  FillOpenFields(r, &result, &choices);
  const config::PlanConfig& p = r.scenario.plan;
  EXPECT_EQ(p.recompute, config::Recompute::kSelective);
  EXPECT_TRUE(p.recompute_modules.Has(config::RecomputeModule::kMoeAct));
  EXPECT_FALSE(p.recompute_modules.Has(config::RecomputeModule::kMoe));
  EXPECT_TRUE(FitsWithHeadroom(r.scenario));
  bool said = false;
  for (const std::string& c : choices) said = said || c.find("recompute=selective [core_attn, layernorm") == 0;
  EXPECT_TRUE(said);

  run["framework"] = "NeMo 24.07 (Megatron-Core)";
  RunScenario older = ScenarioForRun(run, kCoverageRuns, "runs[1]");
  EXPECT_TRUE(older.recompute_escalation.empty());
  FillOpenFields(older, &result, &choices);
  EXPECT_EQ(older.scenario.plan.recompute, config::Recompute::kFull);
}

// Megatron-Bridge's H100 presets for Qwen3-235B-A22B overlap the expert
// all-to-alls with the other micro-batch's compute (moe_a2a_overlap, every
// release from 25.11 to 26.04); its B200 presets differ between releases, so
// the recipe names the GPU. Megatron-Core needs virtual stages under pp: a
// plan without them runs without the overlap, and says so.
TEST(RunScenario, MegatronBridgeOverlapsQwen3AllToAllsOnH100Only) {
  nlohmann::json run = CoverageRun("synthetic-b200-tp2");
  run["model"] = {{"name", "Qwen3_235B_a22B"}, {"layers", 94}, {"hidden", 4096}, {"heads", 64}, {"kv_heads", 4},
                  {"ffn_hidden", 12288}, {"vocab", 151936}, {"seq_len", 4096}, {"activation", "swiglu"},
                  {"moe", {{"experts", 128}, {"top_k", 8}, {"expert_ffn_hidden", 1536}, {"shared_experts", 0},
                           {"dense_layers", 0}}},
                  {"attention", "mha-gqa"}};
  run["hardware"] = {{"gpu", "h100-sxm-80gb"}, {"gpus", 256}, {"gpus_per_node", 8}, {"nic_gbps_per_gpu", 400}};
  run["plan"] = {{"tp", 2}, {"pp", 8}, {"dp", 16}, {"cp", 1}, {"ep", 32}, {"vp", 4}, {"sequence_parallel", nullptr},
                 {"micro_batch", 1}, {"global_batch", 2048}, {"recompute", "none"}, {"precision", "fp8"},
                 {"sharding", "zero1"}, {"shard_group", nullptr}};
  run["framework"] = "NeMo 25.11 container / Megatron-Bridge (Megatron-Core)";
  auto said = [](const RunScenario& r, const std::string& text) {
    return std::any_of(r.choices.begin(), r.choices.end(),
                       [&](const std::string& c) { return c.find(text) != std::string::npos; });
  };
  RunScenario h100 = ScenarioForRun(run, kCoverageRuns, "runs[1]");
  EXPECT_TRUE(h100.recipe_a2a_overlap);
  EXPECT_TRUE(h100.scenario.plan.moe_a2a_overlap);
  EXPECT_TRUE(said(h100, "moe_a2a_overlap (the framework's recipe for Qwen3_235B_a22B)"));
  EXPECT_NO_THROW(config::ValidatePlan(h100.scenario, kCoverageRuns));

  run["plan"]["vp"] = 1;
  RunScenario no_vp = ScenarioForRun(run, kCoverageRuns, "runs[1]");
  EXPECT_FALSE(no_vp.scenario.plan.moe_a2a_overlap);
  EXPECT_TRUE(said(no_vp, "not with this schedule"));
  EXPECT_NO_THROW(config::ValidatePlan(no_vp.scenario, kCoverageRuns));

  // Left open, the candidates with virtual stages take the overlap.
  run["plan"]["vp"] = nullptr;
  RunScenario open = ScenarioForRun(run, kCoverageRuns, "runs[1]");
  simulate::SimulationResult result;
  std::vector<std::string> choices;
  FillOpenFields(open, &result, &choices);
  EXPECT_EQ(open.scenario.plan.moe_a2a_overlap, open.scenario.plan.vp > 1);

  run["plan"]["vp"] = 4;
  run["hardware"]["gpu"] = "b200";
  EXPECT_FALSE(ScenarioForRun(run, kCoverageRuns, "runs[1]").scenario.plan.moe_a2a_overlap);
  run["hardware"]["gpu"] = "h100-sxm-80gb";
  run["framework"] = "Megatron-LM (Megatron-Core, TE)";
  EXPECT_FALSE(ScenarioForRun(run, kCoverageRuns, "runs[1]").scenario.plan.moe_a2a_overlap);
}

// Every run of the synthetic file gets a prediction from the command.
TEST(RunScenario, SyntheticGpuRunsArePredicted) {
  testing::CmdResult r = testing::Stacksim("validate " + kCoverageRuns + " --format json");
  ASSERT_EQ(r.status, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.at("runs").size(), 3u);
  for (const auto& run : j.at("runs")) {
    EXPECT_FALSE(run.contains("error")) << run.dump();
    EXPECT_GT(run.value("predicted_iteration_s", 0.0), 0.0) << run.dump();
  }
}

}  // namespace
// A small MoE model run by Megatron-LM (expert TP = tp by default, sequence
// parallelism off by default) on 64 H100 at tp 4, dp 16.
nlohmann::json MegatronLmMoeRun() {
  nlohmann::json run = CoverageRun("synthetic-b200-tp2");
  run["model"]["moe"] = {{"experts", 64}, {"top_k", 2}, {"expert_ffn_hidden", 2048}, {"shared_experts", 0},
                         {"dense_layers", 0}};
  run["hardware"] = {{"gpu", "h100-sxm-80gb"}, {"gpus", 64}, {"gpus_per_node", 8}, {"nic_gbps_per_gpu", 400}};
  run["plan"]["tp"] = 4;
  run["plan"]["dp"] = 16;
  run["plan"]["global_batch"] = 64;
  run["framework"] = "Megatron-LM (Megatron-Core 0.12)";
  return run;
}

bool Said(const RunScenario& r, const std::string& text) {
  return std::any_of(r.choices.begin(), r.choices.end(),
                     [&](const std::string& c) { return c.find(text) != std::string::npos; });
}

// The run ran, so its ep fitted its expert TP: ep 4 folds with the default
// expert TP (= tp 4) over tp x dp = 64 ranks; ep 32 cannot (32 x 4 = 128),
// so the run must have set expert TP 1, and the choice says why.
TEST(RunScenario, AnEpTheDefaultExpertTpCannotFoldRunsAtExpertTpOne) {
  nlohmann::json run = MegatronLmMoeRun();
  run["plan"]["ep"] = 4;
  RunScenario folded = ScenarioForRun(run, kCoverageRuns, "runs[1]");
  EXPECT_EQ(folded.scenario.plan.etp, 4);
  EXPECT_TRUE(Said(folded, "etp=4 (expert tensor parallelism = tp, the framework's default)"));
  run["plan"]["ep"] = 32;
  RunScenario wide = ScenarioForRun(run, kCoverageRuns, "runs[1]");
  EXPECT_EQ(wide.scenario.plan.etp, 1);
  EXPECT_TRUE(Said(wide, "which does not divide tp x dp x cp = 64: the run's ep needs expert tensor parallelism 1"));
  EXPECT_NO_THROW(config::ValidatePlan(wide.scenario, kCoverageRuns));
}

// A MoE model under tensor parallelism is routed from each TP rank's
// sequence shard (Megatron-LM refuses MoE with tp > 1 without sequence
// parallelism): an open sequence_parallel is on even where the framework's
// default is off; one the run states off is still refused.
TEST(RunScenario, AMoeModelUnderTpRunsSequenceParallel) {
  nlohmann::json run = MegatronLmMoeRun();
  run["plan"]["ep"] = 4;
  RunScenario open = ScenarioForRun(run, kCoverageRuns, "runs[1]");
  EXPECT_TRUE(open.scenario.plan.sequence_parallel);
  EXPECT_TRUE(Said(open, "sequence_parallel=on (a MoE layer under tp > 1 is routed from each TP rank's sequence shard"));
  EXPECT_NO_THROW(config::ValidatePlan(open.scenario, kCoverageRuns));
  // A dense model keeps the framework's default.
  nlohmann::json dense = MegatronLmMoeRun();
  dense["model"]["moe"] = nullptr;
  EXPECT_FALSE(ScenarioForRun(dense, kCoverageRuns, "runs[1]").scenario.plan.sequence_parallel);
  run["plan"]["sequence_parallel"] = false;
  RunScenario off = ScenarioForRun(run, kCoverageRuns, "runs[1]");
  EXPECT_FALSE(off.scenario.plan.sequence_parallel);
  EXPECT_EQ(testing::ErrorFrom([&] { config::ValidatePlan(off.scenario, kCoverageRuns); }).key_path(),
            "plan.sequence_parallel");
}

// A run on the synthetic B200s at tp 2, pp 4, dp 2, one sequence a
// micro-batch; the tests set vp and the batch.
nlohmann::json Tp2Pp4Dp2Run() {
  nlohmann::json run = CoverageRun("synthetic-b200-tp2");
  run["plan"]["tp"] = 2;
  run["plan"]["pp"] = 4;
  run["plan"]["dp"] = 2;
  run["plan"]["micro_batch"] = 1;
  return run;
}

// A stated vp whose micro-batches are no multiple of pp (6 over pp 4): the
// run ran, so Megatron-Core's interleaved schedule grouped them
// (microbatch_group_size_per_vp_stage; the default group, pp, refuses 6):
// the smallest valid group, 6, and the choice says so. A scenario naming
// that plan without a group is still an error.
TEST(RunScenario, AStatedVpWithRaggedMicroBatchesRunsInGroups) {
  nlohmann::json run = Tp2Pp4Dp2Run();
  run["plan"]["vp"] = 2;
  run["plan"]["global_batch"] = 12;  // 6 micro-batches per pipeline
  RunScenario rs = ScenarioForRun(run, kCoverageRuns, "runs[1]");
  EXPECT_THROW(config::ValidatePlan(rs.scenario, kCoverageRuns), InputError);
  simulate::SimulationResult r;
  std::vector<std::string> choices;
  FillOpenFields(rs, &r, &choices);
  EXPECT_GT(r.iteration.seconds(), 0);
  EXPECT_TRUE(std::any_of(choices.begin(), choices.end(), [](const std::string& c) {
    return c.find("microbatch_group=6 (6 micro-batches are no multiple of pp 4") == 0;
  }));
  // Whole rounds need no groups.
  run["plan"]["global_batch"] = 16;
  RunScenario whole = ScenarioForRun(run, kCoverageRuns, "runs[1]");
  choices.clear();
  FillOpenFields(whole, &r, &choices);
  EXPECT_TRUE(std::none_of(choices.begin(), choices.end(),
                           [](const std::string& c) { return c.find("microbatch_group") != std::string::npos; }));
}

// A step of many micro-batches is priced from two shorter ones past the
// warm-up (plan_choice.cc SimulateStep): the steady state repeats, so the
// time is the whole simulation's, 1F1B and interleaved, with a ragged last
// round and in micro-batch groups.
TEST(RunScenario, ALongStepIsExtrapolatedFromItsSteadyState) {
  nlohmann::json run = Tp2Pp4Dp2Run();
  run["plan"]["recompute"] = "none";
  struct Case {
    int vp;
    int64_t micro_batches;
  };
  for (const Case& c : {Case{1, 301}, Case{2, 300}, Case{2, 302}}) {
    run["plan"]["vp"] = c.vp;
    run["plan"]["global_batch"] = 2 * c.micro_batches;
    RunScenario rs = ScenarioForRun(run, kCoverageRuns, "runs[1]");
    simulate::SimulationResult r;
    std::vector<std::string> choices;
    FillOpenFields(rs, &r, &choices);
    ASSERT_EQ(rs.scenario.plan.micro_batches(), c.micro_batches);
    simulate::Options o;
    o.simulate_if_out_of_memory = true;
    const simulate::SimulationResult whole = simulate::Simulate(rs.scenario, o);
    EXPECT_NEAR(r.iteration.seconds(), whole.iteration.seconds(), 1e-6 * whole.iteration.seconds())
        << "vp " << c.vp << ", " << c.micro_batches << " micro-batches";
    EXPECT_EQ(r.scenario.plan.global_batch, rs.scenario.plan.global_batch);
    EXPECT_EQ(r.out_of_memory, whole.out_of_memory);
  }
}

// Context parallelism needs flash-style kernels: a cp > 1 run of a
// framework whose attention is unfused by default (Megatron-LM 2021) ran
// FlashAttention-2's, and the choice says so; cp 1 keeps the default.
TEST(RunScenario, AContextParallelRunOfAnUnfusedFrameworkRunsFlashKernels) {
  nlohmann::json run = CoverageRun("synthetic-b200-tp2");
  run["framework"] = "Megatron-LM (2021)";
  RunScenario plain = ScenarioForRun(run, kCoverageRuns, "runs[1]");
  EXPECT_EQ(plain.scenario.plan.attention, config::AttentionImpl::kUnfused);
  run["plan"]["cp"] = 2;
  run["plan"]["dp"] = 4;
  RunScenario cp = ScenarioForRun(run, kCoverageRuns, "runs[1]");
  EXPECT_EQ(cp.scenario.plan.attention, config::AttentionImpl::kFlash2);
  EXPECT_TRUE(Said(cp, "attention=flash2 (context parallelism runs on flash kernels"));
  EXPECT_NO_THROW(config::ValidatePlan(cp.scenario, kCoverageRuns));
}

}  // namespace stacksim::validate
