#include "sim/config/framework.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "sim/config/scenario.h"
#include "tests/input_error.h"

namespace stacksim::config {
namespace {

using testing::ErrorFrom;

const FrameworkProfile& Match(const std::string& text) {
  return MatchFramework(ShippedFrameworks(), text, "runs.json", "runs[0].framework");
}

TEST(Framework, EveryShippedFileParsesWithASourcePerFact) {
  // LoadFrameworkFile requires {"value", "source"} for every fact; a file
  // that lost one would throw here.
  const auto& all = ShippedFrameworks();
  EXPECT_GE(all.size(), 10u);
  for (const auto& f : all) {
    EXPECT_FALSE(f.title.empty()) << f.file;
    EXPECT_FALSE(f.matches.empty()) << f.file;
  }
}

TEST(Framework, TheMostSpecificMatchWins) {
  EXPECT_EQ(Match("NeMo 24.07 (Megatron-Core)").name, "nemo");
  EXPECT_EQ(Match("NeMo 26.04.01 container / Megatron-Bridge (Megatron-Core)").name, "megatron-bridge");
  EXPECT_EQ(Match("Megatron-Core r0.8.0").name, "megatron-core");
  EXPECT_EQ(Match("torchtitan (FSDP)").name, "torchtitan");
  EXPECT_EQ(Match("torchtitan (FSDP + torch.compile + Float8)").name, "torchtitan-compile");
  EXPECT_EQ(Match("Megatron-LM (2021)").name, "megatron-lm-2021");
  EXPECT_EQ(Match("Megatron-LM + DeepSpeed ZeRO-3").name, "megatron-deepspeed");
  EXPECT_EQ(Match("Composer + llm-foundry (PyTorch FSDP), MosaicML platform").name, "llm-foundry");
}

TEST(Framework, CaseIsIgnoredWhenNothingMatchesAsWritten) {
  EXPECT_EQ(Match("TorchTitan (FSDP2 + torch.compile)").name, "torchtitan-compile");
  EXPECT_EQ(Match("maxtext 25.05").name, "maxtext");
  EXPECT_FALSE(FindFramework(ShippedFrameworks(), "Nemo 25.02", "f", "k").fallback);
}

TEST(Framework, FallbackEntriesCountOnlyWhenNoProfileMatches) {
  // A release the profiles do not name falls back to its family's profile,
  // and the choice says so.
  FrameworkMatch m = FindFramework(ShippedFrameworks(), "Megatron-LM core_r0.13.0", "f", "k");
  EXPECT_EQ(m.profile->name, "megatron-core");
  EXPECT_TRUE(m.fallback);
  EXPECT_NE(m.Describe("Megatron-LM core_r0.13.0").find("fallback entry 'Megatron-LM'"), std::string::npos);
  EXPECT_EQ(Match("Megatron-LM v2.6 (2022)").name, "megatron-lm-2022");
  EXPECT_EQ(Match("Megatron-LM (2021)").name, "megatron-lm-2021");
  EXPECT_EQ(Match("Hugging Face Accelerate + PyTorch FSDP").name, "pytorch-fsdp");
  // Other XLA-compiled JAX trainers take MaxText's compile-time facts.
  EXPECT_EQ(Match("Levanter (JAX)").name, "maxtext");
  EXPECT_EQ(Match("PaxML 24.04").name, "maxtext");
  EXPECT_EQ(Match("MaxText (JAX) 25.01").name, "maxtext");
  EXPECT_FALSE(FindFramework(ShippedFrameworks(), "MaxText (JAX) 25.01", "f", "k").fallback);
  // A profile's own entry beats every fallback, however long.
  EXPECT_EQ(Match("Composer + llm-foundry (PyTorch FSDP), MosaicML platform").name, "llm-foundry");
  EXPECT_EQ(Match("MegaScale (Megatron-LM + parallel transformer block)").name, "megascale");
  EXPECT_EQ(Match("metaseq (FairScale FSDP + Megatron tensor parallelism)").name, "metaseq");
  EXPECT_FALSE(FindFramework(ShippedFrameworks(), "Megatron-LM (2022)", "f", "k").fallback);
}

TEST(Framework, AnUnknownFrameworkIsStillAnError) {
  InputError e = ErrorFrom([&] { Match("Zorblax trainer 0.1"); });
  EXPECT_EQ(e.key_path(), "runs[0].framework");
  EXPECT_NE(std::string(e.what()).find("no framework profile matches 'Zorblax trainer 0.1'"), std::string::npos);
  EXPECT_FALSE(TryFindFramework(ShippedFrameworks(), "Zorblax trainer 0.1", "f", "k").has_value());
}

// The model parallelism a framework offers bounds validate's choice of an
// open layout: FSDP stacks shard data only, metaseq adds tensor parallelism.
TEST(Framework, ModelParallelismItOffers) {
  const FrameworkProfile& fsdp = Match("PyTorch FSDP");
  EXPECT_FALSE(fsdp.offers_tp);
  EXPECT_FALSE(fsdp.offers_pp);
  const FrameworkProfile& metaseq = Match("metaseq (FairScale FSDP + Megatron tensor parallelism)");
  EXPECT_TRUE(metaseq.offers_tp);
  EXPECT_FALSE(metaseq.offers_pp);
  const FrameworkProfile& mcore = Match("Megatron-Core r0.8.0");  // the fact left out: both
  EXPECT_TRUE(mcore.offers_tp);
  EXPECT_TRUE(mcore.offers_pp);
}

// Nanotron as the Ultra-Scale Playbook's benchmarks ran it (bench_cluster's
// base config): sequence parallelism, ZeRO-1 with fp32 gradients all-reduced
// after the backward, 1F1B, whole-layer recomputation only.
TEST(Framework, NanotronRunsThePlaybookBenchmarkConfig) {
  for (const char* text : {"Nanotron", "nanotron (Ultra-Scale Playbook)", "Hugging Face Nanotron, bench_cluster"}) {
    const FrameworkProfile& f = Match(text);
    EXPECT_EQ(f.name, "nanotron") << text;
    EXPECT_FALSE(FindFramework(ShippedFrameworks(), text, "f", "k").fallback) << text;
    EXPECT_EQ(f.attention, AttentionImpl::kFlash2) << text;
  }
  const FrameworkProfile& f = Match("Nanotron");
  EXPECT_EQ(f.kernels, KernelFusion::kEager);
  EXPECT_TRUE(f.sequence_parallel);
  EXPECT_EQ(f.sharding, Sharding::kZero1);
  EXPECT_FALSE(f.overlap_grad_reduce);
  EXPECT_EQ(f.GradPrecision(Precision::kBf16), Precision::kFp32);
  EXPECT_EQ(f.GradPrecision(Precision::kFp16), Precision::kFp32);
  // FP32GradientAccumulator: each micro-batch added into fp32 after the
  // backward; ZeRO-1 all-reduces the whole buffer, then gathers after the step.
  EXPECT_EQ(f.GradAccumulationFor(Precision::kBf16), GradAccumulation::kFp32Add);
  EXPECT_TRUE(f.ZeroGradAllReduceFor(Precision::kBf16));
  EXPECT_FALSE(f.overlap_param_gather);
  EXPECT_EQ(f.selective_recompute, SelectiveRecomputeKind::kUnavailable);
  EXPECT_EQ(f.non_gated_family, ModelFamily::kGpt);
  EXPECT_FALSE(f.whole_local_batch);
  EXPECT_EQ(f.default_vp, 1);
  EXPECT_EQ(f.loss_logits, LossLogits::kInPlace);
  EXPECT_TRUE(f.sp_keeps_gathered_inputs);
  EXPECT_EQ(f.TpOverlapFor(false), TpCommOverlap::kNone);
  EXPECT_TRUE(f.offers_tp);
  EXPECT_TRUE(f.offers_pp);
  EXPECT_FALSE(f.unstated_recompute.has_value());
}

// Colossal-AI as its LLaMA benchmark runs it: Gemini (chunked ZeRO-3,
// gradients reduce-scattered in bf16 during the backward, tensor but no
// pipeline parallelism), Hugging Face eager kernels with flash attention,
// the whole local batch per step, and the launch scripts' bf16 with
// gradient checkpointing.
TEST(Framework, ColossalAiRunsItsGeminiBenchmark) {
  for (const char* text :
       {"Colossal-AI", "ColossalAI 0.4.6 (GeminiPlugin)", "colossalai", "Colossal-AI (Gemini, ZeRO-3)"}) {
    const FrameworkProfile& f = Match(text);
    EXPECT_EQ(f.name, "colossalai") << text;
    EXPECT_FALSE(FindFramework(ShippedFrameworks(), text, "f", "k").fallback) << text;
  }
  const FrameworkProfile& f = Match("Colossal-AI");
  EXPECT_EQ(f.attention, AttentionImpl::kFlash2);
  EXPECT_EQ(f.kernels, KernelFusion::kEager);
  EXPECT_FALSE(f.sequence_parallel);
  EXPECT_EQ(f.sharding, Sharding::kZero3);
  EXPECT_TRUE(f.overlap_grad_reduce);
  EXPECT_EQ(f.GradPrecision(Precision::kBf16), Precision::kBf16);
  EXPECT_EQ(f.GradPrecision(Precision::kFp16), Precision::kFp16);
  EXPECT_EQ(f.selective_recompute, SelectiveRecomputeKind::kUnavailable);
  EXPECT_EQ(f.non_gated_family, ModelFamily::kGpt);
  EXPECT_TRUE(f.whole_local_batch);
  EXPECT_EQ(f.default_vp, 1);
  EXPECT_EQ(f.loss_logits, LossLogits::kUpcast);
  EXPECT_TRUE(f.offers_tp);
  EXPECT_FALSE(f.offers_pp);
  ASSERT_TRUE(f.unstated_precision.has_value());
  EXPECT_EQ(*f.unstated_precision, Precision::kBf16);
  ASSERT_TRUE(f.unstated_recompute.has_value());
  EXPECT_EQ(*f.unstated_recompute, Recompute::kFull);
}

TEST(Framework, FactsDifferBetweenFrameworks) {
  // NeMo's performance recipes and NVIDIA's published Megatron-Core
  // configurations keep gradients in bf16; Megatron-LM's argument defaults
  // force fp32 main gradients for bf16 and keep the parameters' dtype under
  // fp16.
  EXPECT_EQ(Match("NeMo 24.07 (Megatron-Core)").GradPrecision(Precision::kBf16), Precision::kBf16);
  EXPECT_EQ(Match("NeMo 24.07 (Megatron-Core)").GradPrecision(Precision::kFp8), Precision::kBf16);
  EXPECT_EQ(Match("Megatron-Core r0.8.0").GradPrecision(Precision::kBf16), Precision::kBf16);
  EXPECT_EQ(Match("Megatron-LM (Megatron-Core r0.9)").GradPrecision(Precision::kBf16), Precision::kFp32);
  EXPECT_EQ(Match("Megatron-LM (2021)").GradPrecision(Precision::kFp16), Precision::kFp16);
  EXPECT_EQ(Match("torchtitan (FSDP)").kernels, KernelFusion::kEager);
  // torchtitan's own RMSNorm and rotary modules (models/norms.py, model.py).
  EXPECT_EQ(Match("torchtitan (FSDP)").eager_modules, EagerModules::kFp32TensorOps);
  EXPECT_EQ(Match("Megatron-Core r0.8.0").eager_modules, EagerModules::kLibrary);
  EXPECT_EQ(Match("Colossal-AI").eager_modules, EagerModules::kHfTensorOps);  // transformers' Llama
  // apply_compile compiles the TransformerBlocks only.
  EXPECT_TRUE(Match("torchtitan (FSDP + torch.compile)").compiled_layers_only);
  EXPECT_FALSE(Match("torchtitan (FSDP)").compiled_layers_only);
  EXPECT_TRUE(Match("torchtitan (FSDP)").repeat_kv_copies);  // model.py repeat_kv before SDPA
  EXPECT_FALSE(Match("Megatron-Core r0.8.0").repeat_kv_copies);
  EXPECT_EQ(Match("torchtitan (FSDP + torch.compile)").kernels, KernelFusion::kFused);
  EXPECT_EQ(Match("Megatron-LM (2021)").selective_recompute, SelectiveRecomputeKind::kUnavailable);
  EXPECT_EQ(Match("Composer + llm-foundry").non_gated_family, ModelFamily::kMpt);
}

TEST(Framework, UnknownTextIsAnErrorNamingTheField) {
  InputError e = ErrorFrom([] { Match("my own trainer"); });
  EXPECT_EQ(e.file(), "runs.json");
  EXPECT_EQ(e.key_path(), "runs[0].framework");
  EXPECT_NE(std::string(e.what()).find("no framework profile matches"), std::string::npos);
}

TEST(Framework, EqualMatchesAreAnError) {
  FrameworkProfile a, b;
  a.name = "a";
  a.matches = {{"Stack"}};
  b.name = "b";
  b.matches = {{"Stack"}};
  InputError e = ErrorFrom([&] { MatchFramework({a, b}, "Stack 1.0", "f.json", "framework"); });
  EXPECT_NE(std::string(e.what()).find("equally"), std::string::npos);
}

// A framework file's opening and every required fact; optional facts
// follow, then "}}" closes it.
const std::string kHead = R"({"schema": "stacksim.framework/1", "title": "t", "matches": [["T"]], "facts": {)";
const std::string kRequiredFacts =
    R"("attention": {"value": "flash", "source": "s"}, "kernels": {"value": "fused", "source": "s"},
    "sequence_parallel": {"value": true, "source": "s"}, "sharding": {"value": "zero1", "source": "s"},
    "overlap_grad_reduce": {"value": true, "source": "s"},
    "grad_precision": {"value": {"bf16": "bf16", "fp16": "fp16"}, "source": "s"},
    "selective_recompute": {"value": "modules", "source": "s"}, "non_gated_family": {"value": "gpt", "source": "s"},
    "micro_batching": {"value": "tuned", "source": "s"}, "pipeline_schedule": {"value": "tuned", "source": "s"})";

class FrameworkFile : public ::testing::Test {
 protected:
  std::string Write(const std::string& text) {
    dir_ = std::filesystem::temp_directory_path() / ("stacksim_framework_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    std::string path = (dir_ / "x.json").string();
    std::ofstream(path) << text;
    return path;
  }
  // Copies the shipped profile `name` beside the written file (for "extends").
  void ShipBeside(const std::string& name) {
    std::filesystem::create_directories(dir_);
    std::filesystem::copy_file(std::filesystem::path(STACKSIM_SOURCE_DIR) / "frameworks" / (name + ".json"),
                               dir_ / (name + ".json"), std::filesystem::copy_options::overwrite_existing);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(FrameworkFile, AFactWithoutASourceIsRejected) {
  std::string path = Write(R"({"schema": "stacksim.framework/1", "title": "t", "matches": [["T"]],
    "facts": {"attention": {"value": "flash"}}})");
  InputError e = ErrorFrom([&] { LoadFrameworkFile(path); });
  EXPECT_EQ(e.file(), path);
  EXPECT_EQ(e.key_path(), "facts.attention.source");
}

TEST_F(FrameworkFile, AMissingFactIsRejected) {
  std::string path = Write(R"({"schema": "stacksim.framework/1", "title": "t", "matches": [["T"]],
    "facts": {"attention": {"value": "flash", "source": "s"}}})");
  InputError e = ErrorFrom([&] { LoadFrameworkFile(path); });
  EXPECT_EQ(e.key_path(), "facts.kernels");
}

TEST_F(FrameworkFile, AnEmptyFallbackSubstringIsRejected) {
  // It would match every framework text that nothing else claims.
  std::string path = Write(R"({"schema": "stacksim.framework/1", "title": "t", "matches": [["T"]],
    "fallback_matches": [["U", ""]], "facts": {}})");
  InputError e = ErrorFrom([&] { LoadFrameworkFile(path); });
  EXPECT_EQ(e.file(), path);
  EXPECT_EQ(e.key_path(), "fallback_matches[0][1]");
}

TEST_F(FrameworkFile, ExpertTensorParallelIsTpOrOne) {
  EXPECT_FALSE(LoadFrameworkFile(Write(kHead + kRequiredFacts + "}}")).expert_tp_follows_tp);
  EXPECT_TRUE(LoadFrameworkFile(Write(kHead + kRequiredFacts + R"(, "expert_tensor_parallel": {"value": "tp", "source": "s"}}})"))
                  .expert_tp_follows_tp);
  EXPECT_FALSE(LoadFrameworkFile(Write(kHead + kRequiredFacts + R"(, "expert_tensor_parallel": {"value": 1, "source": "s"}}})"))
                   .expert_tp_follows_tp);
  std::string path = Write(kHead + kRequiredFacts + R"(, "expert_tensor_parallel": {"value": 2, "source": "s"}}})");
  InputError e = ErrorFrom([&] { LoadFrameworkFile(path); });
  EXPECT_EQ(e.key_path(), "facts.expert_tensor_parallel.value");
}

TEST_F(FrameworkFile, ModelParallelismListsTpAndPpOnce) {
  FrameworkProfile pp_only =
      LoadFrameworkFile(Write(kHead + kRequiredFacts + R"(, "model_parallelism": {"value": ["pp"], "source": "s"}}})"));
  EXPECT_FALSE(pp_only.offers_tp);
  EXPECT_TRUE(pp_only.offers_pp);
  std::string twice = Write(kHead + kRequiredFacts + R"(, "model_parallelism": {"value": ["tp", "tp"], "source": "s"}}})");
  EXPECT_EQ(ErrorFrom([&] { LoadFrameworkFile(twice); }).key_path(), "facts.model_parallelism.value[1]");
  std::string other = Write(kHead + kRequiredFacts + R"(, "model_parallelism": {"value": ["cp"], "source": "s"}}})");
  EXPECT_EQ(ErrorFrom([&] { LoadFrameworkFile(other); }).key_path(), "facts.model_parallelism.value[0]");
  std::string scalar = Write(kHead + kRequiredFacts + R"(, "model_parallelism": {"value": "tp", "source": "s"}}})");
  EXPECT_EQ(ErrorFrom([&] { LoadFrameworkFile(scalar); }).key_path(), "facts.model_parallelism.value");
}

// A MoE scenario under a framework whose expert TP follows TP gets etp = tp
// unless the plan says it.
TEST(FrameworkScenario, ExpertTpFollowsTheFramework) {
  nlohmann::json doc = nlohmann::json::parse(R"({"model": "mixtral-8x7b", "topology": "dgx-h100", "gpus": 64,
    "training": {"seq_len": 4096, "global_batch": 64}, "framework": "nemo",
    "plan": {"tp": 4, "pp": 1, "dp": 16, "ep": 8}})");
  EXPECT_EQ(ParseScenario(doc, "s.json", {}).plan.etp, 4);
  doc["framework"] = "megatron-bridge";
  EXPECT_EQ(ParseScenario(doc, "s.json", {}).plan.etp, 1);
  doc["framework"] = "nemo";
  doc["plan"]["etp"] = 1;
  EXPECT_EQ(ParseScenario(doc, "s.json", {}).plan.etp, 1);
}

// Megatron-Bridge's FP8 recipes make the weights FP8 tensors
// (fp8_param_gather); under bf16 the default has no effect, and a plan that
// states FP8 weights without precision fp8 is an error at the field.
TEST(FrameworkScenario, MegatronBridgeFp8RunsHaveFp8Weights) {
  nlohmann::json doc = nlohmann::json::parse(R"({"model": "llama3-8b", "topology": "dgx-h100", "gpus": 8,
    "training": {"seq_len": 8192, "global_batch": 128}, "framework": "megatron-bridge",
    "plan": {"tp": 1, "pp": 1, "dp": 8, "precision": "fp8"}})");
  EXPECT_TRUE(ParseScenario(doc, "s.json", {}).plan.Fp8Weights());
  doc["plan"]["fp8_params"] = false;
  EXPECT_FALSE(ParseScenario(doc, "s.json", {}).plan.Fp8Weights());
  doc["plan"].erase("fp8_params");
  doc["plan"]["precision"] = "bf16";
  EXPECT_FALSE(ParseScenario(doc, "s.json", {}).plan.Fp8Weights());
  doc["plan"]["fp8_params"] = true;
  EXPECT_EQ(ErrorFrom([&] { ParseScenario(doc, "s.json", {}); }).key_path(), "plan.fp8_params");
}

// A scenario that names a framework takes its recipe for the model on the
// scenario's GPU for what the plan does not state, as validate does for a
// run: Megatron-Bridge's H100 Qwen3-235B-A22B overlaps the all-to-alls where
// the schedule can, its Llama 3 recipes overlap TP communication with the
// GEMMs; a plan that states either keeps its own.
TEST(FrameworkScenario, TheFrameworksRecipeForTheModelFillsWhatThePlanLeavesOut) {
  nlohmann::json doc = nlohmann::json::parse(R"({"model": "qwen3-235b-a22b", "topology": "dgx-h100", "gpus": 256,
    "training": {"seq_len": 4096, "global_batch": 2048}, "framework": "megatron-bridge",
    "plan": {"tp": 2, "pp": 8, "dp": 16, "ep": 32, "etp": 1, "vp": 4, "uneven_stages": true, "sequence_parallel": true,
             "precision": "fp8"}})");
  ScenarioConfig s = ParseScenario(doc, "s.json", {});
  EXPECT_TRUE(s.plan.moe_a2a_overlap);
  EXPECT_EQ(s.plan.tp_comm_overlap, TpCommOverlap::kBackward);  // the MoE recipe keeps TE's default
  doc["plan"]["vp"] = 1;  // no virtual stages under pp: Megatron-Core cannot overlap; the plan stays valid
  EXPECT_FALSE(ParseScenario(doc, "s.json", {}).plan.moe_a2a_overlap);
  doc["plan"]["vp"] = 4;
  doc["plan"]["moe_a2a_overlap"] = false;
  EXPECT_FALSE(ParseScenario(doc, "s.json", {}).plan.moe_a2a_overlap);
  doc["plan"].erase("moe_a2a_overlap");
  doc["framework"] = "megatron-core";  // Megatron-LM's command line has no per-model recipe
  EXPECT_FALSE(ParseScenario(doc, "s.json", {}).plan.moe_a2a_overlap);
  doc["framework"] = "megatron-bridge";
  doc["topology"] = "dgx-b200";  // the B200 presets differ between releases: no recipe
  EXPECT_FALSE(ParseScenario(doc, "s.json", {}).plan.moe_a2a_overlap);

  nlohmann::json llama = nlohmann::json::parse(R"({"model": "llama3-70b", "topology": "dgx-h100", "gpus": 64,
    "training": {"seq_len": 8192, "global_batch": 128}, "framework": "megatron-bridge",
    "plan": {"tp": 4, "pp": 8, "dp": 2, "vp": 5}})");
  EXPECT_EQ(ParseScenario(llama, "s.json", {}).plan.tp_comm_overlap, TpCommOverlap::kGemm);
  llama["plan"]["tp_comm_overlap"] = "backward";
  EXPECT_EQ(ParseScenario(llama, "s.json", {}).plan.tp_comm_overlap, TpCommOverlap::kBackward);
}

// torchtitan's schedules (torchtitan/parallelisms/pipelining_utils.py at
// 9dec370): 1F1B has one stage per rank; Interleaved 1F1B, without split
// points, two.
TEST(Framework, PipelineScheduleGivesTheDefaultVirtualStages) {
  EXPECT_EQ(Match("torchtitan (FSDP+TP+PP 1F1B + compile + Float8 + AsyncTP)").default_vp, 1);
  const FrameworkProfile& interleaved = Match("torchtitan (FSDP+TP+PP interleaved 1F1B + compile + Float8 + AsyncTP)");
  EXPECT_EQ(interleaved.name, "torchtitan-compile-interleaved-asynctp");
  EXPECT_EQ(interleaved.default_vp, 2);
  EXPECT_EQ(interleaved.kernels, KernelFusion::kFused);
  EXPECT_EQ(Match("NeMo 24.07 (Megatron-Core)").default_vp, 0);  // tuned
}

// torchtitan's async TP (experimental.enable_async_tensor_parallel: Inductor's
// micro-pipeline TP) pipelines the all-gather -> matmul and matmul ->
// reduce-scatter pairs only; without it nothing overlaps the TP collectives.
// The async-TP profiles extend the compiled ones.
TEST(Framework, TorchtitansAsyncTpPipelinesTheTpPairs) {
  const FrameworkProfile& async = Match("torchtitan (FSDP+TP + AsyncTP + torch.compile + Float8)");
  EXPECT_EQ(async.name, "torchtitan-compile-asynctp");
  EXPECT_EQ(async.TpOverlapFor(false), TpCommOverlap::kPipelined);
  EXPECT_EQ(async.kernels, KernelFusion::kFused);
  EXPECT_TRUE(async.compiled_layers_only);
  EXPECT_EQ(Match("torchtitan (FSDP+TP + torch.compile + Float8)").TpOverlapFor(false), TpCommOverlap::kNone);
  const FrameworkProfile& interleaved = Match("torchtitan (FSDP+TP+PP interleaved 1F1B + compile + Float8 + AsyncTP)");
  EXPECT_EQ(interleaved.TpOverlapFor(false), TpCommOverlap::kPipelined);
  EXPECT_EQ(interleaved.default_vp, 2);
}

// DeepSeek-V3's framework (its technical report, §3.2): DualPipe, the
// hierarchical node-limited dispatch, 20 SMs for communication, and RMSNorm
// plus the MLA up-projections recomputed.
TEST(Framework, HaiLlmRunsDualPipeWithItsOwnDispatchAndRecompute) {
  const FrameworkProfile& f = Match("HAI-LLM (DualPipe, custom all-to-all)");
  EXPECT_EQ(f.name, "hai-llm");
  EXPECT_TRUE(f.dualpipe);
  EXPECT_EQ(f.default_vp, 1);
  EXPECT_EQ(f.moe_dispatcher, MoeDispatcher::kHierarchical);
  EXPECT_EQ(f.comm_sms, 20);
  ASSERT_TRUE(f.selective_modules.has_value());
  EXPECT_TRUE(f.selective_modules->Has(RecomputeModule::kLayerNorm));
  EXPECT_TRUE(f.selective_modules->Has(RecomputeModule::kMlaUpProj));
  EXPECT_FALSE(f.selective_modules->Has(RecomputeModule::kCoreAttn));
  const PlanConfig p = f.PlanDefaults(PlanConfig{});
  EXPECT_EQ(p.dispatcher, MoeDispatcher::kHierarchical);
  EXPECT_EQ(p.comm_sms, 20);
  EXPECT_TRUE(p.recompute_modules == *f.selective_modules);
  // Frameworks that say nothing keep Megatron-Core's behaviour.
  const FrameworkProfile& nemo = Match("NeMo 24.07 (Megatron-Core)");
  EXPECT_FALSE(nemo.dualpipe);
  EXPECT_EQ(nemo.moe_dispatcher, MoeDispatcher::kAllToAll);
  EXPECT_EQ(nemo.comm_sms, 0);
  EXPECT_FALSE(nemo.selective_modules.has_value());
}

TEST_F(FrameworkFile, BadDualPipeFactsNameTheirKey) {
  auto doc = nlohmann::json::parse(std::ifstream(std::string(STACKSIM_SOURCE_DIR) + "/frameworks/hai-llm.json"));
  doc["facts"]["comm_sms"]["value"] = -1;
  InputError e = ErrorFrom([&] { LoadFrameworkFile(Write(doc.dump())); });
  EXPECT_EQ(e.key_path(), "facts.comm_sms.value");
  doc["facts"]["comm_sms"]["value"] = 20;
  doc["facts"]["moe_dispatcher"]["value"] = "deepep";
  e = ErrorFrom([&] { LoadFrameworkFile(Write(doc.dump())); });
  EXPECT_EQ(e.key_path(), "facts.moe_dispatcher.value");
  doc["facts"]["moe_dispatcher"]["value"] = "hierarchical";
  doc["facts"]["selective_recompute_modules"]["value"] = {"rmsnorm"};
  e = ErrorFrom([&] { LoadFrameworkFile(Write(doc.dump())); });
  EXPECT_NE(e.key_path().find("facts.selective_recompute_modules.value"), std::string::npos) << e.key_path();
  doc["facts"]["selective_recompute_modules"]["value"] = {"layernorm"};
  doc["facts"]["selective_recompute"]["value"] = "op-policy";
  e = ErrorFrom([&] { LoadFrameworkFile(Write(doc.dump())); });
  EXPECT_EQ(e.key_path(), "facts.selective_recompute_modules.value");
}

// Megatron-Bridge's DeepSeek-V3 recipes dispatch through DeepEP/HybridEP on
// every GPU: a per-model fact, found by the model's name however it is spelled.
TEST(Framework, MegatronBridgeRecipeForDeepSeekV3DispatchesHierarchically) {
  const FrameworkProfile& mb = Match("NeMo 25.09 container / Megatron-Bridge (Megatron-Core)");
  EXPECT_EQ(mb.name, "megatron-bridge");
  for (const char* name : {"DeepSeek-V3", "DeepSeekV3", "deepseek_v3", "DeepSeek-V3 671B (37B active)"}) {
    const FrameworkProfile::ModelRecipe* r = mb.RecipeFor(name, "h100-sxm-80gb");
    ASSERT_NE(r, nullptr) << name;
    ASSERT_TRUE(r->moe_dispatcher.has_value());
    EXPECT_EQ(*r->moe_dispatcher, MoeDispatcher::kHierarchical);
  }
  EXPECT_EQ(mb.RecipeFor("DeepSeek-V2", "h100-sxm-80gb"), nullptr);
  EXPECT_FALSE(mb.RecipeFor("Qwen3_235B_a22B", "h100-sxm-80gb")->moe_dispatcher.has_value());
  // The framework-wide default stays Megatron-Core's all-to-all.
  EXPECT_EQ(mb.moe_dispatcher, MoeDispatcher::kAllToAll);
  // NeMo 2.x's DeepSeek-V3 recipe enables DeepEP too; Megatron-LM's own
  // command line has no per-model recipe.
  const FrameworkProfile::ModelRecipe* nemo = Match("NeMo 25.04 (Megatron-Core)").RecipeFor("DeepSeek-V3", "h100-sxm-80gb");
  ASSERT_NE(nemo, nullptr);
  EXPECT_EQ(*nemo->moe_dispatcher, MoeDispatcher::kHierarchical);
  // ... with whole experts per rank, where NeMo's default is etp = tp.
  EXPECT_TRUE(Match("NeMo 25.04 (Megatron-Core)").expert_tp_follows_tp);
  ASSERT_TRUE(nemo->expert_tp_follows_tp.has_value());
  EXPECT_FALSE(*nemo->expert_tp_follows_tp);
  EXPECT_EQ(Match("Megatron-LM (Megatron-Core, TE)").RecipeFor("DeepSeek-V3", "h100-sxm-80gb"), nullptr);
}

// A recipe that names GPUs holds on those GPUs only: Megatron-Bridge's
// Qwen3-235B-A22B presets overlap the expert all-to-alls on H100 in every
// release, on B200 in some.
TEST(Framework, MegatronBridgeRecipeNamesItsGpus) {
  const FrameworkProfile& mb = Match("NeMo 26.04.01 container / Megatron-Bridge (Megatron-Core)");
  for (const char* gpu : {"h100-sxm-80gb", "h100-sxm-96gb"}) {
    const FrameworkProfile::ModelRecipe* r = mb.RecipeFor("Qwen3_235B_a22B", gpu);
    ASSERT_NE(r, nullptr) << gpu;
    EXPECT_EQ(r->moe_a2a_overlap, std::optional<bool>(true)) << gpu;
  }
  for (const char* gpu : {"b200", "gb200", "h200-sxm-141gb", "a100-sxm-80gb"}) {
    EXPECT_EQ(mb.RecipeFor("Qwen3_235B_a22B", gpu), nullptr) << gpu;
  }
  EXPECT_EQ(mb.RecipeFor("Qwen3_30B_a3B", "h100-sxm-80gb"), nullptr);  // its presets run HybridEP, no overlap
  // DeepSeek-V3's recipe names no GPU: every one.
  EXPECT_NE(mb.RecipeFor("DeepSeek-V3", "gb200"), nullptr);
}

// Megatron-Bridge's Llama 3 pretraining recipes turn userbuffers TP overlap
// on in every release and on every GPU; its mixture-of-experts recipes and
// its other models keep the framework's default.
TEST(Framework, MegatronBridgeLlamaRecipesOverlapTpCommunication) {
  const FrameworkProfile& mb = Match("NeMo 25.11 container / Megatron-Bridge (Megatron-Core)");
  for (const char* name : {"LLAMA3_70B", "LLAMA3.1_405B", "Llama 3.1 405B", "LLAMA3_8B"}) {
    for (const char* gpu : {"h100-sxm-80gb", "b200", "gb200"}) {
      const FrameworkProfile::ModelRecipe* r = mb.RecipeFor(name, gpu);
      ASSERT_NE(r, nullptr) << name << " " << gpu;
      EXPECT_EQ(r->tp_comm_overlap, std::optional<TpCommOverlap>(TpCommOverlap::kGemm)) << name;
    }
  }
  EXPECT_EQ(mb.tp_comm_overlap, TpCommOverlap::kBackward);
  EXPECT_FALSE(mb.RecipeFor("Qwen3_235B_a22B", "h100-sxm-80gb")->tp_comm_overlap.has_value());
  EXPECT_EQ(mb.RecipeFor("GPT OSS 120B", "h100-sxm-80gb"), nullptr);
}

// NeMo's launcher configs turn userbuffers TP overlap on per model
// (ub_tp_comm_overlap); a run of such a model gets the recipe's mode, the
// others the framework's default.
TEST(Framework, NemoRecipesOverlapTpCommunicationPerModel) {
  const FrameworkProfile& nemo = Match("NeMo 24.12 (Megatron-Core)");
  for (const char* name : {"Llama 3.1 405B", "Llama 3.1 70B", "LLAMA3-70B", "LLAMA2-70B", "Nemotron-4 15B", "Nemotron-8B",
                           "Nemotron-22B", "GPT3-20B"}) {
    const FrameworkProfile::ModelRecipe* r = nemo.RecipeFor(name, "h100-sxm-80gb");
    ASSERT_NE(r, nullptr) << name;
    ASSERT_TRUE(r->tp_comm_overlap.has_value()) << name;
    EXPECT_EQ(*r->tp_comm_overlap, TpCommOverlap::kGemm) << name;
  }
  for (const char* name : {"GPT-3 175B", "GPT3-5B", "Llama 3.1 8B", "LLAMA2-7B", "Grok-1 314B", "Nemotron-4 340B"}) {
    const FrameworkProfile::ModelRecipe* r = nemo.RecipeFor(name, "h100-sxm-80gb");
    EXPECT_TRUE(r == nullptr || !r->tp_comm_overlap.has_value()) << name;
  }
  // The 15B recipe keeps its optimizer state beside the overlap.
  ASSERT_TRUE(nemo.RecipeFor("Nemotron-4 15B", "h100-sxm-80gb")->optimizer_state.has_value());
  EXPECT_EQ(nemo.tp_comm_overlap, TpCommOverlap::kBackward);
  // Transformer Engine's FP8 casts for the Megatron-Core family; torchao's elsewhere.
  EXPECT_EQ(nemo.fp8_casts, Fp8Casts::kTransformerEngine);
  EXPECT_EQ(Match("Megatron-Core r0.8.0").fp8_casts, Fp8Casts::kTransformerEngine);
  EXPECT_EQ(Match("torchtitan (FSDP + torch.compile + Float8)").fp8_casts, Fp8Casts::kPerForward);
  EXPECT_EQ(Match("MaxText (JAX) 25.01").fp8_casts, Fp8Casts::kIntoProducers);  // XLA fuses the quantization
  // NVIDIA's MaxText recipe's remat_policy save_qkv_proj.
  EXPECT_EQ(Match("MaxText (JAX) 25.01").selective_recompute, SelectiveRecomputeKind::kSaveQkvProj);
  EXPECT_EQ(Match("MaxText (JAX) 25.01").PlanDefaults(PlanConfig{}).selective_policy, SelectivePolicy::kSaveQkvProj);
  // Delayed scaling's amax all-reduce: NeMo and Megatron-Core; Megatron-Bridge's
  // performance scripts offer current scaling, MX and block recipes only.
  EXPECT_TRUE(nemo.fp8_amax_reduction);
  EXPECT_TRUE(Match("Megatron-Core r0.8.0").fp8_amax_reduction);
  EXPECT_FALSE(Match("NeMo 25.11 container / Megatron-Bridge (Megatron-Core)").fp8_amax_reduction);
}

TEST_F(FrameworkFile, BadModelRecipesNameTheirKey) {
  auto doc = nlohmann::json::parse(std::ifstream(std::string(STACKSIM_SOURCE_DIR) + "/frameworks/megatron-bridge.json"));
  auto& recipes = doc["facts"]["model_recipes"]["value"];
  recipes[0]["moe_dispatcher"] = "deepep";
  InputError e = ErrorFrom([&] { LoadFrameworkFile(Write(doc.dump())); });
  EXPECT_EQ(e.key_path(), "facts.model_recipes.value[0].moe_dispatcher");
  recipes[0]["moe_dispatcher"] = "hierarchical";
  recipes[0]["models"] = nlohmann::json::array();
  e = ErrorFrom([&] { LoadFrameworkFile(Write(doc.dump())); });
  EXPECT_EQ(e.key_path(), "facts.model_recipes.value[0].models");
  recipes[0] = {{"models", {"DeepSeek-V3"}}};
  e = ErrorFrom([&] { LoadFrameworkFile(Write(doc.dump())); });
  EXPECT_EQ(e.key_path(), "facts.model_recipes.value[0]");
  recipes[0] = {{"models", {"DeepSeek-V3"}}, {"gpus", nlohmann::json::array()}, {"moe_dispatcher", "hierarchical"}};
  e = ErrorFrom([&] { LoadFrameworkFile(Write(doc.dump())); });
  EXPECT_EQ(e.key_path(), "facts.model_recipes.value[0].gpus");
  recipes[0] = {{"models", {"DeepSeek-V3"}}, {"moe_a2a_overlap", "yes"}};
  e = ErrorFrom([&] { LoadFrameworkFile(Write(doc.dump())); });
  EXPECT_EQ(e.key_path(), "facts.model_recipes.value[0].moe_a2a_overlap");
  recipes[0] = {{"models", {"DeepSeek-V3"}}, {"expert_tensor_parallel", 2}};
  e = ErrorFrom([&] { LoadFrameworkFile(Write(doc.dump())); });
  EXPECT_EQ(e.key_path(), "facts.model_recipes.value[0].expert_tensor_parallel");
  recipes[0] = {{"models", {"DeepSeek-V3"}}, {"moe_dispatcher", "hierarchical"}, {"recompute", "full"}};
  e = ErrorFrom([&] { LoadFrameworkFile(Write(doc.dump())); });
  EXPECT_NE(e.key_path().find("facts.model_recipes.value[0]"), std::string::npos) << e.key_path();
  doc["facts"]["model_recipes"]["value"] = nlohmann::json::array();
  e = ErrorFrom([&] { LoadFrameworkFile(Write(doc.dump())); });
  EXPECT_EQ(e.key_path(), "facts.model_recipes.value");
}

TEST_F(FrameworkFile, VirtualStagesBelongToAnInterleavedScheduleOnly) {
  auto doc = nlohmann::json::parse(std::ifstream(std::string(STACKSIM_SOURCE_DIR) +
                                                 "/frameworks/torchtitan-compile-interleaved.json"));
  doc["facts"]["virtual_stages_per_rank"]["value"] = 1;
  InputError e = ErrorFrom([&] { LoadFrameworkFile(Write(doc.dump())); });
  EXPECT_EQ(e.key_path(), "facts.virtual_stages_per_rank.value");
  doc["facts"].erase("virtual_stages_per_rank");
  e = ErrorFrom([&] { LoadFrameworkFile(Write(doc.dump())); });
  EXPECT_EQ(e.key_path(), "facts.virtual_stages_per_rank");
  doc["facts"]["virtual_stages_per_rank"] = {{"value", 2}, {"source", "s"}};
  doc["facts"]["pipeline_schedule"]["value"] = "1f1b";
  e = ErrorFrom([&] { LoadFrameworkFile(Write(doc.dump())); });
  EXPECT_EQ(e.key_path(), "facts.virtual_stages_per_rank.value");
}

TEST_F(FrameworkFile, AnUnknownZero3GatherIsRejected) {
  const std::string shipped = (std::filesystem::path(STACKSIM_SOURCE_DIR) / "frameworks" / "megatron-deepspeed.json").string();
  nlohmann::json doc = nlohmann::json::parse(std::ifstream(shipped));
  doc["facts"]["zero3_gather"]["value"] = "per-layer";
  std::string path = Write(doc.dump());
  InputError e = ErrorFrom([&] { LoadFrameworkFile(path); });
  EXPECT_EQ(e.file(), path);
  EXPECT_NE(e.key_path().find("facts.zero3_gather"), std::string::npos) << e.key_path();
}

// DeepSpeed's ZeRO-3 of 2021 (SC'21 Table 2) gathers per parameter and
// synchronously; frameworks that leave the facts out keep FSDP's per-layer
// prefetch.
TEST(Framework, DeepSpeedZero3GathersPerParameterSynchronously) {
  const FrameworkProfile& ds = Match("Megatron-LM + DeepSpeed ZeRO-3");
  EXPECT_EQ(ds.name, "megatron-deepspeed");
  EXPECT_EQ(ds.zero3_gather, Zero3Gather::kSyncPerParameter);
  EXPECT_DOUBLE_EQ(ds.zero3_max_reuse_distance, 1e9);
  EXPECT_EQ(ds.PlanDefaults(PlanConfig{}).zero3_gather, Zero3Gather::kSyncPerParameter);
  const FrameworkProfile& titan = Match("torchtitan (FSDP)");
  EXPECT_EQ(titan.zero3_gather, Zero3Gather::kPrefetchPerLayer);
}

// DeepSpeed on its own (a release of 2022 on, Hugging Face models) is not
// the Megatron-DeepSpeed fork of 2021: flash attention through SDPA, eager
// kernels, ZeRO-3 prefetching ahead, gradients reduced in the training
// dtype. Texts naming Megatron too keep the fork's profile.
TEST(Framework, DeepSpeedAloneIsTheModernEngineNotTheMegatronFork) {
  for (const char* text : {"DeepSpeed 0.14 ZeRO-3", "Hugging Face Trainer + DeepSpeed ZeRO-2", "deepspeed"}) {
    const FrameworkProfile& ds = Match(text);
    EXPECT_EQ(ds.name, "deepspeed") << text;
    EXPECT_EQ(ds.attention, AttentionImpl::kFlash2) << text;
    EXPECT_EQ(ds.kernels, KernelFusion::kEager) << text;
    EXPECT_EQ(ds.zero3_gather, Zero3Gather::kPrefetchPerLayer) << text;
    EXPECT_EQ(ds.GradPrecision(Precision::kBf16), Precision::kBf16) << text;
    EXPECT_EQ(ds.sharding, Sharding::kNone) << text;  // zero_optimization.stage defaults to 0
  }
  for (const char* text : {"Megatron-LM + DeepSpeed (3D parallelism)",
                           "Megatron-DeepSpeed (bigscience fork) + DeepSpeed, PyTorch 1.11"}) {
    EXPECT_EQ(Match(text).name, "megatron-deepspeed") << text;
    EXPECT_EQ(Match(text).attention, AttentionImpl::kUnfused) << text;
  }
}

// A framework's TP communication overlap: one value, or one per model kind
// (performance recipes turn the GEMM overlap off for mixture-of-experts
// models). The shipped Megatron-family profiles say `backward` (Megatron-Core
// and Transformer Engine linears), the recipes' GEMM overlap is not taken
// (docs/workload.md).
TEST_F(FrameworkFile, TpCommOverlapIsOneValueOrOnePerModelKind) {
  const std::string shipped = (std::filesystem::path(STACKSIM_SOURCE_DIR) / "frameworks" / "nemo.json").string();
  nlohmann::json doc = nlohmann::json::parse(std::ifstream(shipped));
  EXPECT_EQ(LoadFrameworkFile(shipped).TpOverlapFor(false), TpCommOverlap::kBackward);
  EXPECT_EQ(LoadFrameworkFile(shipped).TpOverlapFor(true), TpCommOverlap::kBackward);
  doc["facts"]["tp_comm_overlap"] = {{"value", {{"dense", "gemm"}, {"moe", "backward"}}}, {"source", "s"}};
  const FrameworkProfile f = LoadFrameworkFile(Write(doc.dump()));
  EXPECT_EQ(f.TpOverlapFor(false), TpCommOverlap::kGemm);
  EXPECT_EQ(f.TpOverlapFor(true), TpCommOverlap::kBackward);
  EXPECT_EQ(f.PlanDefaults(PlanConfig{}).tp_comm_overlap, TpCommOverlap::kGemm);
  doc["facts"]["tp_comm_overlap"]["value"] = "backward";
  EXPECT_EQ(LoadFrameworkFile(Write(doc.dump())).TpOverlapFor(true), TpCommOverlap::kBackward);

  doc["facts"]["tp_comm_overlap"]["value"] = {{"dense", "gemm"}, {"moe", "ring"}};
  InputError e = ErrorFrom([&] { LoadFrameworkFile(Write(doc.dump())); });
  EXPECT_EQ(e.key_path(), "facts.tp_comm_overlap.value.moe");
  doc["facts"]["tp_comm_overlap"]["value"].erase("moe");
  e = ErrorFrom([&] { LoadFrameworkFile(Write(doc.dump())); });
  EXPECT_NE(e.key_path().find("facts.tp_comm_overlap.value"), std::string::npos) << e.key_path();
}

// Megatron-Bridge's guide widens selective recomputation step by step
// before full: narrow MLA / MoE boundaries, then the dense MLP, then the
// whole MoE block. Frameworks without such a guide keep the default modules.
TEST_F(FrameworkFile, RecomputeEscalationWidensStepByStep) {
  const std::string shipped = (std::filesystem::path(STACKSIM_SOURCE_DIR) / "frameworks" / "megatron-bridge.json").string();
  const FrameworkProfile mb = LoadFrameworkFile(shipped);
  ASSERT_EQ(mb.recompute_escalation.size(), 3u);
  EXPECT_TRUE(mb.recompute_escalation[0].Has(RecomputeModule::kMlaUpProj));
  EXPECT_TRUE(mb.recompute_escalation[0].Has(RecomputeModule::kMoeAct));
  EXPECT_FALSE(mb.recompute_escalation[0].Has(RecomputeModule::kMlp));
  EXPECT_TRUE(mb.recompute_escalation[1].Has(RecomputeModule::kMlp));
  EXPECT_TRUE(mb.recompute_escalation[2].Has(RecomputeModule::kMoe));
  EXPECT_EQ(RecomputeModulesText(mb.recompute_escalation[0]), "core_attn, layernorm, mla_up_proj, moe_act");
  EXPECT_TRUE(Match("NeMo 24.07 (Megatron-Core)").recompute_escalation.empty());

  nlohmann::json doc = nlohmann::json::parse(std::ifstream(shipped));
  doc["facts"]["recompute_escalation"]["value"][1] = {"core_attn", "mlp"};  // drops the narrow modules
  InputError e = ErrorFrom([&] { LoadFrameworkFile(Write(doc.dump())); });
  EXPECT_EQ(e.key_path(), "facts.recompute_escalation.value[1]");
  doc["facts"]["recompute_escalation"]["value"][1] = {"core_attn", "attention"};
  e = ErrorFrom([&] { LoadFrameworkFile(Write(doc.dump())); });
  EXPECT_EQ(e.key_path(), "facts.recompute_escalation.value[1][1]");
  doc["facts"]["recompute_escalation"]["value"] = "mlp";
  e = ErrorFrom([&] { LoadFrameworkFile(Write(doc.dump())); });
  EXPECT_EQ(e.key_path(), "facts.recompute_escalation.value");
  doc = nlohmann::json::parse(std::ifstream(shipped));
  doc["facts"]["selective_recompute"]["value"] = "op-policy";
  e = ErrorFrom([&] { LoadFrameworkFile(Write(doc.dump())); });
  EXPECT_EQ(e.key_path(), "facts.recompute_escalation.value");
}

// Megatron-LM's 2021 launch scripts fix fp16 and whole-layer recomputation
// for a run that does not state them; the GPT-3 175B example also fixes
// micro-batch 1 and the 1F1B schedule; other frameworks leave all open.
TEST(Framework, LaunchScriptPrecisionAndRecomputeForUnstatedRuns) {
  const FrameworkProfile& readme = Match("Megatron-LM (examples/pretrain_gpt3_175B.sh)");
  EXPECT_EQ(readme.name, "megatron-lm-2021-gpt3-example");
  ASSERT_TRUE(readme.unstated_precision.has_value());
  EXPECT_EQ(*readme.unstated_precision, Precision::kFp16);
  ASSERT_TRUE(readme.unstated_recompute.has_value());
  EXPECT_EQ(*readme.unstated_recompute, Recompute::kFull);
  EXPECT_EQ(readme.fixed_micro_batch, 1);
  EXPECT_EQ(readme.default_vp, 1);
  const FrameworkProfile& sc21 = Match("Megatron-LM (2021)");
  EXPECT_EQ(sc21.fixed_micro_batch, 0);  // SC'21 tuned its micro-batches
  EXPECT_EQ(sc21.default_vp, 0);
  EXPECT_FALSE(Match("NeMo 24.12 (Megatron-Core)").unstated_precision.has_value());
  EXPECT_FALSE(Match("NeMo 24.12 (Megatron-Core)").unstated_recompute.has_value());
}

TEST_F(FrameworkFile, AFixedMicroBatchIsAPositiveInteger) {
  const std::string shipped =
      (std::filesystem::path(STACKSIM_SOURCE_DIR) / "frameworks" / "megatron-lm-2021-gpt3-example.json").string();
  nlohmann::json doc = nlohmann::json::parse(std::ifstream(shipped));
  Write("{}");
  ShipBeside("megatron-lm-2021");  // the profile it extends
  doc["facts"]["micro_batching"]["value"] = 0;
  InputError e = ErrorFrom([&] { LoadFrameworkFile(Write(doc.dump())); });
  EXPECT_EQ(e.key_path(), "facts.micro_batching.value");
  doc["facts"]["micro_batching"]["value"] = "one";
  e = ErrorFrom([&] { LoadFrameworkFile(Write(doc.dump())); });
  EXPECT_EQ(e.key_path(), "facts.micro_batching.value");
}

// "extends": the named profile's facts, this file's replacing them one by
// one; the named profile lies beside the file and extends nothing itself.
TEST_F(FrameworkFile, AProfileExtendsAnotherOneLevelDeep) {
  Write("{}");
  ShipBeside("megatron-lm-2021");
  nlohmann::json doc = {{"schema", "stacksim.framework/1"},
                        {"title", "t"},
                        {"matches", {{"x"}}},
                        {"extends", "megatron-lm-2021"},
                        {"facts", {{"kernels", {{"value", "eager"}, {"source", "test"}}}}}};
  const FrameworkProfile f = LoadFrameworkFile(Write(doc.dump()));
  const FrameworkProfile base = LoadFrameworkFile((dir_ / "megatron-lm-2021.json").string());
  EXPECT_EQ(f.kernels, KernelFusion::kEager);   // its own fact
  EXPECT_EQ(base.kernels, KernelFusion::kFused);
  EXPECT_EQ(f.attention, base.attention);       // the rest inherited
  EXPECT_EQ(f.pp_blocking_sends, base.pp_blocking_sends);
  EXPECT_EQ(f.unstated_precision, base.unstated_precision);
  doc["extends"] = "no-such-profile";
  EXPECT_EQ(ErrorFrom([&] { LoadFrameworkFile(Write(doc.dump())); }).key_path(), "extends");
  doc["extends"] = 3;
  EXPECT_EQ(ErrorFrom([&] { LoadFrameworkFile(Write(doc.dump())); }).key_path(), "extends");
  ShipBeside("megatron-lm-2021-gpt3-example");  // extends megatron-lm-2021 itself
  doc["extends"] = "megatron-lm-2021-gpt3-example";
  EXPECT_EQ(ErrorFrom([&] { LoadFrameworkFile(Write(doc.dump())); }).key_path(), "extends");
}

TEST_F(FrameworkFile, AnUnknownUnstatedPrecisionIsRejected) {
  const std::string shipped = (std::filesystem::path(STACKSIM_SOURCE_DIR) / "frameworks" / "megatron-lm-2021.json").string();
  nlohmann::json doc = nlohmann::json::parse(std::ifstream(shipped));
  doc["facts"]["precision"]["value"] = "tf32";
  InputError e = ErrorFrom([&] { LoadFrameworkFile(Write(doc.dump())); });
  EXPECT_EQ(e.key_path(), "facts.precision.value");
}

// A scenario that names a framework takes its facts as plan defaults; keys the
// plan gives win.
nlohmann::json Scenario() {
  return nlohmann::json::parse(R"({"model": "llama3-8b", "topology": "dgx-h100", "gpus": 16,
    "training": {"seq_len": 8192, "global_batch": 64},
    "plan": {"tp": 2, "pp": 1, "dp": 8}})");
}

TEST(FrameworkScenario, TheFrameworksFactsAreThePlanDefaults) {
  nlohmann::json doc = Scenario();
  doc["framework"] = "nemo";
  ScenarioConfig s = ParseScenario(doc, "s.json", {});
  EXPECT_EQ(s.framework, "nemo");
  EXPECT_TRUE(s.plan.sequence_parallel);
  EXPECT_EQ(s.plan.sharding, Sharding::kZero1);
  EXPECT_EQ(s.plan.GradReducePrecision(), Precision::kBf16);
  EXPECT_FALSE(s.plan.cp_torch_ring);
  EXPECT_FALSE(s.plan.fsdp_copies);
  EXPECT_TRUE(s.plan.fp8_tp_gather);  // Transformer Engine gathers FP8 under SP

  doc["framework"] = "torchtitan";
  s = ParseScenario(doc, "s.json", {});
  EXPECT_TRUE(s.plan.cp_torch_ring);  // PyTorch's ring attention
  EXPECT_TRUE(s.plan.fsdp_copies);    // FSDP2's per-parameter sharding
  EXPECT_TRUE(s.plan.fp8_tp_gather);  // torchao's float8 TP
  EXPECT_EQ(s.plan.cp_comm, CpComm::kP2p);
  EXPECT_EQ(s.plan.kernels, KernelFusion::kEager);
  EXPECT_EQ(s.plan.attention, AttentionImpl::kFlash2);
  EXPECT_EQ(s.plan.sharding, Sharding::kZero3);

  // Llama 3's all-gather CP (arXiv:2407.21783 section 3.3.2); a plan key wins.
  doc["framework"] = "llama3-meta";
  s = ParseScenario(doc, "s.json", {});
  EXPECT_EQ(s.plan.cp_comm, CpComm::kAllGather);
  // PyTorch's flash kernel of 2024, FlashAttention-2: FlashAttention-3 came after the pretraining.
  EXPECT_EQ(s.plan.attention, AttentionImpl::kFlash2);
  doc["plan"]["cp_comm"] = "p2p";
  s = ParseScenario(doc, "s.json", {});
  EXPECT_EQ(s.plan.cp_comm, CpComm::kP2p);
  doc["plan"].erase("cp_comm");

  // llm-foundry's 2023 benchmarks ran MPT with attn_impl triton.
  doc["framework"] = "llm-foundry";
  s = ParseScenario(doc, "s.json", {});
  EXPECT_EQ(s.plan.attention, AttentionImpl::kFlash1);

  // One round of interleaved micro-batches: every forward first in Megatron-LM
  // through Megatron-Core 0.9, the usual warm-up since 0.10; a plan key wins.
  doc["framework"] = "megatron-lm-2023";
  s = ParseScenario(doc, "s.json", {});
  EXPECT_TRUE(s.plan.single_round_all_forwards);
  doc["framework"] = "megatron-core";
  s = ParseScenario(doc, "s.json", {});
  EXPECT_FALSE(s.plan.single_round_all_forwards);
  doc["plan"]["single_round_all_forwards"] = true;
  s = ParseScenario(doc, "s.json", {});
  EXPECT_TRUE(s.plan.single_round_all_forwards);
  doc["plan"].erase("single_round_all_forwards");

  // NeMo's distributed_fused_adam over bf16 weights keeps 16-bit remainders
  // of the master weights; Megatron-Core an fp32 copy.
  doc["framework"] = "nemo";
  s = ParseScenario(doc, "s.json", {});
  EXPECT_EQ(s.plan.optimizer_state.master, MasterWeights::kRemainders);
  doc["framework"] = "megatron-core";
  s = ParseScenario(doc, "s.json", {});
  EXPECT_EQ(s.plan.optimizer_state, OptimizerState{});

  // The distributed optimizer's parameter all-gather: overlapped with the
  // next forward in Megatron-Core's performance runs, after the step in
  // Megatron-LM of 2023 and in DeepSpeed ZeRO-1/2; a plan key wins.
  EXPECT_TRUE(s.plan.overlap_param_gather);
  for (const char* name : {"megatron-lm-2023", "megatron-deepspeed", "deepspeed", "megatron-lm"}) {
    doc["framework"] = name;
    s = ParseScenario(doc, "s.json", {});
    EXPECT_FALSE(s.plan.overlap_param_gather) << name;
  }
  doc["plan"]["overlap_param_gather"] = true;
  s = ParseScenario(doc, "s.json", {});
  EXPECT_TRUE(s.plan.overlap_param_gather);
  doc["plan"].erase("overlap_param_gather");

  // DeepSpeed's BF16_Optimizer under the pipeline engine: bf16 training adds
  // each micro-batch's gradients into fp32 and all-reduces them in full;
  // fp16 training does neither, whatever the plan's precision read first.
  doc["framework"] = "megatron-deepspeed";
  doc["plan"]["precision"] = "bf16";
  s = ParseScenario(doc, "s.json", {});
  EXPECT_EQ(s.plan.grad_accumulation, GradAccumulation::kFp32UpcastAdd);
  EXPECT_TRUE(s.plan.zero_grad_all_reduce);
  doc["plan"]["precision"] = "fp16";
  s = ParseScenario(doc, "s.json", {});
  EXPECT_EQ(s.plan.grad_accumulation, GradAccumulation::kFused);
  EXPECT_FALSE(s.plan.zero_grad_all_reduce);
  doc["plan"]["precision"] = "bf16";
  doc["plan"]["grad_accumulation"] = "fused";
  s = ParseScenario(doc, "s.json", {});
  EXPECT_EQ(s.plan.grad_accumulation, GradAccumulation::kFused);  // a plan key wins
  doc["framework"] = "megatron-core";
  doc["plan"].erase("grad_accumulation");
  s = ParseScenario(doc, "s.json", {});
  EXPECT_EQ(s.plan.grad_accumulation, GradAccumulation::kFused);
  EXPECT_FALSE(s.plan.zero_grad_all_reduce);
  // Megatron-LM of 2021, before the accumulation moved into the GEMM:
  // autograd's .grad += under fp16, a hook into fp32 main gradients under bf16.
  doc["framework"] = "megatron-lm-2021";
  s = ParseScenario(doc, "s.json", {});
  EXPECT_EQ(s.plan.grad_accumulation, GradAccumulation::kFp32Add);
  doc["plan"]["precision"] = "fp16";
  s = ParseScenario(doc, "s.json", {});
  EXPECT_EQ(s.plan.grad_accumulation, GradAccumulation::kAutogradAdd);
  doc["plan"].erase("precision");
}

// A model's recipe can set its optimizer state (NeMo's Nemotron-4 340B:
// bf16 moments, no master); a recipe that sets nothing is refused.
TEST(Framework, ModelRecipesCanSetTheOptimizerState) {
  const FrameworkProfile& nemo = FrameworkNamed("nemo", "s.json", "framework");
  const FrameworkProfile::ModelRecipe* r = nemo.RecipeFor("Nemotron-4 340B", "h100-sxm-80gb");
  ASSERT_NE(r, nullptr);
  ASSERT_TRUE(r->optimizer_state.has_value());
  EXPECT_EQ(r->optimizer_state->exp_avg, StateDtype::kBf16);
  EXPECT_EQ(r->optimizer_state->exp_avg_sq, StateDtype::kBf16);
  EXPECT_EQ(r->optimizer_state->master, MasterWeights::kNone);
  EXPECT_EQ(nemo.RecipeFor("Nemotron-4 15B", "h100-sxm-80gb")->optimizer_state, OptimizerState{});
  EXPECT_FALSE(nemo.RecipeFor("Llama 3.1 70B", "h100-sxm-80gb")->optimizer_state.has_value());  // its recipe sets TP overlap only
  EXPECT_EQ(nemo.RecipeFor("Llama 3.1 8B", "h100-sxm-80gb"), nullptr);
}

TEST(FrameworkScenario, PlanKeysWin) {
  nlohmann::json doc = Scenario();
  doc["framework"] = "nemo";
  doc["plan"]["sequence_parallel"] = false;
  doc["plan"]["grad_reduce_precision"] = "fp32";
  doc["plan"]["precision"] = "fp16";
  ScenarioConfig s = ParseScenario(doc, "s.json", {});
  EXPECT_FALSE(s.plan.sequence_parallel);
  EXPECT_EQ(s.plan.GradReducePrecision(), Precision::kFp32);
}

TEST(FrameworkScenario, GradientDtypeFollowsThePlansPrecision) {
  nlohmann::json doc = Scenario();
  doc["framework"] = "megatron-lm";
  doc["plan"]["precision"] = "fp16";
  EXPECT_EQ(ParseScenario(doc, "s.json", {}).plan.GradReducePrecision(), Precision::kFp16);
  doc["plan"]["precision"] = "bf16";
  EXPECT_EQ(ParseScenario(doc, "s.json", {}).plan.GradReducePrecision(), Precision::kFp32);
  doc["framework"] = "megatron-core";
  EXPECT_EQ(ParseScenario(doc, "s.json", {}).plan.GradReducePrecision(), Precision::kBf16);
}

TEST(FrameworkScenario, AnUnknownNameIsAnError) {
  nlohmann::json doc = Scenario();
  doc["framework"] = "my-trainer";
  InputError e = ErrorFrom([&] { ParseScenario(doc, "s.json", {}); });
  EXPECT_EQ(e.file(), "s.json");
  EXPECT_EQ(e.key_path(), "framework");
  EXPECT_NE(std::string(e.what()).find("nemo"), std::string::npos);  // lists the known names
}

}  // namespace
}  // namespace stacksim::config
