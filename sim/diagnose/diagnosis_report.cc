#include "sim/diagnose/diagnosis_report.h"

#include <fmt/format.h>

namespace stacksim::diagnose {
namespace {

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

}  // namespace

std::string DiagnosisText(const Diagnosis& d) {
  const auto& s = d.result.scenario;
  std::string o;
  auto pct = [&](Time x) { return 100.0 * x.seconds() / d.step.seconds(); };
  o += fmt::format("diagnosis: {}\n", s.name);
  o += fmt::format("plan: {}\n", PlanLine(s.plan));
  o += fmt::format("step {:.3f} s simulated, ideal {:.3f} s (model FLOPs at the {} dense peak), MFU {:.1f}%: {}\n\n",
                   d.step.seconds(), d.ideal.seconds(), config::PrecisionName(s.plan.precision), 100 * d.result.mfu,
                   StepClassName(d.step_class));
  o += fmt::format("gap by layer (breakdown rank: stage {})       seconds   % of step\n", d.result.breakdown_stage);
  o += fmt::format("  ideal step                                {:9.3f}   {:5.1f}%\n", d.ideal.seconds(), pct(d.ideal));
  for (StackLayer l : kStackLayers) {
    o += fmt::format("  {} {:<38} {:9.3f}   {:5.1f}%\n", StackLayerNumber(l), StackLayerName(l),
                     d.layer_gap[l].seconds(), pct(d.layer_gap[l]));
  }
  o += fmt::format("  = simulated step                          {:9.3f}\n", d.step.seconds());
  for (StackLayer l : kStackLayers) {
    o += fmt::format("\n{} {}\n", StackLayerNumber(l), StackLayerName(l));
    for (const auto& line : d.layer_findings[l]) o += "  - " + line + "\n";
    if (l == StackLayer::kModelDefinition) {
      o += "  ops by time beyond ideal (breakdown rank, all layers and micro-batches):\n";
      o += "    op                                calls    time s  ideal s  roofline\n";
      int n = 0;
      for (const OpStat& op : d.ops) {
        if (++n > 12) break;
        o += fmt::format("    {:<32} {:6} {:9.3f} {:8.3f}  {}\n", op.name, op.calls, op.time.seconds(),
                         op.ideal.seconds(), RooflineName(op.roofline));
      }
    }
  }
  o += fmt::format("\ncritical path (the chain of tasks that sets the step): {} tasks, {:.3f} s\n",
                   d.critical_path_tasks, d.critical_path.seconds());
  int shown = 0;
  for (const auto& [role, time] : d.critical_path_by_role) {
    if (++shown > 6) break;
    o += fmt::format("  {:<36} {:9.3f}   {:5.1f}%\n", role, time.seconds(), pct(time));
  }
  o += "\nremedies, re-simulated, ranked by gain:\n";
  int i = 0;
  for (const Remedy& r : d.remedies) {
    if (r.status != RemedyStatus::kSimulated || r.gain <= Time::Zero()) continue;
    o += fmt::format("  {:2}. [{} {}] {}: {:.3f} s -> {:.3f} s per step ({:+.3f} s, {:+.1f}%)\n", ++i,
                     StackLayerNumber(*r.layer), StackLayerName(*r.layer), r.change, d.step.seconds(),
                     r.predicted.seconds(), -r.gain.seconds(), -pct(r.gain));
    o += fmt::format("      because: {}\n", r.finding);
  }
  if (i == 0) o += "  (none found)\n";
  if (d.combined.status == RemedyStatus::kSimulated) {
    o += fmt::format("  together: {}: {:.3f} s -> {:.3f} s per step ({:+.3f} s, {:+.1f}%)\n", d.combined.change,
                     d.step.seconds(), d.combined.predicted.seconds(), -d.combined.gain.seconds(),
                     -pct(d.combined.gain));
  } else if (d.combined.status != RemedyStatus::kNone) {
    o += fmt::format("  together: {} ({})\n", RemedyStatusName(d.combined.status), d.combined.reason);
  }
  bool no_gain = false;
  for (const Remedy& r : d.remedies) {
    if (r.status != RemedyStatus::kSimulated || r.gain > Time::Zero()) continue;
    if (!no_gain) o += "tried, no gain:\n";
    no_gain = true;
    o += fmt::format("  - [{}] {}: {:.3f} s -> {:.3f} s ({:+.1f}%)\n", StackLayerNumber(*r.layer), r.change,
                     d.step.seconds(), r.predicted.seconds(), -pct(r.gain));
  }
  bool measure = false;
  for (const Remedy& r : d.remedies) {
    if (r.status != RemedyStatus::kNotSimulated) continue;
    if (!measure) o += "not measured here:\n";
    measure = true;
    o += fmt::format("  - [{}] {}: {}\n      because: {}\n", StackLayerNumber(*r.layer), r.change, r.reason, r.finding);
  }
  bool header = false;
  for (const Remedy& r : d.remedies) {
    if (r.status == RemedyStatus::kSimulated || r.status == RemedyStatus::kNotSimulated) continue;
    if (!header) o += "not possible:\n";
    header = true;
    o += fmt::format("  - {}: {} ({})\n", r.change, RemedyStatusName(r.status), r.reason);
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
  j["step_class"] = StepClassName(d.step_class);
  j["breakdown_stage"] = d.result.breakdown_stage;
  nlohmann::json layers = nlohmann::json::array();
  for (StackLayer l : kStackLayers) {
    layers.push_back({{"layer", StackLayerNumber(l)},
                      {"name", StackLayerName(l)},
                      {"gap_s", d.layer_gap[l].seconds()},
                      {"parts", d.layer_parts[l]},
                      {"findings", d.layer_findings[l]}});
  }
  j["layers"] = layers;
  nlohmann::json by_role = nlohmann::json::array();
  for (const auto& [role, time] : d.critical_path_by_role) by_role.push_back({{"role", role}, {"time_s", time.seconds()}});
  j["critical_path"] = {{"length_s", d.critical_path.seconds()}, {"tasks", d.critical_path_tasks}, {"by_role", by_role}};
  nlohmann::json ops = nlohmann::json::array();
  for (const OpStat& o : d.ops) {
    ops.push_back({{"name", o.name},
                   {"roofline", RooflineName(o.roofline)},
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
    nlohmann::json f = {{"layer", StackLayerNumber(*r.layer)},
                        {"layer_name", StackLayerName(*r.layer)},
                        {"finding", r.finding},
                        {"change", r.change},
                        {"plan_changes", r.plan_changes},
                        {"status", RemedyStatusName(r.status)}};
    if (r.status == RemedyStatus::kSimulated) {
      f["predicted_step_s"] = r.predicted.seconds();
      f["gain_s"] = r.gain.seconds();
    } else {
      f["reason"] = r.reason;
    }
    findings.push_back(f);
  }
  j["findings"] = findings;
  if (d.combined.status != RemedyStatus::kNone) {
    nlohmann::json c = {{"change", d.combined.change}, {"status", RemedyStatusName(d.combined.status)}};
    if (d.combined.status == RemedyStatus::kSimulated) {
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
