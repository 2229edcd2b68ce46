#include "sim/serve/engine_profile.h"

#include <gtest/gtest.h>

#include <fstream>

#include "sim/config/scenario.h"
#include "sim/serve/iteration_cost.h"
#include "sim/serve/serve_config.h"
#include "sim/serve/serve_test_util.h"
#include "sim/util/error.h"
#include "tests/input_error.h"

namespace stacksim::serve {
namespace {

EngineProfile Shipped(const std::string& name) {
  return LoadEngineProfile(config::ResolveDataFile("engines", name, ""));
}

TEST(EngineProfile, ShippedProfilesParseWithTheirDocumentedDefaults) {
  EngineProfile vllm = Shipped("vllm");
  EXPECT_EQ(vllm.scheduler, "continuous");
  EXPECT_EQ(vllm.max_sequences, 256);
  EXPECT_EQ(vllm.kv_memory, KvMemoryRule::kTotal);
  EXPECT_DOUBLE_EQ(vllm.kv_memory_fraction, 0.9);
  EXPECT_EQ(vllm.cuda_graph_max_batch, 256);
  EXPECT_EQ(vllm.admission, Admission::kWatermark);
  EXPECT_EQ(vllm.decode_attention, DecodeAttention::kPerKvHead);
  EngineProfile trt = Shipped("tensorrt-llm");
  EXPECT_EQ(trt.scheduler, "inflight");
  EXPECT_EQ(trt.max_sequences, 2048);
  EXPECT_EQ(trt.kv_memory, KvMemoryRule::kFree);
  EXPECT_EQ(trt.fp8_checkpoint_kv, "fp8");
  EXPECT_EQ(trt.admission, Admission::kGuaranteedNoEvict);
  EXPECT_EQ(trt.decode_attention, DecodeAttention::kPerKvHead);
  EngineProfile old_trt = Shipped("tensorrt-llm-0.6");
  EXPECT_EQ(old_trt.decode_attention, DecodeAttention::kPerQueryHead);
  EXPECT_EQ(old_trt.cuda_graph_max_batch, 0);
  EXPECT_EQ(Shipped("lmdeploy-turbomind").cuda_graph_max_batch, 0);
  const double gib = 1024.0 * 1024 * 1024;
  EngineProfile v1 = Shipped("vllm-v1");
  EXPECT_EQ(v1.scheduler, "chunked-prefill");
  EXPECT_EQ(v1.MaxBatchedTokens("h100-sxm-80gb", 80 * gib), 8192);
  EXPECT_EQ(v1.MaxBatchedTokens("a100-sxm-80gb", 80 * gib), 2048);
  EXPECT_EQ(v1.MaxSequences("h200-sxm-141gb", 141 * gib), 1024);
  EXPECT_EQ(v1.MaxSequences("l40s", 48 * gib), 256);
  EXPECT_EQ(v1.cuda_graph_max_batch, 512);
  EngineProfile offline = Shipped("vllm-v1-offline");
  EXPECT_EQ(offline.MaxBatchedTokens("h100-sxm-80gb", 80 * gib), 16384);
  EXPECT_EQ(offline.MaxBatchedTokens("a100-sxm-80gb", 80 * gib), 8192);
  EXPECT_EQ(offline.scheduler, "chunked-prefill");
  EngineProfile sglang = Shipped("sglang");
  EXPECT_EQ(sglang.scheduler, "prefill-first");
  EXPECT_EQ(sglang.kv_memory, KvMemoryRule::kStatic);
  EXPECT_DOUBLE_EQ(sglang.KvMemoryFraction(1), 0.88);
  EXPECT_DOUBLE_EQ(sglang.KvMemoryFraction(8), 0.81);
  EXPECT_EQ(sglang.max_batched_tokens, 16384);
  EXPECT_EQ(sglang.cuda_graph_max_batch, 160);
  EngineProfile tgi = Shipped("tgi-3");
  EXPECT_EQ(tgi.scheduler, "chunked-prefill");
  EXPECT_EQ(tgi.max_sequences, 128);
  EXPECT_EQ(tgi.MaxBatchedTokens("h100-sxm-80gb", 80 * gib), 59870);
  EXPECT_EQ(tgi.kv_memory, KvMemoryRule::kTotal);
  EXPECT_DOUBLE_EQ(tgi.KvMemoryFraction(8), 0.9);
  EXPECT_EQ(tgi.admission, Admission::kGuaranteedNoEvict);
  EXPECT_EQ(tgi.cuda_graph_max_batch, 32);
  EXPECT_TRUE(tgi.prefix_caching);
  EXPECT_FALSE(tgi.sliding_window_kv);
  EngineProfile tgi2 = Shipped("tgi-2");
  EXPECT_EQ(tgi2.scheduler, "continuous");
  EXPECT_EQ(tgi2.max_batched_tokens, 4145);
  EXPECT_EQ(tgi2.kv_memory, KvMemoryRule::kFree);
  EXPECT_DOUBLE_EQ(tgi2.KvMemoryFraction(1), 0.95);
  EXPECT_EQ(tgi2.decode_attention, DecodeAttention::kPerQueryHead);
  EXPECT_FALSE(tgi2.prefix_caching);
}

// Defaults that depend on the GPU (vLLM's larger batches on 70+ GiB GPUs
// other than the A100) and on the TP size (SGLang's mem_fraction_static).
TEST(EngineProfile, TieredDefaultsFollowTheGpuAndTheTpSize) {
  nlohmann::json doc = nlohmann::json::parse(R"({"schema": "stacksim.engine/1", "title": "t", "facts": {
    "scheduler": {"value": "prefill-first", "source": "docs"},
    "max_batched_tokens": {"value": 2048, "from_hbm_gib": {"gib": 70, "except_gpus": ["a100"], "value": 8192},
                           "source": "docs"},
    "max_sequences": {"value": 256, "source": "docs"},
    "kv_memory": {"value": "static", "source": "docs"},
    "kv_memory_fraction": {"value": 0.88, "by_tp": {"2": 0.87, "8": 0.81}, "source": "docs"}}})");
  const EngineProfile e = ParseEngineProfile(doc, "e.json");
  const double gib = 1024.0 * 1024 * 1024;
  EXPECT_EQ(e.scheduler, "prefill-first");
  EXPECT_EQ(e.kv_memory, KvMemoryRule::kStatic);
  EXPECT_EQ(e.MaxBatchedTokens("h100-sxm-80gb", 80 * gib), 8192);
  EXPECT_EQ(e.MaxBatchedTokens("h200-sxm-141gb", 140 * gib), 8192);
  EXPECT_EQ(e.MaxBatchedTokens("a100-sxm-80gb", 80 * gib), 2048);
  EXPECT_EQ(e.MaxBatchedTokens("l40s", 48 * gib), 2048);
  EXPECT_EQ(e.MaxSequences("h100-sxm-80gb", 80 * gib), 256);  // no tier: the value
  EXPECT_DOUBLE_EQ(e.KvMemoryFraction(1), 0.88);
  EXPECT_DOUBLE_EQ(e.KvMemoryFraction(2), 0.87);
  EXPECT_DOUBLE_EQ(e.KvMemoryFraction(4), 0.87);
  EXPECT_DOUBLE_EQ(e.KvMemoryFraction(8), 0.81);
  EXPECT_DOUBLE_EQ(e.KvMemoryFraction(16), 0.81);

  nlohmann::json bad = doc;
  bad["facts"]["kv_memory_fraction"]["by_tp"] = {{"two", 0.87}};
  {
    const InputError err = testing::ErrorFrom([&] { ParseEngineProfile(bad, "e.json"); });
    EXPECT_EQ(err.key_path(), "facts.kv_memory_fraction.by_tp.two");
  }
  bad = doc;
  bad["facts"]["max_batched_tokens"]["from_hbm_gib"].erase("value");
  {
    const InputError err = testing::ErrorFrom([&] { ParseEngineProfile(bad, "e.json"); });
    EXPECT_EQ(err.key_path(), "facts.max_batched_tokens.from_hbm_gib.value");
  }
  bad = doc;
  bad["facts"]["max_sequences"]["by_tp"] = {{"2", 0.5}};  // not a key this fact takes
  EXPECT_THROW(ParseEngineProfile(bad, "e.json"), InputError);
}

TEST(EngineProfile, UnknownDecodeAttentionOrAdmissionIsAnError) {
  nlohmann::json doc = {{"schema", "stacksim.engine/1"},
                        {"title", "t"},
                        {"facts", {{"scheduler", {{"value", "inflight"}, {"source", "docs"}}},
                                   {"decode_attention", {{"value", "per-head"}, {"source", "docs"}}}}}};
  {
    const InputError e = testing::ErrorFrom([&] { ParseEngineProfile(doc, "e.json"); });
    EXPECT_NE(std::string(e.what()).find("facts.decode_attention.value"), std::string::npos) << e.what();
  }
  doc["facts"]["decode_attention"]["value"] = "per-query-head";
  doc["facts"]["admission"] = {{"value", "no-evict"}, {"source", "docs"}};
  EXPECT_THROW(ParseEngineProfile(doc, "e.json"), InputError);
  doc["facts"]["admission"]["value"] = "guaranteed-no-evict";
  EngineProfile e = ParseEngineProfile(doc, "e.json");
  EXPECT_EQ(e.admission, Admission::kGuaranteedNoEvict);
  EXPECT_EQ(e.decode_attention, DecodeAttention::kPerQueryHead);
}

TEST(EngineProfile, AFactWithoutASourceIsAnError) {
  nlohmann::json doc = {{"schema", "stacksim.engine/1"},
                        {"title", "t"},
                        {"facts", {{"scheduler", {{"value", "continuous"}}}}}};
  {
    const InputError e = testing::ErrorFrom([&] { ParseEngineProfile(doc, "e.json"); });
    EXPECT_NE(std::string(e.what()).find("facts.scheduler.source"), std::string::npos) << e.what();
  }
  doc["facts"]["scheduler"]["source"] = "docs";
  doc["facts"]["kv_memory_fraction"] = {{"value", 1.5}, {"source", "docs"}};
  EXPECT_THROW(ParseEngineProfile(doc, "e.json"), InputError);
}

// TensorRT-LLM gives the KV cache 90% of what is free after the weights;
// vLLM 90% of all HBM less the weights: on 80 GB with 33 GB of weights per
// GPU the free rule leaves (80 - 33 - ...) x 0.1 unused instead of 8 GB.
TEST(EngineProfile, TheFreeMemoryRuleSizesTheKvCacheFromWhatIsLeft) {
  nlohmann::json doc = TestServeDoc();
  doc["replica"]["tp"] = 4;
  doc["engine"] = "vllm";
  ServeConfig vllm = ParseServeScenario(doc, "t.json");
  doc["engine"] = "tensorrt-llm";
  ServeConfig trt = ParseServeScenario(doc, "t.json");
  const KvCachePlan a = IterationCost(vllm).kv_plan();
  const KvCachePlan b = IterationCost(trt).kv_plan();
  const double left = (b.hbm - b.weights - b.activations - b.runtime).value;
  EXPECT_NEAR(b.kv_capacity.value, 0.9 * left, 1.0);
  EXPECT_NEAR(a.kv_capacity.value, (a.hbm * 0.9 - a.weights - a.activations - a.runtime).value, 1.0);
  EXPECT_GT(b.kv_capacity.value, a.kv_capacity.value);
}

TEST(EngineProfile, AnFp8CheckpointKeepsAnFp8KvCacheUnderTensorRtLlmOnly) {
  nlohmann::json doc = TestServeDoc();
  doc["precision"] = {{"weights", "fp8"}, {"compute", "fp8"}};
  doc["engine"] = "tensorrt-llm";
  EXPECT_EQ(ParseServeScenario(doc, "t.json").kv, KvFormat::kFp8);
  doc["engine"] = "vllm";
  EXPECT_EQ(ParseServeScenario(doc, "t.json").kv, KvFormat::kBf16);
  doc["engine"] = "tensorrt-llm";
  doc["precision"]["kv_cache"] = "bf16";  // the scenario's word wins
  EXPECT_EQ(ParseServeScenario(doc, "t.json").kv, KvFormat::kBf16);
}

// The fitted per-iteration host time comes from the fitted-constants file,
// one value for every engine; no engine, file or entry means none.
TEST(EngineProfile, FittedIterationOverheadIsReadForAnyEngine) {
  const std::string path = ::testing::TempDir() + "/fitted_overhead.json";
  std::ofstream(path) << R"({"schema": "stacksim.fitted_constants/1",
    "serving_iteration_overhead": {"value_s": 0.0025}})";
  EXPECT_EQ(FittedIterationOverhead("vllm", path), Time::FromSeconds(0.0025));
  EXPECT_EQ(FittedIterationOverhead("tensorrt-llm", path), Time::FromSeconds(0.0025));
  EXPECT_EQ(FittedIterationOverhead("", path), Time::Zero());
  EXPECT_EQ(FittedIterationOverhead("vllm", path + ".missing"), Time::Zero());
  std::ofstream(path) << R"({"serving_iteration_overhead": {"value_s": -1}})";
  EXPECT_THROW(FittedIterationOverhead("vllm", path), InputError);
  std::ofstream(path) << R"({"serving_iteration_overhead": {"value_s": {"vllm": 0.0025}}})";
  EXPECT_THROW(FittedIterationOverhead("vllm", path), InputError);
  // A scenario naming an engine gets the committed value; its own
  // scheduler.iteration_overhead wins.
  nlohmann::json doc = TestServeDoc();
  doc["engine"] = "vllm";
  EXPECT_EQ(ParseServeScenario(doc, "t.json").iteration_overhead,
            FittedIterationOverhead("vllm", DefaultFittedConstantsPath()));
  doc["scheduler"]["iteration_overhead"] = "1 ms";
  EXPECT_EQ(ParseServeScenario(doc, "t.json").iteration_overhead, Time::Ms(1));
}

}  // namespace
}  // namespace stacksim::serve
