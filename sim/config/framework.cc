#include "sim/config/framework.h"

#include <algorithm>
#include <filesystem>
#include <mutex>

#include "sim/config/model.h"
#include "sim/config/scenario.h"
#include "sim/util/error.h"
#include "sim/util/json_reader.h"

namespace stacksim::config {
namespace {

namespace fs = std::filesystem;

std::string Lowercase(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::string JoinParts(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : " + ") + p;
  return out;
}

// A `matches` or `fallback_matches` array: lists of substrings.
std::vector<std::vector<std::string>> ReadMatchEntries(const JsonNode& node) {
  if (!node.IsArray() || node.Elements().empty()) node.Fail("expected a non-empty array of substring lists");
  std::vector<std::vector<std::string>> out;
  for (const JsonNode& m : node.Elements()) {
    if (!m.IsArray() || m.Elements().empty()) m.Fail("expected a non-empty array of substrings, e.g. [\"NeMo\"]");
    std::vector<std::string> parts;
    for (const JsonNode& s : m.Elements()) {
      parts.push_back(s.String());
      if (parts.back().empty()) s.Fail("an empty substring matches every framework text");
    }
    out.push_back(parts);
  }
  return out;
}

// One fact: {"value": ..., "source": "..."}; the source must be given.
JsonNode Fact(JsonObject& facts, const char* key) {
  JsonObject fact(facts.Required(key));
  JsonNode value = fact.Required("value");
  fact.Required("source").String();
  fact.Finish();
  return value;
}

// Expert tensor parallelism: "tp" (etp = tp, Megatron-Core's default for an
// unset expert_tensor_parallel_size) or 1 (whole experts per rank).
bool ReadExpertTp(const JsonNode& v) {
  if (v.IsString()) {
    v.OneOf({"tp"});
    return true;
  }
  if (v.PositiveInt() != 1) v.Fail("expected \"tp\" or 1");
  return false;
}

MoeDispatcher ReadMoeDispatcher(const JsonNode& v) {
  return v.OneOf({"alltoall", "hierarchical"}) == "hierarchical" ? MoeDispatcher::kHierarchical
                                                                 : MoeDispatcher::kAllToAll;
}

Precision GradPrecisionOf(const JsonNode& v) {
  std::string s = v.OneOf({"fp32", "bf16", "fp16"});
  return s == "bf16" ? Precision::kBf16 : s == "fp16" ? Precision::kFp16 : Precision::kFp32;
}

// A profile that names another with "extends" takes that profile's facts, and
// its own facts replace them one by one (one level: the named profile may not
// extend another). The named profile is NAME.json beside this file.
nlohmann::json WithExtendedFacts(nlohmann::json doc, const std::string& path) {
  if (!doc.is_object() || !doc.contains("extends")) return doc;
  const nlohmann::json& name = doc["extends"];
  if (!name.is_string()) throw InputError(path, "extends", "must be the name of a profile in the same directory");
  const fs::path base_path = fs::path(path).parent_path() / (name.get<std::string>() + ".json");
  if (!fs::exists(base_path)) {
    throw InputError(path, "extends", "no profile '" + name.get<std::string>() + "' beside this file");
  }
  nlohmann::json base = ReadJsonFile(base_path.string());
  if (base.contains("extends")) {
    throw InputError(path, "extends", "'" + name.get<std::string>() + "' extends a profile itself (one level only)");
  }
  if (base.contains("facts") && base["facts"].is_object() && doc.contains("facts") && doc["facts"].is_object()) {
    for (const auto& [key, fact] : doc["facts"].items()) base["facts"][key] = fact;
    doc["facts"] = base["facts"];
  }
  return doc;
}

// Each selective_recompute kind: its name, and the plan's selective_policy a
// run that asks for "selective" gets (unavailable: never asked, validate
// does not choose selective).
struct SelectiveKind {
  const char* name;
  SelectiveRecomputeKind kind;
  SelectivePolicy policy;
};
constexpr SelectiveKind kSelectiveKinds[] = {
    {"unavailable", SelectiveRecomputeKind::kUnavailable, SelectivePolicy::kModules},
    {"modules", SelectiveRecomputeKind::kModules, SelectivePolicy::kModules},
    {"op-policy", SelectiveRecomputeKind::kOpPolicy, SelectivePolicy::kOpPolicy},
    {"save-qkv-proj", SelectiveRecomputeKind::kSaveQkvProj, SelectivePolicy::kSaveQkvProj},
};

const SelectiveKind& SelectiveKindOf(SelectiveRecomputeKind k) {
  for (const SelectiveKind& s : kSelectiveKinds) {
    if (s.kind == k) return s;
  }
  return kSelectiveKinds[1];
}

}  // namespace

const char* SelectiveRecomputeKindName(SelectiveRecomputeKind k) { return SelectiveKindOf(k).name; }

const char* ModelFamilyName(ModelFamily f) { return f == ModelFamily::kMpt ? "mpt" : "gpt"; }

Precision FrameworkProfile::GradPrecision(Precision training) const {
  if (training == Precision::kFp32) return Precision::kFp32;
  return training == Precision::kFp16 ? grad_precision_fp16 : grad_precision_bf16;
}

GradAccumulation FrameworkProfile::GradAccumulationFor(Precision training) const {
  if (training == Precision::kFp32) return GradAccumulation::kFused;
  return training == Precision::kFp16 ? grad_accumulation_fp16 : grad_accumulation_bf16;
}

bool FrameworkProfile::ZeroGradAllReduceFor(Precision training) const {
  if (training == Precision::kFp32) return false;
  return training == Precision::kFp16 ? zero_grad_all_reduce_fp16 : zero_grad_all_reduce_bf16;
}

PlanConfig FrameworkProfile::PlanDefaults(PlanConfig base) const {
  base.attention = attention;
  base.kernels = kernels;
  base.sequence_parallel = sequence_parallel;
  base.sharding = sharding;
  base.overlap_grad_reduce = overlap_grad_reduce;
  base.tp_comm_overlap = tp_comm_overlap;
  base.grad_reduce_precision = GradPrecision(base.precision);
  base.grad_accumulation = GradAccumulationFor(base.precision);
  base.zero_grad_all_reduce = ZeroGradAllReduceFor(base.precision);
  base.loss_logits = loss_logits;
  base.eager_modules = eager_modules;
  base.fp8_casts = fp8_casts;
  base.fp8_amax_reduction = fp8_amax_reduction;
  base.compiled_layers_only = compiled_layers_only;
  base.repeat_kv_copies = repeat_kv_copies;
  base.fsdp_pp_reshard = fsdp_pp_reshard;
  base.sp_keeps_gathered_inputs = sp_keeps_gathered_inputs;
  base.cp_torch_ring = cp_torch_ring;
  base.fsdp_copies = fsdp_copies;
  base.pp_blocking_sends = pp_blocking_sends;
  base.single_round_all_forwards = single_round_all_forwards;
  base.overlap_param_gather = overlap_param_gather;
  base.optimizer_state = optimizer_state;
  base.fp8_tp_gather = fp8_tp_gather;
  base.fp8_params = fp8_params;
  base.cp_comm = cp_comm;
  base.zero3_gather = zero3_gather;
  base.zero3_max_reuse_distance = zero3_max_reuse_distance;
  base.dispatcher = moe_dispatcher;
  base.comm_sms = comm_sms;
  if (selective_modules) base.recompute_modules = *selective_modules;
  base.selective_policy = SelectiveKindOf(selective_recompute).policy;
  return base;
}

FrameworkProfile LoadFrameworkFile(const std::string& path) {
  nlohmann::json doc = WithExtendedFacts(ReadJsonFile(path), path);
  JsonNode root(doc, path, "");
  JsonObject top(root);
  RequireSchema(top, "stacksim.framework/1");
  FrameworkProfile f;
  f.file = path;
  f.name = fs::path(path).stem().string();
  f.title = top.Required("title").String();
  f.matches = ReadMatchEntries(top.Required("matches"));
  if (top.Has("fallback_matches")) f.fallback_matches = ReadMatchEntries(top.Required("fallback_matches"));
  JsonObject facts(top.Required("facts"));
  {
    f.attention = ReadAttention(Fact(facts, "attention"));
  }
  f.kernels = Fact(facts, "kernels").OneOf({"fused", "eager"}) == "eager" ? KernelFusion::kEager : KernelFusion::kFused;
  f.sequence_parallel = Fact(facts, "sequence_parallel").Bool();
  {
    std::string s = Fact(facts, "sharding").OneOf({"none", "zero1", "zero2", "zero3"});
    f.sharding = s == "zero1" ? Sharding::kZero1 : s == "zero2" ? Sharding::kZero2 : s == "zero3" ? Sharding::kZero3 : Sharding::kNone;
  }
  f.overlap_grad_reduce = Fact(facts, "overlap_grad_reduce").Bool();
  {
    JsonObject g(Fact(facts, "grad_precision"));
    f.grad_precision_bf16 = GradPrecisionOf(g.Required("bf16"));
    f.grad_precision_fp16 = GradPrecisionOf(g.Required("fp16"));
    g.Finish();
  }
  {
    const std::string k = Fact(facts, "selective_recompute")
                              .OneOf({kSelectiveKinds[0].name, kSelectiveKinds[1].name, kSelectiveKinds[2].name,
                                      kSelectiveKinds[3].name});
    for (const SelectiveKind& s : kSelectiveKinds) {
      if (k == s.name) f.selective_recompute = s.kind;
    }
  }
  if (facts.Has("recompute_escalation")) {
    const JsonNode v = Fact(facts, "recompute_escalation");
    if (f.selective_recompute != SelectiveRecomputeKind::kModules) {
      v.Fail("needs selective_recompute \"modules\": the sets are Megatron-Core recompute modules");
    }
    if (!v.IsArray() || v.Elements().empty()) v.Fail("expected a non-empty array of module lists, narrowest first");
    for (const JsonNode& set : v.Elements()) {
      const RecomputeModules m = ReadRecomputeModules(set);
      if (!f.recompute_escalation.empty() && (m.bits & f.recompute_escalation.back().bits) != f.recompute_escalation.back().bits) {
        set.Fail("each set must hold the one before it (the guide widens the boundary step by step)");
      }
      f.recompute_escalation.push_back(m);
    }
  }
  f.non_gated_family = Fact(facts, "non_gated_family").OneOf({"gpt", "mpt"}) == "mpt" ? ModelFamily::kMpt : ModelFamily::kGpt;
  {
    const JsonNode mb = Fact(facts, "micro_batching");
    if (mb.IsNumber()) {
      f.fixed_micro_batch = mb.PositiveInt();
    } else {
      f.whole_local_batch = mb.OneOf({"tuned", "whole-local-batch"}) == "whole-local-batch";
    }
  }
  {
    const std::string k = Fact(facts, "pipeline_schedule").OneOf({"tuned", "1f1b", "interleaved-1f1b", "dualpipe"});
    f.default_vp = k == "1f1b" || k == "dualpipe" ? 1 : 0;
    f.dualpipe = k == "dualpipe";
    if (k == "interleaved-1f1b") {
      JsonNode n = Fact(facts, "virtual_stages_per_rank");
      const int64_t v = n.PositiveInt();
      if (v < 2) n.Fail("interleaved 1F1B needs at least 2 virtual stages per rank");
      f.default_vp = static_cast<int>(v);
    } else if (facts.Has("virtual_stages_per_rank")) {
      Fact(facts, "virtual_stages_per_rank").Fail("only an interleaved-1f1b pipeline_schedule has virtual stages per rank");
    }
  }
  if (facts.Has("model_parallelism")) {
    const JsonNode v = Fact(facts, "model_parallelism");
    if (!v.IsArray()) v.Fail("expected a list of \"tp\" and \"pp\" (empty: data parallelism only)");
    f.offers_tp = f.offers_pp = false;
    for (const JsonNode& kind : v.Elements()) {
      bool& offered = kind.OneOf({"tp", "pp"}) == "tp" ? f.offers_tp : f.offers_pp;
      if (offered) kind.Fail("listed twice");
      offered = true;
    }
  }
  if (facts.Has("loss_logits")) {
    f.loss_logits = Fact(facts, "loss_logits").OneOf({"inplace", "upcast"}) == "upcast" ? LossLogits::kUpcast
                                                                                      : LossLogits::kInPlace;
  }
  if (facts.Has("eager_modules")) f.eager_modules = ReadEagerModules(Fact(facts, "eager_modules"));
  if (facts.Has("fp8_amax_reduction")) f.fp8_amax_reduction = Fact(facts, "fp8_amax_reduction").Bool();
  if (facts.Has("fp8_casts")) f.fp8_casts = ReadFp8Casts(Fact(facts, "fp8_casts"));
  if (facts.Has("compiled_layers_only")) f.compiled_layers_only = Fact(facts, "compiled_layers_only").Bool();
  if (facts.Has("repeat_kv_copies")) f.repeat_kv_copies = Fact(facts, "repeat_kv_copies").Bool();
  if (facts.Has("fsdp_pp_reshard")) f.fsdp_pp_reshard = Fact(facts, "fsdp_pp_reshard").Bool();
  if (facts.Has("precision")) {
    const std::string v = Fact(facts, "precision").OneOf({"fp16", "bf16", "fp8"});
    f.unstated_precision = v == "fp16" ? Precision::kFp16 : v == "fp8" ? Precision::kFp8 : Precision::kBf16;
  }
  if (facts.Has("recompute")) {
    const std::string v = Fact(facts, "recompute").OneOf({"none", "selective", "full"});
    f.unstated_recompute = v == "none" ? Recompute::kNone : v == "selective" ? Recompute::kSelective : Recompute::kFull;
  }
  if (facts.Has("tp_comm_overlap")) {
    // One value, or {"dense": ..., "moe": ...}.
    const JsonNode v = Fact(facts, "tp_comm_overlap");
    if (v.IsString()) {
      f.tp_comm_overlap = f.tp_comm_overlap_moe = ReadTpCommOverlap(v);
    } else {
      JsonObject kinds(v);
      f.tp_comm_overlap = ReadTpCommOverlap(kinds.Required("dense"));
      f.tp_comm_overlap_moe = ReadTpCommOverlap(kinds.Required("moe"));
      kinds.Finish();
    }
  }
  if (facts.Has("cp_torch_ring")) f.cp_torch_ring = Fact(facts, "cp_torch_ring").Bool();
  if (facts.Has("fsdp_copies")) f.fsdp_copies = Fact(facts, "fsdp_copies").Bool();
  if (facts.Has("pp_blocking_sends")) f.pp_blocking_sends = Fact(facts, "pp_blocking_sends").Bool();
  if (facts.Has("optimizer_state")) f.optimizer_state = ReadOptimizerState(Fact(facts, "optimizer_state"));
  if (facts.Has("overlap_param_gather")) f.overlap_param_gather = Fact(facts, "overlap_param_gather").Bool();
  if (facts.Has("grad_accumulation")) {
    JsonObject g(Fact(facts, "grad_accumulation"));
    f.grad_accumulation_bf16 = ReadGradAccumulation(g.Required("bf16"));
    f.grad_accumulation_fp16 = ReadGradAccumulation(g.Required("fp16"));
    g.Finish();
  }
  if (facts.Has("zero_grad_all_reduce")) {
    JsonObject g(Fact(facts, "zero_grad_all_reduce"));
    f.zero_grad_all_reduce_bf16 = g.Required("bf16").Bool();
    f.zero_grad_all_reduce_fp16 = g.Required("fp16").Bool();
    g.Finish();
  }
  if (facts.Has("single_round_all_forwards")) {
    f.single_round_all_forwards = Fact(facts, "single_round_all_forwards").Bool();
  }
  if (facts.Has("fp8_tp_gather")) f.fp8_tp_gather = Fact(facts, "fp8_tp_gather").Bool();
  if (facts.Has("fp8_params")) f.fp8_params = Fact(facts, "fp8_params").Bool();
  if (facts.Has("cp_comm")) {
    f.cp_comm = Fact(facts, "cp_comm").OneOf({"p2p", "allgather"}) == "allgather" ? CpComm::kAllGather : CpComm::kP2p;
  }
  if (facts.Has("sp_keeps_gathered_inputs")) {
    f.sp_keeps_gathered_inputs = Fact(facts, "sp_keeps_gathered_inputs").Bool();
  }
  if (facts.Has("expert_tensor_parallel")) f.expert_tp_follows_tp = ReadExpertTp(Fact(facts, "expert_tensor_parallel"));
  if (facts.Has("comm_sms")) {
    const JsonNode v = Fact(facts, "comm_sms");
    const int64_t n = v.Int();
    if (n < 0 || n > 1024) v.Fail("expected 0 to 1024 SMs");
    f.comm_sms = static_cast<int>(n);
  }
  if (facts.Has("selective_recompute_modules")) {
    const JsonNode v = Fact(facts, "selective_recompute_modules");
    if (f.selective_recompute != SelectiveRecomputeKind::kModules) {
      v.Fail("needs selective_recompute \"modules\": the set is Megatron-Core recompute modules");
    }
    f.selective_modules = ReadRecomputeModules(v);
  }
  if (facts.Has("moe_dispatcher")) f.moe_dispatcher = ReadMoeDispatcher(Fact(facts, "moe_dispatcher"));
  if (facts.Has("model_recipes")) {
    const JsonNode v = Fact(facts, "model_recipes");
    if (!v.IsArray() || v.Elements().empty()) v.Fail("expected a non-empty array of recipes");
    for (const JsonNode& r : v.Elements()) {
      JsonObject recipe(r);
      FrameworkProfile::ModelRecipe m;
      const JsonNode models = recipe.Required("models");
      if (!models.IsArray() || models.Elements().empty()) models.Fail("expected a non-empty array of model names");
      for (const JsonNode& name : models.Elements()) m.models.push_back(name.String());
      if (auto gpus = recipe.Optional("gpus")) {
        if (!gpus->IsArray() || gpus->Elements().empty()) gpus->Fail("expected a non-empty array of GPU names");
        for (const JsonNode& name : gpus->Elements()) m.gpus.push_back(name.String());
      }
      if (auto d = recipe.Optional("moe_dispatcher")) m.moe_dispatcher = ReadMoeDispatcher(*d);
      if (auto etp = recipe.Optional("expert_tensor_parallel")) m.expert_tp_follows_tp = ReadExpertTp(*etp);
      if (auto o = recipe.Optional("optimizer_state")) m.optimizer_state = ReadOptimizerState(*o);
      if (auto o = recipe.Optional("tp_comm_overlap")) m.tp_comm_overlap = ReadTpCommOverlap(*o);
      if (auto o = recipe.Optional("moe_a2a_overlap")) m.moe_a2a_overlap = o->Bool();
      if (!m.moe_dispatcher && !m.expert_tp_follows_tp && !m.optimizer_state && !m.tp_comm_overlap &&
          !m.moe_a2a_overlap) {
        r.Fail("a recipe must set something (moe_dispatcher, expert_tensor_parallel, optimizer_state, "
               "tp_comm_overlap, moe_a2a_overlap)");
      }
      recipe.Finish();
      f.model_recipes.push_back(std::move(m));
    }
  }
  if (facts.Has("zero3_gather")) {
    f.zero3_gather = ReadZero3Gather(Fact(facts, "zero3_gather"));
  }
  if (facts.Has("zero3_max_reuse_distance")) {
    f.zero3_max_reuse_distance = Fact(facts, "zero3_max_reuse_distance").NonNegativeNumber();
  }
  facts.Finish();
  top.Ignore({"notes", "extends"});
  top.Finish();
  return f;
}

const FrameworkProfile::ModelRecipe* FrameworkProfile::RecipeFor(const std::string& model_name,
                                                                  const std::string& gpu) const {
  auto starts = [](const std::string& name, const std::string& prefix) {
    return AlnumNameKey(name).rfind(AlnumNameKey(prefix), 0) == 0;  // "DeepSeek-V3 671B" is DeepSeek-V3
  };
  for (const ModelRecipe& r : model_recipes) {
    const bool on_gpu =
        r.gpus.empty() || std::any_of(r.gpus.begin(), r.gpus.end(), [&](const std::string& g) { return starts(gpu, g); });
    if (!on_gpu) continue;
    for (const std::string& m : r.models) {
      if (starts(model_name, m)) return &r;
    }
  }
  return nullptr;
}

void FrameworkProfile::ApplyRecipe(const ModelRecipe& recipe, bool moe, PlanConfig& plan,
                                   const std::function<bool(const char* key)>& stated) {
  if (moe && recipe.moe_dispatcher && !stated("moe_dispatcher")) plan.dispatcher = *recipe.moe_dispatcher;
  if (moe && recipe.expert_tp_follows_tp && !stated("etp")) plan.etp = *recipe.expert_tp_follows_tp ? plan.tp : 1;
  if (recipe.optimizer_state && !stated("optimizer_state")) plan.optimizer_state = *recipe.optimizer_state;
  if (recipe.tp_comm_overlap && !stated("tp_comm_overlap")) plan.tp_comm_overlap = *recipe.tp_comm_overlap;
  if (moe && recipe.moe_a2a_overlap && !stated("moe_a2a_overlap")) {
    plan.moe_a2a_overlap = *recipe.moe_a2a_overlap && MoeA2aOverlapRuns(plan);
  }
}

const std::vector<FrameworkProfile>& ShippedFrameworks() {
  static std::once_flag once;
  static std::vector<FrameworkProfile> frameworks;
  std::call_once(once, [] {
    const fs::path dir = fs::path(DataRoot()) / "frameworks";
    std::vector<std::string> files;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      if (entry.path().extension() == ".json") files.push_back(entry.path().string());
    }
    std::sort(files.begin(), files.end());
    for (const auto& f : files) frameworks.push_back(LoadFrameworkFile(f));
  });
  return frameworks;
}

const FrameworkProfile& FrameworkNamed(const std::string& name, const std::string& file, const std::string& key) {
  std::string known;
  for (const auto& f : ShippedFrameworks()) {
    if (f.name == name) return f;
    known += (known.empty() ? "" : ", ") + f.name;
  }
  throw InputError(file, key, "no framework '" + name + "' under frameworks/ (known: " + known + ")");
}

std::string FrameworkMatch::Describe(const std::string& text) const {
  if (assumed) return profile->name + " (assumed: no profile matches '" + text + "'; " + entry + ")";
  if (!fallback) return profile->name;
  return profile->name + " (fallback entry '" + entry + "': no profile names '" + text + "' more specifically)";
}

std::optional<FrameworkMatch> TryFindFramework(const std::vector<FrameworkProfile>& frameworks,
                                               const std::string& text, const std::string& file,
                                               const std::string& key) {
  // Three passes, each only when the ones before found nothing: `matches`
  // as written, `matches` ignoring case ("TorchTitan"), `fallback_matches`
  // ignoring case. Exact case first: an entry written as the text writes it
  // outranks one that matches only with case folded ("NeMo" in "Nemotron").
  const std::string lower = Lowercase(text);
  for (const int pass : {0, 1, 2}) {
    const bool fallback = pass == 2, fold = pass > 0;
    FrameworkMatch best;
    const FrameworkProfile* tie = nullptr;
    size_t best_len = 0;
    for (const auto& f : frameworks) {
      for (const auto& parts : fallback ? f.fallback_matches : f.matches) {
        size_t len = 0;
        bool all = true;
        for (const auto& p : parts) {
          if ((fold ? lower.find(Lowercase(p)) : text.find(p)) == std::string::npos) {
            all = false;
            break;
          }
          len += p.size();
        }
        if (!all) continue;
        if (len > best_len) {
          best = {&f, fallback, JoinParts(parts)};
          tie = nullptr;
          best_len = len;
        } else if (len == best_len && best.profile != &f) {
          tie = &f;
        }
      }
    }
    if (best.profile == nullptr) continue;
    if (tie != nullptr) {
      throw InputError(file, key, "'" + text + "' matches frameworks '" + best.profile->name + "' and '" + tie->name +
                                      "' equally; make one profile's match more specific");
    }
    return best;
  }
  return std::nullopt;
}

FrameworkMatch FindFramework(const std::vector<FrameworkProfile>& frameworks, const std::string& text,
                             const std::string& file, const std::string& key) {
  if (std::optional<FrameworkMatch> m = TryFindFramework(frameworks, text, file, key)) return *m;
  std::string known;
  for (const auto& f : frameworks) known += (known.empty() ? "" : ", ") + f.name;
  throw InputError(file, key, "no framework profile matches '" + text + "' (frameworks/: " + known + ")");
}

const FrameworkProfile& MatchFramework(const std::vector<FrameworkProfile>& frameworks, const std::string& text,
                                       const std::string& file, const std::string& key) {
  return *FindFramework(frameworks, text, file, key).profile;
}

}  // namespace stacksim::config
