#include "sim/report/html_pages.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "sim/report/html.h"
#include "sim/util/number_text.h"
#include "sim/report/text_report.h"
#include "sim/search/plan_space.h"
#include "sim/search/search_report.h"

namespace stacksim::report {
namespace {

constexpr size_t kMaxAlgorithms = 12;  // collective choices listed before "... more"
constexpr size_t kMaxOps = 12;         // diagnose: ops listed by time beyond ideal

// Fixed colours per kind of time, the same in the breakdown bars and the
// timeline, so a colour means one thing on the whole page.
constexpr const char* kGemmColor = "#4e79a7";
constexpr const char* kAttentionColor = "#b07aa1";
constexpr const char* kMemoryBoundColor = "#76b7b2";
constexpr const char* kOptimizerColor = "#9c755f";
constexpr const char* kTpColor = "#f28e2b";
constexpr const char* kDpColor = "#e15759";
constexpr const char* kPpColor = "#59a14f";
constexpr const char* kEpColor = "#ff9da7";
constexpr const char* kOffloadColor = "#edc948";
constexpr const char* kBubbleColor = "#d0d7de";
constexpr const char* kOtherColor = "#8c8c8c";
constexpr const char* kGoodColor = "#59a14f";
constexpr const char* kNeutralColor = "#bab0ac";

double GiB(Bytes b) { return b.value / kGiB; }

// The unit times are drawn in: seconds for steps of a second or more (most
// large jobs), else milliseconds, so axis ticks stay short numbers.
struct TimeUnit {
  std::string name;
  double per_second;
  double Of(Time t) const { return t.seconds() * per_second; }
  std::string Text(Time t) const { return DecimalText(Of(t), 4) + " " + name; }
  // With the decimals that give `step` four significant digits, so that the
  // parts of a step line up with it ("0.002 s" beside "6.957 s").
  std::string Fixed(Time t, Time step) const {
    double v = Of(step);
    int decimals = v > 0 ? std::max(0, 3 - static_cast<int>(std::floor(std::log10(v)))) : 3;
    return fmt::format("{:.{}f} {}", Of(t), decimals, name);
  }
};

TimeUnit UnitFor(Time step) {
  if (step.seconds() >= 1) return {"s", 1};
  return {"ms", 1e3};
}

std::string Percent(double fraction) { return fmt::format("{:.1f}%", 100.0 * fraction); }

std::string GpuName(const config::ScenarioConfig& s) { return s.profile.gpu.empty() ? s.topology.gpu : s.profile.gpu; }

std::string ClusterText(const config::ScenarioConfig& s) {
  int nodes = s.topology.gpus_per_node > 0 ? s.nodes() : 0;
  return fmt::format("{} x {} on {}, {} node{}", s.gpus, GpuName(s), s.topology.name, nodes, nodes == 1 ? "" : "s");
}

std::string ModelText(const config::ScenarioConfig& s) {
  return fmt::format("{}, {:.1f}B parameters, {} layers, hidden {}, sequence {}", s.model.name,
                     static_cast<double>(s.model.ParameterCount()) / 1e9, s.model.num_layers, s.model.hidden_size,
                     s.seq_len);
}

std::string ScenarioTitle(const config::ScenarioConfig& s) { return s.name.empty() ? s.file : s.name; }

// The breakdown's parts, in the text report's order, with their colours.
std::vector<ChartSeries> BreakdownSeries() {
  return {{"GEMM", kGemmColor},
          {"attention", kAttentionColor},
          {"memory-bound ops", kMemoryBoundColor},
          {"optimizer", kOptimizerColor},
          {"exposed TP comm", kTpColor},
          {"exposed DP comm", kDpColor},
          {"pipeline send/recv", kPpColor},
          {"EP all-to-all", kEpColor},
          {"offload (exposed)", kOffloadColor},
          {"pipeline bubble", kBubbleColor},
          {"other", kOtherColor}};
}

std::vector<Time> BreakdownParts(const simulate::Breakdown& b) {
  return {b.gemm,       b.attention,  b.memory_bound, b.optimizer,       b.tp_exposed, b.dp_exposed,
          b.pp_exposed, b.ep_exposed, b.offload_exposed, b.bubble, b.other};
}

StackedBarRow BreakdownRow(const std::string& label, const simulate::Breakdown& b, const TimeUnit& unit) {
  StackedBarRow row;
  row.label = label;
  for (Time t : BreakdownParts(b)) row.values.push_back(unit.Of(t));
  return row;
}

std::string SetupTable(const simulate::SimulationResult& r) {
  const config::ScenarioConfig& s = r.scenario;
  HtmlTable t;
  t.rows = {{"scenario", ScenarioTitle(s)},
            {"model", ModelText(s)},
            {"cluster", ClusterText(s)},
            {"plan", PlanLine(s.plan)},
            {"network model", r.network_model}};
  if (!s.profile.name.empty()) {
    t.rows.push_back({"profile", s.profile.name + " (" + config::ProfileKindName(s.profile.kind) + ")"});
  }
  if (r.tasks > 0) {
    t.rows.push_back({"simulated", fmt::format("{} rank{}, {} tasks", r.simulated_ranks,
                                               r.simulated_ranks == 1 ? "" : "s",
                                               Grouped(static_cast<double>(r.tasks)))});
  }
  return TableHtml(t);
}

size_t FullestStage(const simulate::SimulationResult& r) {
  size_t fullest = 0;
  for (size_t i = 1; i < r.memory.size(); ++i) {
    if (r.memory[i].total() > r.memory[fullest].total()) fullest = i;
  }
  return fullest;
}

std::vector<KeyNumber> HeadlineNumbers(const simulate::SimulationResult& r) {
  std::vector<KeyNumber> k;
  if (!r.out_of_memory) {
    TimeUnit unit = UnitFor(r.iteration);
    k.push_back({"step time", unit.Text(r.iteration), "one optimizer step"});
    k.push_back({"throughput", Grouped(r.tokens_per_s) + " tokens/s",
                 Grouped(r.tokens_per_s_per_gpu) + " per GPU"});
    k.push_back({"MFU", Percent(r.mfu), "HFU " + Percent(r.hfu)});
    k.push_back({"model TFLOP/s per GPU", fmt::format("{:.1f}", r.model_tflops_per_gpu), ""});
  }
  if (!r.memory.empty()) {
    const simulate::StageMemory& m = r.memory[FullestStage(r)];
    k.push_back({"peak memory per GPU", fmt::format("{:.1f} GiB", GiB(m.total())),
                 fmt::format("stage {}, of {:.1f} GiB", m.stage, GiB(r.capacity)), r.out_of_memory});
  }
  if (r.out_of_memory) k.push_back({"result", "out of memory", "the step does not run", true});
  return k;
}

std::string MoeHtml(const simulate::SimulationResult& r) {
  const config::PlanConfig& plan = r.scenario.plan;
  const config::ModelConfig& m = r.scenario.model;
  TimeUnit unit = UnitFor(r.iteration);
  double step = r.iteration.seconds();
  auto share = [&](Time t) { return step > 0 ? " (" + Percent(t.seconds() / step) + " of the step)" : std::string(); };
  HtmlTable t;
  t.rows = {{"experts", fmt::format("{} routed, top-{}, EP {}, routing {}{}", m.num_experts, m.experts_per_token,
                                    plan.ep, config::RoutingName(plan.routing),
                                    plan.capacity_factor > 0
                                        ? fmt::format(", capacity factor {:.2f}", plan.capacity_factor)
                                        : std::string(", dropless"))},
            {"busiest EP rank", fmt::format("{:.3f}x the mean tokens", r.moe_load_factor)},
            {"EP all-to-all", unit.Text(r.moe_alltoall_time) + share(r.moe_alltoall_time) + ", " +
                                  unit.Text(r.breakdown.ep_exposed) + " exposed"},
            {"cost of imbalance", unit.Text(r.moe_imbalance_cost) + share(r.moe_imbalance_cost)}};
  if (r.moe_dropped_fraction > 0) t.rows.push_back({"dropped tokens", Percent(r.moe_dropped_fraction)});
  return TableHtml(t);
}

std::string CollectivesHtml(const simulate::SimulationResult& r) {
  std::vector<std::string> lines;
  size_t listed = std::min(r.algorithms.size(), kMaxAlgorithms);
  for (size_t i = 0; i < listed; ++i) lines.push_back(r.algorithms[i]);
  if (listed < r.algorithms.size()) lines.push_back(fmt::format("... and {} more", r.algorithms.size() - listed));
  std::string out = ListHtml(lines);
  if (!r.bottlenecks.empty()) {
    out += ParagraphHtml("Contention (" + r.network_model + " network: links where sharing added time):");
    out += ListHtml(r.bottlenecks);
  }
  return out;
}

// The sections every page showing one simulated step has, in order.
void AddStepSections(HtmlPage& page, const simulate::SimulationResult& r, const std::string& prefix) {
  if (std::string html = StepBreakdownHtml(r); !html.empty()) page.AddSection(prefix + "Where the step goes", html);
  if (std::string html = StageBreakdownHtml(r); !html.empty()) page.AddSection(prefix + "Per pipeline stage", html);
  if (std::string html = StageMemoryHtml(r); !html.empty()) page.AddSection(prefix + "Memory per GPU", html);
  if (std::string html = StepTimelineHtml(r); !html.empty()) page.AddSection(prefix + "Timeline of one step", html);
}

// Timeline colours by the role of the tasks a label marks; labels of tasks
// without a role take palette colours in the order the labels appear.
std::string RoleColor(trace::TaskRole role, size_t label_index) {
  switch (role) {
    case trace::TaskRole::kGemm: return kGemmColor;
    case trace::TaskRole::kAttention: return kAttentionColor;
    case trace::TaskRole::kMemoryBound: return kMemoryBoundColor;
    case trace::TaskRole::kOptimizer: return kOptimizerColor;
    case trace::TaskRole::kTpComm: return kTpColor;
    case trace::TaskRole::kDpComm: return kDpColor;
    case trace::TaskRole::kPpComm: return kPpColor;
    case trace::TaskRole::kEpComm: return kEpColor;
    case trace::TaskRole::kOffload: return kOffloadColor;
    case trace::TaskRole::kHostSync: return kOtherColor;
    case trace::TaskRole::kOther: break;
  }
  return PaletteColor(label_index);
}

// A layer's colour in the diagnosis waterfall.
const char* LayerColor(diagnose::StackLayer l) {
  switch (l) {
    case diagnose::StackLayer::kModelDefinition: return "#76b7b2";
    case diagnose::StackLayer::kParallelization: return "#f28e2b";
    case diagnose::StackLayer::kRuntimeOrchestration: return "#8c8c8c";
    case diagnose::StackLayer::kCompilation: return "#b07aa1";
    case diagnose::StackLayer::kHardware: return "#e15759";
  }
  return "#8c8c8c";
}

}  // namespace

std::string StepBreakdownHtml(const simulate::SimulationResult& r) {
  if (r.out_of_memory) return "";
  TimeUnit unit = UnitFor(r.iteration);
  StackedBarChart chart;
  chart.unit = unit.name;
  chart.axis_title = "time (" + unit.name + ")";
  chart.series = BreakdownSeries();
  chart.rows.push_back(BreakdownRow(fmt::format("stage {}", r.breakdown_stage), r.breakdown, unit));
  std::string out = ParagraphHtml(fmt::format(
      "The slowest simulated rank (pipeline stage {}): busy time by kind of work, and idle time by what it "
      "waited for. The parts add up to the step.",
      r.breakdown_stage));
  out += StackedBarSvg(chart);
  HtmlTable t;
  t.header = {"part", unit.name, "share of step"};
  t.numeric = {false, true, true};
  std::vector<ChartSeries> names = BreakdownSeries();
  std::vector<Time> parts = BreakdownParts(r.breakdown);
  for (size_t i = 0; i < parts.size(); ++i) {
    if (parts[i] <= Time::Zero()) continue;
    double share = r.iteration > Time::Zero() ? parts[i].seconds() / r.iteration.seconds() : 0;
    std::string fixed = unit.Fixed(parts[i], r.iteration);
    t.rows.push_back({names[i].name, fixed.substr(0, fixed.size() - unit.name.size() - 1), Percent(share)});
  }
  return out + TableHtml(t);
}

std::string StageBreakdownHtml(const simulate::SimulationResult& r) {
  if (r.out_of_memory || r.per_stage.size() < 2) return "";
  TimeUnit unit = UnitFor(r.iteration);
  StackedBarChart chart;
  chart.unit = unit.name;
  chart.axis_title = "time (" + unit.name + ")";
  chart.series = BreakdownSeries();
  for (size_t i = 0; i < r.per_stage.size(); ++i) {
    bool slowest = static_cast<int>(i) == r.breakdown_stage;
    chart.rows.push_back(BreakdownRow(fmt::format("stage {}{}", i, slowest ? " (slowest)" : ""), r.per_stage[i], unit));
  }
  return ParagraphHtml("Every pipeline stage's step, split the same way: compute imbalance between stages shows "
                       "as bubble on the lighter ones.") +
         StackedBarSvg(chart);
}

std::string StageMemoryHtml(const simulate::SimulationResult& r) {
  if (r.memory.empty()) return "";
  StackedBarChart chart;
  chart.unit = "GiB";
  chart.axis_title = "memory per GPU (GiB)";
  chart.series = {{"weights", "#4e79a7"},
                  {"gradients", "#f28e2b"},
                  {"optimizer", "#9c755f"},
                  {"activations", "#59a14f"},
                  {"other", "#bab0ac"}};
  chart.reference = GiB(r.capacity);
  chart.reference_label = fmt::format("HBM {:.1f} GiB", GiB(r.capacity));
  std::vector<std::string> over;
  for (const simulate::StageMemory& m : r.memory) {
    StackedBarRow row;
    row.label = fmt::format("stage {}", m.stage);
    row.values = {GiB(m.weights), GiB(m.gradients), GiB(m.optimizer), GiB(m.activations), GiB(m.other)};
    Bytes total = m.total();
    row.highlight = total > r.capacity;
    row.note = row.highlight ? fmt::format("{:.1f} GiB: {:.1f} GiB over", GiB(total), GiB(total - r.capacity))
                             : fmt::format("{:.1f} GiB", GiB(total));
    if (row.highlight) over.push_back(row.label);
    chart.rows.push_back(row);
  }
  std::string out = ParagraphHtml("One GPU of each pipeline stage at its peak, against its HBM capacity.");
  if (!over.empty()) {
    out += fmt::format("<p class=\"alarm\">Out of memory: {} exceed{} the capacity.</p>\n",
                       HtmlEscape(fmt::format("{}", fmt::join(over, ", "))), over.size() == 1 ? "s" : "");
  }
  out += StackedBarSvg(chart);
  if (r.host_offload_per_node.value > 0 || r.nvme_offload_per_node.value > 0) {
    out += ParagraphHtml(fmt::format("Offloaded per node: {:.1f} GiB host memory, {:.1f} GiB NVMe.",
                                     GiB(r.host_offload_per_node), GiB(r.nvme_offload_per_node)));
  }
  return out;
}

std::string StepTimelineHtml(const simulate::SimulationResult& r) {
  if (!r.trace || !r.replay || r.replay->timings.size() != r.trace->size()) return "";
  const trace::Trace& tr = *r.trace;
  const trace::ReplayResult& replay = *r.replay;
  TimeUnit unit = UnitFor(replay.makespan);

  // One lane per (rank, stream) that has tasks, ranks in order, streams in
  // the order the trace named them.
  int ranks = tr.rank_count();
  size_t streams = tr.streams().size();
  std::vector<int> lane_of(static_cast<size_t>(ranks) * streams, -1);
  for (const trace::Task& task : tr.tasks()) {
    if (task.rank >= 0 && task.rank < ranks && task.stream >= 0 && static_cast<size_t>(task.stream) < streams) {
      lane_of[static_cast<size_t>(task.rank) * streams + task.stream] = 0;
    }
  }
  TimelineChart chart;
  chart.unit = unit.name;
  for (int rank = 0; rank < ranks; ++rank) {
    for (size_t s = 0; s < streams; ++s) {
      int& lane = lane_of[static_cast<size_t>(rank) * streams + s];
      if (lane < 0) continue;
      lane = static_cast<int>(chart.lanes.size());
      chart.lanes.push_back(fmt::format("rank {} {}", rank, tr.stream_name(static_cast<trace::StreamId>(s))));
    }
  }
  // The legend shows only labels some task carries, so a label's role is its tasks'.
  std::vector<trace::TaskRole> label_role(tr.labels().size(), trace::TaskRole::kOther);
  for (const trace::Task& task : tr.tasks()) label_role[task.label] = task.role;
  for (size_t l = 0; l < tr.labels().size(); ++l) chart.kinds.push_back({tr.labels()[l], RoleColor(label_role[l], l)});
  chart.intervals.reserve(tr.size());
  for (size_t id = 0; id < tr.size(); ++id) {
    const trace::Task& task = tr.tasks()[id];
    const trace::TaskTiming& t = replay.timings[id];
    if (t.end <= t.start || task.rank < 0 || task.rank >= ranks || task.stream < 0 ||
        static_cast<size_t>(task.stream) >= streams) {
      continue;
    }
    chart.intervals.push_back({lane_of[static_cast<size_t>(task.rank) * streams + task.stream], task.label,
                               unit.Of(t.start), unit.Of(t.end), static_cast<int64_t>(id)});
  }
  chart.begin = 0;
  chart.end = unit.Of(replay.makespan);
  chart.describe = [&tr](int64_t id) {
    const trace::Task& task = tr.task(static_cast<trace::TaskId>(id));
    std::string text = tr.name(task.name);
    if (task.layer >= 0) text += fmt::format(" L{}", task.layer);
    if (task.micro_batch >= 0) text += fmt::format(" mb{}", task.micro_batch);
    return text + " (" + tr.label(task.label) + ")";
  };
  std::string out = ParagraphHtml(
      "Each simulated rank (one per pipeline stage) and stream, over one step. Hover a box for the task; the "
      "Perfetto trace (--trace) has every task.");
  return out + TimelineSvg(chart);
}

std::string UncertaintyHtml(const uncertainty::Assessment& a) {
  std::string out;
  if (a.range) {
    out += ParagraphHtml(fmt::format("Likely step {:.4g}-{:.4g} s (predicted {:.4g} s): {} (n={}){}. The range comes "
                                     "from what stacksim got wrong on published runs like this one; read it as "
                                     "likely, not as a bound.",
                                     a.range->low_s, a.range->high_s, a.range->predicted_s, a.range->basis,
                                     a.range->n, a.range->widened.empty() ? "" : "; " + a.range->widened));
  } else {
    out += ParagraphHtml("No likely range: no validation error table, or no step was simulated.");
  }
  if (a.plan_family_runs >= 0) {
    out += ParagraphHtml(a.plan_family_validated()
                             ? fmt::format("Plan family {}: {} validated run{}.", a.plan_family, a.plan_family_runs,
                                           a.plan_family_runs == 1 ? "" : "s")
                             : fmt::format("Plan family {}: never validated.", a.plan_family));
  }
  if (!a.warnings.empty()) {
    out += "<p class=\"alarm\">Coverage warnings (outside what validation covers):</p>\n" + ListHtml(a.warnings);
  }
  return out;
}

std::string SimulateHtml(const simulate::SimulationResult& r, const uncertainty::Assessment& trust) {
  const config::ScenarioConfig& s = r.scenario;
  HtmlPage page("stacksim simulate: " + ScenarioTitle(s), s.model.name + " on " + ClusterText(s));
  std::vector<KeyNumber> keys = HeadlineNumbers(r);
  if (trust.range && !r.out_of_memory) {
    keys.insert(keys.begin() + 1, {"likely step", fmt::format("{:.4g}-{:.4g} s", trust.range->low_s, trust.range->high_s),
                                   fmt::format("p10-p90 of {} validated runs", trust.range->n)});
  }
  page.AddSection("Summary", KeyNumbersHtml(keys) + SetupTable(r));
  page.AddSection("How far to trust it", UncertaintyHtml(trust));
  AddStepSections(page, r, "");
  if (!r.out_of_memory && s.model.is_moe()) page.AddSection("Mixture of experts", MoeHtml(r));
  if (!r.algorithms.empty() || !r.bottlenecks.empty()) page.AddSection("Collectives", CollectivesHtml(r));
  if (!r.notes.empty()) page.AddSection("Notes", ListHtml(r.notes));
  return page.Render();
}

std::string SearchHtml(const search::SearchResult& r, const simulate::SimulationResult* best) {
  std::vector<std::string> counts;
  for (int g : r.gpu_counts) counts.push_back(std::to_string(g));
  std::string gpus = fmt::format("{}", fmt::join(counts, ", "));
  HtmlPage page("stacksim search: " + r.scenario,
                fmt::format("{} on {} ({}): {} GPUs, sequence {}, global batch {}, objective {}", r.model,
                            r.topology, r.gpu, gpus, r.seq_len, r.global_batch, search::ObjectiveName(r.objective)));

  const search::SearchCounts& c = r.counts;
  std::vector<KeyNumber> keys;
  if (!r.plans.empty()) {
    const search::RankedPlan& top = r.plans.front();
    TimeUnit unit = UnitFor(top.step);
    keys.push_back({"best step time", unit.Text(top.step), search::PlanName(top.point)});
    if (top.assessment.range) {
      keys.push_back({"likely step", fmt::format("{:.4g}-{:.4g} s", top.assessment.range->low_s,
                                                 top.assessment.range->high_s),
                      top.assessment.plan_family_validated() ? "plan family validated"
                                                             : "plan family never validated",
                      !top.assessment.plan_family_validated()});
    }
    keys.push_back({"best throughput", Grouped(top.tokens_per_s) + " tokens/s", "MFU " + Percent(top.mfu)});
    keys.push_back({"peak memory", fmt::format("{:.1f} GiB", GiB(top.peak_memory)),
                    fmt::format("of {:.1f} GiB per GPU", GiB(top.capacity))});
  } else {
    keys.push_back({"result", "no plan fits", "every plan is invalid or out of memory", true});
  }
  keys.push_back({"plans", Grouped(static_cast<double>(c.enumeration.enumerated)),
                  Grouped(static_cast<double>(c.evaluated)) + " simulated"});
  page.AddSection("Summary", KeyNumbersHtml(keys));

  if (!r.plans.empty()) {
    // Bars of the objective's value: lower is better except for throughput.
    bool time = r.objective == search::Objective::kTime;
    TimeUnit unit = UnitFor(r.plans.front().step);
    BarChart chart;
    chart.unit = time ? unit.name : r.objective_unit;
    chart.axis_title = time ? "step time (" + unit.name + ")" : r.objective_unit;
    chart.series = {{search::ObjectiveName(r.objective), "#4e79a7"}};
    bool many_counts = r.gpu_counts.size() > 1;
    for (size_t i = 0; i < r.plans.size(); ++i) {
      const search::RankedPlan& p = r.plans[i];
      double value = time ? unit.Of(p.step) : p.objective;
      Bar bar{value,
              fmt::format("{} {}{}, MFU {}", DecimalText(value, 4), chart.unit,
                          time && p.assessment.range ? ", likely " + search::RangeCell(p) + " s" : std::string(),
                          Percent(p.mfu)),
              "", i == 0 ? kGoodColor : ""};
      std::string label = fmt::format("#{} {}", i + 1, search::PlanName(p.point));
      if (many_counts) label += fmt::format(" ({} GPUs)", p.point.gpus);
      chart.groups.push_back({label, {bar}});
    }
    std::string intro = r.objective == search::Objective::kThroughput
                            ? "Plans best first (higher is better). The best is green."
                            : "Plans best first (shorter is better). The best is green.";
    HtmlTable t;
    t.header = {"#", "plan", "GPUs", "step (" + unit.name + ")", "likely (s)", "family", "tokens/s", "MFU",
                "peak GiB", "headroom GiB"};
    if (!time) t.header.push_back(r.objective_unit);
    t.header.push_back("vs best");
    t.header.push_back("in one NVLink domain");
    t.numeric = {true, false, true, true, true, false, true, true, true, true, true, true};
    for (size_t i = 0; i < r.plans.size(); ++i) {
      const search::RankedPlan& p = r.plans[i];
      double gap = r.plans.front().score > 0 ? 100.0 * (p.score / r.plans.front().score - 1.0) : 0;
      std::vector<std::string> row = {std::to_string(i + 1),
                                      search::PlanName(p.point),
                                      std::to_string(p.point.gpus),
                                      DecimalText(unit.Of(p.step), 4),
                                      search::RangeCell(p),
                                      p.assessment.plan_family_runs < 0 ? "-"
                                      : p.assessment.plan_family_validated()
                                          ? fmt::format("{} run{}", p.assessment.plan_family_runs,
                                                        p.assessment.plan_family_runs == 1 ? "" : "s")
                                          : "never validated",
                                      Grouped(p.tokens_per_s),
                                      Percent(p.mfu),
                                      fmt::format("{:.1f}", GiB(p.peak_memory)),
                                      fmt::format("{:.1f}", GiB(p.headroom()))};
      if (!time) row.push_back(DecimalText(p.objective, 4));
      row.push_back(i == 0 ? "best" : fmt::format("+{:.1f}%", gap));
      row.push_back(p.placement);
      t.rows.push_back(row);
    }
    t.highlight_rows = {0};
    page.AddSection("Ranking", ParagraphHtml(intro) + BarChartSvg(chart) + TableHtml(t));
    std::string trust = ParagraphHtml(
        r.ranking == search::Ranking::kPessimistic
            ? "Ranked by the high end of each plan's likely range (--rank pessimistic)."
            : "Ranked by the predicted step; --rank pessimistic ranks by the likely range's high end.");
    trust += ParagraphHtml("Likely: p10-p90 of the errors of validated runs like each plan (docs/uncertainty.md).");
    if (r.plans.size() >= 2) trust += ParagraphHtml(search::GapSentence(r, 0, 1));
    std::vector<std::string> warnings = search::GroupedWarnings(r.plans);
    if (!warnings.empty()) {
      trust += "<p class=\"alarm\">Coverage warnings, by rank (outside what validation covers):</p>\n" +
               ListHtml(warnings);
    }
    trust += ParagraphHtml("Memory reserve: " + r.reserve_basis + ".");
    page.AddSection("How far to trust the ranking", trust);
  }

  // Where the enumerated plans went: the parts add up to "enumerated".
  StackedBarChart funnel;
  funnel.series = {{"invalid", "#e15759"},         {"equivalent", "#bab0ac"}, {"out of GPU memory", "#f28e2b"},
                   {"out of host memory", "#edc948"}, {"bounded", "#76b7b2"},   {"simulated", "#59a14f"}};
  std::vector<int64_t> parts = {c.enumeration.invalid_total(), c.enumeration.equivalent, c.out_of_memory,
                                c.host_memory, c.bounded, c.evaluated};
  StackedBarRow row;
  row.label = "plans";
  for (int64_t n : parts) row.values.push_back(static_cast<double>(n));
  row.note = Grouped(static_cast<double>(c.enumeration.enumerated));
  funnel.rows.push_back(row);
  funnel.axis_title = "plans";
  HtmlTable pruning;
  pruning.header = {"plans", "count", "why"};
  pruning.numeric = {false, true, false};
  pruning.rows = {{"enumerated", Grouped(static_cast<double>(c.enumeration.enumerated)), "every combination of the space"}};
  std::vector<std::string> why = {"the plan cannot run (by key below)",
                                  "the same trace and memory as another plan",
                                  fmt::format("do not fit HBM with the reserve ({} would without it)",
                                              Grouped(static_cast<double>(c.inside_reserve))),
                                  "offloaded state does not fit host memory",
                                  "lower bound cannot beat the list",
                                  fmt::format("replayed ({} replays: plans sharing a trace share one)",
                                              Grouped(static_cast<double>(c.simulations)))};
  for (size_t i = 0; i < parts.size(); ++i) {
    pruning.rows.push_back({funnel.series[i].name, Grouped(static_cast<double>(parts[i])), why[i]});
  }
  HtmlTable invalid;
  invalid.header = {"key", "invalid plans", "for example"};
  invalid.numeric = {false, true, false};
  for (const auto& [key, n] : c.enumeration.invalid) {
    auto example = c.enumeration.invalid_example.find(key);
    invalid.rows.push_back({key, Grouped(static_cast<double>(n)),
                            example == c.enumeration.invalid_example.end() ? "" : example->second});
  }
  std::string pruning_html =
      ParagraphHtml("Every enumerated plan, by where the search left it (most are pruned before any replay).") +
      StackedBarSvg(funnel) + TableHtml(pruning);
  if (!invalid.rows.empty()) pruning_html += "<h3>Invalid plans by key</h3>\n" + TableHtml(invalid);
  std::vector<std::string> sources;
  if (r.economics.gpu_hour_usd > 0) {
    sources.push_back(fmt::format("price {} USD per GPU-hour ({})", DecimalText(r.economics.gpu_hour_usd, 3),
                                  r.economics.price_source));
  }
  if (r.economics.gpu_watts > 0) {
    sources.push_back(fmt::format("power {} W per GPU ({})", DecimalText(r.economics.gpu_watts, 3),
                                  r.economics.power_source));
  }
  if (!sources.empty()) pruning_html += "<h3>Economics</h3>\n" + ListHtml(sources);
  page.AddSection("What the search pruned", pruning_html);

  if (best != nullptr) {
    page.AddSection("Best plan", KeyNumbersHtml(HeadlineNumbers(*best)) + SetupTable(*best));
    AddStepSections(page, *best, "Best plan: ");
  }
  return page.Render();
}

std::string DiagnosisHtml(const diagnose::Diagnosis& d, const uncertainty::Assessment& trust) {
  const simulate::SimulationResult& r = d.result;
  const config::ScenarioConfig& s = r.scenario;
  TimeUnit unit = UnitFor(d.step);
  auto pct = [&](Time t) { return d.step > Time::Zero() ? Percent(t.seconds() / d.step.seconds()) : std::string("-"); };
  HtmlPage page("stacksim diagnose: " + ScenarioTitle(s), s.model.name + " on " + ClusterText(s));

  const diagnose::Remedy* best_remedy = nullptr;
  for (const diagnose::Remedy& m : d.remedies) {
    if (m.status == diagnose::RemedyStatus::kSimulated && m.gain > Time::Zero() && (!best_remedy || m.gain > best_remedy->gain)) best_remedy = &m;
  }
  std::vector<KeyNumber> keys = {
      {"simulated step", unit.Text(d.step), diagnose::StepClassName(d.step_class)},
      {"ideal step", unit.Text(d.ideal),
       fmt::format("model FLOPs at the {} dense peak", config::PrecisionName(s.plan.precision))},
      {"MFU", Percent(r.mfu), "ideal / step"},
  };
  if (best_remedy) {
    keys.push_back({"best single remedy", unit.Text(best_remedy->predicted),
                    best_remedy->change + " (" + pct(best_remedy->gain) + " faster)"});
  }
  if (d.combined.status == diagnose::RemedyStatus::kSimulated) {
    keys.push_back({"remedies together", unit.Text(d.combined.predicted), "-" + pct(d.combined.gain) + " per step"});
  }
  if (trust.range) {
    keys.insert(keys.begin() + 1, {"likely step", fmt::format("{:.4g}-{:.4g} s", trust.range->low_s, trust.range->high_s),
                                   fmt::format("p10-p90 of {} validated runs", trust.range->n)});
  }
  page.AddSection("Summary", KeyNumbersHtml(keys) + SetupTable(r));
  page.AddSection("How far to trust it",
                  UncertaintyHtml(trust) +
                      ParagraphHtml("Remedies are predicted by the same simulator: a remedy's gain smaller than the "
                                    "likely range's width is within the simulator's error."));

  WaterfallChart fall;
  fall.unit = unit.name;
  fall.axis_title = "time (" + unit.name + ")";
  fall.steps.push_back({"ideal step", unit.Of(d.ideal), "#4e79a7", "",
                        fmt::format("{} ({})", unit.Fixed(d.ideal, d.step), pct(d.ideal))});
  for (diagnose::StackLayer l : diagnose::kStackLayers) {
    const int n = diagnose::StackLayerNumber(l);
    const char* name = diagnose::StackLayerName(l);
    std::string text = fmt::format("+{} ({})", unit.Fixed(d.layer_gap[l], d.step), pct(d.layer_gap[l]));
    fall.steps.push_back({fmt::format("{} {}", n, name), unit.Of(d.layer_gap[l]), LayerColor(l),
                          fmt::format("layer {} {}: {}", n, name, text), text});
  }
  fall.total_label = "simulated step";
  fall.total_text = unit.Fixed(d.step, d.step);
  fall.total_color = "#1f2328";
  page.AddSection("Gap to the ideal step, by layer",
                  ParagraphHtml(fmt::format("On the breakdown rank (pipeline stage {}): the ideal step plus each "
                                            "layer's gap is the simulated step.",
                                            r.breakdown_stage)) +
                      WaterfallSvg(fall));

  std::string findings;
  for (diagnose::StackLayer l : diagnose::kStackLayers) {
    findings += fmt::format("<h3>{} {}: {} ({})</h3>\n", diagnose::StackLayerNumber(l), diagnose::StackLayerName(l),
                            HtmlEscape(unit.Fixed(d.layer_gap[l], d.step)),
                            HtmlEscape(pct(d.layer_gap[l])));
    if (!d.layer_findings[l].empty()) findings += ListHtml(d.layer_findings[l]);
    if (l == diagnose::StackLayer::kModelDefinition && !d.ops.empty()) {
      HtmlTable ops;
      ops.header = {"op (all layers, micro-batches)", "calls", "time (" + unit.name + ")",
                    "ideal (" + unit.name + ")", "roofline"};
      ops.numeric = {false, true, true, true, false};
      for (size_t i = 0; i < d.ops.size() && i < kMaxOps; ++i) {
        const diagnose::OpStat& op = d.ops[i];
        ops.rows.push_back({op.name, Grouped(static_cast<double>(op.calls)), DecimalText(unit.Of(op.time), 4),
                            DecimalText(unit.Of(op.ideal), 4), diagnose::RooflineName(op.roofline)});
      }
      findings += TableHtml(ops);
    }
  }
  page.AddSection("Findings per layer", findings);

  // Remedies: simulated ones as bars of the step they predict, against the
  // current step; the rest in the table only.
  BarChart bars;
  bars.unit = unit.name;
  bars.axis_title = "step time (" + unit.name + ")";
  bars.series = {{"predicted step", kGoodColor}};
  bars.reference = unit.Of(d.step);
  bars.reference_label = "current step " + unit.Text(d.step);
  auto add_bar = [&](const std::string& label, const diagnose::Remedy& m) {
    std::string text = fmt::format("{} ({}{})", unit.Text(m.predicted), m.gain > Time::Zero() ? "-" : "+",
                                   pct(m.gain > Time::Zero() ? m.gain : Time::Zero() - m.gain));
    bars.groups.push_back({label, {{unit.Of(m.predicted), text, label + ": " + m.finding,
                                    m.gain > Time::Zero() ? kGoodColor : kNeutralColor}}});
  };
  if (d.combined.status == diagnose::RemedyStatus::kSimulated) add_bar("together: " + d.combined.change, d.combined);
  HtmlTable table;
  table.header = {"layer", "change", "result", "predicted (" + unit.name + ")", "vs now", "because"};
  table.numeric = {true, false, false, true, true, false};
  for (const diagnose::Remedy& m : d.remedies) {
    bool simulated = m.status == diagnose::RemedyStatus::kSimulated;
    const int layer = diagnose::StackLayerNumber(*m.layer);
    if (simulated) add_bar(fmt::format("[{}] {}", layer, m.change), m);
    std::string vs = simulated ? (m.gain > Time::Zero() ? "-" : "+") +
                                     pct(m.gain > Time::Zero() ? m.gain : Time::Zero() - m.gain)
                               : "";
    table.rows.push_back({std::to_string(layer), m.change,
                          simulated ? "simulated" : diagnose::RemedyStatusName(m.status) + std::string(": ") + m.reason,
                          simulated ? DecimalText(unit.Of(m.predicted), 4) : "", vs, m.finding});
  }
  std::string remedies = ParagraphHtml(
      "Each remedy applied to the plan, validated and re-simulated; green bars are faster than the current step "
      "(dashed line). Hover a bar for the finding behind it.");
  if (!bars.groups.empty()) remedies += BarChartSvg(bars);
  if (!table.rows.empty()) {
    remedies += TableHtml(table);
  } else {
    remedies += ParagraphHtml("No remedy fits the findings.");
  }
  page.AddSection("Remedies", remedies);

  AddStepSections(page, r, "Baseline: ");
  if (!r.notes.empty()) page.AddSection("Notes", ListHtml(r.notes));
  return page.Render();
}

}  // namespace stacksim::report
