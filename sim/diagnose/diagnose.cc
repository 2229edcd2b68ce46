#include "sim/diagnose/diagnose.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "sim/cost/profile_cost_model.h"
#include "sim/util/error.h"
#include "sim/workload/layer_ops.h"
#include "sim/workload/offload.h"
#include "sim/workload/placement.h"

namespace stacksim::diagnose {
namespace {

using trace::TaskId;

const char* kLayerNames[5] = {"model definition", "parallelization", "runtime orchestration", "compilation",
                              "hardware"};


config::Precision PeakPrecision(config::Precision p) {
  return p == config::Precision::kFp32 ? config::Precision::kTf32 : p;
}

std::string Gib(Bytes b) { return fmt::format("{:.1f} GiB", b.value / (1024.0 * 1024 * 1024)); }

// Which physical link a communication group's traffic crosses.
std::string LinkOf(const config::TopologyConfig& topo, const trace::CommGroup& g) {
  if (g.nodes > 1) return "NIC";
  return topo.scale_up.kind == config::ScaleUpKind::kPcie ? "PCIe" : "NVLink";
}

std::string PlanLine(const config::PlanConfig& p) {
  std::string s = fmt::format("tp {} pp {} dp {}", p.tp, p.pp, p.dp);
  if (p.cp > 1) s += fmt::format(" cp {}", p.cp);
  if (p.ep > 1) s += fmt::format(" ep {}", p.ep);
  if (p.vp > 1) s += fmt::format(" vp {}", p.vp);
  s += fmt::format(", micro-batch {}, {} schedule, recompute {}, {}, {}", p.micro_batch, config::ScheduleName(p.schedule),
                   config::RecomputeName(p.recompute), config::ShardingName(p.sharding),
                   config::PrecisionName(p.precision));
  if (p.sequence_parallel) s += ", SP";
  s += p.kernels == config::KernelFusion::kEager ? ", eager kernels" : ", fused kernels";
  if (p.cuda_graphs) s += ", CUDA graphs";
  return s;
}

// A candidate change of the plan (and of the scenario's node order, the one
// placement choice that is not a plan key), before simulation.
struct Candidate {
  int layer;
  std::string finding;
  std::string change;
  config::PlanConfig plan;
  config::NodeOrder node_order = config::NodeOrder::kPacked;
};


// Whether any pair of neighbouring pipeline stages sits in different domains.
bool PipelineCrossesDomains(const config::PlanConfig& p, const config::TopologyConfig& topo) {
  for (int r = 0; r + 1 < p.pp; ++r) {
    if (workload::PlacePipelinePair(p, topo, r, r + 1).nodes > 1) return true;
  }
  return false;
}

bool Divides(int64_t a, int64_t b) { return a > 0 && b % a == 0; }

// The remedies that fit what the step shows. Each is one change (or one
// coupled set, as tp / 2 with dp x 2) of the scenario's plan. TP never spans NVLink
// domains here: ValidatePlan rejects it, so "move TP into the domain" cannot arise.
std::vector<Candidate> Candidates(const config::ScenarioConfig& s, const Diagnosis& d, Time launch_excess,
                                  Time eager_excess, Time recompute, Time below_peak, const std::string& tp_link,
                                  Time cp_exposed) {
  const config::PlanConfig& p = s.plan;
  const simulate::Breakdown& b = d.result.breakdown;
  const Time step = d.step;
  auto share = [&](Time t) { return 100.0 * t.seconds() / step.seconds(); };
  std::vector<Candidate> out;
  auto add = [&](int layer, std::string finding, std::string change, auto edit) {
    Candidate c{layer, std::move(finding), std::move(change), p, s.node_order};
    edit(c.plan);
    out.push_back(std::move(c));
  };
  // For reshapes offered only where the plan rules allow them (the rest are
  // listed as invalid by Evaluate).
  auto valid = [&](const config::PlanConfig& q) {
    config::ScenarioConfig t = s;
    t.plan = q;
    try {
      config::ValidatePlan(t, t.file);
      return true;
    } catch (const InputError&) {
      return false;
    }
  };

  // Layer 4: compilation.
  if (p.kernels == config::KernelFusion::kEager) {
    add(4, fmt::format("eager (unfused) memory-bound kernels cost {:.3f} s beyond fused ones ({:.1f}% of the step)",
                       eager_excess.seconds(), share(eager_excess)),
        "fused kernels (plan.kernels fused: Transformer Engine / torch.compile)",
        [](config::PlanConfig& q) { q.kernels = config::KernelFusion::kFused; });
  }
  if (!p.cuda_graphs && launch_excess > Time::Zero()) {
    add(4, fmt::format("launch-bound ops: {:.3f} s of kernel issue beyond kernel time ({:.1f}% of the step)",
                       launch_excess.seconds(), share(launch_excess)),
        "CUDA graphs on (plan.cuda_graphs true)", [](config::PlanConfig& q) { q.cuda_graphs = true; });
  }
  if (p.precision == config::Precision::kBf16 && s.profile.Peak(config::Precision::kFp8) &&
      s.profile.gemm.max_efficiency[static_cast<int>(config::Precision::kFp8)]) {
    add(4, fmt::format("bf16 GEMMs on a GPU with an fp8 peak of {:.0f} TFLOP/s",
                       s.profile.Peak(config::Precision::kFp8)->value / 1e12),
        "fp8 linear layers (plan.precision fp8, Transformer Engine recipe)",
        [](config::PlanConfig& q) { q.precision = config::Precision::kFp8; });
  }
  if (p.attention != config::AttentionImpl::kFlash) {
    add(4, fmt::format("attention runs as {} kernels", config::AttentionName(p.attention)),
        "fused flash attention (plan.attention flash)",
        [](config::PlanConfig& q) { q.attention = config::AttentionImpl::kFlash; });
  }

  // Layer 1: a compute-bound step whose matmuls run well below peak: bigger
  // GEMMs (a larger micro-batch, or less tensor parallelism below).
  if (d.step_class == "compute-bound" && p.micro_batch * 2 * p.dp <= p.global_batch &&
      p.global_batch % (p.micro_batch * 2 * p.dp) == 0) {
    add(1, fmt::format("compute-bound step, matmuls below peak: {:.3f} s", below_peak.seconds()),
        fmt::format("larger micro-batches: {} -> {} (bigger GEMMs)", p.micro_batch, p.micro_batch * 2),
        [](config::PlanConfig& q) { q.micro_batch *= 2; });
  }

  // Layer 5: memory capacity forces recomputation.
  if (p.recompute == config::Recompute::kFull) {
    add(5, fmt::format("full recomputation costs {:.3f} s ({:.1f}% of the step)", recompute.seconds(), share(recompute)),
        "selective instead of full recompute (if it fits)",
        [](config::PlanConfig& q) { q.recompute = config::Recompute::kSelective; });
  }
  if (p.recompute != config::Recompute::kNone && recompute > Time::Zero()) {
    add(5, fmt::format("{} recomputation costs {:.3f} s ({:.1f}% of the step)", config::RecomputeName(p.recompute),
                       recompute.seconds(), share(recompute)),
        "no recompute (if it fits)", [](config::PlanConfig& q) { q.recompute = config::Recompute::kNone; });
  }
  if (b.offload_exposed > Time::Zero() && !p.overlap_offload) {
    add(5, fmt::format("offload transfers exposed: {:.3f} s", b.offload_exposed.seconds()),
        "overlap offload transfers with compute", [](config::PlanConfig& q) { q.overlap_offload = true; });
  }
  if (b.offload_exposed > Time::Zero()) {
    add(5, fmt::format("offload (PCIe, host optimizer) exposed: {:.3f} s", b.offload_exposed.seconds()),
        "no offload (keep the optimizer on the GPU, if it fits)", [](config::PlanConfig& q) {
          q.offload_optimizer = config::OffloadTarget::kNone;
          q.offload_params = config::OffloadTarget::kNone;
        });
  }

  // Layer 2: pipeline bubble.
  const int64_t layers = s.model.num_layers;
  const Time bubble = b.bubble;
  if (p.pp > 1 && bubble > Time::Zero()) {
    std::string f = fmt::format("pipeline idle {:.3f} s ({:.1f}% of the step; pp {}, {} micro-batches per pipeline)",
                                bubble.seconds(), share(bubble), p.pp, p.micro_batches());
    if (p.schedule == config::PipelineScheduleKind::kOneFOneB || p.schedule == config::PipelineScheduleKind::kGpipe) {
      for (int vp : {2, 3, 4, 6, 8}) {
        if (!Divides(p.pp * vp, layers)) continue;
        add(2, f, fmt::format("interleaved schedule, vp {}", vp), [vp](config::PlanConfig& q) {
          q.vp = vp;
          q.schedule = config::PipelineScheduleKind::kInterleaved;
        });
      }
    }
    if (p.schedule == config::PipelineScheduleKind::kInterleaved) {
      for (int vp : {p.vp + 1, p.vp * 2}) {
        if (!Divides(p.pp * vp, layers)) continue;
        add(2, f, fmt::format("interleave more: vp {} -> {}", p.vp, vp), [vp](config::PlanConfig& q) { q.vp = vp; });
      }
    }
    if (p.schedule != config::PipelineScheduleKind::kZeroBubbleH1) {
      add(2, f, "zb-h1 schedule (zero-bubble, weight gradients fill the bubble)", [](config::PlanConfig& q) {
        q.vp = 1;
        q.schedule = config::PipelineScheduleKind::kZeroBubbleH1;
      });
    }
    if (p.micro_batch > 1) {
      add(2, f, fmt::format("smaller micro-batches: {} -> {} (more micro-batches per pipeline)", p.micro_batch,
                            p.micro_batch / 2),
          [](config::PlanConfig& q) { q.micro_batch /= 2; });
    }
    if (p.pp % 2 == 0) {
      add(2, f, fmt::format("fewer stages, more data parallelism: pp {} -> {}, dp {} -> {}", p.pp, p.pp / 2, p.dp,
                            p.dp * 2),
          [](config::PlanConfig& q) {
            q.pp /= 2;
            q.dp *= 2;
          });
    }
  }

  // Layer 2: tensor parallelism.
  const int domain = s.topology.scale_up.domain_gpus;
  // Reshaping the plan for a communication stream that costs under 1% of
  // the step is noise, not a remedy.
  const Time noise = step * 0.01;
  if (b.tp_exposed > noise) {
    std::string f = fmt::format("exposed TP communication {:.3f} s ({:.1f}% of the step; tp {} {})",
                                b.tp_exposed.seconds(), share(b.tp_exposed), p.tp,
                                tp_link.empty() ? "" : "over " + tp_link);
    if (p.tp > 1 && !p.sequence_parallel) {
      add(2, f, "sequence parallelism on", [](config::PlanConfig& q) { q.sequence_parallel = true; });
    }
    if (p.tp % 2 == 0) {
      add(2, f, fmt::format("less tensor parallelism: tp {} -> {}, dp {} -> {}", p.tp, p.tp / 2, p.dp, p.dp * 2),
          [](config::PlanConfig& q) {
            q.tp /= 2;
            q.dp *= 2;
            if (q.tp == 1) q.sequence_parallel = false;
          });
    }
  }

  // Layer 2: data parallelism.
  if (b.dp_exposed > noise) {
    std::string f = fmt::format("exposed DP communication {:.3f} s ({:.1f}% of the step; dp {}, {})",
                                b.dp_exposed.seconds(), share(b.dp_exposed), p.dp, config::ShardingName(p.sharding));
    if (!p.overlap_grad_reduce) {
      add(2, f, "overlap gradient reduction with the backward",
          [](config::PlanConfig& q) { q.overlap_grad_reduce = true; });
    }
    if (p.dp % 2 == 0 && p.tp * 2 <= domain) {
      add(2, f, fmt::format("more tensor parallelism: tp {} -> {}, dp {} -> {}", p.tp, p.tp * 2, p.dp, p.dp / 2),
          [](config::PlanConfig& q) {
            q.tp *= 2;
            q.dp /= 2;
            q.sequence_parallel = true;
          });
    }
    if (p.dp % 2 == 0 && Divides(p.pp * 2 * p.vp, layers)) {
      add(2, f, fmt::format("more pipeline stages: pp {} -> {}, dp {} -> {}", p.pp, p.pp * 2, p.dp, p.dp / 2),
          [](config::PlanConfig& q) {
            q.pp *= 2;
            q.dp /= 2;
          });
    }
  }

  // Layer 2: placement of the pipeline. With tp x cp below the domain and
  // stages in different domains, the pipeline-inner order (Megatron-LM's
  // --use-tp-pp-dp-mapping) moves the sends onto NVLink and the gradient
  // collectives onto the NICs; the reverse when the gradients are exposed.
  const int domain_gpus = workload::DomainSize(s.topology);
  if (b.pp_exposed > noise && p.pp > 1 && p.rank_order == config::RankOrder::kTpCpDpPp &&
      p.tp * p.cp < domain_gpus && PipelineCrossesDomains(p, s.topology)) {
    add(2, fmt::format("exposed PP communication {:.3f} s ({:.1f}% of the step); pipeline neighbours sit in different "
                       "NVLink domains while tp x cp = {} leaves room in the {}-GPU domain",
                       b.pp_exposed.seconds(), share(b.pp_exposed), p.tp * p.cp, domain_gpus),
        "pipeline stages inside the NVLink domain (plan.rank_order tp-cp-pp-dp: sends on NVLink, gradients over the "
        "NICs)",
        [](config::PlanConfig& q) { q.rank_order = config::RankOrder::kTpCpPpDp; });
  }
  if (b.dp_exposed > noise && p.rank_order == config::RankOrder::kTpCpPpDp) {
    add(2, fmt::format("exposed DP communication {:.3f} s ({:.1f}% of the step) with the pipeline-inner rank order "
                       "(data-parallel replicas tp x cp x pp = {} ranks apart)",
                       b.dp_exposed.seconds(), share(b.dp_exposed), p.tp * p.cp * p.pp),
        "data-parallel replicas next to each other (plan.rank_order tp-cp-dp-pp, Megatron-LM's default)",
        [](config::PlanConfig& q) { q.rank_order = config::RankOrder::kTpCpDpPp; });
  }

  // Layer 2: context parallelism. Its K/V exchange is a TP-stream
  // collective on the CP group (simulate counts it in TP's exposed time).
  if (p.cp > 1 && cp_exposed > noise) {
    std::string f = fmt::format("exposed CP communication {:.3f} s ({:.1f}% of the step, counted in TP's; cp {}, {})",
                                cp_exposed.seconds(), share(cp_exposed), p.cp, config::CpCommName(p.cp_comm));
    const config::CpComm other =
        p.cp_comm == config::CpComm::kP2p ? config::CpComm::kAllGather : config::CpComm::kP2p;
    config::PlanConfig q = p;
    q.cp_comm = other;
    if (valid(q)) {
      add(2, f,
          other == config::CpComm::kAllGather
              ? "all-gather context parallelism (plan.cp_comm allgather: one K/V gather, Llama 3)"
              : "ring context parallelism (plan.cp_comm p2p: K/V exchange overlapped with attention)",
          [other](config::PlanConfig& r) { r.cp_comm = other; });
    }
    if (p.cp % 2 == 0) {
      config::PlanConfig more_dp = p, more_tp = p;
      more_dp.cp /= 2;
      more_dp.dp *= 2;
      more_tp.cp /= 2;
      more_tp.tp *= 2;
      more_tp.sequence_parallel = true;
      if (valid(more_dp)) {
        add(2, f, fmt::format("less context parallelism: cp {} -> {}, dp {} -> {}", p.cp, p.cp / 2, p.dp, p.dp * 2),
            [](config::PlanConfig& r) {
              r.cp /= 2;
              r.dp *= 2;
            });
      } else if (valid(more_tp)) {
        add(2, f, fmt::format("less context parallelism: cp {} -> {}, tp {} -> {}", p.cp, p.cp / 2, p.tp, p.tp * 2),
            [](config::PlanConfig& r) {
              r.cp /= 2;
              r.tp *= 2;
              r.sequence_parallel = true;
            });
      }
    }
  }

  // Layer 2: expert parallelism.
  if (s.model.is_moe()) {
    const trace::CommGroup ep_group = workload::PlacePlan(p, s.topology).ep;
    const std::string ep_finding = fmt::format("exposed EP all-to-all {:.3f} s ({:.1f}% of the step; ep {} over {})",
                                               b.ep_exposed.seconds(), share(b.ep_exposed), p.ep,
                                               ep_group.nodes > 1 ? fmt::format("{} nodes", ep_group.nodes) : "NVLink");
    // Hierarchical dispatch sends one copy per destination node: nothing to
    // save while the whole EP group shares one domain.
    if (b.ep_exposed > Time::Zero() && p.dispatcher == config::MoeDispatcher::kAllToAll && ep_group.nodes > 1) {
      add(2, ep_finding, "hierarchical (DeepEP-style) token dispatch",
          [](config::PlanConfig& q) { q.dispatcher = config::MoeDispatcher::kHierarchical; });
    }
    if (b.ep_exposed > noise && ep_group.nodes > 1) {
      // The largest EP degree whose group fits one NVLink domain.
      for (int ep = std::min(p.ep / 2, domain_gpus); ep >= 2; --ep) {
        config::PlanConfig q = p;
        q.ep = ep;
        if (domain_gpus % ep != 0 || !valid(q)) continue;
        add(2, ep_finding, fmt::format("expert parallelism inside the NVLink domain: ep {} -> {}", p.ep, ep),
            [ep](config::PlanConfig& r) { r.ep = ep; });
        break;
      }
    }
    if (b.ep_exposed > noise && p.ep % 2 == 0) {
      config::PlanConfig q = p;
      q.ep /= 2;
      if (valid(q)) {
        add(2, ep_finding, fmt::format("less expert parallelism: ep {} -> {} (fewer all-to-all peers, more experts "
                                       "per GPU)",
                                       p.ep, p.ep / 2),
            [](config::PlanConfig& r) { r.ep /= 2; });
      }
    }
    if (b.ep_exposed > Time::Zero() && p.pp > 1 && p.pp % 2 == 0 &&
        p.schedule != config::PipelineScheduleKind::kDualPipe) {
      add(2, fmt::format("exposed EP all-to-all {:.3f} s", b.ep_exposed.seconds()),
          "DualPipe schedule (all-to-all overlapped with the other chunk)", [](config::PlanConfig& q) {
            q.vp = 1;
            q.schedule = config::PipelineScheduleKind::kDualPipe;
          });
    }
    if (d.result.moe_imbalance_cost > Time::Zero() && p.routing != config::Routing::kUniform) {
      add(2, fmt::format("MoE load imbalance costs {:.3f} s (load factor {:.2f})", d.result.moe_imbalance_cost.seconds(),
                         d.result.moe_load_factor),
          "balanced routing (bound: what a perfect load-balancing loss would give)",
          [](config::PlanConfig& q) { q.routing = config::Routing::kUniform; });
    }
  }

  // Layer 3: job placement. Scattered nodes put every ring edge across the
  // leaf switches; packed ones keep neighbours under one leaf. Only the
  // flow-level network model sees the difference (Evaluate says so).
  const Time across_nodes = b.dp_exposed + b.pp_exposed + b.ep_exposed;
  if (s.node_order == config::NodeOrder::kScattered && across_nodes > Time::Zero()) {
    Candidate c{3,
                fmt::format("nodes scattered over the leaf switch groups (scenario node_order scattered) with {:.3f} s "
                            "of exposed DP/PP/EP communication",
                            across_nodes.seconds()),
                "packed nodes (scenario node_order packed: consecutive nodes under one leaf switch group)", p,
                config::NodeOrder::kPacked};
    out.push_back(std::move(c));
  }
  return out;
}

Remedy Evaluate(const config::ScenarioConfig& base, const Candidate& c, Time step, const DiagnoseOptions& options) {
  Remedy r;
  r.layer = c.layer;
  r.finding = c.finding;
  r.change = c.change;
  nlohmann::json before = config::PlanToJson(base.plan), after = config::PlanToJson(c.plan);
  r.plan_changes = nlohmann::json::object();
  for (auto it = after.begin(); it != after.end(); ++it) {
    if (!before.contains(it.key()) || before[it.key()] != it.value()) r.plan_changes[it.key()] = it.value();
  }
  // node_order is a scenario key, not a plan key: it rides along in
  // plan_changes under its own name (docs/diagnose.md).
  if (c.node_order != base.node_order) r.plan_changes["node_order"] = NodeOrderName(c.node_order);
  r.plan = c.plan;
  r.node_order = c.node_order;
  config::ScenarioConfig s = base;
  s.plan = c.plan;
  s.node_order = c.node_order;
  if (c.node_order != base.node_order && options.network == "analytic") {
    r.status = "not simulated";
    r.reason = fmt::format("the analytic network model does not see node order; measure it with stacksim simulate "
                           "--network simgrid --set node_order={}",
                           NodeOrderName(c.node_order));
    return r;
  }
  try {
    config::ValidatePlan(s, s.file);
    simulate::Options so;
    so.network = options.network;
    simulate::SimulationResult res = simulate::Simulate(s, so);
    if (res.out_of_memory) {
      Bytes peak;
      for (const auto& m : res.memory) peak = std::max(peak, m.total());
      r.status = "out of memory";
      r.reason = fmt::format("needs {} per GPU, {} available", Gib(peak), Gib(res.capacity));
      return r;
    }
    r.status = "simulated";
    r.predicted = res.iteration;
    r.gain = step - res.iteration;
  } catch (const InputError& e) {
    r.status = "invalid";
    r.reason = e.what();
  }
  return r;
}

}  // namespace

Diagnosis Diagnose(const config::ScenarioConfig& scenario, const DiagnoseOptions& options) {
  Diagnosis d;
  simulate::Options so;
  so.keep_trace = true;
  so.network = options.network;
  d.result = simulate::Simulate(scenario, so);
  if (d.result.out_of_memory) {
    throw InputError(scenario.file, "plan", "the plan does not fit in GPU memory: nothing to diagnose (try stacksim search)");
  }
  const config::ScenarioConfig& s = d.result.scenario;
  const config::PlanConfig& p = s.plan;
  const simulate::Breakdown& b = d.result.breakdown;
  const trace::Trace& t = *d.result.trace;
  const engine::ReplayResult& r = *d.result.replay;
  const int rank = d.result.breakdown_stage;
  d.step = b.total();

  const double peak = s.profile.Peak(PeakPrecision(p.precision))->value;
  d.ideal = Time::FromSeconds(d.result.model_flops.value / s.gpus / peak);
  cost::ProfileCostModel cost(s.profile, p.cuda_graphs);

  trace::StreamId compute = 0;
  for (size_t i = 0; i < t.streams().size(); ++i) {
    if (t.streams()[i] == "compute") compute = static_cast<trace::StreamId>(i);
  }

  // Per-op accounting on the breakdown rank's compute stream.
  std::map<std::string, OpStat> ops;
  Time launch_excess, eager_excess, recompute;
  double rank_ideal_s = 0;
  std::vector<double> stage_ideal_s(t.rank_count(), 0.0);
  std::map<trace::TaskRole, std::pair<Time, std::string>> comm_busy;  // role -> busy time, link
  std::map<std::string, Time> link_busy;
  // Context-parallel collectives carry the TP label; their exposed part
  // (blocking all-gathers, and compute waiting for the ring exchange) is
  // told apart by group.
  Time cp_exposed;
  auto is_cp_group = [&](trace::GroupId g) { return g != trace::kNoGroup && t.group(g).role == trace::GroupRole::kCp; };
  for (size_t i = 0; i < t.size(); ++i) {
    const trace::Task& task = t.task(static_cast<TaskId>(i));
    const std::string& name = t.name(task.name);
    if (task.kind == trace::TaskKind::kCompute && task.stream == compute && !task.recompute) {
      stage_ideal_s[task.rank] += task.compute.flops.value / peak;
    }
    if (task.rank != rank) continue;
    Time dur = r.timings[i].end - r.timings[i].start;
    if (task.kind == trace::TaskKind::kCollective || task.kind == trace::TaskKind::kTransfer) {
      trace::GroupId g = task.kind == trace::TaskKind::kCollective ? task.comm.group : task.transfer.group;
      if (task.kind == trace::TaskKind::kCollective && task.stream == compute && is_cp_group(g)) cp_exposed += dur;
      std::string link = g == trace::kNoGroup ? "NVLink" : LinkOf(s.topology, t.group(g));
      auto& cb = comm_busy[task.role];
      cb.first += dur;
      if (cb.second.empty() || cb.second == link) {
        cb.second = link;
      } else if (cb.second.find(link) == std::string::npos) {
        cb.second += "+" + link;
      }
      link_busy[link] += dur;
      continue;
    }
    if (task.kind != trace::TaskKind::kCompute || task.stream != compute) continue;
    trace::ComputeOp kop = task.compute;
    kop.kernels = 0;
    Time kernel = cost.ComputeTime(kop);
    Time fused = kernel;
    if (kop.op_class == trace::OpClass::kMemoryBound && kop.bandwidth_efficiency < 1.0f) {
      kop.bandwidth_efficiency = 1.0f;
      fused = cost.ComputeTime(kop);
    }
    OpStat& o = ops[name];
    o.name = name;
    o.recompute = task.recompute;
    o.calls += 1;
    o.kernels += task.compute.kernels;
    o.time += dur;
    o.flops += task.compute.flops.value;
    o.bytes += task.compute.bytes.value;
    if (task.recompute) {
      recompute += dur;
      continue;
    }
    Time lx = dur > kernel ? dur - kernel : Time::Zero();
    Time ex = kernel - fused;
    o.launch_excess += lx;
    o.eager_excess += ex;
    launch_excess += lx;
    eager_excess += ex;
    rank_ideal_s += task.compute.flops.value / peak;
  }
  for (auto& [name, o] : ops) {
    o.ideal = Time::FromSeconds(o.flops / peak);
    const double flop_s = o.flops / peak;
    const double byte_s = o.bytes / cost.memory_bandwidth().value;
    if (o.launch_excess * 2.0 > o.time) {
      o.roofline = "launch";
    } else if (flop_s >= byte_s) {
      o.roofline = "compute";
    } else {
      o.roofline = "memory";
    }
    d.ops.push_back(o);
  }
  std::sort(d.ops.begin(), d.ops.end(), [](const OpStat& a, const OpStat& c) {
    Time ga = a.time - a.ideal, gc = c.time - c.ideal;
    return ga != gc ? ga > gc : a.name < c.name;
  });

  // Context-parallel K/V traffic inside TP's exposed time: compute waiting
  // on a CP collective off the compute stream. Same walk as simulate's
  // Attribute.
  {
    Time prev_end;
    for (size_t i = 0; i < t.size(); ++i) {
      const trace::Task& task = t.task(static_cast<TaskId>(i));
      if (task.rank != rank || task.stream != compute) continue;
      const auto& tm = r.timings[i];
      if (tm.start > prev_end) {
        TaskId blocker = -1;
        Time latest = prev_end;
        for (const TaskId* dp = t.deps_begin(static_cast<TaskId>(i)); dp != t.deps_end(static_cast<TaskId>(i)); ++dp) {
          if (r.timings[*dp].end > latest) {
            latest = r.timings[*dp].end;
            blocker = *dp;
          }
        }
        if (blocker >= 0 && t.task(blocker).kind == trace::TaskKind::kCollective &&
            t.task(blocker).stream != compute && is_cp_group(t.task(blocker).comm.group)) {
          cp_exposed += tm.start - prev_end;
        }
      }
      prev_end = std::max(prev_end, tm.end);
    }
    cp_exposed = std::min(cp_exposed, b.tp_exposed);
  }

  // The split. Stage mean: the average over simulated stages of each one's
  // model-work ideal (every stage stands for the same number of GPUs).
  double mean_stage_s = 0;
  for (double v : stage_ideal_s) mean_stage_s += v;
  mean_stage_s /= std::max<size_t>(1, stage_ideal_s.size());
  const Time rank_ideal = Time::FromSeconds(rank_ideal_s);
  const Time mean_stage = Time::FromSeconds(mean_stage_s);
  const Time stage_imbalance = rank_ideal - mean_stage;
  const Time extra_work = mean_stage - d.ideal;  // FLOPs beyond the model count, and rounding
  const Time moe_imbalance = d.result.moe_imbalance_cost;
  const Time graph_launch = p.cuda_graphs ? launch_excess : Time::Zero();
  const Time eager_launch = p.cuda_graphs ? Time::Zero() : launch_excess;
  Time memory_class, compute_class, launch_class;
  for (const OpStat& o : d.ops) {
    if (o.recompute) continue;
    Time rest = o.time - o.ideal - o.launch_excess - o.eager_excess;
    (o.roofline == "memory" ? memory_class : o.roofline == "compute" ? compute_class : launch_class) += rest;
  }
  const Time below_peak = b.compute() - recompute - launch_excess - eager_excess - rank_ideal;  // memory + compute + launch class rests

  // 1 model definition
  d.layer_gap[0] = below_peak + extra_work + graph_launch - moe_imbalance;
  d.layer_parts[0] = {{"memory_bound_ops_s", memory_class.seconds()},
                      {"compute_bound_ops_below_peak_s", compute_class.seconds()},
                      {"launch_bound_ops_kernel_time_beyond_ideal_s", launch_class.seconds()},
                      {"work_beyond_model_flops_s", extra_work.seconds()},
                      {"graph_launch_floor_s", graph_launch.seconds()},
                      {"moe_imbalance_moved_to_parallelization_s", -moe_imbalance.seconds()}};
  // 2 parallelization
  d.layer_gap[1] = b.tp_exposed + b.dp_exposed + b.pp_exposed + b.ep_exposed + b.bubble + stage_imbalance + moe_imbalance;
  d.layer_parts[1] = {{"tp_exposed_s", b.tp_exposed.seconds()}, {"dp_exposed_s", b.dp_exposed.seconds()},
                      {"pp_exposed_s", b.pp_exposed.seconds()}, {"ep_exposed_s", b.ep_exposed.seconds()},
                      {"bubble_s", b.bubble.seconds()},
                      {"stage_imbalance_s", stage_imbalance.seconds()},
                      {"moe_imbalance_s", moe_imbalance.seconds()}};
  // 3 runtime orchestration
  d.layer_gap[2] = b.other;
  d.layer_parts[2] = {{"other_idle_s", b.other.seconds()}, {"stragglers", "not in one healthy step: stacksim simulate --stragglers"},
                      {"failures", "not in one step: stacksim run-campaign"}};
  // 4 compilation
  d.layer_gap[3] = eager_excess + eager_launch;
  d.layer_parts[3] = {{"unfused_kernels_s", eager_excess.seconds()},
                      {"launch_overhead_without_cuda_graphs_s", eager_launch.seconds()}};
  // 5 hardware
  d.layer_gap[4] = recompute + b.offload_exposed;
  d.layer_parts[4] = {{"recompute_s", recompute.seconds()}, {"offload_exposed_s", b.offload_exposed.seconds()}};

  auto pct = [&](Time x) { return 100.0 * x.seconds() / d.step.seconds(); };
  // Findings per layer, in words.
  {
    auto& f = d.layer_findings[0];
    f.push_back(fmt::format("memory-bound ops at fused speed {:.3f} s, matmuls/attention below peak {:.3f} s, "
                            "launch-bound ops' kernels {:.3f} s",
                            memory_class.seconds(), compute_class.seconds(), launch_class.seconds()));
    if (std::abs(extra_work.seconds()) > 1e-4) {
      f.push_back(fmt::format("work beyond the model-FLOP count (embedding, loss, optimizer FLOPs; counting) {:.3f} s",
                              extra_work.seconds()));
    }
    if (p.cuda_graphs) f.push_back(fmt::format("launch floor under CUDA graphs {:.3f} s", graph_launch.seconds()));
  }
  {
    auto& f = d.layer_findings[1];
    f.push_back(fmt::format("exposed communication: TP {:.3f} s, DP {:.3f} s, PP {:.3f} s, EP {:.3f} s",
                            b.tp_exposed.seconds(), b.dp_exposed.seconds(), b.pp_exposed.seconds(),
                            b.ep_exposed.seconds()));
    if (p.pp > 1) {
      f.push_back(fmt::format("pipeline bubble {:.3f} s ({:.1f}%): pp {}, vp {}, {} micro-batches per pipeline, {}",
                              b.bubble.seconds(), pct(b.bubble), p.pp, p.vp, p.micro_batches(),
                              config::ScheduleName(p.schedule)));
    }
    if (p.cp > 1) {
      f.push_back(fmt::format("of TP's exposed time, {:.3f} s is context-parallel K/V traffic (cp {}, {})",
                              cp_exposed.seconds(), p.cp, config::CpCommName(p.cp_comm)));
    }
    if (p.pp > 1) {
      f.push_back(fmt::format("rank order {}: pipeline neighbours {}", config::RankOrderName(p.rank_order),
                              PipelineCrossesDomains(p, s.topology) ? "cross NVLink domains" : "share an NVLink domain"));
    }
    f.push_back(fmt::format("busiest stage ({}) computes {:.3f} s more than the stages' mean", rank,
                            stage_imbalance.seconds()));
    if (s.model.is_moe()) {
      f.push_back(fmt::format("MoE load factor {:.2f}: imbalance costs {:.3f} s", d.result.moe_load_factor,
                              moe_imbalance.seconds()));
    }
  }
  d.layer_findings[2].push_back(fmt::format(
      "other idle {:.3f} s (host syncs, waits not explained by communication or the pipeline)",
      b.other.seconds()));
  d.layer_findings[2].push_back(
      "the step assumes healthy hardware: for slow nodes run `stacksim simulate SCENARIO --stragglers 0.1%:1.5x`, "
      "for failures, restarts and checkpoints over a whole run `stacksim run-campaign SCENARIO --tokens N`");
  d.layer_findings[2].push_back(fmt::format(
      "job placement: nodes {} (scenario node_order; only the flow-level network model, --network simgrid, prices it)",
      NodeOrderName(s.node_order)));
  {
    auto& f = d.layer_findings[3];
    f.push_back(fmt::format("kernels {}: unfused excess {:.3f} s", p.kernels == config::KernelFusion::kEager ? "eager" : "fused",
                            eager_excess.seconds()));
    f.push_back(fmt::format("CUDA graphs {}: launch-bound excess {:.3f} s", p.cuda_graphs ? "on" : "off",
                            launch_excess.seconds()));
    bool fp8 = s.profile.Peak(config::Precision::kFp8).has_value();
    f.push_back(fmt::format("precision {}{}", config::PrecisionName(p.precision),
                            p.precision == config::Precision::kBf16 && fp8
                                ? fmt::format(": fp8 available ({:.0f} vs {:.0f} TFLOP/s), not used",
                                              s.profile.Peak(config::Precision::kFp8)->value / 1e12, peak / 1e12)
                                : ""));
  }
  std::string tp_link;
  {
    auto& f = d.layer_findings[4];
    // Exposed time per link: each breakdown bucket goes to the link its
    // collectives cross.
    std::map<std::string, Time> exposed_by_link;
    auto expose = [&](trace::TaskRole role, Time x) {
      auto it = comm_busy.find(role);
      if (it == comm_busy.end() || x <= Time::Zero()) return;
      exposed_by_link[it->second.second] += x;
    };
    expose(trace::TaskRole::kTpComm, b.tp_exposed);
    expose(trace::TaskRole::kDpComm, b.dp_exposed);
    expose(trace::TaskRole::kPpComm, b.pp_exposed);
    expose(trace::TaskRole::kEpComm, b.ep_exposed);
    if (auto it = comm_busy.find(trace::TaskRole::kTpComm); it != comm_busy.end()) {
      tp_link = it->second.second;
    }
    // Listed by the role's display name, in alphabetical order.
    std::map<std::string, std::pair<Time, std::string>> by_name;
    for (const auto& [role, v] : comm_busy) by_name.emplace(trace::TaskRoleName(role), v);
    for (const auto& [name, v] : by_name) {
      f.push_back(fmt::format("{} traffic on {}: {:.3f} s busy", name, v.second, v.first.seconds()));
    }
    std::string binding;
    Time most;
    for (const auto& [link, x] : exposed_by_link) {
      if (x > most) {
        most = x;
        binding = link;
      }
    }
    if (!binding.empty()) {
      f.push_back(fmt::format("binding link: {} ({:.3f} s of exposed communication)", binding, most.seconds()));
    }
    f.push_back(fmt::format("HBM bandwidth binds {:.3f} s of memory-bound kernels ({:.1f}% of the step)",
                            (memory_class + eager_excess).seconds(), pct(memory_class + eager_excess)));
    Bytes fullest;
    int fullest_stage = 0;
    for (const auto& m : d.result.memory) {
      if (m.total() > fullest) {
        fullest = m.total();
        fullest_stage = m.stage;
      }
    }
    f.push_back(fmt::format("memory capacity: stage {} uses {} of {} ({} headroom); recomputation costs {:.3f} s",
                            fullest_stage, Gib(fullest), Gib(d.result.capacity), Gib(d.result.capacity - fullest),
                            recompute.seconds()));
    if (b.offload_exposed > Time::Zero()) {
      f.push_back(fmt::format("PCIe/host offload exposed {:.3f} s", b.offload_exposed.seconds()));
    }
  }

  // What kind of step this is.
  Time comm = b.tp_exposed + b.dp_exposed + b.pp_exposed + b.ep_exposed + b.bubble + b.offload_exposed;
  Time mem = memory_class + eager_excess + launch_excess + launch_class;
  Time cmp = b.compute() - mem;
  if (comm >= cmp && comm >= mem) {
    d.step_class = "communication-bound";
  } else if (mem > cmp) {
    d.step_class = "memory-bound";
  } else {
    d.step_class = "compute-bound";
  }

  if (options.simulate_remedies) {
    auto key = [](const config::PlanConfig& plan, config::NodeOrder order) {
      return config::PlanToJson(plan).dump() + NodeOrderName(order);
    };
    std::set<std::string> seen{key(p, s.node_order)};
    for (const Candidate& c :
         Candidates(s, d, launch_excess, eager_excess, recompute, compute_class, tp_link, cp_exposed)) {
      if (!seen.insert(key(c.plan, c.node_order)).second) continue;
      d.remedies.push_back(Evaluate(s, c, d.step, options));
    }
    std::stable_sort(d.remedies.begin(), d.remedies.end(), [](const Remedy& a, const Remedy& c) {
      bool sa = a.status == "simulated", sc = c.status == "simulated";
      if (sa != sc) return sa;
      return sa && a.gain > c.gain;
    });
    // Combine the gaining remedies that touch different plan keys: greedily,
    // best first, keeping a change only if the plan with it is valid, fits
    // and is faster than without it.
    nlohmann::json merged = config::PlanToJson(p);
    config::NodeOrder order = s.node_order;
    std::set<std::string> keys;
    std::vector<std::string> changes;
    Remedy best;
    best.predicted = d.step;
    for (const Remedy& r : d.remedies) {
      if (r.status != "simulated" || r.gain <= Time::Zero()) continue;
      bool clash = false;
      for (auto it = r.plan_changes.begin(); it != r.plan_changes.end(); ++it) clash |= keys.count(it.key()) > 0;
      if (clash) continue;
      nlohmann::json trial = merged;
      config::NodeOrder trial_order = order;
      for (auto it = r.plan_changes.begin(); it != r.plan_changes.end(); ++it) {
        if (it.key() == "node_order") {
          trial_order = r.node_order;
        } else {
          trial[it.key()] = it.value();
        }
      }
      Candidate c{0, "the gaining remedies that change different plan keys", "", p, trial_order};
      for (const auto& ch : changes) c.change += ch + " + ";
      c.change += r.change;
      try {
        c.plan = config::ParsePlan(JsonNode(trial, s.file, "plan"), p);
      } catch (const InputError&) {
        continue;
      }
      Remedy e = Evaluate(s, c, d.step, options);
      if (e.status != "simulated" || e.predicted >= best.predicted) continue;
      best = e;
      merged = trial;
      order = trial_order;
      changes.push_back(r.change);
      for (auto it = r.plan_changes.begin(); it != r.plan_changes.end(); ++it) keys.insert(it.key());
    }
    if (changes.size() >= 2) d.combined = best;
  }
  d.result.trace.reset();
  d.result.replay.reset();
  return d;
}

std::string DiagnosisText(const Diagnosis& d) {
  const auto& s = d.result.scenario;
  std::string o;
  auto pct = [&](Time x) { return 100.0 * x.seconds() / d.step.seconds(); };
  o += fmt::format("diagnosis: {}\n", s.name);
  o += fmt::format("plan: {}\n", PlanLine(s.plan));
  o += fmt::format("step {:.3f} s simulated, ideal {:.3f} s (model FLOPs at the {} dense peak), MFU {:.1f}%: {}\n\n",
                   d.step.seconds(), d.ideal.seconds(), config::PrecisionName(s.plan.precision), 100 * d.result.mfu,
                   d.step_class);
  o += fmt::format("gap by layer (breakdown rank: stage {})       seconds   % of step\n", d.result.breakdown_stage);
  o += fmt::format("  ideal step                                {:9.3f}   {:5.1f}%\n", d.ideal.seconds(), pct(d.ideal));
  for (int l = 0; l < 5; ++l) {
    o += fmt::format("  {} {:<38} {:9.3f}   {:5.1f}%\n", l + 1, kLayerNames[l], d.layer_gap[l].seconds(),
                     pct(d.layer_gap[l]));
  }
  o += fmt::format("  = simulated step                          {:9.3f}\n", d.step.seconds());
  for (int l = 0; l < 5; ++l) {
    o += fmt::format("\n{} {}\n", l + 1, kLayerNames[l]);
    for (const auto& line : d.layer_findings[l]) o += "  - " + line + "\n";
    if (l == 0) {
      o += "  ops by time beyond ideal (breakdown rank, all layers and micro-batches):\n";
      o += "    op                                calls    time s  ideal s  roofline\n";
      int n = 0;
      for (const OpStat& op : d.ops) {
        if (++n > 12) break;
        o += fmt::format("    {:<32} {:6} {:9.3f} {:8.3f}  {}\n", op.name, op.calls, op.time.seconds(),
                         op.ideal.seconds(), op.roofline);
      }
    }
  }
  o += "\nremedies, re-simulated, ranked by gain:\n";
  int i = 0;
  for (const Remedy& r : d.remedies) {
    if (r.status != "simulated" || r.gain <= Time::Zero()) continue;
    o += fmt::format("  {:2}. [{} {}] {}: {:.3f} s -> {:.3f} s per step ({:+.3f} s, {:+.1f}%)\n", ++i, r.layer,
                     kLayerNames[r.layer - 1], r.change, d.step.seconds(), r.predicted.seconds(), -r.gain.seconds(),
                     -pct(r.gain));
    o += fmt::format("      because: {}\n", r.finding);
  }
  if (i == 0) o += "  (none found)\n";
  if (d.combined.status == "simulated") {
    o += fmt::format("  together: {}: {:.3f} s -> {:.3f} s per step ({:+.3f} s, {:+.1f}%)\n", d.combined.change,
                     d.step.seconds(), d.combined.predicted.seconds(), -d.combined.gain.seconds(),
                     -pct(d.combined.gain));
  } else if (!d.combined.status.empty()) {
    o += fmt::format("  together: {} ({})\n", d.combined.status, d.combined.reason);
  }
  bool no_gain = false;
  for (const Remedy& r : d.remedies) {
    if (r.status != "simulated" || r.gain > Time::Zero()) continue;
    if (!no_gain) o += "tried, no gain:\n";
    no_gain = true;
    o += fmt::format("  - [{}] {}: {:.3f} s -> {:.3f} s ({:+.1f}%)\n", r.layer, r.change, d.step.seconds(),
                     r.predicted.seconds(), -pct(r.gain));
  }
  bool measure = false;
  for (const Remedy& r : d.remedies) {
    if (r.status != "not simulated") continue;
    if (!measure) o += "not measured here:\n";
    measure = true;
    o += fmt::format("  - [{}] {}: {}\n      because: {}\n", r.layer, r.change, r.reason, r.finding);
  }
  bool header = false;
  for (const Remedy& r : d.remedies) {
    if (r.status == "simulated" || r.status == "not simulated") continue;
    if (!header) o += "not possible:\n";
    header = true;
    o += fmt::format("  - {}: {} ({})\n", r.change, r.status, r.reason);
  }
  return o;
}

nlohmann::json DiagnosisJson(const Diagnosis& d) {
  nlohmann::json j;
  j["scenario"] = d.result.scenario.name;
  j["plan"] = config::PlanToJson(d.result.scenario.plan);
  j["ideal_step_s"] = d.ideal.seconds();
  j["step_s"] = d.step.seconds();
  j["mfu"] = d.result.mfu;
  j["step_class"] = d.step_class;
  j["breakdown_stage"] = d.result.breakdown_stage;
  nlohmann::json layers = nlohmann::json::array();
  for (int l = 0; l < 5; ++l) {
    layers.push_back({{"layer", l + 1},
                      {"name", kLayerNames[l]},
                      {"gap_s", d.layer_gap[l].seconds()},
                      {"parts", d.layer_parts[l]},
                      {"findings", d.layer_findings[l]}});
  }
  j["layers"] = layers;
  nlohmann::json ops = nlohmann::json::array();
  for (const OpStat& o : d.ops) {
    ops.push_back({{"name", o.name},
                   {"roofline", o.roofline},
                   {"calls", o.calls},
                   {"kernels", o.kernels},
                   {"time_s", o.time.seconds()},
                   {"ideal_s", o.ideal.seconds()},
                   {"launch_excess_s", o.launch_excess.seconds()},
                   {"eager_excess_s", o.eager_excess.seconds()},
                   {"flops", o.flops},
                   {"bytes", o.bytes}});
  }
  j["ops"] = ops;
  nlohmann::json findings = nlohmann::json::array();
  for (const Remedy& r : d.remedies) {
    nlohmann::json f = {{"layer", r.layer},        {"layer_name", kLayerNames[r.layer - 1]},
                        {"finding", r.finding},    {"change", r.change},
                        {"plan_changes", r.plan_changes}, {"status", r.status}};
    if (r.status == "simulated") {
      f["predicted_step_s"] = r.predicted.seconds();
      f["gain_s"] = r.gain.seconds();
    } else {
      f["reason"] = r.reason;
    }
    findings.push_back(f);
  }
  j["findings"] = findings;
  if (!d.combined.status.empty()) {
    nlohmann::json c = {{"change", d.combined.change}, {"status", d.combined.status}};
    if (d.combined.status == "simulated") {
      c["predicted_step_s"] = d.combined.predicted.seconds();
      c["gain_s"] = d.combined.gain.seconds();
      c["plan"] = config::PlanToJson(d.combined.plan);
    } else {
      c["reason"] = d.combined.reason;
    }
    j["combined"] = c;
  }
  return j;
}

}  // namespace stacksim::diagnose
