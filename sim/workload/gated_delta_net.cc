#include "sim/workload/gated_delta_net.h"

#include <array>
#include <string>

#include "sim/workload/op_builders.h"

namespace stacksim::workload {
namespace {

double D(int64_t v) { return static_cast<double>(v); }

struct RankWidths {
  int64_t key_heads, value_heads, qk, v, conv, in_proj;
};

RankWidths Widths(const LayerShape& s) {
  const config::GatedDeltaNetConfig& g = s.gdn;
  RankWidths w;
  w.key_heads = g.key_heads / s.tp;
  w.value_heads = g.value_heads / s.tp;
  w.qk = w.key_heads * g.key_dim;
  w.v = w.value_heads * g.value_dim;
  w.conv = 2 * w.qk + w.v;
  w.in_proj = 2 * w.qk + 2 * w.v + 2 * w.value_heads;  // q k v z, then beta and the decay
  return w;
}

// One product of the chunked rule: m x n, inner k, per chunk and value head.
struct Product {
  const char* name;
  int64_t m, n, k;
};

// The forward's products per chunk and value head (see the header).
std::array<Product, 7> ForwardProducts(const config::GatedDeltaNetConfig& g) {
  const int64_t C = g.chunk, dk = g.key_dim, dv = g.value_dim;
  return {{{"gdn-kkt", C, C, dk},
           {"gdn-solve", C, C, C},
           {"gdn-wu", C, dk + dv, C},
           {"gdn-state-update", dk, dv, C},
           {"gdn-state-apply", C, dv, dk},
           {"gdn-qk", C, C, dk},
           {"gdn-output", C, dv, dk + C}}};
}

int64_t Chunks(const LayerShape& s) { return s.micro_batch * ((s.seq + s.gdn.chunk - 1) / s.gdn.chunk); }

// The chunk states, fp32 (chunks x value heads x dk x dv), written or read once.
Op States(const std::string& name, const LayerShape& s, double passes) {
  const RankWidths w = Widths(s);
  return Memory(name, passes * 4.0 * D(Chunks(s)) * D(w.value_heads) * D(s.gdn.key_dim) * D(s.gdn.value_dim), s, 1);
}

}  // namespace

double GatedDeltaRuleForwardFlops(const config::GatedDeltaNetConfig& g, double tokens) {
  double per_chunk = 0;
  for (const Product& p : ForwardProducts(g)) per_chunk += 2.0 * D(p.m) * D(p.n) * D(p.k);
  return per_chunk * D(g.value_heads) * tokens / D(g.chunk);
}

void GatedDeltaNetForward(std::vector<Op>& ops, const LayerShape& s) {
  const RankWidths w = Widths(s);
  const int64_t T = s.tokens(), c = Chunks(s);
  MixerInProjForward(ops, "gdn-", "gdn", w.in_proj, s);
  // Causal convolution with SiLU over q, k and v; then the L2 norms of q
  // and k, beta's sigmoid and the decay (read and written once).
  ops.push_back(Memory("gdn-conv", ActBytes(s, 2.0 * D(T) * D(w.conv)), s, 1));
  ops.push_back(Memory("gdn-prep", ActBytes(s, 4.0 * D(T) * D(w.qk) + 4.0 * D(T) * D(w.value_heads)), s, 2));
  for (const Product& p : ForwardProducts(s.gdn)) ops.push_back(MixerGemm(p.name, p.m, p.n, p.k, c * w.value_heads, s));
  ops.push_back(States("gdn-states", s, 1.0));
  // Gated RMSNorm per value head: reads o and z, writes the normed product.
  ops.push_back(Memory("gdn-gated-norm", ActBytes(s, 3.0 * D(T) * D(w.v)), s, 1));
  MixerOutProjForward(ops, "gdn-", "gdn", w.v, s);
}

void GatedDeltaNetBackward(std::vector<Op>& ops, const LayerShape& s) {
  const RankWidths w = Widths(s);
  const int64_t T = s.tokens(), c = Chunks(s);
  MixerOutProjBackward(ops, "gdn-", "gdn", w.v, s);
  ops.push_back(Memory("gdn-gated-norm-bwd", ActBytes(s, 5.0 * D(T) * D(w.v)), s, 1));
  // The rule's backward: the chunk states again (the forward keeps only its
  // inputs), then each product's two transposed products.
  for (const Product& p : ForwardProducts(s.gdn)) {
    const std::string name = p.name;
    if (name == "gdn-qk" || name == "gdn-output") continue;  // the states need the first five
    ops.push_back(MixerGemm(name + "-recompute", p.m, p.n, p.k, c * w.value_heads, s));
  }
  ops.push_back(States("gdn-states-recompute", s, 1.0));
  for (const Product& p : ForwardProducts(s.gdn)) {
    const std::string name = p.name;
    ops.push_back(MixerGemm(name + "-bwd-a", p.m, p.k, p.n, c * w.value_heads, s));
    ops.push_back(MixerGemm(name + "-bwd-b", p.k, p.n, p.m, c * w.value_heads, s));
  }
  ops.push_back(States("gdn-states-bwd", s, 2.0));
  ops.push_back(Memory("gdn-prep-bwd", ActBytes(s, 6.0 * D(T) * D(w.qk) + 6.0 * D(T) * D(w.value_heads)), s, 2));
  ops.push_back(Memory("gdn-conv-bwd", ActBytes(s, 3.0 * D(T) * D(w.conv)), s, 1));
  MixerInProjBackward(ops, "gdn-", "gdn", w.in_proj, s);
}

}  // namespace stacksim::workload
