#include "sim/serve/serve_validate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>

#include "sim/config/scenario.h"
#include "sim/serve/engine_profile.h"
#include "sim/serve/serve_report.h"
#include "sim/util/error.h"
#include "sim/util/json_reader.h"
#include "sim/util/parallel.h"

namespace stacksim::serve {
namespace {

bool Contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

// Storage and compute formats: fp16 has bf16's size and tensor-core peak, so
// it is simulated as bf16. The 4-bit floating formats (MXFP4, NVFP4) are
// stored as fp4 weights; FP4 compute and FP4 KV caches are read as fp8, the
// nearest format modelled, and the reading is said among the choices.
std::string FormatName(JsonNode node, const char* what, std::vector<std::string>& choices) {
  std::string v = node.OneOf({"bf16", "fp16", "fp8", "int8", "int4", "fp4", "mxfp4", "nvfp4"});
  if (v == "fp16") return "bf16";
  if (v == "fp4" || v == "mxfp4" || v == "nvfp4") {
    const bool weights = std::string(what) == "weights";
    const std::string as = weights ? "fp4" : "fp8";
    choices.push_back(std::string(what) + " " + v + " read as " + as +
                      (weights ? " (4-bit values, an fp8 scale per 16)" : " (FP4 tensor cores and caches are not modelled)"));
    return as;
  }
  return v;
}

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char ch) { return std::tolower(ch); });
  return s;
}

// The engine profile (engines/*.json) of an entry's engine: its defaults
// fill what the entry leaves open (each reported as a choice). NIM's page
// does not name its backend; its optimized fp8 profiles are TensorRT-LLM
// engines. Sarathi-Serve is built on vLLM.
// TensorRT-LLM releases before 0.8 (no XQA generation kernel) have their
// own profile. Text Generation Inference (TGI) has one per major release:
// 3.x chunks prefills into the running batch, earlier releases prefill in
// batches of their own (TGI's TensorRT-LLM backend is taken as TensorRT-LLM).
std::string EngineProfileFor(const std::string& engine, const std::string& version, bool offline,
                             std::vector<std::string>& choices, const JsonNode& at) {
  // "0.8.5", "v0.4.6.post1": the release's major and minor.
  int major = 0, minor = 0;
  const int fields = std::sscanf(version.c_str() + (version.rfind('v', 0) == 0 ? 1 : 0), "%d.%d", &major, &minor);
  const bool parsed = fields == 2;
  if (Contains(engine, "NIM")) {
    choices.push_back("engine tensorrt-llm (NIM's backend is not stated; its fp8 profiles are TensorRT-LLM engines)");
    return "tensorrt-llm";
  }
  if (Contains(engine, "TensorRT-LLM")) return parsed && major == 0 && minor < 8 ? "tensorrt-llm-0.6" : "tensorrt-llm";
  if (Contains(engine, "LMDeploy")) {
    // TurboMind's persistent batch before max_prefill_token_num (0.2).
    return parsed && major == 0 && minor < 2 ? "lmdeploy-turbomind-0.1" : "lmdeploy-turbomind";
  }
  if (Contains(Lower(engine), "sglang")) return "sglang";
  if (Contains(Lower(engine), "tgi") || Contains(Lower(engine), "text generation inference")) {
    if (fields < 1) {  // "3" is enough: the profiles follow the major release
      choices.push_back("engine tgi-3 (the release is not stated as a version number: the current 3.x server)");
      return "tgi-3";
    }
    if (major < 2) choices.push_back("engine tgi-2 (TGI " + version + " has no profile of its own: the 2.x defaults stand in)");
    return major >= 3 ? "tgi-3" : "tgi-2";
  }
  if (Contains(engine, "Sarathi")) return "vllm";
  if (Contains(Lower(engine), "vllm")) {
    // The V1 engine is the default from 0.8.0 (VLLM_USE_V1 on); an offline
    // run (benchmark_throughput, LLM.generate) takes the LLM class's batch
    // defaults, larger than the server's.
    if (parsed && (major > 0 || minor >= 8)) return offline ? "vllm-v1-offline" : "vllm-v1";
    if (parsed) return "vllm";
    choices.push_back("engine vllm (V0 scheduler: the release is not stated as a version number)");
    return "vllm";
  }
  at.Fail("no engine profile for '" + engine + "' (engines/: vLLM, SGLang, TensorRT-LLM and NIM, LMDeploy, TGI)");
}

}  // namespace

const char* MetricKindName(MetricKind k) {
  switch (k) {
    case MetricKind::kOutputTokensPerS: return "output_tokens_per_s";
    case MetricKind::kRequestsPerS: return "requests_per_s";
    case MetricKind::kTtft: return "ttft";
    case MetricKind::kTpot: return "tpot";
    case MetricKind::kE2e: return "e2e_latency";
    case MetricKind::kTokensPerS: return "tokens_per_s";
  }
  return "?";
}

namespace {

// What a published serving measurement measured (the run's "kind").
enum class MeasurementKind {
  kOfflineThroughput,
  kStaticBatchThroughput,
  kStaticBatchLatency,
  kPrefillLatencyBatch1,
  kOnlineLatencyConcurrency,
  kOnlineLatencyRate,  // Poisson arrivals at request_rate_qps (vLLM's benchmark_serving --request-rate)
  kChunkedPrefillOnlineLatency,
};

MeasurementKind ParseMeasurementKind(const JsonNode& v) {
  const std::string text = v.OneOf({"offline_throughput", "static_batch_throughput", "static_batch_latency",
                                    "prefill_latency_batch1", "online_latency_concurrency",
                                    "online_latency_rate", "chunked_prefill_online_latency"});
  if (text == "static_batch_throughput") return MeasurementKind::kStaticBatchThroughput;
  if (text == "static_batch_latency") return MeasurementKind::kStaticBatchLatency;
  if (text == "prefill_latency_batch1") return MeasurementKind::kPrefillLatencyBatch1;
  if (text == "online_latency_concurrency") return MeasurementKind::kOnlineLatencyConcurrency;
  if (text == "online_latency_rate") return MeasurementKind::kOnlineLatencyRate;
  if (text == "chunked_prefill_online_latency") return MeasurementKind::kChunkedPrefillOnlineLatency;
  return MeasurementKind::kOfflineThroughput;
}

}  // namespace

ServingRunPlan PlanServingRun(const nlohmann::json& run, const std::string& file, const std::string& path) {
  JsonNode node(run, file, path);
  JsonObject obj(node);
  ServingRunPlan plan;
  std::string id = obj.Required("id").String();
  const MeasurementKind kind = ParseMeasurementKind(obj.Required("kind"));
  obj.Ignore({"source", "tier", "scored", "measured", "derived_fields", "unverified_fields", "confidence", "caveats"});

  JsonObject engine_obj(obj.Required("engine"));
  const JsonNode engine_name = engine_obj.Required("name");
  std::string engine = engine_name.String();
  std::string version;
  if (auto v = engine_obj.Optional("version")) version = v->String();
  engine_obj.Finish();
  const std::string engine_file =
      config::ResolveDataFile("engines",
                              EngineProfileFor(engine, version, kind == MeasurementKind::kOfflineThroughput,
                                               plan.choices, engine_name),
                              "");
  const EngineProfile profile = LoadEngineProfile(engine_file);

  nlohmann::json doc;
  doc["name"] = id;
  doc["engine"] = engine_file;

  // The model file: the entry's name as a file stem, else the shipped model
  // whose name reduces to the same key as the entry's name or Hugging Face
  // name ("Meta-Llama-3.1-8B-Instruct" -> llama3.1-8b; said among the choices).
  JsonObject m(obj.Required("model"));
  m.Ignore({"notes"});
  auto model = m.Optional("name");
  auto hf_name = m.Optional("hf_name");
  m.Finish();
  std::string model_file;
  for (const auto& n : {model, hf_name}) {
    if (!n || !model_file.empty()) continue;
    model_file = config::FindShippedModel(n->String());
    if (!model_file.empty() && model_file != n->String()) {
      plan.choices.push_back("model=" + model_file + " (matched '" + n->String() + "')");
    }
  }
  if (model_file.empty()) throw InputError(file, path + ".model.name", "no model file in models/ for this model");
  doc["model"] = model_file;

  JsonObject hw(obj.Required("hardware"));
  JsonNode gpu_node = hw.Required("gpu");
  std::string gpu = gpu_node.String();
  std::string topology = config::SystemTopologyFor(gpu);
  if (topology.empty()) gpu_node.Fail("no GPU profile and system topology for '" + gpu + "'");
  doc["topology"] = topology;
  doc["profile"] = gpu;  // the run's own GPU (an H100 SXM 96GB in the DGX H100's system)
  JsonNode gpus_node = hw.Required("gpus");
  int64_t gpus = gpus_node.PositiveInt();
  hw.Ignore({"gpus_per_node", "interconnect", "notes"});
  hw.Finish();

  JsonObject par(obj.Required("parallelism"));
  int64_t tp = par.Required("tp").PositiveInt();
  int64_t pp = par.Has("pp") ? par.Required("pp").PositiveInt() : 1;
  int64_t ep = par.Has("ep") ? par.Required("ep").PositiveInt() : 1;
  int64_t replicas = par.Has("replicas") ? par.Required("replicas").PositiveInt() : 1;
  par.Finish();
  if (tp * pp * replicas != gpus) {
    gpus_node.Fail(fmt::format("{} GPUs but tp {} x pp {} x replicas {} = {}", gpus, tp, pp, replicas, tp * pp * replicas));
  }
  doc["replica"] = {{"tp", tp}, {"pp", pp}, {"ep", ep}};
  doc["replicas"] = replicas;

  JsonObject prec(obj.Required("precision"));
  std::string weights = FormatName(prec.Required("weights"), "weights", plan.choices);
  std::string kv;
  if (auto k = prec.Optional("kv_cache")) {
    kv = FormatName(*k, "kv_cache", plan.choices);
  } else if (weights == "fp8" && profile.fp8_checkpoint_kv == "fp8") {
    kv = "fp8";
    plan.choices.push_back("kv_cache=fp8 (not stated; " + profile.name + " keeps an fp8 checkpoint's KV cache in fp8)");
  } else {
    // Engines keep the KV cache in the activation dtype unless told otherwise.
    kv = "bf16";
    plan.choices.push_back("kv_cache=bf16 (not stated; the engine's default)");
  }
  std::string compute = "bf16";
  if (auto c = prec.Optional("compute")) compute = FormatName(*c, "compute", plan.choices);
  prec.Ignore({"notes"});
  prec.Finish();
  doc["precision"] = {{"weights", weights}, {"kv_cache", kv}, {"compute", compute}};

  // Workload fields first: the scheduler's limits depend on the batch.
  JsonObject wl(obj.Required("workload"));
  wl.Ignore({"dataset", "length_distribution", "arrival"});
  auto input = wl.Optional("input_tokens");
  auto output = wl.Optional("output_tokens");
  if (!input || !output) {
    throw InputError(file, path + ".workload", "prompt and output lengths are not published (a dataset sample)");
  }
  Request shape;
  shape.prompt_tokens = input->PositiveInt();
  shape.output_tokens = output->PositiveInt();
  auto num_requests = wl.Optional("num_requests");
  auto rate = wl.Optional("request_rate_qps");
  auto concurrency = wl.Optional("concurrency");
  auto shared_prefix = wl.Optional("shared_prefix_tokens");  // prompts' common prefix (prefix caching reuses it)
  wl.Finish();

  JsonObject sch(obj.Required("scheduler"));
  sch.Ignore({"batching", "chunk_size", "other"});
  auto max_batch = sch.Optional("max_batch_size");
  auto max_tokens = sch.Optional("max_num_batched_tokens");
  sch.Finish();
  std::optional<nlohmann::json> speculative;
  if (auto spec = obj.Optional("speculative")) speculative = spec->json();
  obj.Finish();

  const EngineProfile& limits = profile;
  nlohmann::json scheduler;
  // A limit the entry leaves to the engine is left out of the scenario, so
  // the engine profile's default for this GPU applies; the choice naming it
  // is written once the scenario is built (a placeholder keeps its place).
  struct EngineDefault {
    size_t choice;                   // its place in plan.choices
    const char* text;                // fmt text of the choice, {} the value
    int64_t ServeConfig::*field;     // the limit the scenario resolved
  };
  std::vector<EngineDefault> defaults;
  auto engine_default = [&](const char* text, int64_t ServeConfig::*field) {
    defaults.push_back({plan.choices.size(), text, field});
    plan.choices.emplace_back();
  };
  int64_t requests = 0;
  const bool static_kind = kind == MeasurementKind::kStaticBatchThroughput ||
                           kind == MeasurementKind::kStaticBatchLatency ||
                           kind == MeasurementKind::kPrefillLatencyBatch1;
  if (static_kind) {
    if (!max_batch) throw InputError(file, path + ".scheduler.max_batch_size", "a static batch needs its size");
    int64_t batch = max_batch->PositiveInt();
    requests = num_requests ? num_requests->PositiveInt() : batch;
    if (Contains(engine, "LMDeploy")) {
      // TurboMind batches persistently: the batch's requests join as they
      // arrive (the engine's scheduler, its context budget).
      scheduler = {{"kind", limits.scheduler}, {"max_sequences", batch}};
      if (max_tokens) {
        scheduler["max_batched_tokens"] = max_tokens->PositiveInt();
      } else {
        engine_default("continuous batching, max_batched_tokens={} (engine default)", &ServeConfig::max_batched_tokens);
      }
    } else {
      // gptSessionBenchmark and vLLM's latency benchmark run the batch as one
      // unit: one prefill of every prompt, then decode steps of the batch.
      scheduler = {{"kind", "static"}, {"max_sequences", batch},
                   {"max_batched_tokens", std::max<int64_t>(batch * shape.prompt_tokens, 1)}};
    }
  } else {
    // TensorRT-LLM's in-flight batching runs context and generation requests
    // in one iteration under a token budget: the chunked-prefill scheduler.
    // Sarathi-Serve's point is chunked prefill on top of vLLM.
    std::string kind_name = Contains(engine, "Sarathi") ? "chunked-prefill" : limits.scheduler;
    scheduler = {{"kind", kind_name}};
    if (max_batch) {
      scheduler["max_sequences"] = max_batch->PositiveInt();
    } else {
      engine_default("max_sequences={} (engine default)", &ServeConfig::max_sequences);
    }
    if (max_tokens) {
      scheduler["max_batched_tokens"] = max_tokens->PositiveInt();
    } else {
      engine_default("max_batched_tokens={} (engine default)", &ServeConfig::max_batched_tokens);
    }
  }
  doc["scheduler"] = scheduler;
  // Speculative decoding, as the entry gives it (the scenario's keys: method,
  // draft_tokens, acceptance_rate or accepted_tokens_per_step, draft_layers
  // or draft_model); the scenario parser checks it.
  if (speculative) doc["speculative"] = *speculative;

  // The scenario's own workload block describes the lengths; the requests
  // themselves are built below (a burst, a batch or a closed loop is not an
  // arrival process the scenario format has).
  nlohmann::json lengths_in = {{"kind", "fixed"}, {"tokens", shape.prompt_tokens}};
  nlohmann::json lengths_out = {{"kind", "fixed"}, {"tokens", shape.output_tokens}};
  std::optional<double> qps;
  if (kind == MeasurementKind::kOnlineLatencyConcurrency) {
    if (!concurrency) throw InputError(file, path + ".workload.concurrency", "a closed loop needs its concurrency");
    plan.clients = static_cast<int>(concurrency->PositiveInt());
    // AIPerf's request count is not published: ten rounds per client.
    // Neither AIPerf's request count nor its warm-up is published: ten
    // rounds per client, the first two as warm-up (SteadyStateWindow).
    plan.rounds = num_requests ? std::max<int64_t>(1, num_requests->PositiveInt() / plan.clients) : 10;
    plan.warmup_rounds = plan.rounds > 2 ? 2 : 0;
    if (!num_requests) {
      plan.choices.push_back("closed loop of 10 rounds per client, measured after 2 rounds of warm-up until the first "
                             "client stops (request count and warm-up not published)");
    }
    requests = plan.clients * plan.rounds;
  } else if (rate || kind == MeasurementKind::kOnlineLatencyRate) {
    if (!rate) throw InputError(file, path + ".workload.request_rate_qps", "a Poisson run needs its request rate");
    qps = rate->PositiveNumber();
    if (!num_requests) throw InputError(file, path + ".workload.num_requests", "a Poisson run needs its request count");
    requests = num_requests->PositiveInt();
  } else if (!static_kind) {
    if (!num_requests) throw InputError(file, path + ".workload.num_requests", "an offline run needs its request count");
    requests = num_requests->PositiveInt();
  }
  doc["workload"] = {{"arrival", "poisson"}, {"rate_per_s", qps.value_or(1.0)}, {"requests", requests}, {"seed", 1},
                     {"prompt_tokens", lengths_in}, {"output_tokens", lengths_out}};
  if (shared_prefix) doc["workload"]["shared_prefix_tokens"] = shared_prefix->json();

  try {
    plan.config = ParseServeScenario(doc, file);
  } catch (const InputError& e) {
    throw InputError(file, path, std::string("the scenario built from this entry is invalid: ") + e.what());
  }
  for (const EngineDefault& d : defaults) plan.choices[d.choice] = fmt::format(fmt::runtime(d.text), plan.config.*d.field);
  plan.request = shape;
  if (qps) {
    plan.requests = GenerateRequests(plan.config.workload);
  } else if (plan.clients == 0) {
    plan.requests.assign(static_cast<size_t>(requests), shape);  // all at t = 0
  }
  return plan;
}

ServeResult SimulateClosedLoop(const ServeConfig& c, const Request& request, int clients, int64_t rounds) {
  // Request i is client i % clients, round i / clients: the first round
  // arrives at t = 0, every later request when its client's previous one
  // finishes (Request::after, resolved inside one simulation).
  const size_t n = static_cast<size_t>(clients) * static_cast<size_t>(rounds);
  std::vector<Request> reqs(n, request);
  for (size_t i = 0; i < n; ++i) {
    reqs[i].arrival = Time::Zero();
    reqs[i].after = i < static_cast<size_t>(clients) ? -1 : static_cast<int64_t>(i) - clients;
  }
  return SimulateServing(c, reqs);
}

ServeResult SteadyStateWindow(const ServeResult& r, int clients, int64_t rounds, int64_t warmup_rounds) {
  const size_t n = static_cast<size_t>(clients);
  if (clients <= 0 || warmup_rounds <= 0 || r.requests.size() != n * static_cast<size_t>(rounds)) return r;
  // Request i is client i % clients, round i / clients (SimulateClosedLoop).
  Time open, close = Time::Max();
  for (size_t c = 0; c < n; ++c) {
    open = std::max(open, r.requests[n * static_cast<size_t>(warmup_rounds - 1) + c].finish);
    close = std::min(close, r.requests[n * static_cast<size_t>(rounds - 1) + c].finish);
  }
  ServeResult w;
  w.iterations = r.iterations;
  w.preemptions = r.preemptions;
  w.kv_plan = r.kv_plan;
  for (const RequestOutcome& o : r.requests) {
    if (o.finish > open && o.finish <= close) w.requests.push_back(o);
  }
  for (const KvUsageSample& s : r.kv_usage) {
    if (s.time >= open && s.time <= close) w.kv_usage.push_back(s);
  }
  for (const TokenGap& g : r.token_gaps) {
    if (g.end_s > open.seconds() && g.end_s <= close.seconds()) w.token_gaps.push_back(g);
  }
  if (w.requests.empty() || close <= open) return r;
  w.makespan = close - open;
  return w;
}

namespace {

// Reads the entry's published metrics and compares each with `m`.
void Compare(const JsonNode& measured, const ServeConfig& c, const ServeMetrics& m, ServingRunOutcome& o) {
  JsonObject ms(measured);
  ms.Ignore({"statistic"});
  auto add = [&](MetricKind kind, const std::string& key, const std::string& simulated, double meas, double pred) {
    MetricComparison mc;
    mc.kind = kind;
    mc.key = "measured." + key;
    mc.simulated = simulated;
    mc.measured = meas;
    mc.predicted = pred;
    mc.error_pct = (pred - meas) / meas * 100.0;
    o.metrics.push_back(mc);
  };
  if (auto v = ms.Optional("output_tokens_per_s")) {
    JsonNode scope_node = ms.Required("output_tokens_per_s_scope");
    std::string scope = Lower(scope_node.String());
    double pred = m.output_tokens_per_s;
    const char* what = "output tokens/s, all GPUs";
    if (Contains(scope, "per gpu") || Contains(scope, "ambiguous")) {
      pred /= c.total_gpus();
      what = "output tokens/s per GPU";
      // The only ambiguous scope (TensorRT-LLM 0.6.1's A100 table) sits on a
      // page whose H100 table is per GPU.
      if (Contains(scope, "ambiguous")) o.choices.push_back("throughput scope read as per GPU (the same page's other table)");
    }
    add(MetricKind::kOutputTokensPerS, "output_tokens_per_s", what, v->PositiveNumber(), pred);
  } else {
    ms.Ignore({"output_tokens_per_s_scope"});
  }
  if (auto v = ms.Optional("requests_per_s")) {
    add(MetricKind::kRequestsPerS, "requests_per_s", "requests/s", v->PositiveNumber(), m.requests_per_s);
  }
  if (auto v = ms.Optional("ttft_ms")) add(MetricKind::kTtft, "ttft_ms", "mean TTFT", v->PositiveNumber() / 1e3, m.ttft.mean);
  if (auto v = ms.Optional("ttft_s")) {
    JsonObject t(*v);
    t.Ignore({"min", "max"});
    add(MetricKind::kTtft, "ttft_s.avg", "mean TTFT", t.Required("avg").PositiveNumber(), m.ttft.mean);
    t.Finish();
  }
  if (auto v = ms.Optional("ttft_p50_s")) add(MetricKind::kTtft, "ttft_p50_s", "p50 TTFT", v->PositiveNumber(), m.ttft.p50);
  if (auto v = ms.Optional("itl_ms")) add(MetricKind::kTpot, "itl_ms", "mean TPOT", v->PositiveNumber() / 1e3, m.tpot.mean);
  if (auto v = ms.Optional("token_latency_s")) {
    // LMDeploy's profile_generation takes its percentiles over every
    // token's latency (all requests' inter-token gaps together), not over
    // requests: the median token, not the median request's mean.
    JsonObject t(*v);
    t.Ignore({"p75", "p95", "p99"});
    add(MetricKind::kTpot, "token_latency_s.p50", "p50 per-token latency", t.Required("p50").PositiveNumber(),
        m.token_gap.p50);
    t.Finish();
    o.notes.push_back("token_latency_s p75/p95/p99 not scored (the tails depend on host jitter the simulator has not)");
  }
  if (auto v = ms.Optional("e2e_latency_ms")) {
    JsonObject t(*v);
    t.Ignore({"p50", "p99"});
    add(MetricKind::kE2e, "e2e_latency_ms.mean", "mean e2e latency", t.Required("mean").PositiveNumber() / 1e3, m.e2e.mean);
    t.Finish();
  }
  if (auto v = ms.Optional("tbt_p99_s")) {
    add(MetricKind::kTpot, "tbt_p99_s", "p99 per-token latency", v->PositiveNumber(), m.token_gap.p99);
  }
  // The result keys of vLLM's benchmark_serving.py / `vllm bench serve`
  // (SGLang's bench_serving writes the same): per request, TTFT, TPOT
  // ((e2e - TTFT) / (output tokens - 1)) and end-to-end latency; per token,
  // ITL over every request's token gaps; each as mean, median and the
  // percentiles the benchmark was asked for; throughput over the run.
  struct Series {
    const char* name;
    MetricKind kind;
    const char* what;
    const LatencyStats& stats;
  };
  const Series series[] = {{"ttft", MetricKind::kTtft, "TTFT", m.ttft},
                           {"tpot", MetricKind::kTpot, "TPOT", m.tpot},
                           {"itl", MetricKind::kTpot, "per-token latency", m.token_gap},
                           {"e2el", MetricKind::kE2e, "e2e latency", m.e2e}};
  struct Statistic {
    const char* name;
    const char* what;
    double LatencyStats::*field;
  };
  const Statistic statistics[] = {{"mean", "mean", &LatencyStats::mean},   {"median", "p50", &LatencyStats::p50},
                                  {"p90", "p90", &LatencyStats::p90},      {"p95", "p95", &LatencyStats::p95},
                                  {"p99", "p99", &LatencyStats::p99}};
  for (const Series& x : series) {
    for (const Statistic& st : statistics) {
      const std::string key = std::string(st.name) + "_" + x.name + "_ms";
      if (auto v = ms.Optional(key)) {
        add(x.kind, key, std::string(st.what) + " " + x.what, v->PositiveNumber() / 1e3, x.stats.*st.field);
      }
    }
  }
  if (auto v = ms.Optional("request_throughput")) {
    add(MetricKind::kRequestsPerS, "request_throughput", "requests/s", v->PositiveNumber(), m.requests_per_s);
  }
  if (auto v = ms.Optional("output_throughput")) {
    add(MetricKind::kOutputTokensPerS, "output_throughput", "output tokens/s, all GPUs", v->PositiveNumber(),
        m.output_tokens_per_s);
  }
  if (auto v = ms.Optional("total_token_throughput")) {
    add(MetricKind::kTokensPerS, "total_token_throughput", "prompt and output tokens/s, all GPUs", v->PositiveNumber(),
        m.tokens_per_s);
  }
  ms.Finish();
}

// Simulates the entry as planned and compares its published metrics.
void SimulateAndCompare(const ServingRunPlan& plan, const JsonNode& measured, ServingRunOutcome& o) {
  ServeResult result =
      plan.clients > 0 ? SteadyStateWindow(SimulateClosedLoop(plan.config, plan.request, plan.clients, plan.rounds),
                                           plan.clients, plan.rounds, plan.warmup_rounds)
                       : SimulateServing(plan.config, plan.requests);
  ServeMetrics m = ComputeMetrics(plan.config, result, 0, "");
  Compare(measured, plan.config, m, o);
}

std::string ScenarioLine(const ServingRunPlan& p) {
  const ServeConfig& c = p.config;
  std::string load = p.clients > 0 ? fmt::format("closed loop {} clients x {} rounds", p.clients, p.rounds)
                                   : fmt::format("{} requests", p.requests.size());
  return fmt::format("{} on {} x{} tp{} pp{}, weights {} kv {} compute {}, {} (max {} seqs, {} tokens), {} of {}/{} tokens",
                     c.model.name, c.profile.name, c.total_gpus(), c.tp, c.pp, WeightFormatName(c.weights),
                     KvFormatName(c.kv), config::PrecisionName(c.compute), SchedulerName(c.scheduler),
                     c.max_sequences, c.max_batched_tokens, load, p.request.prompt_tokens, p.request.output_tokens);
}

void AddTo(ErrorSummary& s, double error_pct) {
  s.mape_pct = (s.mape_pct * s.metrics + std::fabs(error_pct)) / (s.metrics + 1);
  ++s.metrics;
}

}  // namespace

ServingValidationReport RunServingValidation(const std::string& path, const std::string& only_id) {
  nlohmann::json doc = ReadJsonFile(path);
  JsonNode root(doc, path, "");
  JsonObject top(root);
  RequireSchema(top, "stacksim.validation.serving/1");
  top.Ignore({"notes"});
  auto runs = top.Required("runs").Elements();
  top.Finish();

  if (!only_id.empty() &&
      std::none_of(runs.begin(), runs.end(), [&](const JsonNode& r) { return r.json().value("id", "") == only_id; })) {
    throw InputError("--run", "", "no entry has the id '" + only_id + "' in " + path);
  }
  ServingValidationReport rep;
  for (const JsonNode& run : runs) {
    ServingRunOutcome o;
    JsonObject r(run);
    o.id = r.Required("id").String();
    if (!only_id.empty() && o.id != only_id) continue;
    o.source = o.id.substr(0, o.id.find('-'));
    o.tier = r.Required("tier").OneOf({"A", "B", "C"});
    o.scored = r.Required("scored").Bool();
    o.kind = r.Has("kind") ? r.Required("kind").String() : "";
    if (o.scored) ++rep.scored_total;
    try {
      ServingRunPlan plan = PlanServingRun(run.json(), path, run.path());
      o.choices = plan.choices;
      o.scenario = ScenarioLine(plan);
      o.gpu = plan.config.profile.name;
      o.engine = plan.config.engine;
      o.scheduler = SchedulerName(plan.config.scheduler);
      o.weights = WeightFormatName(plan.config.weights);
      o.moe = plan.config.model.is_moe();
      SimulateAndCompare(plan, r.Required("measured"), o);
      if (o.metrics.empty()) throw InputError(path, run.path() + ".measured", "no metric the simulator predicts");
    } catch (const InputError& e) {
      o.error = e.what();
      o.metrics.clear();
    }
    if (o.scored && o.error.empty()) {
      ++rep.scored_predicted;
      for (const auto& mc : o.metrics) {
        AddTo(rep.overall, mc.error_pct);
        AddTo(rep.by_metric[MetricKindName(mc.kind)], mc.error_pct);
        AddTo(rep.by_source[o.source], mc.error_pct);
      }
    }
    rep.runs.push_back(std::move(o));
  }
  return rep;
}

nlohmann::json ServingValidationJson(const ServingValidationReport& report) {
  auto summary = [](const ErrorSummary& s) { return nlohmann::json{{"mape_pct", s.mape_pct}, {"metrics", s.metrics}}; };
  nlohmann::json runs = nlohmann::json::array();
  for (const auto& o : report.runs) {
    nlohmann::json j = {{"id", o.id}, {"source", o.source}, {"tier", o.tier}, {"kind", o.kind}, {"scored", o.scored}};
    if (o.error.empty()) {
      j["scenario"] = o.scenario;
      nlohmann::json ms = nlohmann::json::array();
      for (const auto& mc : o.metrics) {
        ms.push_back({{"metric", MetricKindName(mc.kind)}, {"key", mc.key}, {"simulated", mc.simulated},
                      {"measured", mc.measured}, {"predicted", mc.predicted}, {"error_pct", mc.error_pct}});
      }
      j["metrics"] = ms;
    } else {
      j["error"] = o.error;
    }
    j["choices"] = o.choices;
    j["notes"] = o.notes;
    runs.push_back(j);
  }
  nlohmann::json by_metric = nlohmann::json::object(), by_source = nlohmann::json::object();
  for (const auto& [k, s] : report.by_metric) by_metric[k] = summary(s);
  for (const auto& [k, s] : report.by_source) by_source[k] = summary(s);
  return {{"runs", runs},
          {"overall", summary(report.overall)},
          {"by_metric", by_metric},
          {"by_source", by_source},
          {"scored_total", report.scored_total},
          {"scored_predicted", report.scored_predicted}};
}

std::string ServingValidationText(const ServingValidationReport& report) {
  auto value = [](const MetricComparison& mc, double v) {
    return mc.kind == MetricKind::kOutputTokensPerS || mc.kind == MetricKind::kRequestsPerS ? fmt::format("{:.4g}/s", v)
                                                                                            : fmt::format("{:.4g} ms", v * 1e3);
  };
  std::string out;
  for (const auto& o : report.runs) {
    out += o.id + (o.scored ? "" : "  (not scored)") + "\n";
    if (!o.error.empty()) {
      out += "    not modelled: " + o.error + "\n";
      continue;
    }
    out += "    " + o.scenario + "\n";
    for (const auto& mc : o.metrics) {
      out += fmt::format("    {:<28} {:>12} {:>12} {:>+8.1f}%   ({})\n", mc.key.substr(9), value(mc, mc.measured),
                         value(mc, mc.predicted), mc.error_pct, mc.simulated);
    }
    std::string chose;
    for (const auto& c : o.choices) chose += (chose.empty() ? "" : "; ") + c;
    if (!chose.empty()) out += "    chosen: " + chose + "\n";
    for (const auto& n : o.notes) out += "    note: " + n + "\n";
  }
  out += fmt::format("\nmean absolute error over {} metrics of {} of {} scored entries: {:.1f}%\n",
                     report.overall.metrics, report.scored_predicted, report.scored_total, report.overall.mape_pct);
  for (const auto& [k, s] : report.by_metric) out += fmt::format("  {:<22} {:>6.1f}% over {}\n", k, s.mape_pct, s.metrics);
  out += "  by source:\n";
  for (const auto& [k, s] : report.by_source) out += fmt::format("  {:<22} {:>6.1f}% over {}\n", k, s.mape_pct, s.metrics);
  return out;
}

namespace {

// One scored, modelled entry of an engine, ready to re-simulate.
struct FitEntry {
  std::string id, source;
  ServingRunPlan plan;
  nlohmann::json run;  // the entry (its "measured" block is compared)
};

// Mean absolute % error of `entries` with the host overhead `o` per
// iteration; `metrics` counts the compared metrics.
double MapeWithOverhead(const std::vector<const FitEntry*>& entries, double o, const std::string& file,
                        int* metrics = nullptr) {
  double sum = 0;
  int n = 0;
  for (const FitEntry* e : entries) {
    ServingRunPlan plan = e->plan;
    plan.config.iteration_overhead = Time::FromSeconds(o);
    ServingRunOutcome out;
    JsonNode run(e->run, file, e->id);
    SimulateAndCompare(plan, run.Child("measured"), out);
    for (const MetricComparison& mc : out.metrics) {
      sum += std::fabs(mc.error_pct);
      ++n;
    }
  }
  if (metrics) *metrics = n;
  return n > 0 ? sum / n : 0;
}

// Golden-section search for the overhead in [0, kMaxOverhead] minimizing the
// MAPE (taken unimodal: more host time slows every iteration alike), to
// 10 ms x 0.618^14, about 12 us.
constexpr double kMaxOverhead = 0.010;  // s
double FitOverhead(const std::vector<const FitEntry*>& entries, const std::string& file) {
  if (entries.empty()) return 0;
  const double phi = (std::sqrt(5.0) - 1) / 2;
  double a = 0, b = kMaxOverhead;
  double x1 = b - phi * (b - a), x2 = a + phi * (b - a);
  double f1 = MapeWithOverhead(entries, x1, file), f2 = MapeWithOverhead(entries, x2, file);
  for (int i = 0; i < 14; ++i) {
    if (f1 <= f2) {
      b = x2;
      x2 = x1;
      f2 = f1;
      x1 = b - phi * (b - a);
      f1 = MapeWithOverhead(entries, x1, file);
    } else {
      a = x1;
      x1 = x2;
      f1 = f2;
      x2 = a + phi * (b - a);
      f2 = MapeWithOverhead(entries, x2, file);
    }
  }
  const double best = (a + b) / 2;
  // The end of the interval (no overhead) when it does better.
  return MapeWithOverhead(entries, 0, file) <= MapeWithOverhead(entries, best, file) ? 0 : best;
}

}  // namespace

OverheadFit FitIterationOverhead(const std::string& path, int threads) {
  nlohmann::json doc = ReadJsonFile(path);
  std::vector<FitEntry> all;
  for (const nlohmann::json& run : doc.at("runs")) {
    if (!run.value("scored", false)) continue;
    try {
      FitEntry e;
      e.id = run.at("id").get<std::string>();
      e.source = e.id.substr(0, e.id.find('-'));
      e.plan = PlanServingRun(run, path, e.id);
      e.run = run;
      all.push_back(std::move(e));
    } catch (const InputError&) {
      // not modelled (the validation report says why)
    }
  }
  std::vector<const FitEntry*> entries;
  std::map<std::string, std::vector<const FitEntry*>> by_source;
  for (const FitEntry& e : all) {
    entries.push_back(&e);
    by_source[e.source].push_back(&e);
  }
  OverheadFit f;
  f.entries = static_cast<int>(entries.size());
  f.value_s = FitOverhead(entries, path);
  f.mape_pct = MapeWithOverhead(entries, f.value_s, path, &f.metrics);
  f.unfitted_mape_pct = MapeWithOverhead(entries, 0, path);
  // Each source held out: the value fitted on the others predicts it.
  f.loso.resize(by_source.size());
  std::vector<int> held_metrics(by_source.size());
  std::vector<std::string> sources;
  for (const auto& [source, held] : by_source) sources.push_back(source);
  ParallelFor(static_cast<int64_t>(sources.size()), threads, [&](int64_t i, int) {
    const std::vector<const FitEntry*>& held = by_source.at(sources[i]);
    std::vector<const FitEntry*> rest;
    for (const FitEntry* e : entries) {
      if (e->source != sources[i]) rest.push_back(e);
    }
    OverheadFit::Group& g = f.loso[i];
    g.held_out = sources[i];
    g.entries = static_cast<int>(held.size());
    g.value_s = FitOverhead(rest, path);
    g.mape_pct = MapeWithOverhead(held, g.value_s, path, &held_metrics[i]);
    g.unfitted_mape_pct = MapeWithOverhead(held, 0, path);
  });
  double sum = 0;
  int metrics = 0;
  for (size_t i = 0; i < f.loso.size(); ++i) {
    sum += f.loso[i].mape_pct * held_metrics[i];
    metrics += held_metrics[i];
  }
  f.loso_mape_pct = metrics > 0 ? sum / metrics : 0;
  return f;
}

nlohmann::json OverheadFitJson(const OverheadFit& f, const std::string& file, const std::string& command,
                               const std::string& date) {
  nlohmann::json groups = nlohmann::json::array();
  for (const auto& g : f.loso) {
    groups.push_back({{"held_out", g.held_out}, {"entries", g.entries}, {"value_s", g.value_s},
                      {"mape_pct", g.mape_pct}, {"unfitted_mape_pct", g.unfitted_mape_pct}});
  }
  return {{"value_s", f.value_s},
          {"what", "host time per serving iteration (scheduling, sampling and stop checks, output handling: the "
                   "part of an iteration the GPU waits for), one value for every engine, added to every iteration "
                   "of a scenario naming an engine unless scheduler.iteration_overhead is set "
                   "(sim/serve/engine_profile.h FittedIterationOverhead); golden-section fit in 0-10 ms minimizing "
                   "the serve-validate MAPE of the scored entries"},
          {"fitted_by", command},
          {"date", date},
          {"fitted_on", file + " (the scored entries the simulator models)"},
          {"entries", f.entries},
          {"metrics", f.metrics},
          {"fitted_mape_pct", f.mape_pct},
          {"unfitted_mape_pct", f.unfitted_mape_pct},
          {"leave_one_source_out", {{"groups", groups}, {"mape_pct", f.loso_mape_pct}}}};
}

}  // namespace stacksim::serve
