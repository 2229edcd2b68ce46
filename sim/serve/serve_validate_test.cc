#include "sim/serve/serve_validate.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "sim/util/error.h"

namespace stacksim::serve {
namespace {

// A TensorRT-LLM offline throughput entry as validation/serving_runs.json
// writes them, with fewer requests.
nlohmann::json OfflineEntry() {
  return nlohmann::json::parse(R"({
    "id": "test-offline", "source": {"title": "t"}, "tier": "A", "scored": true, "kind": "offline_throughput",
    "engine": {"name": "TensorRT-LLM", "version": "1.0"},
    "model": {"name": "llama3.1-8b", "hf_name": "x", "notes": null},
    "hardware": {"gpu": "h100-sxm-80gb", "gpus": 1, "gpus_per_node": 8, "interconnect": null, "notes": null},
    "parallelism": {"tp": 1, "pp": 1, "ep": 1, "replicas": 1},
    "precision": {"weights": "fp8", "kv_cache": null, "compute": "fp8", "notes": null},
    "scheduler": {"batching": "in-flight", "max_batch_size": null, "max_num_batched_tokens": null, "chunk_size": null, "other": null},
    "workload": {"dataset": "synthetic", "input_tokens": 128, "output_tokens": 128, "length_distribution": "fixed",
                 "num_requests": 64, "arrival": "all at once", "request_rate_qps": null, "concurrency": null},
    "measured": {"output_tokens_per_s": 1000, "output_tokens_per_s_scope": "total"},
    "derived_fields": [], "unverified_fields": [], "confidence": "", "caveats": ""
  })");
}

nlohmann::json StaticEntry(const char* engine, int batch, int input) {
  nlohmann::json e = OfflineEntry();
  e["kind"] = "static_batch_throughput";
  e["engine"]["name"] = engine;
  e["model"]["name"] = "llama2-70b";
  e["hardware"]["gpus"] = 4;
  e["parallelism"]["tp"] = 4;
  e["precision"] = {{"weights", "fp16"}, {"kv_cache", "fp16"}, {"compute", "fp16"}};
  e["hardware"]["gpu"] = "a100-sxm-80gb";
  e["scheduler"]["max_batch_size"] = batch;
  e["workload"]["num_requests"] = batch;
  e["workload"]["input_tokens"] = input;
  return e;
}

std::string ErrorOf(const nlohmann::json& entry) {
  try {
    PlanServingRun(entry, "runs.json", "runs[0]");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(ServeValidate, OfflineEntryIsABurstAtTimeZeroWithEngineDefaults) {
  ServingRunPlan p = PlanServingRun(OfflineEntry(), "runs.json", "runs[0]");
  ASSERT_EQ(p.requests.size(), 64u);
  for (const auto& r : p.requests) {
    EXPECT_EQ(r.arrival, Time::Zero());
    EXPECT_EQ(r.prompt_tokens, 128);
    EXPECT_EQ(r.output_tokens, 128);
  }
  EXPECT_EQ(p.clients, 0);
  // In-flight batching: decodes and whole prompts under a token budget,
  // requests admitted with blocks for their whole output.
  EXPECT_EQ(p.config.scheduler, SchedulerKind::kInflight);
  EXPECT_EQ(p.config.admission, Admission::kGuaranteedNoEvict);
  EXPECT_EQ(p.config.decode_attention, DecodeAttention::kPerKvHead);
  EXPECT_EQ(p.config.max_sequences, 2048);
  EXPECT_EQ(p.config.max_batched_tokens, 8192);
  EXPECT_EQ(p.config.weights, WeightFormat::kFp8);
  EXPECT_EQ(p.config.compute, config::Precision::kFp8);
  // TensorRT-LLM keeps an fp8 checkpoint's KV cache in fp8 (engines/tensorrt-llm.json).
  EXPECT_EQ(p.config.kv, KvFormat::kFp8);
  EXPECT_EQ(p.config.engine, "tensorrt-llm");
  EXPECT_EQ(p.config.kv_memory, KvMemoryRule::kFree);
  EXPECT_EQ(p.config.profile.name, "h100-sxm-80gb");
  EXPECT_EQ(p.choices.size(), 3u);  // kv format and both limits were not published
}

TEST(ServeValidate, StaticBatchIsPrefilledInOnePass) {
  ServingRunPlan p = PlanServingRun(StaticEntry("TensorRT-LLM", 64, 2048), "runs.json", "runs[0]");
  EXPECT_EQ(p.config.scheduler, SchedulerKind::kStatic);
  EXPECT_EQ(p.config.max_sequences, 64);
  EXPECT_EQ(p.config.max_batched_tokens, 64 * 2048);
  EXPECT_EQ(p.config.tp, 4);
  EXPECT_EQ(p.config.weights, WeightFormat::kBf16);  // fp16 is simulated as bf16
  EXPECT_EQ(p.requests.size(), 64u);
}

// TensorRT-LLM releases before 0.8 have no XQA kernel: their entries take
// the masked-MHA profile (engines/tensorrt-llm-0.6.json); 0.8 and later,
// and an entry without a version, the current one.
TEST(ServeValidate, TensorRtLlmBeforeXqaTakesTheMaskedMhaProfile) {
  nlohmann::json e = StaticEntry("TensorRT-LLM", 64, 2048);
  for (const char* v : {"0.5", "0.6.1 (gptSessionBenchmark, static batching)", "0.7.1"}) {
    e["engine"]["version"] = v;
    ServingRunPlan p = PlanServingRun(e, "runs.json", "runs[0]");
    EXPECT_EQ(p.config.engine, "tensorrt-llm-0.6") << v;
    EXPECT_EQ(p.config.decode_attention, DecodeAttention::kPerQueryHead) << v;
    EXPECT_EQ(p.config.cuda_graph_max_batch, 0) << v;
  }
  for (const char* v : {"0.8.0", "0.10", "1.0 (trtllm-bench, PyTorch backend)", "unknown"}) {
    e["engine"]["version"] = v;
    EXPECT_EQ(PlanServingRun(e, "runs.json", "runs[0]").config.engine, "tensorrt-llm") << v;
  }
  e["engine"].erase("version");
  EXPECT_EQ(PlanServingRun(e, "runs.json", "runs[0]").config.engine, "tensorrt-llm");
}

TEST(ServeValidate, EachEngineReleaseTakesItsProfile) {
  nlohmann::json e = OfflineEntry();
  e["engine"]["name"] = "vLLM";
  auto engine_of = [&](const char* version) {
    e["engine"]["version"] = version;
    return PlanServingRun(e, "runs.json", "runs[0]").config.engine;
  };
  EXPECT_EQ(engine_of("0.6.3.post1"), "vllm");
  // V1 is the default engine from 0.8.0; an offline run takes the LLM
  // class's defaults.
  EXPECT_EQ(engine_of("0.8.5"), "vllm-v1-offline");
  e["kind"] = "online_latency_concurrency";
  e["workload"]["concurrency"] = 8;
  EXPECT_EQ(engine_of("0.8.5"), "vllm-v1");
  EXPECT_EQ(engine_of("v0.10.1"), "vllm-v1");
  EXPECT_EQ(engine_of("1.0.0"), "vllm-v1");
  e["kind"] = "offline_throughput";
  e["workload"]["concurrency"] = nullptr;
  e["engine"]["version"] = "main branch at the build";
  ServingRunPlan unversioned = PlanServingRun(e, "runs.json", "runs[0]");
  EXPECT_EQ(unversioned.config.engine, "vllm");
  EXPECT_NE(nlohmann::json(unversioned.choices).dump().find("V0 scheduler"), std::string::npos);
  // vLLM V1's batch defaults follow the GPU: larger on the H100 (offline:
  // 16384 tokens against 8192).
  e["engine"]["version"] = "0.10.1";
  e["scheduler"]["max_num_batched_tokens"] = nullptr;
  e["precision"] = {{"weights", "bf16"}, {"kv_cache", "bf16"}, {"compute", "bf16"}};  // the A100 has no fp8
  const ServingRunPlan h100 = PlanServingRun(e, "runs.json", "runs[0]");
  e["hardware"]["gpu"] = "a100-sxm-80gb";
  const ServingRunPlan a100 = PlanServingRun(e, "runs.json", "runs[0]");
  EXPECT_GT(h100.config.max_batched_tokens, a100.config.max_batched_tokens);
  EXPECT_EQ(h100.config.max_batched_tokens, 16384);
  EXPECT_EQ(a100.config.max_batched_tokens, 8192);
  // Any GPU with a shipped system: Blackwell and AMD too.
  for (const char* gpu : {"b200", "mi300x"}) {
    e["hardware"]["gpu"] = gpu;
    const ServingRunPlan p = PlanServingRun(e, "runs.json", "runs[0]");
    EXPECT_EQ(p.config.profile.name, gpu);
    EXPECT_EQ(p.config.max_sequences, 1024) << gpu;  // at least 70 GiB: vLLM's larger default
  }
  e["hardware"]["gpu"] = "h100-sxm-80gb";
  e["engine"] = {{"name", "SGLang"}, {"version", "0.4.6"}};
  const ServingRunPlan sglang = PlanServingRun(e, "runs.json", "runs[0]");
  EXPECT_EQ(sglang.config.engine, "sglang");
  EXPECT_EQ(sglang.config.scheduler, SchedulerKind::kPrefillFirst);
  EXPECT_EQ(sglang.config.kv_memory, KvMemoryRule::kStatic);
  // An engine without a profile is not taken for another.
  e["engine"] = {{"name", "Zorblax Serve"}, {"version", "2.0"}};
  const std::string error = ErrorOf(e);
  EXPECT_NE(error.find("runs[0].engine.name"), std::string::npos) << error;
  EXPECT_NE(error.find("no engine profile for 'Zorblax Serve'"), std::string::npos) << error;
}

// TGI 3.x chunks prompts into the running batch under a large prefill
// budget and sizes its KV cache from the whole memory; 2.x prefills in
// batches of their own and takes a share of the free memory
// (engines/tgi-3.json, engines/tgi-2.json).
TEST(ServeValidate, TgiEntriesTakeTheProfileOfTheirMajorRelease) {
  nlohmann::json e = OfflineEntry();
  e["engine"] = {{"name", "TGI"}, {"version", "3.0.1"}};
  e["precision"] = {{"weights", "bf16"}, {"kv_cache", nullptr}, {"compute", "bf16"}};
  ServingRunPlan p = PlanServingRun(e, "runs.json", "runs[0]");
  EXPECT_EQ(p.config.engine, "tgi-3");
  EXPECT_EQ(p.config.scheduler, SchedulerKind::kChunked);
  EXPECT_EQ(p.config.admission, Admission::kGuaranteedNoEvict);
  EXPECT_EQ(p.config.kv_memory, KvMemoryRule::kTotal);
  EXPECT_DOUBLE_EQ(p.config.gpu_memory_utilization, 0.9);
  EXPECT_EQ(p.config.max_sequences, 128);
  EXPECT_EQ(p.config.max_batched_tokens, 59870);
  EXPECT_EQ(p.config.cuda_graph_max_batch, 32);
  EXPECT_EQ(p.config.decode_attention, DecodeAttention::kPerKvHead);
  EXPECT_TRUE(p.config.prefix_caching);
  EXPECT_EQ(p.config.kv, KvFormat::kBf16);
  const std::string choices = nlohmann::json(p.choices).dump();
  EXPECT_NE(choices.find("max_batched_tokens=59870 (engine default)"), std::string::npos) << choices;
  EXPECT_NE(choices.find("max_sequences=128 (engine default)"), std::string::npos) << choices;
  // An fp8 checkpoint keeps a 16-bit cache unless told otherwise.
  e["precision"] = {{"weights", "fp8"}, {"kv_cache", nullptr}, {"compute", "fp8"}};
  EXPECT_EQ(PlanServingRun(e, "runs.json", "runs[0]").config.kv, KvFormat::kBf16);
  e["precision"] = {{"weights", "bf16"}, {"kv_cache", nullptr}, {"compute", "bf16"}};

  e["engine"] = {{"name", "Hugging Face Text Generation Inference"}, {"version", "v2.0.4"}};
  p = PlanServingRun(e, "runs.json", "runs[0]");
  EXPECT_EQ(p.config.engine, "tgi-2");
  EXPECT_EQ(p.config.scheduler, SchedulerKind::kContinuous);
  EXPECT_EQ(p.config.admission, Admission::kGuaranteedNoEvict);
  EXPECT_EQ(p.config.kv_memory, KvMemoryRule::kFree);
  EXPECT_DOUBLE_EQ(p.config.gpu_memory_utilization, 0.95);
  EXPECT_EQ(p.config.max_batched_tokens, 4145);
  EXPECT_EQ(p.config.decode_attention, DecodeAttention::kPerQueryHead);
  EXPECT_FALSE(p.config.prefix_caching);

  auto engine_of = [&](const char* name, const char* version) {
    e["engine"] = {{"name", name}, {"version", version}};
    p = PlanServingRun(e, "runs.json", "runs[0]");
    return p.config.engine;
  };
  EXPECT_EQ(engine_of("tgi", "3"), "tgi-3");  // the major release is enough
  EXPECT_EQ(engine_of("TGI", "2.4.1"), "tgi-2");
  // 1.x has no profile of its own: the 2.x defaults, said among the choices.
  EXPECT_EQ(engine_of("TGI", "1.4.5"), "tgi-2");
  EXPECT_NE(nlohmann::json(p.choices).dump().find("TGI 1.4.5 has no profile of its own"), std::string::npos);
  // No release number: the current server.
  EXPECT_EQ(engine_of("text generation inference", "latest"), "tgi-3");
  EXPECT_NE(nlohmann::json(p.choices).dump().find("the current 3.x server"), std::string::npos);
  // TGI's TensorRT-LLM backend batches as TensorRT-LLM does.
  EXPECT_EQ(engine_of("TGI (TensorRT-LLM backend)", "3.0.1"), "tensorrt-llm");
}

TEST(ServeValidate, AModelNamedAsPublishedFindsItsFile) {
  nlohmann::json e = OfflineEntry();
  e["model"]["name"] = "Meta-Llama-3.1-8B-Instruct";
  ServingRunPlan p = PlanServingRun(e, "runs.json", "runs[0]");
  EXPECT_EQ(p.config.model.name, "Llama 3.1 8B");
  EXPECT_NE(nlohmann::json(p.choices).dump().find("model=llama3.1-8b (matched 'Meta-Llama-3.1-8B-Instruct')"),
            std::string::npos);
  e["model"]["name"] = nullptr;
  e["model"]["hf_name"] = "meta-llama/Llama-3.1-8B-Instruct";
  EXPECT_EQ(PlanServingRun(e, "runs.json", "runs[0]").config.model.name, "Llama 3.1 8B");
  e["model"]["hf_name"] = "01-ai/Yi-34B";
  EXPECT_NE(ErrorOf(e).find("runs[0].model.name: no model file"), std::string::npos) << ErrorOf(e);
}

// GPT-OSS ships MXFP4 weights: stored as fp4 weights (dequantized for bf16
// compute), and the reading is said; FP4 compute is priced as fp8.
TEST(ServeValidate, FourBitFloatFormatsAreReadAsTheNearestModelledOnes) {
  nlohmann::json e = OfflineEntry();
  e["engine"] = {{"name", "vLLM"}, {"version", "0.10.1"}};
  e["model"]["name"] = "gpt-oss-120b";
  e["precision"] = {{"weights", "mxfp4"}, {"kv_cache", "bf16"}, {"compute", "bf16"}};
  ServingRunPlan p = PlanServingRun(e, "runs.json", "runs[0]");
  EXPECT_EQ(p.config.weights, WeightFormat::kFp4);
  EXPECT_NE(nlohmann::json(p.choices).dump().find("weights mxfp4 read as fp4"), std::string::npos);
  e["hardware"]["gpu"] = "b200";
  e["precision"] = {{"weights", "nvfp4"}, {"kv_cache", "fp8"}, {"compute", "nvfp4"}};
  p = PlanServingRun(e, "runs.json", "runs[0]");
  EXPECT_EQ(p.config.compute, config::Precision::kFp8);
  EXPECT_NE(nlohmann::json(p.choices).dump().find("compute nvfp4 read as fp8"), std::string::npos);
}

TEST(ServeValidate, LmdeployBatchesPersistentlyWithItsPrefillBudget) {
  nlohmann::json e = StaticEntry("LMDeploy (TurboMind)", 64, 2048);
  e["engine"]["version"] = "0.4.2";
  ServingRunPlan p = PlanServingRun(e, "runs.json", "runs[0]");
  EXPECT_EQ(p.config.engine, "lmdeploy-turbomind");
  EXPECT_EQ(p.config.scheduler, SchedulerKind::kContinuous);
  EXPECT_EQ(p.config.max_sequences, 64);
  EXPECT_EQ(p.config.max_batched_tokens, 8192);
  // LMDeploy 0.1: TurboMind 2.0's persistent batch, every admitted context
  // in one iteration.
  e["engine"]["version"] = "v0.1.0a1";
  p = PlanServingRun(e, "runs.json", "runs[0]");
  EXPECT_EQ(p.config.engine, "lmdeploy-turbomind-0.1");
  EXPECT_EQ(p.config.scheduler, SchedulerKind::kPersistent);
  EXPECT_EQ(p.config.max_batched_tokens, 8192);  // a context sub-batch, not the iteration
}

TEST(ServeValidate, ConcurrencyEntryIsAClosedLoop) {
  nlohmann::json e = OfflineEntry();
  e["kind"] = "online_latency_concurrency";
  e["workload"]["num_requests"] = nullptr;
  e["workload"]["concurrency"] = 5;
  ServingRunPlan p = PlanServingRun(e, "runs.json", "runs[0]");
  EXPECT_EQ(p.clients, 5);
  EXPECT_EQ(p.rounds, 10);
  EXPECT_TRUE(p.requests.empty());
  EXPECT_EQ(p.request.prompt_tokens, 128);
}

TEST(ServeValidate, ClosedLoopSendsTheNextRequestWhenThePreviousFinishes) {
  ServingRunPlan p = PlanServingRun(OfflineEntry(), "runs.json", "runs[0]");
  const int clients = 3;
  ServeResult r = SimulateClosedLoop(p.config, p.request, clients, 4);
  ASSERT_EQ(r.requests.size(), 12u);
  for (size_t i = 0; i < 12; ++i) {
    if (i < clients) {
      EXPECT_EQ(r.requests[i].arrival, Time::Zero());
    } else {
      EXPECT_EQ(r.requests[i].arrival, r.requests[i - clients].finish) << i;
    }
    EXPECT_GT(r.requests[i].finish, r.requests[i].arrival);
  }
  // Never more than `clients` requests in flight.
  for (const auto& a : r.requests) {
    int in_flight = 0;
    for (const auto& b : r.requests) in_flight += b.arrival <= a.arrival && a.arrival < b.finish;
    EXPECT_LE(in_flight, clients);
  }
}

TEST(ServeValidate, EntriesThatCannotBeModelledSayWhy) {
  nlohmann::json e = OfflineEntry();
  e["model"]["name"] = nullptr;
  EXPECT_NE(ErrorOf(e).find("runs[0].model.name"), std::string::npos) << ErrorOf(e);

  e = OfflineEntry();
  e["hardware"]["gpu"] = "a100-pcie-80gb";
  EXPECT_NE(ErrorOf(e).find("runs[0].hardware.gpu"), std::string::npos) << ErrorOf(e);

  e = OfflineEntry();
  e["workload"]["input_tokens"] = nullptr;
  EXPECT_NE(ErrorOf(e).find("not published"), std::string::npos) << ErrorOf(e);
}

TEST(ServeValidate, MalformedEntriesNameTheField) {
  nlohmann::json e = OfflineEntry();
  e["workload"]["inputs"] = 3;  // a typo is not ignored
  EXPECT_NE(ErrorOf(e).find("runs[0].workload.inputs"), std::string::npos) << ErrorOf(e);

  e = OfflineEntry();
  e["precision"]["weights"] = "fp9";
  EXPECT_NE(ErrorOf(e).find("runs[0].precision.weights"), std::string::npos) << ErrorOf(e);

  e = OfflineEntry();
  e["hardware"]["gpus"] = 2;  // tp 1 x replicas 1
  EXPECT_NE(ErrorOf(e).find("runs[0].hardware.gpus"), std::string::npos) << ErrorOf(e);

  e = StaticEntry("TensorRT-LLM", 8, 128);
  e["scheduler"]["max_batch_size"] = nullptr;
  EXPECT_NE(ErrorOf(e).find("runs[0].scheduler.max_batch_size"), std::string::npos) << ErrorOf(e);
}

TEST(ServeValidate, ReportComparesEachMetricAndScopesThroughputPerGpu) {
  nlohmann::json total = OfflineEntry();
  nlohmann::json per_gpu = OfflineEntry();
  per_gpu["id"] = "test-per-gpu";
  per_gpu["hardware"]["gpus"] = 2;
  per_gpu["parallelism"]["replicas"] = 2;
  per_gpu["workload"]["num_requests"] = 128;
  per_gpu["measured"]["output_tokens_per_s_scope"] = "per GPU (out tok/s/GPU)";
  nlohmann::json missing = OfflineEntry();
  missing["id"] = "test-missing";
  missing["model"]["name"] = nullptr;
  nlohmann::json doc = {{"schema", "stacksim.validation.serving/1"}, {"runs", {total, per_gpu, missing}}};
  std::string path = (std::filesystem::temp_directory_path() / "stacksim_serve_validate_test.json").string();
  std::ofstream(path) << doc.dump();
  ServingValidationReport rep = RunServingValidation(path);
  std::remove(path.c_str());
  ASSERT_EQ(rep.runs.size(), 3u);  // none dropped
  ASSERT_EQ(rep.runs[0].metrics.size(), 1u);
  ASSERT_EQ(rep.runs[1].metrics.size(), 1u);
  EXPECT_FALSE(rep.runs[2].error.empty());
  // Two replicas each serve the same 64 requests as the one-GPU run.
  EXPECT_NEAR(rep.runs[1].metrics[0].predicted / rep.runs[0].metrics[0].predicted, 1.0, 0.01);
  const auto& mc = rep.runs[0].metrics[0];
  EXPECT_DOUBLE_EQ(mc.error_pct, (mc.predicted - 1000) / 1000 * 100);
  EXPECT_EQ(rep.scored_total, 3);
  EXPECT_EQ(rep.scored_predicted, 2);
  EXPECT_EQ(rep.overall.metrics, 2);
}

// An entry written with vLLM's benchmark result keys: each compared with
// the statistic of the same name, each percentile its own metric.
TEST(ServeValidate, VllmBenchmarkKeysAreComparedStatisticByStatistic) {
  nlohmann::json e = OfflineEntry();
  e["engine"] = {{"name", "vLLM"}, {"version", "0.10.1"}};
  e["kind"] = "online_latency_rate";
  e["workload"]["request_rate_qps"] = 4;
  e["workload"]["num_requests"] = 100;
  e["measured"] = {{"mean_ttft_ms", 40.0},        {"median_ttft_ms", 35.0},   {"p99_ttft_ms", 90.0},
                   {"mean_tpot_ms", 12.0},        {"p95_itl_ms", 15.0},       {"mean_e2el_ms", 1600.0},
                   {"request_throughput", 3.9},   {"output_throughput", 500.0},
                   {"total_token_throughput", 1000.0}};
  nlohmann::json doc = {{"schema", "stacksim.validation.serving/1"}, {"runs", {e}}};
  std::string path = (std::filesystem::temp_directory_path() / "stacksim_serve_validate_vllm_keys.json").string();
  std::ofstream(path) << doc.dump();
  ServingValidationReport rep = RunServingValidation(path);
  std::remove(path.c_str());
  ASSERT_EQ(rep.runs.size(), 1u);
  ASSERT_TRUE(rep.runs[0].error.empty()) << rep.runs[0].error;
  std::map<std::string, const MetricComparison*> by_key;
  for (const MetricComparison& mc : rep.runs[0].metrics) by_key[mc.key] = &mc;
  EXPECT_EQ(by_key.size(), 9u);
  ASSERT_TRUE(by_key.count("measured.median_ttft_ms"));
  EXPECT_EQ(by_key["measured.median_ttft_ms"]->simulated, "p50 TTFT");
  EXPECT_DOUBLE_EQ(by_key["measured.median_ttft_ms"]->measured, 0.035);
  EXPECT_EQ(by_key["measured.p95_itl_ms"]->simulated, "p95 per-token latency");
  EXPECT_EQ(by_key["measured.p95_itl_ms"]->kind, MetricKind::kTpot);
  EXPECT_EQ(by_key["measured.total_token_throughput"]->kind, MetricKind::kTokensPerS);
  // Prompt and output tokens: 128 + 128 per request, twice the output rate.
  EXPECT_NEAR(by_key["measured.total_token_throughput"]->predicted / by_key["measured.output_throughput"]->predicted,
              2.0, 1e-9);
  EXPECT_LT(by_key["measured.median_ttft_ms"]->predicted, by_key["measured.p99_ttft_ms"]->predicted);
  e["workload"]["request_rate_qps"] = nullptr;
  EXPECT_NE(ErrorOf(e).find("runs[0].workload.request_rate_qps"), std::string::npos) << ErrorOf(e);
}

TEST(ServeValidate, WrongSchemaNamesTheFile) {
  std::string path = (std::filesystem::temp_directory_path() / "stacksim_serve_validate_schema.json").string();
  std::ofstream(path) << R"({"schema": "stacksim.validation.training/1", "runs": []})";
  try {
    RunServingValidation(path);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
  std::remove(path.c_str());
}

// A closed loop's ramp (every client's first request at t = 0) is not what
// the benchmark measures: the window opens after the warm-up rounds and
// closes when the first client stops, and throughput is what completed in it.
TEST(ServeValidate, SteadyStateWindowDropsTheRampAndTheDrain) {
  ServingRunPlan p = PlanServingRun(OfflineEntry(), "runs.json", "runs[0]");
  const int clients = 4;
  const int64_t rounds = 6;
  ServeResult all = SimulateClosedLoop(p.config, p.request, clients, rounds);
  ServeResult w = SteadyStateWindow(all, clients, rounds, 2);
  ASSERT_FALSE(w.requests.empty());
  EXPECT_LT(w.requests.size(), all.requests.size());
  Time open;
  for (int c = 0; c < clients; ++c) open = std::max(open, all.requests[clients + c].finish);
  for (const RequestOutcome& o : w.requests) EXPECT_GT(o.finish, open);
  for (const RequestOutcome& o : w.requests) EXPECT_GT(o.arrival, Time::Zero());  // no first-round request
  EXPECT_LT(w.makespan, all.makespan);
  // No warm-up: the simulation as it is.
  EXPECT_EQ(SteadyStateWindow(all, clients, rounds, 0).requests.size(), all.requests.size());
}

}  // namespace
}  // namespace stacksim::serve
