#include "sim/validate/memory_validation.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <set>

#include "sim/config/fitted_constants.h"
#include "sim/config/framework.h"
#include "sim/validate/run_scenario.h"
#include "sim/util/error.h"
#include "sim/util/json_reader.h"

namespace stacksim::validate {
namespace {

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The text's leading words, lower case, up to the first ',', '(' or ';'.
std::string Leading(const std::string& text) {
  std::string s = Lower(text);
  const size_t end = s.find_first_of(",(;");
  if (end != std::string::npos) s = s.substr(0, end);
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

// The first word, lower case (up to a space, ',', '(' or ';').
std::string FirstWord(const std::string& text) {
  std::string s = Lower(text);
  const size_t end = s.find_first_of(" ,(;");
  return end == std::string::npos ? s : s.substr(0, end);
}

bool StartsWith(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

// A GPU's name as the runs write it -> the shipped profile (its system:
// config::SystemTopologyFor).
struct GpuName {
  const char* prefix;  // the text starts with it, then ends or goes on with ' ' or '('
  const char* profile;
};
constexpr GpuName kGpus[] = {
    {"H100 SXM 96GB", "h100-sxm-96gb"}, {"H100 SXM 80GB", "h100-sxm-80gb"}, {"H100 SXM", "h100-sxm-80gb"},
    {"A100 SXM 80GB", "a100-sxm-80gb"}, {"A100 SXM 40GB", "a100-sxm-40gb"}, {"H200", "h200-sxm-141gb"},
    {"H800", "h800-sxm-80gb"},          {"GB200", "gb200"},                 {"B200", "b200"},
};

const GpuName& GpuFor(const JsonNode& node) {
  const std::string text = node.String();
  for (const GpuName& g : kGpus) {
    const std::string p = g.prefix;
    if (StartsWith(text, p) && (text.size() == p.size() || text[p.size()] == ' ' || text[p.size()] == '(')) return g;
  }
  std::string known;
  for (const GpuName& g : kGpus) known += (known.empty() ? "'" : ", '") + std::string(g.prefix) + "'";
  node.Fail("GPU '" + text + "' is not one stacksim has a profile for (known: " + known + ")");
  return kGpus[0];  // not reached
}

config::Precision PrecisionOf(const JsonNode& node) {
  const std::string w = FirstWord(node.String());
  if (w == "bf16") return config::Precision::kBf16;
  if (w == "fp16") return config::Precision::kFp16;
  if (w == "fp32") return config::Precision::kFp32;
  if (w == "fp8") return config::Precision::kFp8;
  node.Fail("expected the text to start with bf16, fp16, fp32 or fp8; got '" + node.String() + "'");
  return config::Precision::kBf16;
}

config::Recompute RecomputeOf(const JsonNode& node) {
  const std::string w = FirstWord(node.String());
  if (w == "none") return config::Recompute::kNone;
  if (w == "selective") return config::Recompute::kSelective;
  if (w == "full") return config::Recompute::kFull;
  node.Fail("expected the text to start with none, selective or full; got '" + node.String() + "'");
  return config::Recompute::kNone;
}

config::Sharding ShardingOf(const JsonNode& node) {
  const std::string lead = Leading(node.String());
  const std::string w = FirstWord(node.String());
  if (w == "fsdp" || w == "fsdp2" || w == "zero-3" || w == "zero3") return config::Sharding::kZero3;
  if (w == "zero-2" || w == "zero2") return config::Sharding::kZero2;
  if (w == "zero-1" || w == "zero1" || lead == "distributed optimizer") return config::Sharding::kZero1;
  if (w == "none" || w == "ddp") return config::Sharding::kNone;
  node.Fail("expected the text to start with FSDP/FSDP2 (zero3), 'distributed optimizer' (zero1), ZeRO-1/2/3, DDP "
            "or none; got '" + node.String() + "'");
  return config::Sharding::kNone;
}

config::PipelineScheduleKind ScheduleOf(const JsonNode& node) {
  const std::string w = FirstWord(node.String());
  if (w == "1f1b") return config::PipelineScheduleKind::kOneFOneB;
  if (w == "interleaved") return config::PipelineScheduleKind::kInterleaved;
  if (w == "gpipe") return config::PipelineScheduleKind::kGpipe;
  node.Fail("expected the text to start with 1F1B, Interleaved or GPipe; got '" + node.String() + "'");
  return config::PipelineScheduleKind::kOneFOneB;
}

// The allocator statistic the definition names: PyTorch's
// torch.cuda.memory_stats() keys; exactly one must appear.
MemoryMeasure MeasureOf(const JsonNode& node) {
  const std::string text = node.String();
  const bool reserved = text.find("reserved_bytes.all.peak") != std::string::npos;
  const bool allocated = text.find("allocated_bytes.all.peak") != std::string::npos;
  if (reserved == allocated) {
    node.Fail("expected the definition to name exactly one of torch.cuda.memory_stats()'s "
              "'reserved_bytes.all.peak' or 'allocated_bytes.all.peak'");
  }
  return reserved ? MemoryMeasure::kReserved : MemoryMeasure::kAllocated;
}

MeasuredRank RankOf(const JsonNode& node) {
  const std::string lead = Lower(node.String());
  if (StartsWith(lead, "rank 0")) return MeasuredRank::kFirstStage;
  if (StartsWith(lead, "last rank")) return MeasuredRank::kLastStage;
  if (StartsWith(lead, "max over all gpus")) return MeasuredRank::kMaxOverStages;
  node.Fail("expected the text to start with 'rank 0', 'last rank' or 'max over all GPUs'; got '" + node.String() + "'");
  return MeasuredRank::kFirstStage;
}

// The model as a Hugging Face config with the details the entry leaves out
// taken from the model family, as run_scenario.cc does for training runs:
// gated (SiLU) models are Llama (RMSNorm, RoPE); others the framework's
// non-gated family (GPT as Megatron-LM: LayerNorm with biases, biases in
// the linears, dropout 0.1; learned positions need seq_len rows).
config::ModelConfig ModelOf(const JsonNode& node, const config::FrameworkProfile& fw, int64_t seq_len,
                            std::vector<std::string>& choices) {
  if (!node.IsObject()) node.Fail("expected an object");
  nlohmann::json m = node.json();
  const bool gated = m.contains("hidden_act") && m["hidden_act"].is_string() && m["hidden_act"] == "silu";
  if (!m.contains("norm_type") && !m.contains("rms_norm_eps") && !m.contains("layer_norm_eps")) {
    m["norm_type"] = gated ? "rmsnorm" : "layernorm";
    choices.push_back(std::string("norm=") + (gated ? "rmsnorm (Llama family)" : "layernorm"));
  }
  if (m.value("position_embedding_type", "") == "learned" && !m.contains("max_position_embeddings")) {
    m["max_position_embeddings"] = seq_len;
  }
  if (!gated && fw.non_gated_family == config::ModelFamily::kGpt) {
    if (!m.contains("mlp_bias") && m.value("attention_bias", false)) m["mlp_bias"] = true;
    if (!m.contains("hidden_dropout")) {
      m["hidden_dropout"] = 0.1;
      choices.push_back("dropout 0.1 (Megatron-LM GPT)");
    }
  }
  return config::ParseModel(JsonNode(m, node.file(), node.path()));
}

std::string PlanLine(const config::PlanConfig& p) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "tp%d pp%d dp%d cp%d vp%d mb%lld %s %s %s%s", p.tp, p.pp, p.dp, p.cp, p.vp,
                static_cast<long long>(p.micro_batch), config::RecomputeName(p.recompute),
                config::ShardingName(p.sharding), config::PrecisionName(p.precision),
                p.sequence_parallel ? " sp" : "");
  return buf;
}

double Gib(Bytes b) { return b.value / kGiB; }

double Mape(const std::vector<double>& errors) {
  if (errors.empty()) return 0;
  double sum = 0;
  for (double e : errors) sum += std::fabs(e);
  return sum / static_cast<double>(errors.size());
}

}  // namespace

const char* MemoryMeasureName(MemoryMeasure m) { return m == MemoryMeasure::kReserved ? "reserved" : "allocated"; }

const char* MeasuredRankName(MeasuredRank r) {
  return r == MeasuredRank::kFirstStage ? "first stage" : r == MeasuredRank::kLastStage ? "last stage" : "max over stages";
}

MemoryEntry ReadMemoryEntry(const nlohmann::json& entry, const std::string& file, const std::string& path) {
  JsonNode node(entry, file, path);
  JsonObject obj(node);
  MemoryEntry out;
  out.id = obj.Required("id").String();
  out.group = obj.Required("group").String();
  config::ScenarioConfig& s = out.scenario;
  s.file = file;
  s.name = out.id;
  const std::string framework = obj.Required("framework").String();
  const config::Sharding sharding = ShardingOf(obj.Required("sharding"));
  const config::FrameworkMatch match =
      FrameworkForText(framework, sharding == config::Sharding::kZero3, file, path + ".framework");
  const config::FrameworkProfile& fw = *match.profile;
  out.choices.push_back("framework=" + match.Describe(framework));
  s.seq_len = obj.Required("seq_len").PositiveInt();
  s.model = ModelOf(obj.Required("model"), fw, s.seq_len, out.choices);
  const GpuName& gpu = GpuFor(obj.Required("gpu"));
  s.topology_file = config::ResolveDataFile("topologies", config::SystemTopologyFor(gpu.profile), file);
  s.topology = config::LoadTopologyFile(s.topology_file);
  s.profile_file = config::ResolveDataFile("profiles", gpu.profile, file);
  s.profile = config::LoadProfileFile(s.profile_file);
  s.gpus = static_cast<int>(obj.Required("gpus").PositiveInt());

  config::PlanConfig base;
  base.precision = PrecisionOf(obj.Required("precision"));
  config::PlanConfig plan = fw.PlanDefaults(base);
  {
    JsonObject p(obj.Required("plan"));
    plan.tp = static_cast<int>(p.Required("tp").PositiveInt());
    plan.pp = static_cast<int>(p.Required("pp").PositiveInt());
    plan.dp = static_cast<int>(p.Required("dp").PositiveInt());
    plan.cp = static_cast<int>(p.Required("cp").PositiveInt());
    if (auto vp = p.Optional("vp")) plan.vp = static_cast<int>(vp->PositiveInt());
    if (auto sch = p.Optional("schedule")) {
      plan.schedule = ScheduleOf(*sch);
    } else {
      plan.schedule = plan.vp > 1 ? config::PipelineScheduleKind::kInterleaved : config::PipelineScheduleKind::kOneFOneB;
    }
    if (auto sp = p.Optional("sequence_parallel")) plan.sequence_parallel = sp->Bool();
    p.Finish();
  }
  plan.sequence_parallel = plan.sequence_parallel && plan.tp > 1;
  plan.micro_batch = obj.Required("micro_batch").PositiveInt();
  plan.global_batch = obj.Required("global_batch").PositiveInt();
  plan.recompute = RecomputeOf(obj.Required("recompute"));
  plan.sharding = sharding;
  if (s.model.num_layers % (static_cast<int64_t>(plan.pp) * plan.vp) != 0) {
    plan.uneven_stages = true;
    out.choices.push_back("uneven_stages (end stages one layer fewer)");
  }
  s.plan = plan;
  {
    JsonObject m(obj.Required("measured"));
    out.measured_gib = m.Required("peak_gib").PositiveNumber();
    out.measure = MeasureOf(m.Required("definition"));
    out.rank = RankOf(m.Required("rank"));
    if (auto st = m.Optional("state_after_step_gib")) {
      out.measured_state_gib = st->PositiveNumber();
      m.Required("state_definition").String();
    }
    m.Ignore({"raw", "saturated_at_capacity"});
    m.Finish();
  }
  obj.Ignore({"source", "caveats", "notes"});
  obj.Finish();
  return out;
}

std::vector<MemoryEntry> ReadMemoryRuns(const std::string& path) {
  nlohmann::json doc = ReadJsonFile(path);
  JsonNode root(doc, path, "");
  JsonObject top(root);
  RequireSchema(top, "stacksim.validation.memory/1");
  JsonNode runs = top.Required("runs");
  if (!runs.IsArray()) runs.Fail("expected an array of entries");
  top.Ignore({"about", "notes"});
  top.Finish();
  std::vector<MemoryEntry> out;
  std::set<std::string> ids;
  for (size_t i = 0; i < doc["runs"].size(); ++i) {
    const std::string p = "runs[" + std::to_string(i) + "]";
    out.push_back(ReadMemoryEntry(doc["runs"][i], path, p));
    if (!ids.insert(out.back().id).second) throw InputError(path, p + ".id", "repeats id '" + out.back().id + "'");
  }
  return out;
}

MemoryOutcome PredictMemory(const MemoryEntry& e, const memory::AllocatorReserve& reserve) {
  MemoryOutcome o;
  o.id = e.id;
  o.group = e.group;
  o.measure = e.measure;
  o.rank = e.rank;
  o.measured_gib = e.measured_gib;
  o.measured_state_gib = e.measured_state_gib;
  o.choices = e.choices;
  o.plan = PlanLine(e.scenario.plan);
  try {
    // The plan's rules, as simulate checks them. ZeRO-3 with context
    // parallelism is refused by the step simulation (not modelled there
    // yet); memory shards it over dp x cp as torchtitan's FSDP over the
    // dp_shard x cp mesh does, so the other rules are checked as zero1.
    config::ScenarioConfig check = e.scenario;
    if (check.plan.sharding == config::Sharding::kZero3 && check.plan.cp > 1) {
      check.plan.sharding = config::Sharding::kZero1;
      o.choices.push_back("FSDP x CP: plan rules checked as zero1 (the step simulation refuses ZeRO-3 with CP)");
    }
    config::ValidatePlan(check, e.scenario.file);
    const auto stages = memory::EstimateMemory(e.scenario);
    auto allocated = [&](const memory::StageFootprint& f) {
      return f.total() - memory::RuntimeMemory(e.scenario).outside_allocator();
    };
    size_t pick = 0;
    if (e.rank == MeasuredRank::kLastStage) pick = stages.size() - 1;
    if (e.rank == MeasuredRank::kMaxOverStages) {
      for (size_t i = 1; i < stages.size(); ++i) {
        if (allocated(stages[i]) > allocated(stages[pick])) pick = i;
      }
    }
    const memory::StageFootprint& f = stages[pick];
    o.stage = f.stage;
    o.footprint = f;
    Bytes predicted = allocated(f);
    if (e.measure == MemoryMeasure::kReserved) {
      const Bytes reserved = memory::ReservedPeak(e.scenario, predicted, reserve);
      o.allocator_cache_gib = Gib(reserved - predicted);
      predicted = reserved;
    }
    o.predicted_gib = Gib(predicted);
    o.error_pct = (o.predicted_gib - o.measured_gib) / o.measured_gib * 100.0;
    if (e.measured_state_gib) {
      o.predicted_state_gib = Gib(f.weights + f.gradients + f.optimizer);
      o.state_error_pct = (*o.predicted_state_gib - *e.measured_state_gib) / *e.measured_state_gib * 100.0;
    }
  } catch (const InputError& err) {
    o.error = err.what();
  }
  return o;
}

double FitCacheFraction(const std::vector<MemoryEntry>& entries) {
  std::vector<const MemoryEntry*> reserved;
  for (const auto& e : entries) {
    if (e.measure == MemoryMeasure::kReserved) reserved.push_back(&e);
  }
  if (reserved.empty()) return 0;
  // The allocated peaks do not depend on the fraction: predict them once.
  std::vector<std::pair<const MemoryEntry*, MemoryOutcome>> base;
  for (const MemoryEntry* e : reserved) {
    MemoryOutcome o = PredictMemory(*e, memory::AllocatorReserve{});
    if (o.error.empty()) base.emplace_back(e, o);
  }
  double best = 0, best_mape = 1e300;
  for (int i = 0; i <= 1000; ++i) {
    const memory::AllocatorReserve r{0.0005 * i, ""};
    std::vector<double> errors;
    for (const auto& [e, o] : base) {
      const Bytes allocated{o.predicted_gib * kGiB};
      const double gib = Gib(memory::ReservedPeak(e->scenario, allocated, r));
      errors.push_back((gib - e->measured_gib) / e->measured_gib * 100.0);
    }
    const double m = Mape(errors);
    if (m < best_mape - 1e-12) {
      best_mape = m;
      best = r.cache_fraction;
    }
  }
  return best;
}

MemoryValidationReport RunMemoryValidation(const std::string& path, const memory::AllocatorReserve& reserve) {
  const std::vector<MemoryEntry> entries = ReadMemoryRuns(path);
  MemoryValidationReport rep;
  rep.file = path;
  rep.reserve = reserve;
  std::vector<double> errors, state_errors;
  for (const auto& e : entries) {
    rep.entries.push_back(PredictMemory(e, reserve));
    const MemoryOutcome& o = rep.entries.back();
    if (!o.error.empty()) continue;
    errors.push_back(o.error_pct);
    if (o.predicted_state_gib) state_errors.push_back(o.state_error_pct);
  }
  rep.predicted = static_cast<int>(errors.size());
  rep.mape_pct = Mape(errors);
  rep.state_predicted = static_cast<int>(state_errors.size());
  rep.state_mape_pct = Mape(state_errors);
  // Leave one source out: refit the cache fraction without a group, then
  // predict that group's entries with it.
  std::vector<std::string> groups;
  for (const auto& e : entries) {
    if (std::find(groups.begin(), groups.end(), e.group) == groups.end()) groups.push_back(e.group);
  }
  std::vector<double> all_loso;
  for (const auto& g : groups) {
    std::vector<MemoryEntry> rest;
    for (const auto& e : entries) {
      if (e.group != g) rest.push_back(e);
    }
    MemoryValidationReport::Loso l;
    l.group = g;
    l.cache_fraction = FitCacheFraction(rest);
    std::vector<double> held;
    for (const auto& e : entries) {
      if (e.group != g) continue;
      MemoryOutcome o = PredictMemory(e, memory::AllocatorReserve{l.cache_fraction, ""});
      if (o.error.empty()) held.push_back(o.error_pct);
    }
    l.entries = static_cast<int>(held.size());
    l.mape_pct = Mape(held);
    all_loso.insert(all_loso.end(), held.begin(), held.end());
    rep.loso.push_back(l);
  }
  rep.loso_mape_pct = Mape(all_loso);
  return rep;
}

MemoryValidationReport RunMemoryValidation(const std::string& path) {
  return RunMemoryValidation(path, memory::FittedAllocatorReserve());
}

nlohmann::json FittedConstantsJson(const MemoryValidationReport& rep, double fraction, const std::string& command) {
  const std::string date = config::FitDate();
  nlohmann::json loso = nlohmann::json::array();
  for (const auto& l : rep.loso) {
    loso.push_back({{"held_out", l.group}, {"cache_fraction", l.cache_fraction}, {"entries", l.entries},
                    {"mape_pct", l.mape_pct}});
  }
  return {{"schema", "stacksim.fitted_constants/1"},
          {"about", "Constants fitted on end-to-end measurements, each with the command that fits it. "
                    "Everything else stacksim uses is sourced from datasheets, framework code or docs."},
          {"allocator_cache_fraction",
           {{"value", fraction},
            {"what", "PyTorch caching allocator: reserved peak = allocated peak x (1 + value), capped at the GPU's "
                     "capacity less the CUDA context and NCCL buffers (sim/memory/reserve.h ReservedPeak)"},
            {"fitted_by", command},
            {"date", date},
            {"fitted_on", rep.file + " (the entries measuring reserved_bytes.all.peak)"},
            {"leave_one_source_out", {{"groups", loso}, {"mape_pct", rep.loso_mape_pct}}}}}};
}

nlohmann::json MemoryValidationJson(const MemoryValidationReport& rep) {
  nlohmann::json entries = nlohmann::json::array();
  for (const auto& o : rep.entries) {
    nlohmann::json j = {{"id", o.id}, {"group", o.group}, {"measure", MemoryMeasureName(o.measure)},
                        {"rank", MeasuredRankName(o.rank)}, {"plan", o.plan}, {"choices", o.choices}};
    if (!o.error.empty()) {
      j["error"] = o.error;
    } else {
      j["stage"] = o.stage;
      j["measured_gib"] = o.measured_gib;
      j["predicted_gib"] = o.predicted_gib;
      j["error_pct"] = o.error_pct;
      const auto& f = o.footprint;
      j["parts_gib"] = {{"weights", Gib(f.weights)},         {"gradients", Gib(f.gradients)},
                        {"optimizer", Gib(f.optimizer)},     {"activations", Gib(f.activations)},
                        {"other", Gib(f.other)},             {"allocator_cache", o.allocator_cache_gib}};
      if (o.predicted_state_gib) {
        j["state_after_step"] = {{"measured_gib", *o.measured_state_gib},
                                 {"predicted_gib", *o.predicted_state_gib},
                                 {"error_pct", o.state_error_pct}};
      }
    }
    entries.push_back(j);
  }
  nlohmann::json loso = nlohmann::json::array();
  for (const auto& l : rep.loso) {
    loso.push_back({{"held_out", l.group}, {"cache_fraction", l.cache_fraction}, {"entries", l.entries},
                    {"mape_pct", l.mape_pct}});
  }
  return {{"entries", entries},
          {"predicted", rep.predicted},
          {"mape_pct", rep.mape_pct},
          {"state_after_step", {{"predicted", rep.state_predicted}, {"mape_pct", rep.state_mape_pct}}},
          {"allocator_cache_fraction", {{"value", rep.reserve.cache_fraction}, {"source", rep.reserve.source}}},
          {"leave_one_source_out", {{"groups", loso}, {"mape_pct", rep.loso_mape_pct}}}};
}

std::string MemoryValidationText(const MemoryValidationReport& rep) {
  std::string out;
  char buf[512];
  std::snprintf(buf, sizeof buf, "%-46s %-9s %-15s %5s %9s %9s %8s\n", "entry", "measure", "rank", "stage",
                "pred GiB", "meas GiB", "error");
  out += buf;
  for (const auto& o : rep.entries) {
    if (!o.error.empty()) {
      out += o.id + "  not modelled: " + o.error + "\n";
      continue;
    }
    std::snprintf(buf, sizeof buf, "%-46s %-9s %-15s %5d %9.2f %9.2f %+7.1f%%\n", o.id.c_str(),
                  MemoryMeasureName(o.measure), MeasuredRankName(o.rank), o.stage, o.predicted_gib, o.measured_gib,
                  o.error_pct);
    out += buf;
  }
  std::snprintf(buf, sizeof buf, "peak memory MAPE %.1f%% over %d of %zu entries\n", rep.mape_pct, rep.predicted,
                rep.entries.size());
  out += buf;
  if (rep.state_predicted > 0) {
    out += "\nweights + gradients + optimizer after the step:\n";
    for (const auto& o : rep.entries) {
      if (!o.predicted_state_gib) continue;
      std::snprintf(buf, sizeof buf, "%-46s %9.2f %9.2f %+7.1f%%\n", o.id.c_str(), *o.predicted_state_gib,
                    *o.measured_state_gib, o.state_error_pct);
      out += buf;
    }
    std::snprintf(buf, sizeof buf, "state after step MAPE %.1f%% over %d entries\n", rep.state_mape_pct,
                  rep.state_predicted);
    out += buf;
  }
  std::snprintf(buf, sizeof buf, "\nallocator cache fraction %.4f (%s)\n", rep.reserve.cache_fraction,
                rep.reserve.source.empty() ? "none fitted" : rep.reserve.source.c_str());
  out += buf;
  for (const auto& l : rep.loso) {
    std::snprintf(buf, sizeof buf, "leave out %-12s refit fraction %.4f, its %d entries MAPE %.1f%%\n",
                  l.group.c_str(), l.cache_fraction, l.entries, l.mape_pct);
    out += buf;
  }
  std::snprintf(buf, sizeof buf, "leave-one-source-out MAPE %.1f%%\n", rep.loso_mape_pct);
  out += buf;
  return out;
}

}  // namespace stacksim::validate
