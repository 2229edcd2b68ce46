#include "sim/workload/layer_ops.h"

#include <algorithm>
#include <utility>

#include "sim/workload/attention.h"
#include "sim/workload/context_parallel.h"
#include "sim/workload/dense_mlp.h"
#include "sim/workload/gated_delta_net.h"
#include "sim/workload/lora.h"
#include "sim/workload/mamba.h"
#include "sim/workload/mla.h"
#include "sim/workload/moe.h"
#include "sim/workload/op_builders.h"
#include "sim/workload/tp_overlap.h"

namespace stacksim::workload {
namespace {

using config::EagerKernel;

double D(int64_t v) { return static_cast<double>(v); }

}  // namespace

namespace {

using config::LayerKind;

bool HasAttention(LayerKind k) { return k == LayerKind::kDense || k == LayerKind::kMoe || k == LayerKind::kAttention; }
bool HasMlp(LayerKind k) { return k != LayerKind::kMamba && k != LayerKind::kAttention; }
bool HasGatedDeltaNet(LayerKind k) { return k == LayerKind::kGdnDense || k == LayerKind::kGdnMoe; }

void AttentionBlockForward(std::vector<Op>& ops, const LayerShape& s) {
  const int64_t T = s.tokens();
  ops.push_back(NormForward("input-norm", s));
  if (s.mla.enabled) {
    MlaForward(ops, s);
  } else {
    QkvForward(ops, s);
  }
  AttentionCoreForward(ops, s);
  const int exchange = CpExchangeIndex(ops);
  // Gated attention: sigmoid(gate) times the attention output.
  if (s.attention.output_gate) ops.push_back(Memory("attn-gate", ActBytes(s, 3.0 * D(T) * D(QHeads(s) * VDim(s))), s, 1));
  AddForwardCasts(ops, "attn-proj", T, s.hidden, QHeads(s) * VDim(s), 1, false, s);
  LinearForward(ops, "attn-proj", Projection::kAttnOut, T, s.hidden, QHeads(s) * VDim(s), s);
  WaitFor(ops, exchange);
  AddReduce(ops, "tp-attn", s);
  ops.push_back(ResidualForward("attn-residual", s));
}

void MlpBlockForward(std::vector<Op>& ops, const LayerShape& s) {
  ops.push_back(NormForward("mlp-norm", s));
  if (s.moe.enabled) {
    MoeForward(ops, s);
  } else {
    DenseMlpForward(ops, s);
  }
  ops.push_back(ResidualForward("mlp-residual", s));
}

void MlpBlockBackward(std::vector<Op>& ops, const LayerShape& s) {
  ops.push_back(ResidualBackward("mlp-residual-bwd", s));
  if (s.moe.enabled) {
    MoeBackward(ops, s);
  } else {
    DenseMlpBackward(ops, s);
  }
  ops.push_back(NormBackward("mlp-norm-bwd", s));
}

void AttentionBlockBackward(std::vector<Op>& ops, const LayerShape& s) {
  const int64_t T = s.tokens();
  ops.push_back(ResidualBackward("attn-residual-bwd", s));
  AddGather(ops, "ag-attn-grad", s);
  LinearBackward(ops, "attn-proj", Projection::kAttnOut, T, s.hidden, QHeads(s) * VDim(s), s);
  if (s.attention.output_gate) {
    ops.push_back(Memory("attn-gate-bwd", ActBytes(s, 5.0 * D(T) * D(QHeads(s) * VDim(s))), s, 1));
  }
  AttentionCoreBackward(ops, s);
  AddCpGradReduceScatter(ops, s);
  const int exchange = CpExchangeIndex(ops);
  if (s.mla.enabled) {
    MlaBackward(ops, s);  // includes the TP reduction of the latent gradients
  } else {
    QkvBackward(ops, s);
  }
  WaitFor(ops, exchange);
  if (!s.mla.enabled) AddReduce(ops, "tp-attn-grad", s);
  ops.push_back(NormBackward("input-norm-bwd", s));
}

}  // namespace

std::vector<Op> LayerForward(const LayerShape& s) {
  std::vector<Op> ops;
  if (s.kind == LayerKind::kMamba) {
    ops.push_back(NormForward("input-norm", s));
    MambaForward(ops, s);
    ops.push_back(ResidualForward("mamba-residual", s));
  }
  if (HasGatedDeltaNet(s.kind)) {
    ops.push_back(NormForward("input-norm", s));
    GatedDeltaNetForward(ops, s);
    ops.push_back(ResidualForward("attn-residual", s));
  }
  if (HasAttention(s.kind)) AttentionBlockForward(ops, s);
  if (HasMlp(s.kind)) MlpBlockForward(ops, s);
  return OverlapTpCollectives(std::move(ops), s.tp_overlap, s.sequence_parallel, s.tp);
}

std::vector<Op> LayerBackward(const LayerShape& s) {
  std::vector<Op> ops;
  if (HasMlp(s.kind)) MlpBlockBackward(ops, s);
  if (HasAttention(s.kind)) AttentionBlockBackward(ops, s);
  if (HasGatedDeltaNet(s.kind)) {
    ops.push_back(ResidualBackward("attn-residual-bwd", s));
    GatedDeltaNetBackward(ops, s);
    ops.push_back(NormBackward("input-norm-bwd", s));
  }
  if (s.kind == LayerKind::kMamba) {
    ops.push_back(ResidualBackward("mamba-residual-bwd", s));
    MambaBackward(ops, s);
    ops.push_back(NormBackward("input-norm-bwd", s));
  }
  return OverlapTpCollectives(std::move(ops), s.tp_overlap, s.sequence_parallel, s.tp);
}

namespace {

// The shape the ops outside the transformer layers see: eager kernels when
// only the layers are compiled (LayerShape::compiled_layers_only).
LayerShape OutsideLayers(const LayerShape& layers) {
  LayerShape s = layers;
  if (s.compiled_layers_only) s.kernels.fused = false;
  return s;
}

// A loss op of parts of different eager kernel families: the same bytes
// fused or not.
Op LossKernels(const std::string& name, const std::vector<EagerPart>& parts, int kernels, const LayerShape& s) {
  double bytes = 0;
  for (const EagerPart& p : parts) bytes += p.bytes;
  return EagerParts(name, bytes, kernels, parts, kernels, s);
}

}  // namespace

std::vector<Op> EmbeddingForward(const LayerShape& layers) {
  const LayerShape s = OutsideLayers(layers);
  std::vector<Op> ops;
  const double n = D(s.tokens()) * D(s.hidden);
  // Vocabulary-parallel lookup (rows of other ranks are zero), then the sum
  // over TP ranks; learned positions add a second table.
  ops.push_back(Memory("embedding", ActBytes(s, (s.learned_positions ? 4.0 : 2.0) * n), s));
  AddReduce(ops, "tp-embedding", s);
  if (s.dropout) ops.push_back(Memory("embedding-dropout", ActBytes(s, 2 * NormTokens(s) * D(s.hidden)) + n, s));
  return ops;
}

std::vector<Op> EmbeddingBackward(const LayerShape& layers) {
  const LayerShape s = OutsideLayers(layers);
  std::vector<Op> ops;
  if (s.finetune.frozen_base()) return ops;  // a frozen table: no gradient to scatter
  AddGather16(ops, "ag-embedding-grad", s);
  const double n = D(s.tokens()) * D(s.hidden);
  // Scatter-add of token gradients into the (fp32) embedding gradient rows.
  ops.push_back(Memory("embedding-bwd", ActBytes(s, n) + 8.0 * n / std::max(1, s.tp), s));
  return ops;
}

std::vector<Op> HeadForward(const LayerShape& layers) {
  const LayerShape s = OutsideLayers(layers);
  std::vector<Op> ops;
  const int64_t T = s.tokens();
  const int64_t v_rank = s.vocab / s.tp;
  const double logits = D(T) * D(v_rank);
  const double e = s.element_bytes();
  ops.push_back(NormForward("final-norm", s));
  AddGather16(ops, "ag-head", s);
  ops.push_back(Gemm16("logits", T, v_rank, s.hidden, 1, s));
  if (s.loss_upcast) {
    // F.cross_entropy(pred.float(), labels): the cast (e + 4 bytes a logit),
    // then log_softmax reads the fp32 logits and writes its fp32 output.
    ops.push_back(LossKernels("cross-entropy", {{logits * (e + 4), EagerKernel::kCast},
                                                {logits * 8, EagerKernel::kSoftmax}}, 3, s));
  } else {
    // Vocabulary-parallel cross entropy in fp32: read logits, write fp32
    // softmax (Megatron keeps it for the backward), three small all-reduces.
    ops.push_back(Memory("cross-entropy", logits * (e + 4.0 + 4.0), s, 4, EagerKernel::kSoftmax));
  }
  if (s.tp > 1) ops.push_back(Collective("tp-loss", trace::CollectiveKind::kAllReduce, D(T) * 4.0 * 3));
  return ops;
}

std::vector<Op> HeadBackward(const LayerShape& layers) {
  const LayerShape s = OutsideLayers(layers);
  std::vector<Op> ops;
  const int64_t T = s.tokens();
  const int64_t v_rank = s.vocab / s.tp;
  const double logits = D(T) * D(v_rank);
  const double e = s.element_bytes();
  if (s.loss_upcast) {
    // nll_loss's fp32 gradient (a zero fill and a scatter), log_softmax's
    // backward (reads it and the kept output, writes fp32), the cast back.
    ops.push_back(LossKernels("cross-entropy-bwd", {{logits * 4, EagerKernel::kElementwise},
                                                    {logits * 12, EagerKernel::kSoftmax},
                                                    {logits * (4 + e), EagerKernel::kCast}}, 4, s));
  } else {
    ops.push_back(Memory("cross-entropy-bwd", logits * (4.0 + e), s, 2, EagerKernel::kSoftmax));
  }
  if (s.finetune.frozen_base()) {
    ops.push_back(Gemm16("logits-dgrad", T, s.hidden, v_rank, 1, s));  // a frozen output layer
  } else {
    GemmBackward(ops, "logits", T, v_rank, s.hidden, AsBf16(s));
  }
  AddReduce(ops, "tp-head-grad", s);
  ops.push_back(NormBackward("final-norm-bwd", s));
  return ops;
}

void AppendOps(std::vector<Op>& ops, std::vector<Op> more) {
  const int offset = static_cast<int>(ops.size());
  for (Op& op : more) {
    if (op.wait_for >= 0) op.wait_for += offset;
    ops.push_back(std::move(op));
  }
}

std::vector<Op> MtpHeadForward(const LayerShape& s) {
  std::vector<Op> ops = EmbeddingForward(s);  // the shared table, next tokens
  ops.push_back(NormForward("mtp-embedding-norm", s));
  ops.push_back(NormForward("mtp-hidden-norm", s));
  AddGather16(ops, "ag-mtp-proj", s);
  ops.push_back(Gemm("mtp-proj", s.tokens(), s.hidden / s.tp, 2 * s.hidden, 1, s));
  AppendOps(ops, HeadForward(s));
  return ops;
}

std::vector<Op> MtpHeadBackward(const LayerShape& s) {
  std::vector<Op> ops = HeadBackward(s);
  GemmBackward(ops, "mtp-proj", s.tokens(), s.hidden / s.tp, 2 * s.hidden, s);
  AddReduce(ops, "tp-mtp-proj-grad", s);
  ops.push_back(NormBackward("mtp-hidden-norm-bwd", s));
  ops.push_back(NormBackward("mtp-embedding-norm-bwd", s));
  AppendOps(ops, EmbeddingBackward(s));
  return ops;
}

}  // namespace stacksim::workload
