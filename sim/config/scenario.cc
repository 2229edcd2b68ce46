#include "sim/config/scenario.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

#include "sim/config/framework.h"
#include "sim/config/hardware_match.h"
#include "sim/util/token_count.h"
#include "sim/config/quantity_text.h"

namespace stacksim::config {
namespace {

namespace fs = std::filesystem;

std::string Str(int64_t v) { return std::to_string(v); }

bool IsPathReference(const std::string& ref) {
  return ref.find('/') != std::string::npos || (ref.size() > 5 && ref.compare(ref.size() - 5, 5, ".json") == 0);
}

// A model, topology or profile given by name, by path, or inline.
template <typename T, typename Load, typename Parse>
T LoadPart(const JsonNode& node, const char* kind, const char* what, const std::string& scenario_file,
           std::string* part_file, Load load, Parse parse) {
  if (node.IsObject()) {
    *part_file = scenario_file;
    return parse(node);
  }
  if (!node.IsString()) node.Fail(std::string("expected the name of a ") + what + ", a path to its file, or an object");
  std::string ref = node.String();
  std::string path = ResolveDataFile(kind, ref, scenario_file);
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    node.Fail(std::string("unknown ") + what + " '" + ref + "': no file " + path +
              (IsPathReference(ref) ? "" : std::string(" (names are looked up in ") + DataRoot() + "/" + kind + "/)"));
  }
  *part_file = path;
  return load(path);
}

// The text of an InputError without its "file: path: " prefix.
std::string BareMessage(const InputError& e) {
  std::string what = e.what();
  std::string prefix = e.file().empty() ? "" : e.file() + ": ";
  if (!e.key_path().empty()) prefix += e.key_path() + ": ";
  return what.compare(0, prefix.size(), prefix) == 0 ? what.substr(prefix.size()) : what;
}

bool UnderPath(const std::string& key_path, const std::string& set_path) {
  if (key_path == set_path) return true;
  if (key_path.size() <= set_path.size() || key_path.compare(0, set_path.size(), set_path) != 0) return false;
  char next = key_path[set_path.size()];
  return next == '.' || next == '[';
}

ScenarioConfig ParseDocument(const nlohmann::json& doc, const std::string& file, const ScenarioOptions& options) {
  JsonNode root(doc, file, "");
  JsonObject obj(root);
  ScenarioConfig s;
  s.file = file;
  s.overrides = options.overrides;
  if (auto n = obj.Optional("name")) {
    s.name = n->String();
  } else {
    s.name = fs::path(file).stem().string();
  }
  if (auto q = obj.Optional("question")) s.question = q->String();
  if (auto n = obj.Optional("notes")) s.notes = n->String();
  if (auto n = obj.Optional("source")) s.source = n->String();
  // What `stacksim import` recorded (the file, its format, how each flag
  // mapped, what it did not understand): provenance for people, no effect.
  if (auto n = obj.Optional("import"); n && !n->IsObject()) n->Fail("expected the object stacksim import writes");

  JsonNode model_node = obj.Required("model");
  JsonNode topology_node = obj.Required("topology");
  std::optional<JsonNode> profile_node = obj.Optional("profile");
  JsonNode gpus = obj.Required("gpus");
  int64_t g = gpus.PositiveInt();
  // 2^24 GPUs: 128x the largest cluster announced (131,072 GPUs); keeps every
  // product of GPU counts (ranks x nodes, GPUs x NICs) far inside int range.
  if (g > kMaxGpus) gpus.Fail(Str(g) + " GPUs is more than stacksim simulates (at most " + Str(kMaxGpus) + ")");
  s.gpus = static_cast<int>(g);
  if (auto order = obj.Optional("node_order")) {
    s.node_order = order->OneOf({"packed", "scattered"}) == "scattered" ? NodeOrder::kScattered : NodeOrder::kPacked;
  }

  // "compare": {"tokens": "300B", "clusters": ["dgx-h100:1024", ...]}: what
  // `stacksim compare --scenario` asks when its command line does not say
  // (sim/cli/compare_command.cc reads it); checked here, unused by simulate.
  if (auto compare = obj.Optional("compare")) {
    JsonObject c(*compare);
    c.Required("tokens").String();
    JsonNode clusters = c.Required("clusters");
    if (clusters.Elements().empty()) clusters.Fail("list at least one cluster (TOPOLOGY:GPUS)");
    for (const JsonNode& cluster : clusters.Elements()) cluster.String();
    c.Finish();
  }

  JsonObject training(obj.Required("training"));
  JsonNode seq_len = training.Required("seq_len");
  s.seq_len = seq_len.PositiveInt();
  if (s.seq_len > kMaxSeqLen) {
    seq_len.Fail("a sequence of " + Str(s.seq_len) + " tokens is longer than stacksim simulates (at most " +
                 Str(kMaxSeqLen) + ")");
  }
  JsonNode global_batch = training.Required("global_batch");
  int64_t gb = global_batch.PositiveInt();
  if (gb > (int64_t{1} << 40)) global_batch.Fail("implausibly large global batch: " + Str(gb));
  // Tokens per step (and token counts derived from them) stay exact in a double.
  if (static_cast<double>(gb) * static_cast<double>(s.seq_len) > 0x1p53) {
    global_batch.Fail("global batch x seq_len = " + Str(gb) + " x " + Str(s.seq_len) +
                      " tokens per step is more than stacksim represents (at most 2^53)");
  }
  if (auto tokens = training.Optional("tokens")) {
    s.token_budget = tokens->IsString() ? ParseTokenCount(tokens->String(), tokens->file() + ": " + tokens->path())
                                        : tokens->PositiveInt();
  }
  if (auto dl = training.Optional("data_loader")) {
    JsonObject d(*dl);
    DataLoaderConfig c;
    JsonNode pre = d.Required("preprocess_per_sample");
    c.preprocess_per_sample = pre.TimeValue();
    if (!(c.preprocess_per_sample > Time::Zero())) pre.Fail("must be more than zero (host time per sample)");
    JsonNode workers = d.Required("workers");
    const int64_t w = workers.Int();
    if (w < 0 || w > 1024) workers.Fail("must be 0 (the training process loads) to 1024 worker processes");
    c.workers = static_cast<int>(w);
    c.host_cores_per_gpu = d.Required("host_cores_per_gpu").PositiveNumber();
    auto bytes = d.Optional("sample_bytes");
    auto storage = d.Optional("storage_read_bandwidth");
    if (bytes.has_value() != storage.has_value()) {
      (bytes ? *bytes : *storage).Fail("sample_bytes and storage_read_bandwidth go together (storage is modelled with both)");
    }
    if (bytes) {
      c.sample_bytes = bytes->BytesValue();
      c.storage_read_bandwidth = storage->BandwidthValue();
      if (!(c.sample_bytes.value > 0)) bytes->Fail("must be more than zero");
      if (!(c.storage_read_bandwidth.value > 0)) storage->Fail("must be more than zero");
    }
    if (auto pf = d.Optional("prefetch_factor")) {
      const int64_t f = pf->PositiveInt();
      if (f > 1024) pf->Fail("at most 1024 batches per worker");
      c.prefetch_factor = static_cast<int>(f);
    }
    d.Finish();
    s.data_loader = c;
  }
  training.Finish();

  JsonNode plan_node = obj.Required("plan");
  {
    JsonObject required(plan_node);  // the degrees that must multiply to gpus are never defaulted
    required.Required("tp");
    required.Required("pp");
    required.Required("dp");
  }
  PlanConfig base;
  std::optional<FrameworkProfile> framework;
  if (auto f = obj.Optional("framework")) {
    framework = FrameworkNamed(f->String(), file, f->path());
    s.framework = framework->name;
    base = framework->PlanDefaults(base);
  }
  s.plan = ParsePlan(plan_node, base);
  // The framework's gradient dtype and accumulation follow the precision the
  // plan trains in, unless the plan says them.
  if (framework && !plan_node.json().contains("grad_reduce_precision")) {
    s.plan.grad_reduce_precision = framework->GradPrecision(s.plan.precision);
  }
  if (framework && !plan_node.json().contains("grad_accumulation")) {
    s.plan.grad_accumulation = framework->GradAccumulationFor(s.plan.precision);
  }
  if (framework && !plan_node.json().contains("zero_grad_all_reduce")) {
    s.plan.zero_grad_all_reduce = framework->ZeroGradAllReduceFor(s.plan.precision);
  }
  s.plan.global_batch = gb;
  obj.Finish();

  s.model = LoadPart<ModelConfig>(model_node, "models", "model", file, &s.model_file, LoadModelFile, ParseModel);
  // Expert tensor parallelism the plan leaves out follows the framework
  // (Megatron-Core: the TP size).
  if (framework && s.model.is_moe() && !plan_node.json().contains("tp_comm_overlap")) {
    s.plan.tp_comm_overlap = framework->tp_comm_overlap_moe;
  }
  if (framework && framework->expert_tp_follows_tp && s.model.is_moe() && !plan_node.json().contains("etp")) {
    s.plan.etp = s.plan.tp;
  }
  s.topology = LoadPart<TopologyConfig>(topology_node, "topologies", "topology", file, &s.topology_file,
                                        LoadTopologyFile, ParseTopology);
  if (!options.profile_path.empty()) {
    s.profile_file = options.profile_path;
    s.profile = LoadProfileFile(options.profile_path);
  } else if (profile_node) {
    s.profile = LoadPart<ProfileConfig>(*profile_node, "profiles", "profile", file, &s.profile_file,
                                        LoadProfileFile, ParseProfile);
  } else {
    std::string path = ResolveDataFile("profiles", s.topology.gpu, "");
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) {
      const bool inline_topology = topology_node.IsObject();
      throw InputError(s.topology_file, inline_topology ? "topology.node.gpu" : "node.gpu",
                       "no profile for GPU '" + s.topology.gpu + "': " + path +
                           " does not exist; write one (stacksim calibrate) or pass --profile FILE");
    }
    s.profile_file = path;
    s.profile = LoadProfileFile(path);
  }

  // The framework's performance recipe for the model on the scenario's GPU
  // (frameworks/*.json model_recipes) sets what the plan does not state, as
  // validate does for a published run.
  if (const auto* recipe = framework ? framework->RecipeFor(s.model.name, s.profile.name) : nullptr) {
    FrameworkProfile::ApplyRecipe(*recipe, s.model.is_moe(), s.plan,
                                  [&](const char* key) { return plan_node.json().contains(key); });
  }

  // A cluster larger than the topology file describes: more of the same units.
  if (std::string grown = GrowFabricTo(s.topology, s.nodes()); !grown.empty()) {
    s.topology.notes += (s.topology.notes.empty() ? "" : " ") + grown + ".";
  }
  ValidatePlan(s, file);
  return s;
}

}  // namespace

const char* NodeOrderName(NodeOrder o) { return o == NodeOrder::kScattered ? "scattered" : "packed"; }

std::string DataRoot() {
  const char* env = std::getenv("STACKSIM_DATA_DIR");
  if (env != nullptr && env[0] != '\0') return env;
  std::error_code ec;
#ifdef STACKSIM_SOURCE_DIR
  if (fs::is_directory(fs::path(STACKSIM_SOURCE_DIR) / "models", ec)) return STACKSIM_SOURCE_DIR;
#endif
  // The checkout moved since the build was configured: the build folder sits
  // in it (build/stacksim), so its parent holds the data.
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path root = exe.parent_path().parent_path();
    if (fs::is_directory(root / "models", ec)) return root.string();
  }
#ifdef STACKSIM_SOURCE_DIR
  return STACKSIM_SOURCE_DIR;  // names then fail with this folder in the message
#else
  return ".";
#endif
}

std::string ResolveDataFile(const std::string& kind, const std::string& ref, const std::string& relative_to) {
  if (!IsPathReference(ref)) return DataRoot() + "/" + kind + "/" + ref + ".json";
  fs::path p(ref);
  if (p.is_absolute() || relative_to.empty()) return p.lexically_normal().string();
  return (fs::path(relative_to).parent_path() / p).lexically_normal().string();
}

ScenarioConfig ParseScenario(const nlohmann::json& doc, const std::string& file, const ScenarioOptions& options) {
  nlohmann::json d = doc;
  for (const std::string& o : options.overrides) ApplyOverride(d, o, "--set");
  try {
    return ParseDocument(d, file, options);
  } catch (const InputError& e) {
    // A bad value that came from --set is reported against --set, not the file.
    if (e.file() == file) {
      for (const std::string& o : options.overrides) {
        std::string path = o.substr(0, o.find('='));
        if (UnderPath(e.key_path(), path)) {
          throw InputError("--set", e.key_path(), BareMessage(e) + " (from --set " + o + ")");
        }
      }
    }
    throw;
  }
}

ScenarioConfig LoadScenario(const std::string& path, const ScenarioOptions& options) {
  nlohmann::json doc = ReadJsonFile(path);
  return ParseScenario(doc, path, options);
}

void ValidateDpSync(const ScenarioConfig& s, const std::string& file) {
  const PlanConfig& p = s.plan;
  const DpSync& d = p.dp_sync;
  if (d.method == DpSyncMethod::kEveryStep) return;
  auto fail = [&](const std::string& key, const std::string& message) { throw InputError(file, key, message); };
  const std::string what = std::string("dp_sync ") + DpSyncMethodName(d.method);
  // Modelled for plain data parallelism (replicated optimizer, dense model,
  // one copy of each stage): sharded optimizers and MoE expert groups change
  // what each rank holds and reduces, which is not modelled yet.
  if (p.sharding != Sharding::kNone) fail("plan.sharding", what + " is modelled with sharding none only");
  if (p.ep > 1 || s.model.is_moe()) fail("plan.dp_sync", what + " is modelled for dense models only");
  if (p.schedule == PipelineScheduleKind::kDualPipe) fail("plan.schedule", what + " is not modelled with dualpipe");
  if (p.offload_optimizer != OffloadTarget::kNone) fail("plan.offload_optimizer", what + " is not modelled with offload");
  if (p.dp * p.cp < 2) fail("plan.dp", what + " needs data parallelism (dp x cp > 1)");
  if (d.method == DpSyncMethod::kDiLoCo) {
    if (p.dp % d.workers != 0) {
      fail("plan.dp_sync.workers", "workers (" + Str(d.workers) + ") must divide dp (" + Str(p.dp) + ")");
    }
    if (p.cp > 1) fail("plan.cp", "dp_sync diloco is modelled with cp 1 only");
  }
}

namespace {

// plan.finetune (LoRA / QLoRA) against the model and the rest of the plan:
// what the workload and memory models cover (docs/workload.md "Fine-tuning").
void ValidateFinetune(const ScenarioConfig& s, const std::string& file) {
  const PlanConfig& p = s.plan;
  const ModelConfig& m = s.model;
  const std::string method = FinetuneMethodName(p.finetune.method);
  auto fail = [&](const std::string& key, const std::string& message) { throw InputError(file, key, message); };
  if (m.is_moe() || m.is_mla()) {
    fail("plan.finetune", method + " on " + m.name + " is not modelled: adapters are placed on dense layers with "
                          "standard attention only");
  }
  if (!m.gated_mlp() && p.finetune.Has(LoraTarget::kGate)) {
    fail("plan.finetune.targets", "\"gate\" needs a gated MLP; " + m.name + "'s MLP has up and down only");
  }
  if (p.finetune.rank > m.hidden_size) {
    fail("plan.finetune.rank", "rank " + Str(p.finetune.rank) + " is wider than the model's hidden size " +
                                   Str(m.hidden_size) + ": a low-rank adapter has r below its projection's widths");
  }
  if (p.offload_optimizer != OffloadTarget::kNone) {
    fail("plan.offload_optimizer", "optimizer offload with " + method + " is not modelled (the adapters' state is small)");
  }
  if (p.sharding == Sharding::kZero3 && p.zero3_gather == Zero3Gather::kSyncPerParameter) {
    fail("plan.zero3_gather", "sync-per-parameter gathers with " + method + " are not modelled");
  }
  if (p.precision != Precision::kBf16 && p.precision != Precision::kFp16) {
    fail("plan.precision", method + " is modelled in a 16-bit compute dtype (QLoRA dequantizes its NF4 weights to "
                           "it): precision must be bf16 or fp16, not " + std::string(PrecisionName(p.precision)));
  }
}

}  // namespace

void ValidatePlan(const ScenarioConfig& s, const std::string& file) {
  const PlanConfig& p = s.plan;
  const ModelConfig& m = s.model;
  const TopologyConfig& t = s.topology;
  auto fail = [&](const std::string& key, const std::string& message) { throw InputError(file, key, message); };

  RequireHardwareMatch(s.profile, s.topology, file);  // a PCIe card on NVSwitch; warnings: simulate's notes

  // A precision the GPU has no GEMM rate for (fp8 on an A100) is the plan's
  // mistake, found here for every command rather than when a GEMM is priced.
  RequireGemmPrecision(s.profile, s.profile_file, p.precision, file, "plan.precision");
  if (p.moe_a2a_overlap) {
    if (!m.is_moe() || p.ep < 2) {
      fail("plan.moe_a2a_overlap", "the all-to-all overlap hides expert-parallel all-to-alls: it needs a MoE model and ep > 1");
    }
    if (p.schedule != PipelineScheduleKind::kOneFOneB && p.schedule != PipelineScheduleKind::kInterleaved) {
      fail("plan.moe_a2a_overlap", "the all-to-all overlap pairs 1F1B's forwards and backwards; schedule " +
                                       std::string(ScheduleName(p.schedule)) + " has its own order");
    }
    // Paired steps couple neighbouring stages: with 1F1B's one-step warm-up
    // difference a stage's pair waits for the next stage's pair, which waits
    // for this stage's previous one, halving the pace. Interleaving's
    // two-step difference leaves room (Megatron-Core requires it under pp).
    if (p.pp > 1 && !(p.schedule == PipelineScheduleKind::kInterleaved && p.vp > 1)) {
      fail("plan.moe_a2a_overlap", "under pipeline parallelism the all-to-all overlap needs the interleaved schedule "
                                   "(vp > 1), as Megatron-Core requires");
    }
  }
  if (p.comm_sms >= s.profile.sm_count.value) {
    fail("plan.comm_sms", "communication holds " + Str(p.comm_sms) + " SMs, but " + s.profile.name + " has " +
                              Str(s.profile.sm_count.value) + ": none would be left to compute");
  }
  if (p.overlap_comm_sms && p.comm_sms + *p.overlap_comm_sms >= s.profile.sm_count.value) {
    fail("plan.overlap_comm_sms", "collectives would take " + Str(p.comm_sms + *p.overlap_comm_sms) + " SMs, but " +
                                      s.profile.name + " has " + Str(s.profile.sm_count.value) +
                                      ": none would be left to compute beside them");
  }

  // The product in double first: four degrees of up to 2^24 overflow an int.
  const double degree_product = static_cast<double>(p.tp) * p.pp * p.dp * p.cp;
  if (degree_product != s.gpus) {
    fail("plan.dp", "tp x pp x dp x cp = " + Str(p.tp) + " x " + Str(p.pp) + " x " + Str(p.dp) + " x " + Str(p.cp) +
                        " = " + fmt::format("{:.0f}", degree_product) + " GPUs, but gpus is " + Str(s.gpus));
  }
  if (m.num_attention_heads % p.tp != 0) {
    fail("plan.tp", "tp " + Str(p.tp) + " does not divide the model's " + Str(m.num_attention_heads) +
                        " attention heads (each TP rank holds whole heads)");
  }
  if (m.num_kv_heads % p.tp != 0 && p.tp % m.num_kv_heads != 0) {
    fail("plan.tp", "tp " + Str(p.tp) + " and the model's " + Str(m.num_kv_heads) +
                        " KV heads must divide one another (KV heads are split, or replicated, across TP ranks)");
  }
  if (m.has_linear_attention()) {
    if (m.gdn.key_heads % p.tp != 0 || m.gdn.value_heads % p.tp != 0) {
      fail("plan.tp", "tp " + Str(p.tp) + " must divide the Gated DeltaNet's " + Str(m.gdn.key_heads) + " key and " +
                          Str(m.gdn.value_heads) + " value heads");
    }
    if (p.cp > 1) fail("plan.cp", "context parallelism of linear-attention (Gated DeltaNet) layers is not modelled");
    if (p.finetune.frozen_base()) fail("plan.finetune", "LoRA and QLoRA of linear-attention models are not modelled");
  }
  if (m.is_hybrid()) {
    // Megatron-Core's MambaMixer splits the heads and the B/C groups over TP.
    if (m.mamba.heads > 0 && (m.mamba.heads % p.tp != 0 || m.mamba.groups % p.tp != 0)) {
      fail("plan.tp", "tp " + Str(p.tp) + " must divide the Mamba-2 mixer's " + Str(m.mamba.heads) + " heads and " +
                          Str(m.mamba.groups) + " groups (each TP rank holds whole groups)");
    }
    // Its context parallelism (MambaContextParallel) splits each TP rank's
    // heads over CP, and its groups too, or replicates a group over the CP
    // ranks that share it.
    if (m.mamba.heads > 0 && p.cp > 1) {
      const int64_t heads = m.mamba.heads / p.tp, groups = m.mamba.groups / p.tp;
      if (heads % p.cp != 0 || (groups >= p.cp ? groups % p.cp != 0 : p.cp % groups != 0)) {
        fail("plan.cp", "cp " + Str(p.cp) + " must divide the Mamba-2 mixer's " + Str(heads) +
                            " heads per TP rank, and divide or be a multiple of its " + Str(groups) +
                            " groups per TP rank (Megatron-Core's MambaContextParallel)");
      }
    }
    if (p.finetune.frozen_base()) {
      fail("plan.finetune", "LoRA and QLoRA of hybrid (Mamba-2) models are not modelled");
    }
  }
  const int domain = t.scale_up.kind == ScaleUpKind::kPcie ? t.gpus_per_node : t.scale_up.domain_gpus;
  if (p.tp > domain || domain % p.tp != 0) {
    if (t.scale_up.kind == ScaleUpKind::kPcie) {
      fail("plan.tp", "tp " + Str(p.tp) + " must fit in one node and divide its " + Str(domain) + " GPUs (topology " +
                          t.name + " has no NVLink; TP stays inside the node's PCIe domain)");
    }
    fail("plan.tp", "TP must fit the NVLink domain: tp " + Str(p.tp) + " must be at most and divide the " +
                        Str(domain) + " GPUs of one NVLink domain of topology " + t.name);
  }
  if (p.vp > 1 && p.pp < 2) {
    fail("plan.vp", "vp " + Str(p.vp) + " virtual stages need pipeline parallelism (pp > 1)");
  }
  // The layers the pipeline splits: the transformer layers and any MTP
  // modules' layers after them.
  const int64_t layers = m.PipelineLayerCount();
  const std::string layers_text = Str(layers) + (m.mtp_modules > 0 ? " layers (with its MTP modules)" : " layers");
  if (p.uneven_stages) {
    if (layers < static_cast<int64_t>(p.pp) * p.vp) {
      fail("plan.pp", "pp x vp = " + Str(p.pp) + " x " + Str(p.vp) + " virtual stages need at least that many layers; the model has " +
                          layers_text);
    }
  } else {
    if (layers % p.pp != 0) {
      fail("plan.pp", "pp " + Str(p.pp) + " does not divide the model's " + layers_text +
                          "; Megatron-LM requires equal stages (layers % (pp x vp) == 0) unless "
                          "plan.uneven_stages is true");
    }
    if (layers % (static_cast<int64_t>(p.pp) * p.vp) != 0) {
      fail("plan.vp", "pp x vp = " + Str(p.pp) + " x " + Str(p.vp) + " does not divide the model's " + layers_text +
                          "; Megatron-LM requires equal virtual stages unless "
                          "plan.uneven_stages is true");
    }
  }
  if (p.micro_batch > p.global_batch / p.dp) {  // before the product, which could overflow
    fail("training.global_batch", "global batch " + Str(p.global_batch) + " is less than micro_batch x dp = " +
                                      Str(p.micro_batch) + " x " + Str(p.dp));
  }
  const int64_t per_step = p.micro_batch * p.dp;
  if (p.global_batch % per_step != 0) {
    fail("training.global_batch", "global batch " + Str(p.global_batch) + " is not a multiple of micro_batch x dp = " +
                                      Str(p.micro_batch) + " x " + Str(p.dp) + " = " + Str(per_step));
  }
  // Megatron-LM's interleaved schedule runs whole rounds of pp micro-batches;
  // with micro-batch groups (Megatron-Core's microbatch_group_size_per_vp_stage)
  // a group holds pp to all of the micro-batches and the last one what
  // remains, none or at least pp (schedules.py refuses the rest: a smaller
  // group waits on inputs its own order puts later).
  if (p.schedule == PipelineScheduleKind::kInterleaved && p.microbatch_group > 0) {
    const int64_t m = p.micro_batches(), g = p.microbatch_group;
    if (g < p.pp || g > m) {
      fail("plan.microbatch_group", "a micro-batch group of the interleaved schedule holds pp (" + Str(p.pp) +
                                        ") to all " + Str(m) + " micro-batches, not " + Str(g));
    }
    if (m % g != 0 && m % g < p.pp) {
      fail("plan.microbatch_group", "the last group would hold " + Str(m % g) + " of the " + Str(m) +
                                        " micro-batches; it must hold none or at least pp (" + Str(p.pp) + ")");
    }
  } else if (p.schedule == PipelineScheduleKind::kInterleaved && p.micro_batches() % p.pp != 0) {
    fail("training.global_batch", "the interleaved schedule needs the number of micro-batches (" +
                                      Str(p.micro_batches()) + " = global batch / (micro_batch x dp)) to be a " +
                                      "multiple of pp (" + Str(p.pp) + "), as Megatron-LM requires (or a "
                                      "plan.microbatch_group)");
  }
  if (p.schedule == PipelineScheduleKind::kDualPipe) {
    if (p.pp % 2 != 0) {
      fail("plan.pp", "DualPipe runs two model copies from opposite ends of the pipeline and needs an even pp (pp is " +
                          Str(p.pp) + ")");
    }
    if (p.micro_batches() % 2 != 0 || p.micro_batches() < 2 * p.pp) {
      fail("training.global_batch", "DualPipe needs an even number of micro-batches of at least 2 x pp = " +
                                        Str(2 * p.pp) + " (global batch / (micro_batch x dp) = " +
                                        Str(p.micro_batches()) + ")");
    }
  }
  // Symmetry keeps one simulated rank per pipeline stage, so a step's trace
  // holds one pass of each layer per micro-batch: 35-56 tasks per pass for
  // dense models, ~120 for DeepSeek-V3's DualPipe, ~300 bytes per task with
  // its replay state. Bounding the passes bounds the trace (and the time and
  // memory of a step) whatever the GPU count: 2^18 passes are at most ~15M
  // dense tasks, ~4.5 GB.
  const double layer_passes = static_cast<double>(layers) * static_cast<double>(p.micro_batches());
  if (layer_passes > kMaxLayerPasses) {
    fail("training.global_batch",
         Str(p.micro_batches()) + " micro-batches per pipeline x " + Str(layers) + " layers = " +
             fmt::format("{:.0f}", layer_passes) + " layer passes per step is more than stacksim simulates (at most " +
             Str(kMaxLayerPasses) + "); use larger micro-batches or more data-parallel replicas");
  }
  if (s.gpus > t.gpus_per_node && s.gpus % t.gpus_per_node != 0) {
    fail("gpus", Str(s.gpus) + " GPUs is not a whole number of " + Str(t.gpus_per_node) + "-GPU nodes of topology " +
                     t.name);
  }
  if (t.max_nodes > 0 && s.gpus > static_cast<int64_t>(t.max_nodes) * t.gpus_per_node) {
    fail("gpus", Str(s.gpus) + " GPUs need " + Str(s.nodes()) + " nodes; topology " + t.name + " holds at most " +
                     Str(t.max_nodes) + " nodes (" + Str(static_cast<int64_t>(t.max_nodes) * t.gpus_per_node) +
                     " GPUs)");
  }
  if (m.learned_position_embeddings && s.seq_len > m.max_position_embeddings) {
    fail("training.seq_len", "seq_len " + Str(s.seq_len) + " is longer than the model's learned position table (" +
                                 Str(m.max_position_embeddings) + " positions)");
  }
  if (p.sequence_parallel && s.seq_len % p.tp != 0) {
    fail("training.seq_len", "sequence parallelism splits the sequence over tp ranks: seq_len " + Str(s.seq_len) +
                                 " is not a multiple of tp " + Str(p.tp));
  }
  // Context parallelism (ring attention): Megatron-Core splits each sequence
  // into 2 x cp chunks (two per rank for causal balance) and needs fused
  // (Transformer Engine / flash) attention.
  if (p.cp > 1) {
    if (s.seq_len % (2 * p.cp) != 0) {
      fail("plan.cp", "cp " + Str(p.cp) + " needs a sequence length divisible by 2 x cp = " + Str(2 * p.cp) +
                          "; seq_len is " + Str(s.seq_len));
    }
    if (p.attention == AttentionImpl::kUnfused) {
      fail("plan.attention", "context parallelism needs fused (flash) attention");
    }
  }
  // Hybrid sharding: shard groups of shard_group data-parallel ranks (x cp),
  // dp / shard_group replicas of each.
  if (p.shard_group > 0) {
    if (p.sharding != Sharding::kZero3) fail("plan.shard_group", "shard_group (hybrid sharding) needs sharding zero3");
    if (p.shard_group > p.dp || p.dp % p.shard_group != 0) {
      fail("plan.shard_group", "shard_group " + Str(p.shard_group) + " must divide dp " + Str(p.dp));
    }
  }
  // Mixture of experts. Megatron-Core's rule (MoE parallel folding, expert
  // tensor parallelism 1): the routed experts are sharded over EP ranks
  // carved out of a stage's tp x dp (x cp) ranks, so ep <= tp x dp x cp, ep
  // divides it and ep divides the number of routed experts.
  if (!m.is_moe()) {
    if (p.ep != 1) fail("plan.ep", "ep " + Str(p.ep) + " needs a mixture-of-experts model; " + m.name + " is dense");
    if (p.etp != 1) fail("plan.etp", "etp " + Str(p.etp) + " needs a mixture-of-experts model; " + m.name + " is dense");
    if (p.routing != Routing::kUniform || p.capacity_factor > 0) {
      fail("plan.moe_routing", "MoE routing settings need a mixture-of-experts model; " + m.name + " is dense");
    }
    if (p.dispatcher != MoeDispatcher::kAllToAll) {
      fail("plan.moe_dispatcher", "a MoE token dispatcher needs a mixture-of-experts model; " + m.name + " is dense");
    }
  } else {
    const int64_t folded = static_cast<int64_t>(p.tp) * p.dp * p.cp;
    if (m.num_experts % p.ep != 0) {
      fail("plan.ep", "ep " + Str(p.ep) + " does not divide the model's " + Str(m.num_experts) +
                          " routed experts (each EP rank holds the same number of whole experts)");
    }
    if (p.ep > folded || folded % p.ep != 0) {
      fail("plan.ep", "ep " + Str(p.ep) + " must divide tp x dp x cp = " + Str(folded) +
                          ": expert-parallel ranks are carved out of the data- and tensor-parallel ranks of a "
                          "stage (Megatron-Core MoE parallel folding, expert tensor parallelism 1)");
    }
    // Expert tensor parallelism: 1, or tp (Megatron-Core's default when
    // expert_tensor_parallel_size is unset, model_parallel_config.py), where
    // the expert-TP group is the TP group. Other values are not modelled.
    if (p.etp != 1 && p.etp != p.tp) {
      fail("plan.etp", "etp " + Str(p.etp) + " must be 1 or tp (" + Str(p.tp) + "); other expert tensor parallel "
                       "sizes are not modelled");
    }
    if (p.etp > 1 && p.dispatcher != MoeDispatcher::kAllToAll) {
      fail("plan.etp", "expert tensor parallelism is modelled with the alltoall dispatcher only");
    }
    if (p.etp > 1 && m.moe_intermediate_size % p.etp != 0) {
      fail("plan.etp", "etp " + Str(p.etp) + " does not divide the experts' FFN width " + Str(m.moe_intermediate_size));
    }
    if (p.etp > 1 && (folded % p.ExpertShards() != 0)) {
      fail("plan.etp", "ep x etp = " + Str(p.ExpertShards()) + " must divide tp x dp x cp = " + Str(folded) +
                           " (Megatron-Core's expert ranks fold over a stage's ranks)");
    }
    if (p.tp > 1 && !p.sequence_parallel) {
      fail("plan.sequence_parallel", "a MoE model with tp > 1 needs sequence parallelism (Megatron-Core routes the "
                                     "sequence-parallel shard of each TP rank)");
    }
    // ZeRO-3/FSDP of a MoE model shards the routed experts over the
    // expert-data-parallel ranks; hybrid sharding, over those of one shard
    // group, which must hold whole copies of the layer's experts.
    if (p.sharding == Sharding::kZero3 && p.ShardGroup() < p.dp &&
        (static_cast<int64_t>(p.tp) * p.FsdpShardRanks()) % p.ExpertShards() != 0) {
      fail("plan.shard_group", "ep x etp = " + Str(p.ExpertShards()) + " must divide tp x shard_group x cp = " +
                                   Str(static_cast<int64_t>(p.tp) * p.FsdpShardRanks()) +
                                   ": hybrid sharding shards the routed experts within one shard group");
    }
    if (p.routing == Routing::kHistogram && static_cast<int64_t>(p.routing_histogram.size()) != m.num_experts) {
      fail("plan.moe_routing_histogram", "the histogram has " + Str(static_cast<int64_t>(p.routing_histogram.size())) +
                                             " entries; the model has " + Str(m.num_experts) + " routed experts");
    }
  }
  if (p.finetune.frozen_base()) ValidateFinetune(s, file);
  // Pipeline-inner rank order (Megatron-LM's --use-tp-pp-dp-mapping, which
  // initializes with order "tp-pp-dp": its configuration says not to combine
  // it with EP or CP). Every group must stay
  // ranks at one regular stride, each NVLink domain holding the same number
  // of its members: the network models price a group by that count, and the
  // flow-level model expands members as first + i x stride. With cp > 1 the
  // gradient group (dp x cp) would have two strides (cp inside tp x cp, dp
  // beyond the pipeline), and so would MoE groups folded over tp x dp.
  if (p.rank_order == RankOrder::kTpCpPpDp) {
    const std::string why = " with rank_order tp-cp-pp-dp: its data-parallel groups would not be evenly strided (as "
                            "Megatron-LM's --use-tp-pp-dp-mapping, which is not to be combined with CP or EP)";
    if (p.cp > 1) fail("plan.rank_order", "context parallelism (cp " + Str(p.cp) + ")" + why);
    if (p.ep > 1) fail("plan.rank_order", "expert parallelism (ep " + Str(p.ep) + ")" + why);
    if (m.is_moe() && p.tp > 1) {
      fail("plan.rank_order", "a mixture-of-experts model with tp " + Str(p.tp) +
                                  " (its expert-data-parallel group folds tp x dp)" + why);
    }
    const int64_t block = static_cast<int64_t>(p.tp) * p.cp * p.pp;  // the data-parallel stride
    const int64_t domain_gpus =
        t.scale_up.kind == ScaleUpKind::kPcie ? t.gpus_per_node : std::max(t.scale_up.domain_gpus, t.gpus_per_node);
    if (domain_gpus % block != 0 && block % domain_gpus != 0) {
      fail("plan.rank_order", "rank_order tp-cp-pp-dp puts data-parallel ranks tp x cp x pp = " + Str(block) +
                                  " apart, which neither divides nor is a multiple of the " + Str(domain_gpus) +
                                  "-GPU NVLink domain: the domains would hold unequal shares of a data-parallel group");
    }
  }
  ValidateOffload(s, file);
  ValidateDpSync(s, file);
}

void ValidateOffload(const ScenarioConfig& s, const std::string& file) {
  const PlanConfig& p = s.plan;
  const TopologyConfig& t = s.topology;
  auto fail = [&](const std::string& key, const std::string& message) { throw InputError(file, key, message); };
  auto topology_named = [&] {
    return "topology " + t.name + (s.topology_file.empty() ? std::string() : " (" + s.topology_file + ")");
  };
  if (p.offload_optimizer == OffloadTarget::kNone) {
    if (p.offload_params != OffloadTarget::kNone) {
      fail("plan.offload_params", "parameter offload (ZeRO-Infinity) needs offload_optimizer \"host\" or \"nvme\" as "
                                  "well: the host optimizer step writes the offloaded 16-bit parameters; parameter "
                                  "offload alone is not modelled");
    }
    return;
  }
  // DeepSpeed's ZeRO-Offload runs with ZeRO stage 1, 2 or 3; Megatron-Core's
  // optimizer CPU offload needs its distributed optimizer (zero1 here). Both
  // offload one data-parallel shard of the optimizer per GPU.
  if (p.sharding == Sharding::kNone) {
    fail("plan.offload_optimizer", "optimizer offload needs a sharded optimizer: plan.sharding zero1, zero2 or zero3 "
                                   "(DeepSpeed ZeRO-Offload runs with ZeRO stages 1-3; Megatron-Core's optimizer CPU "
                                   "offload needs the distributed optimizer, zero1)");
  }
  if (!t.host) {
    fail("plan.offload_optimizer", std::string("offload to ") + OffloadName(p.offload_optimizer) + " needs node.host " +
                                       "{memory, memory_bandwidth} in " + topology_named() +
                                       ": the optimizer step runs on the host CPU and its state lives in host memory");
  }
  if (p.offload_optimizer == OffloadTarget::kNvme && !t.nvme) {
    fail("plan.offload_optimizer", "offload_optimizer \"nvme\" needs node.nvme {capacity, bandwidth_read, "
                                   "bandwidth_write} in " + topology_named());
  }
  if (p.offload_params != OffloadTarget::kNone) {
    if (p.sharding != Sharding::kZero3) {
      fail("plan.offload_params", "parameter offload (ZeRO-Infinity) needs plan.sharding zero3: only ZeRO-3 gathers "
                                  "each layer's parameters when it runs");
    }
    if (p.offload_optimizer_fraction < 1) {
      fail("plan.offload_optimizer_fraction", "a partial optimizer offload is Megatron-Core's "
                                              "(optimizer_offload_fraction); with parameter offload (DeepSpeed "
                                              "ZeRO-Infinity) the whole optimizer is offloaded");
    }
    if (p.offload_params == OffloadTarget::kNvme && !t.nvme) {
      fail("plan.offload_params", "offload_params \"nvme\" needs node.nvme {capacity, bandwidth_read, "
                                  "bandwidth_write} in " + topology_named());
    }
  }
}

nlohmann::json ResolvedConfigJson(const ScenarioConfig& s) {
  nlohmann::json j;
  j["name"] = s.name;
  if (!s.question.empty()) j["question"] = s.question;
  if (!s.notes.empty()) j["notes"] = s.notes;
  if (!s.source.empty()) j["source"] = s.source;
  j["model"] = ModelToJson(s.model);
  j["topology"] = TopologyToJson(s.topology);
  j["profile"] = ProfileToJson(s.profile);
  j["gpus"] = s.gpus;
  j["node_order"] = NodeOrderName(s.node_order);
  if (!s.framework.empty()) j["framework"] = s.framework;
  j["training"] = {{"seq_len", s.seq_len}, {"global_batch", s.plan.global_batch}};
  if (s.token_budget > 0) j["training"]["tokens"] = s.token_budget;
  if (s.data_loader) {
    const DataLoaderConfig& d = *s.data_loader;
    nlohmann::json dl = {{"preprocess_per_sample", TimeText(d.preprocess_per_sample)},
                         {"workers", d.workers},
                         {"host_cores_per_gpu", d.host_cores_per_gpu},
                         {"prefetch_factor", d.prefetch_factor}};
    if (d.sample_bytes.value > 0) {
      dl["sample_bytes"] = BytesText(d.sample_bytes);
      dl["storage_read_bandwidth"] = BandwidthText(d.storage_read_bandwidth);
    }
    j["training"]["data_loader"] = dl;
  }
  j["plan"] = PlanToJson(s.plan);
  j["files"] = {{"scenario", s.file},
                {"model", s.model_file},
                {"topology", s.topology_file},
                {"profile", s.profile_file}};
  j["overrides"] = s.overrides;
  const int64_t per_step = s.plan.micro_batch * s.plan.dp;
  j["derived"] = {{"parameters", s.model.ParameterCount()},
                  {"nodes", s.topology.gpus_per_node > 0 ? s.nodes() : 0},
                  {"micro_batches_per_pipeline", per_step > 0 ? s.plan.micro_batches() : 0},
                  {"tokens_per_step", s.tokens_per_step()}};
  return j;
}

nlohmann::json ScenarioFileJson(const ScenarioConfig& s) {
  nlohmann::json j = ResolvedConfigJson(s);
  for (const char* key : {"files", "overrides", "derived", "version"}) j.erase(key);
  return j;
}

}  // namespace stacksim::config
