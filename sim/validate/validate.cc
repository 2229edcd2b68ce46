#include "sim/validate/validate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <limits>
#include <map>
#include <tuple>

#include "sim/memory/memory_model.h"
#include "sim/simulate/simulate.h"
#include "sim/util/error.h"
#include "sim/util/json_reader.h"

namespace stacksim::validate {
namespace {

using config::Precision;

bool Contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

// Frameworks that predate fused flash attention in Megatron-LM (it arrived in
// 2023): they ran the unfused QK^T / softmax / PV path.
bool UnfusedAttention(const std::string& framework) {
  return Contains(framework, "(2021)") || Contains(framework, "(2022)") || Contains(framework, "DeepSpeed") ||
         Contains(framework, "example");
}

// Megatron-Core and NeMo recipes turn on sequence parallelism with TP and use
// the distributed optimizer.
bool ModernMegatron(const std::string& framework) {
  return Contains(framework, "Megatron-Core") || Contains(framework, "NeMo");
}

std::string TopologyFor(const std::string& gpu) {
  if (gpu == "a100-sxm-80gb") return "dgx-a100";
  if (gpu == "a100-sxm-40gb") return "dgx-a100-40gb";
  if (gpu == "h100-sxm-80gb" || gpu == "h100-sxm-96gb") return "dgx-h100";
  if (gpu == "h800-sxm-80gb") return "h800-node";
  return "";
}

std::string PlanLine(const config::ScenarioConfig& s) {
  const auto& p = s.plan;
  return fmt::format("tp{} pp{} dp{} vp{} mb{} gb{} sp={} recompute={} sharding={} {} {}", p.tp, p.pp, p.dp,
                     p.vp, p.micro_batch, p.global_batch, p.sequence_parallel ? "on" : "off",
                     config::RecomputeName(p.recompute), config::ShardingName(p.sharding),
                     config::PrecisionName(p.precision),
                     std::string(config::AttentionName(p.attention)) + "-attention");
}

// A tuned run keeps headroom beyond the memory model's estimate: the caching
// allocator fragments, and transient buffers (logit casts, communication
// staging) come and go. Choices for open plan fields must leave this much free.
constexpr double kTunedHeadroom = 0.10;

bool Fits(const config::ScenarioConfig& s) {
  for (const auto& f : memory::EstimateMemory(s)) {
    if (f.total() > s.profile.hbm_capacity.value * (1.0 - kTunedHeadroom)) return false;
  }
  return true;
}

}  // namespace

RunScenario ScenarioForRun(const nlohmann::json& run, const std::string& file, const std::string& path) {
  JsonNode node(run, file, path);
  JsonObject obj(node);
  RunScenario out;
  config::ScenarioConfig& s = out.scenario;
  s.file = file;
  s.name = obj.Required("id").String();
  std::string framework = obj.Has("framework") ? obj.Required("framework").String() : "";
  obj.Ignore({"source", "tier", "scored", "measured", "derived_fields", "unverified_fields", "caveats", "framework"});

  // Model.
  JsonObject m(obj.Required("model"));
  std::optional<JsonNode> moe_node = m.Optional("moe");
  std::string attention = m.Required("attention").OneOf({"mha-gqa", "mla"});
  if (attention == "mla") throw InputError(file, path + ".model.attention", "multi-head latent attention is not modelled yet");
  config::ModelConfig& model = s.model;
  model.name = m.Required("name").String();
  model.num_layers = m.Required("layers").PositiveInt();
  model.hidden_size = m.Required("hidden").PositiveInt();
  model.num_attention_heads = m.Required("heads").PositiveInt();
  auto kv = m.Optional("kv_heads");
  model.num_kv_heads = kv ? kv->PositiveInt() : model.num_attention_heads;
  model.head_dim = model.hidden_size / model.num_attention_heads;
  model.intermediate_size = m.Required("ffn_hidden").PositiveInt();
  if (auto vocab = m.Optional("vocab")) {
    model.vocab_size = vocab->PositiveInt();
  } else if (m.Required("activation").String() == "gelu") {
    // GPT models without a stated vocabulary use GPT-2's BPE (50,257 tokens),
    // which Megatron-LM pads to a multiple of 128 x tp: 51,200 up to tp 8.
    model.vocab_size = 51200;
    out.choices.push_back("vocab=51200 (GPT-2 BPE, padded as Megatron-LM does)");
  } else {
    throw InputError(file, path + ".model.vocab", "the vocabulary size is needed for this model family");
  }
  s.seq_len = m.Required("seq_len").PositiveInt();
  std::string act = m.Required("activation").OneOf({"gelu", "swiglu", "relu", "squared-relu", "geglu"});
  model.activation = act == "gelu"           ? config::Activation::kGelu
                     : act == "swiglu"       ? config::Activation::kSwiglu
                     : act == "relu"         ? config::Activation::kRelu
                     : act == "squared-relu" ? config::Activation::kSquaredRelu
                                             : config::Activation::kGeglu;
  if (moe_node) {
    // Routed experts replace the MLP from layer dense_layers on; shared
    // experts as wide as expert_ffn_hidden each (DeepSeek's convention).
    JsonObject moe(*moe_node);
    model.num_experts = moe.Required("experts").PositiveInt();
    model.experts_per_token = moe.Required("top_k").PositiveInt();
    model.moe_intermediate_size = moe.Required("expert_ffn_hidden").PositiveInt();
    if (auto sh = moe.Optional("shared_experts")) model.shared_expert_intermediate_size = sh->Int() * model.moe_intermediate_size;
    if (auto d = moe.Optional("dense_layers")) model.first_k_dense = d->Int();
    moe.Finish();
  }
  m.Finish();
  // Architecture details the schema leaves out follow the model family: GPT
  // models trained with Megatron-LM use learned positions, biases, dropout 0.1
  // and tied embeddings; MPT (llm-foundry) uses ALiBi, no biases, no dropout,
  // tied embeddings; gated-MLP (Llama-style) models use RoPE, RMSNorm, no
  // biases and untied embeddings.
  const bool mosaic = Contains(framework, "llm-foundry") || Contains(framework, "Composer");
  if (model.gated_mlp()) {
    model.norm = config::NormKind::kRmsNorm;
    model.norm_bias = false;
    model.position_embedding = config::PositionEmbedding::kRope;
    model.tie_word_embeddings = false;
  } else if (mosaic) {
    model.norm = config::NormKind::kLayerNorm;
    model.norm_bias = false;
    model.position_embedding = config::PositionEmbedding::kAlibi;
    model.tie_word_embeddings = true;
  } else {
    model.norm = config::NormKind::kLayerNorm;
    model.attention_bias = model.mlp_bias = true;
    model.position_embedding = config::PositionEmbedding::kLearned;
    model.learned_position_embeddings = true;
    model.max_position_embeddings = s.seq_len;
    model.tie_word_embeddings = true;
    model.dropout = true;
  }

  // Hardware: the shipped profile and system of that GPU, with the run's NIC
  // bandwidth and node size.
  JsonObject hw(obj.Required("hardware"));
  std::string gpu = hw.Required("gpu").String();
  std::string topo = TopologyFor(gpu);
  if (topo.empty()) throw InputError(file, path + ".hardware.gpu", "no shipped system topology for GPU '" + gpu + "'");
  s.topology_file = config::ResolveDataFile("topologies", topo, file);
  s.topology = config::LoadTopologyFile(s.topology_file);
  s.profile_file = config::ResolveDataFile("profiles", gpu, file);
  s.profile = config::LoadProfileFile(s.profile_file);
  s.gpus = static_cast<int>(hw.Required("gpus").PositiveInt());
  if (auto gpn = hw.Optional("gpus_per_node")) s.topology.gpus_per_node = static_cast<int>(gpn->PositiveInt());
  if (auto nic = hw.Optional("nic_gbps_per_gpu")) {
    s.topology.nics.per_node = s.topology.gpus_per_node;
    s.topology.nics.bandwidth = Bandwidth{nic->PositiveNumber() * 1e9 / 8};
  }
  hw.Ignore({"notes"});
  hw.Finish();

  // Plan.
  JsonObject p(obj.Required("plan"));
  config::PlanConfig& plan = s.plan;
  auto given_int = [&](const char* key, int* dst) {
    if (auto v = p.Optional(key)) {
      *dst = static_cast<int>(v->PositiveInt());
      return true;
    }
    return false;
  };
  given_int("tp", &plan.tp);
  given_int("pp", &plan.pp);
  given_int("dp", &plan.dp);
  if (!p.Has("tp") || !p.Has("pp") || !p.Has("dp")) {
    throw InputError(file, path + ".plan", "tp, pp and dp must be given (plan search is not part of validation)");
  }
  int cp = 1, ep = 1;
  given_int("cp", &cp);
  given_int("ep", &ep);
  plan.cp = cp;
  plan.ep = ep;
  plan.global_batch = p.Required("global_batch").PositiveInt();

  if (auto prec = p.Optional("precision")) {
    std::string v = prec->OneOf({"fp16", "bf16", "fp8"});
    // FP8 as Megatron-Core runs it: Transformer Engine FP8 for the linear layers.
    plan.precision = v == "fp16" ? Precision::kFp16 : v == "fp8" ? Precision::kFp8 : Precision::kBf16;
  } else {
    plan.precision = Precision::kBf16;
    out.choices.push_back("precision=bf16");
  }
  // Attention kernels by framework generation: unfused before FlashAttention
  // reached Megatron-LM; FlashAttention-2 in 2023's llm-foundry; the fastest
  // fused kernels (Transformer Engine / cuDNN) in Megatron-Core and NeMo.
  out.predates_selective_recompute = Contains(framework, "(2021)") || Contains(framework, "example");
  plan.attention = UnfusedAttention(framework) ? config::AttentionImpl::kUnfused
                   : mosaic                    ? config::AttentionImpl::kFlash2
                                               : config::AttentionImpl::kFlash;
  // Megatron-LM of 2021-22 reduced gradients after the backward pass (its
  // local DDP); overlap with the backward came with Megatron-Core.
  plan.overlap_grad_reduce = !UnfusedAttention(framework);
  // Composer/llm-foundry ran the transformer's elementwise work as PyTorch
  // eager kernels; Megatron-LM and NeMo use fused kernels.
  plan.kernels = mosaic ? config::KernelFusion::kEager : config::KernelFusion::kFused;
  out.choices.push_back(std::string("kernels=") + (mosaic ? "eager" : "fused"));
  out.choices.push_back(std::string("attention=") + config::AttentionName(plan.attention));
  if (!plan.overlap_grad_reduce) out.choices.push_back("gradient reduction after the backward pass (no overlap)");

  if (auto sp = p.Optional("sequence_parallel")) {
    plan.sequence_parallel = sp->Bool() && plan.tp > 1;
  } else {
    plan.sequence_parallel = ModernMegatron(framework) && plan.tp > 1;
    out.choices.push_back(std::string("sequence_parallel=") + (plan.sequence_parallel ? "on" : "off"));
  }
  if (auto sh = p.Optional("sharding")) {
    std::string v = sh->OneOf({"none", "zero1", "zero2", "zero3"});
    plan.sharding = v == "none"    ? config::Sharding::kNone
                    : v == "zero1" ? config::Sharding::kZero1
                    : v == "zero2" ? config::Sharding::kZero2
                                   : config::Sharding::kZero3;
  } else {
    plan.sharding = ModernMegatron(framework) && plan.dp > 1 ? config::Sharding::kZero1 : config::Sharding::kNone;
    out.choices.push_back(std::string("sharding=") + config::ShardingName(plan.sharding));
  }
  if (auto sg = p.Optional("shard_group")) {
    if (sg->PositiveInt() < plan.dp) {
      out.choices.push_back("shard_group " + std::to_string(sg->PositiveInt()) +
                            " (hybrid sharding) simulated as sharding over the whole data-parallel group");
    }
  }
  if (auto mb = p.Optional("micro_batch")) {
    plan.micro_batch = mb->PositiveInt();
  } else {
    out.open_fields.push_back("micro_batch");
  }
  if (auto vp = p.Optional("vp")) {
    plan.vp = static_cast<int>(vp->PositiveInt());
  } else {
    out.open_fields.push_back("vp");
  }
  if (auto rc = p.Optional("recompute")) {
    std::string v = rc->OneOf({"none", "selective", "full"});
    plan.recompute = v == "none" ? config::Recompute::kNone
                     : v == "selective" ? config::Recompute::kSelective
                                        : config::Recompute::kFull;
  } else {
    out.open_fields.push_back("recompute");
  }
  p.Finish();
  obj.Finish();
  plan.schedule = plan.vp > 1 ? config::PipelineScheduleKind::kInterleaved : config::PipelineScheduleKind::kOneFOneB;
  // Layers that pp x vp does not divide (Llama-3.1 405B: 126 over 64 virtual
  // stages) run as Megatron-Core's account_for_embedding/loss_in_pipeline_split
  // does: the first and last stages, which also hold embedding and head, take
  // one layer fewer.
  if (s.model.num_layers % (static_cast<int64_t>(plan.pp) * plan.vp) != 0) {
    plan.uneven_stages = true;
    out.choices.push_back("uneven_stages (end stages one layer fewer)");
  }
  return out;
}

namespace {

// Fills the open plan fields with the fastest valid choice that fits in
// memory, as a tuned run would: micro-batch sizes and virtual stages are
// searched by simulation; recomputation is the cheapest mode that fits.
void FillOpenFields(RunScenario& rs, RunOutcome& outcome, simulate::SimulationResult* best_result) {
  config::ScenarioConfig base = rs.scenario;
  auto open = [&](const char* f) {
    return std::find(rs.open_fields.begin(), rs.open_fields.end(), f) != rs.open_fields.end();
  };
  std::vector<int64_t> mbs = {base.plan.micro_batch};
  if (open("micro_batch")) {
    mbs.clear();
    for (int64_t mb : {1, 2, 4, 8}) {
      if (base.plan.global_batch % (mb * base.plan.dp) == 0) mbs.push_back(mb);
    }
    if (mbs.empty()) mbs.push_back(1);
  }
  std::vector<int> vps = {base.plan.vp};
  if (open("vp")) {
    vps = {1};
    if (base.plan.pp > 1) {
      for (int v = 2; v <= 8 && vps.size() < 3; ++v) {
        if (base.model.num_layers % (base.plan.pp * v) == 0) vps.push_back(v);
      }
    }
  }
  std::vector<config::Recompute> modes = {base.plan.recompute};
  if (open("recompute")) {
    modes = {config::Recompute::kNone, config::Recompute::kSelective, config::Recompute::kFull};
    // Selective recomputation arrived with Korthikanti et al. (2022); before
    // it Megatron-LM could only checkpoint whole layers.
    if (rs.predates_selective_recompute) modes = {config::Recompute::kNone, config::Recompute::kFull};
  }

  double best = std::numeric_limits<double>::infinity();
  config::ScenarioConfig chosen = base;
  bool any = false;
  for (int64_t mb : mbs) {
    for (int v : vps) {
      config::ScenarioConfig c = base;
      c.plan.micro_batch = mb;
      c.plan.vp = v;
      c.plan.schedule = v > 1 ? config::PipelineScheduleKind::kInterleaved : config::PipelineScheduleKind::kOneFOneB;
      try {
        config::ValidatePlan(c, c.file);
      } catch (const InputError&) {
        continue;
      }
      // The cheapest recomputation that fits.
      bool fits = false;
      for (auto mode : modes) {
        c.plan.recompute = mode;
        if (Fits(c)) {
          fits = true;
          break;
        }
      }
      if (!fits && (open("micro_batch") || open("vp"))) continue;  // a tuned run would not pick it
      simulate::Options o;
      o.simulate_if_out_of_memory = true;
      auto r = simulate::Simulate(c, o);
      if (r.iteration.seconds() < best) {
        best = r.iteration.seconds();
        chosen = c;
        *best_result = r;
        any = true;
      }
    }
  }
  if (!any) {
    // Nothing fits by our memory model: simulate the given plan anyway.
    config::ScenarioConfig c = base;
    if (open("recompute")) c.plan.recompute = config::Recompute::kFull;
    if (open("micro_batch")) c.plan.micro_batch = mbs.front();
    if (open("vp")) c.plan.vp = 1;
    c.plan.schedule = c.plan.vp > 1 ? config::PipelineScheduleKind::kInterleaved : config::PipelineScheduleKind::kOneFOneB;
    simulate::Options o;
    o.simulate_if_out_of_memory = true;
    *best_result = simulate::Simulate(c, o);
    chosen = c;
  }
  if (open("micro_batch")) outcome.choices.push_back("micro_batch=" + std::to_string(chosen.plan.micro_batch));
  if (open("vp")) outcome.choices.push_back("vp=" + std::to_string(chosen.plan.vp));
  if (open("recompute")) outcome.choices.push_back(std::string("recompute=") + config::RecomputeName(chosen.plan.recompute));
  rs.scenario = chosen;
}

}  // namespace

ValidationReport RunValidation(const std::string& path, const ValidationOptions& options) {
  nlohmann::json doc = ReadJsonFile(path);
  JsonNode root(doc, path, "");
  JsonObject top(root);
  std::string schema = top.Required("schema").String();
  if (schema != "stacksim.validation.training/1") {
    throw InputError(path, "schema", "expected 'stacksim.validation.training/1', got '" + schema + "'");
  }
  auto runs = top.Required("runs").Elements();
  top.Finish();

  ValidationReport rep;
  double sum = 0, dense_sum = 0;
  for (const JsonNode& run : runs) {
    RunOutcome o;
    JsonObject r(run);
    o.id = r.Required("id").String();
    if (!options.only_id.empty() && o.id != options.only_id) continue;
    o.tier = r.Has("tier") ? r.Required("tier").String() : "";
    o.scored = r.Has("scored") && r.Required("scored").Bool();
    if (r.Has("hardware")) {
      const auto& hw = run.json().at("hardware");
      if (hw.contains("gpu") && hw["gpu"].is_string()) o.gpu = hw["gpu"].get<std::string>();
      if (hw.contains("gpus") && hw["gpus"].is_number_integer()) o.gpus = hw["gpus"].get<int>();
    }
    if (r.Has("measured")) {
      const auto& ms = run.json().at("measured");
      if (ms.contains("iteration_s") && ms["iteration_s"].is_number()) o.measured_s = ms["iteration_s"].get<double>();
    }
    if (o.scored) ++rep.scored_total;
    if (r.Has("model")) {
      const auto& m = run.json().at("model");
      o.moe = m.is_object() && m.contains("moe") && !m["moe"].is_null();
    }
    try {
      if (!o.measured_s) throw InputError(path, run.path() + ".measured.iteration_s", "the run has no measured iteration time");
      RunScenario rs = ScenarioForRun(run.json(), path, run.path());
      o.choices = rs.choices;
      simulate::SimulationResult result;
      FillOpenFields(rs, o, &result);
      o.plan = PlanLine(rs.scenario);
      if (result.out_of_memory) {
        double worst = 0;
        for (const auto& m : result.memory) worst = std::max(worst, m.total().value);
        o.warnings.push_back(fmt::format("memory model: {:.1f} GiB needed > {:.1f} GiB on the GPU", worst / kGiB,
                                         result.capacity.value / kGiB));
      }
      o.predicted_s = result.iteration.seconds();
      o.features = uncertainty::FeaturesOf(rs.scenario);
      if (run.json().contains("framework") && run.json()["framework"].is_string()) {
        o.features->framework = run.json()["framework"].get<std::string>();
      }
      o.error_pct = (*o.predicted_s - *o.measured_s) / *o.measured_s * 100.0;
      if (o.scored) {
        sum += std::fabs(o.error_pct);
        ++rep.scored_predicted;
        if (!o.moe) {
          dense_sum += std::fabs(o.error_pct);
          ++rep.scored_dense_predicted;
        }
      }
    } catch (const InputError& e) {
      o.error = e.what();
    }
    rep.runs.push_back(o);
  }
  rep.mape_pct = rep.scored_predicted > 0 ? sum / rep.scored_predicted : 0;
  rep.mape_dense_pct = rep.scored_dense_predicted > 0 ? dense_sum / rep.scored_dense_predicted : 0;

  // The error table, and each scored run's range from the others' errors.
  rep.error_table.validation_file = std::filesystem::path(path).filename().string();
  rep.error_table.validation_runs = static_cast<int>(runs.size());
  for (const auto& o : rep.runs) {
    if (!o.scored || !o.predicted_s || !o.features) continue;
    rep.error_table.runs.push_back({o.id, *o.features, *o.measured_s, *o.predicted_s, *o.predicted_s / *o.measured_s - 1});
  }
  for (auto& o : rep.runs) {
    if (!o.scored || !o.predicted_s || !o.features) continue;
    uncertainty::Assessment a = uncertainty::Assess(rep.error_table, *o.features, *o.predicted_s, {}, o.id);
    o.coverage = a.warnings;
    o.range = a.range;
    if (o.range) {
      ++rep.ranged;
      if (*o.measured_s >= o.range->low_s && *o.measured_s <= o.range->high_s) ++rep.inside_range;
    }
  }
  return rep;
}

void StampErrorTable(uncertainty::ErrorTable& table, const std::string& source_dir) {
  auto run = [](const std::string& cmd) {
    std::string out;
    FILE* p = popen(cmd.c_str(), "r");
    if (p == nullptr) return std::make_pair(-1, out);
    char buf[256];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    int rc = pclose(p);
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
    return std::make_pair(rc, out);
  };
  std::string dir = "'" + source_dir + "'";
  auto [rc, commit] = run("git -C " + dir + " rev-parse HEAD 2>/dev/null");
  if (rc != 0 || commit.empty()) {
    table.stacksim_commit = "unknown";
  } else {
    auto [drc, dirty] =
        run("git -C " + dir + " status --porcelain --untracked-files=no -- sim profiles topologies models 2>/dev/null");
    table.stacksim_commit = commit + (drc == 0 && !dirty.empty() ? " + uncommitted changes" : "");
  }
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tm);
  table.generated = date;
}

namespace {

struct Band {
  int n = 0;
  std::vector<double> errors;
};

// Validated runs by GPU class, scale band and parallelism family.
std::map<std::tuple<std::string, std::string, std::string>, Band> Bands(const uncertainty::ErrorTable& t) {
  std::map<std::tuple<std::string, std::string, std::string>, Band> out;
  for (const auto& r : t.runs) {
    Band& b = out[{r.features.gpu_class, r.features.scale_band, r.features.family}];
    ++b.n;
    b.errors.push_back(r.error);
  }
  return out;
}

double InsidePct(const ValidationReport& r) { return r.ranged > 0 ? 100.0 * r.inside_range / r.ranged : 0; }

double ClaimedPct() {
  uncertainty::RangeOptions o;
  return 100.0 * (o.high_quantile - o.low_quantile);
}

bool ProfileKindWarning(const std::string& w) {
  return w.rfind("no measured profile", 0) == 0 || w.rfind("profile ", 0) == 0;
}

}  // namespace

nlohmann::json ValidationJson(const ValidationReport& report) {
  nlohmann::json runs = nlohmann::json::array();
  for (const auto& o : report.runs) {
    nlohmann::json j;
    j["id"] = o.id;
    j["scored"] = o.scored;
    j["tier"] = o.tier;
    j["gpu"] = o.gpu;
    j["gpus"] = o.gpus;
    j["measured_iteration_s"] = o.measured_s ? nlohmann::json(*o.measured_s) : nlohmann::json(nullptr);
    if (o.predicted_s) {
      j["predicted_iteration_s"] = *o.predicted_s;
      j["error_pct"] = o.error_pct;
      j["plan"] = o.plan;
    } else {
      j["error"] = o.error;
    }
    j["choices"] = o.choices;
    j["warnings"] = o.warnings;
    if (o.range) {
      nlohmann::json range = uncertainty::StepRangeJson(*o.range);
      range.erase("runs");
      range["leave_one_out"] = true;
      j["range"] = range;
      j["measured_in_range"] = *o.measured_s >= o.range->low_s && *o.measured_s <= o.range->high_s;
    }
    if (o.scored && o.predicted_s) j["coverage"] = o.coverage;
    runs.push_back(j);
  }
  nlohmann::json bands = nlohmann::json::array();
  for (const auto& [key, b] : Bands(report.error_table)) {
    bands.push_back({{"gpu_class", std::get<0>(key)},
                     {"scale_band", std::get<1>(key)},
                     {"family", std::get<2>(key)},
                     {"n", b.n},
                     {"error_p10", uncertainty::PredictiveQuantile(b.errors, 0.10)},
                     {"error_median", uncertainty::PredictiveQuantile(b.errors, 0.5)},
                     {"error_p90", uncertainty::PredictiveQuantile(b.errors, 0.90)}});
  }
  nlohmann::json calibration = {{"ranged", report.ranged},
                                {"inside", report.inside_range},
                                {"inside_pct", InsidePct(report)},
                                {"claimed_pct", ClaimedPct()},
                                {"bands", bands}};
  return {{"runs", runs},
          {"mape_pct", report.mape_pct},
          {"scored_predicted", report.scored_predicted},
          {"mape_dense_pct", report.mape_dense_pct},
          {"scored_dense_predicted", report.scored_dense_predicted},
          {"scored_total", report.scored_total},
          {"uncertainty", calibration}};
}

std::string ValidationText(const ValidationReport& report) {
  std::string out = fmt::format("{:<44} {:>6} {:>9} {:>9} {:>8}\n", "run", "gpus", "measured", "predicted", "error");
  for (const auto& o : report.runs) {
    std::string id = o.id.size() > 44 ? o.id.substr(0, 41) + "..." : o.id;
    if (o.predicted_s) {
      out += fmt::format("{:<44} {:>6} {:>8.2f}s {:>8.2f}s {:>+7.1f}%{}\n", id, o.gpus, *o.measured_s, *o.predicted_s,
                         o.error_pct, o.scored ? "" : "  (not scored)");
      out += "    " + o.plan + "\n";
      std::string chose;
      for (const auto& c : o.choices) chose += (chose.empty() ? "" : "; ") + c;
      if (!chose.empty()) out += "    chosen: " + chose + "\n";
      for (const auto& w : o.warnings) out += "    warning: " + w + "\n";
      if (o.range) {
        bool inside = *o.measured_s >= o.range->low_s && *o.measured_s <= o.range->high_s;
        out += "    range (leave-one-out): " + uncertainty::StepRangeText(*o.range) + "; measured " +
               (inside ? "inside" : "OUTSIDE") + "\n";
      }
      // Every validated profile is datasheet-derived: the summary says so once.
      for (const auto& w : o.coverage) {
        if (!ProfileKindWarning(w)) out += "    coverage: " + w + "\n";
      }
    } else {
      out += fmt::format("{:<44} {:>6} {:>9} {:>9}   -  {}\n", id, o.gpus,
                         o.measured_s ? fmt::format("{:.2f}s", *o.measured_s) : "-", "-", o.error);
    }
  }
  out += fmt::format("\nmean absolute error over {} of {} scored runs: {:.1f}%\n", report.scored_predicted,
                     report.scored_total, report.mape_pct);
  out += fmt::format("  dense runs: {:.1f}% over {}; mixture-of-experts runs: {}\n", report.mape_dense_pct,
                     report.scored_dense_predicted, report.scored_predicted - report.scored_dense_predicted);
  std::map<std::string, int> kinds;
  for (const auto& r : report.error_table.runs) ++kinds[r.features.gpu_kind];
  std::string kind_list;
  for (const auto& [k, n] : kinds) kind_list += fmt::format("{}{} {}", kind_list.empty() ? "" : ", ", n, k);
  out += fmt::format("\nuncertainty (leave-one-out): the measured step fell inside its p10-p90 range for {} of {} "
                     "scored runs ({:.1f}%; the range claims {:.0f}%)\n",
                     report.inside_range, report.ranged, InsidePct(report), ClaimedPct());
  out += "  profiles of the validated runs: " + kind_list + "\n";
  out += "validated runs by GPU class, scale band and parallelism: n, error p10 / median / p90\n";
  for (const auto& [key, b] : Bands(report.error_table)) {
    out += fmt::format("  {:<10} {:>9} GPUs  {:<11} {:>3}  {:>+6.1f}% / {:>+6.1f}% / {:>+6.1f}%\n", std::get<0>(key),
                       std::get<1>(key), std::get<2>(key), b.n, 100 * uncertainty::PredictiveQuantile(b.errors, 0.1),
                       100 * uncertainty::PredictiveQuantile(b.errors, 0.5),
                       100 * uncertainty::PredictiveQuantile(b.errors, 0.9));
  }
  return out;
}

}  // namespace stacksim::validate
