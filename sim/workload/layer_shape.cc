#include "sim/workload/layer_shape.h"

#include <algorithm>
#include <cmath>

#include "sim/workload/moe_routing.h"

namespace stacksim::workload {
namespace {

double D(int64_t v) { return static_cast<double>(v); }

}  // namespace

double LayerShape::element_bytes() const {
  using config::Precision;
  return config::PrecisionBytes(kernels.precision == Precision::kFp8 ? Precision::kBf16 : kernels.precision);
}

double LayerShape::gather_element_bytes() const {
  return kernels.precision == config::Precision::kFp8 && fp8_tp_gather ? 1.0 : element_bytes();
}

double LayerShape::routed_tokens() const {
  return sequence_parallel ? D(tokens()) / tp : D(tokens());
}

int64_t LayerShape::tokens_per_local_expert() const {
  // Every EP rank routes routed_tokens() x top_k copies; over the ep ranks they
  // spread across all experts; each expert-TP rank computes the tokens of
  // all etp ranks of its group.
  double mean = routed_tokens() * D(moe.top_k) * moe.ep * moe.etp / D(moe.experts);
  // Replicated tokens: the same tokens on every rank, each copy routed once.
  if (moe.tp_replicated_tokens) mean = routed_tokens() * D(moe.top_k) / D(moe.experts);
  return std::max<int64_t>(1, static_cast<int64_t>(std::ceil(mean * moe.load_factor - 1e-9)));
}

LayerShape LayerShape::Moe(const config::ModelConfig& model, const config::PlanConfig& plan,
                           int domain_gpus) const {
  LayerShape m = *this;
  MoeShape& e = m.moe;
  e.enabled = true;
  e.experts = model.num_experts;
  e.top_k = model.experts_per_token;
  e.expert_ffn = model.moe_intermediate_size;
  e.latent = model.moe_latent_size;
  e.shared_ffn = model.shared_expert_intermediate_size;
  e.ep = plan.ep;
  e.etp = plan.etp;
  e.load_factor = MoeLoadFactor(model, plan);
  e.dispatcher = plan.dispatcher;
  e.capacity_padded = plan.capacity_factor > 0;
  // The EP group is ep ranks etp apart (placement.cc): whole nodes, or
  // part of one.
  e.ep_per_node = domain_gpus > 0 ? std::min(plan.ep, std::max(1, domain_gpus / std::max(1, plan.etp))) : 0;
  e.expert_groups = model.expert_groups;
  e.expert_groups_per_token = model.expert_groups_per_token;
  return m;
}

LayerShape LayerShape::Kind(const config::ModelConfig& model, const config::PlanConfig& plan,
                            config::LayerKind kind, int domain_gpus) const {
  const bool moe = kind == config::LayerKind::kMoe || kind == config::LayerKind::kMoeBlock ||
                   kind == config::LayerKind::kGdnMoe;
  LayerShape k = moe ? Moe(model, plan, domain_gpus) : *this;
  k.kind = kind;
  return k;
}

LayerShape LayerShape::From(const config::ModelConfig& model, const config::PlanConfig& plan, int64_t seq,
                            const config::ProfileConfig& profile) {
  LayerShape s;
  s.mamba = model.mamba;
  s.gdn = model.gdn;
  s.micro_batch = plan.micro_batch;
  s.seq = seq;
  s.hidden = model.hidden_size;
  s.ffn = model.intermediate_size;
  s.vocab = model.vocab_size;
  s.gated = model.gated_mlp();
  s.learned_positions = model.learned_position_embeddings;
  s.dropout = model.dropout;
  s.rms_norm = model.norm == config::NormKind::kRmsNorm;
  s.bias = model.mlp_bias;
  s.tp = plan.tp;
  s.sequence_parallel = plan.sequence_parallel && plan.tp > 1;
  s.recompute_modules = plan.recompute_modules;
  s.selective_policy = plan.selective_policy;
  s.sp_keeps_gathered_inputs = plan.sp_keeps_gathered_inputs;
  s.fp8_tp_gather = plan.fp8_tp_gather;
  s.fp8_params = plan.Fp8Weights();
  s.eager_modules = plan.eager_modules;
  s.fp8_casts = plan.fp8_casts;
  s.compiled_layers_only = plan.compiled_layers_only;
  s.loss_upcast = plan.loss_logits == config::LossLogits::kUpcast;
  s.repeat_kv_copies = plan.repeat_kv_copies;
  s.finetune = plan.finetune;

  s.attention.heads = model.num_attention_heads;
  s.attention.kv_heads = model.num_kv_heads;
  s.attention.head_dim = model.head_dim;
  s.attention.rope = model.position_embedding == config::PositionEmbedding::kRope;
  s.attention.flash = plan.attention != config::AttentionImpl::kUnfused;
  s.attention.kernel = plan.attention;
  s.attention.work_fraction = model.AttentionWorkFraction(seq);
  s.attention.output_gate = model.attn_output_gate;

  s.mla.enabled = model.is_mla();
  s.mla.q_lora_rank = model.q_lora_rank;
  s.mla.kv_lora_rank = model.kv_lora_rank;
  s.mla.qk_rope_dim = model.qk_rope_head_dim;
  s.mla.v_head_dim = model.v_head_dim;

  s.tp_overlap = plan.tp_comm_overlap;
  s.cp.size = plan.cp;
  s.cp.comm = plan.cp_comm;
  s.cp.torch_ring = plan.cp_torch_ring;

  s.kernels.precision = plan.precision;
  s.kernels.fused = plan.kernels == config::KernelFusion::kFused;
  for (config::EagerKernel k : config::kAllEagerKernels) {
    s.kernels.eager_efficiency[static_cast<int>(k)] = profile.EagerEfficiency(k);
  }
  return s;
}

}  // namespace stacksim::workload
