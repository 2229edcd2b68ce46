#include "sim/workload/mamba.h"

#include <algorithm>
#include <string>

#include "sim/workload/op_builders.h"

namespace stacksim::workload {
namespace {

double D(int64_t v) { return static_cast<double>(v); }

// The widths one TP rank holds.
struct RankWidths {
  int64_t heads, groups, inner, in_proj, conv;
};

RankWidths Widths(const LayerShape& s) {
  const config::MambaConfig& m = s.mamba;
  RankWidths w;
  w.heads = m.heads / s.tp;
  w.groups = m.groups / s.tp;
  w.inner = w.heads * m.head_dim;
  w.in_proj = 2 * w.inner + 2 * w.groups * m.state + w.heads;
  w.conv = w.inner + 2 * w.groups * m.state;
  return w;
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
  ops.push_back(Memory(prefix + "ssd-cumsum", ActBytes(s, 2.0 * D(s.tokens()) * D(w.heads)), s, 1));
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
  const int64_t T = s.tokens();
  // in_proj: the pre-norm is fused into it (Transformer Engine's
  // LayerNormColumnParallelLinear), as for the QKV projection.
  MixerInProjForward(ops, "", "mamba", w.in_proj, s);
  // Causal depthwise convolution with SiLU over x, B and C (causal_conv1d).
  ops.push_back(Memory("mamba-conv", ActBytes(s, 2.0 * D(T) * D(w.conv)), s, 1));
  SsdForward(ops, s, "");
  // Gated RMSNorm: reads y and z, writes the normed product.
  ops.push_back(Memory("mamba-gated-norm", ActBytes(s, 3.0 * D(T) * D(w.inner)), s, 1));
  MixerOutProjForward(ops, "", "mamba", w.inner, s);
}

void MambaBackward(std::vector<Op>& ops, const LayerShape& s) {
  const RankWidths w = Widths(s);
  const int64_t T = s.tokens();
  const int64_t Q = s.mamba.chunk, N = s.mamba.state, P = s.mamba.head_dim, c = Chunks(s);
  MixerOutProjBackward(ops, "", "mamba", w.inner, s);
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
  MixerInProjBackward(ops, "", "mamba", w.in_proj, s);
}

}  // namespace stacksim::workload
