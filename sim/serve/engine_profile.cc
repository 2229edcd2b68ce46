#include "sim/serve/engine_profile.h"

#include <filesystem>

#include "sim/config/scenario.h"
#include "sim/util/error.h"
#include "sim/util/json_reader.h"

namespace stacksim::serve {

const char* KvMemoryRuleName(KvMemoryRule r) { return r == KvMemoryRule::kFree ? "free" : "total"; }
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
  const std::string schema = root.Required("schema").String();
  if (schema != "stacksim.engine/1") root.Required("schema").Fail("expected 'stacksim.engine/1', got '" + schema + "'");
  e.title = root.Required("title").String();
  root.Ignore({"notes"});
  JsonObject facts(root.Required("facts"));
  // Each fact is {"value", "source"}; the source must be there and say something.
  auto fact = [&](std::string_view key) -> std::optional<JsonNode> {
    auto f = facts.Optional(key);
    if (!f) return std::nullopt;
    JsonObject o(*f);
    o.Required("source").String();
    JsonNode v = o.Required("value");
    o.Finish();
    return v;
  };
  if (auto v = fact("scheduler")) e.scheduler = v->OneOf({"continuous", "chunked-prefill", "inflight", "persistent"});
  if (auto v = fact("max_sequences")) e.max_sequences = v->PositiveInt();
  if (auto v = fact("max_batched_tokens")) e.max_batched_tokens = v->PositiveInt();
  if (auto v = fact("kv_memory")) e.kv_memory = v->OneOf({"total", "free"}) == "free" ? KvMemoryRule::kFree : KvMemoryRule::kTotal;
  if (auto v = fact("kv_memory_fraction")) e.kv_memory_fraction = v->Fraction();
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
  facts.Finish();
  root.Finish();
  if (e.scheduler.empty()) throw InputError(file, "facts.scheduler", "required");
  return e;
}

EngineProfile LoadEngineProfile(const std::string& path) { return ParseEngineProfile(ReadJsonFile(path), path); }

std::string DefaultFittedConstantsPath() { return config::DataRoot() + "/validation/fitted_constants.json"; }

Time FittedIterationOverhead(const std::string& engine, const std::string& path) {
  if (engine.empty() || !std::filesystem::exists(path)) return Time::Zero();
  nlohmann::json doc = ReadJsonFile(path);
  JsonNode root(doc, path, "");
  if (!root.IsObject() || !doc.contains("serving_iteration_overhead")) return Time::Zero();
  return Time::FromSeconds(root.Child("serving_iteration_overhead").Child("value_s").NonNegativeNumber());
}

}  // namespace stacksim::serve
