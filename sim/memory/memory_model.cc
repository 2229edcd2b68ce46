#include "sim/memory/memory_model.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdio>

#include "sim/memory/reserve.h"
#include "sim/util/error.h"
#include "sim/workload/lora.h"
#include "sim/workload/offload.h"
#include "sim/workload/pipeline_schedule.h"
#include "sim/workload/training_step.h"

namespace stacksim::memory {
namespace {

double D(int64_t v) { return static_cast<double>(v); }

// What a Megatron-Core MLA attention block (MLASelfAttention with Transformer
// Engine, flash attention) keeps for its backward, per TP rank; the core
// attention's log-sum-exp (or unfused scores) is added by the caller. `l` is
// the bytes per element of a saved linear input. `norm`: the input norm is
// recomputed (recompute module layernorm); `up_proj`: the up-projections and
// RoPE are (mla_up_proj).
double MlaAttentionActivations(const workload::LayerShape& s, double e, double l, bool norm, bool up_proj) {
  const double T = D(s.tokens());
  const double Tn = s.sequence_parallel ? T / s.tp : T;
  const double h = D(s.hidden);
  const double hr = D(s.attention.heads / s.tp);
  const double qk = D(s.attention.head_dim), v = D(s.mla.v_head_dim);
  const double latents = D(s.mla.q_lora_rank + s.mla.kv_lora_rank);  // no query latent without q_lora_rank
  const double mask = s.dropout ? 1.0 : 0.0;
  const bool fp8 = s.kernels.precision == config::Precision::kFp8;
  double a = e * Tn * h;                  // input norm's input (the residual stream)
  // The input norm's output, read by the two duplicated down-projections (or
  // W_Q and W_DKV): one shared 16-bit tensor, or each linear's own FP8 copy.
  // Recomputed, neither is kept (under FP8 the linears keep the 16-bit output,
  // which the recomputation discards: Megatron's set_save_original_input).
  if (!norm) a += (fp8 ? 2.0 : e) * Tn * h;
  a += e * Tn * latents;                  // down-projection outputs: the latent norms' inputs
  if (up_proj) {
    // Only the unit's inputs stay: the latents above and the RoPE key (all
    // tokens, gathered under SP), which K held before.
    a += e * T * D(s.mla.qk_rope_dim);
  } else {
    a += l * Tn * latents;                // normed latents, the up-projections' inputs (SP shard, re-gathered)
    a += e * T * hr * (2.0 * qk + v);     // Q, K (nope + rope wide) and V, flash attention's inputs
  }
  a += e * T * hr * v;                    // attention output O, kept by flash attention and read by W_O
  if (fp8) a += T * hr * v;               // W_O's own FP8 copy of O
  a += mask * Tn * h;                     // residual dropout mask
  return a;
}

// torchtitan's op-level selective checkpointing (config::SelectivePolicy
// kOpPolicy; torchtitan parallelize_llama.py _apply_ac_to_transformer_block,
// 2024-12): the block's input is the checkpoint's input; inside, the outputs
// of aten.mm are saved except every second one, in the block's order wq, wk,
// wv, wo, w1, (w3,) w2, so wk, wo and w3 are recomputed; SDPA's output and
// log-sum-exp are saved, and under TP the reduce-scatters' outputs (the
// sequence shards after wo and w2). Norms, RoPE, the activation and
// element-wise work are recomputed. Saved outputs are 16-bit: torchao's
// Float8Linear keeps high-precision tensors, so FP8 saves the same.
double OpPolicyActivations(const workload::LayerShape& s) {
  const double e = s.element_bytes();
  const double T = D(s.tokens());
  const double Tn = s.sequence_parallel ? T / s.tp : T;
  const double h = D(s.hidden);
  const double q = D(s.attention.heads / s.tp) * D(s.attention.head_dim);
  const double kv = D(std::max<int64_t>(1, s.attention.kv_heads / s.tp)) * D(s.attention.head_dim);
  const double f = D(s.ffn / s.tp);
  // The matrix multiplies' outputs in the block's order (row-parallel wo and
  // w2 produce the full-width partial sums before their reduction).
  std::vector<double> mm = {T * q, T * kv, T * kv, T * h, T * f};
  if (s.gated) mm.push_back(T * f);
  mm.push_back(T * h);
  double a = e * Tn * h;  // the checkpointed block's input
  for (size_t i = 0; i < mm.size(); i += 2) a += e * mm[i];  // the 1st, 3rd, 5th, ... mm
  a += e * T * q + 4.0 * T * D(s.attention.heads / s.tp);   // SDPA output and fp32 log-sum-exp
  if (s.tp > 1 && s.sequence_parallel) a += 2.0 * e * Tn * h;  // the reduce-scatters' outputs
  return a;
}

// MaxText's save_qkv_proj (config::SelectivePolicy kSaveQkvProj): the
// checkpointed layer's input and the query, key and value projections'
// outputs, 16-bit.
double SaveQkvProjActivations(const workload::LayerShape& s) {
  const double e = s.element_bytes();
  const double T = D(s.tokens());
  const double Tn = s.sequence_parallel ? T / s.tp : T;
  const double q = D(s.attention.heads / s.tp) * D(s.attention.head_dim);
  const double kv = D(std::max<int64_t>(1, s.attention.kv_heads / s.tp)) * D(s.attention.head_dim);
  return e * Tn * D(s.hidden) + e * T * (q + 2.0 * kv);
}

// What one layer's backward holds besides its saved activations: the output
// gradient coming in and the one going out (residual stream), and the MLP's
// widest gradients (FC2's input gradient and the activation's input
// gradient, both halves when gated).
double BackwardTransient(const workload::LayerShape& s) {
  const double e = s.element_bytes();
  const double T = D(s.tokens());
  const double Tn = s.sequence_parallel ? T / s.tp : T;
  const double f = D(s.ffn / s.tp);
  return 2.0 * e * Tn * D(s.hidden) + e * T * f * (s.gated ? 3.0 : 2.0);
}

}  // namespace

Bytes LayerActivations(const workload::LayerShape& s, config::Recompute recompute) {
  const double e = s.element_bytes();
  const double T = D(s.tokens());
  const double Tn = s.sequence_parallel ? T / s.tp : T;  // norm/dropout region
  const double h = D(s.hidden);
  const double q = D(s.attention.heads / s.tp) * D(s.attention.head_dim);
  const double kv = D(std::max<int64_t>(1, s.attention.kv_heads / s.tp)) * D(s.attention.head_dim);
  const double f = D(s.ffn / s.tp);
  const double mask = s.dropout ? 1.0 : 0.0;  // one byte per element
  // FP8 (Transformer Engine): the linear layers keep their inputs for the
  // weight gradient as FP8 (one byte); everything else stays 16-bit.
  const double l = s.kernels.precision == config::Precision::kFp8 ? 1.0 : e;
  if (recompute == config::Recompute::kFull) return Bytes{e * Tn * h};
  // The op policy for dense layers with standard attention; MoE and MLA
  // layers fall back to the module-based accounting below.
  const bool dense = s.kind == config::LayerKind::kDense;
  if (recompute == config::Recompute::kSelective && s.selective_policy == config::SelectivePolicy::kOpPolicy &&
      dense && !s.mla.enabled) {
    return Bytes{OpPolicyActivations(s)};
  }
  if (recompute == config::Recompute::kSelective && s.selective_policy == config::SelectivePolicy::kSaveQkvProj &&
      dense && !s.mla.enabled) {
    return Bytes{SaveQkvProjActivations(s)};
  }
  // Selective recomputation by module (Megatron-Core recompute_modules; see
  // workload::SelectiveRecompute for what each re-runs): a recomputed module
  // keeps only its input, which a neighbour usually keeps already.
  using config::RecomputeModule;
  auto recomputed = [&](RecomputeModule m) {
    return recompute == config::Recompute::kSelective && s.recompute_modules.Has(m);
  };

  // Attention block (Korthikanti et al. 2022, §4.1): norm input, QKV input,
  // Q and K, V, the projection's input (the attention output) and the
  // residual dropout mask. The input norm is fused into the QKV GEMM (TE's
  // LayerNormLinear keeps its output), so layernorm does not touch it.
  // The column-parallel linears' saved input: the SP shard (Megatron
  // re-gathers it for the weight gradient) or, under DTensor's SP, the
  // gathered tensor (plan.sp_keeps_gathered_inputs).
  const double Tin = s.sp_keeps_gathered_inputs ? T : Tn;
  using config::LayerKind;
  if (s.kind == LayerKind::kMamba) {
    // Mamba-2 block (mamba_ssm's mamba_split_conv1d_scan_combined, then TE's
    // out_proj): the block input, in_proj's input (kept by the fused
    // norm-linear), in_proj's output z x B C dt and the scan's output y (the
    // combined function recomputes the rest), out_proj's input.
    const double heads = D(s.mamba.heads / s.tp), groups = D(s.mamba.groups / s.tp);
    const double inner = heads * D(s.mamba.head_dim);
    const double in_proj = 2.0 * inner + 2.0 * groups * D(s.mamba.state) + heads;
    return Bytes{e * Tn * h + l * Tin * h + e * T * in_proj + e * T * inner + l * T * inner + mask * Tn * h};
  }
  const bool attention_block = s.kind == LayerKind::kDense || s.kind == LayerKind::kMoe || s.kind == LayerKind::kAttention;
  const bool mlp_block = s.kind != LayerKind::kAttention;
  double attn = 0;
  if (s.kind == LayerKind::kGdnDense || s.kind == LayerKind::kGdnMoe) {
    // Gated DeltaNet: the block input, in_proj's input and output, the
    // rule's q, k, v after the convolution, its output o, out_proj's input.
    const double vh = D(s.gdn.value_heads / s.tp), qk = D(s.gdn.key_heads / s.tp) * D(s.gdn.key_dim);
    const double v = vh * D(s.gdn.value_dim);
    attn = e * Tn * h + l * Tin * h + e * T * (2 * qk + 2 * v + 2 * vh) + e * T * (2 * qk + v) + e * T * v + l * T * v +
           mask * Tn * h;
  }
  if (attention_block) {
    attn = s.mla.enabled ? MlaAttentionActivations(s, e, l, recomputed(RecomputeModule::kLayerNorm),
                                                   recomputed(RecomputeModule::kMlaUpProj))
                         : e * Tn * h + l * Tin * h + e * T * (q + kv) + e * T * kv + l * T * q + mask * Tn * h;
    if (s.attention.output_gate) attn += e * T * q + e * T * q;  // the gate and the ungated output
  }
  const double scores = D(s.micro_batch) * D(s.attention.heads / s.tp) * D(s.seq) * D(s.seq);
  if (attention_block && s.attention.flash) {
    attn += 4.0 * D(s.tokens()) * D(s.attention.heads / s.tp);  // fp32 log-sum-exp per (local) row
  } else if (attention_block && !recomputed(RecomputeModule::kCoreAttn)) {
    attn += e * scores + mask * scores + e * scores;  // softmax output, dropout mask, dropout output: 5as^2b/t
  }
  if (s.moe.enabled) {
    // MoE block: norm input, router input and fp32 probabilities, the
    // dispatched token copies (the grouped FC1's input, as the busiest EP rank
    // receives them), the expert activation input (both halves when gated),
    // FC2's input, the expert outputs kept for the weighted combine, the
    // dropout mask; shared experts as a dense MLP of their width.
    const double Tl = s.routed_tokens();
    const double copies = D(s.tokens_per_local_expert()) * D(s.moe.local_experts());
    const double fe = D(s.moe.expert_ffn_shard());  // gathered copies x etp, 1/etp of the width
    const bool norm = recomputed(RecomputeModule::kLayerNorm);
    const bool whole = recomputed(RecomputeModule::kMoe);
    const bool shared = whole || recomputed(RecomputeModule::kSharedExperts);
    double moe = e * Tn * h + mask * Tn * h;
    // The norm's output is the MoE block's input (the router's, and the
    // checkpoint's under moe): gone only when the norm is recomputed.
    if (!norm) moe += e * Tl * h;
    if (!whole) {
      // Latent MoE: rows travel and experts work at the latent width; the
      // two latent projections keep their inputs.
      const double hm = D(s.moe_hidden());
      moe += 4.0 * Tl * D(s.moe.experts) + l * copies * hm + e * copies * fe * (s.gated ? 2 : 1) +
             e * Tl * D(s.moe.top_k) * hm;
      if (s.moe.latent > 0) moe += l * Tl * h + l * Tl * hm;
      if (!recomputed(RecomputeModule::kMoeAct)) moe += l * copies * fe;  // the activation's output
    }
    if (s.moe.shared_ffn > 0) {
      const double fs = D(s.moe.shared_ffn / s.tp);
      // Shared FC1's input is the norm's output (or its FP8 copy): dropped by
      // either recomputation.
      if (!norm && !shared) moe += l * Tn * h;
      if (!shared) moe += e * T * fs * (s.gated ? 2 : 1) + l * T * fs;
    }
    return Bytes{attn + moe};
  }
  if (!mlp_block) return Bytes{attn};
  // MLP block: norm input, FC1 input, activation input (both halves when
  // gated), FC2 input, dropout mask. Recomputed (mlp), the MLP module keeps
  // only its input, the norm's input (the norm is inside FC1).
  double mlp = e * Tn * h + mask * Tn * h;
  if (!recomputed(RecomputeModule::kMlp)) mlp += l * Tin * h + e * T * f * (s.gated ? 2 : 1) + l * T * f;
  return Bytes{attn + mlp};
}

namespace {

// What one layer's selective recomputation brings back during its backward:
// the recomputed modules' tensors, held until the layer's backward ends (as
// full recomputation holds one whole layer). core_attn's transient scores are
// left out, as Korthikanti et al. leave them out.
double RecomputedTransient(const workload::LayerShape& s) {
  if (s.selective_policy != config::SelectivePolicy::kModules && s.kind == config::LayerKind::kDense && !s.mla.enabled) {
    // Everything the policy recomputes is back during the layer's backward.
    return std::max(0.0, LayerActivations(s, config::Recompute::kNone).value -
                             LayerActivations(s, config::Recompute::kSelective).value);
  }
  workload::LayerShape kept = s;
  kept.recompute_modules = config::RecomputeModules{};
  if (s.recompute_modules.Has(config::RecomputeModule::kCoreAttn)) kept.recompute_modules.Add(config::RecomputeModule::kCoreAttn);
  return LayerActivations(kept, config::Recompute::kSelective).value -
         LayerActivations(s, config::Recompute::kSelective).value;
}

}  // namespace

Bytes RuntimeOverhead(const config::ScenarioConfig& s) {
  // The CUDA context, NCCL buffers and GEMM workspaces, each sized from its
  // source (reserve.cc); shown as "other".
  return RuntimeMemory(s).total();
}

std::vector<StageFootprint> EstimateMemory(const config::ScenarioConfig& s) {
  const auto& plan = s.plan;
  const int p = plan.pp;
  const auto layout = workload::PipelineLayout::Of(plan);
  const int v = layout.chunks();  // model chunks per rank (two model copies for DualPipe)
  const auto shape = workload::LayerShape::From(s.model, plan, s.seq_len, s.profile);
  const auto layers = workload::LayersPerVirtualStage(static_cast<int>(s.model.PipelineLayerCount()), p, layout.v);
  std::vector<int> first_layer(layers.size(), 0);
  for (size_t i = 1; i < layers.size(); ++i) first_layer[i] = first_layer[i - 1] + layers[i - 1];
  const auto schedule = workload::BuildSchedule(layout);
  const double e = shape.element_bytes();
  const double dp = plan.dp * plan.cp;  // optimizer state shards over dp x cp (same weights)
  const double layer_params = workload::LayerTrainableParameters(s.model, plan);  // LoRA: the adapters
  // MoE: the routed experts' optimizer state and gradients are sharded over
  // the expert-data-parallel group (tp x dp x cp / ep ranks hold the same experts).
  const double edp = D(plan.ExpertDpRanks());
  // One shape per layer kind (config::LayerKind), and the largest layer's
  // parameters on one GPU (a hybrid model's blocks differ).
  std::array<workload::LayerShape, config::kNumLayerKinds> kind_shape;
  for (int k = 0; k < config::kNumLayerKinds; ++k) {
    const auto kind = static_cast<config::LayerKind>(k);
    const bool moe = kind == config::LayerKind::kMoe || kind == config::LayerKind::kMoeBlock ||
                     kind == config::LayerKind::kGdnMoe;
    kind_shape[k] = moe && !s.model.is_moe() ? shape : shape.Kind(s.model, plan, kind);
  }
  double largest_layer = layer_params;
  for (int64_t l = 0; l < s.model.num_layers && s.model.is_moe(); ++l) {
    if (!s.model.IsMoeLayer(l)) continue;
    largest_layer = std::max(largest_layer, D(s.model.LayerParameterCount(l) - s.model.ExpertParameterCount()) / plan.tp +
                                                D(s.model.ExpertParameterCount()) / plan.ExpertShards());
    break;
  }
  if (s.model.is_hybrid()) {
    largest_layer = 0;
    for (int64_t l = 0; l < s.model.num_layers; ++l) {
      largest_layer = std::max(largest_layer, D(workload::LayerParametersPerGpu(s.model, plan, l)));
    }
  }
  std::vector<StageFootprint> out;
  for (int st = 0; st < p; ++st) {
    StageFootprint f;
    f.stage = st;
    // Trained parameters (LoRA / QLoRA: the adapters; MoE models are refused there).
    const double P = workload::StageTrainableParameters(s, st);
    const double Pe = D(workload::StageExpertParameters(s, st));
    const double Psharded = (P - Pe) / dp + Pe / edp;  // one rank's optimizer shard
    const double Pzero3 = (P - Pe) / plan.FsdpShardRanks() + Pe / edp;  // one rank's ZeRO-3 parameter shard
    // Moments and master weights per parameter (8 + 4 bytes unless the
    // framework keeps less: plan.optimizer_state; fp32 training has no copy).
    const double state = plan.optimizer_state.BytesPerParam(plan.precision);
    // Gradient buffers in the dtype the framework reduces and keeps them in
    // (Megatron's fp32 main gradients; bf16 in NeMo's performance recipes).
    const double g = config::PrecisionBytes(plan.GradReducePrecision());
    switch (plan.sharding) {
      case config::Sharding::kNone:
        f.weights = Bytes{e * P};
        f.gradients = Bytes{g * P};
        f.optimizer = Bytes{state * P};
        break;
      case config::Sharding::kZero1:
        f.weights = Bytes{e * P};
        f.gradients = Bytes{g * P};
        f.optimizer = Bytes{state * Psharded};
        break;
      case config::Sharding::kZero2:
        f.weights = Bytes{e * P};
        // Sharded gradients, plus one layer's full gradient before its reduce-scatter.
        f.gradients = Bytes{g * Psharded + g * largest_layer};
        f.optimizer = Bytes{state * Psharded};
        break;
      case config::Sharding::kZero3:
        if (p > 1 && !plan.fsdp_pp_reshard) {
          // torchtitan's FSDP2 under PP (parallelize_llama.py apply_fsdp:
          // reshard_after_forward=False with pipelining; the schedule syncs
          // gradients only on the last micro-batch): the gathered 16-bit
          // parameters and unsharded fp32 gradient accumulators (FSDP2
          // accumulates in reduce_dtype) stay through the step, plus one
          // layer's 16-bit gradient before it is added; fp32 parameters and
          // Adam state stay sharded.
          f.weights = Bytes{e * P};
          f.gradients = Bytes{4.0 * P + e * layer_params};
          f.optimizer = Bytes{state * Pzero3};
          break;
        }
        // Sharded weights plus the gathered layer in use and the one
        // prefetched. Dense parameters shard over the shard group x cp
        // (torchtitan's FSDP2 over dp_shard x cp; the whole dp x cp without
        // hybrid sharding), routed experts over the expert-data-parallel group.
        // Sharded gradients stay fp32, the sharded parameters' dtype (FSDP).
        f.weights = Bytes{e * Pzero3 + 2.0 * e * largest_layer};
        if (plan.precision == config::Precision::kFp8) f.weights += Bytes{(Pzero3 + 2.0 * largest_layer)};
        f.gradients = Bytes{4.0 * Pzero3 + 4.0 * largest_layer};
        f.optimizer = Bytes{state * Pzero3};
        break;
    }
    if (plan.finetune.frozen_base()) {
      // LoRA / QLoRA: the frozen weights beside the adapters' 16-bit copy
      // (above); ZeRO-3 shards them and gathers one layer in use and one
      // prefetched, as for trained weights. QLoRA also holds the 16-bit copy
      // of one dequantized linear weight at a time (workload/lora.h).
      const double frozen = workload::StageFrozenBytes(s, st, e);
      if (plan.sharding == config::Sharding::kZero3 && !(p > 1 && !plan.fsdp_pp_reshard)) {
        f.weights += Bytes{frozen / plan.FsdpShardRanks() + 2.0 * workload::LayerFrozenBytes(s.model, plan, e)};
      } else {
        f.weights += Bytes{frozen};
      }
      if (plan.finetune.method == config::FinetuneMethod::kQlora) {
        f.weights += Bytes{e * workload::LargestLinearElements(s.model, plan)};
      }
    }
    // FP8: Transformer Engine keeps an FP8 copy of the weights (one byte per
    // parameter) beside the 16-bit weights and fp32 master state. Counted for
    // every parameter (embedding and head stay 16-bit in TE; a small excess).
    // With FP8 weights (plan.fp8_params) there is no 16-bit copy: the FP8
    // data and the transpose Hopper's FP8 GEMMs need, 2 bytes a parameter.
    if (plan.precision == config::Precision::kFp8 && plan.sharding != config::Sharding::kZero3) {
      f.weights += Bytes{plan.Fp8Weights() ? (2.0 - e) * P : P};
    }
    // Offload (workload/offload.h): the host's share of the optimizer state
    // (fp32 master and moments) leaves GPU memory; with ZeRO-Infinity parameter
    // offload so does the 16-bit (and fp8) parameter shard, leaving the two
    // gathered layers. Gradient buffers stay (Megatron's main-grad buffer;
    // DeepSpeed streams gradients into host buffers, so conservative for it).
    // What the host and NVMe hold instead: EstimateOffload.
    f.optimizer = f.optimizer * workload::GpuOptimizerShare(plan);
    if (plan.offload_params != config::OffloadTarget::kNone) {
      f.weights = f.weights - Bytes{(e + (plan.precision == config::Precision::kFp8 ? 1.0 : 0.0)) * Pzero3};
    }
    // Activations: the peak number of chunk forwards awaiting their backward,
    // each holding its chunk's layers.
    int peak_chunks = workload::PeakInFlightChunks(schedule[st]);
    // Layers of each kind on this stage, and those of them recomputed whole
    // (all under full recomputation; the first recompute_layers of each
    // model chunk under the block method).
    std::array<double, config::kNumLayerKinds> stage_layers{}, recomputed_layers{};
    const std::vector<int> held = layout.StagesOfRank(st);
    for (int vs : held) {
      for (int l = first_layer[vs]; l < first_layer[vs] + layers[vs]; ++l) {
        stage_layers[static_cast<int>(s.model.LayerKindAt(l))] += 1;
        if (plan.RecomputesLayer(l - first_layer[vs])) recomputed_layers[static_cast<int>(s.model.LayerKindAt(l))] += 1;
      }
    }
    const bool has_embedding = std::find(held.begin(), held.end(), 0) != held.end();
    const bool has_head = std::find(held.begin(), held.end(), layout.stages() - 1) != held.end();
    double saved = 0;
    for (int k = 0; k < config::kNumLayerKinds; ++k) {
      if (stage_layers[k] == 0) continue;
      if (plan.recompute != config::Recompute::kFull) {
        saved += stage_layers[k] * LayerActivations(kind_shape[k], plan.recompute).value;
        continue;
      }
      saved += recomputed_layers[k] * LayerActivations(kind_shape[k], config::Recompute::kFull).value +
               (stage_layers[k] - recomputed_layers[k]) * LayerActivations(kind_shape[k], config::Recompute::kNone).value;
    }
    double act = peak_chunks / static_cast<double>(v) * saved;
    // LoRA / QLoRA: each adapter keeps lora_A's output h (tokens x r) for
    // dB; the inputs it keeps are the projections' own (counted above).
    if (plan.finetune.frozen_base() && stage_layers[0] > recomputed_layers[0]) {
      const double adapters = static_cast<double>(std::popcount(plan.finetune.targets));
      act += peak_chunks / static_cast<double>(v) * (stage_layers[0] - recomputed_layers[0]) * adapters * e *
             D(shape.tokens()) * D(plan.finetune.rank);
    }
    // The backward of one layer (after its recomputation) holds gradients of
    // its own beside the saved activations.
    const int moe_kind = static_cast<int>(s.model.is_hybrid() ? config::LayerKind::kMoeBlock : config::LayerKind::kMoe);
    act += BackwardTransient(stage_layers[moe_kind] > 0 ? kind_shape[moe_kind] : shape);
    // The layer being recomputed holds its full activations during its
    // backward; selective recomputation brings back its modules' tensors.
    double transient = 0;
    for (int k = 0; k < config::kNumLayerKinds; ++k) {
      if (plan.recompute == config::Recompute::kFull && (stage_layers[k] > 0 || (!s.model.is_hybrid() && k == 0))) {
        transient = std::max(transient, LayerActivations(kind_shape[k], config::Recompute::kNone).value);
      } else if (plan.recompute == config::Recompute::kSelective && stage_layers[k] > 0) {
        transient = std::max(transient, RecomputedTransient(kind_shape[k]));
      }
    }
    act += transient;
    const double T = D(shape.tokens());
    const double Tn = shape.sequence_parallel ? T / plan.tp : T;
    if (has_embedding) act += peak_chunks / static_cast<double>(v) * (e * Tn * D(s.model.hidden_size));  // embedding output
    if (has_head) {
      // The logits at the loss, one micro-batch (config::LossLogits):
      // Megatron-Core's in-place vocab-parallel cross entropy keeps the fp32
      // softmax and casts its in-place gradient back (e + 4 bytes per logit);
      // torchtitan's F.cross_entropy(pred.float()) holds three fp32 tensors
      // at the loss backward (12 bytes).
      const double per_logit = plan.loss_logits == config::LossLogits::kUpcast ? config::LossLogitBytes(plan.loss_logits)
                                                                             : e + 4.0;
      act += T * D(s.model.vocab_size / plan.tp) * per_logit;
    }
    f.activations = Bytes{act};
    f.in_flight_micro_batches = (peak_chunks + v - 1) / v;
    f.other = RuntimeOverhead(s);
    out.push_back(f);
  }
  return out;
}

// Host and NVMe bytes per GPU of each stage with offload. Host: the optimizer
// state (12 B/param: fp32 master and moments, ZeRO-Offload §4) when it is
// offloaded to host memory, the gradient buffer the GPU copies into (the
// reduced gradient's bytes), and with offload_params "host" the 16-bit
// parameter shard. NVMe: the optimizer state with offload_optimizer "nvme",
// the parameter shard with offload_params "nvme" (ZeRO-Infinity). Staging
// buffers (a few chunks) are not counted.
std::vector<OffloadFootprint> EstimateOffload(const config::ScenarioConfig& s) {
  const auto& plan = s.plan;
  std::vector<OffloadFootprint> out;
  if (plan.offload_optimizer == config::OffloadTarget::kNone) return out;
  // Ranks the dense optimizer shard spans (ZeRO-3: the shard group x cp).
  const double dp = plan.sharding == config::Sharding::kZero3 ? plan.FsdpShardRanks() : plan.dp * plan.cp;
  const double edp = D(plan.ExpertDpRanks());
  const double f = plan.offload_optimizer_fraction;
  for (int st = 0; st < plan.pp; ++st) {
    const double P = D(workload::StageParameters(s, st));
    const double Pe = D(workload::StageExpertParameters(s, st));
    const double shard = (P - Pe) / dp + Pe / edp;
    const double state = f * shard * workload::kOffloadStateBytesPerParam;
    const double params = shard * workload::OffloadParamBytes(plan);  // offload_params: zero3, f = 1
    OffloadFootprint o;
    o.stage = st;
    o.host = Bytes{f * shard * workload::OffloadGradientBytes(plan)};
    (plan.offload_optimizer == config::OffloadTarget::kHost ? o.host : o.nvme) += Bytes{state};
    if (plan.offload_params == config::OffloadTarget::kHost) o.host += Bytes{params};
    if (plan.offload_params == config::OffloadTarget::kNvme) o.nvme += Bytes{params};
    out.push_back(o);
  }
  return out;
}

OffloadPerNode OffloadOfFullestNode(const config::ScenarioConfig& s) {
  OffloadPerNode n;
  const auto per_stage = EstimateOffload(s);
  if (per_stage.empty()) return n;
  // Ranks in Megatron's order (tp fastest, pp slowest): a node's GPUs are
  // consecutive ranks, of one stage or (small stages) several.
  const int64_t per_stage_gpus = static_cast<int64_t>(s.plan.tp) * s.plan.cp * s.plan.dp;
  const int gpn = std::min(s.topology.gpus_per_node, s.gpus);
  for (int64_t first = 0; first < s.gpus; first += gpn) {
    Bytes host, nvme;
    for (int64_t r = first; r < std::min<int64_t>(first + gpn, s.gpus); ++r) {
      const auto& o = per_stage[static_cast<size_t>(r / per_stage_gpus)];
      host += o.host;
      nvme += o.nvme;
    }
    if (host > n.host) n.host = host;
    if (nvme > n.nvme) n.nvme = nvme;
  }
  return n;
}

void CheckOffloadCapacity(const config::ScenarioConfig& s, const std::string& file) {
  const auto& plan = s.plan;
  if (plan.offload_optimizer == config::OffloadTarget::kNone) return;
  const config::TopologyConfig& t = s.topology;
  const OffloadPerNode n = OffloadOfFullestNode(s);
  const std::string where =
      "topology " + t.name + (s.topology_file.empty() ? std::string() : " (" + s.topology_file + ")");
  auto gb = [](Bytes b) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f GB", b.value / 1e9);
    return std::string(buf);
  };
  const int gpn = std::min(t.gpus_per_node, s.gpus);
  if (t.host && n.host > t.host->memory) {
    const char* key = plan.offload_optimizer == config::OffloadTarget::kHost || plan.offload_params == config::OffloadTarget::kNone
                          ? "plan.offload_optimizer"
                          : "plan.offload_params";
    throw InputError(file, key,
                     "the offloaded state of one node's " + std::to_string(gpn) + " GPUs needs " + gb(n.host) +
                         " of host memory, more than node.host.memory (" + gb(t.host->memory) + ") of " + where);
  }
  if (t.nvme && n.nvme > t.nvme->capacity) {
    const char* key = plan.offload_optimizer == config::OffloadTarget::kNvme ? "plan.offload_optimizer"
                                                                            : "plan.offload_params";
    throw InputError(file, key,
                     "the state offloaded to NVMe by one node's " + std::to_string(gpn) + " GPUs needs " +
                         gb(n.nvme) + ", more than node.nvme.capacity (" + gb(t.nvme->capacity) + ") of " + where);
  }
}

}  // namespace stacksim::memory
