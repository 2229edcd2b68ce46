#include "sim/workload/moe.h"

#include <cmath>

#include "sim/workload/moe_dispatch.h"
#include "sim/workload/op_builders.h"

namespace stacksim::workload {
namespace {

using config::EagerKernel;

double D(int64_t v) { return static_cast<double>(v); }

// Router: logits GEMM (bf16), then the top-k over the softmax scores,
// writing the [tokens, experts] fp32 probabilities and bool routing map (one
// fused Transformer Engine kernel, fused_topk_with_score_function; eager:
// softmax, topk and two scatters), and the load-balancing auxiliary loss
// (scores for the loss, tokens per expert, the loss: three fused kernels).
// ASSUMPTION: every MoE model trains with an auxiliary loss (Mixtral, Qwen3,
// GPT-OSS recipes; DeepSeek-V3's sequence-wise one costs the same).
void RouterForward(std::vector<Op>& ops, const LayerShape& s) {
  const double Tl = s.routed_tokens();
  const double te = Tl * D(s.moe.experts);
  const double eb = s.element_bytes();
  ops.push_back(Gemm16("router", static_cast<int64_t>(std::ceil(Tl)), s.moe.experts, s.hidden, 1, s));
  ops.push_back(Memory("router-topk", te * (eb + 4.0 + 1.0) + Tl * D(s.moe.top_k) * 8.0, s, 1, EagerKernel::kSoftmax,
                       2.0, 4));
  ops.push_back(Memory("router-aux-loss", te * (eb + 4.0 + 4.0 + 1.0), s, 3, EagerKernel::kSoftmax, 1.0, 6));
}

// Gradients of both router paths to the logits (aux loss: read scores and
// their gradient, write the logits' gradient; top-k: the same from the
// probabilities' gradient, plus the sum of the two), then the GEMM's.
void RouterBackward(std::vector<Op>& ops, const LayerShape& s) {
  const double Tl = s.routed_tokens();
  const double te = Tl * D(s.moe.experts);
  const double eb = s.element_bytes();
  ops.push_back(Memory("router-aux-loss-bwd", te * (4.0 + 4.0 + eb), s, 2, EagerKernel::kSoftmax));
  ops.push_back(Memory("router-topk-bwd", te * (4.0 + 4.0 + 1.0 + eb) + te * 3.0 * eb, s, 2, EagerKernel::kSoftmax));
  GemmBackward(ops, "router", static_cast<int64_t>(std::ceil(Tl)), s.moe.experts, s.hidden, AsBf16(s));
}

void SharedExpertBackward(std::vector<Op>& ops, const LayerShape& s) {
  if (s.moe.shared_ffn <= 0) return;
  const int64_t T = s.tokens();
  const int64_t f = s.moe.shared_ffn / s.tp;
  AddGather(ops, "ag-shared-grad", s);
  GemmBackward(ops, "shared-fc2", T, s.hidden, f, s);
  ops.push_back(Memory("shared-act-bwd", ActBytes(s, (s.gated ? 5.0 : 3.0) * D(T) * D(f)), s, 1, ActivationKernel(s)));
  AddGather(ops, "ag-shared-input", s);
  GemmBackward(ops, "shared-fc1", T, (s.gated ? 2 : 1) * f, s.hidden, s);
  AddReduce(ops, "tp-shared-grad", s);
}

}  // namespace

double ExpertTokens(const LayerShape& s) { return D(s.tokens_per_local_expert()) * D(s.moe.local_experts()); }

Op ExpertActivation(const LayerShape& s) {
  return Memory("expert-act", ActBytes(s, (s.gated ? 3.0 : 2.0) * ExpertTokens(s) * D(s.moe.expert_ffn_shard())), s, 1,
                ActivationKernel(s));
}

void MarkExpert(std::vector<Op>& ops, size_t from) {
  for (size_t i = from; i < ops.size(); ++i) ops[i].expert = true;
}

void SharedExpertForward(std::vector<Op>& ops, const LayerShape& s) {
  if (s.moe.shared_ffn <= 0) return;
  const int64_t T = s.tokens();
  const int64_t f = s.moe.shared_ffn / s.tp;
  AddGather(ops, "ag-shared", s);
  AddForwardCasts(ops, "shared-fc1", T, (s.gated ? 2 : 1) * f, s.hidden, 1, false, s);
  ops.push_back(Gemm("shared-fc1", T, (s.gated ? 2 : 1) * f, s.hidden, 1, s));
  ops.push_back(Memory("shared-act", ActBytes(s, (s.gated ? 3.0 : 2.0) * D(T) * D(f)), s, 1, ActivationKernel(s)));
  AddForwardCasts(ops, "shared-fc2", T, s.hidden, f, 1, false, s);
  ops.push_back(Gemm("shared-fc2", T, s.hidden, f, 1, s));
  // Serving's fused MoE adds the shared experts' partial output to the
  // routed experts' before the one all-reduce of TokenCombine.
  if (!s.moe.tp_replicated_tokens) AddReduce(ops, "tp-shared", s);
}

namespace {

// The local routed experts as grouped GEMMs, one per local expert, over the
// busiest rank's tokens: FC1, the activation, FC2.
void RoutedExpertsForward(std::vector<Op>& ops, const LayerShape& s) {
  const int64_t m = s.tokens_per_local_expert();
  const int64_t E = s.moe.local_experts();
  const int64_t f = s.moe.expert_ffn_shard();
  const size_t first_expert_op = ops.size();
  AddForwardCasts(ops, "expert-fc1", m, (s.gated ? 2 : 1) * f, s.moe_hidden(), E, /*input_is_fp8=*/Fp8Dispatch(s), s);
  ops.push_back(Gemm("expert-fc1", m, (s.gated ? 2 : 1) * f, s.moe_hidden(), E, s));
  ops.push_back(ExpertActivation(s));
  AddForwardCasts(ops, "expert-fc2", m, s.moe_hidden(), f, E, false, s);
  ops.push_back(Gemm("expert-fc2", m, s.moe_hidden(), f, E, s));
  MarkExpert(ops, first_expert_op);
}

void RoutedExpertsBackward(std::vector<Op>& ops, const LayerShape& s) {
  const int64_t m = s.tokens_per_local_expert();
  const int64_t E = s.moe.local_experts();
  const int64_t f = s.moe.expert_ffn_shard();
  const size_t first_expert_op = ops.size();
  GroupedGemmBackward(ops, "expert-fc2", m, s.moe_hidden(), f, E, s, /*dy_is_fp8=*/Fp8Dispatch(s));
  ops.push_back(Memory("expert-act-bwd", ActBytes(s, (s.gated ? 5.0 : 3.0) * ExpertTokens(s) * D(f)), s, 1,
                       ActivationKernel(s)));
  GroupedGemmBackward(ops, "expert-fc1", m, (s.gated ? 2 : 1) * f, s.moe_hidden(), E, s);
  MarkExpert(ops, first_expert_op);
}

}  // namespace

// Latent MoE's duplicated projections (Megatron-Core MoELayer
// fc1_latent_proj after routing, before the dispatch; fc2_latent_proj
// after the combine): each rank's routed tokens, hidden <-> latent.
void LatentProjectionForward(std::vector<Op>& ops, const std::string& name, bool down, const LayerShape& s) {
  if (s.moe.latent <= 0) return;
  const auto T = static_cast<int64_t>(std::ceil(s.routed_tokens()));
  const int64_t n = down ? s.moe.latent : s.hidden, k = down ? s.hidden : s.moe.latent;
  AddForwardCasts(ops, name, T, n, k, 1, false, s);
  ops.push_back(Gemm(name, T, n, k, 1, s));
}

void LatentProjectionBackward(std::vector<Op>& ops, const std::string& name, bool down, const LayerShape& s) {
  if (s.moe.latent <= 0) return;
  const auto T = static_cast<int64_t>(std::ceil(s.routed_tokens()));
  GemmBackward(ops, name, T, down ? s.moe.latent : s.hidden, down ? s.hidden : s.moe.latent, s);
}

void MoeForward(std::vector<Op>& ops, const LayerShape& s) {
  RouterForward(ops, s);
  LatentProjectionForward(ops, "moe-latent-down", /*down=*/true, s);
  TokenDispatch(ops, s);
  RoutedExpertsForward(ops, s);
  TokenCombine(ops, s);
  LatentProjectionForward(ops, "moe-latent-up", /*down=*/false, s);
  SharedExpertForward(ops, s);
}

void MoeBackward(std::vector<Op>& ops, const LayerShape& s) {
  SharedExpertBackward(ops, s);
  LatentProjectionBackward(ops, "moe-latent-up", /*down=*/false, s);
  TokenCombineBackward(ops, s);
  RoutedExpertsBackward(ops, s);
  TokenDispatchBackward(ops, s);
  LatentProjectionBackward(ops, "moe-latent-down", /*down=*/true, s);
  RouterBackward(ops, s);
}

}  // namespace stacksim::workload
