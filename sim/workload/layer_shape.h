// The shape of one transformer layer as one tensor-parallel rank runs it for
// one micro-batch: the model's widths, the plan's parallel split, and the
// kernels the plan picks, in per-feature parts (attention, MLA, context
// parallelism, MoE, precision and kernels) composed into LayerShape.
//
// Plain values, copied freely; built by LayerShape::From from a parsed model,
// plan and hardware profile (the profile gives the eager kernels' bandwidth
// efficiencies). Units: sizes in elements (tokens, widths, heads), counts of
// ranks, bytes per element from element_bytes(); efficiencies are fractions.
#ifndef STACKSIM_SIM_WORKLOAD_LAYER_SHAPE_H_
#define STACKSIM_SIM_WORKLOAD_LAYER_SHAPE_H_

#include <array>
#include <cstdint>

#include "sim/config/model.h"
#include "sim/config/plan.h"
#include "sim/config/profile.h"

namespace stacksim::workload {

// Self-attention: head counts and widths, position encoding, and the kernel.
struct AttentionShape {
  int64_t heads = 0;         // per layer, whole model
  int64_t kv_heads = 0;
  int64_t head_dim = 0;      // query/key width per head (MLA: qk_nope + qk_rope)
  bool rope = true;
  bool flash = true;         // fused (flash) attention, else the unfused QK^T / softmax / PV
  config::AttentionImpl kernel = config::AttentionImpl::kFlash;  // which kernel (flash, flash2, flash1, unfused, stacksim)
  // Fused kernels' work as a fraction of full causal attention, the mean
  // over the layers (sliding windows: ModelConfig::AttentionWorkFraction).
  double work_fraction = 1.0;
  // Gated attention (ModelConfig::attn_output_gate): the query projection
  // also gives a gate applied to the attention output.
  bool output_gate = false;
};

// Multi-head latent attention (DeepSeek-V2/V3, Megatron-Core's
// MLASelfAttention): down-projections to the query latent (q_lora_rank; 0:
// the query comes from the hidden state through a column-parallel W_Q) and
// to the KV latent plus the shared RoPE key (kv_lora_rank + qk_rope_dim),
// both replicated on every TP rank; RMSNorms on the latents; column-parallel
// up-projections over heads; flash attention with head_dim-wide queries/keys
// and v_head_dim-wide values; the row-parallel output projection. Training
// computes full K and V from the latent (no absorbed-weight tricks).
struct MlaShape {
  bool enabled = false;
  int64_t q_lora_rank = 0;
  int64_t kv_lora_rank = 0;
  int64_t qk_rope_dim = 0;   // decoupled RoPE part of head_dim
  int64_t v_head_dim = 0;    // value width per head (otherwise head_dim)
};

// Context parallelism: each rank holds seq/size tokens of every sequence
// (two chunks, Megatron's causal load balancing). comm: ring attention (K/V
// blocks passed around the ring, overlapped with attention) or Llama 3's
// all-gather of K/V before attention (exposed; dK/dV reduce-scattered).
struct CpShape {
  int size = 1;
  config::CpComm comm = config::CpComm::kP2p;
  bool torch_ring = false;  // plan.cp_torch_ring
};

// Mixture of experts: the layer's MLP is a MoE block (router, routed experts
// as grouped GEMMs between an EP dispatch and combine all-to-all, shared
// experts as a dense TP MLP). Each rank routes its own (sequence-parallel)
// tokens; with expert tensor parallelism (etp > 1, the TP group) the tokens
// an EP rank receives are all-gathered over the etp ranks, each of which
// computes 1/etp of every local expert's FFN width.
struct MoeShape {
  bool enabled = false;
  int64_t experts = 0;       // routed experts, whole model
  int64_t top_k = 0;
  // Latent MoE (ModelConfig::moe_latent_size): the width tokens are
  // dispatched at and experts take; 0: the hidden size.
  int64_t latent = 0;
  int64_t expert_ffn = 0;    // per gated half
  int64_t shared_ffn = 0;    // all shared experts together; 0: none
  int ep = 1;
  int etp = 1;               // expert tensor parallelism: 1, or the TP group
  // Tokens the busiest EP rank computes over the mean (routing imbalance, or
  // the capacity factor's padded buffers); 1 for perfectly balanced routing.
  double load_factor = 1.0;
  // How tokens reach the experts (plan.moe_dispatcher), EP ranks per node
  // (0: the whole EP group in one node), and group-limited routing (the
  // model's n_group / topk_group; 0: none).
  config::MoeDispatcher dispatcher = config::MoeDispatcher::kAllToAll;
  // Every expert buffer padded to a capacity (plan.moe_capacity_factor): the
  // sizes are static, so the dispatcher needs no host sync.
  bool capacity_padded = false;
  int ep_per_node = 0;
  int64_t expert_groups = 0;
  int64_t expert_groups_per_token = 0;
  // Serving's fused MoE under tensor-parallel attention (vLLM, SGLang,
  // TensorRT-LLM): every TP rank holds all the iteration's tokens and runs
  // its local experts (its ep x etp = tp share) on the copies routed to
  // them, with no dispatch collective; the partial outputs are all-reduced
  // over TP. Training's dispatchers (false) move sequence-parallel shards.
  bool tp_replicated_tokens = false;

  int64_t local_experts() const { return experts / ep; }
  // The FFN width (per gated half) of this rank's shard of an expert.
  int64_t expert_ffn_shard() const { return expert_ffn / etp; }
  // EP nodes: the nodes the EP group spans.
  int ep_nodes() const { return ep_per_node > 0 && ep > ep_per_node ? ep / ep_per_node : 1; }
};

// Training precision and how memory-bound work runs: in fused kernels
// (Megatron-LM / Transformer Engine) at copy bandwidth, or as separate
// generic PyTorch eager kernels at a fraction of it.
struct KernelShape {
  config::Precision precision = config::Precision::kBf16;
  bool fused = true;
  // Per config::EagerKernel family, the fraction of copy bandwidth an eager
  // kernel reaches on this GPU (the profile's eager_kernels; 1: copy speed).
  std::array<double, config::kNumEagerKernels> eager_efficiency = {1, 1, 1, 1, 1, 1, 1, 1};

  double EagerEfficiency(config::EagerKernel k) const { return eager_efficiency[static_cast<int>(k)]; }
};

struct LayerShape {
  // Which block the layer is (config::LayerKind): a transformer layer, or
  // one block of a hybrid model. The ops of LayerForward/LayerBackward.
  config::LayerKind kind = config::LayerKind::kDense;
  config::MambaConfig mamba;  // whole model (a Mamba-2 layer splits heads and groups over TP)
  config::GatedDeltaNetConfig gdn;  // whole model (a Gated DeltaNet layer splits its heads over TP)
  int64_t micro_batch = 1;   // sequences
  int64_t seq = 1;           // tokens per sequence
  int64_t hidden = 0;
  int64_t ffn = 0;           // per gated half
  int64_t vocab = 0;
  bool gated = false;
  bool learned_positions = false;
  bool dropout = false;
  bool rms_norm = false;
  bool bias = false;         // linear layers carry biases (separate eager kernels)
  int tp = 1;
  bool sequence_parallel = false;
  // Which TP collectives run beside their GEMMs (plan.tp_comm_overlap).
  config::TpCommOverlap tp_overlap = config::TpCommOverlap::kNone;
  // What selective recomputation (plan.recompute "selective") re-runs; see
  // SelectiveRecompute.
  config::RecomputeModules recompute_modules = config::RecomputeModules::Default();
  // Selective recomputation by modules or by torchtitan's op policy
  // (config::SelectivePolicy; see SelectiveRecompute and OpPolicyRecompute).
  config::SelectivePolicy selective_policy = config::SelectivePolicy::kModules;
  // Under SP the column-parallel linears keep the all-gathered input
  // (DTensor, plan.sp_keeps_gathered_inputs), not the sequence shard.
  bool sp_keeps_gathered_inputs = false;
  // FP8 all-gathers under SP (plan.fp8_tp_gather): see gather_element_bytes().
  bool fp8_tp_gather = false;
  // The weights are FP8 tensors (plan.fp8_params): the step's weight cast is
  // only their transpose.
  bool fp8_params = false;
  // How eager kernels run RMSNorm and RoPE (plan.eager_modules).
  config::EagerModules eager_modules = config::EagerModules::kLibrary;
  // How FP8 operands are cast (plan.fp8_casts).
  config::Fp8Casts fp8_casts = config::Fp8Casts::kPerForward;
  // The embedding, final norm, output layer and loss run eager kernels
  // though the layers' are fused (plan.compiled_layers_only).
  bool compiled_layers_only = false;
  // The loss upcasts the logits to fp32 before an eager cross entropy
  // (plan.loss_logits "upcast").
  bool loss_upcast = false;
  // GQA's K/V copied to the query heads before attention (plan.repeat_kv_copies).
  bool repeat_kv_copies = false;
  // LoRA / QLoRA (plan.finetune): frozen base weights and their adapters (lora.h).
  config::FinetuneConfig finetune;
  AttentionShape attention;
  MlaShape mla;
  CpShape cp;
  MoeShape moe;
  KernelShape kernels;

  // Tokens of the micro-batch on this rank (its context-parallel share).
  int64_t tokens() const { return micro_batch * seq / cp.size; }
  // Bytes of an activation element (FP8 training keeps 16-bit activations).
  double element_bytes() const;
  // Bytes of an element a TP all-gather moves to an FP8 GEMM: 1 when the
  // GEMMs run in FP8 and the framework gathers FP8 data (fp8_tp_gather),
  // else element_bytes().
  double gather_element_bytes() const;
  // A dense layer of `model` under `plan` at sequence length `seq`, with the
  // eager kernel efficiencies of `profile`.
  static LayerShape From(const config::ModelConfig& model, const config::PlanConfig& plan, int64_t seq,
                         const config::ProfileConfig& profile);
  // The same shape for a MoE layer of `model` (REQUIRES: model.is_moe()).
  // domain_gpus: GPUs per node (NVLink domain); 0 puts the EP group in one node.
  LayerShape Moe(const config::ModelConfig& model, const config::PlanConfig& plan, int domain_gpus = 0) const;
  // The shape of a layer of this kind (Moe() for the MoE kinds).
  LayerShape Kind(const config::ModelConfig& model, const config::PlanConfig& plan, config::LayerKind kind,
                  int domain_gpus = 0) const;
  // MoE: tokens this rank routes per micro-batch (its sequence-parallel shard).
  double routed_tokens() const;
  // MoE: the width of a dispatched token row and of an expert's input
  // (the latent width of a latent MoE, else hidden).
  int64_t moe_hidden() const { return moe.latent > 0 ? moe.latent : hidden; }
  // MoE: tokens per local expert on the busiest EP rank (rounded up), after
  // the expert-TP all-gather (x etp).
  int64_t tokens_per_local_expert() const;
};

}  // namespace stacksim::workload

#endif  // STACKSIM_SIM_WORKLOAD_LAYER_SHAPE_H_
