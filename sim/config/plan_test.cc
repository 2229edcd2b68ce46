#include "sim/config/plan.h"

#include <functional>

#include <gtest/gtest.h>

#include "tests/input_error.h"

namespace stacksim::config {
namespace {

using testing::ErrorFrom;

// Plans are read at key "plan" of a scenario file.
PlanConfig Parse(const std::string& text) {
  nlohmann::json doc = nlohmann::json::parse(text);
  return ParsePlan(JsonNode(doc, "s.json", "plan"), PlanConfig{});
}

InputError ParseError(const std::string& text) {
  return ErrorFrom([&] { Parse(text); });
}

TEST(Plan, AbsentFieldsTakeTheDefaults) {
  PlanConfig p = Parse(R"({"tp": 2, "pp": 1, "dp": 4})");
  EXPECT_EQ(p.tp, 2);
  EXPECT_EQ(p.dp, 4);
  EXPECT_EQ(p.gpus(), 8);
  EXPECT_EQ(p.cp, 1);
  EXPECT_EQ(p.vp, 1);
  EXPECT_EQ(p.micro_batch, 1);
  EXPECT_EQ(p.schedule, PipelineScheduleKind::kOneFOneB);
  EXPECT_EQ(p.recompute, Recompute::kNone);
  EXPECT_EQ(p.sharding, Sharding::kNone);
  EXPECT_EQ(p.precision, Precision::kBf16);
  EXPECT_TRUE(p.overlap_grad_reduce);
  EXPECT_EQ(p.tp_comm_overlap, TpCommOverlap::kNone);
  EXPECT_FALSE(p.cuda_graphs);
  EXPECT_DOUBLE_EQ(p.grad_bucket.value, 160e6);
  EXPECT_EQ(p.attention, AttentionImpl::kFlash);
  EXPECT_EQ(p.GradReducePrecision(), Precision::kFp32);
}

TEST(Plan, ParsesEveryField) {
  PlanConfig p = Parse(R"({"tp": 8, "pp": 8, "dp": 16, "cp": 1, "ep": 1, "vp": 3, "micro_batch": 2,
      "sequence_parallel": true, "recompute": "selective", "sharding": "zero1", "schedule": "interleaved",
      "precision": "fp16", "overlap_grad_reduce": false, "overlap_param_gather": false,
      "grad_bucket": "40 MiB", "cuda_graphs": true, "attention": "unfused", "grad_reduce_precision": "bf16"})");
  EXPECT_EQ(p.vp, 3);
  EXPECT_EQ(p.micro_batch, 2);
  EXPECT_TRUE(p.sequence_parallel);
  EXPECT_EQ(p.recompute, Recompute::kSelective);
  EXPECT_EQ(p.sharding, Sharding::kZero1);
  EXPECT_EQ(p.schedule, PipelineScheduleKind::kInterleaved);
  EXPECT_EQ(p.precision, Precision::kFp16);
  EXPECT_FALSE(p.overlap_grad_reduce);
  EXPECT_FALSE(p.overlap_param_gather);
  EXPECT_DOUBLE_EQ(p.grad_bucket.value, 40.0 * 1024 * 1024);
  EXPECT_TRUE(p.cuda_graphs);
  EXPECT_EQ(p.attention, AttentionImpl::kUnfused);
  EXPECT_EQ(Parse(R"({"tp": 1, "pp": 1, "dp": 4, "attention": "flash1"})").attention, AttentionImpl::kFlash1);
  EXPECT_EQ(p.GradReducePrecision(), Precision::kBf16);
}

// Megatron-Core's block method: recompute_layers needs full recomputation.
TEST(Plan, ParsesRecomputeLayers) {
  PlanConfig p = Parse(R"({"tp": 1, "pp": 2, "dp": 4, "recompute": "full", "recompute_layers": 3})");
  EXPECT_EQ(p.recompute_layers, 3);
  EXPECT_TRUE(p.RecomputesLayer(2));
  EXPECT_FALSE(p.RecomputesLayer(3));
  EXPECT_EQ(ParsePlan(JsonNode(PlanToJson(p), "s.json", "plan"), PlanConfig{}).recompute_layers, 3);
  EXPECT_FALSE(PlanToJson(Parse(R"({"tp": 1, "pp": 2, "dp": 4, "recompute": "full"})")).contains("recompute_layers"));
  EXPECT_TRUE(Parse(R"({"tp": 1, "pp": 2, "dp": 4, "recompute": "full"})").RecomputesLayer(1000));
  EXPECT_EQ(ParseError(R"({"tp": 1, "pp": 2, "dp": 4, "recompute": "selective", "recompute_layers": 1})").key_path(),
            "plan.recompute_layers");
  EXPECT_EQ(ParseError(R"({"tp": 1, "pp": 2, "dp": 4, "recompute": "full", "recompute_layers": 0})").key_path(),
            "plan.recompute_layers");
}

TEST(Plan, ParsesTpCommOverlap) {
  EXPECT_EQ(Parse(R"({"tp": 4, "pp": 1, "dp": 1, "tp_comm_overlap": "backward"})").tp_comm_overlap,
            TpCommOverlap::kBackward);
  EXPECT_EQ(Parse(R"({"tp": 4, "pp": 1, "dp": 1, "tp_comm_overlap": "gemm"})").tp_comm_overlap, TpCommOverlap::kGemm);
  const PlanConfig pipelined = Parse(R"({"tp": 4, "pp": 1, "dp": 1, "tp_comm_overlap": "pipelined"})");
  EXPECT_EQ(pipelined.tp_comm_overlap, TpCommOverlap::kPipelined);
  EXPECT_EQ(PlanToJson(pipelined)["tp_comm_overlap"], "pipelined");
  EXPECT_EQ(ParseError(R"({"tp": 4, "pp": 1, "dp": 1, "tp_comm_overlap": "async"})").key_path(),
            "plan.tp_comm_overlap");
}

TEST(Plan, ParsesEagerModules) {
  EXPECT_EQ(Parse(R"({"tp": 1, "pp": 1, "dp": 4})").eager_modules, EagerModules::kLibrary);
  const PlanConfig p = Parse(R"({"tp": 1, "pp": 1, "dp": 4, "eager_modules": "fp32-tensor-ops"})");
  EXPECT_EQ(p.eager_modules, EagerModules::kFp32TensorOps);
  EXPECT_EQ(PlanToJson(p)["eager_modules"], "fp32-tensor-ops");
  EXPECT_EQ(Parse(R"({"tp": 1, "pp": 1, "dp": 4, "eager_modules": "hf-tensor-ops"})").eager_modules,
            EagerModules::kHfTensorOps);
  EXPECT_EQ(ParseError(R"({"tp": 1, "pp": 1, "dp": 4, "eager_modules": "fp32"})").key_path(), "plan.eager_modules");
  EXPECT_TRUE(Parse(R"({"tp": 1, "pp": 1, "dp": 4, "compiled_layers_only": true})").compiled_layers_only);
  EXPECT_TRUE(Parse(R"({"tp": 1, "pp": 1, "dp": 4, "repeat_kv_copies": true})").repeat_kv_copies);
  EXPECT_EQ(Parse(R"({"tp": 1, "pp": 1, "dp": 4})").fp8_casts, Fp8Casts::kPerForward);
  const PlanConfig te = Parse(R"({"tp": 1, "pp": 1, "dp": 4, "fp8_casts": "transformer-engine"})");
  EXPECT_EQ(te.fp8_casts, Fp8Casts::kTransformerEngine);
  EXPECT_EQ(PlanToJson(te)["fp8_casts"], "transformer-engine");
  EXPECT_EQ(ParseError(R"({"tp": 1, "pp": 1, "dp": 4, "fp8_casts": "te"})").key_path(), "plan.fp8_casts");
  EXPECT_TRUE(Parse(R"({"tp": 1, "pp": 1, "dp": 4, "fp8_amax_reduction": true})").fp8_amax_reduction);
  EXPECT_EQ(Parse(R"({"tp": 1, "pp": 1, "dp": 4, "fp8_casts": "into-producers"})").fp8_casts, Fp8Casts::kIntoProducers);
  const PlanConfig qkv = Parse(R"({"tp": 1, "pp": 1, "dp": 4, "selective_policy": "save-qkv-proj"})");
  EXPECT_EQ(qkv.selective_policy, SelectivePolicy::kSaveQkvProj);
  EXPECT_EQ(PlanToJson(qkv)["selective_policy"], "save-qkv-proj");
  EXPECT_EQ(PlanToJson(te)["fp8_amax_reduction"], false);
  EXPECT_EQ(ParseError(R"({"tp": 1, "pp": 1, "dp": 4, "compiled_layers_only": "yes"})").key_path(),
            "plan.compiled_layers_only");
}

TEST(Plan, ParsesTheOptimizerState) {
  const PlanConfig p = Parse(R"({"tp": 1, "pp": 1, "dp": 4,
      "optimizer_state": {"exp_avg": "bf16", "exp_avg_sq": "bf16", "master": "none"}})");
  EXPECT_EQ(p.optimizer_state.exp_avg, StateDtype::kBf16);
  EXPECT_EQ(p.optimizer_state.exp_avg_sq, StateDtype::kBf16);
  EXPECT_EQ(p.optimizer_state.master, MasterWeights::kNone);
  EXPECT_EQ(Parse(R"({"tp": 1, "pp": 1, "dp": 4})").optimizer_state, OptimizerState{});
  EXPECT_EQ(Parse(R"({"tp": 1, "pp": 1, "dp": 4, "optimizer_state": {"master": "remainders"}})")
                .optimizer_state.BytesPerParam(Precision::kBf16),
            10.0);
  EXPECT_EQ(Parse(R"({"tp": 1, "pp": 1, "dp": 4, "optimizer_state": {"exp_avg_sq": "fp8", "master": "fp16"}})")
                .optimizer_state.BytesPerParam(Precision::kBf16),
            4.0 + 1.0 + 2.0);
  EXPECT_EQ(OptimizerState{}.BytesPerParam(Precision::kBf16), 12.0);
  EXPECT_EQ(p.optimizer_state.BytesPerParam(Precision::kBf16), 4.0);
  EXPECT_EQ(p.optimizer_state.BytesPerParam(Precision::kFp32), 8.0);  // fp32 moments, no master
  EXPECT_EQ(p.optimizer_state.BytesPerParam(Precision::kFp8), 4.0);   // Megatron's FP8 with bf16 moments, no master
  OptimizerState remainders;
  remainders.master = MasterWeights::kRemainders;
  EXPECT_EQ(remainders.BytesPerParam(Precision::kFp8), 12.0);  // no bf16 weights to complete
  EXPECT_EQ(ParseError(R"({"tp": 1, "pp": 1, "dp": 4, "optimizer_state": {"master": "fp64"}})").key_path(),
            "plan.optimizer_state.master");
  EXPECT_EQ(ParseError(R"({"tp": 1, "pp": 1, "dp": 4, "optimizer_state": {"moments": "bf16"}})").key_path(),
            "plan.optimizer_state.moments");
  // The written plan reads back.
  nlohmann::json written = PlanToJson(p);
  EXPECT_EQ(ParsePlan(JsonNode(written, "s.json", "plan"), PlanConfig{}).optimizer_state, p.optimizer_state);
}

TEST(Plan, ParsesGradientAccumulationAndZeroAllReduce) {
  const PlanConfig fused = Parse(R"({"tp": 1, "pp": 1, "dp": 4})");
  EXPECT_EQ(fused.grad_accumulation, GradAccumulation::kFused);
  EXPECT_FALSE(fused.zero_grad_all_reduce);
  EXPECT_FALSE(PlanToJson(fused).contains("grad_accumulation"));  // defaults stay out of written plans
  const PlanConfig p =
      Parse(R"({"tp": 1, "pp": 1, "dp": 4, "grad_accumulation": "fp32-upcast-add", "zero_grad_all_reduce": true})");
  EXPECT_EQ(p.grad_accumulation, GradAccumulation::kFp32UpcastAdd);
  EXPECT_EQ(GradAccumulationBytesPerParam(p.grad_accumulation), 18.0);
  EXPECT_EQ(GradAccumulationBytesPerParam(GradAccumulation::kFp32Add), 10.0);
  EXPECT_EQ(GradAccumulationBytesPerParam(GradAccumulation::kAutogradAdd), 6.0);
  EXPECT_EQ(GradAccumulationBytesPerParam(GradAccumulation::k16BitAdd), 6.0);
  EXPECT_TRUE(GradAccumulationOnFirstMicroBatch(GradAccumulation::k16BitAdd));
  EXPECT_FALSE(GradAccumulationOnFirstMicroBatch(GradAccumulation::kAutogradAdd));
  EXPECT_EQ(Parse(R"({"tp": 1, "pp": 1, "dp": 4, "grad_accumulation": "16bit-add"})").grad_accumulation,
            GradAccumulation::k16BitAdd);
  EXPECT_EQ(GradAccumulationBytesPerParam(GradAccumulation::kFused), 0.0);
  EXPECT_TRUE(p.zero_grad_all_reduce);
  EXPECT_EQ(ParseError(R"({"tp": 1, "pp": 1, "dp": 4, "grad_accumulation": "fp32"})").key_path(),
            "plan.grad_accumulation");
  EXPECT_EQ(ParseError(R"({"tp": 1, "pp": 1, "dp": 4, "zero_grad_all_reduce": "yes"})").key_path(),
            "plan.zero_grad_all_reduce");
  nlohmann::json written = PlanToJson(p);
  const PlanConfig back = ParsePlan(JsonNode(written, "s.json", "plan"), PlanConfig{});
  EXPECT_EQ(back.grad_accumulation, GradAccumulation::kFp32UpcastAdd);
  EXPECT_TRUE(back.zero_grad_all_reduce);
}

TEST(Plan, ScheduleDefaultsToInterleavedWhenVpAboveOne) {
  EXPECT_EQ(Parse(R"({"tp": 1, "pp": 4, "dp": 1, "vp": 2})").schedule, PipelineScheduleKind::kInterleaved);
  EXPECT_EQ(Parse(R"({"tp": 1, "pp": 4, "dp": 1, "schedule": "gpipe"})").schedule, PipelineScheduleKind::kGpipe);
}

TEST(Plan, InterleavingAndVirtualStagesGoTogether) {
  InputError e = ParseError(R"({"tp": 1, "pp": 4, "dp": 1, "schedule": "interleaved"})");
  EXPECT_EQ(e.file(), "s.json");
  EXPECT_EQ(e.key_path(), "plan.schedule");
  e = ParseError(R"({"tp": 1, "pp": 4, "dp": 1, "vp": 2, "schedule": "1f1b"})");
  EXPECT_EQ(e.key_path(), "plan.vp");
}

TEST(Plan, ParsesContextParallelism) {
  EXPECT_EQ(Parse(R"({"tp": 1, "pp": 1, "dp": 4, "cp": 2})").cp, 2);
  EXPECT_EQ(ParseError(R"({"tp": 1, "pp": 1, "dp": 4, "cp": 0})").key_path(), "plan.cp");
  EXPECT_EQ(Parse(R"({"tp": 1, "pp": 1, "dp": 4, "cp": 2})").cp_comm, CpComm::kP2p);  // ring attention by default
  EXPECT_EQ(Parse(R"({"tp": 1, "pp": 1, "dp": 4, "cp": 2, "cp_comm": "allgather"})").cp_comm, CpComm::kAllGather);
  EXPECT_EQ(Parse(R"({"tp": 1, "pp": 1, "dp": 4, "cp": 2, "cp_comm": "p2p"})").cp_comm, CpComm::kP2p);
  // Megatron's other spellings (a2a, all_gather) are not accepted: a typo must not become the default.
  EXPECT_EQ(ParseError(R"({"tp": 1, "pp": 1, "dp": 4, "cp": 2, "cp_comm": "all_gather"})").key_path(), "plan.cp_comm");
}

TEST(Plan, ParsesRankOrderAndWritesItBack) {
  EXPECT_EQ(Parse(R"({"tp": 2, "pp": 2, "dp": 2})").rank_order, RankOrder::kTpCpDpPp);  // Megatron-LM's default
  PlanConfig p = Parse(R"({"tp": 2, "pp": 2, "dp": 2, "rank_order": "tp-cp-pp-dp"})");
  EXPECT_EQ(p.rank_order, RankOrder::kTpCpPpDp);
  EXPECT_EQ(PlanToJson(p).at("rank_order"), "tp-cp-pp-dp");
  nlohmann::json written = PlanToJson(p);
  EXPECT_EQ(ParsePlan(JsonNode(written, "s.json", "plan"), PlanConfig{}).rank_order, RankOrder::kTpCpPpDp);
  // Megatron's flag spells it tp-pp-dp; only the full names are accepted.
  EXPECT_EQ(ParseError(R"({"tp": 2, "pp": 2, "dp": 2, "rank_order": "tp-pp-dp"})").key_path(), "plan.rank_order");
}

TEST(Plan, ParsesExpertParallelismAndRouting) {
  PlanConfig p = ParsePlan(JsonNode(nlohmann::json::parse(
                               R"({"tp": 1, "pp": 1, "dp": 8, "ep": 8, "moe_routing": "zipf",
                                   "moe_zipf_exponent": 1.2, "moe_capacity_factor": 1.25})"),
                                    "s.json", "plan"),
                           PlanConfig{});
  EXPECT_EQ(p.ep, 8);
  EXPECT_EQ(p.gpus(), 8);  // EP ranks are carved out of DP: no extra GPUs
  EXPECT_EQ(p.routing, Routing::kZipf);
  EXPECT_DOUBLE_EQ(p.zipf_exponent, 1.2);
  EXPECT_DOUBLE_EQ(p.capacity_factor, 1.25);
  EXPECT_EQ(ParsePlan(JsonNode(PlanToJson(p), "s.json", "plan"), PlanConfig{}).zipf_exponent, 1.2);
  EXPECT_EQ(ParseError(R"({"tp": 1, "pp": 1, "dp": 4, "moe_routing": "histogram"})").key_path(), "plan.moe_routing");
  EXPECT_EQ(ParseError(R"({"tp": 1, "pp": 1, "dp": 4, "moe_zipf_exponent": 1})").key_path(), "plan.moe_zipf_exponent");
}

TEST(Plan, AllToAllOverlapIsReadAndWrittenBack) {
  PlanConfig p = Parse(R"({"tp": 1, "pp": 2, "dp": 4, "ep": 4, "moe_a2a_overlap": true})");
  EXPECT_TRUE(p.moe_a2a_overlap);
  EXPECT_TRUE(ParsePlan(JsonNode(PlanToJson(p), "s.json", "plan"), PlanConfig{}).moe_a2a_overlap);
  EXPECT_FALSE(PlanToJson(Parse(R"({"tp": 1, "pp": 2, "dp": 4})")).contains("moe_a2a_overlap"));
  EXPECT_EQ(ParseError(R"({"tp": 1, "pp": 2, "dp": 4, "moe_a2a_overlap": "yes"})").key_path(), "plan.moe_a2a_overlap");
}

TEST(Plan, MicroBatchGroupIsWrittenBackOnlyWhenSet) {
  PlanConfig p = Parse(R"({"tp": 1, "pp": 2, "dp": 4, "vp": 2, "microbatch_group": 3})");
  EXPECT_EQ(p.microbatch_group, 3);
  EXPECT_EQ(ParsePlan(JsonNode(PlanToJson(p), "s.json", "plan"), PlanConfig{}).microbatch_group, 3);
  EXPECT_FALSE(PlanToJson(Parse(R"({"tp": 1, "pp": 2, "dp": 4})")).contains("microbatch_group"));
  EXPECT_EQ(ParseError(R"({"tp": 1, "pp": 2, "dp": 4, "microbatch_group": 0})").key_path(), "plan.microbatch_group");
}

TEST(Plan, CommSmsAreWrittenBackOnlyWhenSet) {
  PlanConfig p = Parse(R"({"tp": 1, "pp": 2, "dp": 4, "comm_sms": 20})");
  EXPECT_EQ(p.comm_sms, 20);
  EXPECT_EQ(ParsePlan(JsonNode(PlanToJson(p), "s.json", "plan"), PlanConfig{}).comm_sms, 20);
  EXPECT_FALSE(PlanToJson(Parse(R"({"tp": 1, "pp": 2, "dp": 4})")).contains("comm_sms"));
  EXPECT_EQ(ParseError(R"({"tp": 1, "pp": 2, "dp": 4, "comm_sms": 1.5})").key_path(), "plan.comm_sms");
}

TEST(Plan, PrecisionAcceptsFp8) {
  EXPECT_EQ(Parse(R"({"tp": 1, "pp": 1, "dp": 4, "precision": "fp8"})").precision, Precision::kFp8);
  EXPECT_EQ(ParseError(R"({"tp": 1, "pp": 1, "dp": 4, "precision": "int4"})").key_path(), "plan.precision");
}

TEST(Plan, GlobalBatchBelongsToTraining) {
  InputError e = ParseError(R"({"tp": 1, "pp": 1, "dp": 4, "global_batch": 64})");
  EXPECT_EQ(e.key_path(), "plan.global_batch");
  EXPECT_NE(std::string(e.what()).find("training.global_batch"), std::string::npos);
}

TEST(Plan, BadValuesNameTheirKey) {
  EXPECT_EQ(ParseError(R"({"tp": 0, "pp": 1, "dp": 4})").key_path(), "plan.tp");
  EXPECT_EQ(ParseError(R"({"tp": 1, "pp": -2, "dp": 4})").key_path(), "plan.pp");
  EXPECT_EQ(ParseError(R"({"tp": 1, "pp": 1, "dp": "4"})").key_path(), "plan.dp");
  EXPECT_EQ(ParseError(R"({"tp": 1, "pp": 1, "dp": 4, "micro_batch": 0})").key_path(), "plan.micro_batch");
  EXPECT_EQ(ParseError(R"({"tp": 1, "pp": 1, "dp": 4, "recompute": "some"})").key_path(), "plan.recompute");
  EXPECT_EQ(ParseError(R"({"tp": 1, "pp": 1, "dp": 4, "sharding": "fsdp"})").key_path(), "plan.sharding");
  EXPECT_EQ(ParseError(R"({"tp": 1, "pp": 1, "dp": 4, "attention": "sdpa"})").key_path(), "plan.attention");
  EXPECT_EQ(ParseError(R"({"tp": 1, "pp": 1, "dp": 4, "grad_bucket": 160})").key_path(), "plan.grad_bucket");
  EXPECT_EQ(ParseError(R"({"tp": 1, "pp": 1, "dp": 4, "grad_bucket": "160 MB/s"})").key_path(), "plan.grad_bucket");
  EXPECT_EQ(ParseError(R"({"tp": 1, "pp": 1, "dp": 4, "sequence_paralel": true})").key_path(),
            "plan.sequence_paralel");
}

TEST(Plan, SequenceParallelismWithoutTensorParallelismIsANoOp) {
  // As in Megatron-LM, which turns it off when tp == 1.
  EXPECT_FALSE(Parse(R"({"tp": 1, "pp": 1, "dp": 8, "sequence_parallel": true})").sequence_parallel);
  EXPECT_TRUE(Parse(R"({"tp": 2, "pp": 1, "dp": 4, "sequence_parallel": true})").sequence_parallel);
}

TEST(Plan, KeepsCallerDefaultsForAbsentFields) {
  PlanConfig defaults;
  defaults.recompute = Recompute::kFull;
  defaults.micro_batch = 4;
  nlohmann::json doc = {{"tp", 2}};
  PlanConfig p = ParsePlan(JsonNode(doc, "x", ""), defaults);
  EXPECT_EQ(p.recompute, Recompute::kFull);
  EXPECT_EQ(p.micro_batch, 4);
  EXPECT_EQ(p.tp, 2);
}

TEST(Plan, RecomputeModulesDefaultToCoreAttention) {
  // Megatron-Core's default recompute_modules: ["core_attn"].
  EXPECT_EQ(Parse(R"({"tp": 1, "pp": 1, "dp": 4})").recompute_modules, RecomputeModules::Default());
  PlanConfig p = Parse(R"({"tp": 1, "pp": 1, "dp": 4, "recompute": "selective"})");
  EXPECT_TRUE(p.recompute_modules.Has(RecomputeModule::kCoreAttn));
  EXPECT_FALSE(p.recompute_modules.Has(RecomputeModule::kLayerNorm));
}

TEST(Plan, ParsesRecomputeModules) {
  PlanConfig p = Parse(R"({"tp": 1, "pp": 1, "dp": 4, "recompute": "selective",
      "recompute_modules": ["layernorm", "mla_up_proj", "moe_act"]})");
  EXPECT_TRUE(p.recompute_modules.Has(RecomputeModule::kLayerNorm));
  EXPECT_TRUE(p.recompute_modules.Has(RecomputeModule::kMlaUpProj));
  EXPECT_TRUE(p.recompute_modules.Has(RecomputeModule::kMoeAct));
  EXPECT_FALSE(p.recompute_modules.Has(RecomputeModule::kCoreAttn));  // not listed, so not recomputed
  EXPECT_FALSE(p.recompute_modules.Has(RecomputeModule::kMoe));
  PlanConfig all = Parse(R"({"tp": 1, "pp": 1, "dp": 4, "recompute": "selective", "recompute_modules":
      ["core_attn", "layernorm", "mla_up_proj", "mlp", "moe_act", "moe", "shared_experts"]})");
  for (int i = 0; i < kRecomputeModuleCount; ++i) EXPECT_TRUE(all.recompute_modules.Has(static_cast<RecomputeModule>(i)));
  // An empty list is valid (Megatron-Core accepts it): selective with nothing recomputed.
  EXPECT_EQ(Parse(R"({"tp": 1, "pp": 1, "dp": 4, "recompute": "selective", "recompute_modules": []})")
                .recompute_modules.bits,
            0u);
}

TEST(Plan, BadRecomputeModulesAreErrors) {
  InputError unknown = ParseError(R"({"tp": 1, "pp": 1, "dp": 4, "recompute": "selective",
      "recompute_modules": ["layernorm", "rmsnorm"]})");
  EXPECT_EQ(unknown.key_path(), "plan.recompute_modules[1]");
  EXPECT_NE(std::string(unknown.what()).find("mla_up_proj"), std::string::npos);  // lists the choices
  EXPECT_EQ(ParseError(R"({"tp": 1, "pp": 1, "dp": 4, "recompute": "selective", "recompute_modules": ["moe", "moe"]})")
                .key_path(),
            "plan.recompute_modules[1]");
  EXPECT_EQ(ParseError(R"({"tp": 1, "pp": 1, "dp": 4, "recompute": "selective", "recompute_modules": "moe"})")
                .key_path(),
            "plan.recompute_modules");
  // Only selective recomputation takes modules.
  for (const char* mode : {"none", "full"}) {
    InputError e = ParseError(std::string(R"({"tp": 1, "pp": 1, "dp": 4, "recompute": ")") + mode +
                              R"(", "recompute_modules": ["layernorm"]})");
    EXPECT_EQ(e.key_path(), "plan.recompute_modules") << mode;
    EXPECT_NE(std::string(e.what()).find("selective"), std::string::npos);
  }
  EXPECT_EQ(ParseError(R"({"tp": 1, "pp": 1, "dp": 4, "recompute_modules": ["layernorm"]})").key_path(),
            "plan.recompute_modules");
}

TEST(Plan, MicroBatchesPerPipeline) {
  PlanConfig p = Parse(R"({"tp": 8, "pp": 8, "dp": 16, "micro_batch": 2})");
  p.global_batch = 1536;
  EXPECT_EQ(p.micro_batches(), 48);
}

TEST(Plan, Names) {
  EXPECT_STREQ(RecomputeName(Recompute::kSelective), "selective");
  EXPECT_STREQ(ShardingName(Sharding::kZero3), "zero3");
  EXPECT_STREQ(ScheduleName(PipelineScheduleKind::kOneFOneB), "1f1b");
  EXPECT_STREQ(ScheduleName(PipelineScheduleKind::kInterleaved), "interleaved");
  EXPECT_STREQ(CpCommName(CpComm::kAllGather), "allgather");
  EXPECT_STREQ(RecomputeModuleName(RecomputeModule::kMlaUpProj), "mla_up_proj");
  EXPECT_STREQ(RecomputeModuleName(RecomputeModule::kSharedExperts), "shared_experts");
}

TEST(Plan, WritesBackWhatItReads) {
  PlanConfig p = Parse(R"({"tp": 8, "pp": 8, "dp": 16, "vp": 3, "micro_batch": 2, "sequence_parallel": true,
      "recompute": "full", "sharding": "zero2", "precision": "fp16", "grad_bucket": "40 MB",
      "attention": "unfused", "grad_reduce_precision": "fp16"})");
  nlohmann::json j = PlanToJson(p);
  PlanConfig back = ParsePlan(JsonNode(j, "x", ""), PlanConfig{});
  EXPECT_EQ(PlanToJson(back), j);
  EXPECT_EQ(j["grad_bucket"], "40 MB");
  EXPECT_EQ(j["schedule"], "interleaved");
  EXPECT_FALSE(j.contains("global_batch"));
  EXPECT_EQ(j["cp_comm"], "p2p");
  EXPECT_FALSE(j.contains("recompute_modules"));  // only with selective recomputation

  PlanConfig sel = Parse(R"({"tp": 1, "pp": 1, "dp": 4, "recompute": "selective",
      "recompute_modules": ["moe_act", "layernorm"]})");
  nlohmann::json js = PlanToJson(sel);
  EXPECT_EQ(js["recompute_modules"], nlohmann::json({"layernorm", "moe_act"}));
  EXPECT_EQ(ParsePlan(JsonNode(js, "x", ""), PlanConfig{}).recompute_modules, sel.recompute_modules);

  PlanConfig ag = Parse(R"({"tp": 8, "pp": 1, "dp": 2, "cp": 4, "cp_comm": "allgather"})");
  nlohmann::json ja = PlanToJson(ag);
  EXPECT_EQ(ja["cp_comm"], "allgather");
  EXPECT_EQ(ParsePlan(JsonNode(ja, "x", ""), PlanConfig{}).cp_comm, CpComm::kAllGather);
}

TEST(Plan, ParsesOffload) {
  PlanConfig p = Parse(R"({"tp": 1, "pp": 1, "dp": 8})");
  EXPECT_EQ(p.offload_optimizer, OffloadTarget::kNone);
  EXPECT_EQ(p.offload_params, OffloadTarget::kNone);
  EXPECT_DOUBLE_EQ(p.offload_optimizer_fraction, 1.0);
  EXPECT_TRUE(p.overlap_offload);
  p = Parse(R"({"tp": 1, "pp": 1, "dp": 8, "sharding": "zero3", "offload_optimizer": "nvme",
      "offload_optimizer_fraction": 0.5, "offload_params": "host", "overlap_offload": false})");
  EXPECT_EQ(p.offload_optimizer, OffloadTarget::kNvme);
  EXPECT_DOUBLE_EQ(p.offload_optimizer_fraction, 0.5);
  EXPECT_EQ(p.offload_params, OffloadTarget::kHost);
  EXPECT_FALSE(p.overlap_offload);
  nlohmann::json j = PlanToJson(p);
  EXPECT_EQ(j["offload_optimizer"], "nvme");
  EXPECT_EQ(PlanToJson(ParsePlan(JsonNode(j, "x", ""), PlanConfig{})), j);
}

TEST(Plan, BadOffloadValuesNameTheirKey) {
  EXPECT_EQ(ParseError(R"({"tp": 1, "pp": 1, "dp": 8, "offload_optimizer": "cpu"})").key_path(),
            "plan.offload_optimizer");
  EXPECT_EQ(ParseError(R"({"tp": 1, "pp": 1, "dp": 8, "offload_optimizer": "host",
      "offload_optimizer_fraction": 1.5})").key_path(), "plan.offload_optimizer_fraction");
  EXPECT_EQ(ParseError(R"({"tp": 1, "pp": 1, "dp": 8, "offload_optimizer": "host",
      "offload_optimizer_fraction": 0})").key_path(), "plan.offload_optimizer_fraction");
  // A fraction of nothing: the target must come first.
  EXPECT_EQ(ParseError(R"({"tp": 1, "pp": 1, "dp": 8, "offload_optimizer_fraction": 0.5})").key_path(),
            "plan.offload_optimizer_fraction");
  EXPECT_EQ(ParseError(R"({"tp": 1, "pp": 1, "dp": 8, "overlap_offload": "yes"})").key_path(),
            "plan.overlap_offload");
}

}  // namespace
}  // namespace stacksim::config

namespace stacksim::config {
namespace {

TEST(Plan, GradientDtypeDefaultsByShardingUnlessGiven) {
  PlanConfig p = Parse(R"({"tp": 1, "pp": 1, "dp": 8, "sharding": "zero1"})");
  EXPECT_EQ(p.GradReducePrecision(), Precision::kFp32);  // Megatron's fp32 main gradients
  p = Parse(R"({"tp": 1, "pp": 1, "dp": 8, "sharding": "zero3"})");
  EXPECT_EQ(p.GradReducePrecision(), Precision::kBf16);  // FSDP reduces in the compute dtype
  p = Parse(R"({"tp": 1, "pp": 1, "dp": 8, "sharding": "zero3", "precision": "fp8"})");
  EXPECT_EQ(p.GradReducePrecision(), Precision::kBf16);  // fp8 trains bf16 parameters
  p = Parse(R"({"tp": 1, "pp": 1, "dp": 8, "sharding": "zero3", "precision": "fp16"})");
  EXPECT_EQ(p.GradReducePrecision(), Precision::kFp16);
  p = Parse(R"({"tp": 1, "pp": 1, "dp": 8, "sharding": "zero3", "grad_reduce_precision": "fp32"})");
  EXPECT_EQ(p.GradReducePrecision(), Precision::kFp32);
  // The default follows the sharding a search tries.
  p.grad_reduce_precision.reset();
  p.sharding = Sharding::kZero1;
  EXPECT_EQ(p.GradReducePrecision(), Precision::kFp32);
}

TEST(Finetune, ReadsMethodRankAlphaAndTargets) {
  PlanConfig p = Parse(R"({"finetune": {"method": "qlora", "rank": 64, "alpha": 16, "targets": ["q", "v", "down"]}})");
  EXPECT_EQ(p.finetune.method, FinetuneMethod::kQlora);
  EXPECT_EQ(p.finetune.rank, 64);
  EXPECT_DOUBLE_EQ(p.finetune.alpha, 16);
  EXPECT_TRUE(p.finetune.Has(LoraTarget::kQ));
  EXPECT_TRUE(p.finetune.Has(LoraTarget::kV));
  EXPECT_TRUE(p.finetune.Has(LoraTarget::kDown));
  EXPECT_FALSE(p.finetune.Has(LoraTarget::kK));
  EXPECT_NEAR(p.finetune.FrozenLinearBytes(2.0), 4.127 / 8, 1e-4);
  // Alpha defaults to the rank (scaling 1); absent finetune is full training.
  EXPECT_DOUBLE_EQ(Parse(R"({"finetune": {"method": "lora", "rank": 8, "targets": ["q"]}})").finetune.alpha, 8);
  EXPECT_FALSE(Parse(R"({"tp": 1})").finetune.frozen_base());
  EXPECT_FALSE(Parse(R"({"finetune": {"method": "full"}})").finetune.frozen_base());
}

TEST(Finetune, WritesWhatItReads) {
  const PlanConfig p = Parse(R"({"finetune": {"method": "lora", "rank": 16, "alpha": 32, "targets": ["k", "gate"]}})");
  const nlohmann::json j = PlanToJson(p);
  EXPECT_EQ(j["finetune"]["method"], "lora");
  EXPECT_EQ(j["finetune"]["targets"], nlohmann::json::array({"k", "gate"}));
  const PlanConfig back = ParsePlan(JsonNode(j, "s.json", "plan"), PlanConfig{});
  EXPECT_EQ(back.finetune.targets, p.finetune.targets);
  EXPECT_EQ(back.finetune.rank, 16);
  EXPECT_FALSE(PlanToJson(PlanConfig{}).contains("finetune"));  // full training: as before
}

TEST(Finetune, BadInputNamesTheKey) {
  EXPECT_EQ(ParseError(R"({"finetune": {"method": "lora", "targets": ["q"]}})").key_path(), "plan.finetune.rank");
  EXPECT_EQ(ParseError(R"({"finetune": {"method": "dora", "rank": 8, "targets": ["q"]}})").key_path(),
            "plan.finetune.method");
  EXPECT_EQ(ParseError(R"({"finetune": {"method": "lora", "rank": 0, "targets": ["q"]}})").key_path(),
            "plan.finetune.rank");
  EXPECT_EQ(ParseError(R"({"finetune": {"method": "lora", "rank": 8, "targets": []}})").key_path(),
            "plan.finetune.targets");
  EXPECT_EQ(ParseError(R"({"finetune": {"method": "lora", "rank": 8, "targets": ["q", "q"]}})").key_path(),
            "plan.finetune.targets[1]");
  EXPECT_EQ(ParseError(R"({"finetune": {"method": "lora", "rank": 8, "targets": ["qkv"]}})").key_path(),
            "plan.finetune.targets[0]");
  EXPECT_EQ(ParseError(R"({"finetune": {"method": "full", "rank": 8}})").key_path(), "plan.finetune.rank");
  EXPECT_EQ(ParseError(R"({"finetune": {"method": "lora", "rank": 8, "targets": ["q"], "dropout": 0.1}})").key_path(),
            "plan.finetune.dropout");
}

}  // namespace
}  // namespace stacksim::config
