#include "sim/config/model.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <vector>

#include "sim/config/quantity_text.h"
#include "sim/config/scenario.h"

namespace stacksim::config {
namespace {

// Above this a config is a typo (an extra digit), not a model; it also keeps
// every int64 product in the parameter count far from overflow.
constexpr double kMaxParameters = 1e15;

Activation ParseActivation(const JsonNode& node) {
  std::string s = node.OneOf({"gelu", "gelu_new", "gelu_pytorch_tanh", "relu", "squared_relu", "relu2", "silu",
                              "swiglu", "geglu"});
  if (s == "relu") return Activation::kRelu;
  if (s == "squared_relu" || s == "relu2") return Activation::kSquaredRelu;  // relu2: NemotronH's name
  // Hugging Face's "silu" in a Llama-style config means the gated SwiGLU MLP.
  if (s == "silu" || s == "swiglu") return Activation::kSwiglu;
  if (s == "geglu") return Activation::kGeglu;
  return Activation::kGelu;
}

PositionEmbedding ParsePositionEmbedding(const JsonNode& node) {
  std::string s = node.OneOf({"rope", "rotary", "learned", "absolute", "alibi", "none"});
  if (s == "learned" || s == "absolute") return PositionEmbedding::kLearned;
  if (s == "alibi") return PositionEmbedding::kAlibi;
  if (s == "none") return PositionEmbedding::kNone;
  return PositionEmbedding::kRope;
}

// MoE keys as Hugging Face configs spell them: Mixtral and GPT-OSS
// (num_local_experts; experts as wide as intermediate_size), Qwen2/3-MoE
// (num_experts, moe_intermediate_size, decoder_sparse_step, mlp_only_layers,
// shared_expert_intermediate_size), DeepSeek (n_routed_experts,
// n_shared_experts x moe_intermediate_size, first_k_dense_replace, moe_layer_freq).
int64_t NonNegativeInt(const JsonNode& n) {
  int64_t v = n.Int();
  if (v < 0) n.Fail("must be 0 or more");
  return v;
}

// Sliding-window attention as Hugging Face configs spell it: sliding_window
// (tokens; null or absent: none) with layer_types (GPT-OSS, Gemma-3 and later
// transformers: "sliding_attention" / "full_attention" per layer), or
// use_sliding_window with max_window_layers (Qwen2: layers from that index
// on slide), or neither (Mistral: every layer); stacksim's own files give
// sliding_window_layers.
void ParseSlidingWindow(JsonObject& obj, ModelConfig& m) {
  std::optional<JsonNode> window = obj.Optional("sliding_window");
  std::optional<JsonNode> types = obj.Optional("layer_types");
  std::optional<JsonNode> count = obj.Optional("sliding_window_layers");
  std::optional<JsonNode> use = obj.Optional("use_sliding_window");
  std::optional<JsonNode> max_window = obj.Optional("max_window_layers");
  int64_t sliding = -1;  // unknown yet
  if (types) {
    if (!types->IsArray() || static_cast<int64_t>(types->Elements().size()) != m.num_layers) {
      types->Fail("expected one entry per layer (" + std::to_string(m.num_layers) + ")");
    }
    sliding = 0;
    for (const JsonNode& t : types->Elements()) {
      // linear_attention: Qwen3-Next's Gated DeltaNet layers (ParseLinearAttention).
      if (t.OneOf({"sliding_attention", "full_attention", "linear_attention"}) == "sliding_attention") ++sliding;
    }
  }
  if (count) {
    const int64_t n = NonNegativeInt(*count);
    if (n > m.num_layers) count->Fail("more sliding-window layers than the model's " + std::to_string(m.num_layers));
    if (sliding >= 0 && n != sliding) count->Fail("contradicts layer_types (" + std::to_string(sliding) + " sliding)");
    sliding = n;
  }
  if (use && !use->Bool()) sliding = 0;  // Qwen2/3: the window is configured but off
  if (!window || window->IsNull()) {
    if (sliding > 0) (types ? *types : *count).Fail("sliding-window layers need sliding_window (tokens)");
    return;
  }
  const int64_t w = window->PositiveInt();
  if (sliding < 0 && use && max_window) {
    const int64_t first = NonNegativeInt(*max_window);
    sliding = std::max<int64_t>(0, m.num_layers - first);
  }
  if (sliding < 0) sliding = m.num_layers;  // Mistral: every layer
  m.sliding_window = sliding > 0 ? w : 0;
  m.sliding_window_layers = sliding;
}

// Llama 4's chunked attention: attention_chunk_size (null or absent: none)
// on the layers that use RoPE, given by no_rope_layers (1: RoPE) or every
// layer but each no_rope_layer_interval-th (Hugging Face's default 4);
// stacksim's own files give chunked_attention_layers.
void ParseChunkedAttention(JsonObject& obj, ModelConfig& m) {
  std::optional<JsonNode> chunk = obj.Optional("attention_chunk_size");
  std::optional<JsonNode> rope_layers = obj.Optional("no_rope_layers");
  std::optional<JsonNode> interval = obj.Optional("no_rope_layer_interval");
  std::optional<JsonNode> count = obj.Optional("chunked_attention_layers");
  if (!chunk || chunk->IsNull()) {
    for (auto* n : {&rope_layers, &interval, &count}) {
      if (*n && !(*n)->IsNull()) (*n)->Fail("chunked attention keys need attention_chunk_size (tokens)");
    }
    return;
  }
  m.attention_chunk = chunk->PositiveInt();
  int64_t chunked = -1;
  if (rope_layers && !rope_layers->IsNull()) {
    if (!rope_layers->IsArray() || static_cast<int64_t>(rope_layers->Elements().size()) != m.num_layers) {
      rope_layers->Fail("expected one entry per layer (" + std::to_string(m.num_layers) + "), 1 for a RoPE layer");
    }
    chunked = 0;
    for (const JsonNode& e : rope_layers->Elements()) {
      const int64_t v = e.Int();
      if (v != 0 && v != 1) e.Fail("expected 0 (no RoPE, global attention) or 1 (RoPE, chunked attention)");
      chunked += v;
    }
  }
  if (count) {
    const int64_t n = NonNegativeInt(*count);
    if (n > m.num_layers) count->Fail("more chunked-attention layers than the model's " + std::to_string(m.num_layers));
    if (chunked >= 0 && n != chunked) count->Fail("contradicts no_rope_layers (" + std::to_string(chunked) + " chunked)");
    chunked = n;
  }
  if (chunked < 0) {
    const int64_t every = interval ? interval->PositiveInt() : 4;
    chunked = m.num_layers - m.num_layers / every;
  }
  m.chunked_attention_layers = chunked;
  if (chunked == 0) m.attention_chunk = 0;
}

void ParseMoe(JsonObject& obj, ModelConfig& m) {
  std::optional<JsonNode> experts;
  for (const char* key : {"num_local_experts", "n_routed_experts", "num_experts"}) {
    if (auto e = obj.Optional(key)) {
      if (experts) e->Fail(std::string("give the number of routed experts once (") + key + " repeats it)");
      experts = e;
    }
  }
  auto top_k = obj.Optional("num_experts_per_tok");
  auto moe_width = obj.Optional("moe_intermediate_size");
  auto shared_n = obj.Optional("n_shared_experts");
  auto shared_width = obj.Optional("shared_expert_intermediate_size");
  // NemotronH: moe_shared_expert_intermediate_size is the shared experts'
  // whole width, given beside their count n_shared_experts.
  auto shared_total = obj.Optional("moe_shared_expert_intermediate_size");
  auto first_dense = obj.Optional("first_k_dense_replace");
  std::optional<JsonNode> step = obj.Optional("decoder_sparse_step");
  for (const char* key : {"moe_layer_freq", "interleave_moe_layer_step"}) {
    if (auto f = obj.Optional(key)) {
      if (step) f->Fail(std::string("give one of decoder_sparse_step, moe_layer_freq and interleave_moe_layer_step (") +
                        key + " repeats it)");
      step = f;
    }
  }
  // Llama 4: intermediate_size is an expert's width, intermediate_size_mlp
  // the dense layers'; every MoE layer has one shared expert as wide as an
  // expert (Llama4TextMoe's shared_expert, which no key states).
  auto dense_width = obj.Optional("intermediate_size_mlp");
  const bool llama4 = m.family == "llama4_text" || m.family == "llama4";
  auto dense_layers = obj.Optional("mlp_only_layers");
  if (auto b = obj.Optional("router_bias")) m.router_bias = b->Bool();
  // Group-limited routing (DeepSeek's n_group / topk_group); null means none.
  auto groups = obj.Optional("n_group");
  auto groups_per_token = obj.Optional("topk_group");
  auto latent = obj.Optional("moe_latent_size");
  if (!experts) {
    for (auto* n : {&top_k, &moe_width, &shared_n, &shared_width, &shared_total, &first_dense, &groups, &groups_per_token,
                    &dense_width, &latent}) {
      if (*n) {
        (*n)->Fail("a mixture-of-experts key without a number of experts (num_local_experts, num_experts or "
                   "n_routed_experts)");
      }
    }
    return;
  }
  if (experts->json().is_number() && experts->json().get<double>() == 0) return;
  m.num_experts = experts->PositiveInt();
  if (!top_k) experts->Fail("a mixture-of-experts model needs num_experts_per_tok (experts each token uses)");
  m.experts_per_token = top_k->PositiveInt();
  if (m.experts_per_token > m.num_experts) {
    top_k->Fail("num_experts_per_tok (" + std::to_string(m.experts_per_token) + ") exceeds the " +
                std::to_string(m.num_experts) + " routed experts");
  }
  m.moe_intermediate_size = moe_width ? moe_width->PositiveInt() : m.intermediate_size;
  if (dense_width) m.intermediate_size = dense_width->PositiveInt();
  if (llama4 && !shared_n && !shared_width) m.shared_expert_intermediate_size = m.moe_intermediate_size;
  if (shared_width && !shared_width->json().is_null()) {
    m.shared_expert_intermediate_size = NonNegativeInt(*shared_width);
  }
  if (shared_total) {
    if (shared_width) {
      shared_total->Fail("give moe_shared_expert_intermediate_size or shared_expert_intermediate_size, not both");
    }
    m.shared_expert_intermediate_size = NonNegativeInt(*shared_total);
    if (shared_n && (NonNegativeInt(*shared_n) > 0) != (m.shared_expert_intermediate_size > 0)) {
      shared_n->Fail("contradicts moe_shared_expert_intermediate_size");
    }
  } else if (shared_n && !shared_n->json().is_null()) {
    if (shared_width) shared_n->Fail("give n_shared_experts or shared_expert_intermediate_size, not both");
    m.shared_expert_intermediate_size = NonNegativeInt(*shared_n) * m.moe_intermediate_size;
  }
  if (first_dense && !first_dense->json().is_null()) {
    m.first_k_dense = NonNegativeInt(*first_dense);
    if (m.first_k_dense > m.num_layers) first_dense->Fail("more dense layers than layers");
  }
  if (step && !step->json().is_null()) m.moe_layer_step = step->PositiveInt();
  if (dense_layers && !dense_layers->json().is_null()) {
    if (!dense_layers->json().is_array() || !dense_layers->json().empty()) {
      dense_layers->Fail("only an empty mlp_only_layers is supported (use first_k_dense_replace)");
    }
  }
  if (m.MoeLayerCount() == 0) experts->Fail("no layer is a mixture-of-experts layer with these settings");
  if (latent) m.moe_latent_size = latent->PositiveInt();
  m.shared_gate = m.family == "qwen2_moe" || m.family == "qwen3_next";
  if (auto g = obj.Optional("shared_expert_gate")) m.shared_gate = g->Bool();
  if (groups || groups_per_token) {
    if (!groups) groups_per_token->Fail("topk_group needs n_group (the number of expert groups)");
    if (!groups_per_token) groups->Fail("n_group needs topk_group (the groups each token may use)");
    m.expert_groups = groups->PositiveInt();
    if (m.num_experts % m.expert_groups != 0) {
      groups->Fail("n_group (" + std::to_string(m.expert_groups) + ") must divide the " +
                   std::to_string(m.num_experts) + " routed experts into equal groups");
    }
    m.expert_groups_per_token = groups_per_token->PositiveInt();
    if (m.expert_groups_per_token > m.expert_groups) {
      groups_per_token->Fail("topk_group (" + std::to_string(m.expert_groups_per_token) + ") exceeds n_group (" +
                             std::to_string(m.expert_groups) + ")");
    }
    if (m.expert_groups_per_token * (m.num_experts / m.expert_groups) < m.experts_per_token) {
      groups_per_token->Fail("topk_group groups hold fewer experts than num_experts_per_tok (" +
                             std::to_string(m.experts_per_token) + ")");
    }
  }
}

// Multi-head latent attention keys as DeepSeek-V2/V3 configs spell them. A
// model is MLA when kv_lora_rank is given (not null).
void ParseMla(JsonObject& obj, ModelConfig& m) {
  if (!obj.Has("kv_lora_rank")) {
    for (const char* key : {"kv_lora_rank", "q_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"}) {
      if (auto n = obj.Optional(key)) n->Fail("a multi-head latent attention key without kv_lora_rank");
    }
    return;
  }
  m.kv_lora_rank = obj.Required("kv_lora_rank").PositiveInt();
  // q_lora_rank must be present: null says the queries are not compressed.
  JsonNode q = obj.Required("q_lora_rank");
  m.q_lora_rank = q.IsNull() ? 0 : q.PositiveInt();
  m.qk_nope_head_dim = obj.Required("qk_nope_head_dim").PositiveInt();
  m.qk_rope_head_dim = obj.Required("qk_rope_head_dim").PositiveInt();
  m.v_head_dim = obj.Required("v_head_dim").PositiveInt();
}

// Qwen3-Next's linear attention as its Hugging Face config writes it:
// layer_types with "linear_attention", or full_attention_interval (every
// n-th layer full attention, the rest linear; Qwen3NextConfig's default 4),
// and the Gated DeltaNet's linear_* widths; attn_output_gate for the
// full-attention layers.
void ParseLinearAttention(JsonObject& obj, ModelConfig& m, const JsonNode& types_raw) {
  const char* keys[] = {"linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim",
                        "linear_value_head_dim", "linear_conv_kernel_dim", "full_attention_interval"};
  std::optional<JsonNode> key_heads = obj.Optional("linear_num_key_heads");
  if (auto g = obj.Optional("attn_output_gate")) m.attn_output_gate = g->Bool();
  if (!key_heads) {
    for (const char* key : keys) {
      if (auto n = obj.Optional(key)) n->Fail("a linear-attention key without linear_num_key_heads");
    }
    if (types_raw.IsArray()) {
      for (const JsonNode& t : types_raw.Elements()) {
        if (t.String() == "linear_attention") {
          t.Fail("linear-attention layers need linear_num_key_heads and the other linear_* widths");
        }
      }
    }
    return;
  }
  m.gdn.key_heads = key_heads->PositiveInt();
  m.gdn.value_heads = obj.Required("linear_num_value_heads").PositiveInt();
  m.gdn.key_dim = obj.Required("linear_key_head_dim").PositiveInt();
  m.gdn.value_dim = obj.Required("linear_value_head_dim").PositiveInt();
  if (m.gdn.value_heads % m.gdn.key_heads != 0) {
    obj.Required("linear_num_value_heads").Fail("must be a multiple of linear_num_key_heads (" +
                                                std::to_string(m.gdn.key_heads) + ")");
  }
  if (auto k = obj.Optional("linear_conv_kernel_dim")) m.gdn.conv_kernel = k->PositiveInt();
  m.linear_layers.assign(static_cast<size_t>(m.num_layers), false);
  std::optional<JsonNode> interval = obj.Optional("full_attention_interval");
  if (types_raw.IsArray()) {
    for (size_t l = 0; l < types_raw.Elements().size() && l < m.linear_layers.size(); ++l) {
      m.linear_layers[l] = types_raw.Elements()[l].String() == "linear_attention";
    }
    if (interval) {
      const int64_t every = interval->PositiveInt();
      for (int64_t l = 0; l < m.num_layers; ++l) {
        if (m.linear_layers[static_cast<size_t>(l)] != ((l + 1) % every != 0)) interval->Fail("contradicts layer_types");
      }
    }
  } else {
    const int64_t every = interval ? interval->PositiveInt() : 4;
    for (int64_t l = 0; l < m.num_layers; ++l) m.linear_layers[static_cast<size_t>(l)] = (l + 1) % every != 0;
  }
  if (m.is_mla() || m.sliding_window > 0 || m.attention_chunk > 0 || m.mtp_modules > 0) {
    key_heads->Fail("linear attention with multi-head latent, sliding-window or chunked attention, or MTP modules "
                    "is not modelled");
  }
}

// Hybrid Mamba-2 models as Megatron-Core and Hugging Face's NemotronH write
// them: hybrid_override_pattern (a character per layer) and the mixer's
// mamba_num_heads, mamba_head_dim, ssm_state_size, n_groups, conv_kernel,
// chunk_size. Run after ParseMoe: the pattern decides which layers are MoE.
void ParseHybrid(JsonObject& obj, ModelConfig& m) {
  std::optional<JsonNode> pattern = obj.Optional("hybrid_override_pattern");
  // The same blocks as a list (newer NemotronH configs: "mamba", "attention",
  // "mlp", "moe"), one pattern character each.
  std::optional<JsonNode> block_list = obj.Optional("layers_block_type");
  const char* mamba_keys[] = {"mamba_num_heads", "mamba_head_dim", "ssm_state_size", "n_groups", "conv_kernel",
                              "chunk_size"};
  if (!pattern && !block_list) {
    for (const char* key : mamba_keys) {
      if (auto n = obj.Optional(key)) n->Fail("a Mamba-2 key without hybrid_override_pattern (which layers are Mamba)");
    }
    return;
  }
  if (block_list) {
    if (!block_list->IsArray()) block_list->Fail("expected a list of block types");
    std::string listed;
    for (const JsonNode& b : block_list->Elements()) {
      const std::string t = b.OneOf({"mamba", "attention", "mlp", "moe"});
      listed += t == "mamba" ? 'M' : t == "attention" ? '*' : t == "mlp" ? '-' : 'E';
    }
    if (pattern && pattern->String() != listed) block_list->Fail("differs from hybrid_override_pattern");
    if (!pattern) pattern = block_list;
    m.hybrid_pattern = listed;
  } else {
    m.hybrid_pattern = pattern->String();
  }
  if (static_cast<int64_t>(m.hybrid_pattern.size()) != m.num_layers) {
    pattern->Fail("has " + std::to_string(m.hybrid_pattern.size()) + " layers; num_hidden_layers says " +
                  std::to_string(m.num_layers));
  }
  bool mamba = false, moe = false;
  for (char c : m.hybrid_pattern) {
    if (c != 'M' && c != '*' && c != '-' && c != 'E') {
      pattern->Fail(std::string("unknown layer '") + c + "' (M: Mamba-2, *: attention, -: MLP, E: mixture of experts)");
    }
    mamba |= c == 'M';
    moe |= c == 'E';
  }
  if (moe != m.is_moe()) {
    pattern->Fail(moe ? "has mixture-of-experts layers (E) but the model gives no routed experts"
                      : "has no mixture-of-experts layer (E) though the model gives routed experts");
  }
  if (m.first_k_dense != 0 || m.moe_layer_step != 1) {
    pattern->Fail("decides which layers are MoE: leave out first_k_dense_replace and decoder_sparse_step");
  }
  if (m.is_mla() || m.sliding_window > 0 || m.attention_chunk > 0) {
    pattern->Fail("hybrid models with multi-head latent attention, sliding-window or chunked attention are not "
                  "modelled");
  }
  // Each MTP module's layer: attention then an MLP (Nemotron 3 Super: "*E").
  std::optional<JsonNode> mtp = obj.Optional("mtp_hybrid_override_pattern");
  std::optional<JsonNode> mtp_list = obj.Optional("mtp_layers_block_type");
  if (m.mtp_modules > 0 || mtp || mtp_list) {
    if (!mtp && !mtp_list) {
      pattern->Fail("MTP modules of a hybrid model need mtp_hybrid_override_pattern (\"*E\" or \"*-\")");
    }
    const JsonNode& given = mtp ? *mtp : *mtp_list;
    if (m.mtp_modules == 0) given.Fail("needs num_nextn_predict_layers (the MTP modules)");
    std::string p;
    if (mtp) {
      p = mtp->OneOf({"*E", "*-"});
    } else {
      for (const JsonNode& b : mtp_list->Elements()) {
        const std::string t = b.OneOf({"attention", "mlp", "moe"});
        p += t == "attention" ? '*' : t == "moe" ? 'E' : '-';
      }
      if (p != "*E" && p != "*-") mtp_list->Fail("expected [\"attention\", \"moe\"] or [\"attention\", \"mlp\"]");
    }
    if (mtp && mtp_list) {
      mtp_list->Fail("give mtp_hybrid_override_pattern or mtp_layers_block_type, not both");
    }
    if ((p == "*E") != m.is_moe()) {
      given.Fail(p == "*E" ? "an MoE layer without routed experts" : "the model's MTP layer is MoE (\"*E\")");
    }
    m.mtp_kind = p == "*E" ? LayerKind::kMoe : LayerKind::kDense;
  }
  if (!mamba) {
    for (const char* key : mamba_keys) {
      if (auto n = obj.Optional(key)) n->Fail("the pattern has no Mamba-2 layer (M)");
    }
    return;
  }
  m.mamba.heads = obj.Required("mamba_num_heads").PositiveInt();
  m.mamba.head_dim = obj.Required("mamba_head_dim").PositiveInt();
  m.mamba.state = obj.Required("ssm_state_size").PositiveInt();
  JsonNode groups = obj.Required("n_groups");
  m.mamba.groups = groups.PositiveInt();
  if (m.mamba.heads % m.mamba.groups != 0) {
    groups.Fail("n_groups (" + std::to_string(m.mamba.groups) + ") must divide mamba_num_heads (" +
                std::to_string(m.mamba.heads) + ")");
  }
  if (auto k = obj.Optional("conv_kernel")) m.mamba.conv_kernel = k->PositiveInt();
  if (auto c = obj.Optional("chunk_size")) m.mamba.chunk = c->PositiveInt();
}

std::string FileStem(const std::string& file) {
  std::string stem = std::filesystem::path(file).stem().string();
  return stem.empty() ? "model" : stem;
}

}  // namespace

const char* ActivationName(Activation a) {
  switch (a) {
    case Activation::kGelu: return "gelu";
    case Activation::kRelu: return "relu";
    case Activation::kSquaredRelu: return "squared_relu";
    case Activation::kSwiglu: return "swiglu";
    case Activation::kGeglu: return "geglu";
  }
  return "?";
}

const char* NormName(NormKind n) { return n == NormKind::kRmsNorm ? "rmsnorm" : "layernorm"; }

const char* PositionEmbeddingName(PositionEmbedding p) {
  switch (p) {
    case PositionEmbedding::kRope: return "rope";
    case PositionEmbedding::kLearned: return "learned";
    case PositionEmbedding::kAlibi: return "alibi";
    case PositionEmbedding::kNone: return "none";
  }
  return "?";
}

int64_t ModelConfig::NormParameterCount() const {
  return (norm == NormKind::kLayerNorm && norm_bias) ? 2 * hidden_size : hidden_size;
}

int64_t ModelConfig::MlaReplicatedParameterCount() const {
  if (!is_mla()) return 0;
  // One norm over a latent of width r: its weight (and bias for a biased LayerNorm).
  const int64_t per_element = NormParameterCount() / hidden_size;
  const int64_t h = hidden_size;
  int64_t n = h * (kv_lora_rank + qk_rope_head_dim) + per_element * kv_lora_rank;  // W_DKV + W_KR, kv norm
  if (q_lora_rank > 0) n += h * q_lora_rank + per_element * q_lora_rank;          // W_DQ, q norm
  return n;
}

int64_t ModelConfig::AttentionParameterCount() const {
  const int64_t h = hidden_size;
  if (is_mla()) {
    // MLA (DeepSeek-V2 §2.1): the replicated down-projections and latent
    // norms, then W_UQ (q_lora_rank x heads*(nope+rope)) or, without query
    // compression, W_Q (hidden x heads*(nope+rope)); W_UK/W_UV (kv_lora_rank x
    // heads*(nope+v)); W_O (heads*v x hidden).
    const int64_t heads = num_attention_heads;
    const int64_t qk = qk_nope_head_dim + qk_rope_head_dim;
    int64_t n = MlaReplicatedParameterCount();
    n += (q_lora_rank > 0 ? q_lora_rank : h) * heads * qk;
    n += kv_lora_rank * heads * (qk_nope_head_dim + v_head_dim);
    n += heads * v_head_dim * h;
    return n;
  }
  const int64_t q_width = num_attention_heads * head_dim;
  const int64_t kv_width = num_kv_heads * head_dim;
  // Attention: Q (h x heads*d), K and V (h x kv_heads*d each), output (heads*d x h).
  int64_t attention = h * q_width + 2 * h * kv_width + q_width * h;
  if (attn_output_gate) attention += h * q_width;  // the gate's half of the query projection
  if (attention_bias) attention += q_width + 2 * kv_width + h;
  return attention;
}

int64_t ModelConfig::MlpParameterCount(int64_t width) const {
  // Gated (SwiGLU/GeGLU) has gate and up projections of width ffn, then down.
  const int64_t h = hidden_size;
  int64_t mlp = (gated_mlp() ? 3 : 2) * h * width;
  if (mlp_bias) mlp += (gated_mlp() ? 2 : 1) * width + h;
  return mlp;
}

int64_t ModelConfig::LayerParameterCount() const {
  // Two norms per layer: before attention and before the MLP.
  return AttentionParameterCount() + MlpParameterCount(intermediate_size) + 2 * NormParameterCount();
}

LayerKind ModelConfig::LayerKindAt(int64_t layer) const {
  if (is_hybrid()) {
    if (layer >= num_layers) return mtp_kind;
    switch (hybrid_pattern[static_cast<size_t>(layer)]) {
      case 'M': return LayerKind::kMamba;
      case '*': return LayerKind::kAttention;
      case '-': return LayerKind::kMlp;
      default: return LayerKind::kMoeBlock;
    }
  }
  const bool linear = layer < num_layers && !linear_layers.empty() && linear_layers[static_cast<size_t>(layer)];
  if (linear) return IsMoeLayer(layer) ? LayerKind::kGdnMoe : LayerKind::kGdnDense;
  return IsMoeLayer(layer) ? LayerKind::kMoe : LayerKind::kDense;
}

int64_t ModelConfig::GatedDeltaNetParameterCount() const {
  const GatedDeltaNetConfig& g = gdn;
  // in_proj_qkvz and in_proj_ba, the convolution's taps (no bias), dt_bias
  // and A_log per value head, the gated norm's weight (one value head
  // wide), out_proj.
  return hidden_size * (2 * g.qk_width() + 2 * g.v_width()) + hidden_size * 2 * g.value_heads +
         g.conv_channels() * g.conv_kernel + 2 * g.value_heads + g.value_dim + g.v_width() * hidden_size;
}

std::array<bool, kNumLayerKinds> ModelConfig::LayerKindsPresent() const {
  std::array<bool, kNumLayerKinds> present{};
  for (int64_t l = 0; l < PipelineLayerCount(); ++l) present[static_cast<size_t>(LayerKindAt(l))] = true;
  return present;
}

int64_t ModelConfig::AttentionLayerCount() const {
  if (has_linear_attention()) return static_cast<int64_t>(std::count(linear_layers.begin(), linear_layers.end(), false));
  if (!is_hybrid()) return num_layers;
  return static_cast<int64_t>(std::count(hybrid_pattern.begin(), hybrid_pattern.end(), '*'));
}

int64_t ModelConfig::MambaParameterCount() const {
  const MambaConfig& c = mamba;
  return hidden_size * c.in_proj_width() + c.conv_channels() * (c.conv_kernel + 1) + 3 * c.heads + c.inner() +
         c.inner() * hidden_size;
}

bool ModelConfig::IsMoeLayer(int64_t layer) const {
  if (is_hybrid()) {
    const LayerKind k = LayerKindAt(layer);
    return k == LayerKind::kMoeBlock || k == LayerKind::kMoe;
  }
  if (!is_moe() || layer < first_k_dense) return false;
  return (layer + 1) % moe_layer_step == 0;
}

int64_t ModelConfig::MoeLayerCount() const {
  int64_t n = 0;
  for (int64_t l = 0; l < num_layers; ++l) n += IsMoeLayer(l) ? 1 : 0;
  return n;
}

int64_t ModelConfig::OneExpertParameterCount() const {
  const int64_t in = expert_input_width(), width = moe_intermediate_size;
  int64_t n = (gated_mlp() ? 3 : 2) * in * width;
  if (mlp_bias) n += (gated_mlp() ? 2 : 1) * width + in;
  return n;
}

int64_t ModelConfig::ExpertParameterCount() const { return num_experts * OneExpertParameterCount(); }

int64_t ModelConfig::LayerParameterCount(int64_t layer) const {
  const int64_t norm = NormParameterCount();
  int64_t moe = 0;
  if (IsMoeLayer(layer)) {
    const int64_t router = hidden_size * num_experts + (router_bias ? num_experts : 0);
    const int64_t shared = shared_expert_intermediate_size > 0 ? MlpParameterCount(shared_expert_intermediate_size) : 0;
    const int64_t latent = moe_latent_size > 0 ? 2 * hidden_size * moe_latent_size : 0;  // fc1/fc2_latent_proj
    // Qwen2-MoE and Qwen3-Next scale the shared expert by a learned sigmoid
    // gate (shared_expert_gate, hidden x 1).
    const int64_t gate = shared_gate && shared_expert_intermediate_size > 0 ? hidden_size : 0;
    moe = router + latent + gate + ExpertParameterCount() + shared;
  }
  switch (LayerKindAt(layer)) {
    case LayerKind::kDense: return LayerParameterCount();
    case LayerKind::kMoe: return AttentionParameterCount() + moe + 2 * norm;
    case LayerKind::kGdnDense: return GatedDeltaNetParameterCount() + MlpParameterCount(intermediate_size) + 2 * norm;
    case LayerKind::kGdnMoe: return GatedDeltaNetParameterCount() + moe + 2 * norm;
    case LayerKind::kMamba: return MambaParameterCount() + norm;
    case LayerKind::kAttention: return AttentionParameterCount() + norm;
    case LayerKind::kMlp: return MlpParameterCount(intermediate_size) + norm;
    case LayerKind::kMoeBlock: return moe + norm;
  }
  return 0;
}

int64_t ModelConfig::ActiveLayerParameterCount(int64_t layer) const {
  if (!IsMoeLayer(layer)) return LayerParameterCount(layer);
  return LayerParameterCount(layer) - (num_experts - experts_per_token) * OneExpertParameterCount();
}

int64_t ModelConfig::ActiveParameterCount() const {
  int64_t n = EmbeddingParameterCount() + NormParameterCount() + OutputHeadParameterCount();
  for (int64_t l = 0; l < num_layers; ++l) n += ActiveLayerParameterCount(l);
  return n;
}

double ModelConfig::AttentionWorkFraction(int64_t seq) const {
  if (num_layers <= 0 || seq <= 0) return 1.0;
  // Query-key pairs: causal sum_i (i + 1) = S(S+1)/2; within a window of w,
  // sum_i min(i + 1, w) = w(w+1)/2 + (S - w) w; within chunks of c, each
  // whole chunk c(c+1)/2 and the last r(r+1)/2.
  const double s = static_cast<double>(seq), causal = s * (s + 1) / 2;
  double sliding = 1.0, chunked = 1.0;
  if (sliding_window > 0 && seq > sliding_window) {
    const double w = static_cast<double>(sliding_window);
    sliding = (w * (w + 1) / 2 + (s - w) * w) / causal;
  }
  if (attention_chunk > 0 && seq > attention_chunk) {
    const double c = static_cast<double>(attention_chunk);
    const double whole = static_cast<double>(seq / attention_chunk), r = static_cast<double>(seq % attention_chunk);
    chunked = (whole * c * (c + 1) / 2 + r * (r + 1) / 2) / causal;
  }
  const double n = static_cast<double>(num_layers), k = static_cast<double>(sliding_window > 0 ? sliding_window_layers : 0);
  const double q = static_cast<double>(attention_chunk > 0 ? chunked_attention_layers : 0);
  return ((n - k - q) + k * sliding + q * chunked) / n;
}

int64_t ModelConfig::MtpParameterCount() const {
  // DeepSeek-V3 §2.2 / README_WEIGHTS.md: per module the transformer layer
  // (model.layers.61, shaped as a layer at that index), enorm and hnorm, the
  // projection M (eh_proj, hidden x 2 hidden) and the output norm
  // (shared_head.norm); embedding and output head are the main model's.
  int64_t n = 0;
  for (int64_t k = 0; k < mtp_modules; ++k) {
    n += LayerParameterCount(num_layers + k) + 3 * NormParameterCount() + 2 * hidden_size * hidden_size;
  }
  return n;
}

int64_t ModelConfig::EmbeddingParameterCount() const {
  int64_t params = vocab_size * hidden_size;
  if (learned_position_embeddings) params += max_position_embeddings * hidden_size;
  return params;
}

int64_t ModelConfig::OutputHeadParameterCount() const {
  return tie_word_embeddings ? 0 : vocab_size * hidden_size;
}

int64_t ModelConfig::ParameterCount() const {
  // Layers, embeddings, the final norm, and the LM head when it is not tied.
  int64_t layers = 0;
  for (int64_t l = 0; l < num_layers; ++l) layers += LayerParameterCount(l);
  return layers + EmbeddingParameterCount() + NormParameterCount() + OutputHeadParameterCount();
}

ModelConfig ParseModel(const JsonNode& node) {
  JsonObject obj(node);
  ModelConfig m;
  if (auto n = obj.Optional("name")) {
    m.name = n->String();
  } else {
    m.name = FileStem(node.file());
  }
  if (auto s = obj.Optional("source")) m.source = s->String();
  if (auto s = obj.Optional("notes")) m.notes = s->String();
  // Other published names of the same architecture, for FindShippedModel:
  // {"names": [...], "source": "..."}, the source saying why they are the same.
  if (auto a = obj.Optional("aliases")) {
    JsonObject aliases(*a);
    JsonNode names = aliases.Required("names");
    if (!names.IsArray() || names.Elements().empty()) names.Fail("expected a non-empty array of model names");
    for (const JsonNode& n : names.Elements()) m.aliases.push_back(n.String());
    m.aliases_source = aliases.Required("source").String();
    aliases.Finish();
  }

  if (auto t = obj.Optional("model_type")) m.family = t->String();
  // NemotronH (Hugging Face's nemotron_h): RMSNorm though the config gives
  // layer_norm_epsilon, and attention without RoPE (Megatron-Core's
  // MambaModel, position_embedding_type none), unless the file says otherwise.
  const bool nemotron_h = m.family == "nemotron_h";
  JsonNode hidden = obj.Required("hidden_size");
  m.hidden_size = hidden.PositiveInt();
  // Newer NemotronH configs list the blocks (layers_block_type) and may
  // leave num_hidden_layers out: the list's length.
  std::optional<JsonNode> block_list = obj.Optional("layers_block_type");
  JsonNode layers = !obj.Has("num_hidden_layers") && block_list ? *block_list : obj.Required("num_hidden_layers");
  if (layers.IsArray()) {
    if (layers.Elements().empty()) layers.Fail("expected one block type per layer");
    m.num_layers = static_cast<int64_t>(layers.Elements().size());
  } else {
    m.num_layers = layers.PositiveInt();
  }
  // 100x the deepest transformer trained (DeepNet, 1,000 layers: Wang et al.
  // 2022, arXiv:2203.00555); per-layer loops and traces stay bounded.
  if (m.num_layers > 100'000) {
    layers.Fail(std::to_string(m.num_layers) + " layers is more than stacksim simulates (at most 100000)");
  }
  JsonNode heads = obj.Required("num_attention_heads");
  m.num_attention_heads = heads.PositiveInt();
  m.intermediate_size = obj.Required("intermediate_size").PositiveInt();
  m.vocab_size = obj.Required("vocab_size").PositiveInt();
  // NemotronH names the MLP's activation mlp_hidden_act (its Mamba-2
  // mixer's is mamba_hidden_act); a config may give hidden_act as well.
  if (auto mlp_act = obj.Optional("mlp_hidden_act")) {
    m.activation = ParseActivation(*mlp_act);
    if (auto act = obj.Optional("hidden_act"); act && ParseActivation(*act) != m.activation) {
      act->Fail("differs from mlp_hidden_act");
    }
  } else {
    m.activation = ParseActivation(obj.Required("hidden_act"));
  }

  ParseMla(obj, m);  // before head_dim: an MLA head's query/key width comes from its keys

  if (auto kv = obj.Optional("num_key_value_heads")) {
    m.num_kv_heads = kv->PositiveInt();
    if (m.is_mla() && m.num_kv_heads != m.num_attention_heads) {
      kv->Fail("multi-head latent attention has a key and a value per head: num_key_value_heads must equal "
               "num_attention_heads (" + std::to_string(m.num_attention_heads) + ")");
    }
    if (m.num_kv_heads > m.num_attention_heads || m.num_attention_heads % m.num_kv_heads != 0) {
      kv->Fail("num_key_value_heads (" + std::to_string(m.num_kv_heads) +
               ") must divide num_attention_heads (" + std::to_string(m.num_attention_heads) +
               "): each KV head serves a whole group of query heads");
    }
  } else {
    m.num_kv_heads = m.num_attention_heads;  // Hugging Face's default: plain multi-head attention
  }

  if (auto hd = obj.Optional("head_dim")) {
    m.head_dim = hd->PositiveInt();
    if (m.is_mla() && m.head_dim != m.qk_nope_head_dim + m.qk_rope_head_dim) {
      hd->Fail("with multi-head latent attention head_dim is the query/key width qk_nope_head_dim + "
               "qk_rope_head_dim = " + std::to_string(m.qk_nope_head_dim + m.qk_rope_head_dim) + "; leave it out");
    }
  } else if (m.is_mla()) {
    m.head_dim = m.qk_nope_head_dim + m.qk_rope_head_dim;
  } else {
    if (m.hidden_size % m.num_attention_heads != 0) {
      heads.Fail("num_attention_heads (" + std::to_string(m.num_attention_heads) + ") does not divide hidden_size (" +
                 std::to_string(m.hidden_size) + "); give head_dim explicitly if the model really has it");
    }
    m.head_dim = m.hidden_size / m.num_attention_heads;
  }

  // Norm: explicit norm_type, else inferred from the epsilon key a Hugging Face config carries.
  const bool has_rms_eps = obj.Has("rms_norm_eps");
  const bool has_ln_eps = obj.Has("layer_norm_eps") || obj.Has("layer_norm_epsilon");
  if (auto nt = obj.Optional("norm_type")) {
    m.norm = nt->OneOf({"layernorm", "rmsnorm"}) == "rmsnorm" ? NormKind::kRmsNorm : NormKind::kLayerNorm;
  } else if (nemotron_h) {
    m.norm = NormKind::kRmsNorm;
  } else if (has_rms_eps && has_ln_eps) {
    throw InputError(node.file(), node.path().empty() ? "norm_type" : node.path() + ".norm_type",
                     "both rms_norm_eps and layer_norm_eps are given; say which norm with norm_type");
  } else if (has_rms_eps) {
    m.norm = NormKind::kRmsNorm;
  } else if (has_ln_eps) {
    m.norm = NormKind::kLayerNorm;
  } else {
    throw InputError(node.file(), node.path().empty() ? "norm_type" : node.path() + ".norm_type",
                     "required key is missing ('layernorm' or 'rmsnorm'; or give rms_norm_eps / layer_norm_eps)");
  }
  if (auto nb = obj.Optional("norm_bias")) {
    m.norm_bias = nb->Bool();
    if (m.norm_bias && m.norm == NormKind::kRmsNorm) nb->Fail("RMSNorm has no bias");
  } else {
    m.norm_bias = m.norm == NormKind::kLayerNorm;
  }

  if (auto t = obj.Optional("tie_word_embeddings")) m.tie_word_embeddings = t->Bool();
  if (auto b = obj.Optional("attention_bias")) {
    m.attention_bias = b->Bool();
    if (m.attention_bias && m.is_mla()) b->Fail("attention biases with multi-head latent attention are not modelled");
  }
  if (auto b = obj.Optional("mlp_bias")) m.mlp_bias = b->Bool();
  std::optional<JsonNode> max_pos = obj.Optional("max_position_embeddings");
  if (max_pos) m.max_position_embeddings = max_pos->PositiveInt();
  if (nemotron_h) m.position_embedding = PositionEmbedding::kNone;
  if (auto pe = obj.Optional("position_embedding_type")) {
    m.position_embedding = ParsePositionEmbedding(*pe);
    if (m.position_embedding == PositionEmbedding::kLearned && !max_pos) {
      pe->Fail("learned position embeddings need max_position_embeddings (the table's rows)");
    }
  }
  m.learned_position_embeddings = m.position_embedding == PositionEmbedding::kLearned;

  // Dropout costs a mask and an element-wise pass; any probability above 0 turns it on.
  for (const char* key : {"hidden_dropout", "attention_dropout", "resid_pdrop", "attn_pdrop", "embd_pdrop"}) {
    if (auto d = obj.Optional(key)) {
      double prob = d->NonNegativeNumber();
      if (prob >= 1) d->Fail("a dropout probability must be below 1");
      if (prob > 0) m.dropout = true;
    }
  }

  ParseMoe(obj, m);
  if (auto mtp = obj.Optional("num_nextn_predict_layers")) m.mtp_modules = NonNegativeInt(*mtp);
  ParseSlidingWindow(obj, m);
  ParseChunkedAttention(obj, m);
  ParseHybrid(obj, m);
  {
    const nlohmann::json& doc = node.json();
    const nlohmann::json null_types;
    JsonNode types(doc.contains("layer_types") ? doc.at("layer_types") : null_types, node.file(),
                   node.path().empty() ? "layer_types" : node.path() + ".layer_types");
    ParseLinearAttention(obj, m, types);
    if (m.has_linear_attention() && m.is_hybrid()) {
      obj.Required("hybrid_override_pattern").Fail("with linear attention is not modelled");
    }
  }

  // Keys of Hugging Face configs that do not change the cost of training.
  obj.Ignore({"architectures", "torch_dtype", "rope_theta", "rope_scaling", "bos_token_id",
              "eos_token_id", "pad_token_id", "initializer_range", "use_cache", "transformers_version",
              "rms_norm_eps", "layer_norm_eps", "layer_norm_epsilon", "pretraining_tp", "_name_or_path",
              // MoE: loss terms, router details and inference-only settings.
              "router_aux_loss_coef", "aux_loss_alpha", "output_router_logits", "router_jitter_noise",
              "norm_topk_prob", "routed_scaling_factor", "scoring_func", "topk_method", "seq_aux", "experts_per_token", "swiglu_limit", "initial_context_length",
              // DeepSeek: remote-code class map, the inference EP size, the FP8
              // format of the released weights (training precision is plan.precision).
              "auto_map", "ep_size", "quantization_config",
              // Attention sinks: one learned logit per head, no work to speak of.
              "attention_sinks",
              // Llama 4: QK norm (a small norm per head, not costed) and the
              // attention temperature tuning of its global layers.
              "use_qk_norm", "attn_temperature_tuning", "floor_scale", "attn_scale",
              // NemotronH (Mamba-2): initialisation, the mixer's fixed choices
              // (SiLU, conv bias, no linear bias) and inference settings.
              "expand", "mamba_hidden_act", "use_conv_bias", "use_bias", "mamba_proj_bias", "residual_in_fp32",
              "rescale_prenorm_residual", "time_step_min", "time_step_max", "time_step_floor", "time_step_limit",
              "num_logits_to_keep", "use_mamba_kernels", "mamba_ssm_cache_dtype", "partial_rotary_factor",
              "moe_shared_expert_overlap", "norm_eps", "dtype"});
  obj.Finish();

  double params = static_cast<double>(m.num_layers) *
                      (4.0 * m.hidden_size * m.num_attention_heads * m.head_dim +
                       3.0 * m.hidden_size * m.intermediate_size +
                       3.0 * m.hidden_size * m.moe_intermediate_size * m.num_experts) +
                  2.0 * m.vocab_size * m.hidden_size +
                  static_cast<double>(m.max_position_embeddings) * m.hidden_size;
  // The mixers of hybrid and linear-attention layers, and a latent MoE's
  // experts, in double before any int64 count of them.
  const double h = static_cast<double>(m.hidden_size);
  const double mamba_inner = static_cast<double>(m.mamba.heads) * static_cast<double>(m.mamba.head_dim);
  const double mamba_bc = 2.0 * static_cast<double>(m.mamba.groups) * static_cast<double>(m.mamba.state);
  params += static_cast<double>(m.num_layers) *
            (h * (3.0 * mamba_inner + mamba_bc) + (mamba_inner + mamba_bc) * static_cast<double>(m.mamba.conv_kernel) +
             h * 3.0 * (static_cast<double>(m.gdn.key_heads) * static_cast<double>(m.gdn.key_dim) +
                        static_cast<double>(m.gdn.value_heads) * static_cast<double>(m.gdn.value_dim)) +
             3.0 * static_cast<double>(m.moe_latent_size) * static_cast<double>(m.moe_intermediate_size) *
                 static_cast<double>(m.num_experts));
  if (params > kMaxParameters) {
    hidden.Fail("these shapes give about " + std::to_string(params / 1e12) +
                " trillion parameters; more than 1000 trillion is taken to be a typo");
  }
  return m;
}

nlohmann::json ModelToJson(const ModelConfig& m) {
  nlohmann::json j;
  j["name"] = m.name;
  if (!m.source.empty()) j["source"] = m.source;
  if (!m.notes.empty()) j["notes"] = m.notes;
  if (!m.aliases.empty()) j["aliases"] = {{"names", m.aliases}, {"source", m.aliases_source}};
  j["hidden_size"] = m.hidden_size;
  j["num_hidden_layers"] = m.num_layers;
  j["num_attention_heads"] = m.num_attention_heads;
  j["num_key_value_heads"] = m.num_kv_heads;
  j["head_dim"] = m.head_dim;
  j["intermediate_size"] = m.intermediate_size;
  j["vocab_size"] = m.vocab_size;
  j["hidden_act"] = ActivationName(m.activation);
  j["norm_type"] = NormName(m.norm);
  if (m.norm == NormKind::kLayerNorm) j["norm_bias"] = m.norm_bias;
  j["tie_word_embeddings"] = m.tie_word_embeddings;
  j["attention_bias"] = m.attention_bias;
  j["mlp_bias"] = m.mlp_bias;
  j["position_embedding_type"] =
      PositionEmbeddingName(m.learned_position_embeddings ? PositionEmbedding::kLearned : m.position_embedding);
  if (m.max_position_embeddings > 0) j["max_position_embeddings"] = m.max_position_embeddings;
  j["hidden_dropout"] = m.dropout ? 0.1 : 0.0;  // only "some" or "none" matters to the cost
  if (m.is_moe()) {
    j["num_experts"] = m.num_experts;
    j["num_experts_per_tok"] = m.experts_per_token;
    j["moe_intermediate_size"] = m.moe_intermediate_size;
    j["shared_expert_intermediate_size"] = m.shared_expert_intermediate_size;
    j["first_k_dense_replace"] = m.first_k_dense;
    j["decoder_sparse_step"] = m.moe_layer_step;
    j["router_bias"] = m.router_bias;
    if (m.moe_latent_size > 0) j["moe_latent_size"] = m.moe_latent_size;
    if (m.expert_groups > 0) {
      j["n_group"] = m.expert_groups;
      j["topk_group"] = m.expert_groups_per_token;
    }
  }
  if (m.is_mla()) {
    j["q_lora_rank"] = m.q_lora_rank > 0 ? nlohmann::json(m.q_lora_rank) : nlohmann::json(nullptr);
    j["kv_lora_rank"] = m.kv_lora_rank;
    j["qk_nope_head_dim"] = m.qk_nope_head_dim;
    j["qk_rope_head_dim"] = m.qk_rope_head_dim;
    j["v_head_dim"] = m.v_head_dim;
  }
  if (m.mtp_modules > 0) j["num_nextn_predict_layers"] = m.mtp_modules;
  if (m.sliding_window > 0) {
    j["sliding_window"] = m.sliding_window;
    j["sliding_window_layers"] = m.sliding_window_layers;
  }
  if (m.attention_chunk > 0) {
    j["attention_chunk_size"] = m.attention_chunk;
    j["chunked_attention_layers"] = m.chunked_attention_layers;
  }
  if (m.has_linear_attention()) {
    nlohmann::json types = nlohmann::json::array();
    for (bool linear : m.linear_layers) types.push_back(linear ? "linear_attention" : "full_attention");
    j["layer_types"] = types;
    j["linear_num_key_heads"] = m.gdn.key_heads;
    j["linear_num_value_heads"] = m.gdn.value_heads;
    j["linear_key_head_dim"] = m.gdn.key_dim;
    j["linear_value_head_dim"] = m.gdn.value_dim;
    j["linear_conv_kernel_dim"] = m.gdn.conv_kernel;
  }
  if (m.attn_output_gate) j["attn_output_gate"] = true;
  if (m.is_moe() && m.shared_gate) j["shared_expert_gate"] = true;
  if (m.is_hybrid()) {
    j["hybrid_override_pattern"] = m.hybrid_pattern;
    if (m.mamba.heads > 0) {
      j["mamba_num_heads"] = m.mamba.heads;
      j["mamba_head_dim"] = m.mamba.head_dim;
      j["ssm_state_size"] = m.mamba.state;
      j["n_groups"] = m.mamba.groups;
      j["conv_kernel"] = m.mamba.conv_kernel;
      j["chunk_size"] = m.mamba.chunk;
    }
    if (m.mtp_modules > 0) j["mtp_hybrid_override_pattern"] = m.mtp_kind == LayerKind::kMoe ? "*E" : "*-";
  }
  return j;
}

ModelConfig LoadModelFile(const std::string& path) {
  nlohmann::json doc = ReadJsonFile(path);
  return ParseModel(JsonNode(doc, path, ""));
}

std::string AlnumNameKey(const std::string& name) {
  std::string key;
  for (char c : name) {
    if (std::isalnum(static_cast<unsigned char>(c))) key += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return key;
}

std::string ModelNameKey(const std::string& name) {
  static const std::set<std::string> kVariantWords = {"instruct", "chat", "hf",   "base", "it",   "fp8",
                                                      "fp16",     "bf16", "awq",  "gptq", "int4", "int8"};
  std::string text = name;
  if (const size_t slash = text.rfind('/'); slash != std::string::npos) text = text.substr(slash + 1);
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::string key, word;
  bool first = true;
  auto flush = [&] {
    const bool release = word.size() > 1 && word[0] == 'v' && std::isdigit(static_cast<unsigned char>(word[1])) &&
                         word.find_first_not_of("0123456789.", 1) == std::string::npos;
    if (!word.empty() && !kVariantWords.count(word) && !release && !(first && word == "meta")) key += word;
    if (!word.empty()) first = false;
    word.clear();
  };
  for (const char c : text) {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '.') {
      word += c;
    } else {
      flush();
    }
  }
  flush();
  return key;
}

namespace {

// A shipped model file's stem and the name keys it answers to (its stem,
// "name" and "aliases").
struct ShippedModelKeys {
  std::string stem;
  std::set<std::string> keys;
};

// The models/ files of the data root, in stem order, read once per process.
const std::vector<ShippedModelKeys>& ShippedModelIndex() {
  static std::mutex mutex;
  static std::map<std::string, std::vector<ShippedModelKeys>> by_root;
  const std::lock_guard<std::mutex> lock(mutex);
  const std::string root = DataRoot();
  if (auto it = by_root.find(root); it != by_root.end()) return it->second;
  std::error_code ec;
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(root) / "models", ec)) {
    if (entry.path().extension() == ".json") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  std::vector<ShippedModelKeys> index;
  for (const auto& path : files) {
    const ModelConfig m = LoadModelFile(path.string());
    ShippedModelKeys k{path.stem().string(), {ModelNameKey(path.stem().string()), ModelNameKey(m.name)}};
    for (const std::string& alias : m.aliases) k.keys.insert(ModelNameKey(alias));
    index.push_back(std::move(k));
  }
  return by_root.emplace(root, std::move(index)).first->second;
}

}  // namespace

std::string FindShippedModel(const std::string& name) {
  const std::string key = ModelNameKey(name);
  if (key.empty()) return "";
  const std::vector<ShippedModelKeys>& index = ShippedModelIndex();
  for (const ShippedModelKeys& k : index) {
    if (k.stem == name) return name;  // the file named exactly
  }
  std::string found;
  for (const ShippedModelKeys& k : index) {
    if (!k.keys.count(key)) continue;
    if (!found.empty() && found != k.stem) return "";  // two files claim it: no guess
    found = k.stem;
  }
  return found;
}

}  // namespace stacksim::config
