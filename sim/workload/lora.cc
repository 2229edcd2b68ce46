#include "sim/workload/lora.h"

#include <algorithm>

#include "sim/workload/attention.h"
#include "sim/workload/op_builders.h"

namespace stacksim::workload {
namespace {

using config::FinetuneMethod;
using config::LoraTarget;

double D(int64_t v) { return static_cast<double>(v); }

// A layer's linear widths on one TP rank (elements).
struct LinearWidths {
  int64_t hidden = 0, q = 0, kv = 0, attn_out = 0, ffn = 0;
  bool gated = false;
};

LinearWidths WidthsOf(const LayerShape& s) {
  return {s.hidden, QHeads(s) * s.attention.head_dim, KvHeads(s) * s.attention.head_dim, QHeads(s) * VDim(s),
          s.ffn / s.tp, s.gated};
}

LinearWidths WidthsOf(const config::ModelConfig& m, const config::PlanConfig& p) {
  const int64_t q_heads = m.num_attention_heads / p.tp;
  const int64_t kv_heads = std::max<int64_t>(1, m.num_kv_heads / p.tp);
  return {m.hidden_size, q_heads * m.head_dim, kv_heads * m.head_dim, q_heads * m.head_dim, m.intermediate_size / p.tp,
          m.gated_mlp()};
}

// One adapter on this rank: A is d_in x r, B is r x d_out (the replicated
// factor whole, the other split like its projection).
struct Adapter {
  LoraTarget target;
  int64_t d_in = 0, d_out = 0;
};

std::vector<Adapter> AdaptersOf(Projection p, const LinearWidths& w, const config::FinetuneConfig& f) {
  std::vector<Adapter> out;
  auto add = [&](LoraTarget t, int64_t d_in, int64_t d_out) {
    if (f.frozen_base() && f.Has(t)) out.push_back({t, d_in, d_out});
  };
  switch (p) {
    case Projection::kQkv:
      add(LoraTarget::kQ, w.hidden, w.q);
      add(LoraTarget::kK, w.hidden, w.kv);
      add(LoraTarget::kV, w.hidden, w.kv);
      break;
    case Projection::kAttnOut:
      add(LoraTarget::kO, w.attn_out, w.hidden);
      break;
    case Projection::kMlpIn:
      if (w.gated) add(LoraTarget::kGate, w.hidden, w.ffn);
      add(LoraTarget::kUp, w.hidden, w.ffn);
      break;
    case Projection::kMlpOut:
      add(LoraTarget::kDown, w.ffn, w.hidden);
      break;
  }
  return out;
}

std::string AdapterName(const std::string& projection, const Adapter& a, const char* part) {
  return projection + "-lora-" + config::LoraTargetName(a.target) + "-" + part;
}

// QLoRA: F.dequantize_4bit of a k x n weight before the GEMM that reads it.
// Reads the NF4 weights with their double-quantized constants, writes the
// fp32 absmax of each 64-weight block (the first kernel) and the 16-bit
// weights (the second).
void AddDequantize(std::vector<Op>& ops, const std::string& name, double elements, const LayerShape& s) {
  if (s.finetune.method != FinetuneMethod::kQlora) return;
  const double bytes = elements * (config::kNf4BitsPerParam / 8.0 + 4.0 / 64.0 + s.element_bytes());
  ops.push_back(Memory(name + "-dequant-nf4", bytes, s, 2, config::EagerKernel::kCast));
}

}  // namespace

void LinearForward(std::vector<Op>& ops, const std::string& name, Projection projection, int64_t m, int64_t n,
                   int64_t k, const LayerShape& s) {
  AddDequantize(ops, name, D(k) * D(n), s);
  ops.push_back(Gemm(name, m, n, k, 1, s));
  for (const Adapter& a : AdaptersOf(projection, WidthsOf(s), s.finetune)) {
    const int64_t r = s.finetune.rank;
    ops.push_back(Gemm16(AdapterName(name, a, "a"), m, r, a.d_in, 1, s));
    ops.push_back(Gemm16(AdapterName(name, a, "b"), m, a.d_out, r, 1, s));
    // result + lora_B(lora_A(x)) * scaling: read both, write the sum.
    ops.push_back(Memory(AdapterName(name, a, "add"), ActBytes(s, 3.0 * D(m) * D(a.d_out)), s, 2));
  }
}

void LinearBackward(std::vector<Op>& ops, const std::string& name, Projection projection, int64_t m, int64_t n,
                    int64_t k, const LayerShape& s, int wait_for) {
  if (!s.finetune.frozen_base()) {
    GemmBackward(ops, name, m, n, k, s, wait_for);
    return;
  }
  AddCast(ops, name + "-cast-dy", D(m) * D(n), s);
  AddDequantize(ops, name, D(k) * D(n), s);
  ops.push_back(Gemm(name + "-dgrad", m, k, n, 1, s));  // frozen W: no weight gradient
  for (const Adapter& a : AdaptersOf(projection, WidthsOf(s), s.finetune)) {
    const int64_t r = s.finetune.rank;
    // dy scaled, then dB = h^T dy, dh = dy B^T, dA = x^T dh, dx += dh A^T.
    Op db = Gemm16(AdapterName(name, a, "b-wgrad"), r, a.d_out, m, 1, s);
    db.weight_grad = true;
    ops.push_back(Memory(AdapterName(name, a, "scale-bwd"), ActBytes(s, 2.0 * D(m) * D(a.d_out)), s));
    ops.push_back(db);
    ops.push_back(Gemm16(AdapterName(name, a, "b-dgrad"), m, r, a.d_out, 1, s));
    Op da = Gemm16(AdapterName(name, a, "a-wgrad"), a.d_in, r, m, 1, s);
    da.weight_grad = true;
    da.wait_for = wait_for;
    ops.push_back(da);
    ops.push_back(Gemm16(AdapterName(name, a, "a-dgrad"), m, a.d_in, r, 1, s));
    ops.push_back(Memory(AdapterName(name, a, "accumulate-dx"), ActBytes(s, 3.0 * D(m) * D(a.d_in)), s));
  }
}

bool LinearBackwardNeedsInput(Projection projection, const LayerShape& s) {
  return !s.finetune.frozen_base() || !AdaptersOf(projection, WidthsOf(s), s.finetune).empty();
}

double LayerAdapterParameters(const config::ModelConfig& model, const config::PlanConfig& plan) {
  if (!plan.finetune.frozen_base()) return 0;
  const LinearWidths w = WidthsOf(model, plan);
  double n = 0;
  for (Projection p : {Projection::kQkv, Projection::kAttnOut, Projection::kMlpIn, Projection::kMlpOut}) {
    for (const Adapter& a : AdaptersOf(p, w, plan.finetune)) n += D(plan.finetune.rank) * D(a.d_in + a.d_out);
  }
  return n;
}

double LayerTrainableParameters(const config::ModelConfig& model, const config::PlanConfig& plan) {
  if (plan.finetune.frozen_base()) return LayerAdapterParameters(model, plan);
  return D(model.LayerParameterCount()) / plan.tp;
}

double LayerFrozenBytes(const config::ModelConfig& model, const config::PlanConfig& plan, double element_bytes) {
  if (!plan.finetune.frozen_base()) return 0;
  const double linear = D(model.AttentionParameterCount() + model.MlpParameterCount(model.intermediate_size));
  const double rest = D(model.LayerParameterCount()) - linear;  // the norms
  return (linear * plan.finetune.FrozenLinearBytes(element_bytes) + rest * element_bytes) / plan.tp;
}

double LargestLinearElements(const config::ModelConfig& model, const config::PlanConfig& plan) {
  const LinearWidths w = WidthsOf(model, plan);
  const double qkv = D(w.hidden) * D(w.q + 2 * w.kv);
  const double mlp_in = D(w.hidden) * D(w.ffn) * (w.gated ? 2.0 : 1.0);
  return std::max({qkv, D(w.attn_out) * D(w.hidden), mlp_in, D(w.ffn) * D(w.hidden)});
}

}  // namespace stacksim::workload
