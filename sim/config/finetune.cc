#include "sim/config/finetune.h"

#include <string>

namespace stacksim::config {

const char* FinetuneMethodName(FinetuneMethod m) {
  switch (m) {
    case FinetuneMethod::kFull: return "full";
    case FinetuneMethod::kLora: return "lora";
    case FinetuneMethod::kQlora: return "qlora";
  }
  return "?";
}

const char* LoraTargetName(LoraTarget t) {
  switch (t) {
    case LoraTarget::kQ: return "q";
    case LoraTarget::kK: return "k";
    case LoraTarget::kV: return "v";
    case LoraTarget::kO: return "o";
    case LoraTarget::kGate: return "gate";
    case LoraTarget::kUp: return "up";
    case LoraTarget::kDown: return "down";
  }
  return "?";
}

FinetuneConfig ReadFinetune(const JsonNode& node) {
  JsonObject obj(node);
  FinetuneConfig f;
  const std::string method = obj.Required("method").OneOf({"full", "lora", "qlora"});
  f.method = method == "lora" ? FinetuneMethod::kLora : method == "qlora" ? FinetuneMethod::kQlora : FinetuneMethod::kFull;
  if (!f.frozen_base()) {
    for (const char* key : {"rank", "alpha", "targets"}) {
      if (obj.Has(key)) obj.Required(key).Fail("method \"full\" trains every weight: no adapters to describe");
    }
    obj.Finish();
    return f;
  }
  JsonNode rank = obj.Required("rank");
  f.rank = rank.PositiveInt();
  if (f.rank > 65536) rank.Fail("an adapter rank above 65536 is wider than any model's projection");
  f.alpha = static_cast<double>(f.rank);
  if (auto v = obj.Optional("alpha")) f.alpha = v->PositiveNumber();
  JsonNode targets = obj.Required("targets");
  if (!targets.IsArray() || targets.json().empty()) {
    targets.Fail("expected a non-empty array of projections, e.g. [\"q\", \"k\", \"v\", \"o\"]");
  }
  for (const JsonNode& e : targets.Elements()) {
    const std::string name = e.OneOf({"q", "k", "v", "o", "gate", "up", "down"});
    for (int i = 0; i < kLoraTargetCount; ++i) {
      if (name != LoraTargetName(static_cast<LoraTarget>(i))) continue;
      if (f.Has(static_cast<LoraTarget>(i))) e.Fail("projection \"" + name + "\" is listed twice");
      f.targets |= 1u << i;
    }
  }
  obj.Finish();
  return f;
}

nlohmann::json FinetuneToJson(const FinetuneConfig& f) {
  nlohmann::json j = {{"method", FinetuneMethodName(f.method)}};
  if (!f.frozen_base()) return j;
  j["rank"] = f.rank;
  j["alpha"] = f.alpha;
  nlohmann::json targets = nlohmann::json::array();
  for (int i = 0; i < kLoraTargetCount; ++i) {
    if (f.Has(static_cast<LoraTarget>(i))) targets.push_back(LoraTargetName(static_cast<LoraTarget>(i)));
  }
  j["targets"] = targets;
  return j;
}

}  // namespace stacksim::config
