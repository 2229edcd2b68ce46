#include "sim/workload/mamba.h"

#include <algorithm>
#include <string>
#include <utility>

#include "sim/workload/op_builders.h"

namespace stacksim::workload {
namespace {

double D(int64_t v) { return static_cast<double>(v); }

// The widths one rank holds: TP splits the heads and the B/C groups; under
// context parallelism Megatron-Core's MambaContextParallel splits them
// again over CP for the convolution and the scan (the sequence whole), and
// replicates a group over the CP ranks that share it when TP leaves fewer
// groups than CP ranks (group_repeat_count).
struct RankWidths {
  int64_t heads, groups, inner, in_proj, conv;
  int64_t tp_heads, tp_groups, tp_inner;  // before the CP split (in_proj's and out_proj's side)
  int64_t repeat;                         // group_repeat_count
};

RankWidths Widths(const LayerShape& s) {
  const config::MambaConfig& m = s.mamba;
  const int64_t cp = s.cp.size;
  RankWidths w;
  w.tp_heads = m.heads / s.tp;
  w.tp_groups = m.groups / s.tp;
  w.tp_inner = w.tp_heads * m.head_dim;
  w.in_proj = 2 * w.tp_inner + 2 * w.tp_groups * m.state + w.tp_heads;
  w.repeat = w.tp_groups < cp ? cp / w.tp_groups : 1;
  w.heads = w.tp_heads / cp;
  w.groups = w.tp_groups < cp ? 1 : w.tp_groups / cp;
  w.inner = w.heads * m.head_dim;
  w.conv = w.inner + 2 * w.groups * m.state;
  return w;
}

// Tokens the convolution and the scan run over on one rank: the whole
// sequences of the micro-batch (under CP each rank holds all positions of
// its heads).
int64_t ScanTokens(const LayerShape& s) { return s.micro_batch * s.seq; }

// MambaContextParallel's all-to-alls over the CP group (none without CP).
// pre_conv_ssm sends z, x, B, C and dt one after another from sequence
// shards to head shards (B and C repeated first where groups are
// replicated), each rearranged into its send order (a copy), and puts the
// joined result back into sequence order (a copy: attention's load
// balancing undone); the backward sends their gradients the other way.
void AddToHeadShards(std::vector<Op>& ops, const LayerShape& s, const std::string& tag) {
  if (s.cp.size == 1) return;
  const RankWidths w = Widths(s);
  const double T = D(s.tokens());  // this rank's sequence shard
  const double bc = D(w.tp_groups * w.repeat * s.mamba.state);
  const double width = 2.0 * D(w.tp_inner) + 2.0 * bc + D(w.tp_heads);
  ops.push_back(Memory("mamba-cp-send-order" + tag, ActBytes(s, 2.0 * T * width), s, 1));
  for (const auto& [name, part] : {std::pair{"z", D(w.tp_inner)}, std::pair{"x", D(w.tp_inner)},
                                   std::pair{"b", bc}, std::pair{"c", bc}, std::pair{"dt", D(w.tp_heads)}}) {
    Op op = Collective("mamba-cp-a2a-" + std::string(name) + tag, trace::CollectiveKind::kAllToAll,
                       ActBytes(s, T * part));
    op.cp_group = true;
    ops.push_back(op);
  }
  ops.push_back(Memory("mamba-cp-sequence-order" + tag, ActBytes(s, 2.0 * T * width), s, 1));
}

// post_conv_ssm: the scan's output y from head shards back to sequence
// shards (load balancing redone, then the exchange and the join); the
// backward sends dy the other way.
void AddToSequenceShards(std::vector<Op>& ops, const LayerShape& s, const std::string& tag) {
  if (s.cp.size == 1) return;
  const RankWidths w = Widths(s);
  const double bytes = ActBytes(s, D(s.tokens()) * D(w.tp_inner));
  ops.push_back(Memory("mamba-cp-balance-order" + tag, 2.0 * bytes, s, 1));
  Op op = Collective("mamba-cp-a2a-y" + tag, trace::CollectiveKind::kAllToAll, bytes);
  op.cp_group = true;
  ops.push_back(op);
  ops.push_back(Memory("mamba-cp-join" + tag, 2.0 * bytes, s, 1));
}

// Chunks of the micro-batch's sequences (each sequence scans on its own).
int64_t Chunks(const LayerShape& s) {
  const int64_t per_sequence = (s.seq + s.mamba.chunk - 1) / s.mamba.chunk;
  return s.micro_batch * per_sequence;
}

// The states passed from chunk to chunk (fp32, chunks x heads x P x N):
// read and written once, with the per-chunk decay.
Op StatePassing(const std::string& name, const LayerShape& s, double passes) {
  const RankWidths w = Widths(s);
  return Memory(name, passes * 4.0 * D(Chunks(s)) * D(w.heads) * D(s.mamba.head_dim) * D(s.mamba.state), s, 1);
}

// Forward scan: dt's softplus and cumulative decay per chunk, the chunk
// states, the state passing, C B^T, and the output.
void SsdForward(std::vector<Op>& ops, const LayerShape& s, const std::string& prefix) {
  const RankWidths w = Widths(s);
  const int64_t Q = s.mamba.chunk, N = s.mamba.state, P = s.mamba.head_dim, c = Chunks(s);
  ops.push_back(Memory(prefix + "ssd-cumsum", ActBytes(s, 2.0 * D(ScanTokens(s)) * D(w.heads)), s, 1));
  ops.push_back(MixerGemm(prefix + "ssd-chunk-state", N, P, Q, c * w.heads, s));
  ops.push_back(StatePassing(prefix + "ssd-state-passing", s, 2.0));
  ops.push_back(MixerGemm(prefix + "ssd-bmm-cb", Q, Q, N, c * w.groups, s));
  ops.push_back(MixerGemm(prefix + "ssd-chunk-scan", Q, P, Q + N, c * w.heads, s));
}

}  // namespace

double SsdForwardFlops(const config::MambaConfig& m, double tokens) {
  const double Q = D(m.chunk), N = D(m.state), P = D(m.head_dim), H = D(m.heads), G = D(m.groups);
  // Per token: its share of the chunk's states (N x P x Q / Q per head),
  // of C B^T (Q x N per group) and of the output (P x (Q + N) per head).
  return 2.0 * tokens * (H * N * P + G * Q * N + H * P * (Q + N));
}

void MambaForward(std::vector<Op>& ops, const LayerShape& s) {
  const RankWidths w = Widths(s);
  const int64_t T = ScanTokens(s);
  // in_proj: the pre-norm is fused into it (Transformer Engine's
  // LayerNormColumnParallelLinear), as for the QKV projection.
  MixerInProjForward(ops, "", "mamba", w.in_proj, s);
  AddToHeadShards(ops, s, "");
  // Causal depthwise convolution with SiLU over x, B and C (causal_conv1d).
  ops.push_back(Memory("mamba-conv", ActBytes(s, 2.0 * D(T) * D(w.conv)), s, 1));
  SsdForward(ops, s, "");
  // Gated RMSNorm: reads y and z, writes the normed product.
  ops.push_back(Memory("mamba-gated-norm", ActBytes(s, 3.0 * D(T) * D(w.inner)), s, 1));
  AddToSequenceShards(ops, s, "");
  MixerOutProjForward(ops, "", "mamba", w.tp_inner, s);
}

void MambaBackward(std::vector<Op>& ops, const LayerShape& s) {
  const RankWidths w = Widths(s);
  const int64_t T = ScanTokens(s);
  const int64_t Q = s.mamba.chunk, N = s.mamba.state, P = s.mamba.head_dim, c = Chunks(s);
  MixerOutProjBackward(ops, "", "mamba", w.tp_inner, s);
  AddToSequenceShards(ops, s, "-bwd");
  // The combined function's backward: the convolution's output again (it
  // keeps only in_proj's output), the gated norm's backward (reads y, z and
  // the gradient, writes dy and dz), then the scan's.
  ops.push_back(Memory("mamba-conv-recompute", ActBytes(s, 2.0 * D(T) * D(w.conv)), s, 1));
  ops.push_back(Memory("mamba-gated-norm-bwd", ActBytes(s, 5.0 * D(T) * D(w.inner)), s, 1));
  // Scan backward: CB and the states recomputed, then dstates (C^T dy per
  // chunk), their passing backward, dx ([CB | C-decay]^T against dy and
  // dstates), dB and dC (Q x N per head), dCB (Q x Q per head) and its
  // products into dB and dC per group, and dt's gradient.
  ops.push_back(MixerGemm("ssd-bmm-cb-recompute", Q, Q, N, c * w.groups, s));
  ops.push_back(MixerGemm("ssd-chunk-state-recompute", N, P, Q, c * w.heads, s));
  ops.push_back(StatePassing("ssd-state-passing-recompute", s, 2.0));
  ops.push_back(MixerGemm("ssd-dstates", N, P, Q, c * w.heads, s));
  ops.push_back(StatePassing("ssd-state-passing-bwd", s, 3.0));
  ops.push_back(MixerGemm("ssd-dx", Q, P, Q + N, c * w.heads, s));
  ops.push_back(MixerGemm("ssd-db", Q, N, P, c * w.heads, s));
  ops.push_back(MixerGemm("ssd-dc", Q, N, P, c * w.heads, s));
  ops.push_back(MixerGemm("ssd-dcb", Q, Q, P, c * w.heads, s));
  ops.push_back(MixerGemm("ssd-dbc-from-cb", Q, N, Q, 2 * c * w.groups, s));
  ops.push_back(Memory("ssd-ddt", ActBytes(s, 3.0 * D(T) * D(w.heads)), s, 1));
  // Convolution backward: reads the gradient and its input, writes dx (the
  // taps' gradient reduced on the side).
  ops.push_back(Memory("mamba-conv-bwd", ActBytes(s, 3.0 * D(T) * D(w.conv)), s, 1));
  AddToHeadShards(ops, s, "-bwd");
  MixerInProjBackward(ops, "", "mamba", w.in_proj, s);
}

}  // namespace stacksim::workload
