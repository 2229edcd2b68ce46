#include "sim/workload/attention.h"

#include <algorithm>
#include <string>

#include "sim/workload/context_parallel.h"
#include "sim/workload/lora.h"
#include "sim/workload/op_builders.h"

namespace stacksim::workload {
namespace {

using config::EagerKernel;
using trace::OpClass;

double D(int64_t v) { return static_cast<double>(v); }

// Gated attention's query projection also gives the output gate (one more
// query-heads-wide half).
int64_t QkvWidth(const LayerShape& s) {
  return ((s.attention.output_gate ? 2 : 1) * QHeads(s) + 2 * KvHeads(s)) * s.attention.head_dim;
}

}  // namespace

// With plan.repeat_kv_copies, K and V (kv heads each) are
// read and written out query-heads wide before the attention kernel, and
// the backward reads the widened gradients and writes their sums: per
// direction 2 x (kv + q) x head_dim elements a token.
double RepeatKvBytes(const LayerShape& s) {
  const int64_t kv = KvHeads(s), q = QHeads(s);
  if (!s.repeat_kv_copies || kv >= q) return 0;
  return 2.0 * ActBytes(s, D(s.tokens()) * D(kv + q) * D(s.attention.head_dim));
}

// RoPE on Q and K: read and write both. As fp32 tensor ops
// (config::EagerModules::kFp32TensorOps: torchtitan's apply_rotary_emb,
// view_as_complex(x.float()) * freqs_cis, view_as_real, type_as), each of Q
// and K is upcast (e + 4), multiplied as complex fp32 (8) and cast back
// (4 + e) in three kernels, forward and backward alike (the gradient is
// multiplied by the conjugate frequencies). torch.compile does not change
// that: Inductor generates no code for complex operators and runs them as
// ATen fallback kernels ("Torchinductor does not support code generation
// for complex operators", torchtitan issue #15), so the complex product and
// the casts around it stay kernels of their own.
Op Rope(const std::string& name, const LayerShape& s, bool backward) {
  const double n = D(s.tokens()) * D((QHeads(s) + KvHeads(s)) * s.attention.head_dim);
  const double e = s.element_bytes();
  if (s.eager_modules == config::EagerModules::kHfTensorOps && !s.kernels.fused) {
    // Hugging Face's q * cos + rotate_half(q) * sin, per element of Q and K:
    // * cos (2e), the negated half and the cat (e + 2e), * sin (2e), + (3e):
    // 10e in 5 kernels a tensor. Backward: the products' gradients (2 x 2e),
    // the negation's (e), the two slices' zero-filled gradients (2 x 1.5e)
    // and the three branches added (2 x 3e): 14e in 8 kernels a tensor.
    return Memory(name, n * 2 * e, s, 1, EagerKernel::kElementwise, backward ? 7.0 : 5.0, backward ? 16 : 10);
  }
  if (s.eager_modules != config::EagerModules::kFp32TensorOps) return Memory(name, n * 2 * e, s);
  LayerShape eager = s;  // compiled or not
  eager.kernels.fused = false;
  return EagerParts(name, n * 2 * e, 1, {{n * 8, EagerKernel::kElementwise}, {n * 2 * (e + 4), EagerKernel::kCast}}, 6,
                    eager);
}

namespace {

// The attention dropout of the unfused path, forward or backward: a PyTorch
// dropout of its own after the fused softmax (Megatron-LM's
// ParallelSelfAttention / CoreAttention call torch.nn.Dropout on the
// probabilities under the RNG tracker, and FusedScaleMaskSoftmax has no
// dropout: megatron/model/transformer.py and fused_softmax.py, 2021-22), so
// an eager kernel whatever the framework fuses. Forward: read the
// probabilities, write them dropped and a one-byte mask; backward: read the
// gradient and the mask, write the gradient.
Op AttentionDropout(const std::string& name, double scores, const LayerShape& s) {
  Op op = Memory(name, ActBytes(s, 2 * scores) + scores, s, 1, EagerKernel::kDropout);
  op.compute.bandwidth_efficiency = static_cast<float>(s.kernels.EagerEfficiency(EagerKernel::kDropout));
  op.role = trace::TaskRole::kAttention;
  return op;
}

trace::AttentionKernel AttentionKernelOf(config::AttentionImpl impl) {
  switch (impl) {
    case config::AttentionImpl::kFlash2: return trace::AttentionKernel::kFlash2;
    case config::AttentionImpl::kFlash1: return trace::AttentionKernel::kFlash1;
    case config::AttentionImpl::kOwn: return trace::AttentionKernel::kOwn;
    case config::AttentionImpl::kFlash:
    case config::AttentionImpl::kUnfused: break;
  }
  return trace::AttentionKernel::kFastest;
}

// One fused attention kernel over the micro-batch's heads on this rank: two
// products of 2*s*s*d per head forward, halved by the causal mask; the
// backward runs five (S recomputed, dP, dV, dQ, dK): 2.5x (Dao 2023).
Op FlashAttention(const LayerShape& s, bool backward) {
  const int64_t bh = s.micro_batch * QHeads(s);
  const int64_t head_dim = s.attention.head_dim;
  const int cp = s.cp.size;
  // Q and K are head_dim wide, V and O VDim (different under MLA).
  const double q = D(s.tokens()) * D(QHeads(s)) * D(head_dim);
  const double o = D(s.tokens()) * D(QHeads(s)) * D(VDim(s));
  const double k = D(s.tokens()) * D(KvHeads(s)) * D(head_dim);
  const double v = D(s.tokens()) * D(KvHeads(s)) * D(VDim(s));
  Op op;
  op.name = backward ? "attention-bwd" : "attention";
  op.role = trace::TaskRole::kAttention;
  op.compute.op_class = OpClass::kAttention;
  op.compute.precision = AsBf16(s).kernels.precision;  // TE keeps attention in bf16 under FP8
  // Under CP (ring attention) this rank's seq/cp queries meet all seq keys;
  // with two chunks per rank (Megatron's causal load balancing) every rank
  // does 1/cp of the causal work.
  op.compute.m = s.seq / cp;
  // The kernel's key length: under ring CP each step runs its own kernel on
  // one K/V block of seq/cp keys (Transformer Engine's CP attention launches
  // a flash kernel per step on the local and the received chunk; PyTorch's
  // ring attention one SDPA per step, whichever way it rotates K/V), so it
  // amortizes its per-query-block cost over seq/cp keys, not seq (the
  // profile's attention.seq_factors). Llama 3's all-gather CP runs one
  // kernel over all seq gathered keys.
  const bool one_kernel = s.cp.comm == config::CpComm::kAllGather && !s.cp.torch_ring;
  op.compute.n = one_kernel ? s.seq : s.seq / cp;
  op.compute.k = head_dim;
  op.compute.batch = bh;
  op.compute.causal = true;
  op.compute.backward = backward;
  op.compute.attention_kernel = AttentionKernelOf(s.attention.kernel);
  op.compute.heads_per_kv_head = static_cast<uint8_t>(std::min<int64_t>(255, QHeads(s) / KvHeads(s)));
  // Forward: QK^T over head_dim and PV over VDim. Backward: S = QK^T, dQ =
  // dS K and dK = dS^T Q over head_dim; dP = dO V^T and dV = P^T dO over VDim.
  // Sliding windows skip the key blocks outside the window (flash kernels
  // with a window mask): the mean fraction of causal work over the layers.
  const double pair = 2.0 * D(bh) * D(s.seq) * D(s.seq) * 0.5 / cp * s.attention.work_fraction;  // per unit width
  const double dqk = D(head_dim), dv = D(VDim(s));
  op.compute.flops = Flops{backward ? pair * (3.0 * dqk + 2.0 * dv) : pair * (dqk + dv)};
  // Reads Q, K, V (and O, dO backward), writes O (dQ, dK, dV backward); under
  // CP the K/V blocks of all cp ranks pass through.
  op.compute.bytes = Bytes{ActBytes(s, backward ? 2 * q + 2 * o + 2 * (k + v) * cp : q + o + (k + v) * cp)};
  return op;
}

}  // namespace

int64_t QHeads(const LayerShape& s) { return s.attention.heads / s.tp; }
int64_t KvHeads(const LayerShape& s) { return std::max<int64_t>(1, s.attention.kv_heads / s.tp); }
int64_t VDim(const LayerShape& s) { return s.mla.enabled ? s.mla.v_head_dim : s.attention.head_dim; }

void QkvForward(std::vector<Op>& ops, const LayerShape& s) {
  const int64_t T = s.tokens();
  AddGather(ops, "ag-attn", s);
  AddForwardCasts(ops, "qkv", T, QkvWidth(s), s.hidden, 1, /*input_is_fp8=*/true, s);
  LinearForward(ops, "qkv", Projection::kQkv, T, QkvWidth(s), s.hidden, s);
  if (s.attention.rope) ops.push_back(Rope("rope", s, /*backward=*/false));
}

void QkvBackward(std::vector<Op>& ops, const LayerShape& s) {
  if (s.attention.rope) ops.push_back(Rope("rope-bwd", s, /*backward=*/true));
  int regather = -1;
  if (LinearBackwardNeedsInput(Projection::kQkv, s)) {
    AddGather(ops, "ag-attn-input", s, /*async=*/true);
    if (s.sequence_parallel && s.tp > 1) regather = static_cast<int>(ops.size()) - 1;
  }
  AddFp8InputTranspose(ops, "qkv", D(s.tokens()) * D(s.hidden), s);
  LinearBackward(ops, "qkv", Projection::kQkv, s.tokens(), QkvWidth(s), s.hidden, s, regather);
}

void AttentionCoreForward(std::vector<Op>& ops, const LayerShape& s) {
  const int64_t bh = s.micro_batch * QHeads(s);
  if (s.attention.flash) {
    if (const double b = RepeatKvBytes(s); b > 0) ops.push_back(Memory("repeat-kv", b, s, 2));
    if (s.cp.size > 1) ops.push_back(CpKvExchange(s, /*backward=*/false));
    ops.push_back(FlashAttention(s, /*backward=*/false));
    // One SDPA per ring step under PyTorch's ring attention: its unfused
    // merges (about six element-wise kernels a step) follow on the stream.
    if (const double b = CpTorchRingMergeBytes(s); b > 0) {
      ops.push_back(Memory("cp-ring-merge", b, s, 6 * (s.cp.size - 1) + 1));
    }
    return;
  }
  // Unfused (Megatron-LM 2021-22): batched QK^T, the fused scale-mask-softmax,
  // the attention dropout, then probabilities times V; the full s x s square
  // is computed.
  const double scores = D(bh) * D(s.seq) * D(s.seq);
  Op qk = Gemm16("attention-qk", s.seq, s.seq, s.attention.head_dim, bh, s);
  qk.role = trace::TaskRole::kAttention;
  ops.push_back(qk);
  Op softmax = Memory("softmax", ActBytes(s, 2 * scores), s, 1, EagerKernel::kSoftmax);
  softmax.role = trace::TaskRole::kAttention;
  ops.push_back(softmax);
  if (s.dropout) ops.push_back(AttentionDropout("attention-dropout", scores, s));
  Op pv = Gemm16("attention-pv", s.seq, VDim(s), s.seq, bh, s);
  pv.role = trace::TaskRole::kAttention;
  ops.push_back(pv);
}

void AttentionCoreBackward(std::vector<Op>& ops, const LayerShape& s) {
  const int64_t bh = s.micro_batch * QHeads(s);
  const int64_t head_dim = s.attention.head_dim;
  if (s.attention.flash) {
    if (s.cp.size > 1) ops.push_back(CpKvExchange(s, /*backward=*/true));
    ops.push_back(FlashAttention(s, /*backward=*/true));
    if (const double b = CpTorchRingGradBytes(s); b > 0) {
      ops.push_back(Memory("cp-ring-grad-accum", b, s, 8 * s.cp.size + 5));
    }
    if (const double b = RepeatKvBytes(s); b > 0) ops.push_back(Memory("repeat-kv-bwd", b, s, 2));
    return;
  }
  const double scores = D(bh) * D(s.seq) * D(s.seq);
  Op pv_dgrad = Gemm16("attention-pv-dgrad", s.seq, s.seq, VDim(s), bh, s);  // dP = dO V^T
  Op pv_wgrad = Gemm16("attention-pv-dv", s.seq, VDim(s), s.seq, bh, s);     // dV = P^T dO
  Op softmax = Memory("softmax-bwd", ActBytes(s, 3 * scores), s, 1, EagerKernel::kSoftmax);
  Op qk_dq = Gemm16("attention-qk-dq", s.seq, head_dim, s.seq, bh, s);        // dQ = dS K
  Op qk_dk = Gemm16("attention-qk-dk", s.seq, head_dim, s.seq, bh, s);        // dK = dS^T Q
  for (Op* op : {&pv_dgrad, &pv_wgrad, &softmax, &qk_dq, &qk_dk}) op->role = trace::TaskRole::kAttention;
  ops.insert(ops.end(), {pv_dgrad, pv_wgrad});
  if (s.dropout) ops.push_back(AttentionDropout("attention-dropout-bwd", scores, s));
  ops.insert(ops.end(), {softmax, qk_dq, qk_dk});
}

}  // namespace stacksim::workload
