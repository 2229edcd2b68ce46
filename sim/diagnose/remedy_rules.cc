#include "sim/diagnose/remedy_rules.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "sim/util/error.h"
#include "sim/workload/placement.h"

namespace stacksim::diagnose {
namespace {

using CandidateList = std::vector<Candidate>;

// The scenario's plan with `edit` applied.
template <typename Edit>
Candidate Change(const RemedyContext& c, std::string finding, std::string change, Edit edit) {
  Candidate x;
  x.finding = std::move(finding);
  x.change = std::move(change);
  x.plan = c.plan();
  x.node_order = c.scenario().node_order;
  edit(x.plan);
  return x;
}

// Percent of the step.
double Share(const RemedyContext& c, Time t) { return 100.0 * t.seconds() / c.step().seconds(); }

// Reshaping the plan for a communication stream that costs under 1% of the
// step is noise, not a remedy.
Time Noise(const RemedyContext& c) { return c.step() * 0.01; }

bool Divides(int64_t a, int64_t b) { return a > 0 && b % a == 0; }

// For reshapes offered only where the plan rules allow them (the rest are
// listed as invalid when evaluated).
bool Valid(const RemedyContext& c, const config::PlanConfig& q) {
  config::ScenarioConfig t = c.scenario();
  t.plan = q;
  try {
    config::ValidatePlan(t, t.file);
    return true;
  } catch (const InputError&) {
    return false;
  }
}

// Layer 4: compilation.

CandidateList FusedKernels(const RemedyContext& c) {
  if (c.plan().kernels != config::KernelFusion::kEager) return {};
  const Time x = c.accounting.eager_excess;
  return {Change(c,
                 fmt::format("eager (unfused) memory-bound kernels cost {:.3f} s beyond fused ones ({:.1f}% of the step)",
                             x.seconds(), Share(c, x)),
                 "fused kernels (plan.kernels fused: Transformer Engine / torch.compile)",
                 [](config::PlanConfig& q) { q.kernels = config::KernelFusion::kFused; })};
}

CandidateList CudaGraphs(const RemedyContext& c) {
  const Time x = c.accounting.launch_excess;
  if (c.plan().cuda_graphs || x <= Time::Zero()) return {};
  return {Change(c,
                 fmt::format("launch-bound ops: {:.3f} s of kernel issue beyond kernel time ({:.1f}% of the step)",
                             x.seconds(), Share(c, x)),
                 "CUDA graphs on (plan.cuda_graphs true)", [](config::PlanConfig& q) { q.cuda_graphs = true; })};
}

CandidateList Fp8(const RemedyContext& c) {
  const config::ProfileConfig& profile = c.scenario().profile;
  if (c.plan().precision != config::Precision::kBf16 || !profile.Peak(config::Precision::kFp8) ||
      !profile.gemm.max_efficiency[static_cast<int>(config::Precision::kFp8)]) {
    return {};
  }
  return {Change(c,
                 fmt::format("bf16 GEMMs on a GPU with an fp8 peak of {:.0f} TFLOP/s",
                             profile.Peak(config::Precision::kFp8)->value / 1e12),
                 "fp8 linear layers (plan.precision fp8, Transformer Engine recipe)",
                 [](config::PlanConfig& q) { q.precision = config::Precision::kFp8; })};
}

CandidateList FlashAttention(const RemedyContext& c) {
  if (c.plan().attention == config::AttentionImpl::kFlash) return {};
  return {Change(c, fmt::format("attention runs as {} kernels", config::AttentionName(c.plan().attention)),
                 "fused flash attention (plan.attention flash)",
                 [](config::PlanConfig& q) { q.attention = config::AttentionImpl::kFlash; })};
}

// Layer 1: a compute-bound step whose matmuls run well below peak: bigger
// GEMMs (a larger micro-batch; less tensor parallelism is a layer-2 rule).
CandidateList LargerMicroBatch(const RemedyContext& c) {
  const config::PlanConfig& p = c.plan();
  if (c.split.step_class != StepClass::kComputeBound || p.micro_batch * 2 * p.dp > p.global_batch ||
      p.global_batch % (p.micro_batch * 2 * p.dp) != 0) {
    return {};
  }
  return {Change(c, fmt::format("compute-bound step, matmuls below peak: {:.3f} s", c.accounting.compute_class.seconds()),
                 fmt::format("larger micro-batches: {} -> {} (bigger GEMMs)", p.micro_batch, p.micro_batch * 2),
                 [](config::PlanConfig& q) { q.micro_batch *= 2; })};
}

// Layer 5: memory capacity forces recomputation; offload.

CandidateList SelectiveRecompute(const RemedyContext& c) {
  if (c.plan().recompute != config::Recompute::kFull) return {};
  const Time x = c.accounting.recompute;
  return {Change(c, fmt::format("full recomputation costs {:.3f} s ({:.1f}% of the step)", x.seconds(), Share(c, x)),
                 "selective instead of full recompute (if it fits)",
                 [](config::PlanConfig& q) { q.recompute = config::Recompute::kSelective; })};
}

CandidateList NoRecompute(const RemedyContext& c) {
  const Time x = c.accounting.recompute;
  if (c.plan().recompute == config::Recompute::kNone || x <= Time::Zero()) return {};
  return {Change(c,
                 fmt::format("{} recomputation costs {:.3f} s ({:.1f}% of the step)",
                             config::RecomputeName(c.plan().recompute), x.seconds(), Share(c, x)),
                 "no recompute (if it fits)", [](config::PlanConfig& q) { q.recompute = config::Recompute::kNone; })};
}

CandidateList OverlapOffload(const RemedyContext& c) {
  const Time x = c.breakdown().offload_exposed;
  if (x <= Time::Zero() || c.plan().overlap_offload) return {};
  return {Change(c, fmt::format("offload transfers exposed: {:.3f} s", x.seconds()),
                 "overlap offload transfers with compute", [](config::PlanConfig& q) { q.overlap_offload = true; })};
}

CandidateList NoOffload(const RemedyContext& c) {
  const Time x = c.breakdown().offload_exposed;
  if (x <= Time::Zero()) return {};
  return {Change(c, fmt::format("offload (PCIe, host optimizer) exposed: {:.3f} s", x.seconds()),
                 "no offload (keep the optimizer on the GPU, if it fits)", [](config::PlanConfig& q) {
                   q.offload_optimizer = config::OffloadTarget::kNone;
                   q.offload_params = config::OffloadTarget::kNone;
                 })};
}

// Layer 2: the pipeline bubble.

bool HasBubble(const RemedyContext& c) { return c.plan().pp > 1 && c.breakdown().bubble > Time::Zero(); }

std::string BubbleFinding(const RemedyContext& c) {
  const config::PlanConfig& p = c.plan();
  const Time bubble = c.breakdown().bubble;
  return fmt::format("pipeline idle {:.3f} s ({:.1f}% of the step; pp {}, {} micro-batches per pipeline)",
                     bubble.seconds(), Share(c, bubble), p.pp, p.micro_batches());
}

CandidateList InterleavedSchedule(const RemedyContext& c) {
  if (!HasBubble(c)) return {};
  const config::PlanConfig& p = c.plan();
  const int64_t layers = c.scenario().model.num_layers;
  CandidateList out;
  if (p.schedule == config::PipelineScheduleKind::kOneFOneB || p.schedule == config::PipelineScheduleKind::kGpipe) {
    for (int vp : {2, 3, 4, 6, 8}) {
      if (!Divides(p.pp * vp, layers)) continue;
      out.push_back(Change(c, BubbleFinding(c), fmt::format("interleaved schedule, vp {}", vp),
                           [vp](config::PlanConfig& q) {
                             q.vp = vp;
                             q.schedule = config::PipelineScheduleKind::kInterleaved;
                           }));
    }
  }
  if (p.schedule == config::PipelineScheduleKind::kInterleaved) {
    for (int vp : {p.vp + 1, p.vp * 2}) {
      if (!Divides(p.pp * vp, layers)) continue;
      out.push_back(Change(c, BubbleFinding(c), fmt::format("interleave more: vp {} -> {}", p.vp, vp),
                           [vp](config::PlanConfig& q) { q.vp = vp; }));
    }
  }
  return out;
}

CandidateList ZeroBubble(const RemedyContext& c) {
  if (!HasBubble(c) || c.plan().schedule == config::PipelineScheduleKind::kZeroBubbleH1) return {};
  return {Change(c, BubbleFinding(c), "zb-h1 schedule (zero-bubble, weight gradients fill the bubble)",
                 [](config::PlanConfig& q) {
                   q.vp = 1;
                   q.schedule = config::PipelineScheduleKind::kZeroBubbleH1;
                 })};
}

CandidateList SmallerMicroBatch(const RemedyContext& c) {
  const config::PlanConfig& p = c.plan();
  if (!HasBubble(c) || p.micro_batch <= 1) return {};
  return {Change(c, BubbleFinding(c),
                 fmt::format("smaller micro-batches: {} -> {} (more micro-batches per pipeline)", p.micro_batch,
                             p.micro_batch / 2),
                 [](config::PlanConfig& q) { q.micro_batch /= 2; })};
}

CandidateList FewerStages(const RemedyContext& c) {
  const config::PlanConfig& p = c.plan();
  if (!HasBubble(c) || p.pp % 2 != 0) return {};
  return {Change(c, BubbleFinding(c),
                 fmt::format("fewer stages, more data parallelism: pp {} -> {}, dp {} -> {}", p.pp, p.pp / 2, p.dp,
                             p.dp * 2),
                 [](config::PlanConfig& q) {
                   q.pp /= 2;
                   q.dp *= 2;
                 })};
}

// Layer 2: tensor parallelism.

std::string TpFinding(const RemedyContext& c) {
  const Time x = c.breakdown().tp_exposed;
  const std::string& link = c.accounting.tp_link;
  return fmt::format("exposed TP communication {:.3f} s ({:.1f}% of the step; tp {} {})", x.seconds(), Share(c, x),
                     c.plan().tp, link.empty() ? "" : "over " + link);
}

CandidateList SequenceParallel(const RemedyContext& c) {
  const config::PlanConfig& p = c.plan();
  if (c.breakdown().tp_exposed <= Noise(c) || p.tp <= 1 || p.sequence_parallel) return {};
  return {Change(c, TpFinding(c), "sequence parallelism on", [](config::PlanConfig& q) { q.sequence_parallel = true; })};
}

CandidateList LessTp(const RemedyContext& c) {
  const config::PlanConfig& p = c.plan();
  if (c.breakdown().tp_exposed <= Noise(c) || p.tp % 2 != 0) return {};
  return {Change(c, TpFinding(c),
                 fmt::format("less tensor parallelism: tp {} -> {}, dp {} -> {}", p.tp, p.tp / 2, p.dp, p.dp * 2),
                 [](config::PlanConfig& q) {
                   q.tp /= 2;
                   q.dp *= 2;
                   if (q.tp == 1) q.sequence_parallel = false;
                 })};
}

// Layer 2: data parallelism.

std::string DpFinding(const RemedyContext& c) {
  const Time x = c.breakdown().dp_exposed;
  return fmt::format("exposed DP communication {:.3f} s ({:.1f}% of the step; dp {}, {})", x.seconds(), Share(c, x),
                     c.plan().dp, config::ShardingName(c.plan().sharding));
}

CandidateList OverlapGradReduce(const RemedyContext& c) {
  if (c.breakdown().dp_exposed <= Noise(c) || c.plan().overlap_grad_reduce) return {};
  return {Change(c, DpFinding(c), "overlap gradient reduction with the backward",
                 [](config::PlanConfig& q) { q.overlap_grad_reduce = true; })};
}

CandidateList MoreTp(const RemedyContext& c) {
  const config::PlanConfig& p = c.plan();
  if (c.breakdown().dp_exposed <= Noise(c) || p.dp % 2 != 0 || p.tp * 2 > c.scenario().topology.scale_up.domain_gpus) {
    return {};
  }
  return {Change(c, DpFinding(c),
                 fmt::format("more tensor parallelism: tp {} -> {}, dp {} -> {}", p.tp, p.tp * 2, p.dp, p.dp / 2),
                 [](config::PlanConfig& q) {
                   q.tp *= 2;
                   q.dp /= 2;
                   q.sequence_parallel = true;
                 })};
}

CandidateList MorePipelineStages(const RemedyContext& c) {
  const config::PlanConfig& p = c.plan();
  if (c.breakdown().dp_exposed <= Noise(c) || p.dp % 2 != 0 ||
      !Divides(p.pp * 2 * p.vp, c.scenario().model.num_layers)) {
    return {};
  }
  return {Change(c, DpFinding(c),
                 fmt::format("more pipeline stages: pp {} -> {}, dp {} -> {}", p.pp, p.pp * 2, p.dp, p.dp / 2),
                 [](config::PlanConfig& q) {
                   q.pp *= 2;
                   q.dp /= 2;
                 })};
}

// Layer 2: placement of the pipeline. With tp x cp below the domain and
// stages in different domains, the pipeline-inner order (Megatron-LM's
// --use-tp-pp-dp-mapping) moves the sends onto NVLink and the gradient
// collectives onto the NICs; the reverse when the gradients are exposed.

CandidateList PipelineInnerRankOrder(const RemedyContext& c) {
  const config::PlanConfig& p = c.plan();
  const Time x = c.breakdown().pp_exposed;
  const int domain_gpus = workload::DomainSize(c.scenario().topology);
  if (x <= Noise(c) || p.pp <= 1 || p.rank_order != config::RankOrder::kTpCpDpPp || p.tp * p.cp >= domain_gpus ||
      !PipelineCrossesDomains(p, c.scenario().topology)) {
    return {};
  }
  return {Change(c,
                 fmt::format("exposed PP communication {:.3f} s ({:.1f}% of the step); pipeline neighbours sit in "
                             "different NVLink domains while tp x cp = {} leaves room in the {}-GPU domain",
                             x.seconds(), Share(c, x), p.tp * p.cp, domain_gpus),
                 "pipeline stages inside the NVLink domain (plan.rank_order tp-cp-pp-dp: sends on NVLink, gradients "
                 "over the NICs)",
                 [](config::PlanConfig& q) { q.rank_order = config::RankOrder::kTpCpPpDp; })};
}

CandidateList ReplicaInnerRankOrder(const RemedyContext& c) {
  const config::PlanConfig& p = c.plan();
  const Time x = c.breakdown().dp_exposed;
  if (x <= Noise(c) || p.rank_order != config::RankOrder::kTpCpPpDp) return {};
  return {Change(c,
                 fmt::format("exposed DP communication {:.3f} s ({:.1f}% of the step) with the pipeline-inner rank "
                             "order (data-parallel replicas tp x cp x pp = {} ranks apart)",
                             x.seconds(), Share(c, x), p.tp * p.cp * p.pp),
                 "data-parallel replicas next to each other (plan.rank_order tp-cp-dp-pp, Megatron-LM's default)",
                 [](config::PlanConfig& q) { q.rank_order = config::RankOrder::kTpCpDpPp; })};
}

// Layer 2: context parallelism. Its K/V exchange is a TP-stream collective
// on the CP group (simulate counts it in TP's exposed time).

bool HasCpExposed(const RemedyContext& c) { return c.plan().cp > 1 && c.accounting.cp_exposed > Noise(c); }

std::string CpFinding(const RemedyContext& c) {
  const Time x = c.accounting.cp_exposed;
  return fmt::format("exposed CP communication {:.3f} s ({:.1f}% of the step, counted in TP's; cp {}, {})",
                     x.seconds(), Share(c, x), c.plan().cp, config::CpCommName(c.plan().cp_comm));
}

CandidateList OtherCpComm(const RemedyContext& c) {
  if (!HasCpExposed(c)) return {};
  const config::PlanConfig& p = c.plan();
  const config::CpComm other = p.cp_comm == config::CpComm::kP2p ? config::CpComm::kAllGather : config::CpComm::kP2p;
  config::PlanConfig q = p;
  q.cp_comm = other;
  if (!Valid(c, q)) return {};
  return {Change(c, CpFinding(c),
                 other == config::CpComm::kAllGather
                     ? "all-gather context parallelism (plan.cp_comm allgather: one K/V gather, Llama 3)"
                     : "ring context parallelism (plan.cp_comm p2p: K/V exchange overlapped with attention)",
                 [other](config::PlanConfig& r) { r.cp_comm = other; })};
}

CandidateList LessCp(const RemedyContext& c) {
  const config::PlanConfig& p = c.plan();
  if (!HasCpExposed(c) || p.cp % 2 != 0) return {};
  config::PlanConfig more_dp = p, more_tp = p;
  more_dp.cp /= 2;
  more_dp.dp *= 2;
  more_tp.cp /= 2;
  more_tp.tp *= 2;
  more_tp.sequence_parallel = true;
  if (Valid(c, more_dp)) {
    return {Change(c, CpFinding(c),
                   fmt::format("less context parallelism: cp {} -> {}, dp {} -> {}", p.cp, p.cp / 2, p.dp, p.dp * 2),
                   [](config::PlanConfig& r) {
                     r.cp /= 2;
                     r.dp *= 2;
                   })};
  }
  if (Valid(c, more_tp)) {
    return {Change(c, CpFinding(c),
                   fmt::format("less context parallelism: cp {} -> {}, tp {} -> {}", p.cp, p.cp / 2, p.tp, p.tp * 2),
                   [](config::PlanConfig& r) {
                     r.cp /= 2;
                     r.tp *= 2;
                     r.sequence_parallel = true;
                   })};
  }
  return {};
}

// Layer 2: expert parallelism.

trace::CommGroup EpGroup(const RemedyContext& c) { return workload::PlacePlan(c.plan(), c.scenario().topology).ep; }

std::string EpFinding(const RemedyContext& c, const trace::CommGroup& ep_group) {
  const Time x = c.breakdown().ep_exposed;
  return fmt::format("exposed EP all-to-all {:.3f} s ({:.1f}% of the step; ep {} over {})", x.seconds(), Share(c, x),
                     c.plan().ep, ep_group.nodes > 1 ? fmt::format("{} nodes", ep_group.nodes) : "NVLink");
}

// Hierarchical dispatch sends one copy per destination node: nothing to save
// while the whole EP group shares one domain.
CandidateList HierarchicalDispatch(const RemedyContext& c) {
  if (!c.scenario().model.is_moe()) return {};
  const trace::CommGroup ep_group = EpGroup(c);
  if (c.breakdown().ep_exposed <= Time::Zero() || c.plan().dispatcher != config::MoeDispatcher::kAllToAll ||
      ep_group.nodes <= 1) {
    return {};
  }
  return {Change(c, EpFinding(c, ep_group), "hierarchical (DeepEP-style) token dispatch",
                 [](config::PlanConfig& q) { q.dispatcher = config::MoeDispatcher::kHierarchical; })};
}

// The largest EP degree whose group fits one NVLink domain.
CandidateList EpInsideDomain(const RemedyContext& c) {
  if (!c.scenario().model.is_moe()) return {};
  const config::PlanConfig& p = c.plan();
  const trace::CommGroup ep_group = EpGroup(c);
  if (c.breakdown().ep_exposed <= Noise(c) || ep_group.nodes <= 1) return {};
  const int domain_gpus = workload::DomainSize(c.scenario().topology);
  for (int ep = std::min(p.ep / 2, domain_gpus); ep >= 2; --ep) {
    config::PlanConfig q = p;
    q.ep = ep;
    if (domain_gpus % ep != 0 || !Valid(c, q)) continue;
    return {Change(c, EpFinding(c, ep_group), fmt::format("expert parallelism inside the NVLink domain: ep {} -> {}", p.ep, ep),
                   [ep](config::PlanConfig& r) { r.ep = ep; })};
  }
  return {};
}

CandidateList LessEp(const RemedyContext& c) {
  const config::PlanConfig& p = c.plan();
  if (!c.scenario().model.is_moe() || c.breakdown().ep_exposed <= Noise(c) || p.ep % 2 != 0) return {};
  config::PlanConfig q = p;
  q.ep /= 2;
  if (!Valid(c, q)) return {};
  return {Change(c, EpFinding(c, EpGroup(c)),
                 fmt::format("less expert parallelism: ep {} -> {} (fewer all-to-all peers, more experts per GPU)",
                             p.ep, p.ep / 2),
                 [](config::PlanConfig& r) { r.ep /= 2; })};
}

CandidateList DualPipe(const RemedyContext& c) {
  const config::PlanConfig& p = c.plan();
  const Time x = c.breakdown().ep_exposed;
  if (!c.scenario().model.is_moe() || x <= Time::Zero() || p.pp <= 1 || p.pp % 2 != 0 ||
      p.schedule == config::PipelineScheduleKind::kDualPipe) {
    return {};
  }
  return {Change(c, fmt::format("exposed EP all-to-all {:.3f} s", x.seconds()),
                 "DualPipe schedule (all-to-all overlapped with the other chunk)", [](config::PlanConfig& q) {
                   q.vp = 1;
                   q.schedule = config::PipelineScheduleKind::kDualPipe;
                 })};
}

CandidateList BalancedRouting(const RemedyContext& c) {
  const simulate::SimulationResult& r = c.result;
  if (!c.scenario().model.is_moe() || r.moe_imbalance_cost <= Time::Zero() ||
      c.plan().routing == config::Routing::kUniform) {
    return {};
  }
  return {Change(c,
                 fmt::format("MoE load imbalance costs {:.3f} s (load factor {:.2f})", r.moe_imbalance_cost.seconds(),
                             r.moe_load_factor),
                 "balanced routing (bound: what a perfect load-balancing loss would give)",
                 [](config::PlanConfig& q) { q.routing = config::Routing::kUniform; })};
}

// Layer 2: more context parallelism, the reshape search often ranks first:
// the sequence split over cp GPUs instead of half the tensor parallelism
// (fewer blocking TP collectives; CP's K/V exchange overlaps attention) or
// instead of half the pipeline stages (a smaller bubble). Offered where the
// plan rules allow it; memory and the replay decide.
CandidateList MoreCp(const RemedyContext& c) {
  const config::PlanConfig& p = c.plan();
  CandidateList out;
  auto from_tp = [](config::PlanConfig& r) {
    r.tp /= 2;
    r.cp *= 2;
    if (r.tp == 1) r.sequence_parallel = false;
  };
  auto from_pp = [](config::PlanConfig& r) {
    r.pp /= 2;
    r.cp *= 2;
    if (r.pp == 1) r.vp = 1;
  };
  auto valid = [&](auto change) {
    config::PlanConfig r = p;
    change(r);
    return Valid(c, r);
  };
  if (c.breakdown().tp_exposed > Noise(c) && p.tp % 2 == 0 && valid(from_tp)) {
    out.push_back(Change(c, TpFinding(c),
                         fmt::format("context parallelism for half the tensor parallelism: tp {} -> {}, cp {} -> {}",
                                     p.tp, p.tp / 2, p.cp, p.cp * 2),
                         from_tp));
  }
  if (HasBubble(c) && p.pp % 2 == 0 && valid(from_pp)) {
    out.push_back(Change(c, BubbleFinding(c),
                         fmt::format("context parallelism for half the pipeline stages: pp {} -> {}, cp {} -> {}",
                                     p.pp, p.pp / 2, p.cp, p.cp * 2),
                         from_pp));
  }
  return out;
}

// Layer 3: job placement. Scattered nodes put every ring edge across the
// leaf switches; packed ones keep neighbours under one leaf. Only the
// flow-level network model sees the difference (Evaluate says so).
CandidateList PackedNodes(const RemedyContext& c) {
  const simulate::Breakdown& b = c.breakdown();
  const Time across_nodes = b.dp_exposed + b.pp_exposed + b.ep_exposed;
  if (c.scenario().node_order != config::NodeOrder::kScattered || across_nodes <= Time::Zero()) return {};
  Candidate x = Change(c,
                       fmt::format("nodes scattered over the leaf switch groups (scenario node_order scattered) with "
                                   "{:.3f} s of exposed DP/PP/EP communication",
                                   across_nodes.seconds()),
                       "packed nodes (scenario node_order packed: consecutive nodes under one leaf switch group)",
                       [](config::PlanConfig&) {});
  x.node_order = config::NodeOrder::kPacked;
  return {std::move(x)};
}

}  // namespace

const std::vector<RemedyRule>& RemedyRules() {
  using L = StackLayer;
  static const std::vector<RemedyRule> kRules = {
      {"fused-kernels", L::kCompilation, FusedKernels},
      {"cuda-graphs", L::kCompilation, CudaGraphs},
      {"fp8", L::kCompilation, Fp8},
      {"flash-attention", L::kCompilation, FlashAttention},
      {"larger-micro-batch", L::kModelDefinition, LargerMicroBatch},
      {"selective-recompute", L::kHardware, SelectiveRecompute},
      {"no-recompute", L::kHardware, NoRecompute},
      {"overlap-offload", L::kHardware, OverlapOffload},
      {"no-offload", L::kHardware, NoOffload},
      {"interleaved-schedule", L::kParallelization, InterleavedSchedule},
      {"zero-bubble", L::kParallelization, ZeroBubble},
      {"smaller-micro-batch", L::kParallelization, SmallerMicroBatch},
      {"fewer-stages", L::kParallelization, FewerStages},
      {"sequence-parallel", L::kParallelization, SequenceParallel},
      {"less-tp", L::kParallelization, LessTp},
      {"overlap-grad-reduce", L::kParallelization, OverlapGradReduce},
      {"more-tp", L::kParallelization, MoreTp},
      {"more-pipeline-stages", L::kParallelization, MorePipelineStages},
      {"pipeline-inner-rank-order", L::kParallelization, PipelineInnerRankOrder},
      {"replica-inner-rank-order", L::kParallelization, ReplicaInnerRankOrder},
      {"other-cp-comm", L::kParallelization, OtherCpComm},
      {"less-cp", L::kParallelization, LessCp},
      {"more-cp", L::kParallelization, MoreCp},
      {"hierarchical-dispatch", L::kParallelization, HierarchicalDispatch},
      {"ep-inside-domain", L::kParallelization, EpInsideDomain},
      {"less-ep", L::kParallelization, LessEp},
      {"dualpipe", L::kParallelization, DualPipe},
      {"balanced-routing", L::kParallelization, BalancedRouting},
      {"packed-nodes", L::kRuntimeOrchestration, PackedNodes},
  };
  return kRules;
}

std::vector<Candidate> Candidates(const RemedyContext& c) {
  std::vector<Candidate> out;
  for (const RemedyRule& rule : RemedyRules()) {
    for (Candidate& x : rule.propose(c)) {
      x.layer = rule.layer;
      x.rule = rule.name;
      out.push_back(std::move(x));
    }
  }
  return out;
}

}  // namespace stacksim::diagnose
