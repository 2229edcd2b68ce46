#include "sim/workload/mla.h"

#include "sim/workload/attention.h"
#include "sim/workload/op_builders.h"

namespace stacksim::workload {
namespace {

using trace::CollectiveKind;

double D(int64_t v) { return static_cast<double>(v); }

// The down-projections are "duplicated" linears: every TP rank runs them on
// its own tokens (its sequence-parallel shard under SP, all tokens
// otherwise). The latent RMSNorms are fused into the up-projections'
// LayerNormColumnParallelLinear, so under SP the all-gather moves the normed
// latents and the RoPE key, not the hidden state.
int64_t MlaQueryInput(const LayerShape& s) { return s.mla.q_lora_rank > 0 ? s.mla.q_lora_rank : s.hidden; }
int64_t MlaKvDownWidth(const LayerShape& s) { return s.mla.kv_lora_rank + s.mla.qk_rope_dim; }
const char* MlaQueryName(const LayerShape& s) { return s.mla.q_lora_rank > 0 ? "q-up" : "q-proj"; }

// RoPE and assembly of the attention inputs: rotate q_pe and k_pe, write
// Q = [q_nope, q_pe] and K = [k_nope, k_pe] (k_pe broadcast over the heads)
// and V split out of the KV up-projection. Reads Q, the KV up-projection's
// output and k_pe; writes Q, K, V (Megatron-Core's fused MLA RoPE: one
// kernel for Q, one for K/V). The backward moves the same bytes.
Op MlaRope(const LayerShape& s, bool backward) {
  const double T = D(s.tokens());
  const double hr = D(QHeads(s));
  const double nope = D(s.attention.head_dim - s.mla.qk_rope_dim);
  const double q = T * hr * D(s.attention.head_dim);
  const double kv_up = T * hr * (nope + D(s.mla.v_head_dim));
  const double kv_out = T * hr * (D(s.attention.head_dim) + D(s.mla.v_head_dim));
  return Memory(backward ? "mla-rope-bwd" : "mla-rope",
                ActBytes(s, 2.0 * q + kv_up + T * D(s.mla.qk_rope_dim) + kv_out), s, 2);
}

// The down-projections: from the input norm's output to the latents.
void MlaDownForward(std::vector<Op>& ops, const LayerShape& s) {
  const int64_t Tn = static_cast<int64_t>(NormTokens(s));
  if (s.mla.q_lora_rank > 0) {
    AddForwardCasts(ops, "q-down", Tn, s.mla.q_lora_rank, s.hidden, 1, /*input_is_fp8=*/false, s);
    ops.push_back(Gemm("q-down", Tn, s.mla.q_lora_rank, s.hidden, 1, s));
  }
  AddForwardCasts(ops, "kv-down", Tn, MlaKvDownWidth(s), s.hidden, 1, /*input_is_fp8=*/false, s);
  ops.push_back(Gemm("kv-down", Tn, MlaKvDownWidth(s), s.hidden, 1, s));
}

}  // namespace

void MlaUpForward(std::vector<Op>& ops, const LayerShape& s, bool recompute) {
  const MlaShape& mla = s.mla;
  const int64_t T = s.tokens();
  const int64_t Tn = static_cast<int64_t>(NormTokens(s));
  const int64_t hr = QHeads(s);
  const int64_t nope = s.attention.head_dim - mla.qk_rope_dim;
  if (mla.q_lora_rank > 0) {
    ops.push_back(Memory("q-norm", ActBytes(s, 2.0 * D(Tn) * D(mla.q_lora_rank)), s, 1, NormKernel(s)));
  }
  ops.push_back(Memory("kv-norm", ActBytes(s, 2.0 * D(Tn) * D(mla.kv_lora_rank)), s, 1, NormKernel(s)));
  if (s.tp > 1 && s.sequence_parallel) {
    const int64_t gathered = MlaQueryInput(s) + (recompute ? mla.kv_lora_rank : MlaKvDownWidth(s));
    ops.push_back(Collective("ag-attn", CollectiveKind::kAllGather, ActBytes(s, D(T) * D(gathered))));
  }
  // The query input is the fused norm's FP8 output, except without query
  // compression (W_Q reads the input norm's output).
  AddForwardCasts(ops, MlaQueryName(s), T, hr * s.attention.head_dim, MlaQueryInput(s), 1, mla.q_lora_rank > 0, s);
  ops.push_back(Gemm(MlaQueryName(s), T, hr * s.attention.head_dim, MlaQueryInput(s), 1, s));
  AddForwardCasts(ops, "kv-up", T, hr * (nope + mla.v_head_dim), mla.kv_lora_rank, 1, /*input_is_fp8=*/true, s);
  ops.push_back(Gemm("kv-up", T, hr * (nope + mla.v_head_dim), mla.kv_lora_rank, 1, s));
  ops.push_back(MlaRope(s, /*backward=*/false));
}

void MlaForward(std::vector<Op>& ops, const LayerShape& s) {
  MlaDownForward(ops, s);
  MlaUpForward(ops, s);
}

void MlaBackward(std::vector<Op>& ops, const LayerShape& s) {
  const MlaShape& mla = s.mla;
  const int64_t T = s.tokens();
  const int64_t Tn = static_cast<int64_t>(NormTokens(s));
  const int64_t hr = QHeads(s);
  const int64_t nope = s.attention.head_dim - mla.qk_rope_dim;
  ops.push_back(MlaRope(s, /*backward=*/true));
  // SP: the up-projections' weight gradients need the gathered normed latents
  // again, re-gathered beside the data gradients (as for QKV).
  int regather = -1;
  if (s.tp > 1 && s.sequence_parallel) {
    ops.push_back(Collective("ag-attn-input", CollectiveKind::kAllGather,
                             ActBytes(s, D(T) * D(MlaQueryInput(s) + mla.kv_lora_rank)), /*async=*/true));
    regather = static_cast<int>(ops.size()) - 1;
  }
  GemmBackward(ops, "kv-up", T, hr * (nope + mla.v_head_dim), mla.kv_lora_rank, s, regather);
  GemmBackward(ops, MlaQueryName(s), T, hr * s.attention.head_dim, MlaQueryInput(s), s, regather);
  // Each rank's column-parallel up-projections give its heads' share of the
  // latent and RoPE-key gradients: summed over TP (reduce-scattered to the
  // shard under SP) before the replicated down-projections.
  if (s.tp > 1) {
    ops.push_back(Collective("tp-attn-grad",
                             s.sequence_parallel ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce,
                             ActBytes(s, D(T) * D(MlaQueryInput(s) + MlaKvDownWidth(s)))));
  }
  // Latent norm backward: read x and dy, write dx.
  if (mla.q_lora_rank > 0) {
    ops.push_back(Memory("q-norm-bwd", ActBytes(s, 3.0 * D(Tn) * D(mla.q_lora_rank)), s, 2, NormKernel(s)));
  }
  ops.push_back(Memory("kv-norm-bwd", ActBytes(s, 3.0 * D(Tn) * D(mla.kv_lora_rank)), s, 2, NormKernel(s)));
  GemmBackward(ops, "kv-down", Tn, MlaKvDownWidth(s), s.hidden, s);
  if (mla.q_lora_rank > 0) GemmBackward(ops, "q-down", Tn, mla.q_lora_rank, s.hidden, s);
}

}  // namespace stacksim::workload
