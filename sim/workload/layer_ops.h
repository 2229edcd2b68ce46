// The operations of one transformer layer (and of the embedding and output
// head) for one micro-batch on one tensor-parallel rank, forward and backward.
//
// Shapes follow Megatron-LM's tensor parallelism (Shoeybi et al. 2019): QKV
// and FC1 are column-parallel, the attention output projection and FC2
// row-parallel; with sequence parallelism (Korthikanti et al. 2022) norms,
// dropouts and residuals work on 1/t of the tokens and each all-reduce becomes
// a reduce-scatter plus an all-gather. GEMM FLOPs are 2mnk; memory-bound ops
// count each input read once and each output written once.
#ifndef STACKSIM_SIM_WORKLOAD_LAYER_OPS_H_
#define STACKSIM_SIM_WORKLOAD_LAYER_OPS_H_

#include <string>
#include <vector>

#include "sim/config/model.h"
#include "sim/config/plan.h"
#include "sim/trace/trace.h"
#include "sim/util/units.h"

namespace stacksim::workload {

struct Op {
  bool is_collective = false;   // a tensor-parallel collective, else compute
  std::string name;
  // What the op is for the step's accounting (trace::TaskRole): expert
  // all-to-alls are kEpComm, the MoE dispatcher's host wait kHostSync.
  trace::TaskRole role = trace::TaskRole::kMemoryBound;
  bool recompute = false;       // re-run in the backward pass (names "recompute-...")
  bool expert = false;          // routed-expert work (names "expert-..."), see simulate's MoE imbalance
  trace::ComputeOp compute;     // compute ops
  trace::CollectiveKind collective = trace::CollectiveKind::kAllReduce;
  Bytes bytes;                  // collective ops: per-rank buffer
  // Collectives: runs beside compute (on the TP stream) instead of blocking it.
  bool async = false;
  // Index (in the same op list) of an async op this op must wait for; -1: none.
  int wait_for = -1;
  bool ep_group = false;        // collective over the expert-parallel group (else TP)
  bool cp_group = false;        // collective over the context-parallel group (else TP)
  // All-to-all only: trace::CommOp::scale_out_bytes (negative: flat pairwise).
  Bytes scale_out_bytes{-1};
  // > 0: not a kernel but a host-side wait of this length on the compute
  // stream (a trace::TaskKind::kDelay).
  Time host_wait;
  // A weight-gradient GEMM: zero-bubble schedules (ZB-H1, DualPipe) run it as
  // a separate W pass after the B pass (everything else of the backward).
  bool weight_grad = false;
};

struct LayerShape {
  int64_t micro_batch = 1;   // sequences
  int64_t seq = 1;           // tokens per sequence
  int64_t hidden = 0;
  int64_t heads = 0;         // per layer, whole model
  int64_t kv_heads = 0;
  int64_t head_dim = 0;      // query/key width per head (MLA: qk_nope + qk_rope)
  // Multi-head latent attention (DeepSeek-V2/V3, Megatron-Core's
  // MLASelfAttention): down-projections to the query latent (q_lora_rank; 0:
  // the query comes from the hidden state through a column-parallel W_Q) and
  // to the KV latent plus the shared RoPE key (kv_lora_rank + qk_rope_dim),
  // both replicated on every TP rank; RMSNorms on the latents; column-parallel
  // up-projections over heads; flash attention with head_dim-wide queries/keys
  // and v_head_dim-wide values; the row-parallel output projection. Training
  // computes full K and V from the latent (no absorbed-weight tricks).
  bool mla = false;
  int64_t q_lora_rank = 0;
  int64_t kv_lora_rank = 0;
  int64_t qk_rope_dim = 0;   // decoupled RoPE part of head_dim
  int64_t v_head_dim = 0;    // value width per head (MLA only; otherwise head_dim)
  int64_t ffn = 0;           // per gated half
  int64_t vocab = 0;
  bool gated = false;
  bool rope = true;
  bool learned_positions = false;
  bool dropout = false;
  int tp = 1;
  // Context parallelism: each rank holds seq/cp tokens of every sequence (two
  // chunks, Megatron's causal load balancing). cp_comm: ring attention (K/V
  // blocks passed around the ring, overlapped with attention) or Llama 3's
  // all-gather of K/V before attention (exposed; dK/dV reduce-scattered).
  int cp = 1;
  config::CpComm cp_comm = config::CpComm::kP2p;
  bool sequence_parallel = false;
  bool flash_attention = true;
  bool flash2 = false;       // FlashAttention-2 kernels (with flash_attention)
  // Memory-bound work in fused kernels (Megatron-LM / Transformer Engine) or
  // as separate generic PyTorch eager kernels.
  bool fused_kernels = true;
  bool rms_norm = false;
  bool bias = false;         // linear layers carry biases (separate eager kernels)
  config::Precision precision = config::Precision::kBf16;
  // What selective recomputation (plan.recompute "selective") re-runs; see
  // SelectiveRecompute.
  config::RecomputeModules recompute_modules = config::RecomputeModules::Default();
  // Mixture of experts: this layer's MLP is a MoE block (router, routed
  // experts as grouped GEMMs between an EP dispatch and combine all-to-all,
  // shared experts as a dense TP MLP). Expert tensor parallelism is 1: each
  // rank routes its own (sequence-parallel) tokens.
  bool moe = false;
  int64_t experts = 0;       // routed experts, whole model
  int64_t top_k = 0;
  int64_t expert_ffn = 0;    // per gated half
  int64_t shared_ffn = 0;    // all shared experts together; 0: none
  int ep = 1;
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

  // Tokens of the micro-batch on this rank (its context-parallel share).
  int64_t tokens() const { return micro_batch * seq / cp; }
  double element_bytes() const;
  static LayerShape From(const config::ModelConfig& model, const config::PlanConfig& plan, int64_t seq);
  // The same shape for a MoE layer of `model` (REQUIRES: model.is_moe()).
  // domain_gpus: GPUs per node (NVLink domain); 0 puts the EP group in one node.
  LayerShape Moe(const config::ModelConfig& model, const config::PlanConfig& plan, int domain_gpus = 0) const;
  // MoE: tokens this rank routes per micro-batch (its sequence-parallel shard).
  double routed_tokens() const;
  // MoE: tokens per local expert on the busiest EP rank (rounded up).
  int64_t tokens_per_local_expert() const;
  int64_t local_experts() const { return experts / ep; }
  // EP nodes: the nodes the EP group spans.
  int ep_nodes() const { return ep_per_node > 0 && ep > ep_per_node ? ep / ep_per_node : 1; }
};

// Expected number of distinct units a token's top_k experts fall on, when the
// experts are split into `units` equal contiguous blocks (EP ranks, or EP
// nodes) and routing is uniform: top_k distinct experts drawn at random,
// within groups_per_token of `groups` equal expert groups drawn at random
// when routing is group-limited (groups > 0; DeepSeek-V3 §2.1.2).
// REQUIRES: units and groups (if > 0) divide experts.
double ExpectedDistinctUnits(int64_t experts, int64_t top_k, int64_t units, int64_t groups = 0,
                             int64_t groups_per_token = 0);

// Tokens on the busiest EP rank over the mean tokens per EP rank, for the
// plan's routing (uniform: 1; Zipf or a histogram with Megatron's contiguous
// expert placement: max over ranks of the rank's share x ep). With a capacity
// factor every expert's buffer is padded to capacity: the factor itself.
double MoeLoadFactor(const config::ModelConfig& model, const config::PlanConfig& plan);
// Fraction of routed tokens dropped by the capacity limit (0 when dropless).
double MoeDroppedFraction(const config::ModelConfig& model, const config::PlanConfig& plan);

std::vector<Op> LayerForward(const LayerShape& s);
std::vector<Op> LayerBackward(const LayerShape& s);
// The forward ops selective recomputation re-runs before the layer's backward,
// for the modules in s.recompute_modules (Megatron-Core's recompute_modules;
// names "recompute-..."):
//   core_attn       the unfused QK^T / softmax / PV (Korthikanti et al. 2022);
//                   nothing for fused flash attention, whose backward kernel
//                   recomputes the scores itself
//   layernorm       the norms that are modules of their own: MLA's input norm
//                   and a MoE layer's pre-MLP norm (under FP8 with the casts of
//                   the linear inputs they feed); a norm fused into the next
//                   linear (standard attention, dense MLP) is not recomputed
//   mla_up_proj     MLA's latent norms, the latents' SP all-gather, the q/kv
//                   up-projections and RoPE
//   mlp             a dense layer's whole MLP (norm, FC1, activation, FC2 and
//                   its TP reduction)
//   moe_act         the routed experts' activation (and under FP8 the cast of
//                   FC2's input)
//   moe             a MoE layer's whole MoE block, all-to-alls included
//   shared_experts  the shared-expert MLP
// Modules a layer does not have (moe on a dense layer, mla_up_proj without
// MLA) add nothing, as in Megatron-Core; moe subsumes moe_act and shared_experts.
std::vector<Op> SelectiveRecompute(const LayerShape& s);
// The same ops, run again in the backward pass: recompute set, names "recompute-...".
std::vector<Op> AsRecompute(std::vector<Op> ops);

std::vector<Op> EmbeddingForward(const LayerShape& s);
std::vector<Op> EmbeddingBackward(const LayerShape& s);
// Final norm, logits and the vocabulary-parallel cross-entropy loss.
std::vector<Op> HeadForward(const LayerShape& s);
std::vector<Op> HeadBackward(const LayerShape& s);

// Memory-bound kernel families, for the efficiency of generic (eager) kernels.
enum class KernelKind { kElementwise, kLayerNorm, kRmsNorm, kGelu, kGatedActivation, kSoftmax, kDropout, kCast };

// Fraction of copy bandwidth an eager PyTorch kernel of this kind reaches
// (measured on H200, profiles/measured/h200-sxm-141gb-2026-11-29/memops.csv,
// largest size, bytes counted as in layer_ops.cc, over the 4152 GB/s copy).
double EagerKernelEfficiency(KernelKind kind);

// Useful FLOPs of a list (compute ops only).
Flops SumFlops(const std::vector<Op>& ops);

}  // namespace stacksim::workload

#endif  // STACKSIM_SIM_WORKLOAD_LAYER_OPS_H_
