#include "sim/diagnose/layer_split.h"

#include <cmath>
#include <map>

#include <fmt/format.h>

#include "sim/workload/placement.h"

namespace stacksim::diagnose {
namespace {

// The findings of layer 5: which link each kind of communication kept busy,
// the link that binds the exposed part, HBM bandwidth and capacity, offload.
std::vector<std::string> HardwareFindings(const simulate::SimulationResult& result, const StepAccounting& a,
                                          double pct_memory_bound) {
  const simulate::Breakdown& b = result.breakdown;
  std::vector<std::string> f;
  // Exposed time per link: each breakdown bucket goes to the link its
  // collectives cross.
  std::map<std::string, Time> exposed_by_link;
  auto expose = [&](trace::TaskRole role, Time x) {
    auto it = a.comm_busy.find(role);
    if (it == a.comm_busy.end() || x <= Time::Zero()) return;
    exposed_by_link[it->second.links] += x;
  };
  expose(trace::TaskRole::kTpComm, b.tp_exposed);
  expose(trace::TaskRole::kDpComm, b.dp_exposed);
  expose(trace::TaskRole::kPpComm, b.pp_exposed);
  expose(trace::TaskRole::kEpComm, b.ep_exposed);
  // Listed by the role's display name, in alphabetical order.
  std::map<std::string, const CommBusy*> by_name;
  for (const auto& [role, v] : a.comm_busy) by_name.emplace(trace::TaskRoleName(role), &v);
  for (const auto& [name, v] : by_name) {
    f.push_back(fmt::format("{} traffic on {}: {:.3f} s busy", name, v->links, v->busy.seconds()));
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
                          (a.memory_class + a.eager_excess).seconds(), pct_memory_bound));
  Bytes fullest;
  int fullest_stage = 0;
  for (const auto& m : result.memory) {
    if (m.total() > fullest) {
      fullest = m.total();
      fullest_stage = m.stage;
    }
  }
  f.push_back(fmt::format("memory capacity: stage {} uses {} of {} ({} headroom); recomputation costs {:.3f} s",
                          fullest_stage, GibText(fullest), GibText(result.capacity),
                          GibText(result.capacity - fullest), a.recompute.seconds()));
  if (b.offload_exposed > Time::Zero()) {
    f.push_back(fmt::format("PCIe/host offload exposed {:.3f} s", b.offload_exposed.seconds()));
  }
  // Nsight's symptom of an offload-heavy step: the host link busy for much
  // of it (utilization.h).
  if (result.utilization.pcie > 0.3) {
    f.push_back(fmt::format("PCIe-heavy: the host link carries offload copies {:.1f}% of the step",
                            100.0 * result.utilization.pcie));
  }
  return f;
}

}  // namespace

const char* StepClassName(StepClass c) {
  switch (c) {
    case StepClass::kComputeBound: return "compute-bound";
    case StepClass::kMemoryBound: return "memory-bound";
    case StepClass::kCommunicationBound: return "communication-bound";
  }
  return "?";
}

bool PipelineCrossesDomains(const config::PlanConfig& p, const config::TopologyConfig& topo) {
  for (int r = 0; r + 1 < p.pp; ++r) {
    if (workload::PlacePipelinePair(p, topo, r, r + 1).nodes > 1) return true;
  }
  return false;
}

std::string GibText(Bytes b) { return fmt::format("{:.1f} GiB", b.value / (1024.0 * 1024 * 1024)); }

LayerSplit SplitByLayer(const simulate::SimulationResult& result, const StepAccounting& a) {
  LayerSplit split;
  const config::ScenarioConfig& s = result.scenario;
  const config::PlanConfig& p = s.plan;
  const simulate::Breakdown& b = result.breakdown;
  split.step = b.total();
  split.ideal = Time::FromSeconds(result.model_flops.value / s.gpus / a.peak);

  const Time stage_imbalance = a.rank_ideal - a.mean_stage;
  const Time extra_work = a.mean_stage - split.ideal;  // FLOPs beyond the model count, and rounding
  const Time moe_imbalance = result.moe_imbalance_cost;
  const Time graph_launch = p.cuda_graphs ? a.launch_excess : Time::Zero();
  const Time eager_launch = p.cuda_graphs ? Time::Zero() : a.launch_excess;
  // The memory-, compute- and launch-class rests together.
  const Time below_peak = b.compute() - a.recompute - a.launch_excess - a.eager_excess - a.rank_ideal;

  auto& gap = split.gap;
  auto& parts = split.parts;
  gap[StackLayer::kModelDefinition] = below_peak + extra_work + graph_launch - moe_imbalance;
  parts[StackLayer::kModelDefinition] = {{"memory_bound_ops_s", a.memory_class.seconds()},
                                         {"compute_bound_ops_below_peak_s", a.compute_class.seconds()},
                                         {"launch_bound_ops_kernel_time_beyond_ideal_s", a.launch_class.seconds()},
                                         {"work_beyond_model_flops_s", extra_work.seconds()},
                                         {"graph_launch_floor_s", graph_launch.seconds()},
                                         {"moe_imbalance_moved_to_parallelization_s", -moe_imbalance.seconds()}};
  gap[StackLayer::kParallelization] =
      b.tp_exposed + b.dp_exposed + b.pp_exposed + b.ep_exposed + b.bubble + stage_imbalance + moe_imbalance;
  parts[StackLayer::kParallelization] = {{"tp_exposed_s", b.tp_exposed.seconds()},
                                         {"dp_exposed_s", b.dp_exposed.seconds()},
                                         {"pp_exposed_s", b.pp_exposed.seconds()},
                                         {"ep_exposed_s", b.ep_exposed.seconds()},
                                         {"bubble_s", b.bubble.seconds()},
                                         {"stage_imbalance_s", stage_imbalance.seconds()},
                                         {"moe_imbalance_s", moe_imbalance.seconds()}};
  gap[StackLayer::kRuntimeOrchestration] = b.other + b.input_stall;
  parts[StackLayer::kRuntimeOrchestration] = {
      {"other_idle_s", b.other.seconds()},
      {"input_stall_s", b.input_stall.seconds()},
      {"stragglers", "not in one healthy step: stacksim simulate --stragglers"},
      {"failures", "not in one step: stacksim run-campaign"}};
  gap[StackLayer::kCompilation] = a.eager_excess + eager_launch;
  parts[StackLayer::kCompilation] = {{"unfused_kernels_s", a.eager_excess.seconds()},
                                     {"launch_overhead_without_cuda_graphs_s", eager_launch.seconds()}};
  gap[StackLayer::kHardware] = a.recompute + b.offload_exposed;
  parts[StackLayer::kHardware] = {{"recompute_s", a.recompute.seconds()},
                                  {"offload_exposed_s", b.offload_exposed.seconds()}};

  auto pct = [&](Time x) { return 100.0 * x.seconds() / split.step.seconds(); };
  {
    auto& f = split.findings[StackLayer::kModelDefinition];
    // Nsight's symptom of a memory-bound step: much time in memory-bound
    // kernels, HBM busy while the tensor cores are not.
    if (b.memory_bound.seconds() > 0.25 * split.step.seconds()) {
      f.push_back(fmt::format("memory-bound phases: {:.1f}% of the step in memory-bound ops (HBM bandwidth {:.1f}%, "
                              "SM active {:.1f}%)",
                              pct(b.memory_bound), 100.0 * result.utilization.hbm_bandwidth,
                              100.0 * result.utilization.sm_active));
    }
    f.push_back(fmt::format("memory-bound ops at fused speed {:.3f} s, matmuls/attention below peak {:.3f} s, "
                            "launch-bound ops' kernels {:.3f} s",
                            a.memory_class.seconds(), a.compute_class.seconds(), a.launch_class.seconds()));
    if (std::abs(extra_work.seconds()) > 1e-4) {
      f.push_back(fmt::format("work beyond the model-FLOP count (embedding, loss, optimizer FLOPs; counting) {:.3f} s",
                              extra_work.seconds()));
    }
    if (p.cuda_graphs) f.push_back(fmt::format("launch floor under CUDA graphs {:.3f} s", graph_launch.seconds()));
  }
  {
    auto& f = split.findings[StackLayer::kParallelization];
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
                              a.cp_exposed.seconds(), p.cp, config::CpCommName(p.cp_comm)));
    }
    if (p.pp > 1) {
      f.push_back(fmt::format("rank order {}: pipeline neighbours {}", config::RankOrderName(p.rank_order),
                              PipelineCrossesDomains(p, s.topology) ? "cross NVLink domains" : "share an NVLink domain"));
    }
    f.push_back(fmt::format("busiest stage ({}) computes {:.3f} s more than the stages' mean", result.breakdown_stage,
                            stage_imbalance.seconds()));
    if (s.model.is_moe()) {
      f.push_back(fmt::format("MoE load factor {:.2f}: imbalance costs {:.3f} s", result.moe_load_factor,
                              moe_imbalance.seconds()));
    }
  }
  {
    auto& f = split.findings[StackLayer::kRuntimeOrchestration];
    f.push_back(fmt::format("other idle {:.3f} s (host syncs, waits not explained by communication or the pipeline)",
                            b.other.seconds()));
    if (result.input && result.input->input_bound()) {
      const simulate::InputPipeline& in = *result.input;
      f.push_back(fmt::format(
          "INPUT-BOUND: the GPUs wait {:.3f} s per step for the data loader (GPU busy {:.1f}% of the step); {}",
          in.stall.seconds(), 100.0 * result.utilization.gpu_busy,
          in.workers_needed > 0 ? fmt::format("{} workers per loader remove the stall", in.workers_needed)
                                : std::string("no worker count removes it: faster preprocessing, more host cores or "
                                              "storage bandwidth")));
    }
    f.push_back(
        "the step assumes healthy hardware: for slow nodes run `stacksim simulate SCENARIO --stragglers 0.1%:1.5x`, "
        "for failures, restarts and checkpoints over a whole run `stacksim run-campaign SCENARIO --tokens N`");
    f.push_back(fmt::format(
        "job placement: nodes {} (scenario node_order; only the flow-level network model, --network simgrid, prices it)",
        config::NodeOrderName(s.node_order)));
  }
  {
    auto& f = split.findings[StackLayer::kCompilation];
    f.push_back(fmt::format("kernels {}: unfused excess {:.3f} s",
                            p.kernels == config::KernelFusion::kEager ? "eager" : "fused", a.eager_excess.seconds()));
    f.push_back(fmt::format("CUDA graphs {}: launch-bound excess {:.3f} s", p.cuda_graphs ? "on" : "off",
                            a.launch_excess.seconds()));
    bool fp8 = s.profile.Peak(config::Precision::kFp8).has_value();
    f.push_back(fmt::format("precision {}{}", config::PrecisionName(p.precision),
                            p.precision == config::Precision::kBf16 && fp8
                                ? fmt::format(": fp8 available ({:.0f} vs {:.0f} TFLOP/s), not used",
                                              s.profile.Peak(config::Precision::kFp8)->value / 1e12, a.peak / 1e12)
                                : ""));
  }
  split.findings[StackLayer::kHardware] = HardwareFindings(result, a, pct(a.memory_class + a.eager_excess));

  // What kind of step this is.
  Time comm = b.tp_exposed + b.dp_exposed + b.pp_exposed + b.ep_exposed + b.bubble + b.offload_exposed;
  Time mem = a.memory_class + a.eager_excess + a.launch_excess + a.launch_class;
  Time cmp = b.compute() - mem;
  if (comm >= cmp && comm >= mem) {
    split.step_class = StepClass::kCommunicationBound;
  } else if (mem > cmp) {
    split.step_class = StepClass::kMemoryBound;
  } else {
    split.step_class = StepClass::kComputeBound;
  }
  return split;
}

}  // namespace stacksim::diagnose
