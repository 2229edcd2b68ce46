#include "sim/workload/layer_ops.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace stacksim::workload {
namespace {

using config::Precision;
using trace::CollectiveKind;
using trace::OpClass;

double D(int64_t v) { return static_cast<double>(v); }

// GEMM precision: fp32 training runs its products on TF32 tensor cores.
Precision GemmPrecision(Precision p) { return p == Precision::kFp32 ? Precision::kTf32 : p; }

Op Gemm(const std::string& name, int64_t m, int64_t n, int64_t k, int64_t batch, const LayerShape& s) {
  Op op;
  op.name = name;
  op.role = trace::TaskRole::kGemm;
  op.compute.op_class = OpClass::kGemm;
  op.compute.precision = GemmPrecision(s.precision);
  op.compute.m = m;
  op.compute.n = n;
  op.compute.k = k;
  op.compute.batch = batch;
  op.compute.flops = Flops{2.0 * D(m) * D(n) * D(k) * D(batch)};
  // FP8 GEMMs read one-byte operands and write a 16-bit output.
  const double in_bytes = s.precision == Precision::kFp8 ? 1.0 : s.element_bytes();
  op.compute.bytes = Bytes{((D(m) * D(k) + D(k) * D(n)) * in_bytes + D(m) * D(n) * s.element_bytes()) * D(batch)};
  return op;
}

// A GEMM that stays 16-bit under FP8 training (Transformer Engine runs only
// the linear layers in FP8: attention, router and logits stay bf16).
LayerShape AsBf16(const LayerShape& s) {
  LayerShape b = s;
  if (b.precision == Precision::kFp8) b.precision = Precision::kBf16;
  return b;
}
Op Gemm16(const std::string& name, int64_t m, int64_t n, int64_t k, int64_t batch, const LayerShape& s) {
  return Gemm(name, m, n, k, batch, AsBf16(s));
}

// A memory-bound kernel moving `bytes` (as a fused kernel would). With eager
// kernels the same work runs as `eager_passes` times the bytes in
// `eager_kernels` generic kernels of the given kind.
Op Memory(const std::string& name, double bytes, const LayerShape& s, int kernels = 1,
          KernelKind kind = KernelKind::kElementwise, double eager_passes = 1.0, int eager_kernels = 0) {
  Op op;
  op.name = name;
  op.role = trace::TaskRole::kMemoryBound;
  op.compute.op_class = OpClass::kMemoryBound;
  op.compute.precision = s.precision;
  op.compute.bytes = Bytes{bytes};
  // FLOP counts cover matrix products only (the usual MFU/HFU convention).
  op.compute.flops = Flops{0};
  op.compute.kernels = static_cast<int16_t>(kernels);
  if (!s.fused_kernels) {
    op.compute.bytes = Bytes{bytes * eager_passes};
    op.compute.bandwidth_efficiency = static_cast<float>(EagerKernelEfficiency(kind));
    op.compute.kernels = static_cast<int16_t>(std::max(kernels, eager_kernels));
  }
  return op;
}

// FP8 casting (Transformer Engine, delayed scaling): a memory-bound kernel
// reads `elements` 16-bit values and writes them as FP8, recording the amax
// on the way (3 bytes per element). No-op unless training in FP8.
void AddCast(std::vector<Op>& ops, const std::string& name, double elements, const LayerShape& s) {
  if (s.precision != Precision::kFp8) return;
  ops.push_back(Memory(name, elements * (s.element_bytes() + 1.0), s, 1, KernelKind::kCast));
}

// FP8 casts before a linear GEMM y = x W (x: m x k, W: k x n, `batch` of
// them): the weight, once per micro-batch, and the input unless the fused
// norm before it already wrote it in FP8 (TE's LayerNormLinear).
void AddForwardCasts(std::vector<Op>& ops, const std::string& name, int64_t m, int64_t n, int64_t k, int64_t batch,
                     bool input_is_fp8, const LayerShape& s) {
  AddCast(ops, name + "-cast-w", D(k) * D(n) * D(batch), s);
  if (!input_is_fp8) AddCast(ops, name + "-cast-x", D(m) * D(k) * D(batch), s);
}

Op Collective(const std::string& name, CollectiveKind kind, double bytes, bool async = false) {
  Op op;
  op.is_collective = true;
  op.name = name;
  op.role = trace::TaskRole::kTpComm;
  op.collective = kind;
  op.bytes = Bytes{bytes};
  op.async = async;
  return op;
}

// Per-rank head counts: query heads split evenly; KV heads split, or
// replicated when there are fewer KV heads than TP ranks.
int64_t QHeads(const LayerShape& s) { return s.heads / s.tp; }
int64_t KvHeads(const LayerShape& s) { return std::max<int64_t>(1, s.kv_heads / s.tp); }
int64_t QkvWidth(const LayerShape& s) { return (QHeads(s) + 2 * KvHeads(s)) * s.head_dim; }
// Value (and attention output) width per head: narrower than the query/key
// width under MLA (128 vs 128 + 64 in DeepSeek-V3).
int64_t VDim(const LayerShape& s) { return s.mla ? s.v_head_dim : s.head_dim; }

// Tokens the norms, dropouts and residual adds touch on one rank.
double NormTokens(const LayerShape& s) {
  return s.sequence_parallel ? D(s.tokens()) / s.tp : D(s.tokens());
}

// The all-reduce after a row-parallel GEMM (or its reduce-scatter under SP).
void AddReduce(std::vector<Op>& ops, const std::string& name, const LayerShape& s) {
  if (s.tp == 1) return;
  double bytes = D(s.tokens()) * D(s.hidden) * s.element_bytes();
  ops.push_back(Collective(name, s.sequence_parallel ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce,
                           bytes));
}

// The all-gather before a column-parallel GEMM under SP.
void AddGather(std::vector<Op>& ops, const std::string& name, const LayerShape& s, bool async = false) {
  if (s.tp == 1 || !s.sequence_parallel) return;
  ops.push_back(Collective(name, CollectiveKind::kAllGather, D(s.tokens()) * D(s.hidden) * s.element_bytes(), async));
}

double ActBytes(const LayerShape& s, double elements) { return elements * s.element_bytes(); }

// Residual add with bias and dropout: reads x and the residual, writes the sum
// (and a one-byte dropout mask).
Op ResidualForward(const std::string& name, const LayerShape& s) {
  double n = NormTokens(s) * D(s.hidden);
  double fused = ActBytes(s, 3 * n) + (s.dropout ? n : 0);
  // Eager: bias add (read, write), dropout (read, write, mask), residual add
  // (two reads, one write), each its own kernel when present.
  double eager = ActBytes(s, 3 * n) + (s.bias ? ActBytes(s, 2 * n) : 0) + (s.dropout ? ActBytes(s, 2 * n) + n : 0);
  int kernels = 1 + (s.bias ? 1 : 0) + (s.dropout ? 1 : 0);
  return Memory(name, fused, s, 1, s.dropout ? KernelKind::kDropout : KernelKind::kElementwise, eager / fused, kernels);
}

KernelKind NormKernel(const LayerShape& s) { return s.rms_norm ? KernelKind::kRmsNorm : KernelKind::kLayerNorm; }

Op NormForward(const std::string& name, const LayerShape& s) {
  double n = NormTokens(s) * D(s.hidden);
  return Memory(name, ActBytes(s, 2 * n), s, 1, NormKernel(s));
}

// Norm backward reads x and dy, writes dx, and adds the residual branch's gradient.
Op NormBackward(const std::string& name, const LayerShape& s) {
  double n = NormTokens(s) * D(s.hidden);
  return Memory(name, ActBytes(s, 4 * n), s, 2, NormKernel(s));
}

Op ResidualBackward(const std::string& name, const LayerShape& s) {
  double n = NormTokens(s) * D(s.hidden);
  double fused = ActBytes(s, 3 * n) + (s.dropout ? n : 0);
  double eager = fused + (s.bias ? ActBytes(s, 2 * n) : 0);  // bias gradient: a separate reduction
  return Memory(name, fused, s, 1, s.dropout ? KernelKind::kDropout : KernelKind::kElementwise, eager / fused,
                1 + (s.bias ? 1 : 0));
}

// One fused attention kernel over the micro-batch's heads on this rank: two
// products of 2*s*s*d per head forward, halved by the causal mask; the
// backward runs five (S recomputed, dP, dV, dQ, dK): 2.5x (Dao 2023).
Op FlashAttention(const LayerShape& s, bool backward) {
  const int64_t bh = s.micro_batch * QHeads(s);
  // Q and K are head_dim wide, V and O VDim (different under MLA).
  const double q = D(s.tokens()) * D(QHeads(s)) * D(s.head_dim);
  const double o = D(s.tokens()) * D(QHeads(s)) * D(VDim(s));
  const double k = D(s.tokens()) * D(KvHeads(s)) * D(s.head_dim);
  const double v = D(s.tokens()) * D(KvHeads(s)) * D(VDim(s));
  Op op;
  op.name = backward ? "attention-bwd" : "attention";
  op.role = trace::TaskRole::kAttention;
  op.compute.op_class = OpClass::kAttention;
  op.compute.precision = AsBf16(s).precision;  // TE keeps attention in bf16 under FP8
  // Under CP (ring attention) this rank's seq/cp queries meet all seq keys;
  // with two chunks per rank (Megatron's causal load balancing) every rank
  // does 1/cp of the causal work.
  op.compute.m = s.seq / s.cp;
  op.compute.n = s.seq;
  op.compute.k = s.head_dim;
  op.compute.batch = bh;
  op.compute.causal = true;
  op.compute.backward = backward;
  op.compute.flash2 = s.flash2;
  // Forward: QK^T over head_dim and PV over VDim. Backward: S = QK^T, dQ =
  // dS K and dK = dS^T Q over head_dim; dP = dO V^T and dV = P^T dO over VDim.
  const double pair = 2.0 * D(bh) * D(s.seq) * D(s.seq) * 0.5 / s.cp;  // one s x s product per unit width
  const double dqk = D(s.head_dim), dv = D(VDim(s));
  op.compute.flops = Flops{backward ? pair * (3.0 * dqk + 2.0 * dv) : pair * (dqk + dv)};
  // Reads Q, K, V (and O, dO backward), writes O (dQ, dK, dV backward); under
  // CP the K/V blocks of all cp ranks pass through.
  op.compute.bytes = Bytes{ActBytes(s, backward ? 2 * q + 2 * o + 2 * (k + v) * s.cp : q + o + (k + v) * s.cp)};
  return op;
}

// Ring attention's K/V exchange (Liu et al. 2023; Megatron-Core CP): cp-1
// send/recv steps of the local K and V blocks around the CP ring, overlapped
// with the attention of the block already held. Modelled as one all-gather of
// the whole sequence's K and V (each rank sends and receives (cp-1)/cp of
// it) on the side stream; the op after attention waits for it, so the step
// costs max(attention, exchange). The backward also sends the dK/dV partial
// sums around the ring: twice the bytes.
//
// All-gather CP (Llama 3, arXiv:2407.21783 §3.3.2): K and V of the whole
// sequence are all-gathered before attention, on the compute stream (the
// attention needs all of it first: not overlapped; small with GQA). The
// backward gathers them again (Transformer Engine's AttnFuncWithCPAndKVAllGather
// keeps only the local K/V for the backward) and AddCpGradReduceScatter returns
// each rank its share of the full-sequence dK/dV.
Op CpKvExchange(const LayerShape& s, bool backward) {
  const double kv_local = 2.0 * D(s.tokens()) * D(KvHeads(s)) * D(s.head_dim);  // K and V
  if (s.cp_comm == config::CpComm::kAllGather) {
    Op op = Collective(backward ? "cp-kv-allgather-bwd" : "cp-kv-allgather", CollectiveKind::kAllGather,
                       ActBytes(s, kv_local * s.cp));
    op.cp_group = true;
    return op;
  }
  Op op = Collective(backward ? "cp-kv-exchange-bwd" : "cp-kv-exchange", CollectiveKind::kAllGather,
                     ActBytes(s, kv_local * s.cp) * (backward ? 2.0 : 1.0), /*async=*/true);
  op.cp_group = true;
  return op;
}

// All-gather CP's backward: dK and dV of the whole sequence, computed by
// every rank's attention backward for its local queries, reduce-scattered so
// each rank keeps the sum for its own tokens (buffer: the full dK/dV).
void AddCpGradReduceScatter(std::vector<Op>& ops, const LayerShape& s) {
  if (s.cp == 1 || s.cp_comm != config::CpComm::kAllGather || !s.flash_attention) return;
  const double kv_local = 2.0 * D(s.tokens()) * D(KvHeads(s)) * D(s.head_dim);
  Op op = Collective("cp-dkv-reduce-scatter", CollectiveKind::kReduceScatter, ActBytes(s, kv_local * s.cp));
  op.cp_group = true;
  ops.push_back(op);
}

void AttentionCoreForward(std::vector<Op>& ops, const LayerShape& s) {
  const int64_t bh = s.micro_batch * QHeads(s);
  if (s.flash_attention) {
    if (s.cp > 1) ops.push_back(CpKvExchange(s, /*backward=*/false));
    ops.push_back(FlashAttention(s, /*backward=*/false));
    return;
  }
  // Unfused (Megatron-LM 2021-22): batched QK^T, fused scale-mask-softmax with
  // dropout, then probabilities times V; the full s x s square is computed.
  const double scores = D(bh) * D(s.seq) * D(s.seq);
  Op qk = Gemm16("attention-qk", s.seq, s.seq, s.head_dim, bh, s);
  qk.role = trace::TaskRole::kAttention;
  ops.push_back(qk);
  Op softmax = Memory("softmax", ActBytes(s, 2 * scores) + (s.dropout ? scores + ActBytes(s, scores) : 0), s, 1,
                      KernelKind::kSoftmax);
  softmax.role = trace::TaskRole::kAttention;
  ops.push_back(softmax);
  Op pv = Gemm16("attention-pv", s.seq, VDim(s), s.seq, bh, s);
  pv.role = trace::TaskRole::kAttention;
  ops.push_back(pv);
}

void AttentionCoreBackward(std::vector<Op>& ops, const LayerShape& s) {
  const int64_t bh = s.micro_batch * QHeads(s);
  if (s.flash_attention) {
    if (s.cp > 1) ops.push_back(CpKvExchange(s, /*backward=*/true));
    ops.push_back(FlashAttention(s, /*backward=*/true));
    return;
  }
  const double scores = D(bh) * D(s.seq) * D(s.seq);
  Op pv_dgrad = Gemm16("attention-pv-dgrad", s.seq, s.seq, VDim(s), bh, s);  // dP = dO V^T
  Op pv_wgrad = Gemm16("attention-pv-dv", s.seq, VDim(s), s.seq, bh, s);     // dV = P^T dO
  Op softmax = Memory("softmax-bwd", ActBytes(s, 3 * scores) + (s.dropout ? scores : 0), s, 1, KernelKind::kSoftmax);
  Op qk_dq = Gemm16("attention-qk-dq", s.seq, s.head_dim, s.seq, bh, s);        // dQ = dS K
  Op qk_dk = Gemm16("attention-qk-dk", s.seq, s.head_dim, s.seq, bh, s);        // dK = dS^T Q
  for (Op* op : {&pv_dgrad, &pv_wgrad, &softmax, &qk_dq, &qk_dk}) {
    op->role = trace::TaskRole::kAttention;
    ops.push_back(*op);
  }
}

// Backward of a GEMM y = x W (x: m x k, W: k x n): dgrad dx = dy W^T and
// wgrad dW = x^T dy.
void GemmBackward(std::vector<Op>& ops, const std::string& name, int64_t m, int64_t n, int64_t k,
                  const LayerShape& s, int wait_for = -1) {
  AddCast(ops, name + "-cast-dy", D(m) * D(n), s);  // FP8 (e5m2) output gradient
  ops.push_back(Gemm(name + "-dgrad", m, k, n, 1, s));
  Op w = Gemm(name + "-wgrad", k, n, m, 1, s);
  w.wait_for = wait_for;
  w.weight_grad = true;
  ops.push_back(w);
}

// Multi-head latent attention around the core attention (DeepSeek-V2,
// arXiv:2405.04434 §2.1; Megatron-Core MLASelfAttention with Transformer
// Engine). The down-projections are "duplicated" linears: every TP rank runs
// them on its own tokens (its sequence-parallel shard under SP, all tokens
// otherwise). The latent RMSNorms are fused into the up-projections'
// LayerNormColumnParallelLinear, so under SP the all-gather moves the normed
// latents and the RoPE key, not the hidden state.
int64_t MlaQueryInput(const LayerShape& s) { return s.q_lora_rank > 0 ? s.q_lora_rank : s.hidden; }
int64_t MlaKvDownWidth(const LayerShape& s) { return s.kv_lora_rank + s.qk_rope_dim; }
const char* MlaQueryName(const LayerShape& s) { return s.q_lora_rank > 0 ? "q-up" : "q-proj"; }

// RoPE and assembly of the attention inputs: rotate q_pe and k_pe, write
// Q = [q_nope, q_pe] and K = [k_nope, k_pe] (k_pe broadcast over the heads)
// and V split out of the KV up-projection. Reads Q, the KV up-projection's
// output and k_pe; writes Q, K, V (Megatron-Core's fused MLA RoPE: one
// kernel for Q, one for K/V). The backward moves the same bytes.
Op MlaRope(const LayerShape& s, bool backward) {
  const double T = D(s.tokens());
  const double hr = D(QHeads(s));
  const double nope = D(s.head_dim - s.qk_rope_dim);
  const double q = T * hr * D(s.head_dim);
  const double kv_up = T * hr * (nope + D(s.v_head_dim));
  const double kv_out = T * hr * (D(s.head_dim) + D(s.v_head_dim));
  return Memory(backward ? "mla-rope-bwd" : "mla-rope", ActBytes(s, 2.0 * q + kv_up + T * D(s.qk_rope_dim) + kv_out),
                s, 2);
}

// The down-projections: from the input norm's output to the latents.
void MlaDownForward(std::vector<Op>& ops, const LayerShape& s) {
  const int64_t Tn = static_cast<int64_t>(NormTokens(s));
  if (s.q_lora_rank > 0) {
    AddForwardCasts(ops, "q-down", Tn, s.q_lora_rank, s.hidden, 1, /*input_is_fp8=*/false, s);
    ops.push_back(Gemm("q-down", Tn, s.q_lora_rank, s.hidden, 1, s));
  }
  AddForwardCasts(ops, "kv-down", Tn, MlaKvDownWidth(s), s.hidden, 1, /*input_is_fp8=*/false, s);
  ops.push_back(Gemm("kv-down", Tn, MlaKvDownWidth(s), s.hidden, 1, s));
}

// From the latents to Q, K, V: latent norms, the SP all-gather, the
// up-projections and RoPE, which is Megatron-Core's mla_up_proj recompute
// unit (MLASelfAttention's qkv_up_proj_and_rope_apply). Recomputed, the
// gather moves only the latents: the RoPE key was gathered in the forward and
// kept as the unit's input.
void MlaUpForward(std::vector<Op>& ops, const LayerShape& s, bool recompute = false) {
  const int64_t T = s.tokens();
  const int64_t Tn = static_cast<int64_t>(NormTokens(s));
  const int64_t hr = QHeads(s);
  const int64_t nope = s.head_dim - s.qk_rope_dim;
  if (s.q_lora_rank > 0) {
    ops.push_back(Memory("q-norm", ActBytes(s, 2.0 * D(Tn) * D(s.q_lora_rank)), s, 1, NormKernel(s)));
  }
  ops.push_back(Memory("kv-norm", ActBytes(s, 2.0 * D(Tn) * D(s.kv_lora_rank)), s, 1, NormKernel(s)));
  if (s.tp > 1 && s.sequence_parallel) {
    const int64_t gathered = MlaQueryInput(s) + (recompute ? s.kv_lora_rank : MlaKvDownWidth(s));
    ops.push_back(Collective("ag-attn", CollectiveKind::kAllGather, ActBytes(s, D(T) * D(gathered))));
  }
  // The query input is the fused norm's FP8 output, except without query
  // compression (W_Q reads the input norm's output).
  AddForwardCasts(ops, MlaQueryName(s), T, hr * s.head_dim, MlaQueryInput(s), 1, s.q_lora_rank > 0, s);
  ops.push_back(Gemm(MlaQueryName(s), T, hr * s.head_dim, MlaQueryInput(s), 1, s));
  AddForwardCasts(ops, "kv-up", T, hr * (nope + s.v_head_dim), s.kv_lora_rank, 1, /*input_is_fp8=*/true, s);
  ops.push_back(Gemm("kv-up", T, hr * (nope + s.v_head_dim), s.kv_lora_rank, 1, s));
  ops.push_back(MlaRope(s, /*backward=*/false));
}

// From the input norm's output to Q, K, V.
void MlaForward(std::vector<Op>& ops, const LayerShape& s) {
  MlaDownForward(ops, s);
  MlaUpForward(ops, s);
}

// From the gradients of Q, K, V back to the input norm's output.
void MlaBackward(std::vector<Op>& ops, const LayerShape& s) {
  const int64_t T = s.tokens();
  const int64_t Tn = static_cast<int64_t>(NormTokens(s));
  const int64_t hr = QHeads(s);
  const int64_t nope = s.head_dim - s.qk_rope_dim;
  ops.push_back(MlaRope(s, /*backward=*/true));
  // SP: the up-projections' weight gradients need the gathered normed latents
  // again, re-gathered beside the data gradients (as for QKV).
  int regather = -1;
  if (s.tp > 1 && s.sequence_parallel) {
    ops.push_back(Collective("ag-attn-input", CollectiveKind::kAllGather,
                             ActBytes(s, D(T) * D(MlaQueryInput(s) + s.kv_lora_rank)), /*async=*/true));
    regather = static_cast<int>(ops.size()) - 1;
  }
  GemmBackward(ops, "kv-up", T, hr * (nope + s.v_head_dim), s.kv_lora_rank, s, regather);
  GemmBackward(ops, MlaQueryName(s), T, hr * s.head_dim, MlaQueryInput(s), s, regather);
  // Each rank's column-parallel up-projections give its heads' share of the
  // latent and RoPE-key gradients: summed over TP (reduce-scattered to the
  // shard under SP) before the replicated down-projections.
  if (s.tp > 1) {
    ops.push_back(Collective("tp-attn-grad",
                             s.sequence_parallel ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce,
                             ActBytes(s, D(T) * D(MlaQueryInput(s) + MlaKvDownWidth(s)))));
  }
  // Latent norm backward: read x and dy, write dx.
  if (s.q_lora_rank > 0) {
    ops.push_back(Memory("q-norm-bwd", ActBytes(s, 3.0 * D(Tn) * D(s.q_lora_rank)), s, 2, NormKernel(s)));
  }
  ops.push_back(Memory("kv-norm-bwd", ActBytes(s, 3.0 * D(Tn) * D(s.kv_lora_rank)), s, 2, NormKernel(s)));
  GemmBackward(ops, "kv-down", Tn, MlaKvDownWidth(s), s.hidden, s);
  if (s.q_lora_rank > 0) GemmBackward(ops, "q-down", Tn, s.q_lora_rank, s.hidden, s);
}

// Backward of a batched GEMM (one per local expert). dy_is_fp8: the output
// gradient arrives in FP8 already (no cast).
void GroupedGemmBackward(std::vector<Op>& ops, const std::string& name, int64_t m, int64_t n, int64_t k,
                         int64_t batch, const LayerShape& s, bool dy_is_fp8 = false) {
  if (!dy_is_fp8) AddCast(ops, name + "-cast-dy", D(m) * D(n) * D(batch), s);
  ops.push_back(Gemm(name + "-dgrad", m, k, n, batch, s));
  Op w = Gemm(name + "-wgrad", k, n, m, batch, s);
  w.weight_grad = true;
  ops.push_back(w);
}

// ---- MoE token dispatch ----
//
// Two dispatchers (plan.moe_dispatcher):
// - alltoall, Megatron-Core's MoEAlltoAllTokenDispatcher (Megatron-LM
//   megatron/core/transformer/moe/token_dispatcher.py, v0.13+): count tokens
//   per expert, all-gather the counts over the EP group, copy them to the
//   host and wait ("before_ep_alltoall"), permute the routed copies into
//   expert order (permutation 1), all-to-all the tokens and, separately,
//   their router probabilities, sort the received chunks by local expert
//   (permutation 2); the combine mirrors it without the host sync. Every
//   routed copy travels on its own, in bf16 (Transformer Engine quantizes
//   inside the grouped GEMM).
// - hierarchical, DeepSeek-V3 (arXiv:2412.19437 §3.2.2) as DeepEP's normal
//   kernels run it: a layout kernel, a host wait for the received counts,
//   then each token goes once to every destination GPU (once per node over
//   IB, forwarded over NVLink), and the receiving GPU expands it into one row
//   per local expert; the combine sums a GPU's expert outputs per token
//   before sending it back. Under FP8 training the dispatch (and the output
//   gradient sent to the experts in the backward) moves FP8 with 1x128 tile
//   scales; the combine stays bf16 (§3.3.2).

// GPU idle per host synchronisation of the token dispatcher. Once the host
// has waited for the token counts the GPU runs dry until the host issues the
// next work: about one device-to-host round trip. ASSUMPTION: 26 us, the
// round trip measured on bare-metal Linux with an RTX 3090 (jingyaogong/
// minimind PR #837, "device->host round trip: 26.11 us"); not measured on a
// Hopper node (a calibrate candidate). Megatron issues permutation 1 before it
// waits, so the length of that kernel hides part of it: not modelled (an
// upper bound by at most one permute per dispatch).
constexpr double kDispatchHostSyncUs = 26.0;

// FP8 dispatch: one fp32 scale per 1x128 tile of the activation (DeepSeek-V3
// §3.3.2, fine-grained quantization).
constexpr double kFp8TileScaleBytes = 4.0 / 128;

bool Hierarchical(const LayerShape& s) { return s.dispatcher == config::MoeDispatcher::kHierarchical; }
bool Fp8Dispatch(const LayerShape& s) { return Hierarchical(s) && s.precision == Precision::kFp8; }

// Bytes per element of a dispatched token row; `toward_experts`: the forward
// dispatch and the backward's output gradient sent to the experts.
double DispatchElementBytes(const LayerShape& s, bool toward_experts) {
  return toward_experts && Fp8Dispatch(s) ? 1.0 + kFp8TileScaleBytes : s.element_bytes();
}

// Token rows this rank's dispatch delivers per micro-batch: every routed copy
// (alltoall), or one per distinct destination GPU (hierarchical).
double DispatchRows(const LayerShape& s) {
  const double Tl = s.routed_tokens();
  if (!Hierarchical(s)) return Tl * D(s.top_k);
  return Tl * ExpectedDistinctUnits(s.experts, s.top_k, s.ep, s.expert_groups, s.expert_groups_per_token);
}

// Hierarchical: rows this rank sends off its node, one per distinct remote
// destination node. A token's own node is among its D destination nodes with
// probability D/n by symmetry, so (n-1)/n of them are remote.
double ScaleOutRows(const LayerShape& s) {
  const int n = s.ep_nodes();
  if (n <= 1) return 0;
  const double nodes = ExpectedDistinctUnits(s.experts, s.top_k, n, s.expert_groups, s.expert_groups_per_token);
  return s.routed_tokens() * nodes * (n - 1.0) / n;
}

// The dispatch or combine all-to-all of token rows; the busiest rank
// receives load_factor times the mean, which sets the pace.
Op EpAllToAll(const std::string& name, const LayerShape& s, bool toward_experts) {
  const double row = D(s.hidden) * DispatchElementBytes(s, toward_experts) * s.load_factor;
  Op op = Collective(name, CollectiveKind::kAllToAll, DispatchRows(s) * row);
  if (Hierarchical(s)) op.scale_out_bytes = Bytes{ScaleOutRows(s) * row};
  op.role = trace::TaskRole::kEpComm;
  op.ep_group = true;
  return op;
}

// Megatron's second all-to-all of a dispatch: the routed copies' fp32 router
// probabilities (applied in the expert activation since Megatron-Core 0.13).
Op EpProbsAllToAll(const std::string& name, const LayerShape& s) {
  Op op = Collective(name, CollectiveKind::kAllToAll, s.routed_tokens() * D(s.top_k) * 4.0 * s.load_factor);
  op.role = trace::TaskRole::kEpComm;
  op.ep_group = true;
  return op;
}

Op HostSync(const std::string& name) {
  Op op;
  op.name = name;
  op.role = trace::TaskRole::kHostSync;
  op.host_wait = Time::Us(kDispatchHostSyncUs);
  return op;
}

// Router: logits GEMM (bf16), then the top-k over the softmax scores,
// writing the [tokens, experts] fp32 probabilities and bool routing map (one
// fused Transformer Engine kernel, fused_topk_with_score_function; eager:
// softmax, topk and two scatters), and the load-balancing auxiliary loss
// (scores for the loss, tokens per expert, the loss: three fused kernels).
// ASSUMPTION: every MoE model trains with an auxiliary loss (Mixtral, Qwen3,
// GPT-OSS recipes; DeepSeek-V3's sequence-wise one costs the same).
void RouterForward(std::vector<Op>& ops, const LayerShape& s) {
  const double Tl = s.routed_tokens();
  const double te = Tl * D(s.experts);
  const double eb = s.element_bytes();
  ops.push_back(Gemm16("router", static_cast<int64_t>(std::ceil(Tl)), s.experts, s.hidden, 1, s));
  ops.push_back(Memory("router-topk", te * (eb + 4.0 + 1.0) + Tl * D(s.top_k) * 8.0, s, 1, KernelKind::kSoftmax,
                       2.0, 4));
  ops.push_back(Memory("router-aux-loss", te * (eb + 4.0 + 4.0 + 1.0), s, 3, KernelKind::kSoftmax, 1.0, 6));
}

// Gradients of both router paths to the logits (aux loss: read scores and
// their gradient, write the logits' gradient; top-k: the same from the
// probabilities' gradient, plus the sum of the two), then the GEMM's.
void RouterBackward(std::vector<Op>& ops, const LayerShape& s) {
  const double Tl = s.routed_tokens();
  const double te = Tl * D(s.experts);
  const double eb = s.element_bytes();
  ops.push_back(Memory("router-aux-loss-bwd", te * (4.0 + 4.0 + eb), s, 2, KernelKind::kSoftmax));
  ops.push_back(Memory("router-topk-bwd", te * (4.0 + 4.0 + 1.0 + eb) + te * 3.0 * eb, s, 2, KernelKind::kSoftmax));
  GemmBackward(ops, "router", static_cast<int64_t>(std::ceil(Tl)), s.experts, s.hidden, AsBf16(s));
}

// Marks ops[from...] as the routed experts' own work.
void MarkExpert(std::vector<Op>& ops, size_t from) {
  for (size_t i = from; i < ops.size(); ++i) ops[i].expert = true;
}

// Per-expert element counts on the busiest rank.
double ExpertTokens(const LayerShape& s) { return D(s.tokens_per_local_expert()) * D(s.local_experts()); }

// Routed copies (rows) the busiest rank's local experts take.
double ExpertRows(const LayerShape& s) { return s.routed_tokens() * D(s.top_k) * s.load_factor; }

void SharedExpertForward(std::vector<Op>& ops, const LayerShape& s) {
  if (s.shared_ffn <= 0) return;
  const int64_t T = s.tokens();
  const int64_t f = s.shared_ffn / s.tp;
  AddGather(ops, "ag-shared", s);
  AddForwardCasts(ops, "shared-fc1", T, (s.gated ? 2 : 1) * f, s.hidden, 1, false, s);
  ops.push_back(Gemm("shared-fc1", T, (s.gated ? 2 : 1) * f, s.hidden, 1, s));
  ops.push_back(Memory("shared-act", ActBytes(s, (s.gated ? 3.0 : 2.0) * D(T) * D(f)), s, 1,
                       s.gated ? KernelKind::kGatedActivation : KernelKind::kGelu));
  AddForwardCasts(ops, "shared-fc2", T, s.hidden, f, 1, false, s);
  ops.push_back(Gemm("shared-fc2", T, s.hidden, f, 1, s));
  AddReduce(ops, "tp-shared", s);
}

void SharedExpertBackward(std::vector<Op>& ops, const LayerShape& s) {
  if (s.shared_ffn <= 0) return;
  const int64_t T = s.tokens();
  const int64_t f = s.shared_ffn / s.tp;
  AddGather(ops, "ag-shared-grad", s);
  GemmBackward(ops, "shared-fc2", T, s.hidden, f, s);
  ops.push_back(Memory("shared-act-bwd", ActBytes(s, (s.gated ? 5.0 : 3.0) * D(T) * D(f)), s, 1,
                       s.gated ? KernelKind::kGatedActivation : KernelKind::kGelu));
  AddGather(ops, "ag-shared-input", s);
  GemmBackward(ops, "shared-fc1", T, (s.gated ? 2 : 1) * f, s.hidden, s);
  AddReduce(ops, "tp-shared-grad", s);
}

// Megatron-Core's sort of the received chunks by local expert
// (sort_chunks_by_idxs, Transformer Engine's moe_sort_chunks_by_index: a map
// kernel and the copy), and the reverse before the combine: read and write
// every received row and its probability. Only when tokens arrive from
// several ranks for several local experts.
void AddSortChunks(std::vector<Op>& ops, const std::string& name, const LayerShape& s) {
  if (Hierarchical(s) || s.ep <= 1 || s.local_experts() <= 1) return;
  ops.push_back(Memory(name, ExpertRows(s) * (2.0 * D(s.hidden) * s.element_bytes() + 8.0), s, 2));
}

// Alltoall dispatcher, token counting (MoEAlltoAllTokenDispatcher.preprocess):
// routing_map.sum over tokens, then the splits and per-local-expert counts
// (seven small PyTorch kernels, counted in the code), with the counts
// all-gathered over the EP group (ep x experts int64), copied to the host and
// waited for. Then permutation 1 (Transformer Engine moe_permute with a
// routing map): three kernels build the [tokens, experts] int32 row map
// (read the bool map, write the row map, read-modify-write it), one gathers
// the rows: read each token once, write its top_k copies and their
// probabilities.
void AlltoAllDispatchPrologue(std::vector<Op>& ops, const LayerShape& s) {
  const double Tl = s.routed_tokens();
  const double te = Tl * D(s.experts);
  const double h = D(s.hidden);
  const double copies = Tl * D(s.top_k);
  ops.push_back(Memory("dispatch-preprocess", te, s, 7));
  if (s.ep > 1) {
    Op counts = Collective("ep-token-counts", CollectiveKind::kAllGather, D(s.ep) * D(s.experts) * 8.0);
    counts.role = trace::TaskRole::kEpComm;
    counts.ep_group = true;
    ops.push_back(counts);
  }
  ops.push_back(Memory("permute-index", te * (1.0 + 4.0 + 8.0), s, 3));
  ops.push_back(Memory("permute", ActBytes(s, Tl * h + copies * h) + te * 4.0 + copies * 4.0, s, 1,
                       KernelKind::kElementwise, 1.0, 5));
  // The grouped GEMM needs the counts on the host too, so even without EP
  // Megatron waits ("before_finish"); padded capacity buffers need none.
  if (!s.capacity_padded) ops.push_back(HostSync("dispatch-sync"));
}

// The MoE block after the MLP norm: router, dispatch, the local experts as
// grouped GEMMs, combine (see the dispatchers above); shared experts beside it.
void MoeForward(std::vector<Op>& ops, const LayerShape& s) {
  const double Tl = s.routed_tokens();
  const double h = D(s.hidden);
  const double copies = Tl * D(s.top_k);
  RouterForward(ops, s);
  if (Hierarchical(s)) {
    // DeepEP get_dispatch_layout: read the top-k indices, write per-rank
    // flags and counts; then the host waits for the received counts.
    ops.push_back(Memory("dispatch-layout", Tl * (D(s.top_k) * 8.0 + D(s.ep)), s));
    if (!s.capacity_padded) ops.push_back(HostSync("dispatch-sync"));
    if (s.ep > 1) {
      AddCast(ops, "ep-dispatch-cast", Tl * h, s);  // FP8 dispatch: quantize once, before sending
      ops.push_back(EpAllToAll("ep-dispatch", s, /*toward_experts=*/true));
    }
    // Expand each received row into its local experts' rows.
    ops.push_back(Memory("permute", (DispatchRows(s) * s.load_factor + ExpertRows(s)) * h *
                                        DispatchElementBytes(s, true), s, 2));
  } else {
    AlltoAllDispatchPrologue(ops, s);
    if (s.ep > 1) {
      ops.push_back(EpAllToAll("ep-dispatch", s, /*toward_experts=*/true));
      ops.push_back(EpProbsAllToAll("ep-dispatch-probs", s));
    }
    AddSortChunks(ops, "sort-chunks", s);
  }
  const int64_t m = s.tokens_per_local_expert();
  const int64_t E = s.local_experts();
  const size_t first_expert_op = ops.size();
  AddForwardCasts(ops, "expert-fc1", m, (s.gated ? 2 : 1) * s.expert_ffn, s.hidden, E,
                  /*input_is_fp8=*/Fp8Dispatch(s), s);
  ops.push_back(Gemm("expert-fc1", m, (s.gated ? 2 : 1) * s.expert_ffn, s.hidden, E, s));
  ops.push_back(Memory("expert-act", ActBytes(s, (s.gated ? 3.0 : 2.0) * ExpertTokens(s) * D(s.expert_ffn)), s, 1,
                       s.gated ? KernelKind::kGatedActivation : KernelKind::kGelu));
  AddForwardCasts(ops, "expert-fc2", m, s.hidden, s.expert_ffn, E, false, s);
  ops.push_back(Gemm("expert-fc2", m, s.hidden, s.expert_ffn, E, s));
  MarkExpert(ops, first_expert_op);
  if (Hierarchical(s)) {
    // Sum each token's local expert outputs into one row per token.
    ops.push_back(Memory("unpermute", ActBytes(s, (ExpertRows(s) + DispatchRows(s) * s.load_factor) * h), s, 2));
    if (s.ep > 1) ops.push_back(EpAllToAll("ep-combine", s, /*toward_experts=*/false));
  } else {
    AddSortChunks(ops, "unsort-chunks", s);
    if (s.ep > 1) ops.push_back(EpAllToAll("ep-combine", s, /*toward_experts=*/false));
    // Unpermutation 1: sum each token's top_k rows back into place.
    ops.push_back(Memory("unpermute", ActBytes(s, copies * h + Tl * h) + Tl * D(s.experts) * 4.0, s, 1,
                         KernelKind::kElementwise, 1.0, 3));
  }
  SharedExpertForward(ops, s);
}

void MoeBackward(std::vector<Op>& ops, const LayerShape& s) {
  const double Tl = s.routed_tokens();
  const double h = D(s.hidden);
  const double copies = Tl * D(s.top_k);
  SharedExpertBackward(ops, s);
  if (Hierarchical(s)) {
    // The combine's backward sends the output gradient to the experts (FP8
    // under fp8 training), where it is expanded to the experts' rows. The
    // splits are known from the forward: no host wait.
    if (s.ep > 1) {
      AddCast(ops, "ep-combine-bwd-cast", Tl * h, s);
      ops.push_back(EpAllToAll("ep-combine-bwd", s, /*toward_experts=*/true));
    }
    ops.push_back(Memory("unpermute-bwd", (DispatchRows(s) * s.load_factor + ExpertRows(s)) * h *
                                              DispatchElementBytes(s, true), s, 2));
  } else {
    // Unpermutation 1 backward: each token's gradient copied to its top_k rows.
    ops.push_back(Memory("unpermute-bwd", ActBytes(s, Tl * h + copies * h) + Tl * D(s.experts) * 4.0, s, 1,
                         KernelKind::kElementwise, 1.0, 3));
    if (s.ep > 1) ops.push_back(EpAllToAll("ep-combine-bwd", s, /*toward_experts=*/true));
    AddSortChunks(ops, "unsort-chunks-bwd", s);
  }
  const int64_t m = s.tokens_per_local_expert();
  const int64_t E = s.local_experts();
  const size_t first_expert_op = ops.size();
  GroupedGemmBackward(ops, "expert-fc2", m, s.hidden, s.expert_ffn, E, s, /*dy_is_fp8=*/Fp8Dispatch(s));
  ops.push_back(Memory("expert-act-bwd", ActBytes(s, (s.gated ? 5.0 : 3.0) * ExpertTokens(s) * D(s.expert_ffn)), s, 1,
                       s.gated ? KernelKind::kGatedActivation : KernelKind::kGelu));
  GroupedGemmBackward(ops, "expert-fc1", m, (s.gated ? 2 : 1) * s.expert_ffn, s.hidden, E, s);
  MarkExpert(ops, first_expert_op);
  if (Hierarchical(s)) {
    // Sum the input gradient of a token's local experts, send it back (bf16).
    ops.push_back(Memory("permute-bwd", ActBytes(s, (ExpertRows(s) + DispatchRows(s) * s.load_factor) * h), s, 2));
    if (s.ep > 1) ops.push_back(EpAllToAll("ep-dispatch-bwd", s, /*toward_experts=*/false));
  } else {
    AddSortChunks(ops, "sort-chunks-bwd", s);
    if (s.ep > 1) {
      ops.push_back(EpAllToAll("ep-dispatch-bwd", s, /*toward_experts=*/false));
      ops.push_back(EpProbsAllToAll("ep-dispatch-probs-bwd", s));
    }
    // Permutation 1 backward: sum each token's top_k row gradients; scatter
    // the probabilities' gradient into [tokens, experts] fp32.
    ops.push_back(Memory("permute-bwd", ActBytes(s, copies * h + Tl * h) + copies * 4.0 + Tl * D(s.experts) * 8.0,
                         s, 2, KernelKind::kElementwise, 1.0, 5));
  }
  RouterBackward(ops, s);
}

// Index of the overlapped (ring) CP K/V exchange just emitted (-1 when there
// is none; all-gather CP's collectives block the compute stream).
int CpExchangeIndex(const std::vector<Op>& ops) {
  for (int i = static_cast<int>(ops.size()) - 1; i >= 0; --i) {
    if (ops[i].cp_group) return ops[i].async ? i : -1;
  }
  return -1;
}

// Makes the latest compute op of `ops` that waits for nothing else wait for
// the async op `index` (ops after it follow it on the compute stream).
void WaitFor(std::vector<Op>& ops, int index) {
  if (index < 0) return;
  for (int i = static_cast<int>(ops.size()) - 1; i > index; --i) {
    if (!ops[i].is_collective && ops[i].wait_for < 0) {
      ops[i].wait_for = index;
      return;
    }
  }
}

}  // namespace

double LayerShape::routed_tokens() const {
  return sequence_parallel ? D(tokens()) / tp : D(tokens());
}

int64_t LayerShape::tokens_per_local_expert() const {
  // Every EP rank routes routed_tokens() x top_k copies; over the ep ranks they
  // spread across all experts.
  double mean = routed_tokens() * D(top_k) * ep / D(experts);
  return std::max<int64_t>(1, static_cast<int64_t>(std::ceil(mean * load_factor - 1e-9)));
}

LayerShape LayerShape::Moe(const config::ModelConfig& model, const config::PlanConfig& plan,
                           int domain_gpus) const {
  LayerShape m = *this;
  m.moe = true;
  m.experts = model.num_experts;
  m.top_k = model.experts_per_token;
  m.expert_ffn = model.moe_intermediate_size;
  m.shared_ffn = model.shared_expert_intermediate_size;
  m.ep = plan.ep;
  m.load_factor = MoeLoadFactor(model, plan);
  m.dispatcher = plan.dispatcher;
  m.capacity_padded = plan.capacity_factor > 0;
  // The EP group is ep consecutive ranks (placement.cc): whole nodes, or
  // part of one.
  m.ep_per_node = domain_gpus > 0 ? std::min(plan.ep, domain_gpus) : 0;
  m.expert_groups = model.expert_groups;
  m.expert_groups_per_token = model.expert_groups_per_token;
  return m;
}

namespace {

// log C(n, k); -infinity when k is out of range.
double LogChoose(double n, double k) {
  if (k < 0 || k > n) return -std::numeric_limits<double>::infinity();
  return std::lgamma(n + 1) - std::lgamma(k + 1) - std::lgamma(n - k + 1);
}

}  // namespace

double ExpectedDistinctUnits(int64_t experts, int64_t top_k, int64_t units, int64_t groups, int64_t groups_per_token) {
  if (units <= 1 || experts <= 0) return units == 1 ? 1.0 : 0.0;
  // Without group limits: one group holding every expert, always chosen.
  if (groups <= 1 || groups_per_token <= 0 || groups_per_token >= groups) {
    groups = 1;
    groups_per_token = 1;
  }
  const int64_t per_group = experts / groups;
  const int64_t per_unit = experts / units;
  const double pool = D(groups_per_token * per_group);  // experts a token picks from
  const double log_pool = LogChoose(pool, D(top_k));
  const double log_groups = LogChoose(D(groups), D(groups_per_token));
  double distinct = 0;
  for (int64_t u = 0; u < units; ++u) {
    const int64_t lo = u * per_unit, hi = lo + per_unit;
    // The unit's experts in each group it overlaps (contiguous blocks).
    std::vector<int64_t> in_group;
    for (int64_t g = lo / per_group; g * per_group < hi; ++g) {
      in_group.push_back(std::min(hi, (g + 1) * per_group) - std::max(lo, g * per_group));
    }
    const int c = static_cast<int>(in_group.size());
    // ways[j][x]: sets of j of those groups holding x of the unit's experts.
    std::vector<std::vector<double>> ways(c + 1, std::vector<double>(per_unit + 1, 0.0));
    ways[0][0] = 1;
    for (int64_t a : in_group) {
      for (int j = c - 1; j >= 0; --j) {
        for (int64_t x = per_unit - a; x >= 0; --x) ways[j + 1][x + a] += ways[j][x];
      }
    }
    // P(unit missed) = sum over the chosen groups' overlap with the unit of
    // P(that choice) x P(all top_k experts fall outside the unit's x).
    double missed = 0;
    for (int j = 0; j <= c; ++j) {
      const double log_choice = LogChoose(D(groups - c), D(groups_per_token - j)) - log_groups;
      if (!std::isfinite(log_choice)) continue;
      for (int64_t x = 0; x <= per_unit; ++x) {
        if (ways[j][x] == 0) continue;
        const double log_miss = LogChoose(pool - D(x), D(top_k)) - log_pool;
        if (std::isfinite(log_miss)) missed += ways[j][x] * std::exp(log_choice + log_miss);
      }
    }
    distinct += 1.0 - missed;
  }
  return distinct;
}

namespace {

// Per-expert share of routed tokens under the plan's routing.
std::vector<double> ExpertShares(const config::ModelConfig& model, const config::PlanConfig& plan) {
  const int64_t E = model.num_experts;
  std::vector<double> w(static_cast<size_t>(E), 1.0);
  if (plan.routing == config::Routing::kZipf) {
    for (int64_t i = 0; i < E; ++i) w[i] = std::pow(D(i + 1), -plan.zipf_exponent);
  } else if (plan.routing == config::Routing::kHistogram && static_cast<int64_t>(plan.routing_histogram.size()) == E) {
    w = plan.routing_histogram;
  }
  double sum = 0;
  for (double x : w) sum += x;
  for (double& x : w) x /= sum;
  // With top-k routing an expert takes at most 1/k of the copies (a token
  // never picks the same expert twice).
  const double cap = 1.0 / D(std::max<int64_t>(1, model.experts_per_token));
  bool changed = true;
  for (int it = 0; it < 64 && changed; ++it) {
    changed = false;
    double excess = 0, room = 0;
    for (double& x : w) {
      if (x > cap + 1e-12) {
        excess += x - cap;
        x = cap;
        changed = true;
      } else if (x < cap) {
        room += x;
      }
    }
    if (excess > 0 && room > 0) {
      for (double& x : w) {
        if (x < cap) x += excess * x / room;
      }
    }
  }
  return w;
}

}  // namespace

double MoeLoadFactor(const config::ModelConfig& model, const config::PlanConfig& plan) {
  if (!model.is_moe()) return 1.0;
  if (plan.capacity_factor > 0) return plan.capacity_factor;
  const std::vector<double> w = ExpertShares(model, plan);
  const int64_t per_rank = model.num_experts / plan.ep;
  double busiest = 0;
  for (int r = 0; r < plan.ep; ++r) {
    double share = 0;
    for (int64_t i = r * per_rank; i < (r + 1) * per_rank; ++i) share += w[i];
    busiest = std::max(busiest, share);
  }
  return std::max(1.0, busiest * plan.ep);
}

double MoeDroppedFraction(const config::ModelConfig& model, const config::PlanConfig& plan) {
  if (!model.is_moe() || plan.capacity_factor <= 0) return 0;
  const std::vector<double> w = ExpertShares(model, plan);
  const double cap = plan.capacity_factor / D(model.num_experts);
  double dropped = 0;
  for (double x : w) dropped += std::max(0.0, x - cap);
  return dropped;
}

double LayerShape::element_bytes() const { return config::PrecisionBytes(precision == Precision::kFp8 ? Precision::kBf16 : precision); }

LayerShape LayerShape::From(const config::ModelConfig& model, const config::PlanConfig& plan, int64_t seq) {
  LayerShape s;
  s.micro_batch = plan.micro_batch;
  s.seq = seq;
  s.hidden = model.hidden_size;
  s.heads = model.num_attention_heads;
  s.kv_heads = model.num_kv_heads;
  s.head_dim = model.head_dim;
  s.mla = model.is_mla();
  s.q_lora_rank = model.q_lora_rank;
  s.kv_lora_rank = model.kv_lora_rank;
  s.qk_rope_dim = model.qk_rope_head_dim;
  s.v_head_dim = model.v_head_dim;
  s.ffn = model.intermediate_size;
  s.vocab = model.vocab_size;
  s.gated = model.gated_mlp();
  s.learned_positions = model.learned_position_embeddings;
  s.rope = model.position_embedding == config::PositionEmbedding::kRope;
  s.dropout = model.dropout;
  s.tp = plan.tp;
  s.cp = plan.cp;
  s.cp_comm = plan.cp_comm;
  s.sequence_parallel = plan.sequence_parallel && plan.tp > 1;
  s.flash_attention = plan.attention != config::AttentionImpl::kUnfused;
  s.flash2 = plan.attention == config::AttentionImpl::kFlash2;
  s.fused_kernels = plan.kernels == config::KernelFusion::kFused;
  s.rms_norm = model.norm == config::NormKind::kRmsNorm;
  s.bias = model.mlp_bias;
  s.precision = plan.precision;
  s.recompute_modules = plan.recompute_modules;
  return s;
}

namespace {

// A dense MLP after its norm: SP all-gather, FC1, activation, FC2 and its TP
// reduction (Megatron-Core's MLP module, whose Transformer Engine FC1 also
// holds the norm).
void DenseMlpForward(std::vector<Op>& ops, const LayerShape& s) {
  const int64_t T = s.tokens();
  const int64_t f_rank = s.ffn / s.tp;
  AddGather(ops, "ag-mlp", s);
  AddForwardCasts(ops, "fc1", T, (s.gated ? 2 : 1) * f_rank, s.hidden, 1, /*input_is_fp8=*/true, s);
  ops.push_back(Gemm("fc1", T, (s.gated ? 2 : 1) * f_rank, s.hidden, 1, s));
  // Eager GeLU with a bias is two kernels (bias add, activation); the eager
  // SwiGLU efficiency was measured on the unfused silu-then-multiply pair.
  ops.push_back(Memory(s.gated ? "swiglu" : "gelu", ActBytes(s, (s.gated ? 3.0 : 2.0) * D(T) * D(f_rank)), s, 1,
                       s.gated ? KernelKind::kGatedActivation : KernelKind::kGelu, !s.gated && s.bias ? 2.0 : 1.0,
                       !s.gated && s.bias ? 2 : 1));
  AddForwardCasts(ops, "fc2", T, s.hidden, f_rank, 1, false, s);
  ops.push_back(Gemm("fc2", T, s.hidden, f_rank, 1, s));
  AddReduce(ops, "tp-mlp", s);
}

}  // namespace

std::vector<Op> LayerForward(const LayerShape& s) {
  std::vector<Op> ops;
  const int64_t T = s.tokens();
  ops.push_back(NormForward("input-norm", s));
  if (s.mla) {
    MlaForward(ops, s);
  } else {
    AddGather(ops, "ag-attn", s);
    AddForwardCasts(ops, "qkv", T, QkvWidth(s), s.hidden, 1, /*input_is_fp8=*/true, s);
    ops.push_back(Gemm("qkv", T, QkvWidth(s), s.hidden, 1, s));
    if (s.rope) ops.push_back(Memory("rope", ActBytes(s, 2.0 * D(T) * D((QHeads(s) + KvHeads(s)) * s.head_dim)), s));
  }
  AttentionCoreForward(ops, s);
  const int exchange = CpExchangeIndex(ops);
  AddForwardCasts(ops, "attn-proj", T, s.hidden, QHeads(s) * VDim(s), 1, false, s);
  ops.push_back(Gemm("attn-proj", T, s.hidden, QHeads(s) * VDim(s), 1, s));
  WaitFor(ops, exchange);
  AddReduce(ops, "tp-attn", s);
  ops.push_back(ResidualForward("attn-residual", s));
  ops.push_back(NormForward("mlp-norm", s));
  if (s.moe) {
    MoeForward(ops, s);
    ops.push_back(ResidualForward("mlp-residual", s));
    return ops;
  }
  DenseMlpForward(ops, s);
  ops.push_back(ResidualForward("mlp-residual", s));
  return ops;
}

std::vector<Op> LayerBackward(const LayerShape& s) {
  std::vector<Op> ops;
  const int64_t T = s.tokens();
  const int64_t f_rank = s.ffn / s.tp;
  ops.push_back(ResidualBackward("mlp-residual-bwd", s));
  int regather = -1;
  if (s.moe) {
    MoeBackward(ops, s);
  } else {
    AddGather(ops, "ag-mlp-grad", s);  // row-parallel FC2: gather the output gradient
    GemmBackward(ops, "fc2", T, s.hidden, f_rank, s);
    ops.push_back(Memory(s.gated ? "swiglu-bwd" : "gelu-bwd", ActBytes(s, (s.gated ? 5.0 : 3.0) * D(T) * D(f_rank)), s,
                         1, s.gated ? KernelKind::kGatedActivation : KernelKind::kGelu));
    // SP: FC1's weight gradient needs the gathered norm output again; Megatron
    // re-gathers it on the side while the data gradient is computed.
    AddGather(ops, "ag-mlp-input", s, /*async=*/true);
    regather = s.sequence_parallel && s.tp > 1 ? static_cast<int>(ops.size()) - 1 : -1;
    GemmBackward(ops, "fc1", T, (s.gated ? 2 : 1) * f_rank, s.hidden, s, regather);
    AddReduce(ops, "tp-mlp-grad", s);
  }
  ops.push_back(NormBackward("mlp-norm-bwd", s));
  ops.push_back(ResidualBackward("attn-residual-bwd", s));
  AddGather(ops, "ag-attn-grad", s);
  GemmBackward(ops, "attn-proj", T, s.hidden, QHeads(s) * VDim(s), s);
  AttentionCoreBackward(ops, s);
  AddCpGradReduceScatter(ops, s);
  const int exchange = CpExchangeIndex(ops);
  if (s.mla) {
    MlaBackward(ops, s);  // includes the TP reduction of the latent gradients
  } else {
    if (s.rope) ops.push_back(Memory("rope-bwd", ActBytes(s, 2.0 * D(T) * D((QHeads(s) + KvHeads(s)) * s.head_dim)), s));
    AddGather(ops, "ag-attn-input", s, /*async=*/true);
    regather = s.sequence_parallel && s.tp > 1 ? static_cast<int>(ops.size()) - 1 : -1;
    GemmBackward(ops, "qkv", T, QkvWidth(s), s.hidden, s, regather);
  }
  WaitFor(ops, exchange);
  if (!s.mla) AddReduce(ops, "tp-attn-grad", s);
  ops.push_back(NormBackward("input-norm-bwd", s));
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
std::vector<Op> AsRecompute(std::vector<Op> ops) {
  for (Op& op : ops) {
    op.name = "recompute-" + op.name;
    op.recompute = true;
  }
  return ops;
}

std::vector<Op> SelectiveRecompute(const LayerShape& s) {
  using config::RecomputeModule;
  const config::RecomputeModules& m = s.recompute_modules;
  const int64_t T = s.tokens();
  const double Tn = NormTokens(s);
  std::vector<Op> ops;
  // MLP side. A MoE layer's norm is a module of its own; under FP8 the linear
  // layers it feeds then keep its 16-bit output instead of their FP8 copy
  // (Megatron's set_save_original_input) and cast it again for the backward.
  if (s.moe && m.Has(RecomputeModule::kLayerNorm)) {
    ops.push_back(NormForward("mlp-norm", s));
    if (s.shared_ffn > 0 && !m.Has(RecomputeModule::kMoe) && !m.Has(RecomputeModule::kSharedExperts)) {
      AddCast(ops, "shared-fc1-cast-x", D(T) * D(s.hidden), s);
    }
  }
  if (!s.moe && m.Has(RecomputeModule::kMlp)) {
    ops.push_back(NormForward("mlp-norm", s));  // inside FC1 (TE LayerNormLinear)
    DenseMlpForward(ops, s);
  }
  if (s.moe && m.Has(RecomputeModule::kMoe)) {
    MoeForward(ops, s);
  } else if (s.moe) {
    if (m.Has(RecomputeModule::kMoeAct)) {
      // As MoeForward's expert activation; FC2 keeps the activation's 16-bit
      // output instead of its FP8 copy and casts it again.
      const size_t first_expert_op = ops.size();
      ops.push_back(Memory("expert-act", ActBytes(s, (s.gated ? 3.0 : 2.0) * ExpertTokens(s) * D(s.expert_ffn)), s, 1,
                           s.gated ? KernelKind::kGatedActivation : KernelKind::kGelu));
      AddCast(ops, "expert-fc2-cast-x", ExpertTokens(s) * D(s.expert_ffn), s);
      MarkExpert(ops, first_expert_op);
    }
    if (m.Has(RecomputeModule::kSharedExperts)) SharedExpertForward(ops, s);
  }
  // Attention side.
  if (m.Has(RecomputeModule::kCoreAttn) && !s.flash_attention) AttentionCoreForward(ops, s);
  if (s.mla && m.Has(RecomputeModule::kMlaUpProj)) MlaUpForward(ops, s, /*recompute=*/true);
  if (s.mla && m.Has(RecomputeModule::kLayerNorm)) {
    // MLA's input norm is a module of its own (the down-projections are plain
    // linears); without MLA it is fused into the QKV GEMM and stays.
    ops.push_back(NormForward("input-norm", s));
    if (s.q_lora_rank > 0) {
      AddCast(ops, "q-down-cast-x", Tn * D(s.hidden), s);
    } else {
      AddCast(ops, "q-proj-cast-x", D(T) * D(s.hidden), s);
    }
    AddCast(ops, "kv-down-cast-x", Tn * D(s.hidden), s);
  }
  return AsRecompute(std::move(ops));
}

std::vector<Op> EmbeddingForward(const LayerShape& s) {
  std::vector<Op> ops;
  const double n = D(s.tokens()) * D(s.hidden);
  // Vocabulary-parallel lookup (rows of other ranks are zero), then the sum
  // over TP ranks; learned positions add a second table.
  ops.push_back(Memory("embedding", ActBytes(s, (s.learned_positions ? 4.0 : 2.0) * n), s));
  AddReduce(ops, "tp-embedding", s);
  if (s.dropout) ops.push_back(Memory("embedding-dropout", ActBytes(s, 2 * NormTokens(s) * D(s.hidden)) + n, s));
  return ops;
}

std::vector<Op> EmbeddingBackward(const LayerShape& s) {
  std::vector<Op> ops;
  AddGather(ops, "ag-embedding-grad", s);
  const double n = D(s.tokens()) * D(s.hidden);
  // Scatter-add of token gradients into the (fp32) embedding gradient rows.
  ops.push_back(Memory("embedding-bwd", ActBytes(s, n) + 8.0 * n / std::max(1, s.tp), s));
  return ops;
}

std::vector<Op> HeadForward(const LayerShape& s) {
  std::vector<Op> ops;
  const int64_t T = s.tokens();
  const int64_t v_rank = s.vocab / s.tp;
  ops.push_back(NormForward("final-norm", s));
  AddGather(ops, "ag-head", s);
  ops.push_back(Gemm16("logits", T, v_rank, s.hidden, 1, s));
  // Vocabulary-parallel cross entropy in fp32: read logits, write fp32
  // softmax (Megatron keeps it for the backward), three small all-reduces.
  ops.push_back(Memory("cross-entropy", D(T) * D(v_rank) * (s.element_bytes() + 4.0 + 4.0), s, 4, KernelKind::kSoftmax));
  if (s.tp > 1) ops.push_back(Collective("tp-loss", trace::CollectiveKind::kAllReduce, D(T) * 4.0 * 3));
  return ops;
}

std::vector<Op> HeadBackward(const LayerShape& s) {
  std::vector<Op> ops;
  const int64_t T = s.tokens();
  const int64_t v_rank = s.vocab / s.tp;
  ops.push_back(Memory("cross-entropy-bwd", D(T) * D(v_rank) * (4.0 + s.element_bytes()), s, 2, KernelKind::kSoftmax));
  GemmBackward(ops, "logits", T, v_rank, s.hidden, AsBf16(s));
  AddReduce(ops, "tp-head-grad", s);
  ops.push_back(NormBackward("final-norm-bwd", s));
  return ops;
}

double EagerKernelEfficiency(KernelKind kind) {
  // Achieved GB/s over the 4152 GB/s device copy, both measured on the same
  // H200 (32768 x 8192 bf16 rows of memops.csv; copy.csv 1-4 GiB).
  switch (kind) {
    case KernelKind::kElementwise: return 1.0;        // add: 4391 GB/s (at copy speed)
    case KernelKind::kLayerNorm: return 2424.0 / 4152;
    case KernelKind::kRmsNorm: return 2681.0 / 4152;
    case KernelKind::kGelu: return 3621.0 / 4152;
    case KernelKind::kGatedActivation: return 1137.0 / 4152;  // silu(a) * b as two eager kernels
    case KernelKind::kSoftmax: return 1071.0 / 4152;
    case KernelKind::kDropout: return 2415.0 / 4152;
    case KernelKind::kCast: return 2115.0 / 4152;
  }
  return 1.0;
}

Flops SumFlops(const std::vector<Op>& ops) {
  Flops total;
  for (const Op& op : ops) {
    if (!op.is_collective) total += op.compute.flops;
  }
  return total;
}

}  // namespace stacksim::workload
