#include "sim/workload/recompute_modules.h"

#include <utility>

#include "sim/workload/attention.h"
#include "sim/workload/dense_mlp.h"
#include "sim/workload/layer_ops.h"
#include "sim/workload/mla.h"
#include "sim/workload/moe.h"
#include "sim/workload/op_builders.h"

namespace stacksim::workload {
namespace {

double D(int64_t v) { return static_cast<double>(v); }

// torchtitan's op-level selective policy (config::SelectivePolicy
// kOpPolicy; parallelize_llama.py _apply_ac_to_transformer_block): what the
// backward re-runs of a dense block. Every second matrix multiply of the
// block (wk, wo, w3 in a Llama block with separate wq/wk/wv and gated MLP;
// wk, wo, fc2 without the gate), the norms, RoPE, the activation and the
// residual adds; the sequence-parallel all-gathers before the
// column-parallel GEMMs are not saved, so they run again too. The saved
// mm outputs, SDPA and reduce-scatters are not re-run.
std::vector<Op> OpPolicyRecompute(const LayerShape& s) {
  const int64_t T = s.tokens();
  const int64_t q = QHeads(s) * s.attention.head_dim;
  const int64_t kv = KvHeads(s) * s.attention.head_dim;
  const int64_t f = s.ffn / s.tp;
  std::vector<Op> ops;
  // MLP side first (backward order).
  ops.push_back(NormForward("mlp-norm", s));
  AddGather(ops, "ag-mlp", s);
  if (s.gated) {
    AddForwardCasts(ops, "w3", T, f, s.hidden, 1, /*input_is_fp8=*/false, s);
    ops.push_back(Gemm("w3", T, f, s.hidden, 1, s));
    ops.push_back(Memory("swiglu", ActBytes(s, 3.0 * D(T) * D(f)), s, 1, ActivationKernel(s)));
  } else {
    ops.push_back(Memory("gelu", ActBytes(s, 2.0 * D(T) * D(f)), s, 1, ActivationKernel(s)));
    AddForwardCasts(ops, "fc2", T, s.hidden, f, 1, false, s);
    ops.push_back(Gemm("fc2", T, s.hidden, f, 1, s));
  }
  ops.push_back(ResidualForward("attn-residual", s));
  // Attention side.
  ops.push_back(NormForward("input-norm", s));
  AddGather(ops, "ag-attn", s);
  AddForwardCasts(ops, "wk", T, kv, s.hidden, 1, /*input_is_fp8=*/false, s);
  ops.push_back(Gemm("wk", T, kv, s.hidden, 1, s));
  if (s.attention.rope) ops.push_back(Rope("rope", s, /*backward=*/false));
  if (const double b = RepeatKvBytes(s); b > 0) ops.push_back(Memory("repeat-kv", b, s, 2));
  AddForwardCasts(ops, "wo", T, s.hidden, q, 1, false, s);
  ops.push_back(Gemm("wo", T, s.hidden, q, 1, s));
  return ops;
}

}  // namespace

std::vector<Op> AsRecompute(std::vector<Op> ops) {
  for (Op& op : ops) {
    op.name = "recompute-" + op.name;
    op.recompute = true;
  }
  return ops;
}

// Selective recomputation by module (Megatron-Core recompute_modules; DeepSeek-V3,
// arXiv:2412.19437 §3.2.3, recomputes every RMSNorm and the MLA
// up-projections). Output-discarding modules (layernorm, mla_up_proj, moe_act)
// keep their input and drop their output; checkpointed modules (core_attn,
// mlp, moe, shared_experts) keep their input and drop everything inside. Each
// re-runs its forward here, before the layer's backward, in backward order
// (the MLP side first). Megatron re-runs a unit when the backward reaches
// it; the difference within one layer is not modelled.
std::vector<Op> SelectiveRecompute(const LayerShape& s) {
  using config::LayerKind;
  using config::RecomputeModule;
  // Megatron-Core's recompute modules name parts of attention and MLP
  // blocks; a Mamba-2 block's norm is fused into in_proj, so none applies.
  if (s.kind == LayerKind::kMamba) return {};
  const bool dense = s.kind == LayerKind::kDense;
  if (s.selective_policy == config::SelectivePolicy::kOpPolicy && dense && !s.mla.enabled) {
    return AsRecompute(OpPolicyRecompute(s));
  }
  if (s.selective_policy == config::SelectivePolicy::kSaveQkvProj && dense && !s.mla.enabled) {
    // The whole forward again except the saved QKV projection and its casts.
    std::vector<Op> ops;
    for (Op& op : LayerForward(s)) {
      if (op.name != "qkv" && op.name.rfind("qkv-cast-", 0) != 0) ops.push_back(std::move(op));
    }
    return AsRecompute(std::move(ops));
  }
  const config::RecomputeModules& m = s.recompute_modules;
  const bool moe = s.moe.enabled;
  const bool mlp_block = s.kind != LayerKind::kAttention;
  const bool attention_block = s.kind == LayerKind::kDense || s.kind == LayerKind::kMoe || s.kind == LayerKind::kAttention;
  const int64_t T = s.tokens();
  const double Tn = NormTokens(s);
  std::vector<Op> ops;
  // MLP side. A MoE layer's norm is a module of its own; under FP8 the linear
  // layers it feeds then keep its 16-bit output instead of their FP8 copy
  // (Megatron's set_save_original_input) and cast it again for the backward.
  if (mlp_block && moe && m.Has(RecomputeModule::kLayerNorm)) {
    ops.push_back(NormForward("mlp-norm", s));
    if (s.moe.shared_ffn > 0 && !m.Has(RecomputeModule::kMoe) && !m.Has(RecomputeModule::kSharedExperts)) {
      AddCast(ops, "shared-fc1-cast-x", D(T) * D(s.hidden), s);
    }
  }
  if (mlp_block && !moe && m.Has(RecomputeModule::kMlp)) {
    ops.push_back(NormForward("mlp-norm", s));  // inside FC1 (TE LayerNormLinear)
    DenseMlpForward(ops, s);
  }
  if (mlp_block && moe && m.Has(RecomputeModule::kMoe)) {
    MoeForward(ops, s);
  } else if (mlp_block && moe) {
    if (m.Has(RecomputeModule::kMoeAct)) {
      // As MoeForward's expert activation; FC2 keeps the activation's 16-bit
      // output instead of its FP8 copy and casts it again.
      const size_t first_expert_op = ops.size();
      ops.push_back(ExpertActivation(s));
      AddCast(ops, "expert-fc2-cast-x", ExpertTokens(s) * D(s.moe.expert_ffn_shard()), s);
      MarkExpert(ops, first_expert_op);
    }
    if (m.Has(RecomputeModule::kSharedExperts)) SharedExpertForward(ops, s);
  }
  // Attention side.
  if (!attention_block) return AsRecompute(std::move(ops));
  if (m.Has(RecomputeModule::kCoreAttn) && !s.attention.flash) AttentionCoreForward(ops, s);
  if (s.mla.enabled && m.Has(RecomputeModule::kMlaUpProj)) MlaUpForward(ops, s, /*recompute=*/true);
  if (s.mla.enabled && m.Has(RecomputeModule::kLayerNorm)) {
    // MLA's input norm is a module of its own (the down-projections are plain
    // linears); without MLA it is fused into the QKV GEMM and stays.
    ops.push_back(NormForward("input-norm", s));
    if (s.mla.q_lora_rank > 0) {
      AddCast(ops, "q-down-cast-x", Tn * D(s.hidden), s);
    } else {
      AddCast(ops, "q-proj-cast-x", D(T) * D(s.hidden), s);
    }
    AddCast(ops, "kv-down-cast-x", Tn * D(s.hidden), s);
  }
  return AsRecompute(std::move(ops));
}

}  // namespace stacksim::workload
