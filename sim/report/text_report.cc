#include "sim/report/text_report.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "sim/util/number_text.h"

namespace stacksim::report {
namespace {

constexpr int kBarWidth = 30;       // '#' characters for 100% of the step
constexpr size_t kAllStagesUpTo = 8;  // memory table rows before eliding stages
constexpr size_t kMaxAlgorithms = 8;  // collective choices listed before "... more"

double GiB(Bytes b) { return b.value / kGiB; }

// Decimals for seconds so that the step shows at least four significant
// digits: a 12 s step and a 40 ms one both read well. Every time in the report
// uses the step's decimals, so the breakdown column lines up.
int SecondsDecimals(Time step) {
  double s = step.seconds();
  if (!(s > 0) || s >= 1) return 3;
  return std::min(9, 3 + static_cast<int>(std::ceil(-std::log10(s))));
}

std::string Seconds(Time t, int decimals) { return fmt::format("{:.{}f}", t.seconds(), decimals); }

std::string Percent(double fraction) { return fmt::format("{:.1f}%", 100.0 * fraction); }

// The profile's origin in one line; the full provenance is in the JSON report.
std::string ProfileOrigin(const config::ProfileConfig& p) {
  auto shorten = [](const std::string& text) {
    return text.size() <= 110 ? text : text.substr(0, 107) + "...";
  };
  switch (p.kind) {
    case config::ProfileKind::kDatasheet:
      return "numbers are datasheet-derived";
    case config::ProfileKind::kMeasured:
      return "measured: " + shorten(p.provenance.empty() ? p.gpu : p.provenance);
    case config::ProfileKind::kProjected:
      return "projected: " + shorten(p.provenance.empty() ? p.gpu : p.provenance);
  }
  return "";
}

void AppendHeader(const simulate::SimulationResult& r, std::string& out) {
  const config::ScenarioConfig& s = r.scenario;
  const config::PlanConfig& p = s.plan;
  out += fmt::format("stacksim: {}\n", s.name.empty() ? s.file : s.name);
  out += fmt::format("model     {}, {:.1f}B params, {} layers, hidden {}, seq {}\n", s.model.name,
                     static_cast<double>(s.model.ParameterCount()) / 1e9, s.model.num_layers,
                     s.model.hidden_size, s.seq_len);
  std::string gpu = s.profile.gpu.empty() ? s.topology.gpu : s.profile.gpu;
  int nodes = s.topology.gpus_per_node > 0 ? s.nodes() : 0;
  out += fmt::format("cluster   {} x {} on {}, {} node{}\n", s.gpus, gpu, s.topology.name, nodes,
                     nodes == 1 ? "" : "s");
  out += fmt::format("plan      {}\n", PlanLine(p));
  out += fmt::format("network   {}\n", r.network_model);
  out += fmt::format("profile   {}{}\n", s.profile.name.empty() ? "" : s.profile.name + ": ",
                     ProfileOrigin(s.profile));
}

void AppendHeadline(const simulate::SimulationResult& r, const uncertainty::Assessment* trust, std::string& out) {
  out += fmt::format("step time           {} s\n", Seconds(r.iteration, SecondsDecimals(r.iteration)));
  if (trust != nullptr) out += uncertainty::StepRangeLine(*trust);
  out += fmt::format("throughput          {} tokens/s, {} per GPU\n", Grouped(r.tokens_per_s),
                     Grouped(r.tokens_per_s_per_gpu));
  out += fmt::format("MFU / HFU           {} / {}\n", Percent(r.mfu), Percent(r.hfu));
  out += fmt::format("model TFLOP/s/GPU   {:.1f}\n", r.model_tflops_per_gpu);
}

// Which stages the memory table shows: all when few; else the first three, the
// fullest and the last two, in order.
std::vector<size_t> StagesShown(const std::vector<simulate::StageMemory>& memory) {
  std::vector<size_t> shown;
  size_t n = memory.size();
  if (n <= kAllStagesUpTo) {
    for (size_t i = 0; i < n; ++i) shown.push_back(i);
    return shown;
  }
  size_t fullest = 0;
  for (size_t i = 1; i < n; ++i) {
    if (memory[i].total() > memory[fullest].total()) fullest = i;
  }
  std::set<size_t> set = {0, 1, 2, fullest, n - 2, n - 1};
  return {set.begin(), set.end()};
}

void AppendMemory(const simulate::SimulationResult& r, std::string& out) {
  out += "\nmemory per GPU (GiB)\n";
  out += fmt::format("{:>5} {:>8} {:>7} {:>9} {:>11} {:>6} {:>7} {:>8} {:>8}\n", "stage", "weights",
                     "grads", "optimizer", "activations", "other", "total", "capacity", "headroom");
  size_t previous = 0;
  bool first = true;
  for (size_t i : StagesShown(r.memory)) {
    if (!first && i > previous + 1) out += fmt::format("{:>5}\n", "...");
    first = false;
    previous = i;
    const simulate::StageMemory& m = r.memory[i];
    Bytes total = m.total();
    out += fmt::format("{:>5} {:>8.1f} {:>7.1f} {:>9.1f} {:>11.1f} {:>6.1f} {:>7.1f} {:>8.1f} {:>8.1f}{}\n",
                       m.stage, GiB(m.weights), GiB(m.gradients), GiB(m.optimizer), GiB(m.activations),
                       GiB(m.other), GiB(total), GiB(r.capacity), GiB(r.capacity - total),
                       total > r.capacity ? "  over" : "");
  }
  const config::PlanConfig& plan = r.scenario.plan;
  if (plan.offload_optimizer != config::OffloadTarget::kNone) {
    const config::TopologyConfig& t = r.scenario.topology;
    out += fmt::format("offload: optimizer {:.0f}% to {}{}, {}\n", 100.0 * plan.offload_optimizer_fraction,
                       config::OffloadName(plan.offload_optimizer),
                       plan.offload_params != config::OffloadTarget::kNone
                           ? fmt::format(", parameters to {}", config::OffloadName(plan.offload_params))
                           : std::string(),
                       plan.overlap_offload ? "overlapped" : "not overlapped");
    out += fmt::format("  host memory per node {:.1f} GiB of {:.1f} GiB", GiB(r.host_offload_per_node),
                       t.host ? GiB(t.host->memory) : 0.0);
    if (r.nvme_offload_per_node.value > 0 && t.nvme) {
      out += fmt::format(", NVMe per node {:.1f} GiB of {:.1f} GiB", GiB(r.nvme_offload_per_node),
                         GiB(t.nvme->capacity));
    }
    out += "\n";
  }
  if (!r.out_of_memory) return;
  std::vector<std::string> over;
  for (const simulate::StageMemory& m : r.memory) {
    if (m.total() > r.capacity) over.push_back(fmt::format("stage {} needs {:.1f}", m.stage, GiB(m.total())));
  }
  if (over.empty()) {
    out += fmt::format("OUT OF MEMORY: the plan does not fit in {:.1f} GiB per GPU\n", GiB(r.capacity));
  } else if (over.size() <= 3) {
    out += fmt::format("OUT OF MEMORY: {} GiB of {:.1f} GiB per GPU\n", fmt::join(over, ", "),
                       GiB(r.capacity));
  } else {
    out += fmt::format("OUT OF MEMORY: {} of {} stages exceed {:.1f} GiB per GPU ({} GiB, ...)\n",
                       over.size(), r.memory.size(), GiB(r.capacity), over.front());
  }
}

void AppendBreakdown(const simulate::SimulationResult& r, std::string& out) {
  const simulate::Breakdown& b = r.breakdown;
  struct Part {
    const char* name;
    Time time;
  };
  std::vector<Part> parts = {
      {"GEMM", b.gemm},
      {"attention", b.attention},
      {"memory-bound ops", b.memory_bound},
      {"optimizer", b.optimizer},
      {"exposed TP comm", b.tp_exposed},
      {"exposed DP comm", b.dp_exposed},
      {"pipeline send/recv", b.pp_exposed},
      {"pipeline bubble", b.bubble},
      {"other", b.other},
  };
  // MoE models: the expert-parallel all-to-all (dispatch and combine) gets its own row.
  if (r.scenario.model.is_moe()) parts.insert(parts.begin() + 7, Part{"EP all-to-all", b.ep_exposed});
  // Input pipeline: the step waiting for its samples.
  if (r.input) parts.insert(parts.end() - 1, Part{"input stall", b.input_stall});
  // Offloaded optimizer: the wait for its copies, host step and NVMe I/O.
  if (r.scenario.plan.offload_optimizer != config::OffloadTarget::kNone) {
    parts.insert(parts.end() - 2, Part{"offload (exposed)", b.offload_exposed});
  }
  // Percent of the step; the parts add up to it (fall back to their sum if
  // the step is somehow zero).
  Time step = r.iteration;
  if (step <= Time::Zero()) {
    for (const Part& p : parts) step += p.time;
  }
  int decimals = SecondsDecimals(step);
  out += fmt::format("\ntime breakdown (stage {}, slowest rank)\n", r.breakdown_stage);
  for (const Part& p : parts) {
    double fraction = step > Time::Zero() ? p.time.seconds() / step.seconds() : 0.0;
    int hashes = static_cast<int>(std::lround(std::clamp(fraction, 0.0, 1.0) * kBarWidth));
    out += fmt::format("  {:<20} {:>9} s {:>6}{}{}\n", p.name, Seconds(p.time, decimals), Percent(fraction),
                       hashes > 0 ? "  " : "", std::string(hashes, '#'));
  }
  // Nsight's figures for the same rank (utilization.h); per stage in JSON.
  const simulate::Utilization& u = r.utilization;
  out += fmt::format("  utilization: GPU busy {}, SM active {}, HBM bandwidth {}, host link {}\n", Percent(u.gpu_busy),
                     Percent(u.sm_active), Percent(u.hbm_bandwidth), Percent(u.pcie));
  if (r.dp_sync) {
    const simulate::DpSyncResult& d = *r.dp_sync;
    out += fmt::format("\ndata-parallel sync: {} ({})\n", config::DpSyncMethodName(d.method), simulate::kDpSyncScope);
    if (d.method == config::DpSyncMethod::kDiLoCo) {
      out += fmt::format("  inner step           {:>9} s\n", Seconds(d.step, decimals));
      out += fmt::format("  sync step            {:>9} s  (every {} steps, {} workers)\n", Seconds(d.sync_step, decimals),
                         r.scenario.plan.dp_sync.sync_every, r.scenario.plan.dp_sync.workers);
      out += fmt::format("  outer state          {:>9.2f} GiB per GPU (fp32 outer parameters and momentum)\n",
                         d.extra_memory_per_gpu.value / kGiB);
    }
    if (d.method == config::DpSyncMethod::kAsync) {
      out += fmt::format("  synchronous step     {:>9} s\n", Seconds(d.step, decimals));
      out += fmt::format("  without reduction    {:>9} s\n", Seconds(d.without_reduction, decimals));
      out += fmt::format("  reduction per step   {:>9} s\n", Seconds(d.reduction_busy, decimals));
    }
    out += fmt::format("  average step         {:>9} s  {}\n", Seconds(d.average_step, decimals), d.basis);
    out += fmt::format("  throughput           {:.4g} tokens/s\n", d.tokens_per_s);
    if (d.token_budget > 0) {
      out += fmt::format("  time to {} tokens: {:.2f} days ({} steps)\n", d.token_budget,
                         d.time_to_budget.seconds() / 86400.0, d.steps_to_budget);
    }
  }
  if (r.input) {
    const simulate::InputPipeline& in = *r.input;
    out += fmt::format("\ninput pipeline: {:.0f} samples per loader per step, {:.0f} at once: preprocessing {} s, "
                       "storage {} s\n",
                       in.samples_per_loader, in.parallel, Seconds(in.preprocess, decimals), Seconds(in.storage, decimals));
    if (!in.input_bound()) {
      out += "  keeps up: the step never waits for its input\n";
    } else if (in.workers_needed > 0) {
      out += fmt::format("  INPUT-BOUND: the step waits {} s; {} workers per loader would remove the stall\n",
                         Seconds(in.stall, decimals), in.workers_needed);
    } else {
      out += fmt::format("  INPUT-BOUND: the step waits {} s; no worker count removes it ({}: faster preprocessing, "
                         "more host cores or storage bandwidth)\n",
                         Seconds(in.stall, decimals),
                         in.storage > in.preprocess ? "storage-bound" : "more workers than the host cores");
    }
  }
  if (r.scenario.model.is_moe()) {
    const config::PlanConfig& plan = r.scenario.plan;
    double share = step > Time::Zero() ? r.moe_imbalance_cost.seconds() / step.seconds() : 0.0;
    out += fmt::format("\nmixture of experts: {} routed experts, top-{}, ep {}, routing {}{}\n",
                       r.scenario.model.num_experts, r.scenario.model.experts_per_token, plan.ep,
                       config::RoutingName(plan.routing),
                       plan.capacity_factor > 0 ? fmt::format(", capacity factor {:.2f}", plan.capacity_factor)
                                                : std::string(", dropless"));
    out += fmt::format("  busiest EP rank      {:.3f}x the mean tokens\n", r.moe_load_factor);
    // All of the rank's dispatch/combine time, and the part the step waited for.
    out += fmt::format("  EP all-to-all        {:>9} s {:>6} of the step, {} s ({}) exposed\n",
                       Seconds(r.moe_alltoall_time, decimals),
                       Percent(step > Time::Zero() ? r.moe_alltoall_time.seconds() / step.seconds() : 0.0),
                       Seconds(r.breakdown.ep_exposed, decimals),
                       Percent(step > Time::Zero() ? r.breakdown.ep_exposed.seconds() / step.seconds() : 0.0));
    out += fmt::format("  cost of imbalance    {:>9} s {:>6}\n", Seconds(r.moe_imbalance_cost, decimals),
                       Percent(share));
    if (r.moe_dropped_fraction > 0) {
      out += fmt::format("  dropped tokens       {}\n", Percent(r.moe_dropped_fraction));
    }
  }
}

}  // namespace

// How tensor-parallel collectives meet the GEMMs, where it is not the
// Megatron family's default (the data-gradient reductions beside the weight
// gradients): "" without TP.
std::string TpOverlapText(const config::PlanConfig& p) {
  if (p.tp <= 1) return "";
  switch (p.tp_comm_overlap) {
    case config::TpCommOverlap::kNone: return ", TP collectives blocking";
    case config::TpCommOverlap::kBackward: return "";
    case config::TpCommOverlap::kGemm: return ", TP collectives pipelined with their GEMMs (userbuffers)";
    case config::TpCommOverlap::kPipelined: return ", TP collectives pipelined with their GEMMs (async TP)";
  }
  return "";
}

std::string PlanLine(const config::PlanConfig& p) {
  return fmt::format(
      "TP {} PP {} DP {}{}{} VP {}, micro-batch {}, global batch {} ({} micro-batches/step), "
      "SP {}{}, recompute {}{}, sharding {}, {}{}, {}{}{}",
      p.tp, p.pp, p.dp,
      p.cp > 1 ? fmt::format(" CP {} ({})", p.cp, p.cp_comm == config::CpComm::kAllGather ? "all-gather" : "ring")
               : std::string(),
      p.ep > 1 ? fmt::format(" EP {}{}", p.ep, p.etp > 1 ? fmt::format(" ETP {}", p.etp) : std::string())
               : std::string(),
      p.vp, p.micro_batch, p.global_batch, p.micro_batches(),
      p.sequence_parallel ? "on" : "off", TpOverlapText(p), config::RecomputeName(p.recompute),
      p.recompute == config::Recompute::kFull && p.recompute_layers > 0
          ? fmt::format(" (the first {} layers of each model chunk)", p.recompute_layers)
          : std::string(),
      config::ShardingName(p.sharding), config::ScheduleName(p.schedule),
      p.moe_a2a_overlap ? " with the all-to-alls overlapped" : "", config::PrecisionName(p.precision),
      p.attention == config::AttentionImpl::kUnfused  ? ", unfused attention"
      : p.attention == config::AttentionImpl::kFlash2 ? ", FlashAttention-2"
      : p.attention == config::AttentionImpl::kFlash1 ? ", FlashAttention-1 class"
      : p.attention == config::AttentionImpl::kOwn    ? ", stacksim's FlashAttention-2-style kernel"
                                                       : "",
      p.finetune.frozen_base()
          ? fmt::format(", {} rank {} on {} projections (frozen base)",
                        p.finetune.method == config::FinetuneMethod::kQlora ? "QLoRA" : "LoRA", p.finetune.rank,
                        std::popcount(p.finetune.targets))
          : std::string());
}

namespace {

// trust: nullptr for the report without the uncertainty.
std::string Report(const simulate::SimulationResult& r, const uncertainty::Assessment* trust) {
  std::string out;
  AppendHeader(r, out);
  out += "\n";
  if (!r.out_of_memory) AppendHeadline(r, trust, out);
  AppendMemory(r, out);
  if (!r.out_of_memory) AppendBreakdown(r, out);
  if (!r.algorithms.empty()) {
    out += "\ncollectives\n";
    size_t listed = std::min(r.algorithms.size(), kMaxAlgorithms);
    for (size_t i = 0; i < listed; ++i) out += fmt::format("  {}\n", r.algorithms[i]);
    if (listed < r.algorithms.size()) out += fmt::format("  ... and {} more\n", r.algorithms.size() - listed);
  }
  if (!r.bottlenecks.empty()) {
    out += "\ncontention (" + r.network_model + " network: links where sharing added time)\n";
    for (const auto& b : r.bottlenecks) out += fmt::format("  {}\n", b);
  }
  if (!r.notes.empty()) out += "\n";
  for (const std::string& note : r.notes) out += fmt::format("note: {}\n", note);
  out += fmt::format("\nsimulated {} rank{}, {} tasks in {:.2f} s\n", r.simulated_ranks,
                     r.simulated_ranks == 1 ? "" : "s", Grouped(static_cast<double>(r.tasks)),
                     r.wall_seconds);
  if (trust != nullptr) out += uncertainty::AssessmentText(*trust);
  return out;
}

}  // namespace

std::string TextReport(const simulate::SimulationResult& r) { return Report(r, nullptr); }

std::string TextReport(const simulate::SimulationResult& r, const uncertainty::Assessment& trust) {
  return Report(r, &trust);
}

}  // namespace stacksim::report
