#include "sim/validate/run_scenario.h"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <vector>

#include "sim/config/framework.h"
#include "sim/config/model.h"
#include "sim/util/error.h"
#include "sim/util/json_reader.h"

namespace stacksim::validate {
namespace {

using config::Precision;

const std::vector<config::ModelConfig>& ShippedModels();

// Multi-head latent attention: the schema gives no MLA ranks, so they come
// from the model's published config, shipped in models/ (DeepSeek-V2,
// -V2-Lite, -V3, Kimi-K2): the shipped MLA model whose name or an alias,
// in lower case without punctuation, begins the run's model name (the
// longest such), with the run's hidden size and heads.
void ReadMlaRanks(const std::string& file, const std::string& path, RunScenario& out) {
  config::ModelConfig& model = out.scenario.model;
  const std::string key = config::AlnumNameKey(model.name);
  const config::ModelConfig* named = nullptr;  // the longest name match
  size_t named_length = 0;
  std::string known;
  for (const config::ModelConfig& m : ShippedModels()) {
    if (m.kv_lora_rank <= 0) continue;
    known += (known.empty() ? "" : ", ") + m.name;
    std::vector<std::string> names = m.aliases;
    names.push_back(m.name);
    for (const std::string& n : names) {
      const std::string k = config::AlnumNameKey(n);
      if (!k.empty() && key.rfind(k, 0) == 0 && k.size() > named_length) {
        named = &m;
        named_length = k.size();
      }
    }
  }
  if (named == nullptr) {
    throw InputError(file, path + ".model.name",
                     "multi-head latent attention needs its ranks (q_lora_rank, kv_lora_rank, head dims), which the "
                     "validation schema does not give, and no published config is known for model '" + model.name +
                         "' (known MLA models: " + known + ")");
  }
  const config::ModelConfig& ref = *named;
  if (ref.hidden_size != model.hidden_size || ref.num_attention_heads != model.num_attention_heads) {
    throw InputError(file, path + ".model.hidden",
                     "hidden " + std::to_string(model.hidden_size) + " and heads " +
                         std::to_string(model.num_attention_heads) + " differ from " + ref.name + "'s (" +
                         std::to_string(ref.hidden_size) + ", " + std::to_string(ref.num_attention_heads) +
                         "), whose MLA ranks would be taken");
  }
  model.q_lora_rank = ref.q_lora_rank;
  model.kv_lora_rank = ref.kv_lora_rank;
  model.qk_nope_head_dim = ref.qk_nope_head_dim;
  model.qk_rope_head_dim = ref.qk_rope_head_dim;
  model.v_head_dim = ref.v_head_dim;
  model.head_dim = ref.qk_nope_head_dim + ref.qk_rope_head_dim;
  model.num_kv_heads = model.num_attention_heads;
  model.mtp_modules = ref.mtp_modules;
  if (ref.mtp_modules > 0) {
    out.choices.push_back(std::to_string(ref.mtp_modules) + " MTP module(s) from " + ref.name +
                          "'s config.json (num_nextn_predict_layers), trained with the model");
  }
  out.choices.push_back("MLA ranks from " + ref.name + "'s published config.json (models/): q_lora_rank " + std::to_string(ref.q_lora_rank) + ", kv_lora_rank " +
                        std::to_string(ref.kv_lora_rank) + ", qk_nope/rope " + std::to_string(ref.qk_nope_head_dim) +
                        "/" + std::to_string(ref.qk_rope_head_dim) + ", v_head_dim " + std::to_string(ref.v_head_dim));
}

// The shipped model files (models/*.json, each a published config), by their
// name in lower case without punctuation; read once.
const std::vector<config::ModelConfig>& ShippedModels() {
  static const std::vector<config::ModelConfig> models = [] {
    std::vector<std::string> files;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(config::DataRoot()) / "models", ec)) {
      if (e.path().extension() == ".json") files.push_back(e.path().string());
    }
    std::sort(files.begin(), files.end());
    std::vector<config::ModelConfig> out;
    for (const auto& f : files) out.push_back(config::LoadModelFile(f));
    return out;
  }();
  return models;
}

// Architecture facts the schema cannot state, taken from the shipped
// published config of the same model (same name, hidden size, heads and
// layers) when there is one: the head width (GPT-OSS: 64 with hidden 2880
// over 64 heads), sliding windows (GPT-OSS: 128 tokens on every other
// layer), chunked attention (Llama 4: 8192 tokens on 36 of 48 layers) and,
// for the same experts, MoE on every n-th layer only (Llama 4 Maverick).
void ReadPublishedArchitecture(RunScenario& out, bool head_dim_given) {
  config::ModelConfig& model = out.scenario.model;
  const std::string key = config::AlnumNameKey(model.name);
  for (const config::ModelConfig& ref : ShippedModels()) {
    if (config::AlnumNameKey(ref.name) != key || ref.hidden_size != model.hidden_size ||
        ref.num_attention_heads != model.num_attention_heads || ref.num_layers != model.num_layers) {
      continue;
    }
    const std::string from = " from " + ref.name + "'s published config (models/)";
    if (ref.head_dim != model.head_dim && !head_dim_given) {
      model.head_dim = ref.head_dim;
      out.choices.push_back("head_dim=" + std::to_string(ref.head_dim) + from);
    }
    // A local attention span (sliding window or chunk) on some of the layers.
    auto local = [&](const char* what, int64_t span, int64_t layers, int64_t& model_span, int64_t& model_layers) {
      if (span <= 0) return;
      model_span = span;
      model_layers = layers;
      out.choices.push_back(std::string(what) + "=" + std::to_string(span) + " on " + std::to_string(layers) + " of " +
                            std::to_string(ref.num_layers) + " layers" + from);
    };
    local("sliding_window", ref.sliding_window, ref.sliding_window_layers, model.sliding_window,
          model.sliding_window_layers);
    local("attention_chunk", ref.attention_chunk, ref.chunked_attention_layers, model.attention_chunk,
          model.chunked_attention_layers);
    if (model.is_moe() && ref.num_experts == model.num_experts && ref.moe_layer_step != model.moe_layer_step) {
      model.moe_layer_step = ref.moe_layer_step;
      out.choices.push_back("MoE every " + std::to_string(ref.moe_layer_step) + " layers" + from);
    }
    return;
  }
}

// A hybrid (Mamba-2) model: the schema cannot state its blocks, so the
// architecture is the published config's; each shape the run gives must
// agree with it.
void ReadHybridModel(JsonObject& m, const config::ModelConfig& published, const std::string& attention,
                     RunScenario& out) {
  config::ScenarioConfig& s = out.scenario;
  const std::string name = s.model.name;
  auto agree = [&](JsonObject& obj, const char* key, int64_t value) {
    if (auto v = obj.Optional(key); v && v->PositiveInt() != value) {
      v->Fail("differs from " + published.name + "'s published config (" + std::to_string(value) +
              "), whose hybrid layers this run takes");
    }
  };
  if (attention != "mha-gqa") m.Required("attention").Fail("the hybrid model's attention blocks are mha-gqa");
  agree(m, "layers", published.num_layers);
  agree(m, "hidden", published.hidden_size);
  agree(m, "heads", published.num_attention_heads);
  agree(m, "kv_heads", published.num_kv_heads);
  agree(m, "head_dim", published.head_dim);
  agree(m, "ffn_hidden", published.intermediate_size);
  agree(m, "vocab", published.vocab_size);
  s.seq_len = m.Required("seq_len").PositiveInt();
  if (auto act = m.Optional("activation");
      act && act->OneOf({"gelu", "swiglu", "relu", "squared-relu", "geglu"}) !=
                 (published.activation == config::Activation::kSquaredRelu ? "squared-relu"
                                                                           : config::ActivationName(published.activation))) {
    act->Fail("differs from " + published.name + "'s published config (" + config::ActivationName(published.activation) + ")");
  }
  if (auto moe_node = m.Optional("moe")) {
    JsonObject moe(*moe_node);
    agree(moe, "experts", published.num_experts);
    agree(moe, "top_k", published.experts_per_token);
    agree(moe, "expert_ffn_hidden", published.moe_intermediate_size);
    // A count; the published config gives the shared experts' width (one
    // expert of 3712 in Nemotron 3 Nano, twice a routed expert's).
    if (auto sh = moe.Optional("shared_experts"); sh && (sh->Int() > 0) != (published.shared_expert_intermediate_size > 0)) {
      sh->Fail("differs from " + published.name + "'s published config (shared experts " +
               std::to_string(published.shared_expert_intermediate_size) + " wide in all)");
    }
    moe.Ignore({"dense_layers"});
    moe.Finish();
  } else if (published.is_moe()) {
    m.Required("moe").Fail(published.name + " is a mixture-of-experts model");
  }
  m.Finish();
  s.model = published;
  s.model.name = name;
  const std::string& p = published.hybrid_pattern;
  auto count = [&](char c) { return std::to_string(std::count(p.begin(), p.end(), c)); };
  out.choices.push_back("hybrid layers from " + published.name + "'s published config (models/): " + count('M') +
                        " Mamba-2, " + count('E') + " MoE, " + count('-') + " MLP and " + count('*') +
                        " attention blocks");
}

// The run's "model": shapes as given, architecture details by model family.
void ReadModel(JsonObject& obj, const config::FrameworkProfile& fw, const std::string& file, const std::string& path,
               RunScenario& out) {
  config::ScenarioConfig& s = out.scenario;
  JsonObject m(obj.Required("model"));
  config::ModelConfig& model = s.model;
  model.name = m.Required("name").String();
  // A shape the source does not give (null) is the published config's of the
  // same model, where one is shipped (models/), and the choices say so;
  // otherwise it is an error at the field. The attention kind and the
  // activation likewise.
  const config::ModelConfig* published = PublishedModelNamed(model.name);
  // REQUIRES: published.
  auto from_published = [&](const std::string& what) {
    out.choices.push_back(what + " from " + published->name +
                          "'s published config (models/; the run does not give it)");
  };
  std::string attention;
  if (auto a = m.Optional("attention"); a || published == nullptr) {
    attention = m.Required("attention").OneOf({"mha-gqa", "mla"});
  } else {
    attention = published->is_mla() ? "mla" : "mha-gqa";
    from_published("attention=" + attention);
  }
  // "moe": null is a dense model, unless the published config of the model
  // routes experts and the run gives none of the expert shapes itself.
  std::optional<JsonNode> moe_node = m.Optional("moe");
  const bool moe_from_published = !moe_node && published != nullptr && published->is_moe() && !published->is_hybrid();
  if (published != nullptr && published->is_hybrid()) {
    ReadHybridModel(m, *published, attention, out);
    return;
  }
  auto shape = [&](const char* key, int64_t config::ModelConfig::*field) {
    if (auto v = m.Optional(key); v || published == nullptr) return m.Required(key).PositiveInt();
    from_published(std::string(key) + "=" + std::to_string(published->*field));
    return published->*field;
  };
  model.num_layers = shape("layers", &config::ModelConfig::num_layers);
  model.hidden_size = shape("hidden", &config::ModelConfig::hidden_size);
  model.num_attention_heads = shape("heads", &config::ModelConfig::num_attention_heads);
  // No KV heads given: multi-head attention, unless the published config of
  // the model groups them (MLA sets its own below).
  auto kv = m.Optional("kv_heads");
  model.num_kv_heads = kv ? kv->PositiveInt() : model.num_attention_heads;
  if (!kv && published != nullptr && attention == "mha-gqa" && published->num_kv_heads != model.num_kv_heads &&
      published->num_attention_heads == model.num_attention_heads) {
    model.num_kv_heads = published->num_kv_heads;
    from_published("kv_heads=" + std::to_string(model.num_kv_heads));
  }
  model.head_dim = model.hidden_size / model.num_attention_heads;
  // Beyond the schema, for a source that gives the head width.
  std::optional<int64_t> head_dim;
  if (auto hd = m.Optional("head_dim")) head_dim = hd->PositiveInt();
  if (head_dim) model.head_dim = *head_dim;
  model.intermediate_size = shape("ffn_hidden", &config::ModelConfig::intermediate_size);
  if (m.Optional("activation") || published == nullptr) {
    std::string act = m.Required("activation").OneOf({"gelu", "swiglu", "relu", "squared-relu", "geglu"});
    model.activation = act == "gelu"           ? config::Activation::kGelu
                       : act == "swiglu"       ? config::Activation::kSwiglu
                       : act == "relu"         ? config::Activation::kRelu
                       : act == "squared-relu" ? config::Activation::kSquaredRelu
                                               : config::Activation::kGeglu;
  } else {
    model.activation = published->activation;
    from_published(std::string("activation=") + config::ActivationName(model.activation));
  }
  if (auto vocab = m.Optional("vocab")) {
    model.vocab_size = vocab->PositiveInt();
  } else if (published != nullptr && model.activation != config::Activation::kGelu) {
    model.vocab_size = shape("vocab", &config::ModelConfig::vocab_size);
  } else if (model.activation == config::Activation::kGelu) {
    // GPT models without a stated vocabulary use GPT-2's BPE (50,257 tokens),
    // which Megatron-LM pads to a multiple of 128 x tp: 51,200 up to tp 8.
    model.vocab_size = 51200;
    out.choices.push_back("vocab=51200 (GPT-2 BPE, padded as Megatron-LM does)");
  } else {
    throw InputError(file, path + ".model.vocab", "the vocabulary size is needed for this model family");
  }
  s.seq_len = m.Required("seq_len").PositiveInt();
  if (moe_from_published) {
    model.num_experts = published->num_experts;
    model.experts_per_token = published->experts_per_token;
    model.moe_intermediate_size = published->moe_intermediate_size;
    model.shared_expert_intermediate_size = published->shared_expert_intermediate_size;
    model.first_k_dense = published->first_k_dense;
    out.choices.push_back("experts from " + published->name + "'s published config (models/; the run gives moe null): " +
                          std::to_string(model.num_experts) + " routed, top-" + std::to_string(model.experts_per_token));
  }
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
  if (attention == "mla") {
    ReadMlaRanks(file, path, out);
  } else {
    ReadPublishedArchitecture(out, head_dim.has_value());
  }
  // Architecture details the schema leaves out follow the model family:
  // gated-MLP (Llama-style) models use RoPE, RMSNorm, no biases and untied
  // embeddings; a non-gated model is the family its framework trains
  // (frameworks/*.json non_gated_family): GPT as Megatron-LM (learned
  // positions, biases, dropout 0.1, tied embeddings) or MPT as llm-foundry
  // (ALiBi, no biases, no dropout, tied embeddings).
  if (model.gated_mlp()) {
    model.norm = config::NormKind::kRmsNorm;
    model.norm_bias = false;
    model.position_embedding = config::PositionEmbedding::kRope;
    model.tie_word_embeddings = false;
  } else if (model.activation == config::Activation::kSquaredRelu) {
    // The squared-ReLU family is Nemotron-4 (Parmar et al. 2024,
    // arXiv:2402.16819 §2.1): RoPE, no bias terms, no dropout, untied input
    // and output embeddings, LayerNorm.
    model.norm = config::NormKind::kLayerNorm;
    model.norm_bias = false;
    model.position_embedding = config::PositionEmbedding::kRope;
    model.tie_word_embeddings = false;
    out.choices.push_back("squared-ReLU model: Nemotron-4's architecture (RoPE, no biases, untied embeddings)");
  } else if (fw.non_gated_family == config::ModelFamily::kMpt) {
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
}

// The run's "hardware": the shipped profile and system of that GPU, with the
// run's NIC bandwidth and node size.
void ReadHardware(JsonObject& obj, const std::string& file, const std::string& path, RunScenario& out) {
  config::ScenarioConfig& s = out.scenario;
  JsonObject hw(obj.Required("hardware"));
  std::string gpu = hw.Required("gpu").String();
  std::string topo = config::SystemTopologyFor(gpu);
  if (topo.empty()) throw InputError(file, path + ".hardware.gpu", "no shipped system topology for GPU '" + gpu + "'");
  s.topology_file = config::ResolveDataFile("topologies", topo, file);
  s.topology = config::LoadTopologyFile(s.topology_file);
  s.profile_file = config::ResolveDataFile("profiles", gpu, file);
  s.profile = config::LoadProfileFile(s.profile_file);
  s.gpus = static_cast<int>(hw.Required("gpus").PositiveInt());
  if (auto gpn = hw.Optional("gpus_per_node")) {
    const int n = static_cast<int>(gpn->PositiveInt());
    if (s.topology.scale_up.domain_gpus > s.topology.gpus_per_node) {
      // Rack-scale NVLink (GB200 NVL72): the run's node is the NVLink domain;
      // the trays (and their NICs) stay as the topology builds them.
      if (n % s.topology.gpus_per_node != 0) {
        gpn->Fail(std::to_string(n) + " GPUs per NVLink domain is not a whole number of " + topo + "'s " +
                  std::to_string(s.topology.gpus_per_node) + "-GPU trays");
      }
      s.topology.scale_up.domain_gpus = n;
    } else {
      s.topology.gpus_per_node = n;
    }
  }
  if (auto nic = hw.Optional("nic_gbps_per_gpu")) {
    s.topology.nics.per_node = s.topology.gpus_per_node;
    s.topology.nics.bandwidth = Bandwidth{nic->PositiveNumber() * 1e9 / 8};
  }
  hw.Ignore({"notes"});
  hw.Finish();
  if (std::string grown = config::GrowFabricTo(s.topology, s.nodes()); !grown.empty()) out.choices.push_back(grown);
}

// The run's "plan": given fields as given, the framework's defaults for the
// ones it leaves out, and the null ones it leaves open for search.
void ReadPlan(JsonObject& obj, const config::FrameworkMatch& match, const std::string& file, const std::string& path,
              RunScenario& out) {
  const config::FrameworkProfile& fw = *match.profile;
  config::ScenarioConfig& s = out.scenario;
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
  if (!p.Optional("tp") || !p.Optional("pp") || !p.Optional("dp")) {
    throw InputError(file, path + ".plan", "tp, pp and dp must be set here (ChooseLayout fills the ones a run leaves open)");
  }
  int cp = 1, ep = 1;
  given_int("cp", &cp);
  given_int("ep", &ep);
  plan.cp = cp;
  plan.ep = ep;
  plan.global_batch = p.Required("global_batch").PositiveInt();

  if (auto prec = p.Optional("precision")) {
    std::string v = prec->OneOf({"fp16", "bf16", "fp8", "mxfp8"});
    // FP8 as Megatron-Core runs it: Transformer Engine FP8 for the linear
    // layers. MXFP8 (a scale per 32 values, Blackwell's block-scaled tensor
    // cores) runs its GEMMs at the FP8 rate (NVIDIA Blackwell datasheets give
    // one FP8/FP6 dense figure for both).
    if (v == "mxfp8") {
      v = "fp8";
      out.choices.push_back("precision mxfp8 read as fp8 (block-scaled FP8 GEMMs at the FP8 rate)");
    }
    plan.precision = v == "fp16" ? Precision::kFp16 : v == "fp8" ? Precision::kFp8 : Precision::kBf16;
  } else if (fw.unstated_precision) {
    plan.precision = *fw.unstated_precision;
    out.choices.push_back(std::string("precision=") + config::PrecisionName(plan.precision) +
                          " (the framework's launch scripts)");
  } else {
    plan.precision = Precision::kBf16;
    out.choices.push_back("precision=bf16");
  }
  // What the framework does that the run does not say: its attention kernel
  // class, kernel fusion, gradient-reduction overlap and dtype
  // (frameworks/*.json).
  out.predates_selective_recompute = fw.selective_recompute == config::SelectiveRecomputeKind::kUnavailable;
  out.recompute_escalation = fw.recompute_escalation;
  // Every fact is a plan default (FrameworkProfile::PlanDefaults, as for a
  // scenario naming the framework); what the run states, read below, wins.
  {
    const config::MoeDispatcher dispatcher = plan.dispatcher;
    plan = fw.PlanDefaults(plan);
    plan.tp_comm_overlap = fw.TpOverlapFor(s.model.is_moe());
    if (!s.model.is_moe()) plan.dispatcher = dispatcher;
  }
  out.choices.push_back("framework=" + match.Describe(out.framework_text));
  out.choices.push_back(std::string("kernels=") + (fw.kernels == config::KernelFusion::kEager ? "eager" : "fused"));
  if (plan.cp > 1 && plan.attention == config::AttentionImpl::kUnfused) {
    // Context parallelism exists only on flash-style kernels (ring attention
    // passes each block's running softmax statistics): a run with cp > 1 of a
    // framework whose default is unfused ran FlashAttention-2's kernels.
    plan.attention = config::AttentionImpl::kFlash2;
    out.choices.push_back("attention=flash2 (context parallelism runs on flash kernels; the framework's default is "
                          "unfused)");
  } else {
    out.choices.push_back(std::string("attention=") + config::AttentionName(plan.attention));
  }
  if (plan.GradReducePrecision() != config::Precision::kFp32) {
    out.choices.push_back(std::string("gradients in ") + config::PrecisionName(plan.GradReducePrecision()));
  }
  if (!plan.overlap_grad_reduce) out.choices.push_back("gradient reduction after the backward pass (no overlap)");
  if (plan.comm_sms > 0) {
    out.choices.push_back("comm_sms=" + std::to_string(plan.comm_sms) + " (SMs the framework's communication holds)");
  }
  // The framework's performance recipe for this model, where it sets what
  // the run does not state (frameworks/*.json model_recipes).
  // The schema has none of its keys: every one the recipe names is set (the
  // all-to-all overlap again once the schedule is known, below).
  const config::FrameworkProfile::ModelRecipe* recipe = fw.RecipeFor(s.model.name, s.profile.name);
  if (recipe) config::FrameworkProfile::ApplyRecipe(*recipe, s.model.is_moe(), plan, [](const char*) { return false; });
  if (s.model.is_moe() && plan.dispatcher != config::MoeDispatcher::kAllToAll) {
    out.choices.push_back(std::string("moe_dispatcher=") + config::MoeDispatcherName(plan.dispatcher) +
                          (recipe && recipe->moe_dispatcher ? " (the framework's recipe for " + s.model.name + ")" : ""));
  }
  if (plan.optimizer_state != config::OptimizerState{} && plan.precision != Precision::kFp32) {
    out.choices.push_back(std::string("optimizer state: exp_avg ") +
                          config::StateDtypeName(plan.optimizer_state.exp_avg) + ", exp_avg_sq " +
                          config::StateDtypeName(plan.optimizer_state.exp_avg_sq) + ", master " +
                          config::MasterWeightsName(plan.optimizer_state.master) +
                          (recipe && recipe->optimizer_state ? " (the framework's recipe for " + s.model.name + ")" : ""));
  }
  out.recipe_a2a_overlap = s.model.is_moe() && plan.ep > 1 && recipe && recipe->moe_a2a_overlap.value_or(false);
  if (plan.tp > 1 && plan.tp_comm_overlap != config::TpCommOverlap::kNone) {
    out.choices.push_back(std::string("tp_comm_overlap=") + config::TpCommOverlapName(plan.tp_comm_overlap) +
                          (recipe && recipe->tp_comm_overlap ? " (the framework's recipe for " + s.model.name + ")" : ""));
  }

  // MoE expert tensor parallelism: the schema has no field for it, so it is
  // the framework's recipe for the model, else its default
  // (frameworks/*.json model_recipes, expert_tensor_parallel).
  const bool etp_follows_tp = recipe && recipe->expert_tp_follows_tp ? *recipe->expert_tp_follows_tp
                                                                      : fw.expert_tp_follows_tp;
  if (s.model.is_moe() && etp_follows_tp && plan.tp > 1) {
    // The run ran, so its ep fitted its expert TP: where the default (etp =
    // tp) leaves ep x etp not dividing the tensor-, data- and context-parallel
    // ranks the experts fold over, the run must have set expert TP 1.
    const int64_t folded = plan.tp * plan.dp * plan.cp;
    if (folded % (plan.ep * plan.tp) == 0) {
      plan.etp = plan.tp;
      out.choices.push_back("etp=" + std::to_string(plan.etp) + " (expert tensor parallelism = tp, the framework's default)");
    } else {
      out.choices.push_back("etp=1 (the framework's default etp = tp " + std::to_string(plan.tp) + " would make ep x etp " +
                            std::to_string(plan.ep * plan.tp) + ", which does not divide tp x dp x cp = " +
                            std::to_string(folded) + ": the run's ep needs expert tensor parallelism 1)");
    }
  }
  if (auto sp = p.Optional("sequence_parallel")) {
    plan.sequence_parallel = sp->Bool() && plan.tp > 1;
  } else if (s.model.is_moe() && plan.tp > 1 && !fw.sequence_parallel) {
    // The simulator routes a MoE layer under tensor parallelism as
    // Megatron-Core does, from each TP rank's sequence shard (ValidatePlan
    // requires it); a framework whose default is off is modelled that way.
    plan.sequence_parallel = true;
    out.choices.push_back("sequence_parallel=on (a MoE layer under tp > 1 is routed from each TP rank's sequence shard, "
                          "as Megatron-Core does; the framework's default is off)");
  } else {
    plan.sequence_parallel = fw.sequence_parallel && plan.tp > 1;
    out.choices.push_back(std::string("sequence_parallel=") + (plan.sequence_parallel ? "on" : "off"));
  }
  if (auto sh = p.Optional("sharding")) {
    std::string v = sh->OneOf({"none", "zero1", "zero2", "zero3"});
    plan.sharding = v == "none"    ? config::Sharding::kNone
                    : v == "zero1" ? config::Sharding::kZero1
                    : v == "zero2" ? config::Sharding::kZero2
                                   : config::Sharding::kZero3;
  } else {
    plan.sharding = plan.dp > 1 ? fw.sharding : config::Sharding::kNone;
    out.choices.push_back(std::string("sharding=") + config::ShardingName(plan.sharding));
  }
  if (plan.sharding == config::Sharding::kZero3 && plan.zero3_gather == config::Zero3Gather::kSyncPerParameter) {
    out.choices.push_back("ZeRO-3 gathers per parameter, synchronous (no overlap with compute)");
  }
  if (plan.sharding == config::Sharding::kZero3 && plan.zero3_gather == config::Zero3Gather::kPipelined) {
    out.choices.push_back("FSDP gathers pipelined (the backward's next gather ahead of the reduce-scatter)");
  }
  if ((plan.sharding == config::Sharding::kZero1 || plan.sharding == config::Sharding::kZero2) && plan.dp > 1 &&
      !plan.overlap_param_gather) {
    out.choices.push_back("parameter all-gather after the optimizer step (no overlap)");
  }
  if ((plan.sharding == config::Sharding::kZero1 || plan.sharding == config::Sharding::kZero2) && plan.dp > 1 &&
      plan.zero_grad_all_reduce) {
    out.choices.push_back("gradients all-reduced in full before the sharded optimizer step");
  }
  if (plan.grad_accumulation != config::GradAccumulation::kFused) {
    out.choices.push_back(std::string("gradient accumulation in a pass of its own (grad_accumulation ") +
                          config::GradAccumulationName(plan.grad_accumulation) + ")");
  }
  if (auto sg = p.Optional("shard_group")) {
    // Hybrid sharding (HSDP): FSDP within groups of shard_group data-parallel
    // ranks (x cp), gradient all-reduce across the dp / shard_group replicas.
    const int64_t g = sg->PositiveInt();
    if (g > plan.dp || plan.dp % g != 0) sg->Fail("shard_group " + std::to_string(g) + " must divide dp " + std::to_string(plan.dp));
    if (g < plan.dp) {
      if (plan.sharding != config::Sharding::kZero3) sg->Fail("shard_group (hybrid sharding) needs sharding zero3");
      plan.shard_group = static_cast<int>(g);
    }
  }
  if (auto mb = p.Optional("micro_batch")) {
    plan.micro_batch = mb->PositiveInt();
  } else if (fw.whole_local_batch) {
    // No gradient accumulation: each data-parallel rank runs its whole local
    // batch, in pp micro-batches under pipeline parallelism.
    const int64_t local = plan.global_batch / plan.dp;
    const int64_t splits = plan.pp > 1 ? plan.pp : 1;
    if (local < 1 || local % splits != 0) {
      throw InputError(file, path + ".plan.global_batch",
                       "framework " + fw.name + " runs the whole local batch (global_batch / dp = " +
                           std::to_string(local) + ") in " + std::to_string(splits) +
                           " micro-batches, which does not divide it");
    }
    plan.micro_batch = local / splits;
    out.choices.push_back("micro_batch=" + std::to_string(plan.micro_batch) + " (the whole local batch" +
                          (splits > 1 ? " in pp micro-batches" : "") + ", no gradient accumulation)");
  } else if (fw.fixed_micro_batch > 0) {
    plan.micro_batch = fw.fixed_micro_batch;
    out.choices.push_back("micro_batch=" + std::to_string(plan.micro_batch) + " (the framework's launch script)");
  } else {
    out.open_fields.push_back("micro_batch");
  }
  if (auto vp = p.Optional("vp")) {
    plan.vp = static_cast<int>(vp->PositiveInt());
  } else if (fw.default_vp == 1 || (fw.default_vp > 1 && plan.pp == 1)) {
    plan.vp = 1;
    if (plan.pp > 1) {
      out.choices.push_back(fw.dualpipe ? "schedule=dualpipe (the framework's pipeline schedule)"
                                        : "vp=1 (the framework's default 1F1B schedule)");
    }
  } else if (fw.default_vp > 1) {
    plan.vp = fw.default_vp;
    out.choices.push_back("vp=" + std::to_string(plan.vp) + " (the framework's default interleaved 1F1B stages per rank)");
  } else {
    out.open_fields.push_back("vp");
  }
  if (auto rc = p.Optional("recompute")) {
    std::string v = rc->OneOf({"none", "selective", "full"});
    plan.recompute = v == "none" ? config::Recompute::kNone
                     : v == "selective" ? config::Recompute::kSelective
                                        : config::Recompute::kFull;
  } else if (fw.unstated_recompute) {
    plan.recompute = *fw.unstated_recompute;
    out.choices.push_back(std::string("recompute=") + config::RecomputeName(plan.recompute) +
                          " (the framework's launch scripts)");
  } else {
    out.open_fields.push_back("recompute");
  }
  p.Finish();
}

}  // namespace

const config::ModelConfig* PublishedModelNamed(const std::string& name) {
  const std::string key = config::AlnumNameKey(name);
  for (const config::ModelConfig& ref : ShippedModels()) {
    if (config::AlnumNameKey(ref.name) == key) return &ref;
    for (const std::string& alias : ref.aliases) {
      if (config::AlnumNameKey(alias) == key) return &ref;
    }
  }
  return nullptr;
}

config::FrameworkMatch FrameworkForText(const std::string& text, bool fully_sharded, const std::string& file,
                                        const std::string& key) {
  const auto& frameworks = config::ShippedFrameworks();
  if (auto m = config::TryFindFramework(frameworks, text, file, key)) return *m;
  config::FrameworkMatch m;
  m.assumed = true;
  m.profile = &config::FrameworkNamed(fully_sharded ? "pytorch-fsdp" : "megatron-core", file, key);
  m.entry = fully_sharded ? "a fully sharded (zero3) run is taken as PyTorch FSDP"
                          : "a run of this plan is taken as Megatron-Core's";
  return m;
}

RunScenario ScenarioForRun(const nlohmann::json& run, const std::string& file, const std::string& path) {
  JsonNode node(run, file, path);
  JsonObject obj(node);
  RunScenario out;
  config::ScenarioConfig& s = out.scenario;
  s.file = file;
  s.name = obj.Required("id").String();
  const std::string framework = obj.Required("framework").String();
  obj.Ignore({"source", "tier", "scored", "measured", "derived_fields", "unverified_fields", "caveats", "notes"});
  // Only the sharding decides an unknown framework's stand-in, so every
  // layout ChooseLayout tries for the run gets the same profile.
  const nlohmann::json* plan_json = run.contains("plan") && run["plan"].is_object() ? &run["plan"] : nullptr;
  const bool zero3 = plan_json != nullptr && plan_json->contains("sharding") && (*plan_json)["sharding"] == "zero3";
  const config::FrameworkMatch match = FrameworkForText(framework, zero3, file, path + ".framework");
  out.framework_text = framework;
  out.framework = match.profile;
  ReadModel(obj, *match.profile, file, path, out);
  ReadHardware(obj, file, path, out);
  ReadPlan(obj, match, file, path, out);
  obj.Finish();
  config::PlanConfig& plan = s.plan;
  plan.schedule = match.profile->dualpipe && plan.pp > 1 ? config::PipelineScheduleKind::kDualPipe
                  : plan.vp > 1                            ? config::PipelineScheduleKind::kInterleaved
                                                           : config::PipelineScheduleKind::kOneFOneB;
  // Layers that pp x vp does not divide (Llama-3.1 405B: 126 over 64 virtual
  // stages) run as Megatron-Core's account_for_embedding/loss_in_pipeline_split
  // does: the first and last stages, which also hold embedding and head, take
  // one layer fewer.
  if (s.model.PipelineLayerCount() % (static_cast<int64_t>(plan.pp) * plan.vp) != 0) {
    plan.uneven_stages = true;
    out.choices.push_back("uneven_stages (end stages one layer fewer)");
  }
  plan.moe_a2a_overlap = out.recipe_a2a_overlap && config::MoeA2aOverlapRuns(plan);
  if (out.recipe_a2a_overlap) {
    out.choices.push_back(std::string("moe_a2a_overlap (the framework's recipe for ") + s.model.name + ")" +
                          (plan.moe_a2a_overlap ? "" : ": not with this schedule (it needs vp > 1 under pp)"));
  }
  return out;
}


}  // namespace stacksim::validate
