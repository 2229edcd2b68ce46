#include "sim/serve/engine_profile.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "sim/config/fitted_constants.h"
#include "sim/config/scenario.h"
#include "sim/util/error.h"
#include "sim/util/json_reader.h"

namespace stacksim::serve {

const char* KvMemoryRuleName(KvMemoryRule r) {
  switch (r) {
    case KvMemoryRule::kTotal: return "total";
    case KvMemoryRule::kFree: return "free";
    case KvMemoryRule::kStatic: return "static";
  }
  return "?";
}

KvMemoryRule ParseKvMemoryRule(const JsonNode& v) {
  const std::string s = v.OneOf({"total", "free", "static"});
  return s == "free" ? KvMemoryRule::kFree : s == "static" ? KvMemoryRule::kStatic : KvMemoryRule::kTotal;
}

namespace {

// {"gib": 70, "except_gpus": ["a100"], "value": 8192}
HbmTier ReadHbmTier(const JsonNode& n) {
  JsonObject t(n);
  HbmTier tier;
  tier.gib = t.Required("gib").PositiveNumber();
  if (auto g = t.Optional("except_gpus")) {
    if (!g->IsArray()) g->Fail("expected an array of GPU name parts, e.g. [\"a100\"]");
    for (const JsonNode& x : g->Elements()) tier.except_gpus.push_back(x.String());
  }
  tier.value = t.Required("value").PositiveInt();
  t.Finish();
  return tier;
}

// {"2": 0.87, "4": 0.85}: each fraction from that TP size up, ascending.
std::vector<std::pair<int, double>> ReadFractionsByTp(const JsonNode& n) {
  if (!n.IsObject()) n.Fail("expected {\"<tp>\": fraction, ...}, e.g. {\"2\": 0.87, \"4\": 0.85}");
  JsonObject tiers(n);
  std::vector<std::pair<int, double>> out;
  for (const std::string& key : tiers.Keys()) {
    const JsonNode value = tiers.Required(key);
    int tp = 0;
    if (std::sscanf(key.c_str(), "%d", &tp) != 1 || tp < 1 || std::to_string(tp) != key) {
      value.Fail("the key must be a TP size (a positive integer)");
    }
    out.emplace_back(tp, value.Fraction());
  }
  tiers.Finish();
  std::sort(out.begin(), out.end());
  return out;
}

int64_t Tiered(int64_t value, const std::optional<HbmTier>& tier, const std::string& gpu, double hbm_bytes) {
  if (!tier || hbm_bytes < tier->gib * kGiB) return value;
  for (const std::string& g : tier->except_gpus) {
    if (gpu.find(g) != std::string::npos) return value;
  }
  return tier->value;
}

}  // namespace

int64_t EngineProfile::MaxSequences(const std::string& gpu, double hbm_bytes) const {
  return Tiered(max_sequences, max_sequences_large, gpu, hbm_bytes);
}

int64_t EngineProfile::MaxBatchedTokens(const std::string& gpu, double hbm_bytes) const {
  return Tiered(max_batched_tokens, max_batched_tokens_large, gpu, hbm_bytes);
}

double EngineProfile::KvMemoryFraction(int tp) const {
  double f = kv_memory_fraction;
  for (const auto& [min_tp, fraction] : kv_memory_fraction_by_tp) {
    if (tp >= min_tp) f = fraction;
  }
  return f;
}
const char* DecodeAttentionName(DecodeAttention d) {
  return d == DecodeAttention::kPerQueryHead ? "per-query-head" : "per-kv-head";
}
const char* AdmissionName(Admission a) { return a == Admission::kGuaranteedNoEvict ? "guaranteed-no-evict" : "watermark"; }

EngineProfile ParseEngineProfile(const nlohmann::json& doc, const std::string& file) {
  EngineProfile e;
  e.file = file;
  e.name = std::filesystem::path(file).stem().string();
  JsonNode root_node(doc, file, "");
  JsonObject root(root_node);
  RequireSchema(root, "stacksim.engine/1");
  e.title = root.Required("title").String();
  root.Ignore({"notes"});
  JsonObject facts(root.Required("facts"));
  // Each fact is {"value", "source"}; the source must be there and say
  // something. A fact may carry one more key, `extra` ("from_hbm_gib",
  // "by_tp"), returned beside the value.
  struct FactNodes {
    JsonNode value;
    std::optional<JsonNode> extra;
  };
  auto fact_with = [&](std::string_view key, const char* extra) -> std::optional<FactNodes> {
    auto f = facts.Optional(key);
    if (!f) return std::nullopt;
    JsonObject o(*f);
    o.Required("source").String();
    FactNodes out{o.Required("value"), extra != nullptr ? o.Optional(extra) : std::nullopt};
    o.Finish();
    return out;
  };
  auto fact = [&](std::string_view key) -> std::optional<JsonNode> {
    if (auto f = fact_with(key, nullptr)) return f->value;
    return std::nullopt;
  };
  if (auto v = fact("scheduler")) {
    e.scheduler = v->OneOf({"continuous", "chunked-prefill", "prefill-first", "inflight", "persistent"});
  }
  if (auto f = fact_with("max_sequences", "from_hbm_gib")) {
    e.max_sequences = f->value.PositiveInt();
    if (f->extra) e.max_sequences_large = ReadHbmTier(*f->extra);
  }
  if (auto f = fact_with("max_batched_tokens", "from_hbm_gib")) {
    e.max_batched_tokens = f->value.PositiveInt();
    if (f->extra) e.max_batched_tokens_large = ReadHbmTier(*f->extra);
  }
  if (auto v = fact("kv_memory")) e.kv_memory = ParseKvMemoryRule(*v);
  if (auto f = fact_with("kv_memory_fraction", "by_tp")) {
    e.kv_memory_fraction = f->value.Fraction();
    if (f->extra) e.kv_memory_fraction_by_tp = ReadFractionsByTp(*f->extra);
  }
  if (auto v = fact("fp8_checkpoint_kv")) e.fp8_checkpoint_kv = v->OneOf({"bf16", "fp8"});
  if (auto v = fact("cuda_graph_max_batch")) {
    const int64_t n = v->Int();
    if (n < 0) v->Fail("must be 0 (no CUDA graphs) or a batch size");
    e.cuda_graph_max_batch = n;
  }
  if (auto v = fact("decode_attention")) {
    e.decode_attention = v->OneOf({"per-kv-head", "per-query-head"}) == "per-query-head" ? DecodeAttention::kPerQueryHead
                                                                                          : DecodeAttention::kPerKvHead;
  }
  if (auto v = fact("admission")) {
    e.admission = v->OneOf({"watermark", "guaranteed-no-evict"}) == "guaranteed-no-evict" ? Admission::kGuaranteedNoEvict
                                                                                          : Admission::kWatermark;
  }
  if (auto v = fact("prefix_caching")) e.prefix_caching = v->Bool();
  if (auto v = fact("sliding_window_kv")) e.sliding_window_kv = v->OneOf({"window", "whole"}) == "window";
  if (auto v = fact("chunked_attention_kv")) e.chunked_attention_kv = v->OneOf({"chunk", "whole"}) == "chunk";
  facts.Finish();
  root.Finish();
  if (e.scheduler.empty()) throw InputError(file, "facts.scheduler", "required");
  return e;
}

EngineProfile LoadEngineProfile(const std::string& path) { return ParseEngineProfile(ReadJsonFile(path), path); }

std::string DefaultFittedConstantsPath() { return config::FittedConstantsPath(); }

Time FittedIterationOverhead(const std::string& engine, const std::string& path) {
  if (engine.empty() || !std::filesystem::exists(path)) return Time::Zero();
  nlohmann::json doc = ReadJsonFile(path);
  JsonNode root(doc, path, "");
  if (!root.IsObject() || !doc.contains("serving_iteration_overhead")) return Time::Zero();
  return Time::FromSeconds(root.Child("serving_iteration_overhead").Child("value_s").NonNegativeNumber());
}

}  // namespace stacksim::serve
