#include "sim/diagnose/step_accounting.h"

#include <algorithm>

#include "sim/cost/profile_cost_model.h"
#include "sim/simulate/attribution.h"

namespace stacksim::diagnose {
namespace {

using trace::TaskId;

config::Precision PeakPrecision(config::Precision p) {
  return p == config::Precision::kFp32 ? config::Precision::kTf32 : p;
}

// Which physical link a communication group's traffic crosses.
std::string LinkOf(const config::TopologyConfig& topo, const trace::CommGroup& g) {
  if (g.nodes > 1) return "NIC";
  return topo.scale_up.kind == config::ScaleUpKind::kPcie ? "PCIe" : "NVLink";
}

}  // namespace

const char* RooflineName(Roofline r) {
  switch (r) {
    case Roofline::kCompute: return "compute";
    case Roofline::kMemory: return "memory";
    case Roofline::kLaunch: return "launch";
  }
  return "?";
}

StepAccounting AccountStep(const simulate::SimulationResult& result) {
  StepAccounting a;
  const config::ScenarioConfig& s = result.scenario;
  const config::PlanConfig& p = s.plan;
  const trace::Trace& t = *result.trace;
  const engine::ReplayResult& r = *result.replay;
  const int rank = result.breakdown_stage;
  const double peak = s.profile.Peak(PeakPrecision(p.precision))->value;
  a.peak = peak;
  cost::ProfileCostModel cost(s.profile, p.cuda_graphs, p.comm_sms);
  cost.set_clock(cost.TraceClockState(t));  // the power state the replay priced at

  const trace::StreamId compute = t.compute_stream();

  // Per-op accounting on the breakdown rank's compute stream.
  std::map<std::string, OpStat> ops;
  double rank_ideal_s = 0;
  std::vector<double> stage_ideal_s(t.rank_count(), 0.0);
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
      if (task.kind == trace::TaskKind::kCollective && task.stream == compute && is_cp_group(g)) a.cp_exposed += dur;
      std::string link = g == trace::kNoGroup ? "NVLink" : LinkOf(s.topology, t.group(g));
      CommBusy& cb = a.comm_busy[task.role];
      cb.busy += dur;
      if (cb.links.empty() || cb.links == link) {
        cb.links = link;
      } else if (cb.links.find(link) == std::string::npos) {
        cb.links += "+" + link;
      }
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
      a.recompute += dur;
      continue;
    }
    Time lx = dur > kernel ? dur - kernel : Time::Zero();
    Time ex = kernel - fused;
    o.launch_excess += lx;
    o.eager_excess += ex;
    a.launch_excess += lx;
    a.eager_excess += ex;
    rank_ideal_s += task.compute.flops.value / peak;
  }
  for (auto& [name, o] : ops) {
    o.ideal = Time::FromSeconds(o.flops / peak);
    const double flop_s = o.flops / peak;
    const double byte_s = o.bytes / cost.memory_bandwidth().value;
    if (o.launch_excess * 2.0 > o.time) {
      o.roofline = Roofline::kLaunch;
    } else if (flop_s >= byte_s) {
      o.roofline = Roofline::kCompute;
    } else {
      o.roofline = Roofline::kMemory;
    }
    a.ops.push_back(o);
  }
  std::sort(a.ops.begin(), a.ops.end(), [](const OpStat& x, const OpStat& y) {
    Time gx = x.time - x.ideal, gy = y.time - y.ideal;
    return gx != gy ? gx > gy : x.name < y.name;
  });

  // Compute waiting on a CP collective off the compute stream: the gaps that
  // simulate's attribution puts in TP's exposed time for this reason.
  {
    Time prev_end;
    for (size_t i = 0; i < t.size(); ++i) {
      const trace::Task& task = t.task(static_cast<TaskId>(i));
      if (task.rank != rank || task.stream != compute) continue;
      const auto& tm = r.timings[i];
      if (tm.start > prev_end) {
        const TaskId blocker = simulate::GapBlocker(t, r, static_cast<TaskId>(i), prev_end);
        if (blocker >= 0 && t.task(blocker).kind == trace::TaskKind::kCollective &&
            t.task(blocker).stream != compute && is_cp_group(t.task(blocker).comm.group)) {
          a.cp_exposed += tm.start - prev_end;
        }
      }
      prev_end = std::max(prev_end, tm.end);
    }
    a.cp_exposed = std::min(a.cp_exposed, result.breakdown.tp_exposed);
  }

  // Stage mean: the average over simulated stages of each one's model-work
  // ideal (every stage stands for the same number of GPUs).
  double mean_stage_s = 0;
  for (double v : stage_ideal_s) mean_stage_s += v;
  mean_stage_s /= std::max<size_t>(1, stage_ideal_s.size());
  a.rank_ideal = Time::FromSeconds(rank_ideal_s);
  a.mean_stage = Time::FromSeconds(mean_stage_s);
  for (const OpStat& o : a.ops) {
    if (o.recompute) continue;
    Time rest = o.time - o.ideal - o.launch_excess - o.eager_excess;
    switch (o.roofline) {
      case Roofline::kMemory: a.memory_class += rest; break;
      case Roofline::kCompute: a.compute_class += rest; break;
      case Roofline::kLaunch: a.launch_class += rest; break;
    }
  }
  if (auto it = a.comm_busy.find(trace::TaskRole::kTpComm); it != a.comm_busy.end()) a.tp_link = it->second.links;
  return a;
}

}  // namespace stacksim::diagnose
