#include "sim/serve/serve_config.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "sim/config/scenario.h"
#include "sim/util/error.h"
#include "sim/util/json_reader.h"

namespace stacksim::serve {
namespace {

std::string Resolve(const JsonNode& node, const std::string& kind) {
  std::string dir = std::filesystem::path(node.file()).parent_path().string();
  std::string path = config::ResolveDataFile(kind, node.String(), dir);
  if (!std::filesystem::is_regular_file(path)) node.Fail("no such " + kind + " file: " + path);
  return path;
}

LengthDistribution ParseLengths(const JsonNode& node) {
  LengthDistribution d;
  JsonObject obj(node);
  std::string kind = obj.Required("kind").OneOf({"fixed", "uniform", "lognormal", "empirical"});
  if (kind == "fixed") {
    d.kind = LengthDistribution::Kind::kFixed;
    d.value = obj.Required("tokens").PositiveInt();
  } else if (kind == "uniform") {
    d.kind = LengthDistribution::Kind::kUniform;
    d.min = obj.Required("min").PositiveInt();
    JsonNode max = obj.Required("max");
    d.max = max.PositiveInt();
    if (d.max < d.min) max.Fail("max must be at least min");
  } else if (kind == "lognormal") {
    d.kind = LengthDistribution::Kind::kLogNormal;
    JsonNode median = obj.Required("median");
    d.median = median.PositiveNumber();
    d.sigma = obj.Required("sigma").PositiveNumber();
    d.min = 1;
    if (auto n = obj.Optional("min")) d.min = n->PositiveInt();
    JsonNode max = obj.Required("max");
    d.max = max.PositiveInt();
    if (d.max < d.min) max.Fail("max must be at least min");
    // The clamp must hold the median, or most draws land on a bound and the
    // workload is not the distribution the file describes.
    if (static_cast<double>(d.max) < d.median) {
      max.Fail("max " + std::to_string(d.max) + " is below the median " + median.json().dump() +
               ": more than half the draws would be clamped to max; raise max or lower the median");
    }
    if (static_cast<double>(d.min) > d.median) {
      median.Fail("the median " + median.json().dump() + " is below min " + std::to_string(d.min) +
                  ": more than half the draws would be clamped to min");
    }
  } else {
    d.kind = LengthDistribution::Kind::kEmpirical;
    JsonNode values = obj.Required("values");
    for (const JsonNode& v : values.Elements()) d.values.push_back(v.PositiveInt());
    if (d.values.empty()) values.Fail("needs at least one value");
  }
  obj.Finish();
  return d;
}

// The longest length a distribution draws.
int64_t LongestLength(const LengthDistribution& d) {
  switch (d.kind) {
    case LengthDistribution::Kind::kFixed: return d.value;
    case LengthDistribution::Kind::kUniform:
    case LengthDistribution::Kind::kLogNormal: return d.max;
    case LengthDistribution::Kind::kEmpirical: return *std::max_element(d.values.begin(), d.values.end());
  }
  return 0;
}

// As the command line's --requests allows.
constexpr int64_t kMaxRequests = 100'000'000;

// workload.shared_prefix_tokens (0 when absent).
int64_t SharedPrefixTokens(JsonObject& workload) {
  auto n = workload.Optional("shared_prefix_tokens");
  if (!n) return 0;
  const int64_t tokens = n->Int();
  if (tokens < 0) n->Fail("must be 0 or more");
  return tokens;
}

// The schedulers that run one iteration at a time over running sequences,
// where speculative decoding and prefix caching are modelled.
bool IterationScheduler(SchedulerKind k) {
  return k != SchedulerKind::kStatic && k != SchedulerKind::kPersistent && k != SchedulerKind::kDisaggregated;
}

const char* kIterationSchedulers = "the continuous, chunked-prefill, prefill-first and inflight schedulers";

// Whether a model's attention heads split over `tp` ranks: the query heads
// evenly, the KV heads evenly or replicated.
bool HeadsSplitOverTp(const config::ModelConfig& m, int tp) {
  return m.num_attention_heads % tp == 0 && (m.num_kv_heads % tp == 0 || tp % m.num_kv_heads == 0);
}

WorkloadConfig ParseWorkload(const JsonNode& node) {
  WorkloadConfig w;
  JsonObject obj(node);
  if (auto trace = obj.Optional("trace")) {
    std::string dir = std::filesystem::path(node.file()).parent_path().string();
    std::string ref = trace->String();
    w.trace_file = std::filesystem::path(ref).is_absolute() || dir.empty() ? ref : dir + "/" + ref;
    if (!std::filesystem::is_regular_file(w.trace_file)) trace->Fail("no such trace file: " + w.trace_file);
    if (auto n = obj.Optional("requests")) w.requests = n->PositiveInt();
    w.shared_prefix_tokens = SharedPrefixTokens(obj);
    obj.Finish();
    return w;
  }
  std::string arrival = obj.Required("arrival").OneOf({"poisson", "gamma"});
  w.arrival = arrival == "poisson" ? WorkloadConfig::Arrival::kPoisson : WorkloadConfig::Arrival::kGamma;
  JsonNode rate = obj.Required("rate_per_s");
  w.rate_per_s = rate.PositiveNumber();
  if (w.arrival == WorkloadConfig::Arrival::kGamma) w.cv = obj.Required("cv").PositiveNumber();
  JsonNode requests = obj.Required("requests");
  w.requests = requests.PositiveInt();
  if (w.requests > kMaxRequests) {
    requests.Fail(std::to_string(w.requests) + " requests is more than stacksim simulates (at most " +
                  std::to_string(kMaxRequests) + ")");
  }
  // The last request arrives about requests / rate seconds in; arrival times
  // are int64 nanoseconds, so that span must stay well inside 100 years.
  if (!(static_cast<double>(w.requests) / w.rate_per_s <= kMaxInputSeconds / 2)) {
    rate.Fail("at " + rate.json().dump() + " requests/s, " + std::to_string(w.requests) +
              " requests take more than 50 years to arrive; stacksim's clock holds 100");
  }
  w.seed = static_cast<uint64_t>(obj.Required("seed").Int());
  w.prompt_tokens = ParseLengths(obj.Required("prompt_tokens"));
  w.output_tokens = ParseLengths(obj.Required("output_tokens"));
  w.shared_prefix_tokens = SharedPrefixTokens(obj);
  obj.Finish();
  return w;
}

// "speculative": {"method": "eagle" | "mtp" | "draft-model", "draft_tokens",
// one of "acceptance_rate" (each draft accepted with this probability after
// the ones before it: (1 - a^(k+1)) / (1 - a) tokens per step, Leviathan et
// al. 2023 eq. 1) and "accepted_tokens_per_step" (the acceptance length
// engines report, the target's own token included), "draft_layers" (a
// head's, default 1) or "draft_model" (a shipped model)}.
SpeculativeConfig ParseSpeculative(const JsonNode& node, const ServeConfig& c) {
  SpeculativeConfig s;
  JsonObject o(node);
  JsonNode method = o.Required("method");
  s.method_name = method.OneOf({"eagle", "mtp", "draft-model"});
  s.method = s.method_name == "draft-model" ? SpeculativeConfig::Method::kDraftModel
                                            : SpeculativeConfig::Method::kDraftHead;
  JsonNode k = o.Required("draft_tokens");
  s.draft_tokens = k.PositiveInt();
  if (s.draft_tokens > 64) k.Fail("more than 64 draft tokens per step is not a speculative-decoding setting");
  std::optional<JsonNode> rate = o.Optional("acceptance_rate");
  std::optional<JsonNode> length = o.Optional("accepted_tokens_per_step");
  if (rate.has_value() == length.has_value()) {
    method.Fail("give one of speculative.acceptance_rate and speculative.accepted_tokens_per_step");
  }
  const double kmax = static_cast<double>(s.draft_tokens) + 1.0;
  if (rate) {
    const double a = rate->Fraction();
    s.tokens_per_step = a >= 1.0 ? kmax : (1.0 - std::pow(a, kmax)) / (1.0 - a);
  } else {
    s.tokens_per_step = length->PositiveNumber();
    if (s.tokens_per_step < 1.0 || s.tokens_per_step > kmax) {
      length->Fail("must be between 1 (every draft rejected) and draft_tokens + 1 = " + std::to_string(kmax));
    }
  }
  std::optional<JsonNode> layers = o.Optional("draft_layers");
  std::optional<JsonNode> model = o.Optional("draft_model");
  if (s.method == SpeculativeConfig::Method::kDraftModel) {
    if (!model) method.Fail("draft-model needs speculative.draft_model (a model of models/)");
    if (layers) layers->Fail("only for a draft head (eagle, mtp)");
    s.draft_model = config::LoadModelFile(Resolve(*model, "models"));
    if (s.draft_model.vocab_size != c.model.vocab_size) {
      model->Fail("the draft model's vocabulary (" + std::to_string(s.draft_model.vocab_size) +
                  ") is not the target's (" + std::to_string(c.model.vocab_size) + ")");
    }
  } else {
    if (model) model->Fail("only for method draft-model");
    if (layers) s.draft_layers = layers->PositiveInt();
    if (s.draft_layers >= c.model.num_layers) layers->Fail("a draft head has fewer layers than the target");
    s.draft_model = c.model;
    s.draft_model.num_layers = s.draft_layers;
  }
  o.Finish();
  if (!IterationScheduler(c.scheduler)) {
    node.Fail(std::string("speculative decoding is modelled under ") + kIterationSchedulers + ", not " +
              SchedulerName(c.scheduler));
  }
  return s;
}

}  // namespace

const char* WeightFormatName(WeightFormat f) {
  switch (f) {
    case WeightFormat::kBf16: return "bf16";
    case WeightFormat::kFp8: return "fp8";
    case WeightFormat::kInt8: return "int8";
    case WeightFormat::kInt4: return "int4";
    case WeightFormat::kFp4: return "fp4";
  }
  return "?";
}

const char* KvFormatName(KvFormat f) {
  switch (f) {
    case KvFormat::kBf16: return "bf16";
    case KvFormat::kFp8: return "fp8";
    case KvFormat::kInt8: return "int8";
  }
  return "?";
}

double WeightBytes(WeightFormat f) {
  switch (f) {
    case WeightFormat::kBf16: return 2.0;
    case WeightFormat::kFp8:
    case WeightFormat::kInt8: return 1.0;
    case WeightFormat::kInt4: return 0.5 + 2.0 / 128.0;
    case WeightFormat::kFp4: return 0.5 + 1.0 / 16.0;
  }
  return 2.0;
}

double KvBytes(KvFormat f) { return f == KvFormat::kBf16 ? 2.0 : 1.0; }

const char* SchedulerName(SchedulerKind k) {
  switch (k) {
    case SchedulerKind::kStatic: return "static";
    case SchedulerKind::kContinuous: return "continuous";
    case SchedulerKind::kChunked: return "chunked-prefill";
    case SchedulerKind::kPrefillFirst: return "prefill-first";
    case SchedulerKind::kInflight: return "inflight";
    case SchedulerKind::kPersistent: return "persistent";
    case SchedulerKind::kDisaggregated: return "disaggregated";
  }
  return "?";
}

ServeConfig ParseServeScenario(const nlohmann::json& doc, const std::string& file) {
  ServeConfig c;
  c.file = file;
  JsonNode root_node(doc, file, "");
  JsonObject root(root_node);
  root.Ignore({"notes", "source", "question"});
  c.name = root.Required("name").String();
  c.model = config::LoadModelFile(Resolve(root.Required("model"), "models"));
  c.topology = config::LoadTopologyFile(Resolve(root.Required("topology"), "topologies"));
  if (auto p = root.Optional("profile")) {
    c.profile = config::LoadProfileFile(Resolve(*p, "profiles"));
  } else {
    c.profile = config::LoadProfileFile(config::ResolveDataFile("profiles", c.topology.gpu, ""));
  }

  JsonObject rep(root.Required("replica"));
  auto degree = [](const JsonNode& n) {
    const int64_t v = n.PositiveInt();
    if (v > config::kMaxGpus) n.Fail("parallel degree " + std::to_string(v) + " is implausibly large");
    return static_cast<int>(v);
  };
  c.tp = degree(rep.Required("tp"));
  if (auto n = rep.Optional("pp")) c.pp = degree(*n);
  if (auto n = rep.Optional("ep")) c.ep = degree(*n);
  rep.Finish();
  if (auto n = root.Optional("replicas")) {
    const int64_t replicas = n->PositiveInt();
    // As for training (config::kMaxGpus): replicas x tp x pp GPUs at most 2^24.
    const double gpus_per_replica = static_cast<double>(c.tp) * c.pp;
    if (static_cast<double>(replicas) * gpus_per_replica > static_cast<double>(config::kMaxGpus)) {
      n->Fail(std::to_string(replicas) + " replicas of tp x pp = " +
              std::to_string(static_cast<int64_t>(gpus_per_replica)) + " GPUs is more than stacksim simulates (at most " +
              std::to_string(config::kMaxGpus) + " GPUs)");
    }
    c.replicas = static_cast<int>(replicas);
  }

  // The engine's defaults first; the scenario's own fields override them.
  std::optional<EngineProfile> engine;
  if (auto e = root.Optional("engine")) {
    engine = LoadEngineProfile(Resolve(*e, "engines"));
    c.engine = engine->name;
    c.max_sequences = engine->MaxSequences(c.profile.name, c.profile.hbm_capacity.value.value);
    c.max_batched_tokens = engine->MaxBatchedTokens(c.profile.name, c.profile.hbm_capacity.value.value);
    c.kv_memory = engine->kv_memory;
    c.gpu_memory_utilization = engine->KvMemoryFraction(c.tp);
    c.cuda_graph_max_batch = engine->cuda_graph_max_batch;
    c.decode_attention = engine->decode_attention;
    c.admission = engine->admission;
    c.prefix_caching = engine->prefix_caching;
    c.sliding_window_kv = engine->sliding_window_kv;
    c.chunked_attention_kv = engine->chunked_attention_kv;
    c.iteration_overhead = FittedIterationOverhead(engine->name, DefaultFittedConstantsPath());
    if (c.iteration_overhead > Time::Zero()) {
      c.iteration_overhead_source = "fitted: validation/fitted_constants.json serving_iteration_overhead";
    }
  }
  bool kv_given = false;
  if (auto prec = root.Optional("precision")) {
    JsonObject p(*prec);
    if (auto w = p.Optional("weights")) {
      std::string s = w->OneOf({"bf16", "fp8", "int8", "int4", "fp4"});
      c.weights = s == "bf16" ? WeightFormat::kBf16 : s == "fp8" ? WeightFormat::kFp8
                  : s == "int8" ? WeightFormat::kInt8 : s == "int4" ? WeightFormat::kInt4 : WeightFormat::kFp4;
    }
    if (auto k = p.Optional("kv_cache")) {
      kv_given = true;
      std::string s = k->OneOf({"bf16", "fp8", "int8"});
      c.kv = s == "bf16" ? KvFormat::kBf16 : s == "fp8" ? KvFormat::kFp8 : KvFormat::kInt8;
    }
    if (auto m = p.Optional("compute")) {
      c.compute = m->OneOf({"bf16", "fp8"}) == "fp8" ? config::Precision::kFp8 : config::Precision::kBf16;
      if (c.compute == config::Precision::kFp8 && c.weights != WeightFormat::kFp8 && c.weights != WeightFormat::kFp4) {
        m->Fail("compute fp8 needs fp8 or fp4 weights (int8/int4 weights are weight-only: compute bf16)");
      }
      if (c.compute == config::Precision::kFp8 && !c.profile.Peak(config::Precision::kFp8)) {
        m->Fail("profile " + c.profile.name + " has no fp8 peak");
      }
    }
    p.Finish();
  }
  // An fp8 checkpoint's KV format, when the scenario does not say, is the
  // engine's (TensorRT-LLM follows the checkpoint's kv_cache_quant_algo).
  if (!kv_given && engine && c.weights == WeightFormat::kFp8 && engine->fp8_checkpoint_kv == "fp8") c.kv = KvFormat::kFp8;
  if (auto g = root.Optional("cuda_graphs")) c.cuda_graphs = g->Bool();
  if (auto d = root.Optional("decode_attention")) {
    c.decode_attention = d->OneOf({"per-kv-head", "per-query-head"}) == "per-query-head" ? DecodeAttention::kPerQueryHead
                                                                                          : DecodeAttention::kPerKvHead;
  }

  if (auto mem = root.Optional("memory")) {
    JsonObject m(*mem);
    if (auto u = m.Optional("gpu_memory_utilization")) c.gpu_memory_utilization = u->Fraction();
    if (auto r = m.Optional("kv_rule")) c.kv_memory = ParseKvMemoryRule(*r);
    m.Finish();
  }
  if (auto kv = root.Optional("kv_cache")) {
    JsonObject k(*kv);
    if (auto b = k.Optional("block_tokens")) c.block_tokens = b->PositiveInt();
    if (auto p = k.Optional("preemption")) {
      c.preemption = p->OneOf({"recompute", "swap"}) == "swap" ? Preemption::kSwap : Preemption::kRecompute;
    }
    if (auto p = k.Optional("prefix_caching")) c.prefix_caching = p->Bool();
    if (auto p = k.Optional("sliding_window_kv")) c.sliding_window_kv = p->Bool();
    if (auto p = k.Optional("chunked_attention_kv")) c.chunked_attention_kv = p->Bool();
    k.Finish();
  }

  JsonObject sch(root.Required("scheduler"));
  JsonNode kind_node = sch.Required("kind");
  std::string kind =
      kind_node.OneOf({"static", "continuous", "chunked-prefill", "prefill-first", "inflight", "persistent", "disaggregated"});
  c.scheduler = kind == "static" ? SchedulerKind::kStatic : kind == "continuous" ? SchedulerKind::kContinuous
                : kind == "chunked-prefill" ? SchedulerKind::kChunked
                : kind == "prefill-first" ? SchedulerKind::kPrefillFirst
                : kind == "inflight" ? SchedulerKind::kInflight
                : kind == "persistent" ? SchedulerKind::kPersistent : SchedulerKind::kDisaggregated;
  std::optional<JsonNode> budget_node = sch.Optional("max_batched_tokens");
  if (budget_node) c.max_batched_tokens = budget_node->PositiveInt();
  if (auto n = sch.Optional("max_sequences")) c.max_sequences = n->PositiveInt();
  if (auto r = sch.Optional("router")) {
    c.router = r->OneOf({"round-robin", "least-loaded"}) == "least-loaded" ? RouterKind::kLeastLoaded
                                                                            : RouterKind::kRoundRobin;
  }
  if (auto t = sch.Optional("iteration_overhead")) {
    c.iteration_overhead = t->TimeValue();
    c.iteration_overhead_source = "scenario";
  }
  if (auto a = sch.Optional("admission")) {
    c.admission = a->OneOf({"watermark", "guaranteed-no-evict"}) == "guaranteed-no-evict" ? Admission::kGuaranteedNoEvict
                                                                                          : Admission::kWatermark;
  }
  std::optional<JsonNode> prefill_node = sch.Optional("prefill_replicas");
  std::optional<JsonNode> decode_node = sch.Optional("decode_replicas");
  if (prefill_node) c.prefill_replicas = static_cast<int>(prefill_node->PositiveInt());
  if (decode_node) c.decode_replicas = static_cast<int>(decode_node->PositiveInt());
  if (c.scheduler == SchedulerKind::kDisaggregated && (!prefill_node || !decode_node)) {
    kind_node.Fail("disaggregated needs scheduler.prefill_replicas and scheduler.decode_replicas");
  }
  if (c.scheduler != SchedulerKind::kDisaggregated && (prefill_node || decode_node)) {
    (prefill_node ? *prefill_node : *decode_node).Fail("only for the disaggregated scheduler");
  }
  sch.Finish();

  c.workload = ParseWorkload(root.Required("workload"));
  // A scheduler that prefills each prompt whole (static, continuous, the
  // disaggregated prefill pool) cannot fit a prompt longer than its token
  // budget in an iteration; vLLM refuses a max_num_batched_tokens below
  // max_model_len without chunked prefill for the same reason.
  if (c.scheduler != SchedulerKind::kChunked && c.scheduler != SchedulerKind::kPrefillFirst &&
      c.workload.trace_file.empty()) {
    const int64_t longest = LongestLength(c.workload.prompt_tokens);
    if (longest > c.max_batched_tokens) {
      const JsonNode& at = budget_node ? *budget_node : kind_node;
      throw InputError(at.file(), budget_node ? at.path() : "scheduler.max_batched_tokens",
                       "max_batched_tokens " + std::to_string(c.max_batched_tokens) +
                           " is below the longest prompt of workload.prompt_tokens (" + std::to_string(longest) +
                           " tokens), and the " + kind + " scheduler cannot split a prompt: raise it to at least " +
                           std::to_string(longest) + " or use the chunked-prefill or prefill-first scheduler");
    }
  }
  if (auto spec = root.Optional("speculative")) c.speculative = ParseSpeculative(*spec, c);
  if (c.prefix_caching && c.workload.shared_prefix_tokens > 0 && !IterationScheduler(c.scheduler)) {
    throw InputError(file, "workload.shared_prefix_tokens",
                     std::string("prefix caching is modelled under ") + kIterationSchedulers + ", not " +
                         SchedulerName(c.scheduler) + " (kv_cache.prefix_caching false turns it off)");
  }
  if (auto slo = root.Optional("slo")) {
    JsonObject s(*slo);
    c.slo_ttft = s.Required("ttft").TimeValue();
    c.slo_tpot = s.Required("tpot").TimeValue();
    s.Finish();
  }
  root.Finish();
  ValidateServeConfig(c);
  return c;
}

void ValidateServeConfig(const ServeConfig& c) {
  const config::ModelConfig& m = c.model;
  if (m.num_attention_heads % c.tp != 0) {
    throw InputError(c.file, "replica.tp", "tp " + std::to_string(c.tp) + " does not divide the model's " +
                                               std::to_string(m.num_attention_heads) + " attention heads");
  }
  if (m.num_kv_heads % c.tp != 0 && c.tp % m.num_kv_heads != 0) {
    throw InputError(c.file, "replica.tp", "tp must divide the KV heads or be a multiple of them");
  }
  if (c.tp > c.topology.gpus_per_node) {
    throw InputError(c.file, "replica.tp", "tp exceeds the node's " + std::to_string(c.topology.gpus_per_node) + " GPUs");
  }
  if (m.num_layers % c.pp != 0) {
    throw InputError(c.file, "replica.pp", "pp does not divide the model's layers");
  }
  if (m.has_linear_attention()) {
    throw InputError(c.file, "model", "serving linear-attention (Gated DeltaNet) models is not modelled; simulate trains them");
  }
  if (m.moe_latent_size > 0) {
    throw InputError(c.file, "model", "serving latent MoE models (moe_latent_size) is not modelled; simulate trains them");
  }
  if (m.is_hybrid()) {
    // Serving a Mamba-2 hybrid keeps a fixed-size SSM state per sequence
    // instead of a growing KV cache for most layers; not modelled.
    throw InputError(c.file, "model", "serving hybrid (Mamba-2) models is not modelled; simulate trains them");
  }
  if (c.ep > 1 && (!m.is_moe() || m.num_experts % c.ep != 0 || c.ep > c.tp || c.tp % c.ep != 0)) {
    throw InputError(c.file, "replica.ep",
                     "ep needs a MoE model whose experts it divides, and ep dividing tp (experts spread over the TP "
                     "ranks)");
  }
  if (c.workload.trace_file.empty() && c.workload.requests <= 0) {
    throw InputError(c.file, "workload.requests", "must be positive");
  }
  if (c.speculative.method == SpeculativeConfig::Method::kDraftModel && !HeadsSplitOverTp(c.speculative.draft_model, c.tp)) {
    throw InputError(c.file, "speculative.draft_model",
                     "the draft model's attention heads do not split over tp " + std::to_string(c.tp));
  }
}

ServeConfig LoadServeScenario(const std::string& path, const ServeOverrides& o) {
  nlohmann::json doc = ReadJsonFile(path);
  // Overrides go into the document so they pass the same checks as the file.
  if (doc.is_object() && doc.contains("workload") && doc["workload"].is_object()) {
    nlohmann::json& w = doc["workload"];
    if (o.rate_per_s) w["rate_per_s"] = *o.rate_per_s;
    if (o.requests) w["requests"] = *o.requests;
    if (o.seed) w["seed"] = *o.seed;
  }
  if (o.scheduler && doc.is_object() && doc.contains("scheduler") && doc["scheduler"].is_object()) {
    nlohmann::json& sch = doc["scheduler"];
    sch["kind"] = *o.scheduler;
    // Switching a disaggregated scenario to one pool drops the pool sizes.
    if (*o.scheduler != "disaggregated") {
      sch.erase("prefill_replicas");
      sch.erase("decode_replicas");
    }
  }
  return ParseServeScenario(doc, path);
}

}  // namespace stacksim::serve
