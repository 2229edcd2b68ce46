// A transformer model definition, parsed from models/*.json.
//
// Keys follow a Hugging Face config.json where one exists, so a real config can
// be dropped in; keys of such configs that do not affect performance (token
// ids, initializer ranges, ...) are accepted and ignored, anything else unknown
// is an error. Sizes are element counts; no units.
#ifndef STACKSIM_SIM_CONFIG_MODEL_H_
#define STACKSIM_SIM_CONFIG_MODEL_H_

#include <array>
#include <cstdint>
#include <string>

#include "sim/util/json_reader.h"

namespace stacksim::config {

enum class Activation { kGelu, kRelu, kSquaredRelu, kSwiglu, kGeglu };
enum class NormKind { kLayerNorm, kRmsNorm };
// How positions enter the model. Only kLearned has parameters (a table of
// max_position_embeddings x hidden); RoPE and ALiBi cost a few element-wise ops.
enum class PositionEmbedding { kRope, kLearned, kAlibi, kNone };

// What one layer of the stack is. A transformer layer (self-attention, then
// a dense or MoE MLP) unless the model is hybrid: Megatron-Core's hybrid
// models (MambaModel with hybrid_override_pattern; Nemotron-H, Nemotron 3)
// stack single blocks, each with its own pre-norm and residual: a Mamba-2
// mixer ('M'), self-attention ('*'), a dense MLP ('-') or a MoE MLP ('E').
// Qwen3-Next's layers are transformer layers whose self-attention is, on
// three of every four, a Gated DeltaNet (linear attention): kGdnDense and
// kGdnMoe.
enum class LayerKind { kDense, kMoe, kMamba, kAttention, kMlp, kMoeBlock, kGdnDense, kGdnMoe };
inline constexpr int kNumLayerKinds = 8;

// A Mamba-2 mixer (Dao & Gu 2024, arXiv:2405.21060, section 7; Megatron-Core
// MambaMixer): in_proj maps the hidden state to z and x (inner = heads x
// head_dim each), B and C (groups x state each) and one dt per head; a
// causal depthwise convolution of conv_kernel taps runs over x, B and C; the
// state-space dual (SSD) scan works in chunks of `chunk` tokens; a gated
// RMSNorm (y * silu(z)) and out_proj (inner -> hidden) follow. Sizes in elements.
struct MambaConfig {
  int64_t heads = 0;        // mamba_num_heads
  int64_t head_dim = 0;     // mamba_head_dim (the SSD's P)
  int64_t state = 0;        // ssm_state_size (N)
  int64_t groups = 0;       // n_groups: heads / groups heads share one B and C
  int64_t conv_kernel = 4;  // conv_kernel (Megatron-Core's d_conv default)
  int64_t chunk = 128;      // chunk_size (Megatron-Core's MambaMixer default)

  int64_t inner() const { return heads * head_dim; }
  int64_t in_proj_width() const { return 2 * inner() + 2 * groups * state + heads; }
  int64_t conv_channels() const { return inner() + 2 * groups * state; }
};

// Gated DeltaNet (Yang et al. 2024, "Gated Delta Networks", arXiv:2412.06464;
// Qwen3-Next's linear attention, Hugging Face Qwen3NextGatedDeltaNet):
// in_proj_qkvz maps the hidden state to q and k (key_heads x key_dim each),
// v and the output gate z (value_heads x value_dim each), in_proj_ba to one
// beta and one decay per value head; a causal depthwise convolution of
// conv_kernel taps (no bias) runs over q, k and v; the gated delta rule works
// in chunks of `chunk` tokens; a gated RMSNorm per value head and out_proj
// (value_heads x value_dim -> hidden) follow. Sizes in elements.
struct GatedDeltaNetConfig {
  int64_t key_heads = 0;    // linear_num_key_heads
  int64_t value_heads = 0;  // linear_num_value_heads
  int64_t key_dim = 0;      // linear_key_head_dim
  int64_t value_dim = 0;    // linear_value_head_dim
  int64_t conv_kernel = 4;  // linear_conv_kernel_dim
  int64_t chunk = 64;       // the chunked kernels' block (flash-linear-attention's chunk_gated_delta_rule)

  int64_t qk_width() const { return key_heads * key_dim; }
  int64_t v_width() const { return value_heads * value_dim; }
  int64_t conv_channels() const { return 2 * qk_width() + v_width(); }
};

struct ModelConfig {
  std::string name;
  std::string family;  // Hugging Face model_type ("" when not given)
  int64_t hidden_size = 0;
  int64_t num_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_kv_heads = 0;      // == num_attention_heads for MHA; fewer for GQA
  int64_t head_dim = 0;          // hidden_size / heads unless the config says otherwise
  int64_t intermediate_size = 0; // FFN width (per gated half for gated MLPs)
  int64_t vocab_size = 0;
  Activation activation = Activation::kGelu;
  NormKind norm = NormKind::kLayerNorm;
  bool tie_word_embeddings = false;
  bool attention_bias = false;   // QKV/proj biases
  bool mlp_bias = false;
  bool learned_position_embeddings = false;  // GPT-2/3 style absolute positions
  int64_t max_position_embeddings = 0;       // 0 when the config does not say
  // Added with the parsers (all backward compatible):
  PositionEmbedding position_embedding = PositionEmbedding::kRope;  // kLearned iff learned_position_embeddings
  bool norm_bias = true;         // LayerNorm with a bias (false for MPT's bias-free LayerNorm); false for RMSNorm
  std::string source;            // where the shapes come from (the file's "source")
  std::string notes;
  std::vector<std::string> aliases;  // other published names of this architecture ("DeepSeek-R1")
  std::string aliases_source;        // why they are the same architecture
  bool dropout = false;          // trained with dropout (hidden_dropout/attention_dropout > 0)
  // Mixture of experts (0 routed experts: a dense model). A MoE layer replaces
  // the MLP by a router (hidden x experts), `num_experts` routed expert MLPs of
  // width moe_intermediate_size of which each token uses experts_per_token,
  // and shared experts (a dense MLP of width shared_expert_intermediate_size
  // that every token uses). The first first_k_dense layers, and every layer
  // that is not a multiple of moe_layer_step (1-based), keep a dense MLP.
  int64_t num_experts = 0;
  int64_t experts_per_token = 0;
  int64_t moe_intermediate_size = 0;
  int64_t shared_expert_intermediate_size = 0;  // all shared experts together
  int64_t first_k_dense = 0;
  int64_t moe_layer_step = 1;
  bool router_bias = false;      // GPT-OSS's router carries a bias
  // Group-limited (node-limited) routing, DeepSeek-V2/V3: the routed experts
  // form expert_groups equal groups (n_group) and each token picks its top-k
  // experts from at most expert_groups_per_token groups (topk_group); DeepSeek-V3
  // places one group per node, so a token's dispatch reaches at most that many
  // nodes (arXiv:2412.19437 §2.1.2). 0: not group-limited.
  int64_t expert_groups = 0;
  int64_t expert_groups_per_token = 0;
  // Latent MoE (Megatron-Core's moe_latent_size; Nemotron 3 Super): after
  // routing, each token is projected from hidden_size down to this width
  // (fc1_latent_proj, duplicated on every TP rank), dispatched and run
  // through experts of that input width, combined, and projected back
  // (fc2_latent_proj). 0: experts take the hidden state.
  int64_t moe_latent_size = 0;
  // The shared experts' output scaled by a learned sigmoid gate
  // (shared_expert_gate, hidden x 1: Qwen2-MoE and Qwen3-Next's sparse MoE
  // block; "shared_expert_gate" in stacksim's files).
  bool shared_gate = false;
  int64_t expert_input_width() const { return moe_latent_size > 0 ? moe_latent_size : hidden_size; }
  // Multi-token prediction modules after the last layer (num_nextn_predict_layers,
  // DeepSeek-V3 §2.2). Training runs each module's transformer layer as a
  // pipeline layer after the last one (index num_layers + k, shaped as a
  // layer at that index) and its projection and loss with the head
  // (workload::MtpHeadForward); ParameterCount leaves them out
  // (MtpParameterCount).
  int64_t mtp_modules = 0;
  // Sliding-window attention: sliding_window_layers of the layers let each
  // query see only the sliding_window tokens before it (Mistral: all
  // layers; GPT-OSS: every other layer, layer_types; Qwen2: the layers from
  // max_window_layers on when use_sliding_window). 0: full causal attention.
  int64_t sliding_window = 0;
  int64_t sliding_window_layers = 0;
  // Chunked local attention (Llama 4's attention_chunk_size on its RoPE
  // layers, three of every four): a query sees the earlier tokens of its own
  // chunk only. 0: none.
  int64_t attention_chunk = 0;
  int64_t chunked_attention_layers = 0;
  // The attention kernels' work over `seq` tokens as a fraction of full
  // causal attention, averaged over the layers (1 without sliding windows).
  double AttentionWorkFraction(int64_t seq) const;
  // The layers a pipeline splits: the transformer layers and the MTP
  // modules' layers after them (Megatron-Core's pipeline layout places an
  // MTP module like a layer: 'm' in pipeline_model_parallel_layout).
  int64_t PipelineLayerCount() const { return num_layers + mtp_modules; }

  // Multi-head latent attention (MLA; DeepSeek-V2, arXiv:2405.04434 §2.1):
  // queries come from a latent of q_lora_rank (W_DQ, RMSNorm, W_UQ; or from
  // the hidden state directly when q_lora_rank is 0), keys and values from a
  // shared latent of kv_lora_rank (W_DKV, RMSNorm, W_UK/W_UV) plus one
  // decoupled RoPE key of qk_rope_head_dim shared by all heads (W_KR). Each
  // head's query/key is qk_nope_head_dim + qk_rope_head_dim wide (head_dim is
  // set to that sum), its value v_head_dim. num_kv_heads == heads.
  int64_t q_lora_rank = 0;       // 0: no query compression (DeepSeek-V2-Lite)
  int64_t kv_lora_rank = 0;      // > 0 iff the model uses MLA
  int64_t qk_nope_head_dim = 0;
  int64_t qk_rope_head_dim = 0;
  int64_t v_head_dim = 0;

  bool is_mla() const { return kv_lora_rank > 0; }

  // Hybrid models: one character per layer (hybrid_override_pattern, 'M',
  // '*', '-' or 'E'; its length is num_layers) and the Mamba-2 mixer's
  // shapes. Empty for a plain transformer.
  std::string hybrid_pattern;
  MambaConfig mamba;
  // Linear-attention layers (Qwen3-Next: layer_types "linear_attention", or
  // all but every full_attention_interval-th): one flag per layer, and the
  // Gated DeltaNet's shapes. Empty without them.
  std::vector<bool> linear_layers;
  GatedDeltaNetConfig gdn;
  // Gated attention (attn_output_gate, Qwen3-Next's full-attention layers):
  // the query projection also gives a per-head output gate, sigmoid-applied
  // to the attention output before o_proj.
  bool attn_output_gate = false;
  bool has_linear_attention() const { return !linear_layers.empty(); }
  int64_t GatedDeltaNetParameterCount() const;
  // A hybrid's MTP modules' layer (mtp_hybrid_override_pattern "*E":
  // attention then MoE, a transformer layer; "*-": with a dense MLP).
  LayerKind mtp_kind = LayerKind::kMoe;
  bool is_hybrid() const { return !hybrid_pattern.empty(); }
  // REQUIRES: 0 <= layer < PipelineLayerCount() (an MTP layer is shaped as the last layer).
  LayerKind LayerKindAt(int64_t layer) const;
  // Which kinds the pipeline's layers (MTP layers included) have.
  std::array<bool, kNumLayerKinds> LayerKindsPresent() const;
  // Layers with self-attention (every layer unless the model is hybrid).
  int64_t AttentionLayerCount() const;
  // One Mamba-2 mixer's parameters: in_proj, the convolution's taps and
  // bias, A, D and dt_bias per head, the gated norm's weight, out_proj.
  int64_t MambaParameterCount() const;

  bool is_moe() const { return num_experts > 0; }
  bool IsMoeLayer(int64_t layer) const;  // 0-based
  int64_t MoeLayerCount() const;

  bool gated_mlp() const { return activation == Activation::kSwiglu || activation == Activation::kGeglu; }
  // Parameters, counted exactly from the shapes (embeddings included once if tied):
  // layers x LayerParameterCount + embeddings + final norm + untied LM head.
  int64_t ParameterCount() const;
  // Parameters of one dense transformer layer.
  int64_t LayerParameterCount() const;
  // Parameters of layer `layer` (0-based): dense, or MoE with every expert.
  int64_t LayerParameterCount(int64_t layer) const;
  // Parameters a token uses: only experts_per_token of the routed experts.
  int64_t ActiveParameterCount() const;
  int64_t ActiveLayerParameterCount(int64_t layer) const;
  // Routed expert parameters of one MoE layer (all experts): what EP shards.
  int64_t ExpertParameterCount() const;
  // One routed expert's parameters (its input width expert_input_width()).
  int64_t OneExpertParameterCount() const;
  int64_t AttentionParameterCount() const;  // attention block incl. biases (MLA: its projections and latent norms)
  // MLA parameters Megatron-Core replicates on every TP rank instead of
  // splitting: the down-projections W_DQ and W_DKV+W_KR and the two latent
  // norms. 0 for other attention.
  int64_t MlaReplicatedParameterCount() const;
  // Parameters of the mtp_modules MTP modules not shared with the main model
  // (each: a MoE-or-dense layer like the last one, two RMSNorms, the 2h x h
  // projection, the output norm; embedding and head shared). DeepSeek-V3 README_WEIGHTS.md.
  int64_t MtpParameterCount() const;
  int64_t MlpParameterCount(int64_t width) const;  // one (gated) MLP of this width
  int64_t EmbeddingParameterCount() const;  // token (+ position) embeddings
  int64_t OutputHeadParameterCount() const; // untied LM head (vocab x hidden); 0 when tied
  int64_t NormParameterCount() const;       // one norm: 2*hidden (LayerNorm with bias) or hidden
};

// Parses a model object. `file` and `path` name it in errors.
ModelConfig ParseModel(const JsonNode& node);
ModelConfig LoadModelFile(const std::string& path);

// A model name as published runs write it, reduced for comparison: lower
// case, without an organisation ("meta-llama/"), a "meta-" prefix, release
// tags ("v0.1") and variant words (instruct, chat, hf, base, it, and
// weight formats: fp8, fp16, bf16, awq, gptq, int4, int8), and without
// punctuation other than dots: "meta-llama/Meta-Llama-3.1-8B-Instruct" and
// "llama3.1-8b" both give "llama3.18b".
std::string ModelNameKey(const std::string& name);

// A model name in lower case with letters and digits only: "GPT OSS 120B",
// "GPT-OSS-120B" and "gpt_oss_120b" give "gptoss120b" (ModelNameKey also
// drops release and variant words).
std::string AlnumNameKey(const std::string& name);

// The stem of the shipped model file (models/<stem>.json) named `name`
// exactly, else the one whose stem, "name" or one of its "aliases" has the
// same ModelNameKey as `name`; "" when none does or when two different files
// do.
std::string FindShippedModel(const std::string& name);
// The model in the file format (every key explicit); ParseModel reads it back.
nlohmann::json ModelToJson(const ModelConfig& m);

const char* ActivationName(Activation a);
const char* NormName(NormKind n);                     // "layernorm", "rmsnorm"
const char* PositionEmbeddingName(PositionEmbedding p);  // "rope", "learned", "alibi", "none"

}  // namespace stacksim::config

#endif  // STACKSIM_SIM_CONFIG_MODEL_H_
